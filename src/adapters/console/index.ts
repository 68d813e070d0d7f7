import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import type { PlatformAdapter } from '../platform.ts';
import { CONSOLE_RULES } from './rules.ts';
import { ConsoleOutbound } from './outbound.ts';
import { ConsoleCardRenderer } from './card-renderer.ts';
import { runConsole, type ConsoleStreams } from './inbound.ts';
import { consoleCommands } from './work-commands.ts';

export { type ConsoleStreams } from './inbound.ts';

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
    rules: CONSOLE_RULES,
    outbound,
    cards,
    get done() {
      return done;
    },
    async startInbound(context) {
      if (!streams)
        throw new Error('the console has no terminal to listen to: pass its streams to createConsoleAdapter');
      const user = userInfo().username || 'console';
      const session = randomBytes(4).toString('hex');
      const claim = await context.claimSession(session, {
        platform: CONSOLE_RULES.name,
        userId: user,
        workspace: CONSOLE_RULES.unknownWorkspace,
      });
      const { cancelled } = claim;
      if (cancelled > 0) {
        (streams.errorOutput ?? process.stderr).write(
          `Cancelled ${cancelled} console turn${cancelled === 1 ? '' : 's'} left unfinished by an earlier run whose process is gone; ${cancelled === 1 ? 'it was' : 'they were'} not answered. Ask again if you still need ${cancelled === 1 ? 'it' : 'them'}.\n`,
        );
      }
      done = runConsole({
        ...streams,
        user,
        session,
        events: context.events,
        outbound,
        cards,
        log: context.log,
        approvals: context.approvals,
        admit: context.admit,
        commands: consoleCommands(context),
        stopTurn: context.stopTurn,
        endSession: () => claim.end(),
      });
      const release = () => claim.release();
      done.then(release, release);
      // The session ends when its input does (`done`); stopping the app must not end it early, or a
      // shutdown would read as input ending and report the waiting card as undecided. Its lock goes
      // (the connection must, before the pool can end); the process is leaving.
      return { stop: async () => claim.release() };
    },
  };
}
