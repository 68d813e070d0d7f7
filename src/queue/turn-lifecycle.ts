import { transaction, type Pool, type PoolClient, type Queryable } from '../db/pool.ts';
import type { Requester } from '../core/person.ts';
import { newWorkItem, Priority, WorkItem, type WorkItemDraft } from '../core/work-item.ts';
import type { Message } from '../agent/messages.ts';
import { JOBS, turnJobFor } from './tasks/index.ts';
import { carrierOf, SpanKind, traceCarrier, withSpan } from '../telemetry/spans.ts';
import { toJsonb } from '../core/storable-text.ts';

/**
 * A turn's lifecycle, verb by verb: enqueue → start → (checkpoint, in the agent) → park → continue
 * or expire → settle, or hand over to another worker. The verbs come first; the SQL they run
 * follows, one statement per function, most of them calling a function from migrations/ so a step is
 * one round trip; last come the reads other modules make of work items and conversations.
 *
 * This module owns countersign.work_items, countersign.conversations and countersign.inbound_events
 * (src/db/table-owners.ts): no other module runs SQL on them, except the retention sweep
 * (housekeeping-sql.ts), which deletes old rows. It is also the only module that adds graphile-worker
 * jobs. The SQL functions and triggers it sets off, and what they change:
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

/** The newer message that withdraws a just-parked turn's card, if one came while it was planning. */
async function supersedeIfFollowedUp(db: Queryable, item: Pick<WorkItem, 'id' | 'conversationId'>) {
  const { rows } = await db.query<{ by: string | null }>('SELECT countersign.supersede_if_followed_up($1, $2) AS by', [
    item.conversationId,
    item.id,
  ]);
  return rows[0]?.by ?? undefined;
}

/** Schedules the job that shows an approval card; call inside the transaction that stores its envelope. */
export async function scheduleApprovalCard(db: Queryable, envelopeId: string): Promise<void> {
  await addShowCardJob(db, envelopeId);
}

/** One piece of a person's unfinished work, as `countersign status` lists it. */
export interface ActiveWork {
  id: string;
  type: string;
  priority: number;
  status: 'queued' | 'running' | 'awaiting_approval';
  ageSeconds: number;
  prompt: string | null;
  conversationId: string;
  /** Who asked, as `platform:user`. */
  requester: string;
}

/**
 * Running, parked and queued work, oldest first (at most `limit`): a person's, or with no person
 * everyone's (`countersign status`, for the operator).
 */
export async function activeWorkOf(db: Queryable, person: Requester | undefined, limit = 20): Promise<ActiveWork[]> {
  const { rows } = await db.query<ActiveWork>(
    `SELECT id, type, priority, status, conversation_id AS "conversationId",
            extract(epoch FROM now() - created_at)::int AS "ageSeconds",
            left(item->'input'->>'prompt', 200) AS prompt,
            (item->'requester'->>'platform') || ':' || (item->'requester'->>'userId') AS requester
       FROM countersign.work_items
      WHERE status IN ('queued', 'running', 'awaiting_approval')
        AND ($1::text IS NULL OR item->'requester'->>'platform' = $1)
        AND ($2::text IS NULL OR item->'requester'->>'userId' = $2)
        AND ($3::text IS NULL OR item->'requester'->>'workspace' IS NULL OR item->'requester'->>'workspace' = $3)
      ORDER BY created_at
      LIMIT $4`,
    [person?.platform ?? null, person?.userId ?? null, person?.workspace ?? null, limit],
  );
  return rows;
}

/**
 * Schedules sharing a change card's full diff, asked for by `by`; one pending share per card, so a
 * burst of clicks shares it once.
 */
