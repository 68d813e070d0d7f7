import type { BudgetUnit } from '../../policy/index.ts';

/**
 * What the budget statements take (keys, asks, lines, levels) and give back (rows as Postgres
 * returns them, numerics as text). ../store.ts re-exports the ones its callers use.
 */

/** A budget as its rows are keyed: the name and unit, and where its period begins. */
export interface BudgetKey {
  budget: string;
  unit: BudgetUnit;
  per: 'day' | 'month';
  tz: string;
}

/** A period's row as the statements return it (numerics as text). */
export interface RawPeriod {
  budget: string;
  unit: BudgetUnit;
  period_start: Date;
  period_end: Date;
  spent: string;
  allowance: string;
  reserved: string;
  warned: boolean;
}

/** A settled period as an UPDATE … RETURNING of `warnedAtAfter` (./sql/fragments.ts) gives it back. */
export interface RawSettled {
  budget: string;
  unit: BudgetUnit;
  spent: string;
  allowance: string;
  period_end: Date;
  warned_now: boolean;
}

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

/** One budget's share of a reservation. */
export interface ReservationLine {
  budget: string;
  unit: BudgetUnit;
  periodStart: Date;
  amount: number;
}

/** What a lease writes of one budget: the spend its calls settled since, and the room it no longer needs. */
export interface LeaseLine {
  budget: string;
  unit: BudgetUnit;
  periodStart: Date;
  spend: number;
  giveBack: number;
}
