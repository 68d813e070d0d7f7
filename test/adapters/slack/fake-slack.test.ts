/**
 * The fake Slack against the real @slack/bolt App (Socket Mode and HTTP) and the real WebClient,
 * plus the Web API behaviours other tests lean on: auth, both body encodings, message storage with
 * edit history, threads, rate limits, streaming on and off.
 */
import { App, LogLevel } from '@slack/bolt';
import { WebClient, type WebAPICallError } from '@slack/web-api';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeSlack, type FakeSlackOptions } from '../../fakes/slack/fake-slack.ts';
import { slackSignature } from '../../fakes/slack/http-delivery.ts';
import {
  appMention,
  blockAction,
  directMessage,
  eventCallback,
  eventsApiEnvelope,
  interactiveEnvelope,
  slashCommand,
  slashCommandEnvelope,
  urlVerification,
} from '../../fixtures/slack/events.ts';

const ALICE = 'U0ALICE001';
const OPS = 'C0OPS00001';

let cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

async function startFake(options: FakeSlackOptions = {}): Promise<FakeSlack> {
  const fake = await FakeSlack.start(options);
  cleanup.push(() => fake.close());
  return fake;
}

/** A WebClient that fails fast instead of retrying, so a test sees Slack's own answer. */
function client(fake: FakeSlack, token = fake.botToken): WebClient {
  return new WebClient(token, {
    slackApiUrl: fake.apiUrl,
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    logLevel: LogLevel.ERROR,
  });
}

async function errorOf(
  call: Promise<unknown>,
): Promise<WebAPICallError & { data?: { error?: string }; retryAfter?: number }> {
  try {
    await call;
  } catch (error) {
    return error as WebAPICallError;
  }
  throw new Error('expected the call to fail');
}

async function until<T>(probe: () => T | undefined, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function mentionReplier(app: App): void {
  app.event('app_mention', async ({ event, client: web }) => {
    await web.chat.postMessage({ channel: event.channel, thread_ts: event.ts, text: `on it, <@${event.user}>` });
  });
}

describe('the real Bolt app in Socket Mode', () => {
  async function startSocketApp(fake: FakeSlack): Promise<App> {
    const app = new App({
      token: fake.botToken,
      appToken: fake.appToken,
      socketMode: true,
      clientOptions: { slackApiUrl: fake.apiUrl },
      logLevel: LogLevel.ERROR,
    });
    mentionReplier(app);
    app.command('/skills', async ({ ack }) => {
      await ack({ response_type: 'ephemeral', text: 'runbook, skillmaker' });
    });
    app.action('approval:a0', async ({ ack, body, client: web }) => {
      await ack();
      const user = body.user.id;
      await web.chat.postEphemeral({ channel: body.channel?.id ?? OPS, user, text: 'noted' });
    });
    await app.start();
    cleanup.push(() => app.stop());
    await fake.socketMode.waitForConnections(1);
    return app;
  }

  it('opens the connection through apps.connections.open on the fake with the app token', async () => {
    const fake = await startFake();
    await startSocketApp(fake);
    expect(fake.calls.filter((c) => c.method === 'apps.connections.open' && !c.error)).toHaveLength(1);
    expect(fake.calls.find((c) => c.method === 'auth.test')?.team).toBe(fake.team);
  });

  it('delivers an app_mention, records the ack, and sees the threaded reply the handler posts', async () => {
    const fake = await startFake();
    await startSocketApp(fake);
    const mention = appMention({ user: ALICE, channel: OPS, text: 'disk on db-1?' });
    const ack = await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, mention)));
    expect(ack.envelope_id).toBe(fake.socketMode.sent.at(-1)?.envelope_id);
    expect(fake.socketMode.acks).toContainEqual(ack);
    const reply = await until(() => fake.botMessages(OPS, mention.ts)[0], 'the reply');
    expect(reply.text).toBe(`on it, <@${ALICE}>`);
    expect(reply.thread_ts).toBe(mention.ts);
  });

  it('returns a slash command ack payload to the test', async () => {
    const fake = await startFake();
    await startSocketApp(fake);
    const ack = await fake.deliver(
      slashCommandEnvelope(slashCommand(fake.team, { command: '/skills', text: '', user: ALICE, channel: OPS })),
    );
    expect(ack.payload).toEqual({ response_type: 'ephemeral', text: 'runbook, skillmaker' });
  });

  it('delivers a block_actions click to the action handler', async () => {
    const fake = await startFake();
    await startSocketApp(fake);
    const parent = appMention({ user: ALICE, channel: OPS, text: 'restart api' });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, parent)));
    const card = await until(() => fake.botMessages(OPS, parent.ts)[0], 'the reply');
    await fake.deliver(
      interactiveEnvelope(
        blockAction(fake.team, {
          user: ALICE,
          channel: OPS,
          messageTs: card.ts,
          threadTs: parent.ts,
          value: 'n0nce:a0',
          actionId: 'approval:a0',
        }),
      ),
    );
    const note = await until(() => fake.messages.find((m) => m.ephemeralFor === ALICE), 'the ephemeral note');
    expect(note.text).toBe('noted');
  });

  it('reconnects through a fresh apps.connections.open after a disconnect message', async () => {
    const fake = await startFake();
    await startSocketApp(fake);
    fake.socketMode.requestReconnect('refresh_requested');
    await until(
      () => (fake.socketMode.connectionsOpened >= 2 && fake.connected === 1 ? true : undefined),
      'the reconnect',
      30_000,
    );
    expect(fake.calls.filter((c) => c.method === 'apps.connections.open' && !c.error).length).toBeGreaterThanOrEqual(2);
    const mention = appMention({ user: ALICE, channel: OPS, text: 'still there?' });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, mention)));
    await until(() => fake.botMessages(OPS, mention.ts)[0], 'the reply after reconnecting');
  }, 40_000);

  it('rejects deliver when the app never acks', async () => {
    const fake = await startFake();
    await startSocketApp(fake);
    // Bolt leaves a slash command that no listener handles unacknowledged.
    const command = slashCommand(fake.team, { command: '/unhandled', text: '', user: ALICE, channel: OPS });
    await expect(fake.deliver(slashCommandEnvelope(command), { timeoutMs: 500 })).rejects.toThrow(/no ack/);
  });
});

