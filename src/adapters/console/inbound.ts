import readline from 'node:readline';
import type { Logger } from 'pino';
import type { TurnEvents } from '../../queue/turn-events.ts';
import { Priority, type WorkItem, type WorkItemDraft } from '../../core/work-item.ts';
import type { ApprovalCard } from '../../core/approval-card.ts';
import type { ApprovalService, SubmitResult } from '../../approval/service.ts';
import type { ConsoleOutbound } from './outbound.ts';
import type { ConsoleCardRenderer } from './card-renderer.ts';
import { buttonValue } from '../../core/buttons.ts';
import type { Requester } from '../../core/person.ts';
import { cardPrompt, denialReason, parseCardAnswer, undecidedNotice, type PromptDecision } from './cards.ts';
import { MESSAGE_SEPARATOR, TerminalRenderer } from './terminal-renderer.ts';

/** A line the console handles itself instead of sending to the agent (e.g. `/skills`). */
export type ConsoleCommand = (
  line: string,
) => Promise<{ reply: string } | { draft: Partial<WorkItemDraft> } | undefined>;

/** The terminal a console session owns. */
export interface ConsoleStreams {
  input: NodeJS.ReadableStream;
  output: NodeJS.WriteStream;
  /** Render replies as they stream (a terminal) or print each final reply once (piped). */
  interactive: boolean;
  /** Where the session says what it left undone (default: stderr, so piped stdout holds only replies). */
  errorOutput?: NodeJS.WritableStream;
}

export interface ConsoleSessionOptions extends ConsoleStreams {
  /** Who types (the OS user) and the session's id: the reply channel of its turns. */
  user: string;
  session: string;
  events: TurnEvents;
  outbound: ConsoleOutbound;
  cards: ConsoleCardRenderer;
  log: Logger;
  approvals: ApprovalService;
  /** Durably enqueues a line's work item (the adapter context's enqueue). */
  enqueue(draft: WorkItemDraft): Promise<WorkItem>;
  commands?: ConsoleCommand;
  /** Ctrl-C during a turn stops it (through the same path as a Stop button). */
  stopTurn?: (workItemId: string, by: { platform: string; userId: string }) => Promise<{ ok: boolean }>;
}

/**
 * The exit code of a console session whose input ended while an approval card still waited: the
 * actions it asked for were not done, and a script piping into the console must be able to tell.
 * The console sets it as `process.exitCode`; the CLI exits with that code once it has shut down.
 */
export const EXIT_UNDECIDED = 3;

/**
 * The exit code of a piped console session in which a turn failed (a model that could not be reached, a
 * tool that broke the turn): the reply says why, and a script piping into the console must not read
 * the run as a success.
 */
export const EXIT_TURN_FAILED = 1;

type TurnEnd = { kind: 'finished' | 'failed' | 'cancelled' | 'awaitingApproval' };

/**
 * Sends an answer typed at the prompt. Each "always allow here" goes first, as a click on that call's
 * "Always allow here" button (the one path that makes a grant, verified against the policy in force);
 * the rest of the answer then goes as one submission, repeating the calls those clicks decided.
 */
async function submitAnswer(
  approvals: ApprovalService,
  card: ApprovalCard,
  decisions: PromptDecision[],
  me: Requester,
): Promise<SubmitResult> {
  for (const decision of decisions) {
    if (!decision.always) continue;
    const index = card.calls.findIndex((c) => c.id === decision.toolCallId);
    const clicked = await approvals.click(buttonValue(card.nonce, `g${index}`), me);
    // Refused, or it was the last undecided call and the turn continues already.
    if (!clicked.ok || 'continuation' in clicked) return clicked;
  }
  return approvals.submit(
    card.nonce,
    decisions.map(({ always: _always, ...decision }) => decision),
    me,
  );
}

/**
 * The console session: a terminal chat. Each line becomes a CRITICAL work item on the same durable
 * queue Slack and Discord use; the reply streams back through the console outbound. When stdin is
 * not a terminal it reads one message per line and resolves after the last reply.
 */
export async function runConsole(options: ConsoleSessionOptions): Promise<void> {
  const { output, interactive, outbound, events } = options;
  const { user, session } = options;
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
  options.cards.onCard((card, target) => {
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
  const me = { platform: 'console', userId: user, workspace: 'local' };
  let current: WorkItem | undefined;

  const waitForEnd = (item: WorkItem) =>
    new Promise<TurnEnd>((resolve) => {
      const listeners = {
        finished: ({ item: i }: { item: WorkItem }) => i.id === item.id && done({ kind: 'finished' }),
        failed: ({ item: i }: { item: WorkItem }) => i.id === item.id && done({ kind: 'failed' }),
        awaitingApproval: ({ item: i }: { item: WorkItem }) => i.id === item.id && done({ kind: 'awaitingApproval' }),
        cancelled: ({ item: i }: { item: WorkItem }) => i.id === item.id && done({ kind: 'cancelled' }),
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

  let turnsFailed = 0;
  const afterTurn = async (end: TurnEnd) => {
    if (end.kind === 'failed') turnsFailed++;
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
      const reason = denialReason(card, line);
      const decisions = reason === undefined ? parseCardAnswer(card, line) : [];
      if (!decisions) {
        output.write(`Please ${cardPrompt(card)}.\n`);
        prompt();
        continue;
      }
      // The same verify-and-consume paths a Slack or Discord click or form takes.
      const result =
        reason === undefined
          ? await submitAnswer(options.approvals, card, decisions, me)
          : await options.approvals.denyWithReason(card.nonce, reason, me);
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
      requester: { platform: 'console', userId: user, workspace: 'local' },
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
    const item = await options.enqueue(draft);
    await afterTurn(await waitForEnd(item));
  }
  if (interactive) output.write('\n');
  if (!interactive && turnsFailed > 0) process.exitCode = EXIT_TURN_FAILED;
  if (pendingCard) {
    // Ending quietly would read as success while the action was never done.
    (options.errorOutput ?? process.stderr).write(undecidedNotice(pendingCard));
    process.exitCode = EXIT_UNDECIDED;
  }
}
