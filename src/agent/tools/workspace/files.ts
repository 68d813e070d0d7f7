import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { chmod, mkdir, open, readdir, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { ToolOutput } from '../tool.ts';
import { looksBinary, WORKSPACE_LIMITS, WorkspacePathError } from './confine.ts';

/**
 * A path that is not a regular file (or not a folder, where a folder is asked for). Named pipes,
 * sockets and device files are refused by every workspace tool: reading a FIFO with no writer, or a
 * device that never ends, blocks one of libuv's four pool threads for good, and four such calls
 * stall every file and DNS operation of the worker.
 */
export class NotRegularFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotRegularFileError';
  }
}

/** What kind of file-system object `info` describes, in words. */
function kindOf(info: Stats): string {
  if (info.isFIFO()) return 'a named pipe (FIFO)';
  if (info.isSocket()) return 'a socket';
  if (info.isCharacterDevice() || info.isBlockDevice()) return 'a device file';
  if (info.isDirectory()) return 'a folder';
  if (info.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

const REGULAR_FILES_ONLY = 'workspace tools only read and change regular files and folders';

/** Refuses anything but a regular file: the message says what it is instead. */
export function requireRegularFile(info: Stats): void {
  if (info.isFile()) return;
  if (info.isDirectory()) throw new NotRegularFileError('That is a directory; use list_files to see inside it.');
  throw new NotRegularFileError(`That is ${kindOf(info)}, not a regular file; ${REGULAR_FILES_ONLY}.`);
}

/**
 * Checks that a path the model gave as a folder is one (stat follows a link the caller has confined;
 * it never opens the target, so a FIFO can't block it). A regular file keeps the usual ENOTDIR text.
 */
export async function requireFolder(dir: string): Promise<void> {
  const info = await stat(dir);
  if (info.isDirectory()) return;
  if (info.isFile()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
  throw new NotRegularFileError(`That is ${kindOf(info)}, not a folder; ${REGULAR_FILES_ONLY}.`);
}

/**
 * Opens a regular file for reading, race-free: opened non-blocking (a FIFO opens at once instead of
 * waiting for a writer; a socket fails with ENXIO), then fstat on the open descriptor decides, so a
 * file swapped between a check and the open can't slip through. O_NONBLOCK changes nothing for
 * reads of regular files.
 */
export async function openRegularFile(file: string): Promise<{ handle: FileHandle; info: Stats }> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENXIO')
      throw new NotRegularFileError(`That is a socket, not a regular file; ${REGULAR_FILES_ONLY}.`);
    throw error;
  });
  try {
    const info = await handle.stat();
    requireRegularFile(info);
    return { handle, info };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** A file-system failure as the model should see it: what happened, never a path outside the workspace. */
export function describeFailure(error: unknown): ToolOutput {
  if (error instanceof WorkspacePathError || error instanceof NotRegularFileError) {
    return { content: error.message, isError: true };
  }
  const code = (error as NodeJS.ErrnoException).code;
  const known: Record<string, string> = {
    ENOENT: 'No such file or directory in the workspace. Use list_files to see what is there.',
    EISDIR: 'That is a directory, not a file.',
    ENOTDIR: 'A part of that path is a file, not a directory.',
    EACCES: 'The agent is not allowed to access that file.',
    EPERM: 'The agent is not allowed to change that file.',
    ENOSPC: 'The disk holding the workspace is full.',
    ELOOP: 'That path goes round in symbolic links.',
    ENXIO: `That is a socket or device, not a regular file; ${REGULAR_FILES_ONLY}.`,
  };
  return {
    content: (code && known[code]) ?? `The workspace operation failed (${code ?? 'unknown error'}).`,
    isError: true,
  };
}

/** A text file's content, or why it can't be read (not a regular file, too large, binary). */
export async function readText(file: string): Promise<string | ToolOutput> {
  let opened: { handle: FileHandle; info: Stats };
  try {
    opened = await openRegularFile(file);
  } catch (error) {
    if (error instanceof NotRegularFileError) return describeFailure(error);
    throw error;
  }
  const { handle, info } = opened;
  try {
    if (info.size > WORKSPACE_LIMITS.readBytes) {
      return {
        content: `The file is ${info.size} bytes; files over ${WORKSPACE_LIMITS.readBytes} bytes are not read. Use search_files to find the part you need.`,
        isError: true,
      };
    }
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
  if (existing) requireRegularFile(existing);
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
  options: { recursive: boolean; limit: number; skip?: (absolute: string) => Promise<boolean> },
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
      if (await options.skip?.(absolute)) continue;
      const kind = child.isSymbolicLink() ? 'link' : child.isDirectory() ? 'dir' : child.isFile() ? 'file' : 'other';
      entries.push({ absolute, kind });
      if (kind === 'dir' && options.recursive) queue.push(absolute);
    }
  }
  return { entries, complete: true };
}
