import type { Queryable } from '../../db/pool.ts';
import type { Requester } from '../../core/person.ts';

/** Reads of work items for the modules around the lifecycle: status, the wiring, schedules, sessions. */

/** One piece of a person's unfinished work, as `countersign status` lists it. */
export interface ActiveWork {
  id: string;
  type: string;
  priority: number;
  status: 'queued' | 'running' | 'awaiting_approval';
  ageSeconds: number;
  prompt: string | null;
  conversationId: string;
  /** Who asked, as `platform:user`. */
  requester: string;
}

/**
 * Running, parked and queued work, oldest first (at most `limit`): a person's, or with no person
 * everyone's (`countersign status`, for the operator).
 */
export async function activeWorkOf(db: Queryable, person: Requester | undefined, limit = 20): Promise<ActiveWork[]> {
  const { rows } = await db.query<ActiveWork>(
    `SELECT id, type, priority, status, conversation_id AS "conversationId",
            extract(epoch FROM now() - created_at)::int AS "ageSeconds",
            left(item->'input'->>'prompt', 200) AS prompt,
            (item->'requester'->>'platform') || ':' || (item->'requester'->>'userId') AS requester
       FROM countersign.work_items
      WHERE status IN ('queued', 'running', 'awaiting_approval')
        AND ($1::text IS NULL OR item->'requester'->>'platform' = $1)
        AND ($2::text IS NULL OR item->'requester'->>'userId' = $2)
        AND ($3::text IS NULL OR item->'requester'->>'workspace' IS NULL OR item->'requester'->>'workspace' = $3)
      ORDER BY created_at
      LIMIT $4`,
    [person?.platform ?? null, person?.userId ?? null, person?.workspace ?? null, limit],
  );
  return rows;
}

/** Who asked for a turn, where it answers and its status; undefined when there is no such turn. */
export async function readTurnOwner(
  db: Queryable,
  workItemId: string,
): Promise<{ requester: Requester; reply: unknown; status: string } | undefined> {
  const { rows } = await db.query<{ requester: Requester; reply: unknown; status: string }>(
    `SELECT item->'requester' AS requester, item->'reply' AS reply, status FROM countersign.work_items WHERE id = $1`,
    [workItemId],
  );
  return rows[0];
}

/** Where a turn answers, as stored (unparsed); undefined when there is no such turn. */
export async function readReplyOf(db: Queryable, workItemId: string): Promise<{ reply: unknown } | undefined> {
  const { rows } = await db.query<{ reply: unknown }>(
    `SELECT item->'reply' AS reply FROM countersign.work_items WHERE id = $1::uuid`,
    [workItemId],
  );
  return rows[0];
}

/** A platform's turns not yet at rest, oldest first, with the channel each replies in. */
export async function unfinishedTurnsOn(
  db: Queryable,
  platform: string,
): Promise<Array<{ id: string; conversation_id: string; session: string }>> {
  const { rows } = await db.query<{ id: string; conversation_id: string; session: string }>(
    `SELECT id, conversation_id, item->'reply'->>'channel' AS session
     FROM countersign.work_items
     WHERE status IN ('queued', 'running') AND item->'reply'->>'platform' = $1
     ORDER BY seq`,
    [platform],
  );
  return rows;
}

/**
 * Where a turn has got to, following its approval continuations (each carries the first item's id
 * as `approvalContextId`): the newest item's status and error; undefined when the turn is gone.
 * A scheduled run's outcome (src/schedules) is read this way.
 */
export async function readTurnProgress(
  db: Queryable,
  workItemId: string,
): Promise<{ status: string; error: string | null } | undefined> {
  const { rows } = await db.query<{ status: string; error: string | null }>(
    `SELECT status, error FROM countersign.work_items
      WHERE id = $1::uuid OR item->'input'->>'approvalContextId' = $1::text
      ORDER BY seq DESC LIMIT 1`,
    [workItemId],
  );
  return rows[0];
}
