import zlib from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { guildMessage, guildMessageMentioningBot } from '../../fixtures/discord/payloads.ts';
import { FakeDiscord, GatewayIntent, GatewayOp } from '../../fakes/discord/index.ts';

interface Frame {
  op: number;
  d: unknown;
  s: number | null;
  t: string | null;
}

/** A bare gateway client: enough protocol to test the fake's side without discord.js in between. */
class RawClient {
  readonly frames: Frame[] = [];
  readonly ws: WebSocket;
  closed: Promise<number>;
  #waiters: Array<() => void> = [];

  constructor(url: string, options: { zlibStream?: boolean } = {}) {
    this.ws = new WebSocket(`${url}?v=10&encoding=json${options.zlibStream ? '&compress=zlib-stream' : ''}`);
    const inflate = options.zlibStream ? zlib.createInflate() : undefined;
    inflate?.on('data', (chunk: Buffer) => this.#push(JSON.parse(chunk.toString('utf8')) as Frame));
    this.ws.on('message', (data: Buffer, isBinary) => {
      if (inflate && isBinary) inflate.write(data);
      else this.#push(JSON.parse(data.toString('utf8')) as Frame);
    });
    this.closed = new Promise((resolve) => this.ws.on('close', (code) => resolve(code)));
  }

  #push(frame: Frame): void {
    this.frames.push(frame);
    for (const w of this.#waiters.splice(0)) w();
  }

  async frame(match: (f: Frame) => boolean, timeoutMs = 5000): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.frames.find(match);
      if (found) return found;
      if (Date.now() > deadline) throw new Error('frame not received');
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve);
        setTimeout(resolve, 100);
      });
    }
  }

  send(op: number, d: unknown): void {
    const text = JSON.stringify({ op, d });
    if (this.ws.readyState === WebSocket.CONNECTING) this.ws.once('open', () => this.ws.send(text));
    else this.ws.send(text);
  }

  identify(token: string, intents: number): void {
    this.send(GatewayOp.Identify, { token, intents, properties: { os: 'linux', browser: 'test', device: 'test' } });
  }
}

