import type { Queryable } from '../db/pool.ts';
import type { BudgetUnit } from '../policy/index.ts';

/**
 * The SQL of budgets (migrations 027, 031): each budget's use per period (settled, reserved,
 * allowed) and the reservations of model calls in flight, one statement per function. Periods begin and end by the database's clock in
 * the budget's time zone, so every worker counts the same day.
 */

/** A budget as its rows are keyed: the name and unit, and where its period begins. */
export interface BudgetKey {
  budget: string;
  unit: BudgetUnit;
  per: 'day' | 'month';
  tz: string;
}

/** A budget's current period as read (under its row lock when reserving). Amounts in its unit. */
export interface PeriodRow {
  budget: string;
  unit: BudgetUnit;
  periodStart: Date;
  periodEnd: Date;
  spent: number;
  allowance: number;
  /** Held by calls in flight whose lease has not run out. */
  reserved: number;
  warned: boolean;
}

interface RawPeriod {
  budget: string;
  unit: BudgetUnit;
  period_start: Date;
  period_end: Date;
  spent: string;
  allowance: string;
  reserved: string;
  warned: boolean;
}

const periodOf = (r: RawPeriod): PeriodRow => ({
  budget: r.budget,
  unit: r.unit,
  periodStart: r.period_start,
  periodEnd: r.period_end,
  spent: Number(r.spent),
  allowance: Number(r.allowance),
  reserved: Number(r.reserved),
  warned: r.warned,
});

const keyParams = (keys: BudgetKey[]) => [
  keys.map((k) => k.budget),
  keys.map((k) => k.unit),
  keys.map((k) => k.per),
  keys.map((k) => k.tz),
];

/** The budgets' current periods: `now()` is the transaction's, so every statement of one sees the same. */
const CURRENT_PERIODS = `current_periods AS (
  SELECT b.budget, b.unit,
         date_trunc(b.per, now() AT TIME ZONE b.tz) AT TIME ZONE b.tz AS period_start,
         (date_trunc(b.per, now() AT TIME ZONE b.tz) + ('1 ' || b.per)::interval) AT TIME ZONE b.tz AS period_end
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS b(budget, unit, per, tz)
)`;

/** Creates the rows of the budgets' current periods that do not exist yet. */
export async function openPeriods(db: Queryable, keys: BudgetKey[]): Promise<void> {
  await db.query(
    `WITH ${CURRENT_PERIODS}
     INSERT INTO countersign.budget_periods (budget, unit, period_start, period_end)
     SELECT budget, unit, period_start, period_end FROM current_periods
     ON CONFLICT DO NOTHING`,
    keyParams(keys),
  );
}

/**
 * Statements that change a budget commit without waiting for their WAL flush. The period row stays
 * locked until the commit, so with a synchronous commit every call of every turn would hold the
 * shared `everyone` row for a disk flush and turns would queue on it (measured in docs/budgets.md,
 * Cost, with the trade-off: a crash of Postgres itself can forget the last fraction of a second of
 * reservations and settles). `set_config(…, true)` in the statement applies to its own implicit
 * transaction: one round trip, and the pool's connections keep their setting for everything else.
 */
const COMMIT = `commit_mode AS (SELECT set_config('synchronous_commit', 'off', true))`;

/**
 * The period row's `warned_at` after adding `spend` to it: set (now) by the first change that takes
 * the period's spend past `warnAt` × (limit + allowance), so each period warns once however many
 * calls or lease writes settle. `p` is the period row being updated; the arguments are SQL expressions.
 */
const warnedAtAfter = (spend: string, warnAt: string, limit: string) => `CASE
           WHEN p.warned_at IS NULL AND ${warnAt} IS NOT NULL AND ${spend} > 0
                AND p.spent + ${spend} >= ${warnAt} * (${limit} + p.allowance) THEN now()
           ELSE p.warned_at END`;

/** A settled period as an UPDATE … RETURNING of `warnedAtAfter` gives it back. */
interface RawSettled {
  budget: string;
  unit: BudgetUnit;
  spent: string;
  allowance: string;
  period_end: Date;
  warned_now: boolean;
}

const settledOf = (r: RawSettled): SettledPeriod => ({
  budget: r.budget,
  unit: r.unit,
  spent: Number(r.spent),
  allowance: Number(r.allowance),
  periodEnd: r.period_end,
  warnedNow: r.warned_now,
});

