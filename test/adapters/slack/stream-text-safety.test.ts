import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import { appMention, eventCallback, eventsApiEnvelope } from '../../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { disguisesTarget, revealDisguisedLinks } from '../../../src/adapters/slack/format/links.ts';
import { markdownToMrkdwn } from '../../../src/adapters/slack/format/index.ts';

const CHANNEL = 'C0OPS00001';
const ALICE = 'U0ALICE001';
/** What a model might write: a broadcast, a user ping, a group ping, and a link whose text lies. */
const HOSTILE =
  'Heads up <!channel> and <!here>, ping <@U0BOSS0001> and <!subteam^S0ADMINS>: log in at [https://intranet.example/login](https://evil.example/steal) — or [the docs](https://docs.example).';

describe('links whose text reads as another address', () => {
  it('are recognised by host, not by path or scheme', () => {
    expect(disguisesTarget('https://intranet.example/login', 'https://evil.example/steal')).toBe(true);
    expect(disguisesTarget('intranet.example', 'https://evil.example')).toBe(true);
    expect(disguisesTarget('www.docs.example', 'https://docs.example/a/b')).toBe(false);
    expect(disguisesTarget('the docs', 'https://evil.example')).toBe(false);
    expect(revealDisguisedLinks('[a.example](https://b.example)')).toBe('a.example (https://b.example)');
    expect(markdownToMrkdwn('[a.example](https://b.example)')).toBe('a.example (<https://b.example>)');
    expect(markdownToMrkdwn('[the docs](https://b.example)')).toBe('<https://b.example|the docs>');
  });
});

for (const streaming of ['auto', 'off'] as const) {
  describe(`model text on Slack with SLACK_STREAMING=${streaming}`, () => {
    let fake: FakeSlack;
    let h: Harness;
    beforeAll(async () => {
      fake = await FakeSlack.start();
      h = await startHarness({
        script: { rules: [{ rounds: [{ text: HOSTILE, chunkSize: 7, delayMs: 5 }] }] },
        env: fake.env({ SLACK_STREAMING: streaming }),
      });
      await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
    });
    afterAll(async () => {
      await h.stop();
      await fake.close();
    });

    it('pings nobody and never lets link text disguise its target', async () => {
      const m = appMention({ user: ALICE, channel: CHANNEL, text: `<@${fake.botUserId}> say it` });
      await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, m)));
      const answer = await waitFor(
        async () =>
          fake.messages.find(
            (x) =>
              x.thread_ts === m.ts && x.user === fake.botUserId && x.text.includes('or') && x.text.includes('docs'),
          ),
        20_000,
        'the answer',
      );
      await waitFor(async () => (answer.streaming !== 'in_progress' ? true : undefined), 20_000, 'the stream to end');
      const shown = answer.text;
      if (streaming === 'auto') expect(fake.calls.some((c) => c.method === 'chat.startStream')).toBe(true);
      // Every version the message ever had, not only the last: a stream cannot take text back.
      for (const version of [shown, ...answer.history.map((v) => String(v.text ?? ''))]) {
        expect(version).not.toMatch(/<!(channel|here|subteam)/);
        expect(version).not.toMatch(/<@U0BOSS0001>/);
        expect(version).not.toMatch(/\[https:\/\/intranet\.example\/login\]\(https:\/\/evil\.example/);
        expect(version).not.toMatch(/<https:\/\/evil\.example\/steal\|https:\/\/intranet/);
      }
      expect(shown).toMatch(/evil\.example\/steal/);
    });
  });
}
