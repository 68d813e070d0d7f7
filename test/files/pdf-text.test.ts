import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../src/agent/providers/anthropic.ts';
import { OpenAIProvider } from '../../src/agent/providers/openai.ts';
import { PDF_TEXT } from '../../src/files/pdf-text.ts';
import { parsePool } from '../../src/files/parse-pool.ts';
import { startFakeAnthropic } from '../fakes/anthropic-server.ts';
import { startFakeOpenAI } from '../fakes/openai-server.ts';
import type { StartedFakeModel } from '../fakes/model-http.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { pdf, textPdf } from './samples.ts';

type Body = { messages: Array<{ role: string; content: unknown }> };
type Block = { type: string; text?: string; source?: { media_type: string; data: string } };

const INVOICE = textPdf(['Invoice 2291: total 42 EUR', 'Paid by transfer (ref. AB-7)']);

/** The text as the app reads it: in a parse thread (src/files/parse-pool.ts). */
async function pdfText(bytes: Buffer): Promise<string | undefined> {
  const read = await parsePool().text(bytes);
  if (!read.ok) throw new Error(read.why);
  return read.value ?? undefined;
}

describe('the text of a PDF', () => {
  it('is its pages’ text, pages apart by a blank line', async () => {
    expect(await pdfText(INVOICE)).toBe('Invoice 2291: total 42 EUR\n\nPaid by transfer (ref. AB-7)');
  });

  it('is nothing for a PDF without a text layer, or bytes that only start like a PDF', async () => {
    expect(await pdfText(pdf(3))).toBeUndefined();
    expect(await pdfText(Buffer.from('%PDF-1.7\ngarbage that is no PDF at all\n%%EOF\n'))).toBeUndefined();
  });

  it('is cut at its bound with a line saying how much there was', async () => {
    const long = textPdf(Array.from({ length: 100 }, (_, i) => `page ${i} `.padEnd(800, 'x')));
    // 100 pages of 800 characters: over the bound, and every page still read.
    const text = (await pdfText(long))!;
    expect(text.length).toBeLessThan(PDF_TEXT.maxChars + 200);
    expect(text).toMatch(/\n\[… cut here: the text has \d+ characters and only the first 60000 are shown;/);
    expect(text.startsWith('page 0 xxx')).toBe(true);
  });
});

/** A PDF sent with a message, through the real worker and the real SDKs to each fake API. */
describe('a PDF sent to each provider', () => {
  let openai: StartedFakeModel;
  let anthropic: Awaited<ReturnType<typeof startFakeAnthropic>>;
  let viaOpenAI: Harness;
  let viaAnthropic: Harness;
  beforeAll(async () => {
    openai = await startFakeOpenAI({ textOnly: true, script: { rules: [{ rounds: [{ text: 'Read it.' }] }] } });
    anthropic = await startFakeAnthropic({ script: { rules: [{ rounds: [{ text: 'Read it.' }] }] } });
    viaOpenAI = await startHarness({
      provider: new OpenAIProvider({
        name: 'openai',
        apiKey: 'k',
        model: 'local',
        baseURL: `${openai.url}/v1`,
        maxRetries: 0,
        vision: false,
      }),
    });
    viaAnthropic = await startHarness({
      provider: new AnthropicProvider({
        apiKey: 'k',
        model: 'claude-sonnet-5-5',
        baseURL: anthropic.url,
        maxRetries: 0,
      }),
    });
  });
  afterAll(async () => {
    await viaOpenAI.stop();
    await viaAnthropic.stop();
    await openai.close();
    await anthropic.close();
  });

  const send = async (h: Harness, bytes: Buffer, name: string) => {
    h.outbound.files.set(`F-${name}`, bytes);
    const item = await h.say(`pdf-${name}`, 'what is the total?', {
      input: { prompt: 'what is the total?', files: [{ id: `F-${name}`, name, size: bytes.length }] },
    });
    return h.settled(item.id);
  };

  it('gives an OpenAI-compatible model the PDF’s text as text', async () => {
    expect((await send(viaOpenAI, INVOICE, 'invoice.pdf')).result?.text).toBe('Read it.');
    const [, user] = (openai.requests.at(-1)!.body as Body).messages;
    expect(user!.content).toContain(
      '(The document "invoice.pdf" as text, extracted from it:)\nInvoice 2291: total 42 EUR\n\nPaid by transfer (ref. AB-7)',
    );
  });

  it('names a scanned PDF (no text layer) to an OpenAI-compatible model and answers', async () => {
    expect((await send(viaOpenAI, pdf(2), 'scan.pdf')).result?.text).toBe('Read it.');
    const [, user] = (openai.requests.at(-1)!.body as Body).messages;
    expect(user!.content).toContain(
      '(The document "scan.pdf" cannot be shown to this model and has no text to extract;',
    );
  });

  it('keeps the document block for Anthropic, without the extracted text', async () => {
    expect((await send(viaAnthropic, INVOICE, 'invoice.pdf')).result?.text).toBe('Read it.');
    const [user] = (anthropic.requests.at(-1)!.body as { messages: Array<{ content: Block[] }> }).messages;
    const document = user!.content.find((b) => b.type === 'document');
    expect(document?.source).toMatchObject({ media_type: 'application/pdf', data: INVOICE.toString('base64') });
    expect(JSON.stringify(user)).not.toContain('Invoice 2291');
  });
});
