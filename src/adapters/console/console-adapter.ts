import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import readline from 'node:readline';
import type { Logger } from 'pino';
import type { Pool } from '../../db/pool.ts';
import { enqueueWorkItem } from '../../queue/enqueue.ts';
import type { TurnEvents } from '../../queue/turn-events.ts';
import { Priority, type WorkItem, type WorkItemDraft } from '../../queue/work-item.ts';
import type { ConsoleOutbound } from './outbound.ts';
import { TerminalRenderer } from './terminal-renderer.ts';

/** A line the console handles itself instead of sending to the agent (e.g. `/skills`). */
export type ConsoleCommand = (
  line: string,
) => Promise<{ reply: string } | { draft: Partial<WorkItemDraft> } | undefined>;

export interface ConsoleAdapterOptions {
  pool: Pool;
  events: TurnEvents;
  outbound: ConsoleOutbound;
  input: NodeJS.ReadableStream;
  output: NodeJS.WriteStream;
  /** Render replies as they stream (a terminal) or print each final reply once (piped). */
  interactive: boolean;
  log: Logger;
  commands?: ConsoleCommand;
}

type TurnEnd = { kind: 'finished' | 'failed' | 'awaitingApproval' };

/**
 * The console adapter: a terminal chat. Each line becomes a CRITICAL work item on the same durable
 * queue Slack and Discord use; the reply streams back through the console outbound. When stdin is
 * not a terminal it reads one message per line and resolves after the last reply.
 */
export async function runConsole(options: ConsoleAdapterOptions): Promise<void> {
  const { output, interactive, outbound, events } = options;
  const user = userInfo().username || 'console';
  const session = randomBytes(4).toString('hex');
  const conversationId = `console:${user}:${session}`;
  const renderer = new TerminalRenderer(output);
  let latest: string;
  outbound.onChange((_id, text, target) => {
    if (target.channel !== session) return;
    latest = text;
    if (interactive) renderer.show(text);
  });

  const waitForEnd = (item: WorkItem) =>
    new Promise<TurnEnd>((resolve) => {
      const listeners = {
        finished: ({ item: i }: { item: WorkItem }) => i.id === item.id && done({ kind: 'finished' }),
        failed: ({ item: i }: { item: WorkItem }) => i.id === item.id && done({ kind: 'failed' }),
        awaitingApproval: ({ item: i }: { item: WorkItem }) => i.id === item.id && done({ kind: 'awaitingApproval' }),
      };
      const done = (end: TurnEnd) => {
        events.off('finished', listeners.finished);
        events.off('failed', listeners.failed);
        events.off('awaitingApproval', listeners.awaitingApproval);
        resolve(end);
      };
      events.on('finished', listeners.finished);
      events.on('failed', listeners.failed);
      events.on('awaitingApproval', listeners.awaitingApproval);
    });

  const rl = readline.createInterface({
    input: options.input,
    terminal: interactive,
    output: interactive ? output : undefined,
  });
  const prompt = () => {
    if (interactive) {
      rl.setPrompt('\nyou › ');
      rl.prompt();
    }
  };
  if (interactive) {
    output.write(`Countersign console — type a message, /skills to list skills, Ctrl-D to quit.\n`);
  }
  prompt();

  for await (const raw of rl) {
    const line = raw.trim();
    if (!line) {
      prompt();
      continue;
    }
    const command = await options.commands?.(line);
    if (command && 'reply' in command) {
      output.write(`${command.reply}\n`);
      prompt();
      continue;
    }
    const draft: WorkItemDraft = {
      type: 'CHAT',
      priority: Priority.CRITICAL,
      conversationId,
      requester: { platform: 'console', userId: user },
      input: { prompt: line },
      payload: {},
      reply: { platform: 'console', channel: session },
      ...(command && 'draft' in command ? command.draft : {}),
    };
    latest = '';
    if (interactive) {
      output.write('\ncountersign › ');
      renderer.begin();
    }
    const item = await enqueueWorkItem(options.pool, draft);
    const ended = waitForEnd(item);
    await ended;
    if (!interactive) output.write(`${latest}\n`);
    prompt();
  }
  if (interactive) output.write('\n');
}
