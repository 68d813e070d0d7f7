import { z } from 'zod';
import type { Queryable } from '../db/pool.ts';
import { readAuditRows, type AuditEvent } from '../approval/store.ts';

/**
 * Every event the audit log holds: each one Countersign writes (`AuditEvent`, src/approval/store.ts)
 * and the two the database's own triggers write (migrations 012, 013). The compiler holds the list
 * to that type, and test/cli/cli-conventions.test.ts to the table's CHECK constraint, so `--outcome`
 * never refuses an event the log can hold.
 */
export const AUDIT_EVENTS = [
  'requested',
  'click',
  'rejected',
  'partial',
  'consumed',
  'executed',
  'denied',
  'answered',
  'refused',
  'expired',
  'allowed',
  'policy_denied',
  'granted',
  'grant_used',
  'grant_revoked',
  'superseded',
  'feedback',
  'code_committed',
  'merge_requested',
  'merged',
  'merge_conflict',
  'discarded',
  'connected',
  'connection_used',
  'disconnected',
  'connection_refused',
  'schedule_created',
  'schedule_run',
  'schedule_paused',
  'schedule_resumed',
  'schedule_deleted',
  'budget_warned',
  'budget_refused',
  'budget_allowance',
] as const satisfies ReadonlyArray<AuditEvent | 'superseded' | 'feedback'>;

/** An event Countersign writes that the list above lacks: a type error below names it. */
type UnlistedEvent = Exclude<AuditEvent, (typeof AUDIT_EVENTS)[number]>;
const everyEventListed: [UnlistedEvent] extends [never] ? true : UnlistedEvent = true;
void everyEventListed;

/** `7d`, `12h`, `30m`, or an ISO date: the start of a window, relative to `now`. */
function parseSince(text: string, now: Date): Date | undefined {
  const relative = /^(\d{1,6})([dhm])$/.exec(text);
  if (relative) {
    const unit = { d: 86_400_000, h: 3_600_000, m: 60_000 }[relative[2] as 'd' | 'h' | 'm'];
    return new Date(now.getTime() - Number(relative[1]) * unit);
  }
  const date = new Date(text);
  return /^\d{4}-\d{2}-\d{2}/.test(text) && !Number.isNaN(date.getTime()) ? date : undefined;
}

const point = (what: string) =>
  z.string().transform((text, ctx) => {
    const date = parseSince(text, new Date());
    if (!date) {
      ctx.addIssue({ code: 'custom', message: `${what} must be an ISO date (2026-11-23T10:00Z) or 7d, 12h, 30m` });
      return z.NEVER;
    }
    return date;
  });

/** What `countersign audit` filters by; every field optional. */
export const AuditFilter = z.strictObject({
  since: point('--since').optional(),
  until: point('--until').optional(),
  /** `platform:user` or `platform:workspace:user`. */
  person: z
    .string()
    .regex(/^[a-z][a-z0-9-]*(:[^\s:]+){1,2}$/, '--person must be platform:user or platform:workspace:user')
    .optional(),
  tool: z.string().min(1).optional(),
  outcome: z.enum(AUDIT_EVENTS, { error: `--outcome must be one of ${AUDIT_EVENTS.join(', ')}` }).optional(),
  limit: z.coerce.number().int().min(1).max(1_000_000).default(100_000),
});
export type AuditFilter = z.output<typeof AuditFilter>;

export interface AuditEntry {
  id: string;
  at: string;
  event: string;
  envelopeId: string | null;
  actor: unknown;
  reason: string | null;
  detail: unknown;
}

/**
 * The audit log, oldest first, filtered. A tool matches the call an entry is about (`detail.tool`)
 * or any of the calls a request listed (`detail.calls`); a person matches the entry's actor.
 */
export async function readAuditLog(db: Queryable, filter: AuditFilter): Promise<AuditEntry[]> {
  const [platform, a, b] = filter.person?.split(':') ?? [];
  const user = b ?? a;
  const workspace = b === undefined ? null : a;
  const rows = await readAuditRows(db, {
    since: filter.since ?? null,
    until: filter.until ?? null,
    platform: platform ?? null,
    userId: user ?? null,
    workspace: workspace ?? null,
    tool: filter.tool ?? null,
    event: filter.outcome ?? null,
    limit: filter.limit,
  });
  return rows.map((r) => ({
    id: r.id,
    at: r.at.toISOString(),
    event: r.event,
    envelopeId: r.envelope_id,
    actor: r.actor,
    reason: r.reason,
    detail: r.detail,
  }));
}
