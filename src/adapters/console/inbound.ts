import readline from 'node:readline';
import type { Logger } from 'pino';
import type { TurnEvents } from '../../queue/turn-events.ts';
import { Priority, type WorkItem } from '../../core/work-item.ts';
import type { AdapterContext, AdmissionDraft } from '../platform.ts';
import { CONSOLE_RULES } from './rules.ts';
import type { ApprovalCard } from '../../core/approval-card.ts';
import type { ApprovalService, SubmitResult } from '../../approval/service.ts';
import type { ConsoleOutbound } from './outbound.ts';
import type { ConsoleCardRenderer } from './card-renderer.ts';
import { buttonValue } from '../../core/buttons.ts';
import type { Requester } from '../../core/person.ts';
import {
  asksFullDiff,
  cardPrompt,
  denialReason,
  parseCardAnswer,
  undecidedNotice,
  type PromptDecision,
} from './card-answers.ts';
import { MESSAGE_SEPARATOR, TerminalRenderer } from './terminal-renderer.ts';
import { consoleHelp, expandCountersign } from './session-commands.ts';

/**
 * A line the console handles itself instead of sending to the agent (e.g. `/skills`), given the
 * person typing: a reply printed for them, or what the line's work item is instead of a chat turn.
 */
export type ConsoleCommand = (
  line: string,
  person: Requester,
) => Promise<{ reply: string } | { draft: Partial<AdmissionDraft> } | undefined>;

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
  /** Asks the core for a line's turn (the adapter context's `admit`). */
  admit: AdapterContext['admit'];
  commands?: ConsoleCommand;
  /** Ctrl-C during a turn stops it (through the same path as a Stop button). */
  stopTurn?: (workItemId: string, by: { platform: string; userId: string }) => Promise<{ ok: boolean }>;
  /** Input ended: withdraw the cards still waiting in this session (their turns are cancelled). */
  endSession?: () => Promise<void>;
}

/**
 * The exit code of a console session whose input ended while an approval card still waited: the
 * actions it asked for were not done, and a script piping into the console must be able to tell.
 * The console sets it as `process.exitCode`; the CLI exits with that code once it has shut down.
 */
const EXIT_UNDECIDED = 3;

/**
 * The exit code of a piped console session in which a turn failed (a model that could not be reached, a
 * tool that broke the turn): the reply says why, and a script piping into the console must not read
 * the run as a success.
 */
const EXIT_TURN_FAILED = 1;

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

/** What a session knows of its turns while it runs. */
interface SessionState {
  /**
   * The current turn's messages, in the order they appeared (the streamed answer, then a card, or a
   * continuation). Piped output prints them all, joined the way the terminal renderer separates
   * them, so piped and interactive sessions show the same text.
   */
  turnMessages: Map<string, string>;
  /** The card waiting for an answer at the prompt. */
  pendingCard: ApprovalCard | undefined;
  /** The message that shows that card (the last one changed when the card was shown). */
  cardMessageId: string | undefined;
  /** The message changed last: a card's, at the moment the card renderer says it showed one. */
  lastMessageId: string | undefined;
  /** Resolves the wait for a card a parked turn is about to show. */
  cardWaiter: (() => void) | undefined;
  /** The turn running now (Ctrl-C stops it). */
  current: WorkItem | undefined;
  turnsFailed: number;
  /** The conversation lines go to: `/new` starts the next one (1 is the session's first). */
  conversation: number;
}

/** A running console session: its options, what it knows of its turns, and its terminal. */
interface Session {
  options: ConsoleSessionOptions;
  state: SessionState;
  renderer: TerminalRenderer;
  rl: readline.Interface;
  me: Requester;
}

/**
 * The console session: a terminal chat. Each line becomes a CRITICAL work item on the same durable
 * queue Slack and Discord use; the reply streams back through the console outbound. When stdin is
 * not a terminal it reads one message per line and resolves after the last reply.
 */
