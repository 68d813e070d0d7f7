import { transaction, type Pool, type Queryable } from '../db/pool.ts';
import type { TurnState } from '../agent/turn-state.ts';
import { saveCheckpoint } from '../agent/turn-store.ts';
import { sameAccountHere } from '../core/person.ts';
import { WorkItem, type ConversationMode } from '../core/work-item.ts';
import { anyQueuedBehind, lockQueuedBehind, markQueuedItemsTaken } from './turn-lifecycle.ts';

/**
 * Messages that arrived for a conversation while one of its turns runs (docs/conversations.md).
 * They are ordinary work items, enqueued — and acknowledged to the platform — like any message; a
 * running turn takes them over at a safe point, in the transaction that saves its checkpoint, so a
 * worker that dies before that point leaves them queued and one that dies after it has them in its
 * checkpoint: each is seen exactly once.
 */
export interface FollowUp {
  id: string;
  prompt: string;
  mode: ConversationMode;
}

/**
 * The queued messages right behind `item` in its conversation that it may take over, in the order
 * they arrived, locked until the caller's transaction ends: the same requester's plain messages
 * (not a skill run, not an approval's continuation). The run stops at the first message that is not
 * one, so nobody else's message is overtaken — and nobody else's words reach a turn that acts with
 * the requester's permissions.
 */
export async function lockFollowUps(
  db: Queryable,
  item: Pick<WorkItem, 'id' | 'conversationId' | 'requester'>,
): Promise<FollowUp[]> {
  const rows = await lockQueuedBehind(db, item);
  const out: FollowUp[] = [];
  for (const row of rows) {
    const parsed = WorkItem.safeParse(row.item);
    if (!parsed.success) break;
    const next = parsed.data;
    const takeable =
      next.type === 'CHAT' &&
      next.input.prompt !== undefined &&
      !next.input.approval &&
      !next.input.skill &&
      // Files are read when their own turn starts (src/files): a message with files waits for its turn,
      // and so does one whose files are still to be looked up (a Slack mention).
      !next.input.files?.length &&
      !next.input.filesOfMessage &&
      sameAccountHere(next.requester, item.requester);
    if (!takeable) break;
    out.push({ id: next.id, prompt: next.input.prompt!, mode: next.mode ?? 'queue' });
  }
  return out;
}

/** Marks taken-over messages done, pointing at the turn that read them. Call with their lock held. */
async function markFollowUpsTaken(db: Queryable, ids: string[], intoWorkItemId: string): Promise<void> {
  if (ids.length === 0) return;
  await markQueuedItemsTaken(db, ids, intoWorkItemId);
}

/**
 * Takes the waiting messages of `mode` over into `state` (appended as user messages, or merged into
 * the first one), in one transaction with the checkpoint that holds them. Returns how many it took;
 * `state.messages` changes only once that transaction committed.
 */
export async function takeFollowUps(
  pool: Pool,
  item: Pick<WorkItem, 'id' | 'conversationId' | 'requester'>,
  mode: ConversationMode,
  state: TurnState,
  how: 'append' | 'merge',
): Promise<number> {
  // One cheap read first, so the common case (nothing waiting) opens no transaction.
  if (!(await anyQueuedBehind(pool, item))) return 0;
  const taken = await transaction(pool, async (client) => {
    const waiting = (await lockFollowUps(client, item)).filter((f) => f.mode === mode);
    if (waiting.length === 0) return undefined;
    const messages = [...state.messages];
    const first = messages[0];
    if (how === 'merge' && first?.role === 'user') {
      messages[0] = { ...first, text: [first.text, ...waiting.map((f) => f.prompt)].join('\n') };
    } else {
      messages.push(...waiting.map((f) => ({ role: 'user' as const, text: f.prompt })));
    }
    await markFollowUpsTaken(
      client,
      waiting.map((f) => f.id),
      item.id,
    );
    await saveCheckpoint(client, item.id, { ...state, messages });
    return { messages, count: waiting.length };
  });
  if (!taken) return 0;
  state.messages.splice(0, state.messages.length, ...taken.messages);
  return taken.count;
}
