import { constants, inflateSync } from 'node:zlib';

/**
 * How many pages a PDF has, read from its bytes well enough to bound what a model call costs (a
 * page is billed as text plus an image) and to refuse a file over the pages a model reads (intake.ts).
 * Page objects (`/Type /Page`) are counted in the file and in its Flate-compressed streams, where
 * PDF 1.5 object streams hide them, with names' `#xx` escapes read (`/P#61ge` is `/Page`).
 *
 * The bytes are a stranger's, so the work is linear in their size: one pass finds each stream and
 * its `endstream`, and the next stream is looked for after it (streams do not nest), so no byte is
 * scanned twice however the markers are arranged. Inflating is bounded in count and in output
 * (PAGE_SCAN); a file that reaches a bound is counted as far as the bound, and says so (`complete`).
 */

/** A page object, not the page tree (`/Pages`). */
const PAGE_OBJECT = /\/Type\s*\/Page(?![A-Za-z0-9])/g;
/** The `stream` keyword and its end of line (pdf.js takes CR, LF or CRLF); never the end of `endstream`. */
const STREAM = /(?<!end)stream(?:\r\n|\r|\n)?/g;
const END_STREAM = 'endstream';
/**
 * What marks an object stream's dictionary: its `/Type /ObjStm`, or the `/First` key every one has
 * (pdf.js reads that key to find the objects, whatever `/Type` says). Only such a stream holds page
 * objects, so images and page contents are never inflated.
 */
const OBJECT_STREAM_KEY = /\/(?:First|ObjStm)(?![A-Za-z0-9])/;

export const PAGE_SCAN = {
  /** Inflated bytes read per stream: a page object is small, and a hostile stream may inflate without end. */
  maxInflatedPerStream: 4 * 1024 * 1024,
  /** Inflated bytes read per file: Flate expands up to 1032 times, so 20 MB of input could become 20 GB. */
  maxInflatedPerFile: 64 * 1024 * 1024,
  /** Streams inflated per file: each costs a zlib set-up, so a file of a million tiny streams is cut off. */
  maxInflations: 2_000,
} as const;

/** What one count found, and the work it took (tests hold the work linear in the input). */
export interface PageCount {
  /** Page objects found: in the file, and in the compressed streams read. */
  pages: number;
  /** False when a PAGE_SCAN bound stopped the reading of streams: `pages` is then a lower bound. */
  complete: boolean;
  /** Bytes the stream search passed over, in the file (each at most once). */
  scannedBytes: number;
  /** Bytes inflated out of the file's streams. */
  inflatedBytes: number;
}

/** A name's `#xx` escape (PDF 1.2+): a reader takes `/P#61ge` for `/Page`, so the count must too. */
const NAME_ESCAPE = /#([0-9A-Fa-f]{2})/g;

const decodeNames = (text: string) =>
  text.replace(NAME_ESCAPE, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));

const countIn = (text: string) => decodeNames(text).match(PAGE_OBJECT)?.length ?? 0;

/**
 * A zlib header (RFC 1950: method 8, window at most 32 KB, check bits): what pdf.js's FlateDecode
 * requires, so a stream without one (an image, a font in another filter) is not worth inflating.
 */
const startsLikeZlib = (pdf: Buffer, at: number) => {
  const cmf = pdf[at];
  const flg = pdf[at + 1];
  return cmf !== undefined && flg !== undefined && (cmf & 0x0f) === 8 && cmf >> 4 <= 7 && ((cmf << 8) | flg) % 31 === 0;
};

export function countPdfPages(pdf: Buffer): PageCount {
  const text = pdf.toString('latin1');
  const found: PageCount = { pages: countIn(text), complete: true, scannedBytes: 0, inflatedBytes: 0 };
  let inflations = 0;
  let cursor = 0;
  for (;;) {
    STREAM.lastIndex = cursor;
    const match = STREAM.exec(text);
    if (!match) break;
    const start = match.index + match[0].length;
    const end = text.indexOf(END_STREAM, start);
    if (end < 0) break;
    found.scannedBytes += end + END_STREAM.length - cursor;
    // The stream's dictionary lies between the previous stream's end and this one's keyword.
    const dictionary = decodeNames(text.slice(cursor, match.index));
    cursor = end + END_STREAM.length;
    if (!OBJECT_STREAM_KEY.test(dictionary) || !startsLikeZlib(pdf, start)) continue;
    const budget = Math.min(PAGE_SCAN.maxInflatedPerStream, PAGE_SCAN.maxInflatedPerFile - found.inflatedBytes);
    if (++inflations > PAGE_SCAN.maxInflations || budget <= 0) {
      found.complete = false;
      break;
    }
    const inflated = inflateSome(pdf.subarray(start, end), budget);
    // A stream that failed may have inflated up to its budget first: that work is counted too.
    found.inflatedBytes += inflated?.length ?? budget;
    if (inflated) found.pages += countIn(inflated.toString('latin1'));
  }
  found.scannedBytes += text.length - cursor;
  return found;
}

/**
 * As much of a Flate stream as inflates, up to `limit` bytes: a stream cut short (a damaged file, or
 * one whose data holds the word `endstream`) still gives the objects before the cut.
 */
function inflateSome(data: Buffer, limit: number): Buffer | undefined {
  try {
    return inflateSync(data, { maxOutputLength: limit, finishFlush: constants.Z_SYNC_FLUSH });
  } catch {
    // Corrupt past its header, or over `limit`: nothing counted from it.
    return undefined;
  }
}

/**
 * The pages found in a PDF, or undefined when there is no count to trust: none found (a damaged or
 * unusual file), or the reading of its streams was cut off by a bound. Callers then assume the most
 * pages a request may carry.
 */
export function pdfPages(pdf: Buffer): number | undefined {
  const { pages, complete } = countPdfPages(pdf);
  return complete && pages > 0 ? pages : undefined;
}
