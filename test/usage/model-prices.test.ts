import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { costOf, DEFAULT_PRICES, loadPriceTable, priceOf } from '../../src/usage/model-prices.ts';

describe('the price table', () => {
  it('matches the longest prefix of a model id', () => {
    expect(priceOf(DEFAULT_PRICES, 'claude-opus-4-5-20251101')!.input).toBe(5);
    expect(priceOf(DEFAULT_PRICES, 'claude-opus-5-5')!.input).toBe(4);
    expect(priceOf(DEFAULT_PRICES, 'claude-sonnet-5-5')!.input).toBe(2);
    expect(priceOf(DEFAULT_PRICES, 'claude-opus-4-1-20250805')!.input).toBe(15);
    expect(priceOf(DEFAULT_PRICES, 'gpt-4o-mini-2024-07-18')!.input).toBe(0.15);
    expect(priceOf(DEFAULT_PRICES, 'claude-opus-4-20250514')!.input).toBe(15);
    expect(priceOf(DEFAULT_PRICES, 'claude-opus-4-8')).toBeUndefined();
    expect(priceOf(DEFAULT_PRICES, 'llama3')).toBeUndefined();
  });

  it('bills Anthropic cache writes at 1.25× and reads at 0.1× of input', () => {
    const sonnet = priceOf(DEFAULT_PRICES, 'claude-sonnet-5-5')!;
    const cost = costOf({ inputTokens: 1e6, outputTokens: 0, cacheReadTokens: 1e6, cacheWriteTokens: 1e6 }, sonnet);
    expect(cost.billed).toBeCloseTo(2 + 0.2 + 2.5);
    expect(cost.uncached).toBeCloseTo(6);
  });

  it('names where a bad file was given: the setting, or the command line option that overrode it', () => {
    const missing = path.join(mkdtempSync(path.join(tmpdir(), 'cs-prices-')), 'nosuch.json');
    expect(() => loadPriceTable(missing)).toThrow(/^MODEL_PRICES_FILE .*nosuch\.json could not be read/);
    expect(() => loadPriceTable(missing, '--prices')).toThrow(/^--prices .*nosuch\.json could not be read/);
  });

  it('lays the operator’s file over the defaults', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-prices-'));
    const file = path.join(dir, 'p.json');
    writeFileSync(file, JSON.stringify({ models: { 'claude-sonnet-4': { input: 2, output: 10 } } }));
    const table = loadPriceTable(file);
    expect(priceOf(table, 'claude-sonnet-4-5')).toEqual({ input: 2, output: 10 });
    expect(priceOf(table, 'gpt-4o')!.input).toBe(2.5);
  });

  it('keeps what a built-in model counts an image for when the file re-prices it without saying', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-prices-'));
    const file = path.join(dir, 'p.json');
    // A new list price, and a dated id of the same model: neither says how it counts images.
    const models = {
      'gpt-4o-mini': { input: 0.1, output: 0.5 },
      'gpt-4o-mini-2024-07-18': { input: 0.1, output: 0.5 },
    };
    writeFileSync(file, JSON.stringify({ models }));
    const table = loadPriceTable(file);
    expect(priceOf(table, 'gpt-4o-mini')).toEqual({ input: 0.1, output: 0.5, imageTokens: 48_200 });
    expect(priceOf(table, 'gpt-4o-mini-2024-07-18')!.imageTokens).toBe(48_200);
    // One that says, says.
    writeFileSync(file, JSON.stringify({ models: { 'gpt-4o-mini': { input: 0.1, output: 0.5, imageTokens: 9_000 } } }));
    expect(priceOf(loadPriceTable(file), 'gpt-4o-mini')!.imageTokens).toBe(9_000);
  });
});