describe('the real Bolt app in HTTP mode', () => {
  const signingSecret = 'fake-signing-secret';

  async function startHttpApp(fake: FakeSlack): Promise<string> {
    const app = new App({
      token: fake.botToken,
      signingSecret,
      clientOptions: { slackApiUrl: fake.apiUrl },
      logLevel: LogLevel.ERROR,
    });
    mentionReplier(app);
    const server = (await app.start({ port: 0, host: '127.0.0.1' })) as unknown as import('node:http').Server;
    cleanup.push(() => app.stop());
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('HTTPReceiver did not listen on a port');
    return `http://127.0.0.1:${address.port}/slack/events`;
  }

  it('answers an app_mention signed like Slack, and the handler reply reaches the fake', async () => {
    const fake = await startFake();
    const url = await startHttpApp(fake);
    const mention = appMention({ user: ALICE, channel: OPS, text: 'over http' });
    const res = await fake.post(url, { json: eventCallback(fake.team, mention) }, { signingSecret });
    expect(res.status).toBe(200);
    const reply = await until(() => fake.botMessages(OPS, mention.ts)[0], 'the reply');
    expect(reply.text).toBe(`on it, <@${ALICE}>`);
  });

  it('gets 401 for a bad signature, and the handler never runs', async () => {
    const fake = await startFake();
    const url = await startHttpApp(fake);
    const mention = appMention({ user: ALICE, channel: OPS, text: 'forged' });
    const res = await fake.post(
      url,
      { json: eventCallback(fake.team, mention) },
      { signingSecret, badSignature: true },
    );
    expect(res.status).toBe(401);
    // A signed event sent after it is answered: by then the forged one would have been too.
    const signed = appMention({ user: ALICE, channel: OPS, text: 'signed' });
    expect((await fake.post(url, { json: eventCallback(fake.team, signed) }, { signingSecret })).status).toBe(200);
    await until(() => fake.botMessages(OPS, signed.ts)[0], 'the reply to the signed event');
    expect(fake.botMessages(OPS, mention.ts)).toEqual([]);
    expect(fake.botMessages(OPS)).toHaveLength(1);
  });

  it('gets 401 for a stale timestamp even with a correct signature', async () => {
    const fake = await startFake();
    const url = await startHttpApp(fake);
    const res = await fake.post(
      url,
      { json: urlVerification() },
      { signingSecret, timestampSeconds: Math.floor(Date.now() / 1000) - 600 },
    );
    expect(res.status).toBe(401);
  });

  it('answers the url_verification challenge', async () => {
    const fake = await startFake();
    const url = await startHttpApp(fake);
    const body = urlVerification('challenge-abc');
    const res = await fake.post(url, { json: body }, { signingSecret });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text)).toEqual({ challenge: 'challenge-abc' });
  });
});

