import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import readline from 'node:readline';
import type { Logger } from 'pino';
import type { Pool } from '../../db/pool.ts';
import { enqueueWorkItem } from '../../queue/turn-lifecycle.ts';
import type { TurnEvents } from '../../queue/turn-events.ts';
import { Priority, type WorkItem, type WorkItemDraft } from '../../core/work-item.ts';
import type { ConsoleOutbound } from './outbound.ts';
import type { ApprovalCard } from '../../core/approval-card.ts';
import type { ApprovalService } from '../../approval/service.ts';
import type { CallDecision } from '../../core/work-item.ts';
import { MESSAGE_SEPARATOR, TerminalRenderer } from './terminal-renderer.ts';

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
  approvals: ApprovalService;
  commands?: ConsoleCommand;
  /** Ctrl-C during a turn stops it (through the same path as a Stop button). */
  stopTurn?: (workItemId: string, by: { platform: string; userId: string }) => Promise<{ ok: boolean }>;
  /** Where the session says what it left undone (default: stderr, so piped stdout holds only replies). */
  errorOutput?: NodeJS.WritableStream;
}

/**
 * The exit code of a console session whose input ended while an approval card still waited: the
 * actions it asked for were not done, and a script piping into the console must be able to tell.
 * The console sets it as `process.exitCode`; the CLI exits with that code once it has shut down.
 */
export const EXIT_UNDECIDED = 3;

/**
 * Reads a person's answer to a card: y/n for all calls, one y/n letter per call ("yn"), or for a
 * question the option's number. Returns undefined when the answer doesn't fit the card.
 */
export function parseCardAnswer(card: ApprovalCard, answer: string): CallDecision[] | undefined {
  const text = answer.trim().toLowerCase();
  if (card.kind === 'question') {
    const options = card.options ?? [];
    const byNumber = Number(text);
    const chosen = Number.isInteger(byNumber) ? options[byNumber - 1] : options.find((o) => o.toLowerCase() === text);
    const call = card.calls[0];
    return chosen !== undefined && call ? [{ toolCallId: call.id, approved: true, answer: chosen }] : undefined;
  }
  const all = /^(y|yes|a|approve)$/.test(text) ? true : /^(n|no|d|deny)$/.test(text) ? false : undefined;
  if (all !== undefined) return card.calls.map((c) => ({ toolCallId: c.id, approved: all }));
  if (new RegExp(`^[yn]{${card.calls.length}}$`).test(text)) {
    return card.calls.map((c, i) => ({ toolCallId: c.id, approved: text[i] === 'y' }));
  }
  return undefined;
}

function cardPrompt(card: ApprovalCard): string {
  if (card.kind === 'question') return `answer with a number 1-${card.options?.length ?? 0}`;
  return card.calls.length === 1
    ? 'approve? [y]es / [n]o'
    : `approve? [y] all / [n] none / one letter per call, e.g. ${'yn'.repeat(card.calls.length).slice(0, card.calls.length)}`;
}

type TurnEnd = { kind: 'finished' | 'failed' | 'awaitingApproval' };

/** What a card still waits for: its calls nobody decided yet. */
function undecidedCalls(card: ApprovalCard): ApprovalCard['calls'] {
  const decided = new Set((card.decisions ?? []).map((d) => d.index));
  return card.calls.filter((c) => !decided.has(c.index));
}

/** Characters of a call's arguments the notice repeats: enough to tell calls apart on one line. */
const NOTICE_ARGS_CHARS = 200;

