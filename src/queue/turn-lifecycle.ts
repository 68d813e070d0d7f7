import { transaction, type Pool, type PoolClient, type Queryable } from '../db/pool.ts';
import type { Requester } from '../core/person.ts';
import { newWorkItem, WorkItem, type WorkItemDraft } from '../core/work-item.ts';
import { carrierOf, SpanKind, traceCarrier, withSpan } from '../telemetry/spans.ts';
import { advanceConversation } from './sql/advance-conversation.ts';
import { appendInboundToConversation, appendToConversation } from './sql/enqueue.ts';
import { addDiffShareJob, addShowCardJob, addWorkItemJob } from './sql/jobs.ts';
import { cancelParkedTurn, markParkedTurnContinued } from './sql/parked-turns.ts';
import { setReplyMessage } from './sql/set-reply-message.ts';
import { settleWorkItem, type Settlement } from './sql/settle-work-item.ts';
import { startWorkItem, type StartedRow } from './sql/start-work-item.ts';
import { markStopRequested } from './sql/stop-requests.ts';
import { supersedeIfFollowedUp } from './sql/supersede-if-followed-up.ts';

// The reads other modules make of work items and conversations, and the statements' types, are
// imported from here: this module is the queue's face, its sql/ folder the statements behind it.
export { activeWorkItemOf, conversationExists } from './sql/conversations.ts';
export { addShowCardJob } from './sql/jobs.ts';
export { parkedTurnContinuedBy } from './sql/parked-turns.ts';
export { anyQueuedBehind, lockQueuedBehind, markQueuedItemsTaken } from './sql/queued-behind.ts';
export type { Settlement } from './sql/settle-work-item.ts';
export type { StartedRow } from './sql/start-work-item.ts';
export { readStopRequest } from './sql/stop-requests.ts';
export { activeWorkOf, readReplyOf, readTurnOwner, readTurnProgress, unfinishedTurnsOn } from './sql/turn-reads.ts';
export type { ActiveWork } from './sql/turn-reads.ts';

/**
 * A turn's lifecycle, verb by verb: enqueue → start → (checkpoint, in the agent) → park → continue
 * or expire → settle, or hand over to another worker. Each verb runs statements from ./sql/, one
 * statement per function, most of them calling a function from migrations/ so a step is one round
 * trip.
 *
 * The statements in src/queue/sql/ own countersign.work_items, countersign.conversations and
 * countersign.inbound_events (src/db/table-owners.ts): no other module runs SQL on them, except the
 * retention sweep (housekeeping-sql.ts), which deletes old rows. They are also the only statements
 * that add graphile-worker jobs (sql/jobs.ts). The SQL functions and triggers the verbs set off, and
 * what they change:
 * - countersign.enqueue_work_item (migrations 004, 006): inserts the item, upserts its conversation,
 *   adds the job when the conversation is idle.
 * - countersign.enqueue_inbound_work_item (007): the same, with the event's inbound_events mark.
 * - countersign.advance_conversation (006): moves the conversation's head, adds the next item's job.
 * - countersign.settle_work_item (006): the item's status, its messages, the hand-over, the
 *   checkpoint's deletion (turn_checkpoints, messages).
 * - countersign.supersede_parked_turns (trigger AFTER INSERT ON work_items, migrations 012 and 017):
 *   fired by every enqueue; a steer/interrupt message from the requester of a pending card calls
 *   countersign.supersede_pending_cards (017), which marks the card superseded (approval_envelopes),
 *   cancels the parked turn (work_items), writes its withdrawn history (messages) and an audit row
 *   (approval_audit).
 * - countersign.supersede_if_followed_up (017): called when a turn parks, does the same for a
 *   message that came while the model was still planning.
 * - countersign.turn_job_priority and countersign.turn_job_flags (028): rank and flag a handed-over
 *   turn's job.
 */

function itemOf(draft: WorkItemDraft | WorkItem): WorkItem {
  return 'id' in draft && 'createdAt' in draft && draft.id && draft.createdAt
    ? WorkItem.parse(draft)
    : newWorkItem(draft);
}

/**
 * Validates and durably enqueues a work item. When this resolves the item is committed: a crash
 * from here on loses nothing. Inbound adapters acknowledge the platform only after it resolves.
 */
export async function enqueueWorkItem(db: Queryable, draft: WorkItemDraft | WorkItem): Promise<WorkItem> {
  return withEnqueueSpan(draft, async (item) => {
    await appendToConversation(db, item);
    return item;
  });
}

/**
 * The enqueue's span, with the item it makes: the item carries the span's trace context in its
 * payload (`traceparent`, unless it has one already), so the worker that runs it joins the trace.
 */
function withEnqueueSpan<T>(draft: WorkItemDraft | WorkItem, enqueue: (item: WorkItem) => Promise<T>): Promise<T> {
  const attributes = { 'countersign.conversation.id': draft.conversationId };
  return withSpan('enqueue', { kind: SpanKind.PRODUCER, attributes }, (span) => {
    const carried = carrierOf(draft.payload).traceparent ? {} : traceCarrier();
    const item = itemOf({ ...draft, payload: { ...draft.payload, ...carried } });
    span.setAttribute('countersign.work_item.id', item.id);
    return enqueue(item);
  });
}

