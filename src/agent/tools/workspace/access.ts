import { realpath } from 'node:fs/promises';
import { z } from 'zod';
import { displayPath, resolveInWorkspace, WORKSPACE_LIMITS } from './confine.ts';

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
  const fixed = workspaceAccess(root);
  if (!rootOf) return () => fixed;
  return ({ conversationId }) => {
    const own = rootOf(conversationId);
    return own ? workspaceAccess(own) : fixed;
  };
}

function workspaceAccess(root: string): WorkspaceAccess {
  return {
    root,
    resolve: (userPath) => resolveInWorkspace(root, userPath),
    // Resolved paths are under the root's real path; show them relative to that.
    show: async (absolute) => displayPath(await realpath(root), absolute),
  };
}
