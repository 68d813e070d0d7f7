import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import type { FileRef } from '../../core/work-item.ts';

/**
 * A local file's bytes, at most `maxBytes + 1` of them: a regular file only (a FIFO would block the
 * read for good), opened non-blocking and checked on the open descriptor.
 */
export async function readLocalFile(file: FileRef, { maxBytes }: { maxBytes: number }): Promise<Buffer> {
  const handle = await open(file.url ?? file.id, constants.O_RDONLY | constants.O_NONBLOCK).catch(
    (error: NodeJS.ErrnoException) => {
      throw new Error(error.code === 'ENOENT' ? 'no such file' : `it cannot be opened (${error.code ?? 'error'})`);
    },
  );
  try {
    if (!(await handle.stat()).isFile()) throw new Error('it is not a regular file');
    const buffer = Buffer.alloc(maxBytes + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    return buffer.subarray(0, length);
  } finally {
    await handle.close();
  }
}
