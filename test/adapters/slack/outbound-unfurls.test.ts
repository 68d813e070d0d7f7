import { RateBuckets } from '../../../src/reply/rate-bucket.ts';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SlackCardRenderer } from '../../../src/adapters/slack/cards.ts';
import { createWebClient, SlackOutbound } from '../../../src/adapters/slack/outbound.ts';
import type { ApprovalCard } from '../../../src/core/approval-card.ts';
import { migrate } from '../../../src/db/migrate.ts';
import { createLogger } from '../../../src/log.ts';
import type { ReplyTarget } from '../../../src/core/reply-target.ts';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';

const CHANNEL = 'C0UNFURL01';

interface SentCall {
  method: string;
  args: Record<string, string>;
}

/**
 * A loopback HTTP hop in front of the fake Slack that keeps every Web API call's arguments as the
 * SDK put them on the wire (form-encoded or JSON), then forwards the request unchanged.
 */
async function recordingHop(upstream: string): Promise<{ url: string; calls: SentCall[]; close: () => Promise<void> }> {
  const calls: SentCall[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const text = raw.toString('utf8');
      const json = (req.headers['content-type'] ?? '').includes('json');
      const args = json
        ? Object.fromEntries(Object.entries(JSON.parse(text || '{}') as object).map(([k, v]) => [k, String(v)]))
        : Object.fromEntries(new URLSearchParams(text));
      calls.push({ method: (req.url ?? '').replace(/^\/api\//, ''), args });
      const forward = http.request(
        new URL(req.url ?? '/', upstream),
        { method: req.method, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forward.end(raw);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/`;
  return { url, calls, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const card: ApprovalCard = {
  envelopeId: 'env-1',
  nonce: 'N'.repeat(32),
  kind: 'tools',
  calls: [{ index: 0, id: 'c0', tool: 'fetch_url', argsPretty: '{"url":"https://evil.example/?k=1"}', risk: 'high' }],
  planHashPrefix: 'abcdef12',
  expiresAt: new Date(Date.now() + 600_000),
  requesterLabel: '<@U1>',
  state: 'pending',
};

describe('Slack replies never unfurl links', () => {
  let fake: FakeSlack;
  let hop: Awaited<ReturnType<typeof recordingHop>>;
  let db: TestDatabase;
  let pool: pg.Pool;
  let outbound: SlackOutbound;
  const target: ReplyTarget = { platform: 'slack', channel: CHANNEL, thread: '1700000000.000100', workspace: 'T1' };

  beforeAll(async () => {
    fake = await FakeSlack.start();
    hop = await recordingHop(fake.apiUrl);
    db = await createTestDatabase('slack_unfurls');
    await migrate(db.url, createLogger('silent'));
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    // pool.end() can resolve while a connection is still closing; DROP … WITH (FORCE) then ends it.
    pool.on('error', () => undefined);
    outbound = new SlackOutbound(createWebClient(fake.botToken, hop.url), new RateBuckets(pool), 50);
  });
  afterAll(async () => {
    await pool.end();
    await hop.close();
    await fake.close();
    await db.drop();
  });

  const sent = (method: string) => hop.calls.filter((c) => c.method === method);
  const noUnfurls = { unfurl_links: 'false', unfurl_media: 'false' };

  it('posts and edits replies with unfurl_links and unfurl_media off', async () => {
    const since = hop.calls.length;
    const { messageId } = await outbound.post(target, 'see https://evil.example/?secret=1');
    await outbound.edit(target, messageId, 'now https://evil.example/?secret=2');
    const calls = hop.calls.slice(since);
    expect(calls.map((c) => c.method)).toEqual(['chat.postMessage', 'chat.update']);
    for (const c of calls) expect(c.args).toMatchObject(noUnfurls);
    expect(fake.textIn(CHANNEL, target.thread).join('\n')).toContain('secret=2');
  });

  it('posts and updates approval cards with unfurl_links and unfurl_media off', async () => {
    const before = { post: sent('chat.postMessage').length, update: sent('chat.update').length };
    const { messageId } = await new SlackCardRenderer(outbound).show(target, card);
    await new SlackCardRenderer(outbound).show(
      target,
      { ...card, state: 'decided', decisions: [{ index: 0, approved: false, by: 'alice' }] },
      messageId,
    );
    const calls = [...sent('chat.postMessage').slice(before.post), ...sent('chat.update').slice(before.update)];
    expect(calls).toHaveLength(2);
    for (const c of calls) expect(c.args).toMatchObject(noUnfurls);
  });
});
