import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { INBOX_DIR, inboxFolderOf } from '../../../core/inbox.ts';
import { z } from 'zod';
import { displayPath, resolveInWorkspace, WORKSPACE_LIMITS, WorkspacePathError } from './confine.ts';

export const PathArg = z
  .string()
  .min(1)
  .max(WORKSPACE_LIMITS.pathChars)
  .describe('Path relative to the workspace root');

/** The workspace as each tool reaches it: paths the model gives go in, paths it can read come out. */
export interface WorkspaceAccess {
  root: string;
  /** A path the model gave, as a file-system path confined to the workspace (confine.ts). */
  resolve(userPath: string): Promise<string>;
  /** A resolved path as the model and the card see it. */
  show(absolute: string): Promise<string>;
  /** Whether a resolved path lies in another conversation's inbox: never listed, searched or read here. */
  hides(absolute: string): Promise<boolean>;
}

/** The workspace a call works in, by its conversation (see `WorkspaceRoots`). */
export type WorkspaceOf = (ctx: { conversationId: string }) => WorkspaceAccess;

/**
 * Where a conversation's tools work: the deployment's workspace, or a folder of the conversation's
 * own (a repository's worktree, src/repos). Asked on every call, so a conversation that starts
 * working on a repository mid-turn works there from its next call.
 */
export type WorkspaceRoots = (conversationId: string) => string | undefined;

/** The workspace of each call: its conversation's own root when `rootOf` names one, else `root`. */
export function workspaceOf(root: string, rootOf?: WorkspaceRoots): WorkspaceOf {
  return ({ conversationId }) => workspaceAccess(rootOf?.(conversationId) ?? root, conversationId);
}

function workspaceAccess(root: string, conversationId: string): WorkspaceAccess {
  const own = inboxFolderOf(conversationId);
  // Files people send are saved in the shared workspace, one folder per conversation: another
  // conversation's folder holds what someone sent privately, so it is out of reach here.
  const inOtherInbox = (realRoot: string, absolute: string) => {
    const [top, folder] = path.relative(realRoot, absolute).split(path.sep);
    return top === INBOX_DIR && folder !== undefined && folder !== own;
  };
  // By the path as named and by where it really leads: a program can plant `peek -> inbox/<other>`
  // anywhere in the workspace (its sandbox hides the folder, but a link is only a path).
  const hides = async (absolute: string) => {
    const realRoot = await realpath(root);
    return inOtherInbox(realRoot, absolute) || inOtherInbox(realRoot, await whereItLeads(absolute));
  };
  return {
    root,
    resolve: async (userPath) => {
      const resolved = await resolveInWorkspace(root, userPath);
      if (await hides(resolved))
        throw new WorkspacePathError(
          `${userPath} is in another conversation's inbox (files people sent there); this conversation reaches only ${INBOX_DIR}/${own}`,
        );
      return resolved;
    },
    // Resolved paths are under the root's real path; show them relative to that.
    show: async (absolute) => displayPath(await realpath(root), absolute),
    hides,
  };
}

/** The real path of `absolute`: its deepest part that exists, links followed, and the rest as named. */
async function whereItLeads(absolute: string): Promise<string> {
  const rest: string[] = [];
  let existing = absolute;
  for (;;) {
    try {
      return path.join(await realpath(existing), ...rest.reverse());
    } catch {
      const parent = path.dirname(existing);
      if (parent === existing) return absolute;
      rest.push(path.basename(existing));
      existing = parent;
    }
  }
}