export async function runConsole(options: ConsoleSessionOptions): Promise<void> {
  const { output, interactive } = options;
  const renderer = new TerminalRenderer(output);
  const state: SessionState = {
    turnMessages: new Map(),
    pendingCard: undefined,
    cardMessageId: undefined,
    lastMessageId: undefined,
    cardWaiter: undefined,
    current: undefined,
    turnsFailed: 0,
    conversation: 1,
  };
  followSessionOutput(options, renderer, state);
  const me = { platform: 'console', userId: options.user, workspace: 'local' };
  const rl = readline.createInterface({
    input: options.input,
    terminal: interactive,
    output: interactive ? output : undefined,
  });
  const session: Session = { options, state, renderer, rl, me };
  // `npm start | head -1`: once the reader of the answers has left, nobody reads the rest, so the
  // session ends as if its input had, instead of the process dying of an unhandled EPIPE (which
  // also left an embedded Postgres running). Later writes to the closed stream fail here too.
  let readerLeft = false;
  output.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE' && error.code !== 'ERR_STREAM_DESTROYED') throw error;
    readerLeft = true;
    rl.close();
  });
  // Ctrl-C stops the running turn; with nothing running it ends the session.
  rl.on('SIGINT', () => {
    if (state.current && options.stopTurn) void options.stopTurn(state.current.id, me);
    else rl.close();
  });
  if (interactive) {
    output.write(
      `Countersign console — type a message, /help for the console's commands, /new to start a new conversation, Ctrl-D to quit.\n`,
    );
  }
  showPrompt(session);

  for await (const raw of rl) {
    // Lines read ahead are still yielded after close: nobody would see their answers.
    if (readerLeft) break;
    const line = expandCountersign(raw.trim());
    if (!line) {
      showPrompt(session);
      continue;
    }
    if (answerSessionCommand(session, line)) continue;
    const turn = state.pendingCard ? await answerCard(session, state.pendingCard, line) : await sendLine(session, line);
    // Awaited right here, nothing in between: the next line (typed ahead, or piped) is read as soon
    // as this turn's reply is out. An answer to a card then races the show-card job recording the
    // card, and whether piped output shows the decided card depends on that race (the `a` test in
    // test/adapters/console/console.test.ts); one extra await here made it lose nearly every time.
    if (turn) await afterTurn(session, await waitForEnd(options.events, state, turn));
  }
  reportSessionEnd(session);
  // Nobody is left to answer a card of this session: its turns end now, not when the card expires.
  await options
    .endSession?.()
    .catch((error: unknown) =>
      options.log.warn({ err: error }, 'could not withdraw the cards left waiting when the console input ended'),
    );
}

/**
 * The lines about the session itself, answered at once, even while a card waits: `/help` and `/new`.
 * Returns whether the line was one of them.
 */
function answerSessionCommand(session: Session, line: string): boolean {
  const { options, state } = session;
  if (line === '/help') {
    options.output.write(`${consoleHelp()}\n`);
  } else if (line === '/new') {
    // A card still waiting belongs to the conversation it was asked in: answered first, it is not lost.
    if (state.pendingCard) {
      options.output.write(`Answer the waiting card first (${cardPrompt(state.pendingCard)}), then /new.\n`);
    } else {
      state.conversation++;
      options.output.write('Started a new conversation: what came before is not in it.\n');
    }
  } else {
    return false;
  }
  if (state.pendingCard && options.interactive) {
    session.rl.setPrompt(`${cardPrompt(state.pendingCard)} › `);
    session.rl.prompt();
  } else {
    showPrompt(session);
  }
  return true;
}

/** The session's conversation now: its first keeps the id it always had, `/new` adds a number. */
function conversationId({ options, state }: Session): string {
  const first = `${CONSOLE_RULES.name}:${options.user}:${options.session}`;
  return state.conversation === 1 ? first : `${first}:${state.conversation}`;
}

/** Keeps the session's messages and its waiting card as the outbound and the card renderer change them. */
function followSessionOutput(options: ConsoleSessionOptions, renderer: TerminalRenderer, state: SessionState): void {
  options.outbound.onChange((id, text, target) => {
    if (target.channel !== options.session) return;
    state.turnMessages.set(id, text);
    state.lastMessageId = id;
    if (options.interactive) renderer.show(id, text);
  });
  options.cards.onCard((card, target) => {
    if (target.channel === options.session && card.state === 'pending') {
      state.pendingCard = card;
      state.cardMessageId = state.lastMessageId;
      state.cardWaiter?.();
    }
  });
}

/** The card is posted by its own job, a moment after the turn parks. */
function cardShown(state: SessionState): Promise<void> {
  return new Promise<void>((resolve) => {
    if (state.pendingCard) return resolve();
    const timer = setTimeout(resolve, 30_000);
    state.cardWaiter = () => {
      clearTimeout(timer);
      state.cardWaiter = undefined;
      resolve();
    };
  });
}

/** Resolves when the turn finishes, fails, is cancelled or parks at a card; it is the current turn till then. */
function waitForEnd(events: TurnEvents, state: SessionState, item: WorkItem): Promise<TurnEnd> {
  return new Promise<TurnEnd>((resolve) => {
    const listeners = {
      finished: ({ item: i }: { item: WorkItem }) => i.id === item.id && done({ kind: 'finished' }),
      failed: ({ item: i }: { item: WorkItem }) => i.id === item.id && done({ kind: 'failed' }),
      awaitingApproval: ({ item: i }: { item: WorkItem }) => i.id === item.id && done({ kind: 'awaitingApproval' }),
      cancelled: ({ item: i }: { item: WorkItem }) => i.id === item.id && done({ kind: 'cancelled' }),
    };
    state.current = item;
    const done = (end: TurnEnd) => {
      events.off('finished', listeners.finished);
      events.off('failed', listeners.failed);
      events.off('awaitingApproval', listeners.awaitingApproval);
      events.off('cancelled', listeners.cancelled);
      state.current = undefined;
      resolve(end);
    };
    events.on('finished', listeners.finished);
    events.on('failed', listeners.failed);
    events.on('awaitingApproval', listeners.awaitingApproval);
    events.on('cancelled', listeners.cancelled);
  });
}

