import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { parseStopButton } from '../../src/core/buttons.ts';

describe('the Stop button', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      env: { APPROVERS: 'test:U2' },
      script: {
        rules: [
          { match: '^long', rounds: [{ text: 'word '.repeat(400), chunkSize: 5, delayMs: 20 }] },
          { rounds: [{ text: 'after: {{lastUser}}' }] },
        ],
      },
    });
  });
  afterAll(() => h.stop());

  const liveReply = (channel: string) =>
    waitFor(
      async () => [...h.outbound.messages.values()].find((m) => m.channel === channel && m.buttons?.length),
      10_000,
      'the streaming reply with its Stop button',
    );

  it('is offered on a streaming reply and stops the turn promptly for the requester', async () => {
    const item = await h.say('stop-1', 'long answer please');
    const reply = await liveReply('stop-1');
    const button = reply.buttons!.find((b) => b.label === 'Stop')!;
    expect(parseStopButton(button.value)).toBe(item.id);
    expect(await h.app.stopTurn(item.id, { platform: 'test', userId: 'U1' })).toEqual({ ok: true });
    const settled = await h.settled(item.id, 10_000);
    expect(settled.status).toBe('cancelled');
    const final = h.outbound.messages.get(reply.id)!;
    expect(final.text).toMatch(/word _?\n\n_Stopped by test:U1\._$|_Stopped by test:U1\._$/);
    expect(final.text.length).toBeLessThan(2000); // it did not run to the end
    expect(final.buttons).toEqual([]);
    // The conversation goes on: the next message runs and sees the stopped turn in its history.
    const next = await h.say('stop-1', 'next');
    expect((await h.settled(next.id)).result?.text).toBe('after: next');
  });

  it('lets an approver stop someone else’s turn but not a bystander', async () => {
    const item = await h.say('stop-2', 'long again');
    await liveReply('stop-2');
    expect(await h.app.stopTurn(item.id, { platform: 'test', userId: 'U999' })).toEqual({
      ok: false,
      reason: 'Only the person who asked, or an approver, can stop this.',
    });
    expect(await h.app.stopTurn(item.id, { platform: 'test', userId: 'U2' })).toEqual({ ok: true });
    expect((await h.settled(item.id, 10_000)).status).toBe('cancelled');
    expect(await h.app.stopTurn(item.id, { platform: 'test', userId: 'U2' })).toEqual({
      ok: false,
      reason: 'This turn has already finished.',
    });
  });
});
