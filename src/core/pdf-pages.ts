import { inflateSync } from 'node:zlib';

/**
 * How many pages a PDF has, read from its bytes well enough to bound what a model call costs (a
 * page is billed as text plus an image) and to refuse a file over the pages a model reads (src/files).
 * Page objects (`/Type /Page`) are counted in the file and in its Flate-compressed streams, where
 * PDF 1.5 object streams hide them, with names' `#xx` escapes read (`/P#61ge` is `/Page`); undefined
 * when none is found (a damaged or unusual file), and the caller assumes the most pages an API accepts.
 */

/** A page object, not the page tree (`/Pages`). */
const PAGE_OBJECT = /\/Type\s*\/Page(?![A-Za-z0-9])/g;
const STREAM = /stream\r?\n/g;
/** Inflated bytes read per stream: a page object is small, and a hostile stream may inflate without end. */
const MAX_INFLATED_BYTES = 4 * 1024 * 1024;
/** Streams inflated per file, so a file of many tiny streams cannot make this slow. */
const MAX_STREAMS = 2_000;

/** A name's `#xx` escape (PDF 1.2+): a reader takes `/P#61ge` for `/Page`, so the count must too. */
const NAME_ESCAPE = /#([0-9A-Fa-f]{2})/g;

const countIn = (text: string) =>
  text.replace(NAME_ESCAPE, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))).match(PAGE_OBJECT)?.length ?? 0;

/** Page objects inside the file's Flate-compressed streams (object streams); other streams do not inflate. */
function pagesInStreams(pdf: Buffer): number {
  const text = pdf.toString('latin1');
  let pages = 0;
  let streams = 0;
  for (const match of text.matchAll(STREAM)) {
    if (++streams > MAX_STREAMS) break;
    const start = match.index + match[0].length;
    const end = text.indexOf('endstream', start);
    if (end < 0) break;
    try {
      const inflated = inflateSync(pdf.subarray(start, end), { maxOutputLength: MAX_INFLATED_BYTES });
      pages += countIn(inflated.toString('latin1'));
    } catch {
      // Not Flate (an image, a font), or cut: nothing to count in it.
    }
  }
  return pages;
}

export function pdfPages(pdf: Buffer): number | undefined {
  const pages = countIn(pdf.toString('latin1')) + pagesInStreams(pdf);
  return pages > 0 ? pages : undefined;
}