describe('signed delivery', () => {
  it('signs v0:{timestamp}:{body} with HMAC-SHA256 of the signing secret', () => {
    // Expected value from: printf 'v0:1531420618:a=1' | openssl dgst -sha256 -hmac s3cret
    expect(slackSignature('s3cret', 1531420618, 'a=1')).toBe(
      'v0=1f67e37950255592bd1561bb9c299e7e224d8a844652128369578f14870ae6cb',
    );
  });
});

describe('the Web API', () => {
  it('answers invalid_auth to an unknown token, not_authed to none, not_allowed_token_type to the wrong kind', async () => {
    const fake = await startFake();
    expect((await errorOf(client(fake, 'xoxb-nope').auth.test())).data?.error).toBe('invalid_auth');
    expect((await errorOf(client(fake, '').auth.test())).data?.error).toBe('not_authed');
    expect((await errorOf(client(fake, fake.appToken).auth.test())).data?.error).toBe('not_allowed_token_type');
    expect((await errorOf(client(fake).apps.connections.open())).data?.error).toBe('not_allowed_token_type');
  });

  it('accepts a JSON body with the token in the Authorization header', async () => {
    const fake = await startFake();
    const res = await fetch(`${fake.apiUrl}chat.postMessage`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8', authorization: `Bearer ${fake.botToken}` },
      body: JSON.stringify({ channel: OPS, text: 'json body', blocks: [{ type: 'divider' }] }),
    });
    const body = (await res.json()) as { ok: boolean; ts: string; channel: string };
    expect(body).toMatchObject({ ok: true, channel: OPS, ts: expect.stringMatching(/^\d{10}\.\d{6}$/) });
    expect(fake.world.find(OPS, body.ts)?.blocks).toEqual([{ type: 'divider' }]);
  });

  it('ignores a token inside a JSON body, as Slack does', async () => {
    const fake = await startFake();
    const res = await fetch(`${fake.apiUrl}auth.test`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: fake.botToken }),
    });
    expect(await res.json()).toEqual({ ok: false, error: 'not_authed' });
  });

  it('keeps a message’s metadata and lists it only when include_all_metadata asks', async () => {
    const fake = await startFake();
    const web = client(fake);
    const metadata = { event_type: 'countersign_reply', event_payload: { work_item: 'w1' } };
    const parent = await web.chat.postMessage({ channel: OPS, text: 'parent' });
    await web.chat.postMessage({ channel: OPS, thread_ts: parent.ts!, text: '…', metadata });
    const plain = await web.conversations.replies({ channel: OPS, ts: parent.ts! });
    expect(plain.messages?.map((m) => (m as { metadata?: unknown }).metadata)).toEqual([undefined, undefined]);
    const withMetadata = await web.conversations.replies({ channel: OPS, ts: parent.ts!, include_all_metadata: true });
    expect(withMetadata.messages?.map((m) => (m as { metadata?: unknown }).metadata)).toEqual([undefined, metadata]);
    const history = await web.conversations.history({ channel: OPS, include_all_metadata: true });
    expect(history.messages?.some((m) => (m as { metadata?: unknown }).metadata)).toBe(false);
  });

  it('refuses metadata without an event_type or an event_payload object (invalid_metadata_format)', async () => {
    const fake = await startFake();
    const post = (metadata: unknown) =>
      errorOf(client(fake).chat.postMessage({ channel: OPS, text: 'x', metadata: metadata as never }));
    expect((await post({ event_payload: {} })).data?.error).toBe('invalid_metadata_format');
    expect((await post({ event_type: 'x', event_payload: 'not an object' })).data?.error).toBe(
      'invalid_metadata_format',
    );
    expect(fake.world.messages.filter((m) => m.channel === OPS && m.text === 'x')).toEqual([]);
  });

  it('keeps every version of an edited message', async () => {
    const fake = await startFake();
    const web = client(fake);
    const posted = await web.chat.postMessage({ channel: OPS, text: 'Thinking' });
    await web.chat.update({ channel: OPS, ts: posted.ts!, text: 'Thinking…' });
    await web.chat.update({ channel: OPS, ts: posted.ts!, text: 'Done.' });
    const message = fake.world.find(OPS, posted.ts!)!;
    expect(message.text).toBe('Done.');
    expect(message.edits).toBe(2);
    expect(message.history.map((v) => [v.by, v.text])).toEqual([
      ['chat.postMessage', 'Thinking'],
      ['chat.update', 'Thinking…'],
      ['chat.update', 'Done.'],
    ]);
  });

  it('replaces a clicked message through its response_url five times, then answers used_url', async () => {
    const fake = await startFake({ perMinute: { 'chat.update': 1 } });
    const posted = await client(fake).chat.postMessage({ channel: OPS, text: 'card' });
    const url = fake.actionResponseUrl(OPS, posted.ts!);
    const send = (body: unknown) =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    for (let i = 1; i <= 5; i++) {
      const res = await send({ replace_original: true, text: `decided ${i}` });
      expect([res.status, await res.text()]).toEqual([200, 'ok']);
    }
    const sixth = await send({ replace_original: true, text: 'too late' });
    expect([sixth.status, await sixth.text()]).toEqual([404, 'used_url']);
    const message = fake.world.find(OPS, posted.ts!)!;
    expect(message.text).toBe('decided 5');
    expect(message.history.slice(1).map((v) => v.by)).toEqual(Array(5).fill('response_url'));
    // Not a Web API call: the chat.update budget (1/min here) is untouched.
    expect(fake.rateLimits.calls.filter((c) => c.method === 'chat.update')).toEqual([]);
    const unknown = await fetch(url.replace(/\/\d+\/hook$/, '/999/hook'), { method: 'POST', body: '{}' });
    expect([unknown.status, await unknown.text()]).toEqual([404, 'invalid_url']);
  });

  it('rejects a response_url post that is not JSON or has neither text nor blocks', async () => {
    const fake = await startFake();
    const posted = await client(fake).chat.postMessage({ channel: OPS, text: 'card' });
    const url = fake.actionResponseUrl(OPS, posted.ts!);
    expect((await fetch(url, { method: 'POST', body: 'not json' })).status).toBe(400);
    expect((await fetch(url, { method: 'POST', body: JSON.stringify({ replace_original: true }) })).status).toBe(400);
    expect(fake.world.find(OPS, posted.ts!)!.text).toBe('card');
  });

  it("lists a thread with conversations.replies: the user's message first, then replies", async () => {
    const fake = await startFake({ pingIntervalMs: 0 });
    const web = client(fake);
    const mention = appMention({ user: ALICE, channel: OPS, text: 'first' });
    fake.seed(eventCallback(fake.team, mention));
    await web.chat.postMessage({ channel: OPS, thread_ts: mention.ts, text: 'answer' });
    const replies = await web.conversations.replies({ channel: OPS, ts: mention.ts });
    expect(replies.messages?.map((m) => [m.user, m.text])).toEqual([
      [ALICE, mention.text],
      [fake.botUserId, 'answer'],
    ]);
    expect(replies.messages?.[0]).toMatchObject({ reply_count: 1, thread_ts: mention.ts });
    expect((await errorOf(web.conversations.replies({ channel: OPS, ts: '1.000001' }))).data?.error).toBe(
      'thread_not_found',
    );
  });

  it('reads one message with its files: history at latest=ts inclusive, replies narrowed to ts with the parent first', async () => {
    const fake = await startFake({ pingIntervalMs: 0 });
    const web = client(fake);
    const file = fake.files.host('a.csv', Buffer.from('x,1\n'), 'text/csv');
    const top = appMention({ user: ALICE, channel: OPS, text: 'top' });
    fake.seed(eventCallback(fake.team, { ...top, type: 'message', subtype: 'file_share', files: [file] }));
    // The app_mention of the same message (no files) does not replace what the message event stored.
    fake.seed(eventCallback(fake.team, top));
    const exclusive = await web.conversations.history({ channel: OPS, latest: top.ts, limit: 1 });
    expect(exclusive.messages).toEqual([]);
    const [one] = (await web.conversations.history({ channel: OPS, latest: top.ts, inclusive: true, limit: 1 }))
      .messages!;
    expect(one).toMatchObject({ ts: top.ts, files: [{ id: file.id, name: 'a.csv' }] });
    const reply = appMention({ user: ALICE, channel: OPS, text: 'in thread', thread_ts: top.ts });
    fake.seed(eventCallback(fake.team, { ...reply, type: 'message', subtype: 'file_share', files: [file] }));
    await web.chat.postMessage({ channel: OPS, thread_ts: top.ts, text: 'later' });
    const narrowed = await web.conversations.replies({
      channel: OPS,
      ts: top.ts,
      oldest: reply.ts,
      latest: reply.ts,
      inclusive: true,
    });
    expect(narrowed.messages?.map((m) => [m.ts, m.files?.length])).toEqual([
      [top.ts, 1],
      [reply.ts, 1],
    ]);
  });

  it('hides thread replies and ephemerals from conversations.history, newest first', async () => {
    const fake = await startFake();
    const web = client(fake);
    const one = await web.chat.postMessage({ channel: OPS, text: 'one' });
    await web.chat.postMessage({ channel: OPS, thread_ts: one.ts!, text: 'in thread' });
    await web.chat.postEphemeral({ channel: OPS, user: ALICE, text: 'psst' });
    await web.chat.postMessage({ channel: OPS, text: 'two' });
    const history = await web.conversations.history({ channel: OPS });
    expect(history.messages?.map((m) => m.text)).toEqual(['two', 'one']);
  });

  it('describes channels, DMs and users by their id prefixes', async () => {
    const fake = await startFake();
    const web = client(fake);
    expect((await web.conversations.info({ channel: OPS })).channel).toMatchObject({
      id: OPS,
      is_channel: true,
      is_private: false,
    });
    expect((await web.conversations.info({ channel: 'D0DM000001' })).channel).toMatchObject({ is_im: true });
    expect((await web.users.info({ user: ALICE })).user).toMatchObject({
      id: ALICE,
      team_id: fake.team,
      is_bot: false,
    });
    expect((await errorOf(web.users.info({ user: 'nobody' }))).data?.error).toBe('user_not_found');
    expect((await errorOf(web.conversations.info({ channel: 'nope' }))).data?.error).toBe('channel_not_found');
  });

  it('deletes and reacts to messages', async () => {
    const fake = await startFake();
    const web = client(fake);
    const posted = await web.chat.postMessage({ channel: OPS, text: 'bye' });
    await web.reactions.add({ channel: OPS, timestamp: posted.ts!, name: 'eyes' });
    expect(fake.world.find(OPS, posted.ts!)?.reactions).toEqual({ eyes: [fake.botUserId] });
    expect((await errorOf(web.reactions.add({ channel: OPS, timestamp: posted.ts!, name: 'eyes' }))).data?.error).toBe(
      'already_reacted',
    );
    await web.chat.delete({ channel: OPS, ts: posted.ts! });
    expect(fake.textIn(OPS)).toEqual([]);
    expect((await errorOf(web.chat.update({ channel: OPS, ts: posted.ts!, text: 'x' }))).data?.error).toBe(
      'message_not_found',
    );
  });

  it('rejects blocks over Block Kit limits with invalid_blocks and says where', async () => {
    const fake = await startFake();
    const error = await errorOf(
      client(fake).chat.postMessage({
        channel: OPS,
        text: 'x',
        blocks: [{ type: 'section', text: { type: 'mrkdwn', text: 'y'.repeat(3001) } }],
      }),
    );
    expect(error.data).toMatchObject({
      error: 'invalid_blocks',
      response_metadata: { messages: [expect.stringContaining('/blocks/0/text/text')] },
    });
  });

  it('answers unknown_method for methods it does not know', async () => {
    const fake = await startFake();
    expect(
      (await errorOf(client(fake).apiCall('chat.scheduleMessage', { channel: OPS, text: 'x', post_at: 1 }))).data
        ?.error,
    ).toBe('unknown_method');
  });
});

