import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebClient, SlackOutbound } from '../../../src/adapters/slack/outbound.ts';
import type { ReplyTarget } from '../../../src/core/reply-target.ts';
import { migrate } from '../../../src/db/migrate.ts';
import { createLogger } from '../../../src/log.ts';
import { RateBuckets } from '../../../src/reply/rate-bucket.ts';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';

/** 60 chat.update a minute: a burst of 6, then one a second. */
const UPDATES_PER_MINUTE = 60;

/**
 * A workspace's chat.update budget, shared by every conversation: a card (or a final answer) must
 * not wait behind other conversations' partial stream edits (issue #35).
 */
describe('a Slack workspace’s chat.update budget', () => {
  let fake: FakeSlack;
  let db: TestDatabase;
  let pool: pg.Pool;
  let outbound: SlackOutbound;

  beforeAll(async () => {
    // The fake's own budget is wide: only Countersign's shared bucket decides who goes first.
    fake = await FakeSlack.start({ pingIntervalMs: 0, perMinute: { 'chat.update': 1000 } });
    db = await createTestDatabase('slack_lanes');
    await migrate(db.url, createLogger('silent'));
    pool = new pg.Pool({ connectionString: db.url, max: 8 });
    pool.on('error', () => undefined);
    outbound = new SlackOutbound(
      createWebClient(fake.botToken, fake.apiUrl),
      new RateBuckets(pool),
      UPDATES_PER_MINUTE,
    );
  });
  afterAll(async () => {
    await pool?.end();
    await fake?.close();
    await db?.drop();
  });

  const inChannel = (channel: string): ReplyTarget => ({ platform: 'slack', channel, workspace: fake.team });

  it('edits a card in place before the partial edits other conversations were already waiting with', async () => {
    const card = await outbound.post(inChannel('C0LANECARD'), 'Approval needed');
    // Other conversations' replies spent the burst.
    for (let i = 0; i < UPDATES_PER_MINUTE / 10; i++) await outbound.reserve(inChannel(`C0LANEBUSY${i}`));
    const order: string[] = [];
    const finalized = new AbortController();
    const partials = Array.from({ length: 3 }, (_, i) =>
      outbound
        .reserve(inChannel(`C0LANEPART${i}`), undefined, { finalized: finalized.signal })
        .then(() => void order.push(`partial ${i}`)),
    );
    await new Promise((r) => setTimeout(r, 30));
    const decided = outbound
      .edit(inChannel('C0LANECARD'), card.messageId, 'Approved')
      .then(() => void order.push('card'));
    await Promise.all([decided, ...partials]);
    expect(order[0]).toBe('card');
    expect(order).toHaveLength(4);
    expect(fake.world.find('C0LANECARD', card.messageId)?.text).toBe('Approved');
  }, 20_000);
});
