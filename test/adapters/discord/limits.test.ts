import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS, type DiscordLimit } from '../../../src/adapters/discord/limits.ts';
import { autocompleteInteraction } from '../../fixtures/discord/payloads.ts';
import { DEFAULT_BUCKETS, FakeDiscord } from '../../fakes/discord/index.ts';
import { GLOBAL_PER_SECOND } from '../../fakes/discord/rate-limiter.ts';

/**
 * Every entry of LIMITS must have a witness: a request the fake Discord (which encodes the
 * documented limits independently) accepts at the limit and rejects one past it, or the fake's
 * own number for rate limits; Countersign's own pacing choices hold against the limits they pace
 * under. A new limit without a witness fails the first test.
 */
type Witness =
  | { kind: 'message'; body: (n: number) => Record<string, unknown> }
  | { kind: 'request'; send: (fake: FakeDiscord, n: number) => Promise<Response> }
  | { kind: 'fake-number'; value: () => number }
  | { kind: 'documented'; source: string }
  | { kind: 'choice'; holds: () => boolean };

const row = (buttons: number, idLength = 8, labelLength = 2) => ({
  type: 1,
  components: Array.from({ length: buttons }, (_, i) => ({
    type: 2,
    style: 1,
    label: 'L'.repeat(labelLength),
    custom_id: `${i}`.padEnd(idLength, 'c'),
  })),
});

function embedOfTotal(n: number) {
  const description = 'd'.repeat(Math.min(n, 4096));
  const fields: Array<{ name: string; value: string }> = [];
  let left = n - description.length;
  while (left > 0) {
    const value = 'v'.repeat(Math.min(1023, left - 1));
    fields.push({ name: 'f', value });
    left -= 1 + value.length;
  }
  return { description, fields };
}

const auth = (fake: FakeDiscord) => ({ Authorization: `Bot ${fake.token}`, 'Content-Type': 'application/json' });

const WITNESSES: Record<DiscordLimit, Witness> = {
  messageContent: { kind: 'message', body: (n) => ({ content: 'x'.repeat(n) }) },
  nonceLength: { kind: 'message', body: (n) => ({ nonce: 'n'.repeat(n) }) },
  customId: { kind: 'message', body: (n) => ({ components: [row(1, n)] }) },
  buttonLabel: { kind: 'message', body: (n) => ({ components: [row(1, 8, n)] }) },
  linkButtonUrl: {
    kind: 'message',
    body: (n) => {
      const url = 'https://example.com/'.padEnd(n, 'x');
      return { components: [{ type: 1, components: [{ type: 2, style: 5, label: 'Open', url }] }] };
    },
  },
  buttonsPerRow: { kind: 'message', body: (n) => ({ components: [row(n)] }) },
  actionRows: { kind: 'message', body: (n) => ({ components: Array.from({ length: n }, () => row(1)) }) },
  embedsPerMessage: {
    kind: 'message',
    body: (n) => ({ embeds: Array.from({ length: n }, () => ({ description: 'x' })) }),
  },
  embedTitle: { kind: 'message', body: (n) => ({ embeds: [{ title: 't'.repeat(n) }] }) },
  embedDescription: { kind: 'message', body: (n) => ({ embeds: [{ description: 'd'.repeat(n) }] }) },
  embedFields: {
    kind: 'message',
    body: (n) => ({ embeds: [{ fields: Array.from({ length: n }, () => ({ name: 'n', value: 'v' })) }] }),
  },
  embedFieldName: { kind: 'message', body: (n) => ({ embeds: [{ fields: [{ name: 'n'.repeat(n), value: 'v' }] }] }) },
  embedFieldValue: { kind: 'message', body: (n) => ({ embeds: [{ fields: [{ name: 'n', value: 'v'.repeat(n) }] }] }) },
  embedFooter: { kind: 'message', body: (n) => ({ embeds: [{ description: 'x', footer: { text: 'f'.repeat(n) } }] }) },
  embedTotal: { kind: 'message', body: (n) => ({ embeds: [embedOfTotal(n)] }) },
  autocompleteChoices: {
    kind: 'request',
    send: (fake, n) => {
      const payload = autocompleteInteraction(fake.scene, { name: 'skill', focused: 'name', partial: '' });
      fake.registerInteraction(payload);
      const choices = Array.from({ length: n }, (_, i) => ({ name: `c${i}`, value: `c${i}` }));
      return fetch(`${fake.restUrl}/v10/interactions/${payload.id as string}/${payload.token as string}/callback`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ type: 8, data: { choices } }),
      });
    },
  },
  threadName: {
    kind: 'request',
    send: async (fake, n) => {
      const starter = (await (
        await fetch(`${fake.restUrl}/v10/channels/${fake.scene.channelId}/messages`, {
          method: 'POST',
          headers: auth(fake),
          body: JSON.stringify({ content: 'starter' }),
        })
      ).json()) as { id: string };
      return fetch(`${fake.restUrl}/v10/channels/${fake.scene.channelId}/messages/${starter.id}/threads`, {
        method: 'POST',
        headers: auth(fake),
        body: JSON.stringify({ name: 'n'.repeat(n) }),
      });
    },
  },
  channelEditsPerWindow: {
    kind: 'fake-number',
    value: () => DEFAULT_BUCKETS['PATCH /channels/:channel_id/messages/:message_id']!.limit,
  },
  channelEditWindowSeconds: {
    kind: 'fake-number',
    value: () => DEFAULT_BUCKETS['PATCH /channels/:channel_id/messages/:message_id']!.windowSeconds,
  },
  globalRequestsPerSecond: { kind: 'fake-number', value: () => GLOBAL_PER_SECOND },
  interactionAckSeconds: {
    kind: 'documented',
    source: 'Interactions › Receiving and Responding: respond within 3 seconds',
  },
  interactionTokenMinutes: {
    kind: 'documented',
    source: 'Interactions › Followup Messages: tokens are valid for 15 minutes',
  },
  // One reply edited at this interval alone spends no more than its channel's edit window allows.
  editIntervalMs: {
    kind: 'choice',
    holds: () => 1000 / LIMITS.editIntervalMs <= LIMITS.channelEditsPerWindow / LIMITS.channelEditWindowSeconds,
  },
  // The bucket shapes themselves are held against Discord's windows in rate-limits.test.ts.
  channelEditBurst: { kind: 'choice', holds: () => LIMITS.channelEditBurst < LIMITS.channelEditsPerWindow },
  globalBurst: {
    kind: 'choice',
    holds: () => LIMITS.globalBurst + LIMITS.globalRefillPerSecond < LIMITS.globalRequestsPerSecond,
  },
  globalRefillPerSecond: { kind: 'choice', holds: () => LIMITS.globalRefillPerSecond < LIMITS.globalRequestsPerSecond },
  fieldSafeArgs: { kind: 'choice', holds: () => LIMITS.fieldSafeArgs < LIMITS.embedFieldValue },
  // Revoke buttons fill whole rows, and leave the message a row for nothing else.
  listedGrants: {
    kind: 'choice',
    holds: () =>
      LIMITS.listedGrants % LIMITS.buttonsPerRow === 0 &&
      LIMITS.listedGrants / LIMITS.buttonsPerRow < LIMITS.actionRows,
  },
  fullArgumentMessages: { kind: 'choice', holds: () => LIMITS.fullArgumentMessages >= 1 },
  // The fence, the language tag and the header line fit the margin.
  fullArgumentMargin: { kind: 'choice', holds: () => LIMITS.fullArgumentMargin < LIMITS.messageContent / 2 },
};

