import { extractText, getDocumentProxy } from 'unpdf';

/**
 * The text a PDF gives a model that reads no documents (OpenAI-compatible providers): at most
 * `maxChars` (about 15,000 tokens), so one PDF cannot fill the context; extraction that takes longer
 * than `timeoutMs` is given up.
 */
export const PDF_TEXT = { maxChars: 60_000, timeoutMs: 20_000 } as const;

/**
 * A PDF's text layer (unpdf, Mozilla's pdf.js without a browser), pages apart by a blank line and cut
 * at PDF_TEXT.maxChars with a line saying so; undefined when it has none (a scan) or cannot be read.
 */
export async function pdfText(bytes: Buffer): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), PDF_TEXT.timeoutMs);
  });
  try {
    return await Promise.race([extract(bytes), timeout]);
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

async function extract(bytes: Buffer): Promise<string | undefined> {
  // A copy: pdf.js takes ownership of (and may detach) the buffer it is given. verbosity 0: errors only.
  const document = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
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
