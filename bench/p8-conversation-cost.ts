import { startCountersign } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/log.ts';
import { DEFAULT_PRICES, priceOf } from '../src/usage/model-prices.ts';
import { enqueueWorkItem } from '../src/queue/turn-lifecycle.ts';
import { Priority } from '../src/core/work-item.ts';
import { startFakeAnthropic, type BilledRequest } from '../test/fakes/anthropic-server.ts';
import { LONG_CONVERSATION_SCRIPT, lookupTool, turnMessage } from '../test/helpers/long-conversation.ts';
import { RecordingOutbound } from '../test/helpers/recording-outbound.ts';

/** The model whose list prices turn tokens into dollars here (src/usage/model-prices.ts). */
const MODEL = 'claude-sonnet-5-5';

interface P8Turn {
  turn: number;
  rounds: number;
  input: number;
  cacheRead: number;
  cacheWrite: number;
  output: number;
  /** Input as billed, in input-token equivalents: uncached + 1.25 × writes + 0.1 × reads. */
  billedInput: number;
  /** Dollars as billed, and what the same prompts cost uncached. */
  cost: number;
  uncachedCost: number;
}

export interface P8Variant {
  turns: P8Turn[];
  compactions: number;
  /** Cache reads as a share of all input tokens, turns 2 to the end. */
  readShareFromTurn2: number;
  /** Turns from 2 on whose cache reads are at least 85% of their input, and those that are not. */
  turnsAtTarget: number;
  turnsBelowTarget: number[];
  cost: number;
  uncachedCost: number;
}

export interface P8Result {
  turnCount: number;
  historyTokens: number;
  cached: P8Variant;
  baseline: P8Variant;
}

/**
 * P8: one conversation of `turnCount` turns (each a lookup or two, so two or three model rounds)
 * through the real worker and the real Anthropic SDK against the fake, which bills caching as the
 * API documents it. Measured twice on fresh databases: as shipped (PROMPT_CACHE on, compaction at
 * `historyTokens`), and the baseline with both off (the AGENT_HISTORY_MESSAGES window, no breakpoints).
 */
export async function benchP8(
  freshDatabase: (name: string) => Promise<string>,
  turnCount = 40,
  historyTokens = 12_000,
): Promise<P8Result> {
  const cached = await runConversation(await freshDatabase('p8'), turnCount, {
    PROMPT_CACHE: 'true',
    AGENT_HISTORY_TOKENS: String(historyTokens),
  });
  const baseline = await runConversation(await freshDatabase('p8base'), turnCount, {
    PROMPT_CACHE: 'false',
    AGENT_HISTORY_TOKENS: '0',
  });
  return { turnCount, historyTokens, cached, baseline };
}

async function runConversation(url: string, turnCount: number, env: Record<string, string>): Promise<P8Variant> {
  const model = await startFakeAnthropic({ script: LONG_CONVERSATION_SCRIPT, caching: { minTokens: 1024 } });
  const outbound = new RecordingOutbound('bench');
  const config = loadConfig({
    DATABASE_URL: url,
    HTTP_PORT: '0',
    HTTP_HOST: '127.0.0.1',
    AI_PROVIDER: 'anthropic',
    ANTHROPIC_API_KEY: 'sk-ant-bench',
    ANTHROPIC_BASE_URL: model.url,
    ANTHROPIC_MODEL: MODEL,
    ...env,
  });
  const app = await startCountersign(config, {
    role: 'worker',
    console: false,
    log: createLogger('silent'),
    tools: [lookupTool()],
    outbounds: [outbound],
  });
  const price = priceOf(DEFAULT_PRICES, MODEL)!;
  const turns: P8Turn[] = [];
  try {
    for (let n = 1; n <= turnCount; n++) {
      const from = model.billed.length;
      // One pair of listeners per turn, both removed when the turn ends either way.
      const done = new Promise<void>((resolve, reject) => {
        const finished = () => {
          app.events.off('failed', failed);
          resolve();
        };
        const failed = ({ error }: { error: unknown }) => {
          app.events.off('finished', finished);
          reject(new Error(`P8 turn ${n} failed: ${String(error)}`));
        };
        app.events.once('finished', finished);
        app.events.once('failed', failed);
      });
      await enqueueWorkItem(app.pool, {
        type: 'CHAT',
        priority: Priority.CRITICAL,
        conversationId: 'p8-conversation',
        requester: { platform: 'bench', userId: 'U1' },
        input: { prompt: turnMessage(n) },
        reply: { platform: 'bench', channel: 'p8' },
      });
      await done;
      const rounds: BilledRequest[] = model.billed.slice(from);
      const sum = (pick: (b: BilledRequest) => number) => rounds.reduce((a, b) => a + pick(b), 0);
      const input = sum((b) => b.input);
      const cacheRead = sum((b) => b.cacheRead);
      const cacheWrite = sum((b) => b.cacheWrite);
      const output = sum((b) => b.output);
      const perToken = (perMillion: number) => perMillion / 1e6;
      turns.push({
        turn: n,
        rounds: rounds.length,
        input,
        cacheRead,
        cacheWrite,
        output,
        billedInput: input + 1.25 * cacheWrite + 0.1 * cacheRead,
        cost:
          input * perToken(price.input) +
          cacheWrite * perToken(price.cacheWrite!) +
          cacheRead * perToken(price.cacheRead!) +
          output * perToken(price.output),
        uncachedCost: (input + cacheRead + cacheWrite) * perToken(price.input) + output * perToken(price.output),
      });
    }
    const { rows } = await app.pool.query<{ compactions: number }>(
      `SELECT compactions FROM countersign.conversation_summaries WHERE conversation_id = 'p8-conversation'`,
    );
    const later = turns.slice(1);
    const share = (t: P8Turn) => t.cacheRead / (t.input + t.cacheRead + t.cacheWrite || 1);
    const below = later.filter((t) => share(t) < 0.85).map((t) => t.turn);
    return {
      turns,
      compactions: rows[0]?.compactions ?? 0,
      readShareFromTurn2:
        later.reduce((a, t) => a + t.cacheRead, 0) /
        later.reduce((a, t) => a + t.input + t.cacheRead + t.cacheWrite, 0),
      turnsAtTarget: later.length - below.length,
      turnsBelowTarget: below,
      cost: turns.reduce((a, t) => a + t.cost, 0),
      uncachedCost: turns.reduce((a, t) => a + t.uncachedCost, 0),
    };
  } finally {
    await app.stop();
    await model.close();
  }
}

/** Mean billed input over turns [from, to] (1-based, inclusive). */
export function meanBilled(v: P8Variant, from: number, to: number): number {
  const span = v.turns.filter((t) => t.turn >= from && t.turn <= to);
  return span.reduce((a, t) => a + t.billedInput, 0) / (span.length || 1);
}