export async function scheduleDiffShare(db: Queryable, envelopeId: string, by: Requester): Promise<void> {
  const { name, options } = JOBS.shareChangeDiff;
  await db.query(
    `SELECT graphile_worker.add_job($1::text, json_build_object('envelopeId', $2::text, 'by', $3::json),
       priority => $4::int, max_attempts => $5::int, job_key => $6::text, job_key_mode => 'preserve_run_at')`,
    [name, envelopeId, toJsonb(by), options.priority, options.maxAttempts, `share-diff:${envelopeId}`],
  );
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

// ---- The statements ------------------------------------------------------------------------

/**
 * Per-conversation ordering without a graphile-worker queue per conversation.
 *
 * graphile-worker's named queues would serialise a conversation, but each name is a row that job
 * selection has to consider, and the docs warn against high-cardinality names (100,000 conversations
 * would be 100,000 queues). Instead, a conversation is a chain: only its head work item has a job.
 * Enqueueing appends to the chain and adds a job only when the conversation is idle; finishing an
 * item hands the head to the next queued item and adds its job, in the same transaction. Both sides
 * lock the conversation row, so the hand-over can't race an enqueue. The job table only ever holds
 * one job per busy conversation, and different conversations run in parallel.
 */

/** The arguments of countersign.enqueue_work_item (and, after the event id, of its inbound form). */
function enqueueArguments(item: WorkItem): unknown[] {
  return [
    item.id,
    item.conversationId,
    item.reply.platform,
    item.type,
    item.priority,
    toJsonb(item),
    item.createdAt,
    turnJobFor(item.priority).name,
  ];
}

/**
 * Appends a work item to its conversation and schedules it at once if the conversation is idle
 * (countersign.enqueue_work_item, one round trip). Works alone or inside a caller's transaction.
 */
async function appendToConversation(db: Queryable, item: WorkItem): Promise<{ started: boolean }> {
  const { rows } = await db.query<{ started: boolean }>({
    name: 'cs_enqueue_work_item',
    text: 'SELECT countersign.enqueue_work_item($1, $2, $3, $4, $5, $6, $7, $8) AS started',
    values: enqueueArguments(item),
  });
  return { started: rows[0]?.started ?? false };
}

/**
 * Like `appendToConversation`, for the work item of one platform event: the event's dedupe mark
 * (countersign.inbound_events) is inserted in the same statement, so the mark exists exactly when
 * the item does. `{ duplicate: true }` when the event was already taken — nothing was enqueued.
 */
async function appendInboundToConversation(
  db: Queryable,
  eventId: string,
  item: WorkItem,
): Promise<{ duplicate: boolean; started: boolean }> {
  const { rows } = await db.query<{ started: boolean | null }>({
    name: 'cs_enqueue_inbound_work_item',
    text: 'SELECT countersign.enqueue_inbound_work_item($1, $2, $3, $4, $5, $6, $7, $8, $9) AS started',
    values: [eventId, ...enqueueArguments(item)],
  });
  const started = rows[0]?.started ?? null;
  return { duplicate: started === null, started: started === true };
}

/** The arguments that let the database pick a job's task from its priority the way `turnJobFor` does. */
function taskRule(): [interactiveTask: string, backgroundTask: string, interactiveMaxPriority: number] {
  return [JOBS.interactiveTurn.name, JOBS.backgroundTurn.name, Priority.HIGH];
}

/**
 * Moves the conversation's head past `workItemId` (which just reached a resting state) and schedules
 * the next queued item, if any (countersign.advance_conversation, one round trip). Call inside the
 * transaction that records the item's new status.
 */
async function advanceConversation(db: Queryable, conversationId: string, workItemId: string): Promise<void> {
  await db.query('SELECT countersign.advance_conversation($1, $2, $3, $4, $5)', [
    conversationId,
    workItemId,
    ...taskRule(),
  ]);
}

export interface Settlement {
  status: 'awaiting_approval' | 'done' | 'failed' | 'cancelled';
  result?: unknown;
  error?: string;
  /** Messages to append to the conversation's history. */
  messages?: Message[];
  /** Drop the turn's checkpoint (it is complete). */
  deleteCheckpoint?: boolean;
}

/**
 * Puts a work item into a resting status, appends its messages to the history, hands the
 * conversation to its next item and drops the checkpoint — one statement
 * (countersign.settle_work_item), so all of it commits or none of it does. Works alone or inside a
 * caller's transaction.
 */
async function settleWorkItem(
  db: Queryable,
  item: { id: string; conversationId: string },
  settlement: Settlement,
): Promise<void> {
  await db.query({
    name: 'cs_settle_work_item',
    text: 'SELECT countersign.settle_work_item($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)',
    values: [
      item.id,
      item.conversationId,
      settlement.status,
      settlement.result === undefined ? null : toJsonb(settlement.result),
      settlement.error ?? null,
      settlement.messages && settlement.messages.length > 0 ? toJsonb(settlement.messages) : null,
      settlement.deleteCheckpoint ?? false,
      ...taskRule(),
    ],
  });
}

type ItemStatus = 'queued' | 'running' | 'awaiting_approval' | 'done' | 'failed' | 'cancelled';

export interface StartedRow {
  status: ItemStatus;
  item: unknown;
  attempts: number;
  stopped_by: Requester | null;
  checkpoint_version: number | null;
  checkpoint: unknown;
  /** The messages after the conversation's summary (all of them when it has none), newest `historyLimit`. */
  history: Message[];
  history_ids: Array<number | string>;
  /** The conversation's compacted summary, if it has one (src/agent/history). */
  summary: unknown;
}

/**
 * Marks the item running and reads everything the turn starts from — the item, its stop request,
 * its checkpoint and the conversation's recent history — in one round trip. No row: the item is
 * already at rest.
 */
async function startWorkItem(db: Queryable, workItemId: string, historyLimit: number): Promise<StartedRow | undefined> {
  const { rows } = await db.query<StartedRow>({
    name: 'cs_start_work_item',
    text: `WITH started AS (
       UPDATE countersign.work_items SET status = 'running', started_at = coalesce(started_at, now()), attempts = attempts + 1
       WHERE id = $1 AND status IN ('queued', 'running')
       RETURNING status, item, attempts, stopped_by, conversation_id
     )
     SELECT s.status, s.item, s.attempts, s.stopped_by,
            c.format_version AS checkpoint_version, c.state AS checkpoint,
            h.history, h.history_ids, sm.summary
     FROM started s
     LEFT JOIN countersign.turn_checkpoints c ON c.work_item_id = $1
     LEFT JOIN countersign.conversation_summaries sm ON sm.conversation_id = s.conversation_id
     CROSS JOIN LATERAL (
       SELECT coalesce(jsonb_agg(recent.message ORDER BY recent.id), '[]'::jsonb) AS history,
              coalesce(array_agg(recent.id ORDER BY recent.id), '{}') AS history_ids
       FROM (SELECT id, message FROM countersign.messages m
             WHERE m.conversation_id = s.conversation_id AND m.id > coalesce(sm.through_message_id, 0)
             ORDER BY id DESC LIMIT $2) recent
     ) h`,
    values: [workItemId, historyLimit],
  });
  return rows[0];
}

/** Records the reply's first message (a placeholder the worker posted) on the stored item. */
async function setReplyMessage(db: Queryable, workItemId: string, messageId: string): Promise<void> {
  await db.query(
    `UPDATE countersign.work_items SET item = jsonb_set(item, '{reply,messageId}', to_jsonb($2::text)) WHERE id = $1`,
    [workItemId, messageId],
  );
}

/**
 * Schedules a job for a work item that is its conversation's head already (a turn handed over), ranked
 * like every turn job by how busy its place is (countersign.turn_job_priority, migration 028) and
 * flagged `backlog` when that place has other work outstanding (countersign.turn_job_flags), which
 * keeps it out of the express pool.
 */
async function addWorkItemJob(db: Queryable, item: Pick<WorkItem, 'id' | 'priority'>): Promise<void> {
  const job = turnJobFor(item.priority);
  await db.query(
    `SELECT graphile_worker.add_job($1::text, json_build_object('workItemId', $2::text),
       priority => r.rank::smallint, flags => countersign.turn_job_flags(r.rank, $4::int), max_attempts => $3::int)
     FROM (SELECT countersign.turn_job_priority($2::uuid) AS rank) r`,
    [job.name, item.id, job.options.maxAttempts, item.priority],
  );
}

/** Schedules the job that shows a pending approval card (src/queue/tasks/show-approval-card.ts). */
export async function addShowCardJob(db: Queryable, envelopeId: string): Promise<void> {
  const { name, options } = JOBS.showApprovalCard;
  await db.query(
    `SELECT graphile_worker.add_job($1::text, json_build_object('envelopeId', $2::text), priority => $3::int, max_attempts => $4::int)`,
    [name, envelopeId, options.priority, options.maxAttempts],
  );
}

/** A parked turn whose card was decided: done, pointing at the continuation that carries on. */
async function markParkedTurnContinued(db: Queryable, workItemId: string, continuationId: string): Promise<void> {
  await db.query(
    `UPDATE countersign.work_items SET status = 'done', result = $2, finished_at = now()
     WHERE id = $1 AND status = 'awaiting_approval'`,
    [workItemId, toJsonb({ continuation: continuationId })],
  );
}

/** A parked turn whose card expired: cancelled (its conversation is advanced separately). */
async function cancelParkedTurn(db: Queryable, workItemId: string, error: string): Promise<void> {
  await db.query(
    `UPDATE countersign.work_items SET status = 'cancelled', error = $2 WHERE id = $1 AND status = 'awaiting_approval'`,
    [workItemId, error],
  );
}

/** Records a stop request on a queued or running turn and notifies `channel`; false when there was none to stop. */
async function markStopRequested(db: Queryable, workItemId: string, by: Requester, channel: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `WITH stopped AS (
       UPDATE countersign.work_items SET stop_requested_at = now(), stopped_by = $2
       WHERE id = $1 AND status IN ('queued', 'running') AND stop_requested_at IS NULL
       RETURNING id
     )
     SELECT pg_notify($3, id::text) FROM stopped`,
    [workItemId, toJsonb(by), channel],
  );
  return rowCount === 1;
}

