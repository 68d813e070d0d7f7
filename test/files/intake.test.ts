import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { deflateSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { FILE_LIMITS, receiveFiles, type Downloader } from '../../src/files/intake.ts';
import { safeFileName } from '../../src/files/names.ts';
import { readFileTool } from '../../src/agent/tools/workspace/read-tools.ts';
import { workspaceOf } from '../../src/agent/tools/workspace/access.ts';
import type { FileRef } from '../../src/core/work-item.ts';
import sharp from 'sharp';
import { IMAGE_FIT } from '../../src/files/fit-image.ts';
import { claimedPng, CSV, encodedPng, inflatingPdf, pdf, png, windowsProgram } from './samples.ts';

const MAX = 1024 * 1024;

/** Every file of the workspace, as relative paths. */
function filesUnder(root: string): string[] {
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)));
}

/** A platform serving `served` by file id, recording what was asked for. */
function platform(served: Record<string, Buffer | Error>): Downloader & { asked: string[] } {
  const asked: string[] = [];
  const download = async (file: FileRef, { maxBytes }: { maxBytes: number }) => {
    asked.push(file.id);
    const bytes = served[file.id];
    if (!bytes) throw new Error('not found');
    if (bytes instanceof Error) throw bytes;
    return bytes.subarray(0, maxBytes + 1);
  };
  return Object.assign(download, { asked });
}

async function receive(refs: FileRef[], served: Record<string, Buffer | Error>, maxBytes = MAX) {
  const root = mkdtempSync(path.join(tmpdir(), 'cs-files-'));
  const download = platform(served);
  const intake = await receiveFiles(refs, 'test:C1:1700000000.1', download, { root, maxBytes });
  return { root, intake, asked: download.asked };
}

