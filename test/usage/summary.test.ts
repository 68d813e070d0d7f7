import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { runCli } from '../helpers/processes.ts';
import { ZERO_USAGE, type ModelProvider, type ModelRound } from '../../src/agent/model.ts';

/** A provider that reports fixed token counts, so the summary's sums are known. */
const counting = (model: string): ModelProvider => ({
  name: 'counting',
  model,
  async streamRound(_request, callbacks): Promise<ModelRound> {
    callbacks.onText('ok');
    return {
      text: 'ok',
      toolCalls: [],
      stopReason: 'end_turn',
      usage: { ...ZERO_USAGE, inputTokens: 100, outputTokens: 10, cacheReadTokens: 80, cacheWriteTokens: 5 },
      provider: 'counting',
      model,
      fallbacks: [],
    };
  },
});

describe('countersign usage', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ provider: counting('m1') });
  });
  afterAll(() => h.stop());

  it('summarises tokens per day and conversation with totals, and says which models have no price', async () => {
    for (const text of ['a', 'b']) await h.settled((await h.say('usage-1', text)).id);
    await h.settled((await h.say('usage-2', 'c')).id);
    const run = runCli(['usage', '--days=1'], { DATABASE_URL: h.db.url, LOG_LEVEL: 'silent' });
    expect((await run.exited).code, run.stderr()).toBe(0);
    const lines = run.stdout().trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^day\s+conversation\s+provider\s+turns\s+rounds\s+input\s+output\s+cache read\s+cache write\s+cost\s+uncached$/,
    );
    expect(lines[1]).toMatch(/^\d{4}-\d\d-\d\d\s+usage-1\s+counting\s+2\s+2\s+200\s+20\s+160\s+10\s+\?\s+\?$/);
    expect(lines[2]).toMatch(/^\d{4}-\d\d-\d\d\s+usage-2\s+counting\s+1\s+1\s+100\s+10\s+80\s+5\s+\?\s+\?$/);
    expect(lines[3]).toMatch(/^total\s+3\s+3\s+300\s+30\s+240\s+15\s+\?\s+\?$/);
    expect(lines[4]).toBe('No price for m1: add it to MODEL_PRICES_FILE to see its cost (docs/costs.md).');
  });

  it('prices the tokens from the operator’s table: cached input at its own price, beside the uncached cost', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-prices-'));
    const file = path.join(dir, 'prices.json');
    // $1 per million input, $10 output, reads $0.10, writes $1.25.
    writeFileSync(file, JSON.stringify({ models: { m1: { input: 1, output: 10, cacheRead: 0.1, cacheWrite: 1.25 } } }));
    const run = runCli(['usage', '--days=1'], { DATABASE_URL: h.db.url, LOG_LEVEL: 'silent', MODEL_PRICES_FILE: file });
    expect((await run.exited).code, run.stderr()).toBe(0);
    const total = run.stdout().trimEnd().split('\n').at(-1)!;
    // 300×1 + 30×10 + 240×0.1 + 15×1.25 = 642.75 per million; uncached: 555×1 + 300 = 855.
    expect(total).toMatch(/^total\s+3\s+3\s+300\s+30\s+240\s+15\s+\$0\.0006\s+\$0\.0009$/);
  });

  it('refuses a price file that is not a price table, naming the problem', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-prices-'));
    const file = path.join(dir, 'prices.json');
    writeFileSync(file, JSON.stringify({ models: { m1: { input: -1, output: 10 } } }));
    const run = runCli(['usage', `--prices=${file}`], { DATABASE_URL: h.db.url, LOG_LEVEL: 'silent' });
    expect((await run.exited).code).toBe(1);
    expect(run.stderr()).toContain(`--prices ${file} is not a price table`);
    expect(run.stderr()).toContain('models.m1.input');
  });

  it('rejects a bad --days value', async () => {
    const run = runCli(['usage', '--days=0'], { DATABASE_URL: h.db.url });
    // A value the command cannot take is a wrong invocation: exit 2 (docs: 0 done, 1 failed, 2 usage).
    expect((await run.exited).code).toBe(2);
    expect(run.stderr()).toContain('--days must be a whole number');
  });
});
