import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../src/agent/providers/anthropic.ts';
import { startFakeAnthropic } from '../fakes/anthropic-server.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { LONG_CONVERSATION_SCRIPT, lookupTool, turnMessage } from '../helpers/long-conversation.ts';

type Fake = Awaited<ReturnType<typeof startFakeAnthropic>>;
type Body = { system?: unknown; tools?: unknown; messages: Array<{ role: string; content: unknown }> };

const strip = (value: unknown): unknown =>
  JSON.parse(JSON.stringify(value, (key, v: unknown) => (key === 'cache_control' ? undefined : v)));

/**
 * A conversation through the real worker and the real Anthropic SDK, against a fake that bills
 * caching as the API does: what is sent before the breakpoints must stay byte-stable across rounds
 * and turns, and compaction must keep tool pairs whole (the fake refuses a split pair with a 400).
 */
describe('the prompt cache across rounds and turns', () => {
  let fake: Fake;
  let h: Harness;
  beforeAll(async () => {
    fake = await startFakeAnthropic({ script: LONG_CONVERSATION_SCRIPT, caching: { minTokens: 1024 } });
    h = await startHarness({
      provider: new AnthropicProvider({ apiKey: 'k', model: 'claude-sonnet-5-5', baseURL: fake.url, maxRetries: 0 }),
      tools: [lookupTool()],
      env: { AGENT_HISTORY_TOKENS: '6000' },
    });
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  it('keeps every request a byte-exact prefix of the next until a compaction, and reads it from cache', async () => {
    for (let n = 1; n <= 12; n++) {
      const item = await h.say('cache-e2e', turnMessage(n));
      const settled = await h.settled(item.id);
      expect(settled.status, JSON.stringify(settled.result)).toBe('done');
    }
    const bodies = fake.requests.map((r) => r.body as Body);
    // The system prompt and the tools are the same bytes in every request: no timestamp, no per-turn
    // text, the same tool order.
    for (const b of bodies) {
      expect(JSON.stringify(b.system)).toBe(JSON.stringify(bodies[0]!.system));
      expect(JSON.stringify(b.tools)).toBe(JSON.stringify(bodies[0]!.tools));
    }
    // Between compactions, each request's messages start with the previous request's.
    let compactions = 0;
    for (let i = 1; i < bodies.length; i++) {
      const before = strip(bodies[i - 1]!.messages) as unknown[];
      const now = strip(bodies[i]!.messages) as unknown[];
      const prefix = JSON.stringify(now.slice(0, before.length - 1));
      if (prefix !== JSON.stringify(before.slice(0, -1))) {
        compactions += 1;
        // A compaction: the history now opens with the summary.
        expect(JSON.stringify(now[0])).toContain('[Earlier in this conversation');
      }
    }
    const { rows } = await h.app.pool.query(
      `SELECT compactions FROM countersign.conversation_summaries WHERE conversation_id = 'cache-e2e'`,
    );
    expect(compactions).toBeGreaterThan(0);
    expect(rows[0].compactions).toBe(compactions);
    // Every request after the first read something from cache; from the second turn on (request 4),
    // all but the first request after each compaction read at least 80% of their input.
    const shares = fake.billed.map((b) => b.cacheRead / (b.input + b.cacheRead + b.cacheWrite));
    expect(shares.slice(1).every((s) => s > 0)).toBe(true);
    expect(shares.slice(3).filter((s) => s >= 0.8).length).toBeGreaterThanOrEqual(bodies.length - 3 - compactions);
  });
});
