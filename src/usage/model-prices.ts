import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { TokenUsage } from '../agent/model.ts';

/** US dollars per million tokens. */
export const ModelPrice = z.strictObject({
  input: z.number().min(0),
  output: z.number().min(0),
  /** Reading a cached prefix. Default: the input price (no discount). */
  cacheRead: z.number().min(0).optional(),
  /** Writing a prefix to the cache. Default: the input price (no surcharge). */
  cacheWrite: z.number().min(0).optional(),
  /**
   * The most input tokens one image may count for at this model, where that is more than the 1,600
   * of a ~1.15-megapixel image elsewhere: OpenAI counts some models' images by patches times a
   * multiplier, or by tiles at many tokens each (src/budgets reserves at least this per image).
   */
  imageTokens: z.number().int().positive().optional(),
});
export type ModelPrice = z.infer<typeof ModelPrice>;

export const PriceTable = z.strictObject({
  /** Model id prefix → price; the longest prefix of a model id wins. */
  models: z.record(z.string().min(1), ModelPrice),
});
export type PriceTable = z.infer<typeof PriceTable>;

/** Anthropic: a 5-minute cache write costs 1.25× input, a read 0.1×. */
const anthropic = (input: number, output: number): ModelPrice => ({
  input,
  output,
  cacheWrite: input * 1.25,
  cacheRead: input * 0.1,
});
/** OpenAI: caching is automatic; writes cost nothing extra, reads are discounted. */
const openai = (input: number, output: number, cacheRead: number, imageTokens?: number): ModelPrice => ({
  input,
  output,
  cacheRead,
  ...(imageTokens ? { imageTokens } : {}),
});

/**
 * List prices as published when this table was written (USD per million tokens; Anthropic's model
 * pages, November 2026). They change, and contracts differ: the operator's MODEL_PRICES_FILE
 * overrides or extends them, and a model missing here is shown as unpriced, never guessed.
 */
export const DEFAULT_PRICES: PriceTable = {
  models: {
    'claude-fable-5-1': anthropic(10, 50),
    'claude-opus-5-5': anthropic(4, 20),
    'claude-opus-5': anthropic(5, 25),
    'claude-sonnet-5-5': anthropic(2, 10),
    'claude-sonnet-5': anthropic(2, 10),
    'claude-opus-4-5': anthropic(5, 25),
    // Opus 4 and 4.1 only: later 4.x Opus models are priced differently.
    'claude-opus-4-0': anthropic(15, 75),
    'claude-opus-4-2025': anthropic(15, 75),
    'claude-opus-4-1': anthropic(15, 75),
    'claude-sonnet-4': anthropic(3, 15),
    'claude-3-7-sonnet': anthropic(3, 15),
    'claude-3-5-sonnet': anthropic(3, 15),
    'claude-haiku-4-5': anthropic(1, 5),
    'claude-3-5-haiku': anthropic(0.8, 4),
    // Images by patches: at most 1,536 of them, times 1.62 for these two models.
    'gpt-5-mini': openai(0.25, 2, 0.025, 2_500),
    'gpt-5': openai(1.25, 10, 0.125),
    'gpt-4.1-mini': openai(0.4, 1.6, 0.1, 2_500),
    'gpt-4.1': openai(2, 8, 0.5),
    // Images by tiles: 2,833 tokens plus 5,667 a tile, at most 8 tiles of 512 px after scaling.
    'gpt-4o-mini': openai(0.15, 0.6, 0.075, 48_200),
    'gpt-4o': openai(2.5, 10, 1.25),
  },
};

/**
 * The defaults with the operator's file laid over them; a bad file is an error naming what is wrong,
 * and where the file was given (`source`: the setting, or `usage --prices`, which overrides it).
 */
export function loadPriceTable(file: string | undefined, source = 'MODEL_PRICES_FILE'): PriceTable {
  if (!file) return DEFAULT_PRICES;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`${source} ${file} could not be read as JSON: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const parsed = PriceTable.safeParse(raw);
  if (!parsed.success) {
    throw new Error(`${source} ${file} is not a price table: ${z.prettifyError(parsed.error)}`);
  }
  const models = Object.entries(parsed.data.models).map(([model, price]) => [model, withImageTokens(model, price)]);
  return { models: { ...DEFAULT_PRICES.models, ...Object.fromEntries(models) } };
}

/**
 * An operator's entry that does not say what an image counts for keeps what the built-in entry it
 * stands for says (a new list price, a dated id of the same model): budgets reserve an image at it,
 * and without it a gpt-4o-mini image would be held at 1,600 tokens instead of 48,200.
 */
function withImageTokens(model: string, price: ModelPrice): ModelPrice {
  if (price.imageTokens !== undefined) return price;
  const imageTokens = priceOf(DEFAULT_PRICES, model)?.imageTokens;
  return imageTokens === undefined ? price : { ...price, imageTokens };
}

export function priceOf(table: PriceTable, model: string): ModelPrice | undefined {
  const match = Object.keys(table.models)
    .filter((prefix) => model.startsWith(prefix))
    .sort((a, b) => b.length - a.length)[0];
  return match === undefined ? undefined : table.models[match];
}

export interface Cost {
  /** What the tokens cost as billed (cache reads and writes at their prices). */
  billed: number;
  /** What the same prompt would have cost with no cache at all. */
  uncached: number;
}

/** The cost of some usage at a price, in dollars. `inputTokens` excludes cached ones (as the APIs report). */
export function costOf(usage: TokenUsage, price: ModelPrice): Cost {
  const perToken = (perMillion: number) => perMillion / 1_000_000;
  const read = price.cacheRead ?? price.input;
  const write = price.cacheWrite ?? price.input;
  const output = usage.outputTokens * perToken(price.output);
  return {
    billed:
      usage.inputTokens * perToken(price.input) +
      usage.cacheReadTokens * perToken(read) +
      usage.cacheWriteTokens * perToken(write) +
      output,
    uncached: (usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens) * perToken(price.input) + output,
  };
}