/** A budget's warning level, as a settle or a lease write checks it (`warnedAtAfter`). */
export interface WarnLevel {
  budget: string;
  unit: BudgetUnit;
  limit: number;
  warnAt: number;
}

/** A budget's share of a call a reservation asks for: its amount, and the budget's limit. */
export interface ReservationAsk extends BudgetKey {
  amount: number;
  limit: number;
  /**
   * A process's lease (leases.ts) holds only if all the period's leases together, this one included,
   * are at most this share of what is not spent yet (`limit + allowance − spent`).
   */
  leasedShare?: number;
}

/** What a reservation found: the periods as locked (all of them, or it reserved nothing), and whether it held. */
export interface ReservationOutcome {
  held: boolean;
  /** Every budget's current period, read under its lock; fewer than asked: some period is new. */
  periods: PeriodRow[];
}

/**
 * Reserves a call in one statement: locks the budgets' current periods (in one order, so calls
 * sharing budgets never wait for each other in a circle), and only if every one exists and has room
 * for its amount (`limit + allowance − spent − reserved`), raises their `reserved` and records the
 * reservation for `leaseSeconds`. A statement that waited for a lock reads the rows as the holder
 * left them (READ COMMITTED re-reads a locked row), so concurrent calls each see the others' holds.
 */
export async function reserveCall(
  db: Queryable,
  call: {
    id: string;
    workItemId: string | undefined;
    asks: ReservationAsk[];
    leaseSeconds: number;
    /** A process's lease (leases.ts): it holds while that process lives, not for `leaseSeconds`. */
    processId?: string;
    /** Counted as spent, not given back, if it is found lost (a coding CLI's run can outlive its worker). */
    spentIfLost?: boolean;
  },
): Promise<ReservationOutcome> {
  const { asks } = call;
  const { rows } = await db.query<RawPeriod & { held: boolean }>({
    name: 'cs_budget_reserve',
    text: `WITH ${COMMIT}, ask AS (
       SELECT a.budget, a.unit, a.amount, a.limit_amount, a.leased_share,
              date_trunc(a.per, now() AT TIME ZONE a.tz) AT TIME ZONE a.tz AS period_start
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::numeric[], $6::numeric[], $10::numeric[])
         AS a(budget, unit, per, tz, amount, limit_amount, leased_share)
     ), locked AS (
       SELECT p.budget, p.unit, p.period_start, p.period_end, p.spent, p.allowance, p.reserved,
              p.warned_at IS NOT NULL AS warned
       FROM countersign.budget_periods p
       JOIN ask USING (budget, unit, period_start)
       ORDER BY p.budget, p.unit
       FOR UPDATE OF p
     ), verdict AS (
       SELECT count(*) = cardinality($1::text[])
              AND coalesce(bool_and(a.limit_amount + l.allowance - l.spent - l.reserved >= a.amount
                                    AND (a.leased_share IS NULL
                                         OR leases.amount + a.amount
                                            <= a.leased_share * (a.limit_amount + l.allowance - l.spent))), true) AS held
       FROM locked l JOIN ask a USING (budget, unit)
       -- Read only for a lease. Leases taken by statements that committed while this one waited for
       -- the lock are not seen: the share can be passed by a lease or two at once, the limit never.
       LEFT JOIN LATERAL (
         SELECT coalesce(sum(r.amount), 0) AS amount FROM countersign.budget_reservations r
         WHERE a.leased_share IS NOT NULL AND r.process_id IS NOT NULL
           AND r.budget = a.budget AND r.unit = a.unit AND r.period_start = a.period_start
       ) leases ON true
     ), raised AS (
       UPDATE countersign.budget_periods p SET reserved = p.reserved + a.amount
       FROM ask a, verdict v
       WHERE v.held AND p.budget = a.budget AND p.unit = a.unit AND p.period_start = a.period_start
     ), recorded AS (
       INSERT INTO countersign.budget_reservations
         (id, budget, unit, period_start, amount, work_item_id, expires_at, process_id, spent_if_lost)
       SELECT $7, a.budget, a.unit, a.period_start, a.amount, $8, now() + make_interval(secs => $9), $11, $12
       FROM ask a, verdict v
       WHERE v.held
     )
     SELECT l.*, v.held FROM verdict v CROSS JOIN commit_mode LEFT JOIN locked l ON true`,
    values: [
      asks.map((a) => a.budget),
      asks.map((a) => a.unit),
      asks.map((a) => a.per),
      asks.map((a) => a.tz),
      asks.map((a) => a.amount),
      asks.map((a) => a.limit),
      call.id,
      call.workItemId ?? null,
      call.leaseSeconds,
      asks.map((a) => a.leasedShare ?? null),
      call.processId ?? null,
      call.spentIfLost ?? false,
    ],
  });
  const held = rows[0]?.held ?? false;
  // The raised amounts are this call's own: the periods as they were before it reserved.
  return { held, periods: rows.filter((r) => r.budget !== null).map(periodOf) };
}

