import type { Queryable } from '../db/pool.ts';
import { metrics } from '../metrics.ts';
import type { Requester } from '../core/person.ts';
import { EnvelopeRow, type CardCopy } from './envelope.ts';
import { type CallDecision } from '../core/work-item.ts';
import { toJsonb } from '../core/storable-text.ts';

/**
 * SQL of approval envelopes and their audit log (countersign.approval_envelopes, approval_audit,
 * approval_audit_budget; src/db/table-owners.ts). One statement per function. Also writing them,
 * in migrations/: countersign.supersede_pending_cards (migration 017) marks a pending envelope
 * superseded and audits it, run by the trigger countersign.supersede_parked_turns (012, 017) when
 * src/queue/turn-lifecycle.ts enqueues a message, and by countersign.supersede_if_followed_up when a
 * turn parks.
 */

/**
 * Every envelope read carries `partial_decisions` as the text it had, so a later update can require
 * the column to be unchanged since (compare-and-set) without depending on how it was parsed.
 */
const ENVELOPE_COLUMNS = `*, partial_decisions::text AS partial_decisions_read`;
const SELECT_ENVELOPE = `SELECT ${ENVELOPE_COLUMNS}, expires_at <= now() AS expired_now FROM countersign.approval_envelopes`;

export interface NewEnvelope {
  id: string;
  nonce: string;
  kind: 'tools' | 'question';
  contextId: string;
  workItemId: string;
  conversationId: string;
  requester: Requester;
  approvers: string[];
  twoPersonRule: boolean;
  callsCanonical: string;
  planHash: string;
  scope: unknown;
  scopeHash: string;
  turnState: unknown;
  /** The turn's history as it reads if a newer message withdraws the card (migration 017). */
  withdrawnMessages: unknown[];
  reply: unknown;
  ttlSeconds: number;
}

export async function insertEnvelope(db: Queryable, e: NewEnvelope): Promise<{ expiresAt: Date }> {
  const { rows } = await db.query<{ expires_at: Date }>(
    `INSERT INTO countersign.approval_envelopes
       (id, nonce, kind, context_id, work_item_id, conversation_id, requester, approvers, two_person_rule,
        calls, plan_hash, scope, scope_hash, turn_state, reply, expires_at, withdrawn_messages)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, now() + make_interval(secs => $16), $17)
     RETURNING expires_at`,
    [
      e.id,
      e.nonce,
      e.kind,
      e.contextId,
      e.workItemId,
      e.conversationId,
      toJsonb(e.requester),
      toJsonb(e.approvers),
      e.twoPersonRule,
      e.callsCanonical,
      e.planHash,
      toJsonb(e.scope),
      e.scopeHash,
      toJsonb(e.turnState),
      toJsonb(e.reply),
      e.ttlSeconds,
      toJsonb(e.withdrawnMessages),
    ],
  );
  return { expiresAt: rows[0]!.expires_at };
}

export async function findEnvelopeByNonce(db: Queryable, nonce: string): Promise<EnvelopeRow | undefined> {
  const { rows } = await db.query(`${SELECT_ENVELOPE} WHERE nonce = $1`, [nonce]);
  return rows[0] ? EnvelopeRow.parse(rows[0]) : undefined;
}

export async function findEnvelopeById(db: Queryable, id: string): Promise<EnvelopeRow | undefined> {
  const { rows } = await db.query(`${SELECT_ENVELOPE} WHERE id = $1`, [id]);
  return rows[0] ? EnvelopeRow.parse(rows[0]) : undefined;
}

/** A person's cards still waiting, oldest first (a connection they just made may let them go on). */
export async function findPendingEnvelopesOf(db: Queryable, person: Requester): Promise<EnvelopeRow[]> {
  const { rows } = await db.query(
    `${SELECT_ENVELOPE} WHERE status = 'pending' AND expires_at > now()
       AND requester->>'platform' = $1 AND requester->>'userId' = $2
       AND coalesce(requester->>'workspace', '') = $3 ORDER BY created_at LIMIT 20`,
    [person.platform, person.userId, person.workspace ?? ''],
  );
  return rows.map((r) => EnvelopeRow.parse(r));
}