describe('rate limits', () => {
  it("answers 429 with Retry-After once a method's per-minute budget is spent, per workspace", async () => {
    const fake = await startFake({
      perMinute: { 'chat.update': 3 },
      workspaces: [
        { team: 'T0TEAM0001', botToken: 'xoxb-one' },
        { team: 'T0TEAM0002', botToken: 'xoxb-two' },
      ],
    });
    const one = client(fake, 'xoxb-one');
    const two = client(fake, 'xoxb-two');
    const a = await one.chat.postMessage({ channel: OPS, text: 'a' });
    const b = await two.chat.postMessage({ channel: 'C0OTHER001', text: 'b' });
    for (let i = 0; i < 3; i += 1) await one.chat.update({ channel: OPS, ts: a.ts!, text: `a${i}` });
    const limited = await errorOf(one.chat.update({ channel: OPS, ts: a.ts!, text: 'too many' }));
    expect(limited.code).toBe('slack_webapi_rate_limited_error');
    expect(limited.retryAfter).toBeGreaterThanOrEqual(1);
    expect(limited.retryAfter).toBeLessThanOrEqual(60);
    // The other workspace has its own budget.
    await two.chat.update({ channel: 'C0OTHER001', ts: b.ts!, text: 'b1' });
    expect(fake.rateLimits.stats('chat.update', 'T0TEAM0001')).toEqual({
      calls: 4,
      rateLimited: 1,
      maxAcceptedPerMinute: 3,
    });
    expect(fake.rateLimits.stats('chat.update', 'T0TEAM0002')).toEqual({
      calls: 1,
      rateLimited: 0,
      maxAcceptedPerMinute: 1,
    });
    expect(fake.world.find(OPS, a.ts!)?.text).toBe('a2');
  });

  it('sends the raw 429 shape: status, Retry-After header, ratelimited body', async () => {
    const fake = await startFake();
    fake.failNext('chat.postMessage', 1, 7);
    const call = () =>
      fetch(`${fake.apiUrl}chat.postMessage`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Bearer ${fake.botToken}` },
        body: new URLSearchParams({ channel: OPS, text: 'hi' }).toString(),
      });
    const first = await call();
    expect([first.status, first.headers.get('retry-after'), await first.json()]).toEqual([
      429,
      '7',
      { ok: false, error: 'ratelimited' },
    ]);
    expect((await call()).status).toBe(200);
    expect(fake.calls.map((c) => [c.method, c.status, c.cause])).toEqual([
      ['chat.postMessage', 429, 'forced'],
      ['chat.postMessage', 200, undefined],
    ]);
  });
});

describe('streaming', () => {
  async function threadIn(fake: FakeSlack, channel: string): Promise<string> {
    const mention = channel.startsWith('D')
      ? directMessage({ user: ALICE, channel, text: 'go' })
      : appMention({ user: ALICE, channel, text: 'go' });
    fake.seed(eventCallback(fake.team, mention));
    return mention.ts;
  }

  it('builds one message from startStream, appendStream and stopStream, recording each step', async () => {
    const fake = await startFake();
    const web = client(fake);
    const thread = await threadIn(fake, 'D0DM000001');
    const started = await web.chat.startStream({
      channel: 'D0DM000001',
      thread_ts: thread,
      markdown_text: '**Disk** ',
    });
    await web.chat.appendStream({ channel: 'D0DM000001', ts: started.ts!, markdown_text: 'is 71% ' });
    const stopped = await web.chat.stopStream({
      channel: 'D0DM000001',
      ts: started.ts!,
      chunks: [{ type: 'markdown_text', text: 'full.' }],
    });
    expect(stopped.message).toMatchObject({
      text: '**Disk** is 71% full.',
      streaming_state: 'completed',
      thread_ts: thread,
    });
    const stored = fake.world.find('D0DM000001', started.ts!)!;
    expect(stored.history.map((v) => v.by)).toEqual(['chat.startStream', 'chat.appendStream', 'chat.stopStream']);
    expect(
      (await errorOf(web.chat.appendStream({ channel: 'D0DM000001', ts: started.ts!, markdown_text: 'late' }))).data
        ?.error,
    ).toBe('message_not_in_streaming_state');
  });

  it('requires thread_ts, and a recipient outside DMs', async () => {
    const fake = await startFake();
    const web = client(fake);
    const thread = await threadIn(fake, OPS);
    const noRecipient = await errorOf(web.chat.startStream({ channel: OPS, thread_ts: thread, markdown_text: 'x' }));
    expect(noRecipient.data?.error).toBe('invalid_arguments');
    const ok = await web.chat.startStream({
      channel: OPS,
      thread_ts: thread,
      markdown_text: 'x',
      recipient_user_id: ALICE,
      recipient_team_id: fake.team,
    });
    expect(ok.ts).toMatch(/^\d+\.\d{6}$/);
  });

  it('answers unknown_method to every streaming method when streaming is switched off', async () => {
    const fake = await startFake({ streaming: false });
    const web = client(fake);
    const thread = await threadIn(fake, 'D0DM000001');
    expect(
      (await errorOf(web.chat.startStream({ channel: 'D0DM000001', thread_ts: thread, markdown_text: 'x' }))).data
        ?.error,
    ).toBe('unknown_method');
    expect(
      (await errorOf(web.chat.appendStream({ channel: 'D0DM000001', ts: thread, markdown_text: 'x' }))).data?.error,
    ).toBe('unknown_method');
    fake.streaming = true;
    await web.chat.startStream({ channel: 'D0DM000001', thread_ts: thread, markdown_text: 'x' });
  });
});