/** The budgets' current periods without locking them (operators' views); a budget not used yet has none. */
export async function readPeriods(db: Queryable, keys: BudgetKey[]): Promise<PeriodRow[]> {
  const { rows } = await db.query<RawPeriod>(
    `WITH ${CURRENT_PERIODS}
     SELECT c.budget, c.unit, c.period_start, c.period_end,
            coalesce(p.spent, 0) AS spent, coalesce(p.allowance, 0) AS allowance,
            coalesce(p.reserved, 0) AS reserved, coalesce(p.warned_at IS NOT NULL, false) AS warned
     FROM current_periods c
     LEFT JOIN countersign.budget_periods p USING (budget, unit, period_start)
     ORDER BY c.budget, c.unit`,
    keyParams(keys),
  );
  return rows.map(periodOf);
}

/**
 * Gives back the reservations `released` (a CTE of deleted reservation rows) holds on their
 * periods, locking the periods in the order a reservation takes them. Only a reservation this
 * statement deleted is given back, so a reservation released twice at once (a settle and
 * housekeeping) is given back once. A hold marked `spent_if_lost` (a coding CLI's run, which can
 * outlive its worker) is counted as spent instead (migration 034).
 */
const GIVE_BACK = `held AS (
       SELECT budget, unit, period_start, sum(amount) AS amount,
              coalesce(sum(amount) FILTER (WHERE spent_if_lost), 0) AS lost
       FROM released GROUP BY budget, unit, period_start
     ), locked AS (
       SELECT p.budget, p.unit, p.period_start FROM countersign.budget_periods p
       JOIN held USING (budget, unit, period_start)
       ORDER BY p.budget, p.unit
       FOR UPDATE OF p
     ), given_back AS (
       UPDATE countersign.budget_periods p SET reserved = p.reserved - h.amount, spent = p.spent + h.lost
       FROM held h JOIN locked USING (budget, unit, period_start)
       WHERE p.budget = h.budget AND p.unit = h.unit AND p.period_start = h.period_start
     )`;

/**
 * Gives back the reservations an earlier attempt of this work item left behind: its rounds run one
 * at a time, so a reservation still there when its next attempt starts belongs to a crashed one.
 */
export async function releaseReservationsOf(db: Queryable, workItemId: string): Promise<void> {
  await db.query(
    `WITH ${COMMIT}, released AS (
       DELETE FROM countersign.budget_reservations WHERE work_item_id = $1
       RETURNING budget, unit, period_start, amount, spent_if_lost
     ), ${GIVE_BACK}
     SELECT 1 FROM commit_mode`,
    [workItemId],
  );
}

/**
 * Gives back the reservations whose lease ran out (their worker died mid-call): housekeeping. A
 * process's lease has no time limit: it ends with its process (`spendDeadProcessLeases`).
 */
export async function releaseExpiredReservations(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ released: number }>(
    `WITH released AS (
       DELETE FROM countersign.budget_reservations WHERE expires_at <= now() AND process_id IS NULL
       RETURNING id, budget, unit, period_start, amount, spent_if_lost
     ), ${GIVE_BACK}
     SELECT count(DISTINCT id)::int AS released FROM released`,
  );
  return rows[0]?.released ?? 0;
}

/**
 * Counts as spent what the leases of processes that are gone still hold (housekeeping): calls a lease
 * covered may have settled in that process's memory and never been written, so giving the rest back
 * could let a budget be overspent; counting it all can only overcount, by at most the lease.
 */
