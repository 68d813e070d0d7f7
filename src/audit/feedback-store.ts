import type { Queryable } from '../db/pool.ts';
import type { Requester } from '../core/person.ts';

/** SQL of votes on answers (countersign.turn_feedback, migrations 013 and 015). One statement per function. */

export type Vote = 'up' | 'down';

/** The person as the vote is keyed: a user id means a person only within its workspace. */
const voterKey = (workItemId: string, person: Requester) =>
  [workItemId, person.platform, person.workspace ?? '', person.userId] as const;

/** Two quick clicks of one person are applied one after the other, each seeing the other's vote. */
export async function lockVoter(db: Queryable, workItemId: string, person: Requester): Promise<void> {
  await db.query(`SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))`, [
    JSON.stringify(voterKey(workItemId, person)),
  ]);
}

export async function currentVote(db: Queryable, workItemId: string, person: Requester): Promise<Vote | undefined> {
  const { rows } = await db.query<{ vote: Vote }>(
    `SELECT vote FROM countersign.turn_feedback
     WHERE work_item_id = $1::uuid AND platform = $2 AND workspace = $3 AND user_id = $4`,
    [...voterKey(workItemId, person)],
  );
  return rows[0]?.vote;
}

/** Sets the person's vote on the answer, replacing the one they had. */
export async function upsertVote(db: Queryable, workItemId: string, person: Requester, vote: Vote): Promise<void> {
  await db.query(
    `INSERT INTO countersign.turn_feedback (work_item_id, platform, workspace, user_id, vote)
     VALUES ($1::uuid, $2, $3, $4, $5)
     ON CONFLICT (work_item_id, platform, workspace, user_id) DO UPDATE SET vote = EXCLUDED.vote, voted_at = now()`,
    [...voterKey(workItemId, person), vote],
  );
}

export async function deleteVote(db: Queryable, workItemId: string, person: Requester): Promise<void> {
  await db.query(
    `DELETE FROM countersign.turn_feedback
     WHERE work_item_id = $1::uuid AND platform = $2 AND workspace = $3 AND user_id = $4`,
    [...voterKey(workItemId, person)],
  );
}