describe('FakeDiscord gateway protocol', () => {
  let fake: FakeDiscord;
  let clients: RawClient[];
  const connect = (options?: { zlibStream?: boolean }) => {
    const c = new RawClient(fake.gatewayUrl, options);
    clients.push(c);
    return c;
  };

  beforeEach(async () => {
    fake = await FakeDiscord.start({ heartbeatIntervalMs: 45_000 });
    clients = [];
  });
  afterEach(async () => {
    for (const c of clients) if (c.ws.readyState !== WebSocket.CONNECTING) c.ws.terminate();
    await fake.close();
  });

  it('greets with HELLO carrying the heartbeat interval', async () => {
    const hello = await connect().frame((f) => f.op === GatewayOp.Hello);
    expect(hello.d).toEqual({ heartbeat_interval: 45_000 });
  });

  it('closes with 4004 when IDENTIFY carries the wrong token', async () => {
    const client = connect();
    await client.frame((f) => f.op === GatewayOp.Hello);
    client.identify('not-the-token', GatewayIntent.Guilds);
    expect(await client.closed).toBe(4004);
  });

  it('closes with 4014 when IDENTIFY asks for an intent the app may not use', async () => {
    await fake.close();
    fake = await FakeDiscord.start({ disallowedIntents: GatewayIntent.MessageContent });
    const client = connect();
    await client.frame((f) => f.op === GatewayOp.Hello);
    client.identify(fake.token, GatewayIntent.Guilds | GatewayIntent.MessageContent);
    expect(await client.closed).toBe(4014);
  });

  it('answers IDENTIFY with READY (seq 1) and then GUILD_CREATE for each guild', async () => {
    const client = connect();
    client.identify(fake.token, GatewayIntent.Guilds);
    const ready = await client.frame((f) => f.t === 'READY');
    const guild = await client.frame((f) => f.t === 'GUILD_CREATE');
    expect(ready.s).toBe(1);
    expect(ready.d).toMatchObject({
      v: 10,
      user: { id: fake.scene.bot.id, bot: true },
      guilds: [{ id: fake.scene.guildId, unavailable: true }],
      resume_gateway_url: expect.stringMatching(/^ws:\/\/127\.0\.0\.1:\d+/),
      application: { id: fake.scene.applicationId },
    });
    expect(guild.s).toBe(2);
    expect(guild.d).toMatchObject({
      id: fake.scene.guildId,
      channels: expect.arrayContaining([expect.objectContaining({ id: fake.scene.channelId })]),
    });
  });

  it('acknowledges a heartbeat with op 11', async () => {
    const client = connect();
    client.send(GatewayOp.Heartbeat, null);
    expect((await client.frame((f) => f.op === GatewayOp.HeartbeatAck)).d).toBeNull();
  });

  it('blanks content of guild messages not mentioning the bot when MessageContent is missing', async () => {
    const client = connect();
    client.identify(fake.token, GatewayIntent.Guilds | GatewayIntent.GuildMessages);
    await client.frame((f) => f.t === 'GUILD_CREATE');
    fake.userSays(guildMessage(fake.scene, { text: 'just chatting' }));
    fake.userSays(guildMessageMentioningBot(fake.scene, { text: 'help me' }));
    const [plain, mention] = await Promise.all([
      client.frame((f) => f.t === 'MESSAGE_CREATE' && f.s === 3),
      client.frame((f) => f.t === 'MESSAGE_CREATE' && f.s === 4),
    ]);
    expect((plain.d as { content: string }).content).toBe('');
    expect((mention.d as { content: string }).content).toBe(`<@${fake.scene.bot.id}> help me`);
  });

  it('does not send message events to a session without the GuildMessages intent', async () => {
    const client = connect();
    client.identify(fake.token, GatewayIntent.Guilds);
    await client.frame((f) => f.t === 'GUILD_CREATE');
    fake.userSays(guildMessageMentioningBot(fake.scene, { text: 'anyone?' }));
    expect(fake.gateway.dispatched('MESSAGE_CREATE')).toHaveLength(0);
  });

  it('answers RESUME of an unknown session with op 9 (not resumable)', async () => {
    const client = connect();
    client.send(GatewayOp.Resume, { token: fake.token, session_id: 'nope', seq: 3 });
    expect((await client.frame((f) => f.op === GatewayOp.InvalidSession)).d).toBe(false);
  });

  it('replays missed events in order on RESUME, then sends RESUMED', async () => {
    const first = connect();
    first.identify(fake.token, GatewayIntent.Guilds | GatewayIntent.GuildMessages | GatewayIntent.MessageContent);
    const ready = await first.frame((f) => f.t === 'READY');
    await first.frame((f) => f.t === 'GUILD_CREATE');
    fake.gateway.closeConnections(4000);
    expect(await first.closed).toBe(4000);
    fake.userSays(guildMessage(fake.scene, { text: 'missed one' }));
    fake.userSays(guildMessage(fake.scene, { text: 'missed two' }));
    const second = connect();
    second.send(GatewayOp.Resume, {
      token: fake.token,
      session_id: (ready.d as { session_id: string }).session_id,
      seq: 2,
    });
    const resumed = await second.frame((f) => f.t === 'RESUMED');
    const replayed = second.frames.filter((f) => f.t === 'MESSAGE_CREATE');
    expect(replayed.map((f) => [f.s, (f.d as { content: string }).content])).toEqual([
      [3, 'missed one'],
      [4, 'missed two'],
    ]);
    expect(resumed.s).toBe(5);
  });

  it('compresses frames as one zlib stream when asked for compress=zlib-stream', async () => {
    const client = connect({ zlibStream: true });
    client.identify(fake.token, GatewayIntent.Guilds);
    await client.frame((f) => f.op === GatewayOp.Hello);
    const ready = await client.frame((f) => f.t === 'READY');
    expect(ready.s).toBe(1);
  });
});
