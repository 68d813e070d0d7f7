import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { realPath } from './bwrap-arguments.ts';

/**
 * The git folders a worktree needs to be a repository inside a sandbox: its own folder under the
 * clone's `.git/worktrees/` and the clone's `.git` (objects, refs). They are shown read-only: a
 * program reads history and diffs, but moves no ref and writes no hook or config that the bot's
 * own git would later run. None when `root` is not a linked worktree.
 *
 * The `.git` file lies in the writable worktree, so a program could point it anywhere (`gitdir:
 * /root/.ssh`) for the next run to mount. It is believed only when git's back-link agrees: the
 * named folder sits in a `worktrees/` folder of its common git folder, and its `gitdir` file — which
 * lives there, out of the program's reach — names this worktree's `.git`.
 */
export async function gitFoldersOf(root: string): Promise<string[]> {
  const read = (file: string) =>
    readFile(file, 'utf8').then(
      (text) => text.trim(),
      () => undefined,
    );
  const pointer = await read(path.join(root, '.git'));
  const named = pointer && /^gitdir: (.+)$/m.exec(pointer)?.[1]?.trim();
  if (!named) return []; // no .git file: a plain folder, or a clone whose .git lies inside the root
  const own = realPath(path.resolve(root, named));
  const commondir = await read(path.join(own, 'commondir'));
  if (!commondir) return [];
  const common = realPath(path.resolve(own, commondir));
  const backLink = await read(path.join(own, 'gitdir'));
  const belongs =
    path.dirname(own) === path.join(common, 'worktrees') &&
    backLink !== undefined &&
    realPath(path.resolve(own, backLink)) === realPath(path.join(root, '.git'));
  return belongs ? [common, own] : [];
}
