import { deflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.ts';
import { createPool, type Pool } from '../../src/db/pool.ts';
import { createLogger } from '../../src/log.ts';
import { TurnSpend, keyOf } from '../../src/budgets/spend.ts';
import { readPeriods } from '../../src/budgets/store.ts';
import { pdfPages } from '../../src/files/pdf-pages.ts';
import { AnthropicProvider } from '../../src/agent/providers/anthropic.ts';
import { FallbackProvider } from '../../src/agent/providers/fallback.ts';
import { OpenAIProvider } from '../../src/agent/providers/openai.ts';
import { spendingCall } from '../../src/agent/model-spend.ts';
import type { Attachment } from '../../src/agent/messages.ts';
import type { ModelRequest } from '../../src/agent/model.ts';
import { DEFAULT_PRICES, costOf, type PriceTable } from '../../src/usage/model-prices.ts';
import type { Budget } from '../../src/policy/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startFakeAnthropic } from '../fakes/anthropic-server.ts';
import { startFakeOpenAI } from '../fakes/openai-server.ts';
import type { StartedFakeModel } from '../fakes/model-http.ts';

/**
 * Spend that must not be counted short (issue #38, attacker review): calls stopped or failed
 * mid-stream, a fallback model dearer than the configured one, and images and PDFs whose few
 * bytes stand for many tokens. Real Postgres, the real Anthropic SDK against the fake API.
 */

const PRICES: PriceTable = {
  models: {
    'cheap-model': { input: 1, output: 10 },
    'dear-model': { input: 10, output: 100 },
    // Its built-in price, which says what one image may count for at it.
    'gpt-4o-mini': DEFAULT_PRICES.models['gpt-4o-mini']!,
  },
};

let db: TestDatabase;
let pool: Pool;
let api: StartedFakeModel;
const log = createLogger('silent');

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate(db.url, log);
  pool = createPool(db.url, 10);
  api = await startFakeAnthropic();
});
afterAll(async () => {
  await api.close();
  await pool.end();
  await db.drop();
});

let items = 0;
const budget = (name: string, over: Partial<Budget> = {}): Budget => ({
  name,
  source: 'policy.yaml:3',
  covers: { kind: 'everyone', value: '' },
  unit: 'usd',
  limit: 10,
  per: 'day',
  tz: 'UTC',
  warnAt: 1,
  allowance: 1,
  ...over,
});

function turn(budgets: Budget[]): TurnSpend {
  items += 1;
  return new TurnSpend({
    pool,
    prices: PRICES,
    budgets,
    workItemId: `00000000-0000-4000-9000-${String(items).padStart(12, '0')}`,
    requester: { platform: 'test', userId: 'U1' },
    reply: { platform: 'test', channel: 'C1' },
    log,
    notify: async () => undefined,
  });
}

const anthropic = (model: string) =>
  new AnthropicProvider({ apiKey: 'sk-test', model, baseURL: api.url, maxRetries: 0, promptCache: false });

const request = (over: Partial<ModelRequest> = {}): ModelRequest => ({
  system: 'You are terse.',
  messages: [{ role: 'user', text: 'hi' }],
  tools: [],
  maxTokens: 1000,
  ...over,
});

const periodOf = async (b: Budget) => (await readPeriods(pool, [keyOf(b)]))[0]!;

