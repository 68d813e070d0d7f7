import type { Logger } from 'pino';
import { z } from 'zod';
import { transaction, type Pool, type PoolClient, type Queryable } from '../../db/pool.ts';
import { isDatabaseUnavailable, waitForDatabase } from '../../db/errors.ts';
import { Superseded, type TurnOutcome } from '../../agent/loop.ts';
import type { ToolCall } from '../../agent/messages.ts';
import type { TurnState } from '../../agent/turn-state.ts';
import type { ReplyStream } from '../../reply/reply-stream.ts';
import { scrubSecrets } from '../../log.ts';
import { handOverTurn, parkTurn, settleTurn, type Settlement } from '../turn-lifecycle.ts';
import type { NewOutboxRow, OutboxRow } from '../../reply/outbox.ts';
import { TEXTS } from '../../core/texts.ts';
import type { TurnEvents } from '../turn-events.ts';
import { WorkItem } from '../../core/work-item.ts';
import { personKey, Requester } from '../../core/person.ts';
import type { PlatformRules } from '../../core/platform-rules.ts';
import { StopRequested } from '../stop-requests.ts';
import { feedbackValue } from '../../core/buttons.ts';
import type { ReplyButton } from '../../core/reply-target.ts';
import { metrics } from '../../metrics.ts';

/** Thrown between rounds while the process shuts down: the turn continues on another worker. */
export class HandOver extends Error {
  /** The round the next worker starts with. */
  readonly round: number;
  constructor(round: number) {
    super('this worker is shutting down; the turn continues on another worker');
    this.name = 'HandOver';
    this.round = round;
  }
}

/** How a run of the loop ended: each kind is settled by its own function in `SETTLERS`. */
export type TurnEnding =
  | { kind: 'final'; text: string; state: TurnState }
  | { kind: 'park'; calls: ToolCall[]; state: TurnState }
  | { kind: 'handOver'; round: number }
  | { kind: 'superseded' }
  | { kind: 'stop'; by: Requester }
  /** `refused`: the turn could not start for a reason the person can act on (a branch that does not exist): no stack. */
  | { kind: 'failure'; error: unknown; reason: string; refused?: boolean };

/** What settling a turn works with. */
interface SettlingTurn {
  pool: Pool;
  events: TurnEvents;
  log: Logger;
  item: WorkItem;
  /** The reply being streamed; every ending finishes it. */
  sink: ReplyStream;
  /** The state the turn started from: a turn cut short keeps its prompt from here. */
  state: TurnState;
  startedAt: number;
  /** FEEDBACK_BUTTONS: 👍/👎 under a final answer, where the platform shows them. */
  feedbackButtons: boolean;
  /** The rules of the platform the reply is on. */
  platform: PlatformRules;
  /** Stores the approval envelope inside the parking transaction (`TurnApprovals.park`). */
  park(client: PoolClient, item: WorkItem, state: TurnState): Promise<void>;
  /** The reply outbox, where this process delivers one (src/reply/outbox-deliverer.ts). */
  outbox?: ReplyOutbox;
  /**
   * The parked turn this continuation carries on: its text may still wait in the outbox, and every
   * row this turn writes is delivered only once that text is visible (`OutboxRow.afterWorkItemId`).
   */
  after?: string;
}

/** Where a finished turn's last text goes when showing it would hold the worker slot. */
export interface ReplyOutbox {
  /** Writes the row inside the transaction that settles the turn. */
  write(db: Queryable, row: NewOutboxRow): Promise<OutboxRow>;
  /** Delivers a committed row (apart from the slot). */
  deliver(row: OutboxRow): void;
  /**
   * Resolves once no reply of `workItemId` waits in the outbox (taking over a row nobody delivers):
   * a continuation shows nothing before its parked turn's text.
   */
  awaitDelivered(workItemId: string, signal?: AbortSignal): Promise<void>;
}

/**
 * The turn's event, emitted once its last text is visible: status, feedback buttons, metrics and
 * the agent session's status follow what people see, not when the computation ended. Stored with
 * an outbox row, so it is emitted by whichever process delivered it.
 */
const Announcement = z.discriminatedUnion('event', [
  z.object({ event: z.literal('finished'), item: WorkItem, text: z.string(), durationMs: z.number() }),
  z.object({ event: z.literal('failed'), item: WorkItem, error: z.string() }),
  z.object({ event: z.literal('cancelled'), item: WorkItem, by: Requester }),
  // A parked turn's text: its event (awaitingApproval) was emitted when it parked; only the first
  // visible text, if this was it, is announced on delivery.
  z.object({ event: z.literal('parked'), item: WorkItem }),
]);
type Announcement = z.infer<typeof Announcement>;
const FirstShownByOutbox = z.object({ firstVisibleText: z.boolean().optional() });

