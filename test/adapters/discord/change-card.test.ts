/**
 * The change card on Discord (issue #33): Merge into <base> / Discard / Full diff within Discord's
 * component and embed limits as the fake Discord checks them, and Full diff's file as an attachment.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DiscordAPIError } from 'discord.js';
import { DiscordCardRenderer } from '../../../src/adapters/discord/cards.ts';
import { attachmentName, createRest, DiscordOutbound } from '../../../src/adapters/discord/outbound.ts';
import type { ApprovalCard } from '../../../src/core/approval-card.ts';
import { fullDiffValue } from '../../../src/core/buttons.ts';
import type { ReplyTarget } from '../../../src/core/reply-target.ts';
import { migrate } from '../../../src/db/migrate.ts';
import { createLogger } from '../../../src/log.ts';
import { RateBuckets } from '../../../src/reply/rate-bucket.ts';
import type { Json } from '../../fixtures/discord/objects.ts';
import { FakeDiscord } from '../../fakes/discord/index.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';

const NONCE = 'Qa7Zx9_k2-Qa7Zx9_k2-Qa7Zx9_k2-Qa';

function changeCard(base = 'main', overrides: Partial<ApprovalCard> = {}): ApprovalCard {
  const files = Array.from({ length: 300 }, (_, i) => `M  src/module-${i}/index.ts  +${i} −${i % 7}`);
  return {
    envelopeId: 'env-change',
    nonce: NONCE,
    kind: 'tools',
    calls: [
      {
        index: 0,
        id: 'call-merge',
        tool: 'merge_change',
        argsPretty: JSON.stringify({ repo: 'api', branch: 'countersign/1a2b3c4d', commit: 'f'.repeat(40) }, null, 2),
        risk: 'high',
        detail: `300 files changed\n${files.join('\n')}`,
        who: 'Needs an approver other than the requester (rule: merge)',
        grant: 'Always allow `merge_change` in this channel',
      },
    ],
    planHashPrefix: 'c0ffee12',
    expiresAt: new Date(Date.now() + 3_600_000),
    requesterLabel: '<@1234567890>',
    state: 'pending',
    change: { approveLabel: `Merge into ${base}`, denyLabel: 'Discard', fullDiffValue: fullDiffValue(NONCE) },
    ...overrides,
  };
}

type Button = { label: string; custom_id: string; style: number };
const buttonsOf = (message: Json) =>
  ((message.components as Json[]) ?? []).flatMap((row) => (row.components as Button[]) ?? []);

describe('the change card and Full diff on Discord', () => {
  let fake: FakeDiscord;
  let db: TestDatabase;
  let pool: pg.Pool;
  let outbound: DiscordOutbound;
  let cards: DiscordCardRenderer;
  let target: ReplyTarget;

  beforeAll(async () => {
    fake = await FakeDiscord.start();
    db = await createTestDatabase('discord_change');
    await migrate(db.url, createLogger('silent'));
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    // pool.end() can resolve while a connection is still closing; DROP … WITH (FORCE) then ends it.
    pool.on('error', () => undefined);
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

  it('posts Merge into <base> / Discard / Full diff, and no Always allow, within Discord limits', async () => {
    const { messageId } = await cards.show(target, changeCard('main'));
    // The fake checked content, embeds and components against Discord's limits before storing it.
    const message = fake.message(messageId)!.message;
    const buttons = buttonsOf(message);
    expect(buttons.map((b) => b.label)).toEqual(['Merge into main', 'Discard', 'Deny with reason…', 'Full diff']);
    expect(buttons.map((b) => b.custom_id)).toEqual([`${NONCE}.A`, `${NONCE}.D`, `${NONCE}.R`, `${NONCE}.V`]);
    // success, danger, secondary, secondary
    expect(buttons.map((b) => b.style)).toEqual([3, 4, 2, 2]);
    expect(JSON.stringify(message)).not.toContain('Always allow');
    expect((message.content as string).length).toBeLessThanOrEqual(2000);
  });

  it('keeps a long base branch name inside the label limit', async () => {
    const base = `release/${'very-long-branch-name-'.repeat(10)}`;
    const { messageId } = await cards.show(target, changeCard(base));
    const merge = buttonsOf(fake.message(messageId)!.message)[0]!;
    expect(merge.label.length).toBeLessThanOrEqual(80);
    expect(merge.label).toMatch(/^Merge into release\/very-long-branch-name-.*…$/);
    expect(merge.custom_id).toBe(`${NONCE}.A`);
  });

  it('loses its buttons once decided', async () => {
    const pending = changeCard();
    const { messageId } = await cards.show(target, pending);
    await cards.show(
      target,
      { ...pending, state: 'decided', decisions: [{ index: 0, approved: false, by: '<@42>' }], decidedAt: new Date() },
      messageId,
    );
    expect(buttonsOf(fake.message(messageId)!.message)).toEqual([]);
  });

  it('shares a 2 MB diff as an attachment, every byte, with the comment as text', async () => {
    const line = Buffer.from('+const value = "a line of the diff";\n');
    const content = Buffer.alloc(2 * 1024 * 1024);
    for (let at = 0; at < content.length; at += line.length) line.copy(content, at);
    const since = fake.requests.length;
    await outbound.upload(target, {
      filename: 'countersign-ffffff.diff',
      content,
      comment: 'Full diff of `countersign/1a2b3c4d` @everyone',
    });
    const request = await fake.waitForRequest({ route: 'POST /channels/:channel_id/messages', since });
    expect(request.status).toBe(200);
    expect(request.files).toEqual([{ index: 0, filename: 'countersign-ffffff.diff', size: 2 * 1024 * 1024 }]);
    const upload = fake.uploads.at(-1)!;
    expect(upload.bytes.equals(content)).toBe(true);
    expect(upload).toMatchObject({ channelId: fake.scene.channelId, filename: 'countersign-ffffff.diff' });
    const stored = fake.message(upload.messageId)!;
    expect(stored.message.attachments).toEqual([
      expect.objectContaining({ filename: 'countersign-ffffff.diff', size: 2 * 1024 * 1024 }),
    ]);
    // The comment is the message's text, and it pings no one.
    expect(stored.message.content).toContain('Full diff of');
    expect(stored.pings).toEqual({ users: [], roles: [], everyone: false });
  });

  it('refuses a file over the 10 MiB attachment limit before sending it', async () => {
    const since = fake.requests.length;
    await expect(
      outbound.upload(target, { filename: 'huge.diff', content: Buffer.alloc(10 * 1024 * 1024 + 1) }),
    ).rejects.toThrow(/at most 10 MiB/);
    expect(fake.requests.length).toBe(since);
  });

  it('fails with Missing Access (50001) in a channel the bot cannot see, and posts nothing', async () => {
    fake.world.botLacksAccess.add(fake.world.opsChannelId);
    const before = fake.uploads.length;
    const failed = await outbound
      .upload(
        { platform: 'discord', channel: fake.world.opsChannelId },
        { filename: 'x.diff', content: Buffer.from('+x\n') },
      )
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(failed).toBeInstanceOf(DiscordAPIError);
    expect((failed as DiscordAPIError).code).toBe(50001);
    expect((failed as DiscordAPIError).status).toBe(403);
    expect(fake.uploads.length).toBe(before);
  });

  it('names attachments with safe characters only, keeping the extension', () => {
    expect(attachmentName('countersign-1a2b.diff')).toBe('countersign-1a2b.diff');
    expect(attachmentName('../../etc/pass wd.diff')).toBe('_.._etc_pass_wd.diff');
    expect(attachmentName('.hidden')).toBe('hidden');
    const long = attachmentName(`${'x'.repeat(300)}.diff`);
    expect(long.length).toBe(100);
    expect(long.endsWith('.diff')).toBe(true);
  });
});
