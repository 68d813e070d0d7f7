import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { inputBound } from '../../src/budgets/headroom.ts';
import { receiveFiles } from '../../src/files/intake.ts';
import { countPdfPages, PAGE_SCAN, pdfPages } from '../../src/files/pdf-pages.ts';
import { markerPdf, pdf } from './samples.ts';

const MB = 1024 * 1024;
const pageObjects = (n: number, from = 3) =>
  Array.from({ length: n }, (_, i) => `${i + from} 0 obj << /Type /Page /Parent 2 0 R >> endobj`).join('\n');

/** A PDF of the given bodies, each an object in order. */
const pdfOf = (...objects: string[]) =>
  Buffer.from(`%PDF-1.7\n${objects.map((o, i) => `${i + 1} 0 obj ${o}\nendobj`).join('\n')}\n%%EOF\n`, 'latin1');

const stream = (dictionary: string, data: Buffer) => `<< ${dictionary} >>\nstream\n${data.toString('latin1')}endstream`;

describe('counting a PDF’s pages does work linear in its size', () => {
  it('passes over each byte of the issue’s 2,001 stream markers once, however large the file', () => {
    for (const size of [1 * MB, 4 * MB, 20 * MB]) {
      const counted = countPdfPages(markerPdf(size));
      // The old count looked for `endstream` from each of the 2,001 markers: 2,001 × size bytes.
      expect(counted).toEqual({ pages: 0, complete: true, scannedBytes: size, inflatedBytes: 0 });
    }
  });

  it('passes over each byte once when markers and ends are stacked or cut one letter short', () => {
    const stacked = Buffer.from(`%PDF-1.7\n${'stream\n'.repeat(50_000)}${'endstream\n'.repeat(50_000)}%%EOF`, 'latin1');
    const nearMisses = Buffer.from(`%PDF-1.7\n${'stream\nendstrea'.repeat(100_000)}endstream\n%%EOF`, 'latin1');
    for (const bytes of [stacked, nearMisses]) expect(countPdfPages(bytes).scannedBytes).toBe(bytes.length);
  });

  it('inflates no more than its bound per file from object streams that each inflate to gigabytes', () => {
    const bomb = deflateSync(Buffer.alloc(64 * MB, 0x20));
    const bombs = pdfOf(...Array.from({ length: 40 }, () => stream('/Type /ObjStm /N 1 /First 0', bomb)));
    const counted = countPdfPages(bombs);
    expect(counted.inflatedBytes).toBeLessThanOrEqual(PAGE_SCAN.maxInflatedPerFile);
    expect(counted.complete).toBe(false);
    // A count cut short is no count: budgets then hold the most pages a request may carry.
    expect(pdfPages(bombs)).toBeUndefined();
  });

  it('stops inflating after its bound of streams when a file is a hundred thousand tiny ones', () => {
    const tiny = stream('/First 0', Buffer.from([0x78, 0x9c, 0x03, 0x00]));
    const counted = countPdfPages(pdfOf(...Array.from({ length: 100_000 }, () => tiny)));
    expect(counted.complete).toBe(false);
    expect(counted.inflatedBytes).toBe(0);
  });

  it('inflates only object streams: a thousand compressed images cost nothing to skip', () => {
    const image = stream('/Subtype /Image /Filter /FlateDecode', deflateSync(Buffer.alloc(256 * 1024, 7)));
    const objects = Buffer.from(pageObjects(12));
    const bytes = pdfOf(...Array.from({ length: 1000 }, () => image), stream('/Type /ObjStm', deflateSync(objects)));
    expect(countPdfPages(bytes)).toMatchObject({ pages: 12, complete: true, inflatedBytes: objects.length });
  });
});

describe('counting a PDF’s pages finds them where a reader does', () => {
  it('in an object stream marked only by /First, or by /ObjStm behind a name escape', () => {
    const objects = deflateSync(pageObjects(5));
    expect(pdfPages(pdfOf(stream('/N 5 /First 0', objects)))).toBe(5);
    expect(pdfPages(pdfOf(stream('/Type /ObjSt#6d', objects)))).toBe(5);
  });

  it('in an object stream cut short (a damaged file, or data holding the word endstream), before the cut', () => {
    const data = deflateSync(pageObjects(200));
    const pages = pdfPages(pdfOf(stream('/Type /ObjStm', data.subarray(0, data.length / 2))));
    expect(pages).toBeGreaterThan(0);
    expect(pages).toBeLessThan(200);
  });
});

describe('a received PDF’s pages', () => {
  it('are counted once, when it arrives, and a budget holds it at that count at every call', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'cs-pages-'));
    const download = async () => pdf(7);
    const intake = await receiveFiles([{ id: 'F1', name: 'seven.pdf' }], 'test:C1:1.1', download, {
      root,
      maxBytes: MB,
    });
    const [attachment] = intake.attachments;
    expect(attachment?.pages).toBe(7);
    const bound = (pages: number) =>
      inputBound({
        system: '',
        tools: [],
        messages: [{ role: 'user', text: '', attachments: [{ ...attachment!, pages }] }],
      });
    // The bytes are not read again: the count kept with the attachment is what is held.
    expect(bound(2) + 5 * 3_000).toBe(bound(7));
  });
});
