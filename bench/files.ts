import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import { fitImage } from '../src/files/fit-image.ts';
import { parsePool } from '../src/files/parse-pool.ts';
import { round } from './stats.ts';

/**
 * FILES: what a received file costs the worker before the turn starts — an image fitted to the
 * providers' limits (fit-image.ts: decoded and scaled by libvips, off the event loop but on the
 * machine's cores), a PDF's text extracted (pdf-text.ts: pdf.js, in a parse thread, start-up included
on the first run) and a hostile PDF's pages counted (issue 47's 20 MB file of 2,001 `stream` markers,
118 s on the event loop before the count was made linear). Median of
 * `runs`. `node bench/files.ts` runs it alone. Target: each under a second on a 2-core machine, so a
 * screenshot or a report delays the first token by less than a download does.
 */

export interface FilesFigure {
  input: string;
  bytes: number;
  /** Median of the runs, milliseconds. */
  ms: number;
  outcome: string;
}

const raw = (width: number, height: number, noise: boolean) =>
  noise ? randomBytes(width * height * 3) : Buffer.alloc(width * height * 3, 0x40);

async function image(width: number, height: number, noise: boolean, format: 'png' | 'jpeg'): Promise<Buffer> {
  const img = sharp(raw(width, height, noise), { raw: { width, height, channels: 3 } });
  return (format === 'png' ? img.png() : img.jpeg({ quality: 92 })).toBuffer();
}

/** A PDF of `pages` pages of 50 lines of text each, with its cross-reference table. */
function textPdf(pages: number): Buffer {
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Count ${pages} /Kids [${Array.from({ length: pages }, (_, i) => `${4 + i * 2} 0 R`).join(' ')}] >>`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  for (let p = 0; p < pages; p++) {
    const lines = Array.from({ length: 50 }, (_, l) => `(Page ${p} line ${l}: revenue north 120 south 95) Tj T*`);
    const stream = `BT /F1 10 Tf 14 TL 40 760 Td ${lines.join(' ')} ET`;
    objects.push(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${5 + p * 2} 0 R >>`,
      `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    );
  }
  let body = '%PDF-1.4\n';
  const offsets = objects.map((object, i) => {
    const at = body.length;
    body += `${i + 1} 0 obj\n${object}\nendobj\n`;
    return at;
  });
  const xref = body.length;
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, 'latin1');
}

/** `%PDF-1.4`, 2,001 `stream` markers, padding and one `endstream`: issue 47's event-loop blocker. */
function markerPdf(size: number): Buffer {
  const head = `%PDF-1.4\n${'stream\n'.repeat(2001)}`;
  const tail = 'endstream\n%%EOF\n';
  return Buffer.from(head + ' '.repeat(size - head.length - tail.length) + tail, 'latin1');
}

async function timed(run: () => Promise<string>, runs: number): Promise<{ ms: number; outcome: string }> {
  const times: number[] = [];
  let outcome = '';
  for (let r = 0; r < runs; r++) {
    const start = performance.now();
    outcome = await run();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return { ms: round(times[Math.floor(times.length / 2)]!, 1), outcome };
}

export async function benchFiles(runs = 3): Promise<FilesFigure[]> {
  const images: Array<[string, Buffer, string]> = [
    ['screenshot 2560×1440 PNG', await image(2560, 1440, false, 'png'), 'image/png'],
    ['photo 4032×3024 JPEG', await image(4032, 3024, true, 'jpeg'), 'image/jpeg'],
    ['noisy 2000×1600 PNG (over 5 MB)', await image(2000, 1600, true, 'png'), 'image/png'],
  ];
  const figures: FilesFigure[] = [];
  for (const [input, bytes, type] of images) {
    const { ms, outcome } = await timed(async () => {
      const fitted = await fitImage(bytes, type);
      return 'refused' in fitted
        ? fitted.refused
        : `${fitted.mediaType} ${fitted.bytes.length} B ${fitted.resized?.to ?? ''}`;
    }, runs);
    figures.push({ input, bytes: bytes.length, ms, outcome });
  }
  const parsers = parsePool();
  const pdf = textPdf(100);
  const text = await timed(async () => {
    const read = await parsers.text(pdf);
    return read.ok ? `${read.value?.length ?? 0} chars` : read.why;
  }, runs);
  figures.push({ input: 'PDF of 100 text pages', bytes: pdf.length, ...text });
  const hostile = markerPdf(20 * 1024 * 1024);
  const pages = await timed(async () => {
    const counted = await parsers.pages(hostile);
    return counted.ok ? `${counted.value.pages} pages, ${counted.value.scannedBytes} B scanned` : counted.why;
  }, runs);
  figures.push({ input: 'PDF of 2,001 stream markers', bytes: hostile.length, ...pages });
  return figures;
}

if (import.meta.main) {
  for (const f of await benchFiles()) {
    process.stdout.write(
      `${f.input.padEnd(34)} ${String(f.bytes).padStart(9)} B  ${String(f.ms).padStart(8)} ms  ${f.outcome}\n`,
    );
  }
}