/** The envelopes a newer message superseded (migration 012's trigger audits each with the message's id). */
export async function findSupersededBy(db: Queryable, workItemId: string): Promise<EnvelopeRow[]> {
  const { rows } = await db.query(
    `${SELECT_ENVELOPE} WHERE status = 'superseded' AND id IN (
       SELECT envelope_id FROM countersign.approval_audit WHERE event = 'superseded' AND detail->>'by' = $1)`,
    [workItemId],
  );
  return rows.map((r) => EnvelopeRow.parse(r));
}

/** Records a copy of the card (an approvals channel, an approver's DM) so decisions update it too. */
export async function addCardCopy(db: Queryable, id: string, copy: CardCopy): Promise<void> {
  await db.query(
    `UPDATE countersign.approval_envelopes SET card_copies = card_copies || jsonb_build_array($2::jsonb) WHERE id = $1`,
    [id, toJsonb(copy)],
  );
}

export async function setCardMessage(db: Queryable, id: string, messageId: string): Promise<void> {
  await db.query('UPDATE countersign.approval_envelopes SET card_message_id = $2 WHERE id = $1', [id, messageId]);
}

/**
 * Rewrites a consumed envelope's decisions after the policy refused some approved calls at resume,
 * so the record (and the card drawn from it) says they did not run, and why.
 */
export async function recordPolicyRefusals(db: Queryable, id: string, decisions: CallDecision[]): Promise<void> {
  await db.query(`UPDATE countersign.approval_envelopes SET decisions = $2 WHERE id = $1 AND status = 'consumed'`, [
    id,
    toJsonb(decisions),
  ]);
}

/**
 * Consumes the nonce: a conditional update that only one submission can win, only while the envelope
 * is pending and unexpired by the database's clock, and only if the per-call decisions are still the
 * ones the caller read (`partialRead`) — a decision recorded meanwhile makes this miss, and the caller
 * re-reads and re-verifies instead of overwriting it. `decided` (every call, with who decided it)
 * replaces the partial decisions so the card can say who decided what.
 */
export async function consumeNonce(
  db: Queryable,
  nonce: string,
  partialRead: string,
  decided: Array<CallDecision & { by: Requester }>,
  decisions: CallDecision[],
  decidedBy: Requester,
  continuationId: string,
): Promise<EnvelopeRow | undefined> {
  const { rows } = await db.query(
    `UPDATE countersign.approval_envelopes
       SET status = 'consumed', partial_decisions = $3::jsonb, decisions = $4::jsonb, decided_by = $5::jsonb,
           decided_at = now(), continuation_work_item = $6::uuid
     WHERE nonce = $1::text AND status = 'pending' AND expires_at > now() AND partial_decisions = $2::jsonb
     RETURNING ${ENVELOPE_COLUMNS}, false AS expired_now`,
    [nonce, partialRead, toJsonb(decided), toJsonb(decisions), toJsonb(decidedBy), continuationId],
  );
  return rows[0] ? EnvelopeRow.parse(rows[0]) : undefined;
}

/**
 * Records per-call decisions (single-call buttons, or Approve all while another call is decided)
 * as the new list `decided`, only if the list is still the one the caller read (`partialRead`).
 */
export async function recordPartialDecisions(
  db: Queryable,
  nonce: string,
  partialRead: string,
  decided: Array<CallDecision & { by: Requester }>,
): Promise<EnvelopeRow | undefined> {
  const { rows } = await db.query(
    `UPDATE countersign.approval_envelopes SET partial_decisions = $3::jsonb
     WHERE nonce = $1::text AND status = 'pending' AND expires_at > now() AND partial_decisions = $2::jsonb
     RETURNING ${ENVELOPE_COLUMNS}, false AS expired_now`,
    [nonce, partialRead, toJsonb(decided)],
  );
  return rows[0] ? EnvelopeRow.parse(rows[0]) : undefined;
}

