import { lstatSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { isRecord, PATH_ARGS, PATH_LIST_ARGS } from '../policy/call-args.ts';
import { normaliseWorkspacePath } from '../policy/glob.ts';

/**
 * Where a call's path arguments really lead. A folder link inside the workspace (`docs/sk ->
 * ../skills`) would otherwise let a write judged as `docs/sk/x` land in `skills/x`, so the policy,
 * the card and grants judge the real location: the deepest part of the path that exists, resolved,
 * with the rest appended, relative to the workspace's real root.
 */
export interface RealPaths {
  /** The arguments with every relative path argument replaced by its real workspace path. */
  args: unknown;
  /** Each path that leads elsewhere than it reads: as asked → where it leads. */
  moved: Array<{ asked: string; real: string }>;
  /** Some path lies inside git metadata (a `.git` folder, or a folder holding HEAD, objects/ and refs/). */
  gitMetadata: boolean;
}

function exists(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** A folder git would open as a repository: HEAD beside objects/ and refs/. */
function looksLikeGitDir(dir: string): boolean {
  return exists(path.join(dir, 'HEAD')) && isDir(path.join(dir, 'objects')) && isDir(path.join(dir, 'refs'));
}

export class WorkspacePaths {
  readonly #root: string;

  constructor(root: string) {
    this.#root = root;
  }

  /** The real root, looked up each time: the folder may be created or moved after start-up. */
  #realRoot(): string {
    try {
      return realpathSync(this.#root);
    } catch {
      return path.resolve(this.#root);
    }
  }

  /**
   * `asked`'s real location relative to the workspace, or `asked` normalised when it is absolute,
   * leaves the workspace or cannot be followed (the tool refuses those paths itself).
   */
  real(asked: string, realRoot = this.#realRoot()): string {
    const normal = normaliseWorkspacePath(asked);
    if (path.isAbsolute(asked) || normal.split('/')[0] === '..' || normal === '') return normal;
    const segments = normal.split('/');
    let existing = segments.length;
    while (existing > 0 && !exists(path.join(realRoot, ...segments.slice(0, existing)))) existing--;
    let base: string;
    try {
      base = realpathSync(path.join(realRoot, ...segments.slice(0, existing)));
    } catch {
      return normal;
    }
    const relative = path.relative(realRoot, base);
    if (relative === '..' || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative)) return normal;
    return normaliseWorkspacePath([relative, ...segments.slice(existing)].filter(Boolean).join('/'));
  }

  /** Whether a workspace path lies in git metadata, judged by name and by what is on disk. */
  inGitMetadata(relative: string, realRoot = this.#realRoot()): boolean {
    const segments = relative.split('/').filter(Boolean);
    if (segments.some((s) => s.toLowerCase() === '.git')) return true;
    for (let i = segments.length - 1; i >= 0; i--) {
      if (looksLikeGitDir(path.join(realRoot, ...segments.slice(0, i)))) return true;
    }
    return false;
  }

  /** The call's arguments with their path arguments resolved (see RealPaths). */
  resolve(args: unknown): RealPaths {
    if (!isRecord(args)) return { args, moved: [], gitMetadata: false };
    const realRoot = this.#realRoot();
    const moved: RealPaths['moved'] = [];
    let gitMetadata = false;
    const one = (asked: string): string => {
      const real = this.real(asked, realRoot);
      if (real !== normaliseWorkspacePath(asked)) moved.push({ asked, real });
      if (this.inGitMetadata(real, realRoot)) gitMetadata = true;
      return real;
    };
    const out: Record<string, unknown> = { ...args };
    for (const key of PATH_ARGS) if (typeof out[key] === 'string') out[key] = one(out[key]);
    for (const key of PATH_LIST_ARGS) {
      const list = out[key];
      if (Array.isArray(list)) out[key] = list.map((item) => (typeof item === 'string' ? one(item) : item));
    }
    return { args: out, moved, gitMetadata };
  }
}

/** The card's note for paths that lead elsewhere than they read. */
export function movedPathsNote(moved: RealPaths['moved']): string | undefined {
  if (moved.length === 0) return undefined;
  return moved.map((m) => `${m.asked} is really ${m.real}`).join('; ');
}
