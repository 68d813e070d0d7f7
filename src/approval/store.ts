import type { Queryable } from '../db/pool.ts';
import { metrics } from '../metrics.ts';
import type { Requester } from '../agent/tools/tool.ts';
import { EnvelopeRow, type CallDecision } from './envelope.ts';

/** SQL of approval envelopes and their audit log. One statement per function. */

const SELECT_ENVELOPE = `SELECT *, expires_at <= now() AS expired_now FROM countersign.approval_envelopes`;

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
  reply: unknown;
  ttlSeconds: number;
}

export async function insertEnvelope(db: Queryable, e: NewEnvelope): Promise<{ expiresAt: Date }> {
  const { rows } = await db.query<{ expires_at: Date }>(
    `INSERT INTO countersign.approval_envelopes
       (id, nonce, kind, context_id, work_item_id, conversation_id, requester, approvers, two_person_rule,
        calls, plan_hash, scope, scope_hash, turn_state, reply, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, now() + make_interval(secs => $16))
     RETURNING expires_at`,
    [
      e.id,
      e.nonce,
      e.kind,
      e.contextId,
      e.workItemId,
      e.conversationId,
      JSON.stringify(e.requester),
      JSON.stringify(e.approvers),
      e.twoPersonRule,
      e.callsCanonical,
      e.planHash,
      JSON.stringify(e.scope),
      e.scopeHash,
      JSON.stringify(e.turnState),
      JSON.stringify(e.reply),
      e.ttlSeconds,
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

export async function setCardMessage(db: Queryable, id: string, messageId: string): Promise<void> {
  await db.query('UPDATE countersign.approval_envelopes SET card_message_id = $2 WHERE id = $1', [id, messageId]);
}

/**
 * Consumes the nonce: a conditional update that only one submission can win, and only while the
 * envelope is pending and unexpired by the database's clock.
 */
export async function consumeNonce(
  db: Queryable,
  nonce: string,
  decisions: CallDecision[],
  decidedBy: Requester,
  continuationId: string,
): Promise<EnvelopeRow | undefined> {
  const { rows } = await db.query(
    `UPDATE countersign.approval_envelopes
       SET status = 'consumed', decisions = $2, decided_by = $3, decided_at = now(), continuation_work_item = $4
     WHERE nonce = $1 AND status = 'pending' AND expires_at > now()
     RETURNING *, false AS expired_now`,
    [nonce, JSON.stringify(decisions), JSON.stringify(decidedBy), continuationId],
  );
  return rows[0] ? EnvelopeRow.parse(rows[0]) : undefined;
}

/** Records one call's decision from a single-call button, unless that call is already decided. */
export async function addPartialDecision(
  db: Queryable,
  nonce: string,
  decision: CallDecision & { by: Requester },
): Promise<EnvelopeRow | undefined> {
  const { rows } = await db.query(
    `UPDATE countersign.approval_envelopes
       SET partial_decisions = partial_decisions || jsonb_build_array($2::jsonb)
     WHERE nonce = $1 AND status = 'pending' AND expires_at > now()
       AND NOT partial_decisions @> jsonb_build_array(jsonb_build_object('toolCallId', $3::text))
     RETURNING *, false AS expired_now`,
    [nonce, JSON.stringify(decision), decision.toolCallId],
  );
  return rows[0] ? EnvelopeRow.parse(rows[0]) : undefined;
}

/** Marks every pending envelope past its expiry as expired and returns them. */
export async function expireEnvelopes(db: Queryable): Promise<EnvelopeRow[]> {
  const { rows } = await db.query(
    `UPDATE countersign.approval_envelopes SET status = 'expired'
     WHERE status = 'pending' AND expires_at <= now()
     RETURNING *, true AS expired_now`,
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
  | 'expired';

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
  if (entry.event !== 'click' && entry.event !== 'partial') metrics.approvals.inc({ outcome: entry.event });
  await db.query(
    `INSERT INTO countersign.approval_audit (envelope_id, nonce_prefix, event, actor, reason, detail)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [
      entry.envelopeId ?? null,
      entry.nonce ? entry.nonce.slice(0, 6) : null,
      entry.event,
      entry.actor ? JSON.stringify(entry.actor) : null,
      entry.reason ?? null,
      entry.detail === undefined ? null : JSON.stringify(entry.detail),
    ],
  );
}
