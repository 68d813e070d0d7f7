import { readFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * The git folders a worktree needs to be a repository inside a sandbox: its own folder under the
 * clone's `.git/worktrees/` and the clone's `.git` (objects, refs). They are shown read-only: a
 * program reads history and diffs, but moves no ref and writes no hook or config that the bot's
 * own git would later run. None when `root` is not a linked worktree.
 */
export async function gitFoldersOf(root: string): Promise<string[]> {
  let pointer: string;
  try {
    pointer = await readFile(path.join(root, '.git'), 'utf8');
  } catch {
    return []; // no .git file: a plain folder, or a clone whose .git is inside the workspace already
  }
  const match = /^gitdir: (.+)$/m.exec(pointer);
  if (!match) return [];
  const own = path.resolve(root, match[1]!.trim());
  let common = own;
  try {
    common = path.resolve(own, (await readFile(path.join(own, 'commondir'), 'utf8')).trim());
  } catch {
    // no commondir: a submodule-style gitdir that holds everything itself
  }
  return common === own ? [own] : [common, own];
}
