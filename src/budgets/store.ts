import type { Queryable } from '../db/pool.ts';
import type { BudgetUnit } from '../policy/index.ts';
import { selectAllowanceOffer } from './sql/allowance-offers.ts';
import { flushLeaseRows, type LeaseFlush } from './sql/flush-lease.ts';
import { selectPeriods } from './sql/read-periods.ts';
import { reserveCallRows, type ReservationRequest } from './sql/reserve-call.ts';
import { settleReservationRows, type SettleRequest } from './sql/settle-reservation.ts';
import type { BudgetKey, RawPeriod, RawSettled } from './sql/shapes.ts';

// The statements that need no reading of their rows are the verbs themselves.
export { insertAllowanceOffer, grantAllowanceOffer } from './sql/allowance-offers.ts';
export { currentSpendUsd } from './sql/current-spend.ts';
export { spendDeadProcessLeases } from './sql/dead-process-leases.ts';
export { openPeriods } from './sql/open-periods.ts';
export { releaseExpiredReservations, releaseReservationsOf } from './sql/release-reservations.ts';
export type { BudgetKey, ReservationAsk, ReservationLine, WarnLevel } from './sql/shapes.ts';

/**
 * The budgets' store (migrations 027, 031): each budget's use per period (settled, reserved,
 * allowed) and the reservations of model calls in flight. The verbs and their types are here; the
 * statements are in ./sql/, one per function, and own the tables (src/db/table-owners.ts). Periods
 * begin and end by the database's clock in the budget's time zone, so every worker counts the same day.
 */

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

const settledOf = (r: RawSettled): SettledPeriod => ({
  budget: r.budget,
  unit: r.unit,
  spent: Number(r.spent),
  allowance: Number(r.allowance),
  periodEnd: r.period_end,
  warnedNow: r.warned_now,
});

/** What a reservation found: the periods as locked (all of them, or it reserved nothing), and whether it held. */
export interface ReservationOutcome {
  held: boolean;
  /** Every budget's current period, read under its lock; fewer than asked: some period is new. */
  periods: PeriodRow[];
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
 * Reserves a call in one statement (./sql/reserve-call.ts): every budget's share is held, or none
 * is. The periods come back as they were before this call reserved.
 */
export async function reserveCall(db: Queryable, call: ReservationRequest): Promise<ReservationOutcome> {
  const rows = await reserveCallRows(db, call);
  const held = rows[0]?.held ?? false;
  // The raised amounts are this call's own: the periods as they were before it reserved.
  return { held, periods: rows.filter((r) => r.budget !== null).map(periodOf) };
}

/** The budgets' current periods without locking them (operators' views); a budget not used yet has none. */
export async function readPeriods(db: Queryable, keys: BudgetKey[]): Promise<PeriodRow[]> {
  return (await selectPeriods(db, keys)).map(periodOf);
}

/**
 * Replaces a reservation by what the call cost, in one statement (./sql/settle-reservation.ts): the
 * periods the call counted against, each with whether this settle crossed its warning level.
 */
export async function settleReservation(db: Queryable, settle: SettleRequest): Promise<SettledPeriod[]> {
  const rows = await settleReservationRows(db, settle);
  return rows.filter((r) => r.counted).map(settledOf);
}

/**
 * Writes what the calls of a process's lease settled since its last flush, in one statement
 * (./sql/flush-lease.ts); closing the lease gives back all it still holds and removes it.
 */
export async function flushLease(db: Queryable, flush: LeaseFlush): Promise<SettledPeriod[]> {
  return (await flushLeaseRows(db, flush)).map(settledOf);
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

/** An offer with its period, or undefined when there is none by that id. */
export async function readAllowanceOffer(db: Queryable, id: string): Promise<AllowanceOffer | undefined> {
  const r = await selectAllowanceOffer(db, id);
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
