import { REST, Routes } from 'discord.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buttonInteraction, slashCommandInteraction } from '../../fixtures/discord/payloads.ts';
import { FakeDiscord } from '../../fakes/discord/index.ts';

const POST_MESSAGE = 'POST /channels/:channel_id/messages';

describe('FakeDiscord REST', () => {
  let fake: FakeDiscord;
  let base: string;
  const call = (method: string, path: string, body?: unknown, auth = true) =>
    fetch(`${base}${path}`, {
      method,
      headers: { ...(auth ? { Authorization: `Bot ${fake.token}` } : {}), 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  beforeEach(async () => {
    fake = await FakeDiscord.start();
    base = `${fake.restUrl}/v10`;
  });
  afterEach(async () => fake.close());

  it('rejects a request without the bot token with 401', async () => {
    const res = await call('GET', '/users/@me', undefined, false);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ message: '401: Unauthorized', code: 0 });
  });

  it('serves GET /gateway/bot with the fake gateway url, one shard and a session start limit', async () => {
    const body = await (await call('GET', '/gateway/bot')).json();
    expect(body).toMatchObject({ url: fake.gatewayUrl, shards: 1, session_start_limit: { max_concurrency: 1 } });
  });

  it('rejects content over 2000 characters with Invalid Form Body (50035) like the real API', async () => {
    const res = await call('POST', `/channels/${fake.scene.channelId}/messages`, { content: 'x'.repeat(2001) });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      message: 'Invalid Form Body',
      code: 50035,
      errors: { content: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 2000 or fewer in length.' }] } },
    });
    expect(fake.messagesIn(fake.scene.channelId)).toHaveLength(0);
  });

  it('rejects a custom_id over 100 characters at its path in the components tree', async () => {
    const res = await call('POST', `/channels/${fake.scene.channelId}/messages`, {
      content: 'x',
      components: [{ type: 1, components: [{ type: 2, style: 1, label: 'Go', custom_id: 'c'.repeat(101) }] }],
    });
    const body = (await res.json()) as { errors: Record<string, unknown> };
    expect(body.errors).toEqual({
      components: {
        '0': {
          components: { '0': { custom_id: { _errors: [expect.objectContaining({ code: 'BASE_TYPE_MAX_LENGTH' })] } } },
        },
      },
    });
  });

  it('sends per-route rate-limit headers with the remaining count going down', async () => {
    const first = await call('POST', `/channels/${fake.scene.channelId}/messages`, { content: 'one' });
    const second = await call('POST', `/channels/${fake.scene.channelId}/messages`, { content: 'two' });
    expect(first.headers.get('x-ratelimit-limit')).toBe('5');
    expect(first.headers.get('x-ratelimit-remaining')).toBe('4');
    expect(second.headers.get('x-ratelimit-remaining')).toBe('3');
    expect(Number(second.headers.get('x-ratelimit-reset-after'))).toBeGreaterThan(0);
    expect(Number(second.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000 - 1);
    expect(second.headers.get('x-ratelimit-bucket')).toBe(first.headers.get('x-ratelimit-bucket'));
  });

  it('keeps a separate bucket per channel (the major parameter)', async () => {
    await call('POST', `/channels/${fake.scene.channelId}/messages`, { content: 'a' });
    const other = await call('POST', `/channels/${fake.world.opsChannelId}/messages`, { content: 'b' });
    expect(other.headers.get('x-ratelimit-remaining')).toBe('4');
  });

  it('answers a call beyond the bucket with 429, the documented body and Retry-After', async () => {
    for (let i = 0; i < 5; i++) await call('POST', `/channels/${fake.scene.channelId}/messages`, { content: `m${i}` });
    const res = await call('POST', `/channels/${fake.scene.channelId}/messages`, { content: 'too many' });
    expect(res.status).toBe(429);
    const body = (await res.json()) as { message: string; retry_after: number; global: boolean };
    expect(body).toMatchObject({ message: 'You are being rate limited.', global: false });
    expect(body.retry_after).toBeGreaterThan(0);
    expect(body.retry_after).toBeLessThanOrEqual(5);
    expect(Number(res.headers.get('retry-after'))).toBe(Math.ceil(body.retry_after));
    expect(res.headers.get('x-ratelimit-scope')).toBe('user');
    expect(fake.rateLimits.tooManyRequestsCount(POST_MESSAGE, 'bucket')).toBe(1);
  });

  it('forces the next N calls to a route to 429, marks a global one with X-RateLimit-Global', async () => {
    fake.rateLimits.failNext(POST_MESSAGE, { count: 2, retryAfterSeconds: 0.25, global: true });
    const res = await call('POST', `/channels/${fake.scene.channelId}/messages`, { content: 'x' });
    expect(res.status).toBe(429);
    expect(res.headers.get('x-ratelimit-global')).toBe('true');
    expect(await res.json()).toEqual({ message: 'You are being rate limited.', retry_after: 0.25, global: true });
    expect((await call('POST', `/channels/${fake.scene.channelId}/messages`, { content: 'x' })).status).toBe(429);
    expect((await call('POST', `/channels/${fake.scene.channelId}/messages`, { content: 'x' })).status).toBe(200);
    expect(fake.rateLimits.callCount(POST_MESSAGE)).toBe(3);
    expect(fake.rateLimits.tooManyRequestsCount(POST_MESSAGE, 'forced')).toBe(2);
    expect(fake.rateLimits.perMinute(POST_MESSAGE).reduce((n, m) => n + m.tooManyRequests, 0)).toBe(2);
  });

  it("lets discord.js's REST client retry a forced 429 and succeed", async () => {
    const rest = new REST({ api: fake.restUrl, version: '10' }).setToken(fake.token);
    fake.rateLimits.failNext(POST_MESSAGE, { count: 1, retryAfterSeconds: 0.2 });
    const message = (await rest.post(Routes.channelMessages(fake.scene.channelId), {
      body: { content: 'after retry' },
    })) as {
      content: string;
    };
    expect(message.content).toBe('after retry');
    expect(fake.rateLimits.callCount(POST_MESSAGE)).toBe(2);
    expect(fake.botTextIn(fake.scene.channelId)).toEqual(['after retry']);
  });

  it("is never overrun by discord.js's REST client, which waits out the bucket from the headers", async () => {
    fake.rateLimits.setBucket(POST_MESSAGE, { limit: 3, windowSeconds: 1 });
    const rest = new REST({ api: fake.restUrl, version: '10' }).setToken(fake.token);
    await Promise.all(
      Array.from({ length: 7 }, (_, i) =>
        rest.post(Routes.channelMessages(fake.scene.channelId), { body: { content: `n${i}` } }),
      ),
    );
    expect(fake.messagesIn(fake.scene.channelId)).toHaveLength(7);
    expect(fake.rateLimits.tooManyRequestsCount(POST_MESSAGE, 'bucket')).toBe(0);
  });

  it('counts bulk command overwrites and keeps a command id across PUTs', async () => {
    const app = fake.scene.applicationId;
    const commands = [{ name: 'ask', description: 'Ask Countersign', type: 1 }];
    const first = (await (
      await call('PUT', `/applications/${app}/guilds/${fake.scene.guildId}/commands`, commands)
    ).json()) as Array<{ id: string }>;
    const second = (await (
      await call('PUT', `/applications/${app}/guilds/${fake.scene.guildId}/commands`, commands)
    ).json()) as Array<{ id: string }>;
    expect(second[0]!.id).toBe(first[0]!.id);
    expect(fake.commandPuts(fake.scene.guildId)).toBe(2);
    expect(fake.commandPuts('global')).toBe(0);
    const listed = (await (
      await call('GET', `/applications/${app}/guilds/${fake.scene.guildId}/commands`)
    ).json()) as unknown[];
    expect(listed).toHaveLength(1);
  });

  it('rejects a command name with capitals, as Discord does', async () => {
    const res = await call('PUT', `/applications/${fake.scene.applicationId}/commands`, [
      { name: 'Ask', description: 'x' },
    ]);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: number }).code).toBe(50035);
  });

  it('refuses a second initial response to one interaction with 40060', async () => {
    const interaction = slashCommandInteraction(fake.scene, { name: 'ask' });
    fake.registerInteraction(interaction);
    const path = `/interactions/${interaction.id as string}/${interaction.token as string}/callback`;
    expect((await call('POST', path, { type: 4, data: { content: 'hi', flags: 64 } }, false)).status).toBe(204);
    const again = await call('POST', path, { type: 4, data: { content: 'again' } }, false);
    expect(again.status).toBe(400);
    expect(await again.json()).toEqual({ message: 'Interaction has already been acknowledged.', code: 40060 });
    expect(fake.messagesIn(fake.scene.channelId, { includeEphemeral: true }).map((m) => m.ephemeral)).toEqual([true]);
  });

  it('answers 404 Unknown interaction for an interaction it never dispatched', async () => {
    const res = await call('POST', '/interactions/123/abc/callback', { type: 5 }, false);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { code: number }).code).toBe(10062);
  });

  it('accepts DEFERRED_UPDATE_MESSAGE only for component interactions', async () => {
    const card = await (await call('POST', `/channels/${fake.scene.channelId}/messages`, { content: 'card' })).json();
    const click = buttonInteraction(fake.scene, { customId: 'stop:t1', message: card as Record<string, unknown> });
    const command = slashCommandInteraction(fake.scene, { name: 'ask' });
    fake.registerInteraction(click);
    fake.registerInteraction(command);
    const onClick = await call(
      'POST',
      `/interactions/${click.id as string}/${click.token as string}/callback`,
      { type: 6 },
      false,
    );
    const onCommand = await call(
      'POST',
      `/interactions/${command.id as string}/${command.token as string}/callback`,
      { type: 6 },
      false,
    );
    expect(onClick.status).toBe(204);
    expect(onCommand.status).toBe(400);
  });

  it('records who a message would ping: nobody with parse [], the user without allowed_mentions', async () => {
    const text = `<@${fake.scene.human.id}> look @everyone`;
    const quiet = await (
      await call('POST', `/channels/${fake.scene.channelId}/messages`, {
        content: text,
        allowed_mentions: { parse: [] },
      })
    ).json();
    const loud = await (await call('POST', `/channels/${fake.scene.channelId}/messages`, { content: text })).json();
    expect(fake.message((quiet as { id: string }).id)?.pings).toEqual({ users: [], roles: [], everyone: false });
    expect(fake.message((loud as { id: string }).id)?.pings).toEqual({
      users: [fake.scene.human.id],
      roles: [],
      everyone: true,
    });
  });

  it('lists channel history newest first, honouring limit and before', async () => {
    const ids: string[] = [];
    for (const content of ['a', 'b', 'c']) {
      ids.push(
        (
          (await (await call('POST', `/channels/${fake.world.opsChannelId}/messages`, { content })).json()) as {
            id: string;
          }
        ).id,
      );
    }
    const latestTwo = (await (
      await call('GET', `/channels/${fake.world.opsChannelId}/messages?limit=2`)
    ).json()) as Array<{ content: string }>;
    expect(latestTwo.map((m) => m.content)).toEqual(['c', 'b']);
    const older = (await (
      await call('GET', `/channels/${fake.world.opsChannelId}/messages?before=${ids[1]!}`)
    ).json()) as Array<{ content: string }>;
    expect(older.map((m) => m.content)).toEqual(['a']);
  });

  it('refuses a second thread on the same message with 160004', async () => {
    const msg = (await (
      await call('POST', `/channels/${fake.scene.channelId}/messages`, { content: 'start' })
    ).json()) as { id: string };
    const path = `/channels/${fake.scene.channelId}/messages/${msg.id}/threads`;
    const thread = await call('POST', path, { name: 'work' });
    expect(thread.status).toBe(201);
    expect(await thread.json()).toMatchObject({ id: msg.id, type: 11, parent_id: fake.scene.channelId, name: 'work' });
    const again = await call('POST', path, { name: 'work' });
    expect(((await again.json()) as { code: number }).code).toBe(160004);
  });

  it('keeps every edit of a message in its history', async () => {
    const msg = (await (
      await call('POST', `/channels/${fake.scene.channelId}/messages`, { content: 'v1' })
    ).json()) as { id: string };
    await call('PATCH', `/channels/${fake.scene.channelId}/messages/${msg.id}`, { content: 'v2' });
    await call('PATCH', `/channels/${fake.scene.channelId}/messages/${msg.id}`, { content: 'v3', components: [] });
    expect(fake.message(msg.id)?.history.map((v) => v.content)).toEqual(['v1', 'v2', 'v3']);
    expect(fake.message(msg.id)?.message.edited_timestamp).not.toBeNull();
  });
});