/** Marks every pending envelope past its expiry as expired and returns them. */
export async function expireEnvelopes(db: Queryable): Promise<EnvelopeRow[]> {
  const { rows } = await db.query(
    `UPDATE countersign.approval_envelopes SET status = 'expired'
     WHERE status = 'pending' AND expires_at <= now()
     RETURNING ${ENVELOPE_COLUMNS}, true AS expired_now`,
  );
  return rows.map((r) => EnvelopeRow.parse(r));
}

export type AuditEvent =
  | 'requested'
  | 'click'
  | 'rejected'
  | 'partial'
  | 'consumed'
  | 'executed'
  | 'denied'
  | 'answered'
  | 'refused'
  | 'expired'
  /** A policy rule let a call run without a card (detail: work item, tool, rule). */
  | 'allowed'
  /** A policy rule refused a call; it never ran (detail: work item, tool, rule). */
  | 'policy_denied'
  /** "Always allow here": a grant was created with an approval (detail: grant, tool, args, place). */
  | 'granted'
  /** A call ran under a grant, without a card (detail: work item, call, tool, grant). */
  | 'grant_used'
  /** A grant was revoked (detail: grant). */
  | 'grant_revoked'
  | CodeAuditEvent
  | ConnectionAuditEvent
  | ScheduleAuditEvent
  | BudgetAuditEvent;

/** What happened to a schedule (docs/schedules.md); detail: the schedule, a run's slot and work item. */
type ScheduleAuditEvent =
  'schedule_created' | 'schedule_run' | 'schedule_paused' | 'schedule_resumed' | 'schedule_deleted';

/**
 * Spend limits (docs/budgets.md): a warning level passed, a model call refused, an approver's
 * allowance. Detail: the budget, its period and amounts, the work item.
 */
type BudgetAuditEvent = 'budget_warned' | 'budget_refused' | 'budget_allowance';

/** What happened to a person's connection to a per-person MCP server (docs/connections.md). */
type ConnectionAuditEvent = 'connected' | 'connection_used' | 'disconnected' | 'connection_refused';

/** What happened to a change of code work (docs/code-work.md); detail: repo, branch, commit. */
type CodeAuditEvent = 'code_committed' | 'merge_requested' | 'merged' | 'merge_conflict' | 'discarded';

