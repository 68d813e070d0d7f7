import type { Queryable } from '../db/pool.ts';
import type { BudgetUnit } from '../policy/index.ts';

/**
 * The SQL of budgets (migration 027): each budget's use per period and the reservations of model
 * calls in flight, one statement per function. Periods begin and end by the database's clock in
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
 * The budgets' current periods, locked until the transaction ends, in one order (budget, unit) so
 * two calls sharing budgets never wait for each other in a circle. Without `reserved`: a statement
 * that waited for the lock still reads other tables as of before the wait, so what the lock holder
 * reserved is read by the next statement (`reservedIn`), whose snapshot is taken after it.
 */
export async function lockPeriods(db: Queryable, keys: BudgetKey[]): Promise<Array<Omit<PeriodRow, 'reserved'>>> {
  const { rows } = await db.query<Omit<RawPeriod, 'reserved'>>(
    `WITH ${CURRENT_PERIODS}
     SELECT p.budget, p.unit, p.period_start, p.period_end, p.spent, p.allowance, p.warned_at IS NOT NULL AS warned
     FROM countersign.budget_periods p
     JOIN current_periods c USING (budget, unit, period_start)
     ORDER BY p.budget, p.unit
     FOR UPDATE OF p`,
    keyParams(keys),
  );
  return rows.map((r) => periodOf({ ...r, reserved: '0' }));
}

/**
 * What calls in flight hold of the budgets' current periods, per budget and unit: reservations
 * whose lease has not run out (a dead worker's stops counting when its lease does).
 */
export async function reservedIn(db: Queryable, keys: BudgetKey[]): Promise<Map<string, number>> {
  const { rows } = await db.query<{ budget: string; unit: string; reserved: string }>(
    `WITH ${CURRENT_PERIODS}
     SELECT r.budget, r.unit, sum(r.amount) AS reserved
     FROM countersign.budget_reservations r
     JOIN current_periods c USING (budget, unit, period_start)
     WHERE r.expires_at > now()
     GROUP BY r.budget, r.unit`,
    keyParams(keys),
  );
  return new Map(rows.map((r) => [`${r.budget}\u0000${r.unit}`, Number(r.reserved)]));
}

/** The budgets' current periods without locking them (operators' views); a budget not used yet has none. */
export async function readPeriods(db: Queryable, keys: BudgetKey[]): Promise<PeriodRow[]> {
  const { rows } = await db.query<RawPeriod>(
    `WITH ${CURRENT_PERIODS}
     SELECT c.budget, c.unit, c.period_start, c.period_end,
            coalesce(p.spent, 0) AS spent, coalesce(p.allowance, 0) AS allowance,
            coalesce(p.warned_at IS NOT NULL, false) AS warned,
            (SELECT coalesce(sum(r.amount), 0) FROM countersign.budget_reservations r
             WHERE r.budget = c.budget AND r.unit = c.unit AND r.period_start = c.period_start
               AND r.expires_at > now()) AS reserved
     FROM current_periods c
     LEFT JOIN countersign.budget_periods p USING (budget, unit, period_start)
     ORDER BY c.budget, c.unit`,
    keyParams(keys),
  );
  return rows.map(periodOf);
}

/**
 * Forgets the reservations an earlier attempt of this work item left behind: its rounds run one
 * at a time, so a reservation still there when the next call reserves belongs to a crashed attempt.
 */
export async function dropReservationsOf(db: Queryable, workItemId: string): Promise<void> {
  await db.query(`DELETE FROM countersign.budget_reservations WHERE work_item_id = $1`, [workItemId]);
}

/** One budget's share of a reservation. */
export interface ReservationLine {
  budget: string;
  unit: BudgetUnit;
  periodStart: Date;
  amount: number;
}

/** Holds `lines` for a call in flight until it settles or its lease (seconds) runs out. */
export async function insertReservation(
  db: Queryable,
  reservation: { id: string; workItemId: string | undefined; lines: ReservationLine[]; leaseSeconds: number },
): Promise<void> {
  const { lines } = reservation;
  await db.query(
    `INSERT INTO countersign.budget_reservations (id, budget, unit, period_start, amount, work_item_id, expires_at)
     SELECT $1, l.budget, l.unit, l.period_start, l.amount, $6, now() + make_interval(secs => $7)
     FROM unnest($2::text[], $3::text[], $4::timestamptz[], $5::numeric[]) AS l(budget, unit, period_start, amount)`,
    [
      reservation.id,
      lines.map((l) => l.budget),
      lines.map((l) => l.unit),
      lines.map((l) => l.periodStart),
      lines.map((l) => l.amount),
      reservation.workItemId ?? null,
      reservation.leaseSeconds,
    ],
  );
}

