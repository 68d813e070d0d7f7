import { fileTypeFromBuffer } from 'file-type';
import { countPdfPages, type PageCount } from './pdf-pages.ts';
import { extractPdfText } from './pdf-text.ts';

/**
 * The parsers of received bytes, each run in a thread of parse-pool.ts (never imported by the app:
 * piscina loads it by its path). The bytes arrive as a copy, so a parser may keep or detach them.
 */

const asBuffer = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

/** The type `file-type` reads from the magic bytes, or null when it knows none. */
export async function detectType(bytes: Uint8Array): Promise<{ ext: string; mime: string } | null> {
  const detected = await fileTypeFromBuffer(bytes);
  return detected ? { ext: detected.ext, mime: detected.mime } : null;
}

export function countPages(bytes: Uint8Array): PageCount {
  return countPdfPages(asBuffer(bytes));
}

export async function readPdfText(bytes: Uint8Array): Promise<string | null> {
  return (await extractPdfText(bytes)) ?? null;
}
