import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTurn, type TurnDeps } from '../../src/agent/loop.ts';
import { ScriptedProvider } from '../../src/agent/providers/scripted.ts';
import { loadCheckpoint } from '../../src/agent/turn-store.ts';
import type { ReplySink } from '../../src/reply/reply-sink.ts';
import { initialTurnState } from '../../src/queue/tasks/run-work-item.ts';
import { createLogger } from '../../src/log.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';

/** A reply sink that only keeps the text (this test is about checkpoints, not delivery). */
function memorySink(): ReplySink {
  let text = '';
  return {
    get text() {
      return text;
    },
    snapshot: () => ({ messageIds: [], sealed: [], carry: '' }),
    restoreText: (t) => void (text = t),
    beginRound: () => undefined,
    restartRound: () => undefined,
    append: (d) => void (text += d),
    setStatus: () => undefined,
    finish: async (t) => void (text = t ?? text),
  };
}

describe('the safe point at a final answer', () => {
  let h: Harness;
  // An ingress: nothing runs the queued item but this test.
  beforeAll(async () => (h = await startHarness({ role: 'ingress' })));
  afterAll(() => h.stop());

  it('leaves no checkpoint that would make a replay ask the model again for an answer it gave', async () => {
    const item = await h.say('final-crash', 'hello', { mode: 'steer' });
    const provider = new ScriptedProvider({ rules: [{ rounds: [{ text: 'hello back' }] }] });
    const deps = (followUps: TurnDeps['followUps']): TurnDeps => ({
      db: h.app.pool,
      provider,
      tools: h.app.tools,
      sink: memorySink(),
      settings: { maxRounds: 4, emptyRoundRetries: 1, maxTokens: 1000 },
      log: createLogger('silent'),
      signal: new AbortController().signal,
      followUps,
    });
    const ctx = {
      workItemId: item.id,
      conversationId: item.conversationId,
      requester: item.requester,
      system: '',
      history: [],
    };
    // The worker dies at the safe point after the answer was written (before it was delivered).
    await expect(
      runTurn(
        ctx,
        initialTurnState(item),
        deps(async (_state, at) => {
          if (at === 'final') throw new Error('SIGKILL');
          return 'none';
        }),
      ),
    ).rejects.toThrow('SIGKILL');
    // Another worker takes the turn over from whatever was checkpointed.
    const checkpoint = await loadCheckpoint(h.app.pool, item.id);
    expect(checkpoint?.messages.some((m) => m.role === 'assistant') ?? false).toBe(false);
    const replay = await runTurn(
      ctx,
      checkpoint ?? initialTurnState(item),
      deps(async () => 'none'),
    );
    expect(replay).toMatchObject({ kind: 'final', text: 'hello back' });
  });
});
