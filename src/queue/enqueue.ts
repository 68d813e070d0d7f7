import type { Pool } from '../db/pool.ts';
import { appendToConversation } from './conversation-chain.ts';
import { newWorkItem, WorkItem, type WorkItemDraft } from './work-item.ts';

/**
 * Validates and durably enqueues a work item. When this resolves the item is committed: a crash
 * from here on loses nothing. Inbound adapters acknowledge the platform only after it resolves.
 */
export async function enqueueWorkItem(pool: Pool, draft: WorkItemDraft | WorkItem): Promise<WorkItem> {
  const item =
    'id' in draft && 'createdAt' in draft && draft.id && draft.createdAt ? WorkItem.parse(draft) : newWorkItem(draft);
  await appendToConversation(pool, item);
  return item;
}
