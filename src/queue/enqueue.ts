import { transaction, type Pool } from '../db/pool.ts';
import { appendInboundToConversation, appendToConversation } from './conversation-chain.ts';
import { newWorkItem, WorkItem, type WorkItemDraft } from './work-item.ts';

function itemOf(draft: WorkItemDraft | WorkItem): WorkItem {
  return 'id' in draft && 'createdAt' in draft && draft.id && draft.createdAt
    ? WorkItem.parse(draft)
    : newWorkItem(draft);
}

/**
 * Validates and durably enqueues a work item. When this resolves the item is committed: a crash
 * from here on loses nothing. Inbound adapters acknowledge the platform only after it resolves.
 */
export async function enqueueWorkItem(pool: Pool, draft: WorkItemDraft | WorkItem): Promise<WorkItem> {
  const item = itemOf(draft);
  await appendToConversation(pool, item);
  return item;
}

export interface InboundEnqueueOptions {
  /**
   * A platform call the item depends on (creating the thread it replies in), run after the item is
   * written and before it commits. If it throws, neither the item nor the event's mark is kept, and
   * the error is rethrown. Holds a database connection for the call's duration.
   */
  beforeCommit?: () => Promise<void>;
}

/**
 * Durably enqueues the work item of one platform event, once per `eventId` (Slack's event id,
 * Discord's message id). The event's dedupe mark and the item commit together: an enqueue that fails
 * leaves no mark, so the platform's retry is taken; a second delivery of a taken event (a retry, or
 * the same event on another ingress replica) enqueues nothing and resolves to undefined.
 */
export async function enqueueInboundWorkItem(
  pool: Pool,
  eventId: string,
  draft: WorkItemDraft,
  options: InboundEnqueueOptions = {},
): Promise<WorkItem | undefined> {
  const item = itemOf(draft);
  const { beforeCommit } = options;
  if (!beforeCommit) {
    const { duplicate } = await appendInboundToConversation(pool, eventId, item);
    return duplicate ? undefined : item;
  }
  return transaction(pool, async (client) => {
    const { duplicate } = await appendInboundToConversation(client, eventId, item);
    if (duplicate) return undefined;
    await beforeCommit();
    return item;
  });
}