export async function spendDeadProcessLeases(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ leases: number }>(
    `WITH ended AS (
       DELETE FROM countersign.budget_reservations r
       WHERE r.process_id IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM countersign.worker_processes w WHERE w.id = r.process_id)
       RETURNING r.id, r.budget, r.unit, r.period_start, r.amount
     ), held AS (
       SELECT budget, unit, period_start, sum(amount) AS amount FROM ended GROUP BY budget, unit, period_start
     ), locked AS (
       SELECT p.budget, p.unit, p.period_start FROM countersign.budget_periods p
       JOIN held USING (budget, unit, period_start)
       ORDER BY p.budget, p.unit
       FOR UPDATE OF p
     ), spent AS (
       UPDATE countersign.budget_periods p SET spent = p.spent + h.amount, reserved = p.reserved - h.amount
       FROM held h JOIN locked USING (budget, unit, period_start)
       WHERE p.budget = h.budget AND p.unit = h.unit AND p.period_start = h.period_start
     )
     SELECT count(DISTINCT id)::int AS leases FROM ended`,
  );
  return rows[0]?.leases ?? 0;
}

/** Each USD budget's settled dollars in its period now in progress (the metric, read at scrape). */
export async function currentSpendUsd(db: Queryable): Promise<Array<{ budget: string; usd: number }>> {
  const { rows } = await db.query<{ budget: string; spent: string }>(
    `SELECT budget, spent FROM countersign.budget_periods
     WHERE unit = 'usd' AND period_start <= now() AND period_end > now()
     ORDER BY budget`,
  );
  return rows.map((r) => ({ budget: r.budget, usd: Number(r.spent) }));
}

/** One budget's share of a reservation. */
export interface ReservationLine {
  budget: string;
  unit: BudgetUnit;
  periodStart: Date;
  amount: number;
}

/** What settling did to one budget: its spend now, and whether this settle crossed its warning level. */
export interface SettledPeriod {
  budget: string;
  unit: BudgetUnit;
  spent: number;
  allowance: number;
  periodEnd: Date;
  warnedNow: boolean;
}

/**
 * Replaces a reservation by what the call cost, in one statement: `usd` and `tokens`, in each
 * budget's unit (null: not known, and the reserved amount is spent). The spend
 * is added to the periods the call was reserved against (`lines`) whether or not the reservation
 * is still there — its lease may have run out, or a Postgres crash lost it — so every settled call
 * is counted once; what it held is given back only if this statement deleted it. Any other
 * reservation of the same work item goes too: its rounds run one at a time, so one still there is
 * a crashed attempt's (the replay's first settle gives it back). The first settle that takes a
 * budget past its warning level (`warnAt` × (limit + allowance)) marks it warned, in the same
 * statement, so each period warns once however many calls settle.
 */
