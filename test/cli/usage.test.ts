import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { runCli } from '../helpers/processes.ts';
import { ZERO_USAGE, type ModelProvider, type ModelRound } from '../../src/agent/model.ts';

/** A provider that reports fixed token counts, so the summary's sums are known. */
const counting: ModelProvider = {
  name: 'counting',
  model: 'm1',
  async streamRound(_request, callbacks): Promise<ModelRound> {
    callbacks.onText('ok');
    return {
      text: 'ok',
      toolCalls: [],
      stopReason: 'end_turn',
      usage: { ...ZERO_USAGE, inputTokens: 100, outputTokens: 10, cacheReadTokens: 80, cacheWriteTokens: 5 },
      provider: 'counting',
      model: 'm1',
      fallbacks: [],
    };
  },
};

describe('countersign usage', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ provider: counting });
  });
  afterAll(() => h.stop());

  it('summarises tokens per day and conversation with totals', async () => {
    for (const text of ['a', 'b']) await h.settled((await h.say('usage-1', text)).id);
    await h.settled((await h.say('usage-2', 'c')).id);
    const run = runCli(['usage', '--days=1'], { DATABASE_URL: h.db.url, LOG_LEVEL: 'silent' });
    expect((await run.exited).code, run.stderr()).toBe(0);
    const lines = run.stdout().trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^day\s+conversation\s+provider\s+turns\s+rounds\s+input\s+output\s+cache read\s+cache write$/,
    );
    expect(lines[1]).toMatch(/^\d{4}-\d\d-\d\d\s+usage-1\s+counting\s+2\s+2\s+200\s+20\s+160\s+10$/);
    expect(lines[2]).toMatch(/^\d{4}-\d\d-\d\d\s+usage-2\s+counting\s+1\s+1\s+100\s+10\s+80\s+5$/);
    expect(lines[3]).toMatch(/^total\s+3\s+3\s+300\s+30\s+240\s+15$/);
  });

  it('rejects a bad --days value', async () => {
    const run = runCli(['usage', '--days=0'], { DATABASE_URL: h.db.url });
    expect((await run.exited).code).toBe(1);
    expect(run.stderr()).toContain('--days must be a whole number');
  });
});