describe('receiving the files of a message', () => {
  it('saves a CSV into the conversation’s inbox, where read_file reads it', async () => {
    const { root, intake } = await receive([{ id: 'F1', name: 'sales.csv', size: CSV.length }], {
      F1: Buffer.from(CSV),
    });
    const [saved] = filesUnder(root);
    expect(saved).toMatch(/^inbox\/test_C1_1700000000\.1-[0-9a-f]{8}\/sales\.csv$/);
    expect(intake.note).toContain(`saved as ${saved} (text, ${CSV.length} bytes); read it with read_file`);
    expect(intake.attachments).toEqual([]);
    const read = await readFileTool(workspaceOf(root)).execute({ path: saved!, offset: 1, limit: 2000 } as never, {
      workItemId: 'w',
      conversationId: 'test:C1:1700000000.1',
      requester: { platform: 'test', userId: 'U1' },
      signal: new AbortController().signal,
      log: pino({ level: 'silent' }),
    });
    expect(JSON.stringify(read)).toContain('north,120');
  });

  it('shows a screenshot to the model as an image, read from its bytes whatever its name says', async () => {
    const { intake } = await receive([{ id: 'F1', name: 'screenshot', mimetype: 'text/plain' }], { F1: png() });
    expect(intake.attachments).toEqual([
      { kind: 'image', mediaType: 'image/png', data: png().toString('base64'), name: 'screenshot' },
    ]);
    expect(intake.note).toContain('image/png');
    expect(intake.note).toContain('shown to you as an image');
  });

  it('shows an image over the long edge resized to it, and keeps the original saved as it came', async () => {
    const wide = await encodedPng(9000, 600);
    const { root, intake } = await receive([{ id: 'F1', name: 'wide.png', size: wide.length }], { F1: wide });
    const [shown] = intake.attachments;
    const meta = await sharp(Buffer.from(shown!.data, 'base64')).metadata();
    expect([shown!.mediaType, meta.format, meta.width, meta.height]).toEqual(['image/png', 'png', 1568, 105]);
    expect(intake.note).toContain('shown to you as an image (resized from 9000×600 to 1568×105 pixels).');
    expect(readFileSync(path.join(root, filesUnder(root)[0]!))).toEqual(wide);
  });

  it('shows a photo-like PNG still over 5 MB once resized as a JPEG under it', async () => {
    const noisy = await encodedPng(2000, 1600, true);
    expect(noisy.length).toBeGreaterThan(IMAGE_FIT.maxBytes);
    const { intake } = await receive([{ id: 'F1', name: 'photo.png' }], { F1: noisy }, 20 * MAX);
    const [shown] = intake.attachments;
    const bytes = Buffer.from(shown!.data, 'base64');
    expect(shown!.mediaType).toBe('image/jpeg');
    expect(bytes.length).toBeLessThanOrEqual(IMAGE_FIT.maxBytes);
    expect((await sharp(bytes).metadata()).format).toBe('jpeg');
    expect(intake.note).toContain('resized from 2000×1600 to 1568×1254 pixels');
  });

  it('refuses to show an image claiming more pixels than can be resized, saves it and says why', async () => {
    const bomb = claimedPng(50_000, 50_000);
    const { root, intake } = await receive([{ id: 'F1', name: 'bomb.png' }], { F1: bomb });
    expect(intake.attachments).toEqual([]);
    expect(intake.note).toMatch(/"bomb\.png": saved as inbox\/\S+\/bomb\.png \(image\/png, \d+ bytes\); not shown: /);
    expect(intake.note).toContain('not shown: it is 50000×50000 pixels, too many to resize (at most 100000000).');
    expect(filesUnder(root)).toHaveLength(1);
  });

  it('gives a PDF as a document, and refuses one of a thousand pages as input while saving it', async () => {
    const { intake } = await receive(
      [
        { id: 'F1', name: 'short.pdf' },
        { id: 'F2', name: 'huge.pdf' },
      ],
      { F1: pdf(3), F2: pdf(1000) },
    );
    expect(intake.attachments.map((a) => [a.kind, a.name])).toEqual([['document', 'short.pdf']]);
    expect(intake.note).toMatch(/"huge\.pdf": saved as inbox\/.*huge\.pdf .*not shown: it has 1000 pages/);
  });

  // Page objects a reader finds but a plain `/Type /Page` search does not: in a compressed object stream
  // (PDF 1.5), or written with a name escape (`/P#61ge`); counted, so neither passes the 100-page limit.
  it('refuses a PDF of a thousand pages hidden in an object stream or behind name escapes', async () => {
    const objects = Array.from({ length: 1000 }, (_, i) => `${i + 3} 0 obj << /Type /Page /Parent 2 0 R >> endobj`);
    const stream = deflateSync(objects.join('\n')).toString('latin1');
    const hidden = Buffer.from(
      `%PDF-1.7\n2 0 obj << /Type /Pages /Count 1000 >> endobj\n1 0 obj << /Type /ObjStm /Filter /FlateDecode >>\nstream\n${stream}endstream\nendobj\n%%EOF\n`,
      'latin1',
    );
    const escaped = Buffer.from(
      pdf(1000).toString('latin1').replaceAll('/Type /Page /Parent', '/Type /P#61ge /Parent'),
      'latin1',
    );
    const { intake } = await receive(
      [
        { id: 'F1', name: 'hidden.pdf' },
        { id: 'F2', name: 'escaped.pdf' },
      ],
      { F1: hidden, F2: escaped },
    );
    expect(intake.attachments).toEqual([]);
  });

  it('gives a PDF whose text cannot be read within the bounds as a document without it, and says why', async () => {
    // 1 MB on the wire, a gigabyte once its page is decoded: pdf.js is ended at the memory budget.
    const { intake } = await receive([{ id: 'F1', name: 'bomb.pdf' }], { F1: inflatingPdf(1024) }, 2 * MAX);
    expect(intake.attachments).toMatchObject([{ kind: 'document', name: 'bomb.pdf', pages: 1 }]);
    expect(intake.attachments[0]?.text).toBeUndefined();
    expect(intake.note).toContain(
      'shown to you as a document without its text, which could not be read in the 512 MB of memory files may take.',
    );
  });

  it('refuses a .png that is a program by its magic bytes, and writes nothing', async () => {
    const { root, intake } = await receive([{ id: 'F1', name: 'cat.png' }], { F1: windowsProgram() });
    expect(intake.note).toContain(
      '"cat.png": not read — its content is a program (application/x-msdownload), not what its name says.',
    );
    expect(intake.attachments).toEqual([]);
    expect(filesUnder(root)).toEqual([]);
  });

  it('notes zero-byte, oversized, truncated and failed files, and reads the others', async () => {
    const { root, intake, asked } = await receive(
      [
        { id: 'F1', name: 'empty.txt', size: 0 },
        { id: 'F2', name: 'big.log', size: MAX + 1 },
        { id: 'F3', name: 'sneaky.log' },
        { id: 'F4', name: 'cut.png', size: png().length },
        { id: 'F5', name: 'cut-undeclared.png' },
        { id: 'F6', name: 'gone.txt' },
        { id: 'F7', name: 'fine.txt' },
      ],
      {
        F3: Buffer.alloc(MAX + 10, 'a'),
        F4: png().subarray(0, 30),
        F5: png().subarray(0, png().length - 12),
        F6: new Error('The operation was aborted due to timeout'),
        F7: Buffer.from('ok\n'),
      },
    );
    // Declared sizes are checked before anything is downloaded.
    expect(asked).toEqual(['F3', 'F4', 'F5', 'F6', 'F7']);
    expect(intake.note).toContain('"empty.txt": not read — it is empty.');
    expect(intake.note).toContain(
      `"big.log": not read — it is ${MAX + 1} bytes; the limit is ${MAX} bytes (MAX_FILE_BYTES).`,
    );
    expect(intake.note).toContain(`"sneaky.log": not read — it is over the limit of ${MAX} bytes (MAX_FILE_BYTES).`);
    expect(intake.note).toContain(`"cut.png": not read — it is truncated: 30 of its ${png().length} bytes arrived.`);
    expect(intake.note).toContain('"cut-undeclared.png": not read — the image/png image is truncated.');
    expect(intake.note).toContain(
      '"gone.txt": not read — the download failed: The operation was aborted due to timeout.',
    );
    expect(filesUnder(root).map((f) => path.basename(f))).toEqual(['fine.txt']);
  });

  it('saves files with hostile names inside inbox/ under safe names, and says so', async () => {
    const names = [
      '../../outside.txt',
      'nul\u0000byte.txt',
      'invoice\u202Etxt.exe',
      `${'a'.repeat(300)}.txt`,
      '..',
      '.bashrc',
    ];
    const refs = names.map((name, i) => ({ id: `F${i}`, name }));
    const served = Object.fromEntries(refs.map((r) => [r.id, Buffer.from(`content ${r.id}\n`)]));
    const { root, intake } = await receive(refs, served);
    const saved = filesUnder(root);
    expect(saved).toHaveLength(names.length);
    for (const file of saved) {
      expect(file.startsWith('inbox/')).toBe(true);
      const base = path.basename(file);
      // eslint-disable-next-line no-control-regex -- control characters are what must be gone
      expect(base).not.toMatch(/[\u0000-\u001f\u202a-\u202e]/);
      expect(base.startsWith('.')).toBe(false);
      expect([...base].length).toBeLessThanOrEqual(100);
    }
    expect(saved.map((f) => path.basename(f))).toEqual(
      expect.arrayContaining(['outside.txt', 'nul_byte.txt', 'invoice_txt.exe', 'bashrc']),
    );
    expect(intake.note.match(/\(name made safe\)/g)).toHaveLength(names.length);
    expect(
      readFileSync(
        path.join(
          root,
          saved.find((f) => f.endsWith('outside.txt'))!,
        ),
        'utf8',
      ),
    ).toBe('content F0\n');
  });

  it('reads at most ten files of one message and names how many it left', async () => {
    const refs = Array.from({ length: 12 }, (_, i) => ({ id: `F${i}`, name: `f${i}.txt` }));
    const served = Object.fromEntries(refs.map((r) => [r.id, Buffer.from('x\n')]));
    const { root, intake, asked } = await receive(refs, served);
    expect(asked).toHaveLength(FILE_LIMITS.filesPerMessage);
    expect(filesUnder(root)).toHaveLength(FILE_LIMITS.filesPerMessage);
    expect(intake.note).toContain('2 more file(s) not read: at most 10 per message.');
  });

  it('keeps two different files of one name apart, and the same file once', async () => {
    const refs = [
      { id: 'F1', name: 'log.txt' },
      { id: 'F2', name: 'log.txt' },
      { id: 'F3', name: 'log.txt' },
    ];
    const { root } = await receive(refs, { F1: Buffer.from('a\n'), F2: Buffer.from('b\n'), F3: Buffer.from('a\n') });
    expect(
      filesUnder(root)
        .map((f) => path.basename(f))
        .sort(),
    ).toEqual(['log-2.txt', 'log.txt']);
  });
});

describe('safe file names', () => {
  it('keeps an ordinary name as it is', () => {
    expect(safeFileName('Q3 report (final).csv')).toEqual({ name: 'Q3 report (final).csv', changed: false });
  });

  it('keeps the extension of a name it shortens', () => {
    const { name } = safeFileName(`${'b'.repeat(300)}.csv`);
    expect(name).toMatch(/^b+\.csv$/);
    expect(name.length).toBe(100);
  });
});
