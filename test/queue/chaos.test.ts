import { describe, expect, it } from 'vitest';
import { runChaos } from '../../bench/chaos-core.ts';

describe('chaos (reduced)', () => {
  it('finishes every turn with no tool run twice or unapproved while workers are SIGKILLed and Postgres restarts, and loses no Slack event while the ingress is cut off from Postgres', async () => {
    const figures = await runChaos({
      turns: 20,
      workers: 2,
      kills: 3,
      restartPostgres: true,
      approveRatio: 0.75,
      arrivalMs: 6000,
      timeoutMs: 150_000,
      ingress: {
        events: 20,
        arrivalMs: 3000,
        cutAfterMs: 750,
        cutForMs: 1500,
        retryDelaysMs: [300, 1000, 2000],
        lateRedeliveries: 5,
      },
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
    // A Slack ingress that lost Postgres while events arrived: every event became exactly one turn.
    const ingress = figures.ingress;
    expect(ingress.sentDuringCut).toBeGreaterThan(0);
    expect(ingress.refused).toBeGreaterThan(0);
    expect(ingress.acknowledged).toBe(20);
    expect(ingress.lateAcknowledged).toBe(5);
    expect(ingress.lost).toBe(0);
    expect(ingress.duplicated).toBe(0);
    expect(ingress.workItems).toBe(20);
    expect(ingress.duplicateAnswers).toBe(0);
    expect(ingress.answered, `threads not holding exactly one answer: ${JSON.stringify(ingress.unanswered)}`).toBe(20);
  }, 200_000);
});
