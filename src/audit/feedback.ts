import { transaction, type Pool, type Queryable } from '../db/pool.ts';
import type { Requester } from '../core/person.ts';
import { metrics } from '../metrics.ts';

export type FeedbackResult = { ok: true } | { ok: false; reason: string };

/**
 * Records a person's vote on a turn's final answer (one per person and turn; voting again changes
 * it), with an audit row that `countersign audit --outcome feedback` exports. The buttons appear
 * with the final text, a moment before the turn is recorded done, so any turn on record can be voted on.
 */
export async function recordFeedback(
  pool: Pool,
  workItemId: string,
  person: Requester,
  vote: 'up' | 'down',
): Promise<FeedbackResult> {
  const recorded = await transaction(pool, async (client) => {
    const { rowCount } = await client.query(`SELECT 1 FROM countersign.work_items WHERE id = $1`, [workItemId]);
    if (!rowCount) return false;
    await upsertVote(client, workItemId, person, vote);
    await client.query(`INSERT INTO countersign.approval_audit (event, actor, detail) VALUES ('feedback', $1, $2)`, [
      JSON.stringify(person),
      JSON.stringify({ workItemId, vote }),
    ]);
    return true;
  });
  if (!recorded) return { ok: false, reason: 'That answer is no longer on record.' };
  metrics.feedback.inc({ platform: person.platform, vote });
  return { ok: true };
}

async function upsertVote(db: Queryable, workItemId: string, person: Requester, vote: string): Promise<void> {
  await db.query(
    `INSERT INTO countersign.turn_feedback (work_item_id, platform, user_id, vote) VALUES ($1, $2, $3, $4)
     ON CONFLICT (work_item_id, platform, user_id) DO UPDATE SET vote = EXCLUDED.vote, voted_at = now()`,
    [workItemId, person.platform, person.userId, vote],
  );
}