function showPrompt({ options, rl }: Session): void {
  if (options.interactive) {
    rl.setPrompt('you › ');
    rl.prompt();
  }
}

/**
 * Starts the reply below the prompt on a terminal; clears the last turn's messages unless the caller
 * already did (an answer to a card clears them before it is submitted: see `answerCard`).
 */
function beginTurn({ options, state, renderer }: Session, cleared = false): void {
  if (!cleared) state.turnMessages = new Map();
  if (options.interactive) {
    options.output.write('\ncountersign › ');
    renderer.begin();
  }
}

/** Shows the turn's end: the reply (piped: all at once), then the card's prompt or the next one. */
async function afterTurn(session: Session, end: TurnEnd): Promise<void> {
  const { options, state, renderer, rl } = session;
  if (end.kind === 'failed') state.turnsFailed++;
  if (end.kind === 'awaitingApproval') await cardShown(state);
  if (options.interactive) {
    renderer.end();
    options.output.write('\n');
  } else {
    const shown = [...state.turnMessages.values()].filter((text) => text !== '');
    options.output.write(`${shown.join(MESSAGE_SEPARATOR)}\n`);
  }
  if (end.kind === 'awaitingApproval' && state.pendingCard) {
    if (options.interactive) {
      rl.setPrompt(`${cardPrompt(state.pendingCard)} › `);
      rl.prompt();
    }
    return;
  }
  showPrompt(session);
}

/**
 * A line typed while a card waits: the answer to it, or (when it does not fit) the question again.
 * Returns the continuation when the answer decided the card; the session then waits for its reply.
 */
async function answerCard(session: Session, card: ApprovalCard, line: string): Promise<WorkItem | undefined> {
  const { options, state, me } = session;
  if (asksFullDiff(card, line)) {
    const shared = await options.approvals.shareFullDiff(card.nonce, me);
    options.output.write(`${shared.ok ? shared.text : shared.reason}\n`);
    showPrompt(session);
    return undefined;
  }
  const reason = denialReason(card, line);
  const decisions = reason === undefined ? parseCardAnswer(card, line) : [];
  if (!decisions) {
    options.output.write(`Please ${cardPrompt(card)}.\n`);
    showPrompt(session);
    return undefined;
  }
  // Cleared before the answer goes in: the card drawn decided — by this answer, or by the show-card
  // job when it records the card only after the answer — belongs to the continuation's output, and
  // first in it, before the reply (its place is kept by an empty entry until it is drawn).
  state.turnMessages = new Map(state.cardMessageId ? [[state.cardMessageId, '']] : []);
  // The same verify-and-consume paths a Slack or Discord click or form takes.
  const result =
    reason === undefined
      ? await submitAnswer(options.approvals, card, decisions, me)
      : await options.approvals.denyWithReason(card.nonce, reason, me);
  if (!result.ok) {
    options.output.write(`${result.reason}\n`);
    showPrompt(session);
    return undefined;
  }
  if (!('continuation' in result)) return undefined;
  state.pendingCard = undefined;
  state.cardMessageId = undefined;
  beginTurn(session, true);
  return result.continuation;
}

/**
 * A line for the agent: a console command answers it here, anything else becomes a work item, which
 * is returned for the session to wait for its reply.
 */
async function sendLine(session: Session, line: string): Promise<WorkItem | undefined> {
  const { options } = session;
  const requester = { platform: CONSOLE_RULES.name, userId: options.user, workspace: CONSOLE_RULES.unknownWorkspace };
  const command = await options.commands?.(line, requester);
  if (command && 'reply' in command) {
    options.output.write(`${command.reply}\n`);
    showPrompt(session);
    return undefined;
  }
  const place = { platform: CONSOLE_RULES.name, channel: options.session };
  const draft: AdmissionDraft = {
    type: 'CHAT',
    priority: Priority.CRITICAL,
    conversationId: conversationId(session),
    input: { prompt: line },
    payload: {},
    reply: place,
    ...(command && 'draft' in command ? command.draft : {}),
  };
  const admitted = await options.admit({ requester, place, draft, queued: true });
  if (!admitted.ok) {
    options.output.write(`${admitted.refusal}\n`);
    showPrompt(session);
    return undefined;
  }
  beginTurn(session);
  return admitted.item;
}

/** Input ended: says what was left undone and sets the exit code a script reads. */
function reportSessionEnd({ options, state }: Session): void {
  if (options.interactive) options.output.write('\n');
  if (!options.interactive && state.turnsFailed > 0) process.exitCode = EXIT_TURN_FAILED;
  if (state.pendingCard) {
    // Ending quietly would read as success while the action was never done.
    (options.errorOutput ?? process.stderr).write(undecidedNotice(state.pendingCard));
    process.exitCode = EXIT_UNDECIDED;
  }
}
