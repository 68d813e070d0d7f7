import type { PlatformAdapter } from '../platform.ts';
import { ConsoleOutbound } from './outbound.ts';
import { ConsoleCardRenderer } from './card-renderer.ts';
import { runConsole, type ConsoleStreams } from './inbound.ts';
import { skillConsoleCommands } from './skill-commands.ts';

export { EXIT_UNDECIDED, type ConsoleStreams } from './inbound.ts';

/** The console as a platform: what the app registers, plus the end of its terminal session. */
export interface ConsoleAdapter extends PlatformAdapter {
  readonly outbound: ConsoleOutbound;
  readonly cards: ConsoleCardRenderer;
  /** Resolves when the session's input ended (piped stdin at its end, Ctrl-D); unset until it starts. */
  readonly done: Promise<void> | undefined;
}

/**
 * The console: an in-memory outbound in every process (turns addressed to `console` reply there),
 * and, where `streams` are given, a terminal session as its inbound half. The session owns the
 * streams; when its input ends with an approval card undecided it sets `process.exitCode` to
 * `EXIT_UNDECIDED`.
 */
export function createConsoleAdapter(streams: ConsoleStreams | undefined): ConsoleAdapter {
  const outbound = new ConsoleOutbound();
  const cards = new ConsoleCardRenderer(outbound);
  let done: Promise<void> | undefined;
  return {
    outbound,
    cards,
    get done() {
      return done;
    },
    async startInbound(context) {
      if (!streams)
        throw new Error('the console has no terminal to listen to: pass its streams to createConsoleAdapter');
      done = runConsole({
        ...streams,
        events: context.events,
        outbound,
        cards,
        log: context.log,
        approvals: context.approvals,
        enqueue: context.enqueue,
        commands: skillConsoleCommands(context.skills),
        stopTurn: context.stopTurn,
      });
      // The session ends when its input does (`done`); stopping the app must not end it early, or a
      // shutdown would read as input ending and report the waiting card as undecided.
      return { stop: async () => undefined };
    },
  };
}