/** Emits the event an outbox row carried (or a turn settled without one), now that its text shows. */
export function announceVisible(events: TurnEvents, announcement: unknown): void {
  const parsed = Announcement.parse(announcement);
  const { item } = parsed;
  // The outbox showed the turn's first text (it had only its placeholder before).
  if (FirstShownByOutbox.parse(announcement).firstVisibleText)
    events.emit('firstVisibleText', { item, latencyMs: Date.now() - Date.parse(item.createdAt) });
  if (parsed.event === 'finished') events.emit('finished', parsed);
  else if (parsed.event === 'failed') events.emit('failed', parsed);
  else if (parsed.event === 'cancelled') events.emit('cancelled', parsed);
}

/**
 * Shows the reply's last text and puts the turn to rest. Where the platform's budget could make the
 * worker slot wait for a rate token, the stream hands its reply to the outbox instead: the text is
 * written as a row in the transaction that settles the turn and delivered apart from the slot,
 * which is free at once; the turn's event follows delivery. Elsewhere (no budget, a native stream)
 * the text is shown here, as before.
 */
async function showAndSettle(
  turn: SettlingTurn,
  reply: { text: string; buttons?: ReplyButton[] | undefined },
  settlement: Settlement,
  announcement: Announcement,
): Promise<void> {
  const { pool, item, sink, outbox } = turn;
  const replyState = outbox ? await sink.handOff() : undefined;
  if (!outbox || !replyState) {
    await sink.finish(reply.text, reply.buttons);
    await settleTurn(pool, item, settlement);
    announceVisible(turn.events, announcement);
    return;
  }
  const row = await transaction(pool, async (client) => {
    await settleTurn(client, item, settlement);
    const announce = { ...announcement, firstVisibleText: !sink.anyDelivered };
    const buttons = reply.buttons ?? [];
    return outbox.write(client, {
      workItemId: item.id,
      target: item.reply,
      replyState,
      text: reply.text,
      buttons,
      announce,
      ...(turn.after ? { afterWorkItemId: turn.after } : {}),
    });
  });
  outbox.deliver(row);
}

type Settler<K extends TurnEnding['kind']> = (
  turn: SettlingTurn,
  ending: Extract<TurnEnding, { kind: K }>,
) => Promise<void>;

/** The loop's result as an ending. */
export function endingOfOutcome(outcome: TurnOutcome): TurnEnding {
  if (outcome.kind === 'final') return { kind: 'final', text: outcome.text, state: outcome.state };
  return { kind: 'park', calls: outcome.calls, state: outcome.state };
}

/**
 * The ending a thrown error means, or the error again when graphile-worker should retry the job:
 * infrastructure trouble or shutdown, after which the turn resumes from its checkpoint.
 */
export async function endingOfError(error: unknown, signal: AbortSignal, pool: Pool, log: Logger): Promise<TurnEnding> {
  if (error instanceof HandOver) return { kind: 'handOver', round: error.round };
  if (error instanceof Superseded) return { kind: 'superseded' };
  if (signal.reason instanceof StopRequested) return { kind: 'stop', by: signal.reason.by };
  if (isDatabaseUnavailable(error)) {
    log.warn({ err: error }, 'database unavailable during the turn; waiting for it before handing the turn back');
    await waitForDatabase(pool);
    throw error;
  }
  if (signal.aborted) throw error;
  return { kind: 'failure', error, reason: scrubSecrets((error as Error).message ?? String(error)) };
}

function feedbackButtons(turn: SettlingTurn): ReplyButton[] | undefined {
  const { item } = turn;
  if (!turn.feedbackButtons || !turn.platform.capabilities.feedback) return undefined;
  return [
    { label: '👍', value: feedbackValue(item.id, 'up'), style: 'secondary' },
    { label: '👎', value: feedbackValue(item.id, 'down'), style: 'secondary' },
  ];
}

/** The reply as shown at the end (the text streamed so far, with its notice): what a cut-short turn keeps in the history. */
function partialAnswer(shown: string) {
  return shown.trim() ? [{ role: 'assistant' as const, text: shown, toolCalls: [] }] : [];
}

const settleFinal: Settler<'final'> = async (turn, { text, state }) => {
  const { item, log, startedAt } = turn;
  const durationMs = Date.now() - startedAt;
  await showAndSettle(
    turn,
    { text, buttons: feedbackButtons(turn) },
    { status: 'done', result: { text, usage: state.usage }, messages: state.messages, deleteCheckpoint: true },
    { event: 'finished', item, text, durationMs },
  );
  log.info({ rounds: state.round, durationMs }, 'turn finished');
};