describe('LIMITS', () => {
  let fake: FakeDiscord;
  beforeAll(async () => {
    fake = await FakeDiscord.start({
      buckets: { 'POST /channels/:channel_id/messages': { limit: 1000, windowSeconds: 1 } },
    });
  });
  afterAll(async () => fake.close());

  it('has a witness for every limit, and every limit is a positive whole number', () => {
    for (const [name, value] of Object.entries(LIMITS)) {
      expect(WITNESSES[name as DiscordLimit], `no witness for ${name}`).toBeDefined();
      expect(Number.isInteger(value) && value > 0, name).toBe(true);
    }
  });

  const entries = Object.entries(LIMITS) as Array<[DiscordLimit, number]>;

  it.each(entries.filter(([name]) => WITNESSES[name].kind === 'message'))(
    '%s = %i: Discord accepts a message at the limit and rejects one past it',
    async (name, limit) => {
      const witness = WITNESSES[name] as Extract<Witness, { kind: 'message' }>;
      const send = (n: number) =>
        fetch(`${fake.restUrl}/v10/channels/${fake.scene.channelId}/messages`, {
          method: 'POST',
          headers: auth(fake),
          body: JSON.stringify({ content: 'x', ...witness.body(n) }),
        });
      const at = await send(limit);
      expect(at.status, JSON.stringify(await at.clone().json())).toBe(200);
      const over = await send(limit + 1);
      expect(over.status).toBe(400);
      expect(((await over.json()) as { code: number }).code).toBe(50035);
    },
  );

  it.each(entries.filter(([name]) => WITNESSES[name].kind === 'request'))(
    '%s = %i: Discord accepts a request at the limit and rejects one past it',
    async (name, limit) => {
      const witness = WITNESSES[name] as Extract<Witness, { kind: 'request' }>;
      expect((await witness.send(fake, limit)).ok).toBe(true);
      expect((await witness.send(fake, limit + 1)).status).toBe(400);
    },
  );

  it.each(entries.filter(([name]) => WITNESSES[name].kind === 'choice'))(
    "%s = %i, Countersign's choice, stays within the limits it paces under",
    (name) => {
      expect((WITNESSES[name] as Extract<Witness, { kind: 'choice' }>).holds()).toBe(true);
    },
  );

  it.each(entries.filter(([name]) => WITNESSES[name].kind === 'fake-number'))(
    '%s = %i matches the budget the fake Discord enforces',
    (name, limit) => {
      expect((WITNESSES[name] as Extract<Witness, { kind: 'fake-number' }>).value()).toBe(limit);
    },
  );
});
