import type { Queryable } from '../../db/pool.ts';
import { COMMIT, GIVE_BACK } from './fragments.ts';

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
