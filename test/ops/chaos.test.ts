import { describe, expect, it } from 'vitest';
import { runChaos } from '../../bench/chaos-core.ts';

describe('chaos (reduced)', () => {
  it('finishes every turn with no tool run twice or unapproved while workers are SIGKILLed and Postgres restarts', async () => {
    const figures = await runChaos({
      turns: 20,
      workers: 2,
      kills: 3,
      restartPostgres: true,
      approveRatio: 0.75,
      arrivalMs: 6000,
      timeoutMs: 150_000,
    });
    expect(figures.failures).toEqual([]);
    expect(figures.finished).toBe(20);
    expect(figures.effectsRunTwice).toBe(0);
    expect(figures.effectsUnapproved).toBe(0);
    expect(figures.incompleteMessages).toEqual([]);
    expect(figures.completeMessages).toBe(20);
    expect(figures.kills).toBe(3);
    expect(figures.postgresRestarts).toBe(1);
    // Every approved call ran exactly once, except those a kill left with an unknown outcome (never re-run).
    expect(figures.effectsRunOnce + figures.outcomeUnknown).toBeGreaterThanOrEqual(figures.approved);
  }, 200_000);
});
