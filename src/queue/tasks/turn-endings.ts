import type { Logger } from 'pino';
import type { Pool, PoolClient } from '../../db/pool.ts';
import { isDatabaseUnavailable, waitForDatabase } from '../../db/errors.ts';
import { Superseded, type TurnOutcome } from '../../agent/loop.ts';
import type { ToolCall } from '../../agent/messages.ts';
import type { TurnState } from '../../agent/turn-state.ts';
import type { ReplyStream } from '../../reply/reply-stream.ts';
import { scrubSecrets } from '../../log.ts';
import { handOverTurn, parkTurn, settleTurn } from '../turn-lifecycle.ts';
import { TEXTS } from '../../core/texts.ts';
import type { TurnEvents } from '../turn-events.ts';
import type { WorkItem } from '../../core/work-item.ts';
import { personKey, type Requester } from '../../core/person.ts';
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
  | { kind: 'failure'; error: unknown; reason: string };

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

/** The text streamed so far, as the assistant message a cut-short turn keeps in the history. */
function partialAnswer(sink: ReplyStream) {
  return sink.text.trim() ? [{ role: 'assistant' as const, text: sink.text, toolCalls: [] }] : [];
}

const settleFinal: Settler<'final'> = async (turn, { text, state }) => {
  const { pool, item, sink, log, startedAt } = turn;
  await sink.finish(text, feedbackButtons(turn));
  await settleTurn(pool, item, {
    status: 'done',
    result: { text, usage: state.usage },
    messages: state.messages,
    deleteCheckpoint: true,
  });
  log.info({ rounds: state.round, durationMs: Date.now() - startedAt }, 'turn finished');
  turn.events.emit('finished', { item, text, durationMs: Date.now() - startedAt });
};

const parkForApproval: Settler<'park'> = async (turn, { calls, state }) => {
  const { pool, item, sink, log } = turn;
  const parkedState: TurnState = { ...state, reply: sink.snapshot() };
  await sink.finish(sink.text || undefined);
  const parked = await parkTurn(pool, item, (client) => turn.park(client, item, parkedState));
  if (parked.supersededBy) log.info({ by: parked.supersededBy }, 'a message sent while planning withdrew the card');
  else turn.events.emit('awaitingApproval', { item, calls });
};

const handOver: Settler<'handOver'> = async ({ pool, item, log }, { round }) => {
  // The last round is checkpointed: schedule the item again at once for a live worker.
  await handOverTurn(pool, item);
  log.info({ round }, 'handed the turn over to another worker');
};

const settleSuperseded: Settler<'superseded'> = async ({ pool, item, sink, state, log, events }) => {
  await sink.finish(TEXTS.superseded(sink.text));
  const partial = partialAnswer(sink);
  const asked = state.messages.filter((m) => m.role === 'user');
  await settleTurn(pool, item, {
    status: 'cancelled',
    error: 'superseded by a newer message',
    messages: [...asked, ...partial],
    deleteCheckpoint: true,
  });
  log.info('turn superseded by a newer message');
  events.emit('cancelled', { item, by: item.requester });
};

const settleStopped: Settler<'stop'> = async ({ pool, item, sink, state, log, events, platform }, { by }) => {
  await sink.finish(TEXTS.stopped(sink.text, platform.operatorTerminal ? 'you' : personKey(by)));
  const partial = partialAnswer(sink);
  const prompt = state.messages[0]?.role === 'user' ? [state.messages[0]] : [];
  await settleTurn(pool, item, {
    status: 'cancelled',
    error: 'stopped by a person',
    messages: [...prompt, ...partial],
    deleteCheckpoint: true,
  });
  metrics.turnsStopped.inc();
  log.info({ by }, 'turn stopped');
  events.emit('cancelled', { item, by });
};

const settleFailure: Settler<'failure'> = async ({ pool, item, sink, log, events }, { error, reason }) => {
  log.error({ err: error }, 'turn failed');
  await sink.finish(TEXTS.failed(sink.text, reason));
  await settleTurn(pool, item, { status: 'failed', error: reason, deleteCheckpoint: true });
  events.emit('failed', { item, error: reason });
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