describe('a call cut short', () => {
  it('is settled at the input the API reported and the output it had shown when Stop was pressed', async () => {
    const b = budget('stopped');
    api.enqueue({
      kind: 'stream',
      text: ['x'.repeat(300), 'y'.repeat(300), 'z'],
      usage: { input: 2000, output: 900 },
      delayMs: 40,
    });
    const stop = new AbortController();
    let shown = 0;
    const callbacks = {
      onText: (delta: string) => {
        shown += delta.length;
        stop.abort();
      },
      onRoundRestart: () => undefined,
    };
    await expect(
      spendingCall(anthropic('cheap-model'), turn([b]), request(), callbacks, stop.signal),
    ).rejects.toThrow();
    const period = await periodOf(b);
    expect(shown).toBe(300);
    expect(period.reserved).toBe(0);
    // message_start reported 2,000 input tokens and 1 output token; 300 bytes of text were shown since.
    const usage = { inputTokens: 2000, outputTokens: 300, cacheReadTokens: 0, cacheWriteTokens: 0 };
    expect(period.spent).toBeCloseTo(costOf(usage, PRICES.models['cheap-model']!).billed, 9);
  });

  it('counts the tool-call arguments it had streamed when Stop was pressed, though none of them showed', async () => {
    const b = budget('stopped-in-a-tool-call');
    api.enqueue({
      kind: 'stream',
      toolCalls: [{ name: 'write_file', json: ['{"content": "' + 'a'.repeat(400), 'b'.repeat(400), '"}'] }],
      usage: { input: 2000, output: 900 },
      delayMs: 40,
    });
    const stop = new AbortController();
    let streamed = 0;
    const callbacks = {
      onText: () => undefined,
      onRoundRestart: () => undefined,
      onOutputBytes: (bytes: number) => {
        streamed += bytes;
        stop.abort();
      },
    };
    await expect(
      spendingCall(anthropic('cheap-model'), turn([b]), request(), callbacks, stop.signal),
    ).rejects.toThrow();
    const period = await periodOf(b);
    expect(streamed).toBe(413);
    expect(period.reserved).toBe(0);
    // message_start reported 2,000 input tokens and 1 output; 413 bytes of arguments were streamed since.
    const usage = { inputTokens: 2000, outputTokens: 413, cacheReadTokens: 0, cacheWriteTokens: 0 };
    expect(period.spent).toBeCloseTo(costOf(usage, PRICES.models['cheap-model']!).billed, 9);
  });

  it('is settled at its whole reservation when it failed before the API reported any usage', async () => {
    const failed = budget('failed-early');
    api.enqueue({ kind: 'error', status: 400, body: 'messages: invalid' });
    const callbacks = { onText: () => undefined, onRoundRestart: () => undefined };
    const call = spendingCall(
      anthropic('cheap-model'),
      turn([failed]),
      request(),
      callbacks,
      new AbortController().signal,
    );
    await expect(call).rejects.toThrow();
    // The same request reserved on another budget holds exactly what the failed call was charged.
    const twin = budget('failed-early-twin');
    const held = await turn([twin]).reserve(request(), ['cheap-model']);
    expect(held.ok).toBe(true);
    const spent = (await periodOf(failed)).spent;
    expect(spent).toBeGreaterThan(0);
    expect(spent).toBe((await periodOf(twin)).reserved);
  });
});

