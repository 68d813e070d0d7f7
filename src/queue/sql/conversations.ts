import type { Queryable } from '../../db/pool.ts';

/** Whether a conversation exists (a thread is one once a turn was enqueued in it). */
export async function conversationExists(db: Queryable, conversationId: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM countersign.conversations WHERE id = $1', [conversationId]);
  return Boolean(rowCount);
}

/** The work item a conversation is running now, if any. */
export async function activeWorkItemOf(db: Queryable, conversationId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ active_work_item: string | null }>(
    'SELECT active_work_item FROM countersign.conversations WHERE id = $1',
    [conversationId],
  );
  return rows[0]?.active_work_item ?? undefined;
}