/**
 * Parks the turn on its card. Where the outbox applies (as in `showAndSettle`), the text so far is
 * written as an outbox row in the transaction that parks the turn, so the slot is free at once and
 * the text shows apart from it; the continuation, replying below the card, shows nothing before that
 * text is visible (`SettlingTurn.after`). The parked state keeps where the reply stood when it was
 * handed off; the row's own record is the newer one if its delivery posts more messages, and the
 * continuation starts a new reply either way (src/approval/resume.ts). Elsewhere the text is
 * finished here, as before.
 */
const parkForApproval: Settler<'park'> = async (turn, { calls, state }) => {
  const { pool, item, sink, log, outbox } = turn;
  const replyState = outbox ? await sink.handOff() : undefined;
  let parked: { supersededBy?: string };
  if (!outbox || !replyState) {
    const parkedState: TurnState = { ...state, reply: sink.snapshot() };
    await sink.finish(sink.text || undefined);
    parked = await parkTurn(pool, item, (client) => turn.park(client, item, parkedState));
  } else {
    const parkedState: TurnState = { ...state, reply: replyState };
    let row: OutboxRow | undefined;
    parked = await parkTurn(pool, item, async (client) => {
      await turn.park(client, item, parkedState);
      row = await outbox.write(client, {
        workItemId: item.id,
        target: item.reply,
        replyState,
        text: sink.text,
        buttons: [],
        announce: { event: 'parked', item, firstVisibleText: !sink.anyDelivered },
        ...(turn.after ? { afterWorkItemId: turn.after } : {}),
      });
    });
    if (row) outbox.deliver(row);
  }
  if (parked.supersededBy) log.info({ by: parked.supersededBy }, 'a message sent while planning withdrew the card');
  else turn.events.emit('awaitingApproval', { item, calls });
};

const handOver: Settler<'handOver'> = async ({ pool, item, log, sink }, { round }) => {
  // This stream shows nothing more: the next attempt streams the reply from the checkpoint, and a
  // wait still pending here (a continuation's, for its park text) must not post once it ends.
  await sink.handOff().catch(() => undefined);
  // The last round is checkpointed: schedule the item again at once for a live worker.
  await handOverTurn(pool, item);
  log.info({ round }, 'handed the turn over to another worker');
};

const settleSuperseded: Settler<'superseded'> = async (turn) => {
  const { item, sink, state, log } = turn;
  const shown = TEXTS.superseded(sink.text);
  const partial = partialAnswer(shown);
  const asked = state.messages.filter((m) => m.role === 'user');
  await showAndSettle(
    turn,
    { text: shown },
    {
      status: 'cancelled',
      error: 'superseded by a newer message',
      messages: [...asked, ...partial],
      deleteCheckpoint: true,
    },
    { event: 'cancelled', item, by: item.requester },
  );
  log.info('turn superseded by a newer message');
};

const settleStopped: Settler<'stop'> = async (turn, { by }) => {
  const { item, sink, state, log, platform } = turn;
  const shown = TEXTS.stopped(sink.text, platform.operatorTerminal ? 'you' : personKey(by));
  const partial = partialAnswer(shown);
  const prompt = state.messages[0]?.role === 'user' ? [state.messages[0]] : [];
  await showAndSettle(
    turn,
    { text: shown },
    { status: 'cancelled', error: 'stopped by a person', messages: [...prompt, ...partial], deleteCheckpoint: true },
    { event: 'cancelled', item, by },
  );
  metrics.turnsStopped.inc();
  log.info({ by }, 'turn stopped');
};

const settleFailure: Settler<'failure'> = async (turn, { error, reason, refused }) => {
  const { item, sink, log } = turn;
  if (refused) log.info({ reason }, 'turn refused');
  else log.error({ err: error }, 'turn failed');
  await showAndSettle(
    turn,
    { text: TEXTS.failed(sink.text, reason) },
    { status: 'failed', error: reason, deleteCheckpoint: true },
    { event: 'failed', item, error: reason },
  );
};

/** Each ending's settler: it finishes the reply and puts the work item to rest through turn-lifecycle.ts. */
const SETTLERS: { [K in TurnEnding['kind']]: Settler<K> } = {
  final: settleFinal,
  park: parkForApproval,
  handOver,
  superseded: settleSuperseded,
  stop: settleStopped,
  failure: settleFailure,
};

export function settleEnding(turn: SettlingTurn, ending: TurnEnding): Promise<void> {
  // TypeScript cannot tie the looked-up settler to the ending's own kind; the table's type does.
  const settle = SETTLERS[ending.kind] as Settler<TurnEnding['kind']>;
  return settle(turn, ending);
}