export async function audit(
  db: Queryable,
  entry: {
    envelopeId?: string;
    nonce?: string;
    event: AuditEvent;
    actor?: Requester;
    reason?: string;
    detail?: unknown;
  },
): Promise<void> {
  // Budgets count in their own metrics (src/budgets), not as approvals.
  if (entry.event !== 'click' && entry.event !== 'partial' && !entry.event.startsWith('budget_'))
    metrics.approvals.inc({ outcome: entry.event });
  await db.query(
    `INSERT INTO countersign.approval_audit (envelope_id, nonce_prefix, event, actor, reason, detail)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [
      entry.envelopeId ?? null,
      entry.nonce ? entry.nonce.slice(0, 6) : null,
      entry.event,
      entry.actor ? toJsonb(entry.actor) : null,
      entry.reason ?? null,
      entry.detail === undefined ? null : toJsonb(entry.detail),
    ],
  );
}

/** A vote on an answer (src/audit/feedback.ts): an audit row with no envelope, and no approvals metric. */
export async function auditFeedback(db: Queryable, actor: Requester, detail: unknown): Promise<void> {
  await db.query(`INSERT INTO countersign.approval_audit (event, actor, detail) VALUES ('feedback', $1, $2)`, [
    toJsonb(actor),
    toJsonb(detail),
  ]);
}

/**
 * Audits a rejected click within the clicker's budget of `perMinute` rows per minute of the
 * database's clock, in one statement: the budget row is claimed under its row lock, so concurrent
 * rejections cannot overshoot it. Past the budget nothing is written to the audit log; the
 * rejection is counted in the budget row instead. Returns whether the audit row was written.
 */
export async function auditRejection(
  db: Queryable,
  entry: { envelopeId?: string; nonce?: string; actor: Requester; actorKey: string; reason: string; detail?: unknown },
  perMinute: number,
): Promise<boolean> {
  metrics.approvals.inc({ outcome: 'rejected' });
  // Once a window has suppressed anything its `written` stays at the budget, so a returned row with
  // nothing suppressed is exactly the case where this rejection took one of the budget's slots.
  const { rowCount } = await db.query(
    `WITH slot AS (
       INSERT INTO countersign.approval_audit_budget AS b (actor, window_start, written, suppressed)
       VALUES ($1::text, date_trunc('minute', now()), least(1, $2::int), greatest(0, 1 - $2::int))
       ON CONFLICT (actor, window_start) DO UPDATE
         SET written = b.written + CASE WHEN b.written < $2::int THEN 1 ELSE 0 END,
             suppressed = b.suppressed + CASE WHEN b.written < $2::int THEN 0 ELSE 1 END
       RETURNING suppressed
     )
     INSERT INTO countersign.approval_audit (envelope_id, nonce_prefix, event, actor, reason, detail)
     SELECT $3::uuid, $4::text, 'rejected', $5::jsonb, $6::text, $7::jsonb FROM slot WHERE slot.suppressed = 0`,
    [
      entry.actorKey,
      perMinute,
      entry.envelopeId ?? null,
      entry.nonce ? entry.nonce.slice(0, 6) : null,
      toJsonb(entry.actor),
      entry.reason,
      entry.detail === undefined ? null : toJsonb(entry.detail),
    ],
  );
  return rowCount === 1;
}

/** What `readAuditRows` filters on; null: any. */
export interface AuditQuery {
  since: Date | null;
  until: Date | null;
  platform: string | null;
  userId: string | null;
  workspace: string | null;
  tool: string | null;
  event: string | null;
  limit: number;
}

export interface AuditRow {
  id: string;
  at: Date;
  event: string;
  envelope_id: string | null;
  actor: unknown;
  reason: string | null;
  detail: unknown;
}

/**
 * Audit rows, oldest first (`countersign audit`, src/audit/audit-log.ts). A tool matches the call a
 * row is about (`detail.tool`) or any of the calls a request listed (`detail.calls`).
 */
export async function readAuditRows(db: Queryable, q: AuditQuery): Promise<AuditRow[]> {
  const { rows } = await db.query<AuditRow>(
    `SELECT id::text, at, event, envelope_id::text, actor, reason, detail
       FROM countersign.approval_audit
      WHERE ($1::timestamptz IS NULL OR at >= $1)
        AND ($2::timestamptz IS NULL OR at < $2)
        AND ($3::text IS NULL OR (actor->>'platform' = $3 AND actor->>'userId' = $4
             AND ($5::text IS NULL OR actor->>'workspace' = $5)))
        AND ($6::text IS NULL OR detail->>'tool' = $6 OR coalesce(detail->'calls', '[]'::jsonb) ? $6)
        AND ($7::text IS NULL OR event = $7)
      ORDER BY at, id
      LIMIT $8`,
    [q.since, q.until, q.platform, q.userId, q.workspace, q.tool, q.event, q.limit],
  );
  return rows;
}

/**
 * Whether a change card (a `merge_change` call) for `branch` waits for a decision in the
 * conversation: `countersign worktrees remove` refuses to pull a worktree from under it.
 */
export async function pendingMergeCard(db: Queryable, conversationId: string, branch: string): Promise<boolean> {
  const { rows } = await db.query(
    `SELECT 1 FROM countersign.approval_envelopes e, jsonb_array_elements(e.calls::jsonb) AS c
      WHERE e.conversation_id = $1 AND e.status = 'pending' AND e.expires_at > now()
        AND c->>'name' = 'merge_change' AND c->'args'->>'branch' = $2 LIMIT 1`,
    [conversationId, branch],
  );
  return rows.length > 0;
}