export interface InboundEnqueueOptions {
  /**
   * A platform call the item depends on (creating the thread it replies in), run after the item is
   * written and before it commits. If it throws, neither the item nor the event's mark is kept, and
   * the error is rethrown. Holds a database connection for the call's duration.
   */
  beforeCommit?: () => Promise<void>;
}

/**
 * Durably enqueues the work item of one platform event, once per `eventId` (Slack's event id,
 * Discord's message id). The event's dedupe mark and the item commit together: an enqueue that fails
 * leaves no mark, so the platform's retry is taken; a second delivery of a taken event (a retry, or
 * the same event on another ingress replica) enqueues nothing and resolves to undefined.
 */
export async function enqueueInboundWorkItem(
  pool: Pool,
  eventId: string,
  draft: WorkItemDraft,
  options: InboundEnqueueOptions = {},
): Promise<WorkItem | undefined> {
  const { beforeCommit } = options;
  return withEnqueueSpan(draft, async (item) => {
    if (!beforeCommit) {
      const { duplicate } = await appendInboundToConversation(pool, eventId, item);
      return duplicate ? undefined : item;
    }
    return transaction(pool, async (client) => {
      const { duplicate } = await appendInboundToConversation(client, eventId, item);
      if (duplicate) return undefined;
      await beforeCommit();
      return item;
    });
  });
}

/** Marks a turn running and reads what it starts from; undefined when the item is already at rest. */
export async function startTurn(
  db: Queryable,
  workItemId: string,
  historyLimit: number,
): Promise<{ item: WorkItem; row: StartedRow } | undefined> {
  const row = await startWorkItem(db, workItemId, historyLimit);
  return row ? { item: WorkItem.parse(row.item), row } : undefined;
}

/** Records the placeholder the worker posted, so a replay streams into the same message. */
export async function recordPlaceholder(db: Queryable, item: WorkItem, messageId: string): Promise<WorkItem> {
  await setReplyMessage(db, item.id, messageId);
  return { ...item, reply: { ...item.reply, messageId } };
}

/** Puts a turn at rest (done, failed, cancelled or awaiting approval) and hands its conversation on. */
export async function settleTurn(db: Queryable, item: Pick<WorkItem, 'id' | 'conversationId'>, settlement: Settlement) {
  await settleWorkItem(db, item, settlement);
}

/** Schedules a checkpointed turn again at once, for a live worker (this one is shutting down). */
export async function handOverTurn(db: Queryable, item: WorkItem): Promise<void> {
  await addWorkItemJob(db, item);
}

/**
 * Parks a turn that waits for a decision: `storeEnvelope` writes the approval envelope inside the
 * same transaction that records the turn as awaiting approval, so neither exists without the other.
 */
export async function parkTurn(
  pool: Pool,
  item: WorkItem,
  storeEnvelope: (client: PoolClient) => Promise<void>,
): Promise<{ supersededBy?: string }> {
  return transaction(pool, async (client) => {
    await storeEnvelope(client);
    await settleWorkItem(client, item, { status: 'awaiting_approval' });
    // A message from the requester that came while the model was still planning found no card to
    // withdraw; it withdraws it now, before anyone can click it (migration 017).
    const supersededBy = await supersedeIfFollowedUp(client, item);
    return supersededBy ? { supersededBy } : {};
  });
}

/** Schedules the job that shows an approval card; call inside the transaction that stores its envelope. */
export async function scheduleApprovalCard(db: Queryable, envelopeId: string): Promise<void> {
  await addShowCardJob(db, envelopeId);
}

/**
 * Schedules sharing a change card's full diff, asked for by `by`; one pending share per card, so a
 * burst of clicks shares it once.
 */
export async function scheduleDiffShare(db: Queryable, envelopeId: string, by: Requester): Promise<void> {
  await addDiffShareJob(db, envelopeId, by);
}

/**
 * A decided card's turn carries on: the continuation joins the conversation and the parked turn is
 * done. Call inside the transaction that consumes the card's nonce.
 */
export async function continueParkedTurn(
  client: PoolClient,
  parkedWorkItemId: string,
  continuation: WorkItem,
): Promise<void> {
  await appendToConversation(client, continuation);
  await markParkedTurnContinued(client, parkedWorkItemId, continuation.id);
}

/** An expired card's turn is cancelled and its conversation moves on. */
export async function expireParkedTurn(pool: Pool, workItemId: string, conversationId: string): Promise<void> {
  await transaction(pool, async (client) => {
    await cancelParkedTurn(client, workItemId, 'approval expired');
    await advanceConversation(client, conversationId, workItemId);
  });
}

/** Records that a person asked to stop a queued or running turn, and tells every worker on `channel`. */
export async function recordStopRequest(db: Queryable, workItemId: string, by: Requester, channel: string) {
  return markStopRequested(db, workItemId, by, channel);
}
