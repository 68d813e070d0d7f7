import { createHash } from 'node:crypto';

/** Where files people send are saved, relative to the workspace: `inbox/<conversation>/<name>`. */
export const INBOX_DIR = 'inbox';

/**
 * A conversation's own folder under inbox/: its id's safe characters and a short hash of the whole
 * id, so two ids that differ only in unsafe characters never share a folder. The workspace tools
 * let a conversation reach only its own: a file sent in a DM is never read from another channel.
 */
export function inboxFolderOf(conversationId: string): string {
  const hash = createHash('sha256').update(conversationId).digest('hex');
  const readable = conversationId
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .replace(/^[._]+/, '')
    .slice(0, 60);
  return `${readable || 'conversation'}-${hash.slice(0, 8)}`;
}
