import { transaction, type Pool, type PoolClient, type Queryable } from '../db/pool.ts';
import type { Requester } from '../core/person.ts';
import { newWorkItem, WorkItem, type WorkItemDraft } from '../core/work-item.ts';
import {
  addShowCardJob,
  addWorkItemJob,
  advanceConversation,
  appendInboundToConversation,
  appendToConversation,
  cancelParkedTurn,
  markParkedTurnContinued,
  markStopRequested,
  setReplyMessage,
  settleWorkItem,
  startWorkItem,
  type Settlement,
  type StartedRow,
} from './turn-sql.ts';

/**
 * A turn's lifecycle, verb by verb: enqueue → start → (checkpoint, in the agent) → park → continue
 * or expire → settle, or hand over to another worker. This is the only code that writes work-item
 * state or schedules graphile-worker jobs; the SQL of each step is in turn-sql.ts.
 */

export type { Settlement, StartedRow };

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
  const item = itemOf(draft);
  await appendToConversation(db, item);
  return item;
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
  const item = itemOf(draft);
  const { beforeCommit } = options;
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
): Promise<void> {
  await transaction(pool, async (client) => {
    await storeEnvelope(client);
    await settleWorkItem(client, item, { status: 'awaiting_approval' });
  });
}

/** Schedules the job that shows an approval card; call inside the transaction that stores its envelope. */
export async function scheduleApprovalCard(db: Queryable, task: string, envelopeId: string): Promise<void> {
  await addShowCardJob(db, task, envelopeId);
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
