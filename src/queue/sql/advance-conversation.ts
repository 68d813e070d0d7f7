import type { Queryable } from '../../db/pool.ts';
import { taskRule } from './task-rule.ts';

/**
 * Moves the conversation's head past `workItemId` (which just reached a resting state) and schedules
 * the next queued item, if any (countersign.advance_conversation, migration 006, one round trip).
 * Call inside the transaction that records the item's new status.
 */
export async function advanceConversation(db: Queryable, conversationId: string, workItemId: string): Promise<void> {
  await db.query('SELECT countersign.advance_conversation($1, $2, $3, $4, $5)', [
    conversationId,
    workItemId,
    ...taskRule(),
  ]);
}
