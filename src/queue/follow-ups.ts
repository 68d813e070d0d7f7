import { transaction, type Pool, type Queryable } from '../db/pool.ts';
import type { Attachment, Message } from '../agent/messages.ts';
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
  /** The message's own work item, when it brings files to read first (`FollowUpFiles`). */
  withFiles?: WorkItem;
}

/** A message's files, read (downloaded, checked, saved) as the prompt's note and the model's attachments. */
export type FollowUpFiles = (item: WorkItem) => Promise<{ note: string; attachments: Attachment[] }>;

/**
 * The queued messages right behind `item` in its conversation that it may take over, in the order
 * they arrived, locked until the caller's transaction ends: the same requester's plain messages
 * (not a skill run, a command's call or an approval's continuation). The run stops at the first message that is not
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
      // A command's call (`/schedule`) runs in its own turn: taken as text, the call would be lost.
      !next.input.call &&
      sameAccountHere(next.requester, item.requester);
    if (!takeable) break;
    const withFiles = next.input.files?.length || next.input.filesOfMessage ? { withFiles: next } : {};
    out.push({ id: next.id, prompt: next.input.prompt!, mode: next.mode ?? 'queue', ...withFiles });
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
  readFiles?: FollowUpFiles,
): Promise<number> {
  // One cheap read first, so the common case (nothing waiting) opens no transaction.
  if (!(await anyQueuedBehind(pool, item))) return 0;
  const read = await readFilesFirst(pool, item, mode, readFiles);
  const taken = await transaction(pool, async (client) => {
    const waiting = readyPrefix(
      (await lockFollowUps(client, item)).filter((f) => f.mode === mode),
      read,
    );
    if (waiting.length === 0) return undefined;
    const joining = waiting.map((f) => asMessage(f, read));
    const messages = [...state.messages];
    const first = messages[0];
    if (how === 'merge' && first?.role === 'user') {
      messages[0] = mergedInto(first, joining);
    } else {
      messages.push(...joining);
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

type Intake = Awaited<ReturnType<FollowUpFiles>>;
type UserMessage = Extract<Message, { role: 'user' }>;

/**
 * The files of the waiting messages that bring some, read before the transaction that takes them:
 * a download may take seconds, and no lock is held meanwhile. Reading is idempotent (the same bytes
 * keep their saved path), so a message read here but then not taken loses nothing.
 */
async function readFilesFirst(
  pool: Pool,
  item: Pick<WorkItem, 'id' | 'conversationId' | 'requester'>,
  mode: ConversationMode,
  readFiles: FollowUpFiles | undefined,
): Promise<Map<string, Intake>> {
  const read = new Map<string, Intake>();
  if (!readFiles) return read;
  for (const f of await lockFollowUps(pool, item)) {
    if (f.mode !== mode) continue;
    if (f.withFiles) read.set(f.id, await readFiles(f.withFiles));
  }
  return read;
}

/** The waiting messages up to the first whose files were not read: they are taken in order or not at all. */
function readyPrefix(waiting: FollowUp[], read: Map<string, Intake>): FollowUp[] {
  const unread = waiting.findIndex((f) => f.withFiles && !read.has(f.id));
  return unread < 0 ? waiting : waiting.slice(0, unread);
}

/** A taken message as the turn holds it: its text, its files' note after it, its images beside it. */
function asMessage(f: FollowUp, read: Map<string, Intake>): UserMessage {
  const intake = read.get(f.id);
  if (!intake?.note) return { role: 'user', text: f.prompt };
  const text = f.prompt ? `${f.prompt}\n\n${intake.note}` : intake.note;
  return { role: 'user', text, ...(intake.attachments.length ? { attachments: intake.attachments } : {}) };
}

/** A burst merged into the turn's first message (collect): texts line by line, attachments together. */
function mergedInto(first: UserMessage, joining: UserMessage[]): UserMessage {
  const attachments = [...(first.attachments ?? []), ...joining.flatMap((m) => m.attachments ?? [])];
  return {
    ...first,
    text: [first.text, ...joining.map((m) => m.text)].join('\n'),
    ...(attachments.length ? { attachments } : {}),
  };
}
