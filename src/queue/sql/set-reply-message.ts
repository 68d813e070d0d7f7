import type { Queryable } from '../../db/pool.ts';

/** Records the reply's first message (a placeholder the worker posted) on the stored item. */
export async function setReplyMessage(db: Queryable, workItemId: string, messageId: string): Promise<void> {
  await db.query(
    `UPDATE countersign.work_items SET item = jsonb_set(item, '{reply,messageId}', to_jsonb($2::text)) WHERE id = $1`,
    [workItemId, messageId],
  );
}
