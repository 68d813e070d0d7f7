import type { Queryable } from '../../db/pool.ts';
import type { Requester } from '../../core/person.ts';
import { toJsonb } from '../../core/storable-text.ts';

/** Records a stop request on a queued or running turn and notifies `channel`; false when there was none to stop. */
export async function markStopRequested(
  db: Queryable,
  workItemId: string,
  by: Requester,
  channel: string,
): Promise<boolean> {
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

/** Who asked to stop a turn, if anyone did (named: read between every round). */
export async function readStopRequest(db: Queryable, workItemId: string): Promise<Requester | undefined> {
  const { rows } = await db.query<{ stopped_by: Requester | null }>({
    name: 'cs_stop_request_of',
    text: 'SELECT stopped_by FROM countersign.work_items WHERE id = $1 AND stop_requested_at IS NOT NULL',
    values: [workItemId],
  });
  return rows[0]?.stopped_by ?? undefined;
}
