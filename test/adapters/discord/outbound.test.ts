import { RateBuckets } from '../../../src/reply/rate-bucket.ts';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DiscordCardRenderer } from '../../../src/adapters/discord/cards.ts';
import { createRest, DiscordOutbound } from '../../../src/adapters/discord/outbound.ts';
import { channelEditBucketKey } from '../../../src/adapters/discord/rate-limits.ts';
import type { ApprovalCard } from '../../../src/core/approval-card.ts';
import type { ReplyTarget } from '../../../src/core/reply-target.ts';
import { migrate } from '../../../src/db/migrate.ts';
import { createLogger } from '../../../src/log.ts';
import { FakeDiscord } from '../../fakes/discord/index.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';

const NONCE = 'N'.repeat(32);
const SUPPRESS_EMBEDS = 1 << 2;

function manyCalls(n: number): ApprovalCard {
  return {
    ...card('pending'),
    calls: Array.from({ length: n }, (_, index) => ({
      index,
      id: `c${index}`,
      tool: 'restart_service',
      argsPretty: `{"service":"s${index}"}`,
      risk: 'high' as const,
    })),
  };
}

function card(state: ApprovalCard['state'], decisions?: ApprovalCard['decisions']): ApprovalCard {
  return {
    envelopeId: 'env-1',
    nonce: NONCE,
    kind: 'tools',
    calls: [
      { index: 0, id: 'c0', tool: 'restart_service', argsPretty: '{"service":"api"}', risk: 'high' },
      { index: 1, id: 'c1', tool: 'write_file', argsPretty: '{"path":"x"}', risk: 'medium' },
    ],
    planHashPrefix: 'abcdef12',
    expiresAt: new Date(Date.now() + 600_000),
    requesterLabel: '<@1234567890>',
    state,
    ...(decisions ? { decisions } : {}),
  };
}