export async function settleReservation(
  db: Queryable,
  settle: {
    id: string;
    workItemId: string | undefined;
    lines: ReservationLine[];
    usd: number | null;
    tokens: number | null;
    levels: WarnLevel[];
  },
): Promise<SettledPeriod[]> {
  const { levels, lines } = settle;
  const { rows } = await db.query<RawSettled & { counted: boolean }>({
    name: 'cs_budget_settle',
    text: `WITH ${COMMIT}, released AS (
       DELETE FROM countersign.budget_reservations WHERE id = $1 OR work_item_id = $12
       RETURNING id, budget, unit, period_start, amount, spent_if_lost
     ), given_back AS (
       -- Another hold of the work item is a crashed attempt's; a coding CLI's run it held is counted as spent (GIVE_BACK).
       SELECT budget, unit, period_start, sum(amount) AS amount,
              coalesce(sum(amount) FILTER (WHERE spent_if_lost AND id <> $1), 0) AS lost
       FROM released GROUP BY budget, unit, period_start
     ), levels AS (
       SELECT * FROM unnest($4::text[], $5::text[], $6::numeric[], $7::float8[]) AS l(budget, unit, limit_amount, warn_at)
     ), cost AS (
       SELECT r.budget, r.unit, r.period_start, l.limit_amount, l.warn_at,
              CASE r.unit WHEN 'usd' THEN coalesce($2::numeric, r.amount) ELSE coalesce($3::numeric, r.amount) END AS amount
       FROM unnest($8::text[], $9::text[], $10::timestamptz[], $11::numeric[]) AS r(budget, unit, period_start, amount)
       LEFT JOIN levels l USING (budget, unit)
     ), change AS (
       SELECT budget, unit, period_start, c.limit_amount, c.warn_at, c.amount IS NOT NULL AS counted,
              coalesce(c.amount, 0) + coalesce(g.lost, 0) AS spend, coalesce(g.amount, 0) AS given_back
       FROM cost c FULL JOIN given_back g USING (budget, unit, period_start)
     ), locked AS (
       SELECT p.budget, p.unit, p.period_start FROM countersign.budget_periods p
       JOIN change USING (budget, unit, period_start)
       ORDER BY p.budget, p.unit
       FOR UPDATE OF p
     )
     UPDATE countersign.budget_periods p
     SET spent = p.spent + c.spend,
         reserved = p.reserved - c.given_back,
         warned_at = ${warnedAtAfter('c.spend', 'c.warn_at', 'c.limit_amount')}
     FROM change c JOIN locked USING (budget, unit, period_start) CROSS JOIN commit_mode
     WHERE p.budget = c.budget AND p.unit = c.unit AND p.period_start = c.period_start
     RETURNING p.budget, p.unit, p.spent, p.allowance, p.period_end, c.counted,
               coalesce(p.warned_at = now(), false) AS warned_now`,
    values: [
      settle.id,
      settle.usd,
      settle.tokens,
      levels.map((l) => l.budget),
      levels.map((l) => l.unit),
      levels.map((l) => l.limit),
      levels.map((l) => l.warnAt),
      lines.map((l) => l.budget),
      lines.map((l) => l.unit),
      lines.map((l) => l.periodStart),
      lines.map((l) => l.amount),
      settle.workItemId ?? null,
    ],
  });
  return rows.filter((r) => r.counted).map(settledOf);
}

/** What a lease writes of one budget: the spend its calls settled since, and the room it no longer needs. */
export interface LeaseLine {
  budget: string;
  unit: BudgetUnit;
  periodStart: Date;
  spend: number;
  giveBack: number;
}

/**
 * Writes what the calls of a process's lease settled since its last flush, in one statement: their
 * spend moves from the lease's hold to the period's `spent`, and the hold shrinks further by
 * `giveBack` (room the lease hands back). Only while the lease row is there: a lease whose process
 * was declared dead was counted as spent whole (`spendDeadProcessLeases`), so nothing is counted twice.
 * Warns like `settleReservation`. Closing the lease gives back all it still holds and removes it.
 */
export async function flushLease(
  db: Queryable,
  flush: {
    id: string;
    lines: LeaseLine[];
    levels: WarnLevel[];
    /** The lease ends: all it holds is given back and its row goes (`giveBack` is then ignored). */
    close: boolean;
  },
): Promise<SettledPeriod[]> {
  const { lines, levels } = flush;
  const { rows } = await db.query<RawSettled>({
    name: 'cs_budget_flush_lease',
    text: `WITH ${COMMIT}, change AS (
       SELECT * FROM unnest($2::text[], $3::text[], $4::timestamptz[], $5::numeric[], $6::numeric[])
         AS c(budget, unit, period_start, spend, give_back)
     ), held AS (
       SELECT r.budget, r.unit, r.period_start, c.spend,
              CASE WHEN $11 THEN r.amount ELSE least(r.amount, c.spend + c.give_back) END AS freed
       FROM countersign.budget_reservations r JOIN change c USING (budget, unit, period_start)
       WHERE r.id = $1
       FOR UPDATE OF r
     ), shrunk AS (
       UPDATE countersign.budget_reservations r SET amount = r.amount - h.freed
       FROM held h
       WHERE NOT $11 AND r.id = $1 AND r.budget = h.budget AND r.unit = h.unit
     ), closed AS (
       DELETE FROM countersign.budget_reservations WHERE $11 AND id = $1
     ), levels AS (
       SELECT * FROM unnest($7::text[], $8::text[], $9::numeric[], $10::float8[]) AS l(budget, unit, limit_amount, warn_at)
     ), locked AS (
       SELECT p.budget, p.unit, p.period_start FROM countersign.budget_periods p
       JOIN held USING (budget, unit, period_start)
       ORDER BY p.budget, p.unit
       FOR UPDATE OF p
     )
     UPDATE countersign.budget_periods p
     SET spent = p.spent + h.spend,
         reserved = p.reserved - h.freed,
         warned_at = ${warnedAtAfter('h.spend', 'l.warn_at', 'l.limit_amount')}
     FROM held h JOIN locked USING (budget, unit, period_start) LEFT JOIN levels l USING (budget, unit)
       CROSS JOIN commit_mode
     WHERE p.budget = h.budget AND p.unit = h.unit AND p.period_start = h.period_start
     RETURNING p.budget, p.unit, p.spent, p.allowance, p.period_end,
               coalesce(p.warned_at = now(), false) AS warned_now`,
    values: [
      flush.id,
      lines.map((l) => l.budget),
      lines.map((l) => l.unit),
      lines.map((l) => l.periodStart),
      lines.map((l) => l.spend),
      lines.map((l) => l.giveBack),
      levels.map((l) => l.budget),
      levels.map((l) => l.unit),
      levels.map((l) => l.limit),
      levels.map((l) => l.warnAt),
      flush.close,
    ],
  });
  return rows.map(settledOf);
}

