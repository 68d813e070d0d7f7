import { randomBytes } from 'node:crypto';
import { chmod, mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { ToolOutput } from '../tool.ts';
import { looksBinary, WORKSPACE_LIMITS, WorkspacePathError } from './confine.ts';

/** A file-system failure as the model should see it: what happened, never a path outside the workspace. */
export function describeFailure(error: unknown): ToolOutput {
  if (error instanceof WorkspacePathError) return { content: error.message, isError: true };
  const code = (error as NodeJS.ErrnoException).code;
  const known: Record<string, string> = {
    ENOENT: 'No such file or directory in the workspace. Use list_files to see what is there.',
    EISDIR: 'That is a directory, not a file.',
    ENOTDIR: 'A part of that path is a file, not a directory.',
    EACCES: 'The agent is not allowed to access that file.',
    EPERM: 'The agent is not allowed to change that file.',
    ENOSPC: 'The disk holding the workspace is full.',
    ELOOP: 'That path goes round in symbolic links.',
  };
  return {
    content: (code && known[code]) ?? `The workspace operation failed (${code ?? 'unknown error'}).`,
    isError: true,
  };
}

/** A text file's content, or why it can't be read (directory, too large, binary). */
export async function readText(file: string): Promise<string | ToolOutput> {
  const info = await stat(file);
  if (info.isDirectory()) return { content: 'That is a directory; use list_files to see inside it.', isError: true };
  if (info.size > WORKSPACE_LIMITS.readBytes) {
    return {
      content: `The file is ${info.size} bytes; files over ${WORKSPACE_LIMITS.readBytes} bytes are not read. Use search_files to find the part you need.`,
      isError: true,
    };
  }
  const handle = await open(file, 'r');
  try {
    const bytes = await handle.readFile();
    if (looksBinary(bytes)) {
      return { content: 'That file is binary; only text files can be read or edited.', isError: true };
    }
    return bytes.toString('utf8');
  } finally {
    await handle.close();
  }
}

/**
 * Writes through a temporary file in the same folder and a rename, so a crash or a full disk never
 * leaves half a file. Missing parent folders are created (the caller has confined the path).
 */
export async function writeAtomically(file: string, content: string): Promise<void> {
  const dir = path.dirname(file);
  await mkdir(dir, { recursive: true });
  const existing = await stat(file).catch(() => undefined);
  if (existing?.isDirectory()) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' });
  const temp = path.join(dir, `.${path.basename(file).slice(0, 200)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const handle = await open(temp, 'wx', 0o644);
    try {
      await handle.writeFile(content, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (existing) await chmod(temp, existing.mode & 0o7777);
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

export interface WalkEntry {
  absolute: string;
  kind: 'file' | 'dir' | 'link' | 'other';
}

/**
 * The entries under `dir`, breadth-first and sorted, without following symbolic links (a link is
 * listed, never entered), stopping after `limit` entries so a huge tree costs little.
 */
export async function walk(
  dir: string,
  options: { recursive: boolean; limit: number },
): Promise<{
  entries: WalkEntry[];
  complete: boolean;
}> {
  const entries: WalkEntry[] = [];
  const queue = [dir];
  while (queue.length > 0) {
    const current = queue.shift()!;
    const children = (await readdir(current, { withFileTypes: true })).sort((x, y) => x.name.localeCompare(y.name));
    for (const child of children) {
      if (entries.length >= options.limit) return { entries, complete: false };
      const absolute = path.join(current, child.name);
      const kind = child.isSymbolicLink() ? 'link' : child.isDirectory() ? 'dir' : child.isFile() ? 'file' : 'other';
      entries.push({ absolute, kind });
      if (kind === 'dir' && options.recursive) queue.push(absolute);
    }
  }
  return { entries, complete: true };
}
