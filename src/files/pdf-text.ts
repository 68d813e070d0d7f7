import { extractText, getDocumentProxy } from 'unpdf';

/**
 * The text a PDF gives a model that reads no documents (OpenAI-compatible providers): at most
 * `maxChars` (about 15,000 tokens), so one PDF cannot fill the context. Its time and memory are
 * bounded by the thread it runs in (parse-pool.ts: PARSERS).
 */
export const PDF_TEXT = { maxChars: 60_000 } as const;

/**
 * A PDF's text layer (unpdf, Mozilla's pdf.js without a browser), pages apart by a blank line and cut
 * at PDF_TEXT.maxChars with a line saying so; undefined when it has none (a scan) or cannot be read.
 * pdf.js is not linear in a hostile file's size, so this runs only in parse-worker.ts's threads.
 */
export async function extractPdfText(bytes: Uint8Array): Promise<string | undefined> {
  try {
    return await extract(bytes);
  } catch {
    return undefined;
  }
}

async function extract(bytes: Uint8Array): Promise<string | undefined> {
  // pdf.js takes ownership of (and may detach) the buffer it is given: the thread's copy is its own.
  const document = await getDocumentProxy(bytes, { verbosity: 0 });
  try {
    const { text } = await extractText(document, { mergePages: false });
    const whole = text
      .map((page) => page.trim())
      .join('\n\n')
      .trim();
    if (!whole) return undefined;
    if (whole.length <= PDF_TEXT.maxChars) return whole;
    return `${whole.slice(0, PDF_TEXT.maxChars)}\n[… cut here: the text has ${whole.length} characters and only the first ${PDF_TEXT.maxChars} are shown; the whole file is saved]`;
  } finally {
    await document.destroy();
  }
}
