/**
 * The change card on Slack (issue #33): Merge into <base> / Discard / Full diff, within Block Kit's
 * limits as the fake Slack checks them, and Full diff's file shared by Slack's external upload.
 */
import type { KnownBlock } from '@slack/web-api';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slackErrorOf } from '../../../src/adapters/slack/api-errors.ts';
import { SlackCardRenderer } from '../../../src/adapters/slack/cards.ts';
import { createWebClient, SlackOutbound } from '../../../src/adapters/slack/outbound.ts';
import type { ApprovalCard } from '../../../src/core/approval-card.ts';
import { fullDiffValue } from '../../../src/core/buttons.ts';
import type { ReplyTarget } from '../../../src/core/reply-target.ts';
import { migrate } from '../../../src/db/migrate.ts';
import { createLogger } from '../../../src/log.ts';
import { RateBuckets } from '../../../src/reply/rate-bucket.ts';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';

const NONCE = 'Qa7Zx9_k2-Qa7Zx9_k2-Qa7Zx9_k2-Qa';
const CHANNEL = 'C0CHANGE01';
const THREAD = '1700000000.000100';

/** What the core sends for a change: one merge_change call, a summary of the files, the grant it would not offer. */
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
    requesterLabel: '<@U0ALICE001>',
    state: 'pending',
    change: { approveLabel: `Merge into ${base}`, denyLabel: 'Discard', fullDiffValue: fullDiffValue(NONCE) },
    ...overrides,
  };
}

type Button = { action_id: string; value: string; text: { text: string }; style?: string };
const buttonsOf = (blocks: unknown[]) =>
  (blocks as KnownBlock[]).flatMap((b) => (b.type === 'actions' ? (b.elements as Button[]) : []));

describe('the change card and Full diff on Slack', () => {
  let fake: FakeSlack;
  let db: TestDatabase;
  let pool: pg.Pool;
  let outbound: SlackOutbound;
  let cards: SlackCardRenderer;
  const target: ReplyTarget = { platform: 'slack', channel: CHANNEL, thread: THREAD, workspace: 'T0TEAM0001' };

  beforeAll(async () => {
    fake = await FakeSlack.start({ scopes: ['chat:write', 'files:write', 'im:write'] });
    db = await createTestDatabase('slack_change');
    await migrate(db.url, createLogger('silent'));
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    // pool.end() can resolve while a connection is still closing; DROP … WITH (FORCE) then ends it.
    pool.on('error', () => undefined);
    outbound = new SlackOutbound(createWebClient(fake.botToken, fake.apiUrl), new RateBuckets(pool), 50);
    cards = new SlackCardRenderer(outbound);
    // The conversation the card and the file go to.
    await outbound.post({ platform: 'slack', channel: CHANNEL }, 'please change the api');
  });
  afterAll(async () => {
    await pool.end();
    await fake.close();
    await db.drop();
  });

  it('posts Merge into <base> / Discard / Full diff, and no Always allow, within Block Kit limits', async () => {
    const { messageId } = await cards.show(target, changeCard('main'));
    // The fake checked every block against Slack's limits before storing the message.
    const posted = fake.botMessages(CHANNEL, THREAD).find((m) => m.ts === messageId)!;
    expect(posted).toBeDefined();
    const buttons = buttonsOf(posted.blocks);
    expect(buttons.map((b) => b.text.text)).toEqual(['Merge into main', 'Discard', 'Deny with reason…', 'Full diff']);
    expect(buttons.map((b) => b.value)).toEqual([`${NONCE}.A`, `${NONCE}.D`, `${NONCE}.R`, `${NONCE}.V`]);
    expect(buttons.map((b) => b.style)).toEqual(['primary', 'danger', undefined, undefined]);
    expect(new Set(buttons.map((b) => b.action_id)).size).toBe(4);
    const shown = JSON.stringify(posted.blocks);
    expect(shown).not.toContain('Always allow');
    expect(posted.blocks.length).toBeLessThanOrEqual(50);
  });

  it('keeps a long base branch name inside the button text limit', async () => {
    const base = `release/${'very-long-branch-name-'.repeat(10)}`;
    const { messageId } = await cards.show(target, changeCard(base));
    const posted = fake.botMessages(CHANNEL, THREAD).find((m) => m.ts === messageId)!;
    const merge = buttonsOf(posted.blocks)[0]!;
    expect(merge.text.text.length).toBeLessThanOrEqual(75);
    expect(merge.text.text).toMatch(/^Merge into release\/very-long-branch-name-.*…$/);
    expect(merge.value).toBe(`${NONCE}.A`);
  });

  it('shows the decision in place of the buttons once decided', async () => {
    const pending = changeCard();
    const { messageId } = await cards.show(target, pending);
    await cards.show(
      target,
      {
        ...pending,
        state: 'decided',
        decisions: [{ index: 0, approved: true, by: '<@U0BOB0001>' }],
        decidedAt: new Date(),
      },
      messageId,
    );
    const message = fake.botMessages(CHANNEL, THREAD).find((m) => m.ts === messageId)!;
    expect(buttonsOf(message.blocks)).toEqual([]);
    expect(JSON.stringify(message.blocks)).toContain('approved by');
  });

  it('shares a 2 MB diff through an external upload, every byte, in the card’s thread', async () => {
    const line = Buffer.from('+const value = "a line of the diff";\n');
    const content = Buffer.alloc(2 * 1024 * 1024);
    for (let at = 0; at < content.length; at += line.length) line.copy(content, at);
    const calls = fake.calls.length;
    await outbound.upload(target, {
      filename: 'countersign-ffffff.diff',
      content,
      comment: 'Full diff of `countersign/1a2b3c4d` at ffffff',
    });
    const methods = fake.calls.slice(calls).map((c) => c.method);
    expect(methods).toEqual(['files.getUploadURLExternal', 'files.completeUploadExternal']);
    const shared = fake.uploads.at(-1)!;
    expect(shared.bytes.length).toBe(2 * 1024 * 1024);
    expect(shared.bytes.equals(content)).toBe(true);
    expect(shared).toMatchObject({
      filename: 'countersign-ffffff.diff',
      channel: CHANNEL,
      thread_ts: THREAD,
      initial_comment: 'Full diff of `countersign/1a2b3c4d` at ffffff',
    });
    // The diff is a file, not message text.
    const message = fake.botMessages(CHANNEL, THREAD).find((m) => m.ts === shared.ts)!;
    expect(message.files?.[0]).toMatchObject({ name: 'countersign-ffffff.diff', size: 2 * 1024 * 1024 });
    expect(message.text.length).toBeLessThan(100);
  });

  it('fails with not_in_channel where the app is not a member, and shares nothing', async () => {
    const outside = 'C0OUTSIDE1';
    fake.world.botNotIn.add(outside);
    const before = fake.uploads.length;
    const failed = await outbound
      .upload({ platform: 'slack', channel: outside }, { filename: 'x.diff', content: Buffer.from('+x\n') })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(slackErrorOf(failed)).toBe('not_in_channel');
    expect(fake.uploads.length).toBe(before);
  });

  it('fails with missing_scope when the app was not given files:write', async () => {
    const narrow = await FakeSlack.start({ scopes: ['chat:write'] });
    try {
      const client = new SlackOutbound(createWebClient(narrow.botToken, narrow.apiUrl), new RateBuckets(pool), 50);
      const failed = await client
        .upload({ platform: 'slack', channel: CHANNEL }, { filename: 'x.diff', content: Buffer.from('+x\n') })
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(slackErrorOf(failed)).toBe('missing_scope');
    } finally {
      await narrow.close();
    }
  });
});