function undecidedNotice(card: ApprovalCard): string {
  if (card.kind === 'question') {
    return `Input ended before the agent's question was answered ("${card.question ?? ''}"); the turn waits, nothing more was done.\n`;
  }
  const lines = undecidedCalls(card).map((c) => {
    const args = c.argsPretty.replace(/\s+/g, ' ');
    return `  ${c.index + 1}. ${c.tool} ${args.length > NOTICE_ARGS_CHARS ? `${args.slice(0, NOTICE_ARGS_CHARS - 1)}…` : args}`;
  });
  return `Input ended while an approval card waited; these calls were not approved and did not run:\n${lines.join('\n')}\n`;
}

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
  /**
   * The current turn's messages, in the order they appeared (the streamed answer, then a card, or a
   * continuation). Piped output prints them all, joined the way the terminal renderer separates
   * them, so piped and interactive sessions show the same text.
   */
  let turnMessages = new Map<string, string>();
  let pendingCard: ApprovalCard | undefined;
  outbound.onChange((id, text, target) => {
    if (target.channel !== session) return;
    turnMessages.set(id, text);
    if (interactive) renderer.show(id, text);
  });
  let cardWaiter: (() => void) | undefined;
  outbound.onCard((card, target) => {
    if (target.channel === session && card.state === 'pending') {
      pendingCard = card;
      cardWaiter?.();
    }
  });
  /** The card is posted by its own job, a moment after the turn parks. */
  const cardShown = () =>
    new Promise<void>((resolve) => {
      if (pendingCard) return resolve();
      const timer = setTimeout(resolve, 30_000);
      cardWaiter = () => {
        clearTimeout(timer);
        cardWaiter = undefined;
        resolve();
      };
    });
  const me = { platform: 'console', userId: user };
  let current: WorkItem | undefined;

  const waitForEnd = (item: WorkItem) =>
    new Promise<TurnEnd>((resolve) => {
      const listeners = {
        finished: ({ item: i }: { item: WorkItem }) => i.id === item.id && done({ kind: 'finished' }),
        failed: ({ item: i }: { item: WorkItem }) => i.id === item.id && done({ kind: 'failed' }),
        awaitingApproval: ({ item: i }: { item: WorkItem }) => i.id === item.id && done({ kind: 'awaitingApproval' }),
        cancelled: ({ item: i }: { item: WorkItem }) => i.id === item.id && done({ kind: 'failed' }),
      };
      current = item;
      const done = (end: TurnEnd) => {
        events.off('finished', listeners.finished);
        events.off('failed', listeners.failed);
        events.off('awaitingApproval', listeners.awaitingApproval);
        events.off('cancelled', listeners.cancelled);
        current = undefined;
        resolve(end);
      };
      events.on('finished', listeners.finished);
      events.on('failed', listeners.failed);
      events.on('awaitingApproval', listeners.awaitingApproval);
      events.on('cancelled', listeners.cancelled);
    });

  const afterTurn = async (end: TurnEnd) => {
    if (end.kind === 'awaitingApproval') await cardShown();
    if (interactive) {
      renderer.end();
      output.write('\n');
    } else {
      output.write(`${[...turnMessages.values()].join(MESSAGE_SEPARATOR)}\n`);
    }
    if (end.kind === 'awaitingApproval' && pendingCard) {
      if (interactive) {
        rl.setPrompt(`${cardPrompt(pendingCard)} › `);
        rl.prompt();
      }
      return;
    }
    prompt();
  };

  const rl = readline.createInterface({
    input: options.input,
    terminal: interactive,
    output: interactive ? output : undefined,
  });
  const prompt = () => {
    if (interactive) {
      rl.setPrompt('you › ');
      rl.prompt();
    }
  };
  // Ctrl-C stops the running turn; with nothing running it ends the session.
  rl.on('SIGINT', () => {
    if (current && options.stopTurn) void options.stopTurn(current.id, me);
    else rl.close();
  });
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
    if (pendingCard) {
      const card = pendingCard;
      const decisions = parseCardAnswer(card, line);
      if (!decisions) {
        output.write(`Please ${cardPrompt(card)}.\n`);
        prompt();
        continue;
      }
      // The same verify-and-consume path a Slack or Discord click takes.
      const result = await options.approvals.submit(card.nonce, decisions, me);
      if (!result.ok) {
        output.write(`${result.reason}\n`);
        prompt();
        continue;
      }
      if (!('continuation' in result)) continue;
      pendingCard = undefined;
      turnMessages = new Map();
      if (interactive) {
        output.write('\ncountersign › ');
        renderer.begin();
      }
      const end = await waitForEnd(result.continuation);
      await afterTurn(end);
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
    turnMessages = new Map();
    if (interactive) {
      output.write('\ncountersign › ');
      renderer.begin();
    }
    const item = await enqueueWorkItem(options.pool, draft);
    await afterTurn(await waitForEnd(item));
  }
  if (interactive) output.write('\n');
  if (pendingCard) {
    // Ending quietly would read as success while the action was never done.
    (options.errorOutput ?? process.stderr).write(undecidedNotice(pendingCard));
    process.exitCode = EXIT_UNDECIDED;
  }
}
