import { lstat, mkdir, open, readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { displayPath, resolveInWorkspace } from '../agent/tools/workspace/confine.ts';
import { INBOX_DIR, inboxFolderOf } from '../core/inbox.ts';

/** Other names tried when a different file already has this one (`report-2.csv`, …). */
const OTHER_NAMES = 50;

/**
 * Saves a received file as `inbox/<conversation>/<name>` and returns its workspace path. The path
 * goes through the workspace's confinement (no link leads out), the file is created exclusively
 * (never through a link, never over another file): the same bytes saved again (a turn retried after
 * a crash) keep their path, other bytes under a taken name get `-2`, `-3`, ….
 */
export async function saveToInbox(root: string, conversationId: string, name: string, bytes: Buffer): Promise<string> {
  const folder = `${INBOX_DIR}/${inboxFolderOf(conversationId)}`;
  await ownInboxFolder(root, folder);
  const ext = path.extname(name);
  const stem = name.slice(0, name.length - ext.length);
  for (let i = 1; i <= OTHER_NAMES; i++) {
    const file = await resolveInWorkspace(root, `${folder}/${i === 1 ? name : `${stem}-${i}${ext}`}`);
    if (await createdOrSame(file, bytes)) return displayPath(await realpath(root), file);
  }
  throw new Error(`${OTHER_NAMES} files named ${name} were already received in this conversation`);
}

async function createdOrSame(file: string, bytes: Buffer): Promise<boolean> {
  try {
    const handle = await open(file, 'wx', 0o644);
    try {
      await handle.writeFile(bytes);
    } finally {
      await handle.close();
    }
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const existing = await readFile(file).catch(() => undefined);
    return existing !== undefined && existing.equals(bytes);
  }
}

/**
 * Makes `inbox/<conversation>` as real folders, one level at a time, and refuses a link (or a file)
 * in their place: a program could plant `inbox -> public` in a workspace nobody has sent a file to
 * yet, and every file sent later, in any conversation, would be saved where all of them read it.
 */
async function ownInboxFolder(root: string, folder: string): Promise<void> {
  const realRoot = await realpath(root);
  let dir = realRoot;
  for (const part of folder.split('/')) {
    dir = path.join(dir, part);
    await mkdir(dir).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
    if (!(await lstat(dir)).isDirectory())
      throw new Error(
        `${displayPath(realRoot, dir)} is a link or a file, not a folder, so received files are not saved through it: remove it, then send the file again.`,
      );
  }
}