// ---- Reads of work items and conversations, for the modules around the lifecycle --------------

/** Whether anything is queued behind `item` in its conversation (src/queue/follow-ups.ts). */
export async function anyQueuedBehind(db: Queryable, item: Pick<WorkItem, 'id' | 'conversationId'>): Promise<boolean> {
  const { rows } = await db.query<{ waiting: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM countersign.work_items
                     WHERE conversation_id = $1 AND status = 'queued' AND id <> $2) AS waiting`,
    [item.conversationId, item.id],
  );
  return rows[0]?.waiting === true;
}

/** The items queued behind `item` in its conversation, in arrival order, locked until the transaction ends. */
export async function lockQueuedBehind(
  db: Queryable,
  item: Pick<WorkItem, 'id' | 'conversationId'>,
): Promise<Array<{ id: string; item: unknown }>> {
  const { rows } = await db.query<{ id: string; item: unknown }>(
    `SELECT id, item FROM countersign.work_items
      WHERE conversation_id = $1 AND status = 'queued' AND id <> $2
      ORDER BY seq
      FOR UPDATE`,
    [item.conversationId, item.id],
  );
  return rows;
}

/** Marks queued items done, taken over by the turn `intoWorkItemId` (src/queue/follow-ups.ts). Call with their lock held. */
export async function markQueuedItemsTaken(db: Queryable, ids: string[], intoWorkItemId: string): Promise<void> {
  await db.query(
    `UPDATE countersign.work_items
        SET status = 'done', finished_at = now(), result = jsonb_build_object('takenInto', $2::text)
      WHERE id = ANY($1::uuid[]) AND status = 'queued'`,
    [ids, intoWorkItemId],
  );
}

/** Who asked for a turn, where it answers and its status; undefined when there is no such turn. */
export async function readTurnOwner(
  db: Queryable,
  workItemId: string,
): Promise<{ requester: Requester; reply: unknown; status: string } | undefined> {
  const { rows } = await db.query<{ requester: Requester; reply: unknown; status: string }>(
    `SELECT item->'requester' AS requester, item->'reply' AS reply, status FROM countersign.work_items WHERE id = $1`,
    [workItemId],
  );
  return rows[0];
}

/** Who asked to stop a turn, if anyone did (named: read between every round). */
export async function readStopRequest(db: Queryable, workItemId: string): Promise<Requester | undefined> {
  const { rows } = await db.query<{ stopped_by: Requester | null }>({
    name: 'cs_stop_request_of',
    text: 'SELECT stopped_by FROM countersign.work_items WHERE id = $1 AND stop_requested_at IS NOT NULL',
    values: [workItemId],
  });
  return rows[0]?.stopped_by ?? undefined;
}

/** Where a turn answers, as stored (unparsed); undefined when there is no such turn. */
export async function readReplyOf(db: Queryable, workItemId: string): Promise<{ reply: unknown } | undefined> {
  const { rows } = await db.query<{ reply: unknown }>(
    `SELECT item->'reply' AS reply FROM countersign.work_items WHERE id = $1::uuid`,
    [workItemId],
  );
  return rows[0];
}

/** A platform's turns not yet at rest, oldest first, with the channel each replies in. */
export async function unfinishedTurnsOn(
  db: Queryable,
  platform: string,
): Promise<Array<{ id: string; conversation_id: string; session: string }>> {
  const { rows } = await db.query<{ id: string; conversation_id: string; session: string }>(
    `SELECT id, conversation_id, item->'reply'->>'channel' AS session
     FROM countersign.work_items
     WHERE status IN ('queued', 'running') AND item->'reply'->>'platform' = $1
     ORDER BY seq`,
    [platform],
  );
  return rows;
}

/** Whether a conversation exists (a thread is one once a turn was enqueued in it). */
export async function conversationExists(db: Queryable, conversationId: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM countersign.conversations WHERE id = $1', [conversationId]);
  return Boolean(rowCount);
}

/** The work item a conversation is running now, if any. */
export async function activeWorkItemOf(db: Queryable, conversationId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ active_work_item: string | null }>(
    'SELECT active_work_item FROM countersign.conversations WHERE id = $1',
    [conversationId],
  );
  return rows[0]?.active_work_item ?? undefined;
}

/**
 * The parked turn a continuation carries on (marked done with `{ continuation }` when its card was
 * decided), looked up among the items of its approval context (the first item and its continuations,
 * both indexed); undefined for an item that continues none.
 */
export async function parkedTurnContinuedBy(
  db: Queryable,
  continuation: Pick<WorkItem, 'id' | 'input'>,
): Promise<string | undefined> {
  const context = continuation.input.approvalContextId;
  if (!context) return undefined;
  const { rows } = await db.query<{ id: string }>(
    `SELECT id::text AS id FROM countersign.work_items
      WHERE (id = $1::uuid OR item->'input'->>'approvalContextId' = $1::text)
        AND result->>'continuation' = $2::text`,
    [context, continuation.id],
  );
  return rows[0]?.id;
}

/**
 * Where a turn has got to, following its approval continuations (each carries the first item's id
 * as `approvalContextId`): the newest item's status and error; undefined when the turn is gone.
 * A scheduled run's outcome (src/schedules) is read this way.
 */
export async function readTurnProgress(
  db: Queryable,
  workItemId: string,
): Promise<{ status: string; error: string | null } | undefined> {
  const { rows } = await db.query<{ status: string; error: string | null }>(
    `SELECT status, error FROM countersign.work_items
      WHERE id = $1::uuid OR item->'input'->>'approvalContextId' = $1::text
      ORDER BY seq DESC LIMIT 1`,
    [workItemId],
  );
  return rows[0];
}
