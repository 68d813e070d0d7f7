import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';

export const WORKSPACE_LIMITS = {
  pathChars: 1024,
  segmentChars: 255,
  readBytes: 1024 * 1024,
  writeBytes: 1024 * 1024,
  listEntries: 500,
  searchMatches: 200,
  /** Folder entries a search looks at, so one call can't walk a huge tree. */
  searchFiles: 5000,
  sniffBytes: 8192,
} as const;

export class WorkspacePathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WorkspacePathError';
  }
}

/**
 * Resolves a path the model gave against the workspace root, refusing anything that could reach
 * outside it: absolute paths, `..`, percent-encoded traversal, NUL bytes, over-long paths, and
 * symlinks (the real path of the deepest existing ancestor must be inside the real root — so a
 * file that doesn't exist yet can't be created through a link either). Errors never name a path
 * outside the workspace. The returned path is under the root's real path.
 *
 * A link swapped in between this check and the use of the path is not caught; only a process
 * inside the workspace could do that, and one that can (run_command) can read files anyway.
 */
export async function resolveInWorkspace(root: string, userPath: string): Promise<string> {
  if (userPath.includes('\0')) throw new WorkspacePathError('Paths may not contain NUL bytes.');
  if (userPath.length > WORKSPACE_LIMITS.pathChars) {
    throw new WorkspacePathError(`Paths are limited to ${WORKSPACE_LIMITS.pathChars} characters.`);
  }
  if (/%(2e|2f|5c|25|00)/i.test(userPath)) {
    throw new WorkspacePathError('Percent-encoded path characters are not accepted; use plain relative paths.');
  }
  const normalized = userPath.replaceAll('\\', '/');
  if (path.isAbsolute(normalized) || /^[a-zA-Z]:/.test(normalized) || normalized.startsWith('~')) {
    throw new WorkspacePathError('Use a path relative to the workspace, not an absolute one.');
  }
  const segments = normalized.split('/').filter((s) => s && s !== '.');
  if (segments.some((s) => s === '..')) throw new WorkspacePathError('Paths may not contain "..".');
  if (segments.some((s) => s.length > WORKSPACE_LIMITS.segmentChars)) {
    throw new WorkspacePathError(`Each path segment is limited to ${WORKSPACE_LIMITS.segmentChars} characters.`);
  }
  const realRoot = await realpath(root);
  const target = path.join(realRoot, ...segments);
  // Walk up to the deepest part of the path that exists and check where it really is.
  let existing = target;
  for (;;) {
    try {
      await lstat(existing);
      break;
    } catch {
      const parent = path.dirname(existing);
      if (parent === existing) break;
      existing = parent;
    }
  }
  let real: string;
  try {
    real = await realpath(existing);
  } catch {
    // lstat found it but it can't be followed: a dangling or looping symbolic link, which could
    // point anywhere once its target appears.
    throw new WorkspacePathError('That path is a broken symbolic link and is refused.');
  }
  if (!isInside(realRoot, real)) {
    throw new WorkspacePathError('That path leads outside the workspace (through a symbolic link) and is refused.');
  }
  return target;
}

function isInside(root: string, candidate: string): boolean {
  return candidate === root || candidate.startsWith(root.endsWith(path.sep) ? root : root + path.sep);
}

/** The path as the model should see it: relative to the workspace, with forward slashes. */
export function displayPath(root: string, absolute: string): string {
  return path.relative(root, absolute).split(path.sep).join('/') || '.';
}

/** Text files only: NUL bytes or invalid UTF-8 in the first bytes mean binary. */
export function looksBinary(bytes: Uint8Array): boolean {
  const head = bytes.subarray(0, WORKSPACE_LIMITS.sniffBytes);
  if (head.includes(0)) return true;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(head.length < bytes.length ? trimPartialChar(head) : head);
    return false;
  } catch {
    return true;
  }
}

/** Drops a UTF-8 sequence cut at the end of a sniffed prefix. */
function trimPartialChar(bytes: Uint8Array): Uint8Array {
  let end = bytes.length;
  let back = 0;
  while (end > 0 && back < 4 && ((bytes[end - 1] ?? 0) & 0xc0) === 0x80) {
    end -= 1;
    back += 1;
  }
  if (end > 0 && (bytes[end - 1] ?? 0) >= 0xc0) end -= 1;
  return bytes.subarray(0, end);
}
