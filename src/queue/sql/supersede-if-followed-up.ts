import type { Queryable } from '../../db/pool.ts';
import type { WorkItem } from '../../core/work-item.ts';

/**
 * The newer message that withdraws a just-parked turn's card, if one came while it was planning
 * (countersign.supersede_if_followed_up, migration 017: does what the enqueue trigger does for a
 * card that did not exist yet when the message came).
 */
export async function supersedeIfFollowedUp(
  db: Queryable,
  item: Pick<WorkItem, 'id' | 'conversationId'>,
): Promise<string | undefined> {
  const { rows } = await db.query<{ by: string | null }>('SELECT countersign.supersede_if_followed_up($1, $2) AS by', [
    item.conversationId,
    item.id,
  ]);
  return rows[0]?.by ?? undefined;
}