/** A refused turn's offer of more room, as its button's click reads it. */
export interface AllowanceOffer {
  id: string;
  budget: string;
  unit: BudgetUnit;
  periodStart: Date;
  periodEnd: Date;
  tz: string;
  amount: number;
  requester: unknown;
  reply: unknown;
  granted: boolean;
}

/** Records an offer of `amount` more for the period a call was refused in. */
export async function insertAllowanceOffer(
  db: Queryable,
  offer: {
    id: string;
    budget: string;
    unit: BudgetUnit;
    periodStart: Date;
    tz: string;
    amount: number;
    workItemId: string;
    requester: unknown;
    reply: unknown;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO countersign.budget_allowance_offers (id, budget, unit, period_start, tz, amount, work_item_id, requester, reply)
     VALUES ($1, $2, $3, $4, $9, $5, $6, $7, $8)`,
    [
      offer.id,
      offer.budget,
      offer.unit,
      offer.periodStart,
      offer.amount,
      offer.workItemId,
      JSON.stringify(offer.requester),
      JSON.stringify(offer.reply),
      offer.tz,
    ],
  );
}

/** An offer with its period, or undefined when there is none by that id. */
export async function readAllowanceOffer(db: Queryable, id: string): Promise<AllowanceOffer | undefined> {
  const { rows } = await db.query<{
    id: string;
    budget: string;
    unit: BudgetUnit;
    period_start: Date;
    period_end: Date;
    tz: string;
    amount: string;
    requester: unknown;
    reply: unknown;
    granted: boolean;
  }>(
    `SELECT o.id, o.budget, o.unit, o.period_start, p.period_end, o.tz, o.amount, o.requester, o.reply,
            o.granted_at IS NOT NULL AS granted
     FROM countersign.budget_allowance_offers o
     JOIN countersign.budget_periods p USING (budget, unit, period_start)
     WHERE o.id = $1`,
    [id],
  );
  const r = rows[0];
  return (
    r && {
      id: r.id,
      budget: r.budget,
      unit: r.unit,
      periodStart: r.period_start,
      periodEnd: r.period_end,
      tz: r.tz,
      amount: Number(r.amount),
      requester: r.requester,
      reply: r.reply,
      granted: r.granted,
    }
  );
}

/**
 * Grants an offer, once: marks it granted and raises its period's allowance in one statement, only
 * while the period lasts. False when it was granted already or its period is over.
 */
export async function grantAllowanceOffer(db: Queryable, id: string, by: unknown): Promise<boolean> {
  const { rowCount } = await db.query(
    `WITH granted AS (
       UPDATE countersign.budget_allowance_offers
       SET granted_by = $2, granted_at = now()
       WHERE id = $1 AND granted_at IS NULL
         AND EXISTS (SELECT 1 FROM countersign.budget_periods p
                     WHERE p.budget = budget_allowance_offers.budget AND p.unit = budget_allowance_offers.unit
                       AND p.period_start = budget_allowance_offers.period_start AND p.period_end > now())
       RETURNING budget, unit, period_start, amount
     )
     UPDATE countersign.budget_periods p SET allowance = p.allowance + g.amount
     FROM granted g
     WHERE p.budget = g.budget AND p.unit = g.unit AND p.period_start = g.period_start`,
    [id, JSON.stringify(by)],
  );
  return (rowCount ?? 0) > 0;
}