/**
 * Commits the transaction without waiting for its WAL flush. A reservation's or a settle's fsync
 * costs more than all its statements; what a Postgres crash can lose is the last fraction of a
 * second of them, and a settle counts its spend even when its reservation was lost (see
 * `settleReservation`), so such a crash can let through only the calls reserved in that moment.
 */
export async function commitWithoutWaiting(db: Queryable): Promise<void> {
  await db.query(`SET LOCAL synchronous_commit = off`);
}

/** Locks the periods a call was reserved against, in the order `lockPeriods` takes them. */
export async function lockReservedPeriods(db: Queryable, lines: ReservationLine[]): Promise<void> {
  await db.query(
    `SELECT 1 FROM countersign.budget_periods p
     JOIN unnest($1::text[], $2::text[], $3::timestamptz[]) AS l(budget, unit, period_start) USING (budget, unit, period_start)
     ORDER BY p.budget, p.unit
     FOR UPDATE OF p`,
    [lines.map((l) => l.budget), lines.map((l) => l.unit), lines.map((l) => l.periodStart)],
  );
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
 * Replaces a reservation by what the call cost: `usd` and `tokens`, in each budget's unit (`usd`
 * null: the model has no price, and the reserved amount is spent). The spend is added to the
 * periods the call was reserved against (`lines`) whether or not the reservation is still there —
 * its lease may have run out, or a Postgres crash lost it — so every settled call is counted once.
 * The first settle that takes a budget past its warning level (`warnAt` × (limit + allowance))
 * marks it warned, in the same statement, so each period warns once however many calls settle.
 */
export async function settleReservation(
  db: Queryable,
  settle: {
    id: string;
    lines: ReservationLine[];
    usd: number | null;
    tokens: number;
    levels: Array<{ budget: string; unit: BudgetUnit; limit: number; warnAt: number }>;
  },
): Promise<SettledPeriod[]> {
  const { levels, lines } = settle;
  const { rows } = await db.query<{
    budget: string;
    unit: BudgetUnit;
    spent: string;
    allowance: string;
    period_end: Date;
    warned_now: boolean;
  }>(
    `WITH released AS (
       -- Run to completion though nothing reads it (a data-modifying WITH always is).
       DELETE FROM countersign.budget_reservations WHERE id = $1
     ), levels AS (
       SELECT * FROM unnest($4::text[], $5::text[], $6::numeric[], $7::float8[]) AS l(budget, unit, limit_amount, warn_at)
     ), cost AS (
       SELECT r.budget, r.unit, r.period_start, l.limit_amount, l.warn_at,
              CASE r.unit WHEN 'usd' THEN coalesce($2::numeric, r.amount) ELSE $3::numeric END AS amount
       FROM unnest($8::text[], $9::text[], $10::timestamptz[], $11::numeric[]) AS r(budget, unit, period_start, amount)
       LEFT JOIN levels l USING (budget, unit)
     )
     UPDATE countersign.budget_periods p
     SET spent = p.spent + c.amount,
         warned_at = CASE
           WHEN p.warned_at IS NULL AND c.warn_at IS NOT NULL
                AND p.spent + c.amount >= c.warn_at * (c.limit_amount + p.allowance) THEN now()
           ELSE p.warned_at END
     FROM cost c
     WHERE p.budget = c.budget AND p.unit = c.unit AND p.period_start = c.period_start
     RETURNING p.budget, p.unit, p.spent, p.allowance, p.period_end, coalesce(p.warned_at = now(), false) AS warned_now`,
    [
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
    ],
  );
  return rows.map((r) => ({
    budget: r.budget,
    unit: r.unit,
    spent: Number(r.spent),
    allowance: Number(r.allowance),
    periodEnd: r.period_end,
    warnedNow: r.warned_now,
  }));
}

/** Gives a reservation back unspent (the call never reached the model). */
export async function releaseReservation(db: Queryable, reservationId: string): Promise<void> {
  await db.query(`DELETE FROM countersign.budget_reservations WHERE id = $1`, [reservationId]);
}

/** Reservations whose lease ran out (their worker died mid-call): housekeeping deletes them. */
export async function releaseExpiredReservations(db: Queryable): Promise<number> {
  const { rowCount } = await db.query(`DELETE FROM countersign.budget_reservations WHERE expires_at <= now()`);
  return rowCount ?? 0;
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