describe('DiscordOutbound (REST only, against the fake Discord)', () => {
  let fake: FakeDiscord;
  let db: TestDatabase;
  let pool: pg.Pool;
  let outbound: DiscordOutbound;
  let cards: DiscordCardRenderer;
  let target: ReplyTarget;

  beforeAll(async () => {
    fake = await FakeDiscord.start();
    db = await createTestDatabase('discord_out');
    await migrate(db.url, createLogger('silent'));
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    // pool.end() can resolve while a connection is still closing; DROP … WITH (FORCE) then ends it.
    pool.on('error', () => undefined);
    // As configured: the REST base without /v10.
    outbound = new DiscordOutbound(
      createRest(fake.token, fake.restUrl),
      new RateBuckets(pool),
      fake.scene.applicationId,
    );
    cards = new DiscordCardRenderer(outbound);
    target = { platform: 'discord', channel: fake.scene.channelId };
  });
  afterAll(async () => {
    await pool.end();
    await fake.close();
    await db.drop();
  });

  it('posts and edits a message whose mentions cannot ping', async () => {
    const { messageId } = await outbound.post(target, 'hi @everyone');
    await outbound.edit(target, messageId, 'bye <@42> and @here');
    const stored = fake.message(messageId)!;
    expect(stored.history.map((v) => v.content)).toEqual(['hi @\u200beveryone', 'bye <@\u200b42> and @\u200bhere']);
    expect(stored.allowedMentions).toEqual({ parse: [] });
    expect(stored.pings).toMatchObject({ everyone: false, users: [], roles: [] });
  });

  it('posts a work item’s placeholder once however many attempts post it (nonce, enforce_nonce)', async () => {
    const channel = fake.createThread({ name: 'killed-mid-post' }).id as string;
    const tagged = { platform: 'discord', channel };
    const workItemId = '6f1d2c3b-4a59-4e68-8f7a-0123456789ab';
    // The first attempt posted and was killed before recording the id; the next one posts again.
    const first = await outbound.postTagged(tagged, '…', workItemId);
    const again = await outbound.postTagged(tagged, '…', workItemId);
    expect(again.messageId).toBe(first.messageId);
    expect(fake.messagesIn(channel).map((m) => m.message.id)).toEqual([first.messageId]);
    // Another work item's placeholder in the same channel is a message of its own.
    const other = await outbound.postTagged(tagged, '…', '0f1d2c3b-4a59-4e68-8f7a-0123456789ab');
    expect(other.messageId).not.toBe(first.messageId);
    expect(fake.messagesIn(channel)).toHaveLength(2);
  });

  it('asks Discord not to preview links on every reply it posts and edits (SUPPRESS_EMBEDS)', async () => {
    const since = fake.requests.length;
    const { messageId } = await outbound.post(target, 'see https://evil.example/?secret=1');
    await outbound.edit(target, messageId, 'now https://evil.example/?secret=2', {
      buttons: [{ label: 'Stop', value: 'stop:t1', style: 'danger' }],
    });
    const sent = fake.requests.slice(since).filter((r) => r.method === 'POST' || r.method === 'PATCH');
    expect(sent.map((r) => [r.method, r.status, (r.body as { flags?: number }).flags])).toEqual([
      ['POST', 200, SUPPRESS_EMBEDS],
      ['PATCH', 200, SUPPRESS_EMBEDS],
    ]);
    expect(fake.message(messageId)!.history.map((v) => v.flags)).toEqual([SUPPRESS_EMBEDS, SUPPRESS_EMBEDS]);
  });

  it('is checked by a fake that refuses flags an edit may not set, as Discord does', async () => {
    const { messageId } = await outbound.post(target, 'x');
    const res = await fetch(`${fake.restUrl}/v10/channels/${target.channel}/messages/${messageId}`, {
      method: 'PATCH',
      headers: { Authorization: `Bot ${fake.token}`, 'Content-Type': 'application/json' },
      // SUPPRESS_NOTIFICATIONS can be set on create only.
      body: JSON.stringify({ content: 'y', flags: 1 << 12 }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: number }).code).toBe(50035);
  });

  it('takes one rate token per call, and none for an edit whose token the stream already reserved', async () => {
    const channel = fake.scene.dmChannelId;
    const takes: string[] = [];
    // Counts the bucket statements for this channel; everything else passes through untouched.
    const counting = new Proxy(pool, {
      get(target, prop, receiver) {
        if (prop !== 'query') return Reflect.get(target, prop, receiver);
        return (text: string, params?: unknown[]) => {
          if (params?.[0] === channelEditBucketKey(channel)) takes.push(String(params[0]));
          return target.query(text, params);
        };
      },
    });
    const dm = new DiscordOutbound(
      createRest(fake.token, fake.restUrl),
      new RateBuckets(counting),
      fake.scene.applicationId,
    );
    const to: ReplyTarget = { platform: 'discord', channel };
    const { messageId } = await dm.post(to, 'one');
    await dm.edit(to, messageId, 'two');
    expect(takes).toHaveLength(2);
    await dm.reserve(to);
    await dm.edit(to, messageId, 'three', { reserved: true });
    expect(takes).toHaveLength(3);
    expect(fake.message(messageId)!.message.content).toBe('three');
  });

  it('renders reply buttons as action rows whose custom_ids are the neutral values', async () => {
    const { messageId } = await outbound.post(target, 'working…', {
      buttons: [{ label: 'Stop', value: 'stop:0b0f3c62-7f0e-4a8e-9d6a-2f6c1d9e4b11', style: 'danger' }],
    });
    expect(fake.message(messageId)!.message.components).toEqual([
      {
        type: 1,
        components: [
          expect.objectContaining({
            type: 2,
            style: 4,
            label: 'Stop',
            custom_id: 'stop:0b0f3c62-7f0e-4a8e-9d6a-2f6c1d9e4b11',
          }),
        ],
      },
    ]);
    await outbound.edit(target, messageId, 'done', { buttons: [] });
    expect(fake.message(messageId)!.message.components).toEqual([]);
  });

  it('surfaces a 429 at once as an error carrying retryAfterMs, without retrying it itself', async () => {
    const { messageId } = await outbound.post(target, 'v1');
    const since = fake.requests.length;
    fake.rateLimits.failNext('PATCH /channels/:channel_id/messages/:message_id', { count: 1, retryAfterSeconds: 2 });
    const error = await outbound.edit(target, messageId, 'v2').then(
      () => undefined,
      (e: unknown) => e as Error & { retryAfterMs?: number },
    );
    expect(error?.retryAfterMs).toBeGreaterThanOrEqual(1000);
    // The stream, not the REST queue, decides when (and with which text) to try again.
    expect(fake.requests.slice(since).filter((r) => r.method === 'PATCH')).toHaveLength(1);
    expect(fake.message(messageId)!.message.content).toBe('v1');
  });

  it('shows an approval card with one Approve/Deny pair per call and the neutral values', async () => {
    const { messageId } = await cards.show(target, card('pending'));
    const message = fake.message(messageId)!.message;
    const ids = (message.components as Array<{ components: Array<{ custom_id: string }> }>).flatMap((r) =>
      r.components.map((b) => b.custom_id),
    );
    expect(ids).toEqual([
      `${NONCE}.a0`,
      `${NONCE}.d0`,
      `${NONCE}.a1`,
      `${NONCE}.d1`,
      `${NONCE}.A`,
      `${NONCE}.D`,
      `${NONCE}.R`,
    ]);
    expect(JSON.stringify(message.embeds)).toContain('restart_service');
  });

  it('updates the card in place once decided, leaving no buttons', async () => {
    const { messageId } = await cards.show(target, card('pending'));
    const again = await cards.show(
      target,
      card('decided', [
        { index: 0, approved: true, by: 'alice' },
        { index: 1, approved: false, by: 'alice' },
      ]),
      messageId,
    );
    expect(again.messageId).toBe(messageId);
    const stored = fake.message(messageId)!;
    expect(stored.history).toHaveLength(2);
    expect(stored.message.components).toEqual([]);
    expect(stored.message.content).toMatch(/Decided.*alice/);
  });

  it('shows a card too big for one message as several, and updates them all by the one id it returns', async () => {
    const { messageId } = await cards.show(target, manyCalls(6));
    const ids = messageId.split(',');
    expect(ids).toHaveLength(2);
    await cards.show(
      target,
      { ...manyCalls(6), state: 'decided', decisions: [{ index: 0, approved: true, by: 'alice' }] },
      messageId,
    );
    for (const id of ids) expect(fake.message(id)!.message.components).toEqual([]);
  });

  it('takes back the messages it posted when a later one fails, so a retry leaves no half card', async () => {
    const since = fake.requests.length;
    fake.rateLimits.failNext('POST /channels/:channel_id/messages', { after: 1, retryAfterSeconds: 1 });
    const error = await cards.show(target, manyCalls(6)).then(
      () => undefined,
      (e: unknown) => e as Error & { retryAfterMs?: number },
    );
    expect(error?.retryAfterMs).toBeGreaterThanOrEqual(1000);
    const posts = fake.requests.slice(since).filter((r) => r.method === 'POST' && r.status === 200);
    expect(posts).toHaveLength(1);
    expect(fake.message((posts[0]!.response as { id: string }).id)!.deleted).toBe(true);
  });
});