describe('a fallback model', () => {
  it('is reserved at the dearest price of the chain and settled at its own', async () => {
    // $0.05 of room: 1,000 output tokens fit at the cheap model's $10/M, about 490 at the dear one's $100/M.
    const b = budget('fallback', { limit: 0.05 });
    const chain = new FallbackProvider([anthropic('cheap-model'), anthropic('dear-model')]);
    api.enqueue(
      { kind: 'error', status: 429, body: 'rate limited', headers: { 'retry-after': '0' } },
      { kind: 'stream', text: ['ok'], usage: { input: 100, output: 200 } },
    );
    const before = api.requests.length;
    const callbacks = { onText: () => undefined, onRoundRestart: () => undefined };
    const round = await spendingCall(chain, turn([b]), request(), callbacks, new AbortController().signal);
    if ('refused' in round) throw new Error(round.refused);
    expect(round.model).toBe('dear-model');
    const sent = api.requests.slice(before).map((r) => r.body);
    expect(sent.map((body) => body.model)).toEqual(['cheap-model', 'dear-model']);
    for (const body of sent) expect(body.max_tokens).toBeLessThan(500);
    const usage = { inputTokens: 100, outputTokens: 200, cacheReadTokens: 0, cacheWriteTokens: 0 };
    expect((await periodOf(b)).spent).toBeCloseTo(costOf(usage, PRICES.models['dear-model']!).billed, 9);
  });

  // An attempt the API billed (message_start reported its input) and that then failed mid-stream is
  // charged all the same: it counts beside the round the fallback answered.
  it('counts the attempt that failed mid-stream before the fallback answered', async () => {
    const b = budget('fallback-after-a-billed-attempt');
    const chain = new FallbackProvider([anthropic('cheap-model'), anthropic('dear-model')]);
    api.enqueue(
      {
        kind: 'stream',
        text: ['partial'],
        usage: { input: 50_000, output: 10 },
        errorAfterEvents: { after: 3, type: 'overloaded' },
      },
      { kind: 'stream', text: ['ok'], usage: { input: 100, output: 200 } },
    );
    const callbacks = { onText: () => undefined, onRoundRestart: () => undefined };
    const round = await spendingCall(chain, turn([b]), request(), callbacks, new AbortController().signal);
    if ('refused' in round) throw new Error(round.refused);
    expect(round.model).toBe('dear-model');
    const answered = { inputTokens: 100, outputTokens: 200, cacheReadTokens: 0, cacheWriteTokens: 0 };
    const failedInput = { inputTokens: 50_000, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
    const atLeast =
      costOf(answered, PRICES.models['dear-model']!).billed + costOf(failedInput, PRICES.models['cheap-model']!).billed;
    expect((await periodOf(b)).spent).toBeGreaterThanOrEqual(atLeast);
  });

  // OpenAI reports usage only in the stream's last chunk: an attempt cut before it reported nothing,
  // though it was billed for what it streamed. It must not count as free beside the retry that answered.
  it('does not count an attempt that streamed output and failed before reporting usage as free', async () => {
    const openai = await startFakeOpenAI();
    try {
      const b = budget('unreported-attempt');
      const provider = new OpenAIProvider({
        name: 'openai',
        apiKey: 'sk-test',
        model: 'cheap-model',
        baseURL: openai.url,
        maxRetries: 1,
        retry: { sleep: async () => undefined },
      });
      const partial = 'x'.repeat(4000);
      openai.enqueue(
        { kind: 'stream', text: [partial, partial], usage: { input: 100, output: 2000 }, cutAfterEvents: 3 },
        { kind: 'stream', text: ['ok'], usage: { input: 100, output: 10 } },
      );
      const callbacks = { onText: () => undefined, onRoundRestart: () => undefined };
      const round = await spendingCall(
        provider,
        turn([b]),
        request({ maxTokens: 8000 }),
        callbacks,
        new AbortController().signal,
      );
      if ('refused' in round) throw new Error(round.refused);
      const answered = { inputTokens: 100, outputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 0 };
      // What the cut attempt streamed, a token at least per byte, beside the round that answered.
      const streamed = { inputTokens: 0, outputTokens: partial.length, cacheReadTokens: 0, cacheWriteTokens: 0 };
      const price = PRICES.models['cheap-model']!;
      expect((await periodOf(b)).spent).toBeGreaterThanOrEqual(
        costOf(answered, price).billed + costOf(streamed, price).billed,
      );
    } finally {
      await openai.close();
    }
  });

  it('without a price is refused under a budget in dollars, naming it', async () => {
    const chain = new FallbackProvider([anthropic('cheap-model'), anthropic('unknown-model')]);
    const callbacks = { onText: () => undefined, onRoundRestart: () => undefined };
    const before = api.requests.length;
    const answer = await spendingCall(
      chain,
      turn([budget('unpriced-fallback')]),
      request(),
      callbacks,
      new AbortController().signal,
    );
    expect(answer).toEqual({ refused: expect.stringContaining('the model unknown-model has no price') });
    expect(api.requests.length).toBe(before);
  });
});

/** A PDF of `pages` pages, its page objects written plainly or inside a compressed object stream. */
function pdf(pages: number, compressed: boolean): string {
  const objects = Array.from({ length: pages }, (_, i) => `${i + 3} 0 obj << /Type /Page /Parent 2 0 R >> endobj`);
  const tree = `2 0 obj << /Type /Pages /Count ${pages} >> endobj`;
  const body = compressed
    ? `1 0 obj << /Type /ObjStm /Filter /FlateDecode >>\nstream\n${deflateSync(objects.join('\n')).toString('latin1')}endstream\nendobj`
    : objects.join('\n');
  return Buffer.from(`%PDF-1.7\n${tree}\n${body}\n%%EOF\n`, 'latin1').toString('base64');
}

/** What a token budget holds for one call of `attachments`: input bound and output together. */
async function heldFor(name: string, attachments: Attachment[], models = ['cheap-model']): Promise<number> {
  const b = budget(name, { unit: 'tokens', limit: 10_000_000 });
  const messages = [{ role: 'user' as const, text: 'read this', attachments }];
  const held = await turn([b]).reserve(request({ messages, maxTokens: 1000 }), models);
  if (!held.ok) throw new Error(held.message);
  return (await periodOf(b)).reserved - 1000;
}

describe('images and PDFs', () => {
  it('count their pages, written plainly, with name escapes or in compressed object streams', () => {
    expect(pdfPages(Buffer.from(pdf(7, false), 'base64'))).toBe(7);
    expect(pdfPages(Buffer.from(pdf(12, true), 'base64'))).toBe(12);
    const escaped = Buffer.from(pdf(9, false), 'base64').toString('latin1').replaceAll('/Page ', '/P#61ge ');
    expect(pdfPages(Buffer.from(escaped, 'latin1'))).toBe(9);
    expect(pdfPages(Buffer.from('not a pdf at all'))).toBeUndefined();
  });

  it('hold at least 3,000 tokens a PDF page and 1,600 an image, however few their bytes', async () => {
    const plain = await heldFor('text-only', []);
    const pdfInput = await heldFor('pdf', [
      { kind: 'document', mediaType: 'application/pdf', data: pdf(20, true), name: 'a.pdf' },
    ]);
    // A 1 × 1 PNG: 68 bytes, far less than what an image is billed.
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
    const imageInput = await heldFor('image', [{ kind: 'image', mediaType: 'image/png', data: png, name: 'a.png' }]);
    expect(pdfInput - plain).toBeGreaterThanOrEqual(20 * 3000);
    expect(imageInput - plain).toBeGreaterThanOrEqual(1600);
  });

  it('hold an image at what the model counts one for, where its price says more (OpenAI counts gpt-4o-mini’s by tiles)', async () => {
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
    const image = [{ kind: 'image' as const, mediaType: 'image/png', data: png, name: 'a.png' }];
    const plain = await heldFor('text-only-mini', [], ['gpt-4o-mini']);
    const alone = await heldFor('image-mini', image, ['gpt-4o-mini']);
    // 2,833 + 5,667 × 8 tiles: far above the 1,600 of a megapixel image elsewhere.
    expect(alone - plain).toBeGreaterThanOrEqual(48_169);
    // A fallback chain that may end at it holds the image as it would.
    const chain = await heldFor('image-chain', image, ['cheap-model', 'gpt-4o-mini']);
    expect(chain - plain).toBeGreaterThanOrEqual(48_169);
  });

  it('hold a photo at what an image is billed, not at its bytes: the APIs bill its pixels, scaled down', async () => {
    const plain = await heldFor('text-only-photo', []);
    // A photo as Countersign sends one (long edge 1,568 px): about 800 KB, over a million base64 characters.
    const photo = Buffer.alloc(800_000, 0x5a).toString('base64');
    const held = await heldFor('photo', [{ kind: 'image', mediaType: 'image/jpeg', data: photo, name: 'p.jpg' }]);
    expect(held - plain).toBeGreaterThanOrEqual(1600);
    // Held at its base64 bytes, it took a million tokens: a budget of a million a day refused every photo.
    expect(held - plain).toBeLessThan(2 * 1600);
  });

  it('hold a PDF whose pages cannot be counted at the most pages a request may carry', async () => {
    const garbage = Buffer.from('%PDF-1.7 garbage without pages').toString('base64');
    const plain = await heldFor('text-only-2', []);
    const held = await heldFor('garbage-pdf', [
      { kind: 'document', mediaType: 'application/pdf', data: garbage, name: 'b.pdf' },
    ]);
    expect(held - plain).toBeGreaterThanOrEqual(100 * 3000);
  });
});
