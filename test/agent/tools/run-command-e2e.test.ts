import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import type { Script } from '../../../src/agent/providers/scripted.ts';

const script: Script = {
  rules: [
    {
      rounds: [
        {
          toolCalls: [
            { name: 'run_command', args: { command: ['sh', '-c', 'echo ran >> runs.log; yes y | head -c 100000'] } },
          ],
        },
        { text: 'Output: {{lastToolResult}}' },
      ],
    },
  ],
};

describe.each([
  ['off', 'false'],
  ['on', 'true'],
])('run_command %s', (state, enabled) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ script, env: { ENABLE_RUN_COMMAND: enabled } });
  });
  afterAll(() => h.stop());

  it(
    state === 'off'
      ? 'is unavailable and the model is told so'
      : 'asks for approval with the exact command, then runs once with capped output',
    async () => {
      const item = await h.say('cmd', 'run it');
      if (state === 'off') {
        const done = await h.settled(item.id);
        expect(done.result?.text).toMatch(/^Output: There is no tool named "run_command"/);
        return;
      }
      expect((await h.settled(item.id)).status).toBe('awaiting_approval');
      const envelope = await waitFor(
        async () =>
          (
            await h.app.pool.query(
              `SELECT nonce, card_message_id FROM countersign.approval_envelopes WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
              [item.id],
            )
          ).rows[0] as { nonce: string; card_message_id: string } | undefined,
        10_000,
        'the card',
      );
      const card = h.outbound.messages.get(envelope.card_message_id)!.text;
      expect(card).toContain("$ sh -c 'echo ran >> runs.log; yes y | head -c 100000'\nin: . (workspace root)");
      expect(card).toContain('risk 🔴 high');
      const click = await h.app.approvals.click(`${envelope.nonce}.A`, { platform: 'test', userId: 'U1' });
      if (!click.ok || !('continuation' in click)) throw new Error('expected a continuation');
      const done = await h.settled(click.continuation.id);
      expect(done.result?.text).toContain('exit code 0');
      expect(done.result?.text).toContain('[stdout truncated: kept the first 65536 bytes, dropped 34464]');
      const { readFileSync } = await import('node:fs');
      expect(readFileSync(`${h.config.AGENT_WORKSPACE_ROOT}/runs.log`, 'utf8')).toBe('ran\n');
    },
  );
});
