/**
 * A protocol-faithful fake of Discord for tests: REST (API v10) and the gateway on one loopback
 * port, driving the real discord.js Client. Start it, point the client at it with
 * `fake.clientOptions()`, log in with `fake.token`, then drive the world from the test:
 *
 *   const fake = await FakeDiscord.start();
 *   const client = new Client({ intents, ...fake.clientOptions() });
 *   await client.login(fake.token);
 *   fake.userSays(guildMessageMentioningBot(fake.scene, { text: 'hi' }));
 *   const post = await fake.waitForRequest({ route: 'POST /channels/:channel_id/messages' });
 *
 * Everything the bot does is recorded: `requests` (every REST call), `world.messages` (messages
 * with full edit history and who they would ping), `rateLimits` (per-route counters, forced 429s)
 * and `gateway` (frames received, events dispatched, connection controls).
 */
import { FakeDiscordCdn } from './cdn.ts';
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Json } from '../../fixtures/discord/objects.ts';
import type { DiscordScene } from '../../fixtures/discord/payloads.ts';
import { ApiError, methodNotAllowed, notFound, unauthorized, unsupported } from './api-errors.ts';
import { FakeGateway, waitUntil } from './gateway.ts';
import { FakeRateLimiter, type BucketRule, type RouteKey } from './rate-limiter.ts';
import { matchRoute, type RestContext } from './rest.ts';
import { FakeWorld, type InteractionState, type StoredMessage, type StoredUpload, type UploadedFile } from './world.ts';

export interface FakeDiscordOptions {
  /** The bot token clients must present (`Authorization: Bot <token>`, IDENTIFY `token`). */
  token?: string;
  /** Per-route bucket overrides, keyed `METHOD /template`. */
  buckets?: Record<RouteKey, BucketRule>;
  /** HELLO's heartbeat_interval. Discord sends 41250; tests rarely care. */
  heartbeatIntervalMs?: number;
  /** Intent bits the app may not use (e.g. MessageContent not enabled): IDENTIFY closes with 4014. */
  disallowedIntents?: number;
  /**
   * Enforce Discord's 3-second deadline for the first interaction response. Off by default: on a
   * loaded CI machine it makes tests flaky; turn it on to test deadline handling itself.
   */
  interactionAckDeadlineMs?: number;
}

export interface RestRequest {
  index: number;
  method: string;
  path: string;
  /** `METHOD /template`, or `METHOD <path>` for paths the fake does not know. */
  route: string;
  params: Record<string, string>;
  query: URLSearchParams;
  /** The JSON body, or a multipart request's payload_json. */
  body: unknown;
  /** A multipart request's `files[n]` parts: names and sizes (the bytes are in `world.uploads`). */
  files: Array<{ index: number; filename: string; size: number }>;
  status: number;
  response: unknown;
  at: number;
}

/** A request the fake keeps from being answered until the test releases it (see `holdNext`). */
export interface HeldRequest {
  /** Resolves when the matching request has arrived and is being held. */
  reached: Promise<void>;
  /** Lets the request through (answered as usual from then on); safe to call more than once. */
  release(): void;
}

interface Hold {
  route: string;
  matches: (body: unknown) => boolean;
  held: HeldRequest;
  arrived: () => void;
  released: Promise<void>;
}

export type RequestMatch =
  ((r: RestRequest) => boolean) | { route?: string; method?: string; status?: number; since?: number };

export class FakeDiscord {
  readonly token: string;
  readonly world: FakeWorld;
  readonly gateway: FakeGateway;
  readonly rateLimits: FakeRateLimiter;
  readonly requests: RestRequest[] = [];
  readonly #options: FakeDiscordOptions;
  readonly #server: http.Server;
  readonly #changes = new EventEmitter();
  readonly #holds: Hold[] = [];
  #origin = '';

  private constructor(options: FakeDiscordOptions) {
    this.#options = options;
    this.token = options.token ?? 'fake-bot-token.countersign.test';
    this.world = new FakeWorld(this.token);
    this.rateLimits = new FakeRateLimiter(options.buckets);
    this.gateway = new FakeGateway(
      {
        token: this.token,
        bot: this.world.bot,
        application: { id: this.world.application.id, flags: this.world.application.flags },
        guildCreates: () => this.world.guildCreates(),
      },
      { heartbeatIntervalMs: options.heartbeatIntervalMs ?? 41_250, disallowedIntents: options.disallowedIntents ?? 0 },
    );
    this.#changes.setMaxListeners(100);
    this.#server = http.createServer((req, res) => void this.#onRequest(req, res));
    this.#server.on('upgrade', (req, socket, head) => this.gateway.handleUpgrade(req, socket, head));
  }

  /** Attachments people send (`cdn.attachment(channel, name, bytes)`), served without a token. */
  readonly cdn = new FakeDiscordCdn(() => `http://${this.#origin}`);

  static async start(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
    const fake = new FakeDiscord(options);
    await new Promise<void>((resolve) => fake.#server.listen(0, '127.0.0.1', resolve));
    const { port } = fake.#server.address() as AddressInfo;
    fake.#origin = `127.0.0.1:${port}`;
    fake.gateway.url = `ws://${fake.#origin}`;
    return fake;
  }

  /** REST base to give discord.js (`rest.api`); requests go to `${restUrl}/v10/...`. */
  get restUrl(): string {
    return `http://${this.#origin}/api`;
  }

  /** What GET /gateway/bot returns as `url`. */
  get gatewayUrl(): string {
    return `ws://${this.#origin}/gateway`;
  }

  /** Ids of the bot, guild, channels and person every fixture builder needs. */
  get scene(): DiscordScene {
    return this.world.scene;
  }

  /** Spread into `new Client({...})`: points REST (and through GET /gateway/bot, the gateway) here. */
  clientOptions(): { rest: { api: string; version: string } } {
    return { rest: { api: this.restUrl, version: '10' } };
  }

  // --- driving the world ----------------------------------------------------------------------

  /** A person's message arrives: stored in the channel's history and dispatched as MESSAGE_CREATE. */
  userSays(payload: Json): StoredMessage {
    const stored = this.world.storeUserMessage(payload);
    this.gateway.dispatch('MESSAGE_CREATE', payload);
    return stored;
  }

  /** A person runs a command, types into an option or clicks a button: INTERACTION_CREATE. */
  interact(payload: Json): InteractionState {
    const state = this.registerInteraction(payload);
    this.gateway.dispatch('INTERACTION_CREATE', payload);
    return state;
  }

  /**
   * A person runs a registered slash command, as Discord's client lets them: only a command the app
   * registered (in the guild, or globally) is offered, only its own options can be filled in, every
   * `required` one must be, and a string option with `choices` takes one of them (API v10,
   * "Application Commands": the client enforces these before an INTERACTION_CREATE is sent).
   * Throws for a command the client would not send; otherwise dispatches it as `interact` does.
   */
  runCommand(payload: Json): InteractionState {
    const data = payload.data as { name: string; options?: Array<{ name: string; value?: unknown }> };
    const scope = payload.guild_id ? (payload.guild_id as string) : 'global';
    const registered = [...(this.world.commands.get(scope) ?? []), ...(this.world.commands.get('global') ?? [])];
    const command = registered.find((c) => c.name === data.name && ((c.type as number | undefined) ?? 1) === 1);
    if (!command) throw new Error(`/${data.name} is not a registered command here: Discord would not offer it`);
    const defined =
      (command.options as Array<{ name: string; required?: boolean; choices?: Json[] }> | undefined) ?? [];
    for (const given of data.options ?? []) {
      const option = defined.find((o) => o.name === given.name);
      if (!option) throw new Error(`/${data.name} has no option "${given.name}"`);
      if (option.choices && !option.choices.some((c) => c.value === given.value))
        throw new Error(`/${data.name} ${given.name}: "${String(given.value)}" is not one of its choices`);
    }
    const missing = defined.filter((o) => o.required && !(data.options ?? []).some((g) => g.name === o.name));
    if (missing.length) throw new Error(`/${data.name} needs ${missing.map((o) => o.name).join(', ')}`);
    return this.interact(payload);
  }

  /**
   * Makes an interaction known to REST (its callback and webhook routes) without dispatching it:
   * for tests of a process that answers interactions it did not receive over this gateway.
   */
  registerInteraction(payload: Json): InteractionState {
    const state: InteractionState = {
      payload,
      id: payload.id as string,
      token: payload.token as string,
      type: payload.type as number,
      channelId: (payload.channel_id ?? (payload.channel as Json | undefined)?.id) as string,
      followupIds: [],
      receivedAt: Date.now(),
    };
    this.world.interactions.set(state.id, state);
    return state;
  }

  /** Creates a thread in a guild channel (as if a person made it) and dispatches THREAD_CREATE. */
  createThread(fields: { parentId?: string; name: string }): Json {
    const thread = this.world.createThread({
      parentId: fields.parentId ?? this.scene.channelId,
      name: fields.name,
      type: 11,
    });
    thread.owner_id = this.scene.human.id;
    if (this.gateway.sessions.length) this.gateway.dispatch('THREAD_CREATE', { ...thread, newly_created: true });
    return thread;
  }

  // --- reading what happened ------------------------------------------------------------------

  message(id: string): StoredMessage | undefined {
    return this.world.messages.get(id);
  }

  /** Live (not deleted) messages of a channel, oldest first; ephemeral ones only when asked. */
  messagesIn(channelId: string, options: { includeEphemeral?: boolean } = {}): StoredMessage[] {
    return this.world.messagesIn(channelId).filter((m) => !m.deleted && (options.includeEphemeral || !m.ephemeral));
  }

  /** What the bot said in a channel, as people see it now: final content of each live message. */
  botTextIn(channelId: string): string[] {
    return this.messagesIn(channelId)
      .filter((m) => m.source !== 'user')
      .map((m) => m.message.content as string);
  }

  /** Attachments the bot posted, oldest first, with every byte. */
  get uploads(): StoredUpload[] {
    return this.world.uploads;
  }

  interaction(id: string): InteractionState | undefined {
    return this.world.interactions.get(id);
  }

  /** Bulk overwrites of commands (PUT), for one scope (`'global'` or a guild id) or all. */
  commandPuts(scope?: string): number {
    return this.world.commandPuts.filter((p) => scope === undefined || p.scope === scope).length;
  }

  /** Requests matching `match`; an object matches by route key, method, status and index ≥ since. */
  requestsMatching(match: RequestMatch): RestRequest[] {
    return this.requests.filter(toPredicate(match));
  }

  /**
   * The first request matching `match` — already made, or the next one. To wait for a new call,
   * pass `since: fake.requests.length` taken before the action.
   */
  waitForRequest(match: RequestMatch, timeoutMs = 10_000): Promise<RestRequest> {
    const pred = toPredicate(match);
    return waitUntil(
      this.#changes,
      () => this.requests.find(pred),
      `a REST request matching ${describe(match)}`,
      timeoutMs,
    );
  }

  /**
   * Keeps the next request to `route` (a `METHOD /template` key) whose body `matches` waiting until
   * `release()` — a slow network for one call — so a test can act while the bot waits on it (e.g.
   * click a card's first message while its later messages are still being posted). It is then
   * answered as if it had just arrived.
   */
  holdNext(route: string, matches: (body: unknown) => boolean = () => true): HeldRequest {
    let arrived!: () => void;
    let release!: () => void;
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    const held = { reached, release };
    this.#holds.push({ route, matches, held, arrived, released });
    return held;
  }

  /** Resolves once `check` yields a value, re-checked after every REST request. */
  until<T>(check: () => T | undefined, what: string, timeoutMs = 10_000): Promise<T> {
    return waitUntil(this.#changes, check, what, timeoutMs);
  }

  async close(): Promise<void> {
    await this.gateway.close();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  // --- HTTP -------------------------------------------------------------------------------------

  async #onRequest(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', `http://${this.#origin}`);
    if (this.cdn.handle(req, res, url.pathname)) return;
    const method = (req.method ?? 'GET').toUpperCase();
    const raw = await readBytes(req);
    const record: RestRequest = {
      index: this.requests.length,
      method,
      path: url.pathname,
      route: `${method} ${url.pathname}`,
      params: {},
      query: url.searchParams,
      body: undefined,
      files: [],
      status: 0,
      response: undefined,
      at: Date.now(),
    };
    let headers: Record<string, string> = {};
    try {
      const prefix = '/api/v10';
      if (!url.pathname.startsWith(`${prefix}/`)) throw notFound();
      const matched = matchRoute(method, url.pathname.slice(prefix.length));
      if (!('route' in matched)) throw matched.pathExists ? methodNotAllowed() : notFound();
      record.route = matched.key;
      record.params = matched.params;
      const parsed = await parseBody(raw, req.headers['content-type']);
      record.body = parsed.body;
      record.files = parsed.files.map((f) => ({ index: f.index, filename: f.filename, size: f.bytes.length }));
      if (parsed.files.length && !FILE_ROUTES.has(matched.key)) throw unsupported(`file uploads on ${matched.key}`);
      await this.#waitIfHeld(matched.key, record.body);
      if (matched.route.auth && req.headers.authorization !== `Bot ${this.token}`) throw unauthorized();
      const exempt = !matched.route.auth;
      const decision = this.rateLimits.decide(matched.key, matched.major, exempt);
      headers = decision.headers;
      if (decision.tooManyRequests) {
        this.#finish(res, record, 429, decision.tooManyRequests, headers, decision.cause, matched.major);
        return;
      }
      const ctx: RestContext = {
        world: this.world,
        params: matched.params,
        query: url.searchParams,
        body: record.body,
        files: parsed.files,
        notify: (t, d) => {
          if (this.gateway.sessions.length) this.gateway.dispatch(t, d);
        },
        gatewayUrl: this.gatewayUrl,
        interactionAckDeadlineMs: this.#options.interactionAckDeadlineMs,
      };
      const reply = matched.route.handle(ctx);
      this.#finish(res, record, reply.status, reply.body, headers, undefined, matched.major);
    } catch (error) {
      if (error instanceof ApiError) this.#finish(res, record, error.status, error.body, headers, undefined, '');
      else
        this.#finish(
          res,
          record,
          500,
          { message: `Fake Discord bug: ${String(error)}`, code: 0 },
          headers,
          undefined,
          '',
        );
    }
  }

  async #waitIfHeld(route: string, body: unknown): Promise<void> {
    const at = this.#holds.findIndex((h) => h.route === route && h.matches(body));
    if (at < 0) return;
    const [hold] = this.#holds.splice(at, 1);
    hold!.arrived();
    await hold!.released;
  }

  #finish(
    res: http.ServerResponse,
    record: RestRequest,
    status: number,
    body: unknown,
    headers: Record<string, string>,
    cause: 'forced' | 'bucket' | 'global' | undefined,
    major: string,
  ): void {
    record.status = status;
    record.response = body;
    // Numbered when answered: concurrent requests may finish out of order.
    record.index = this.requests.length;
    this.requests.push(record);
    this.rateLimits.record({ route: record.route, major, at: record.at, status, ...(cause ? { cause } : {}) });
    const out: Record<string, string> = { ...headers, Via: '1.1 google' };
    if (body !== undefined && status !== 204) {
      out['Content-Type'] = 'application/json';
      res.writeHead(status, out).end(JSON.stringify(body));
    } else {
      res.writeHead(status, out).end();
    }
    this.#changes.emit('change');
  }
}

/** Routes whose multipart bodies the fake reads; files sent anywhere else get a 400 that says so. */
const FILE_ROUTES = new Set(['POST /channels/:channel_id/messages']);

function readBytes(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

const badRequest = () => new ApiError(400, { message: '400: Bad Request', code: 50109 });

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw badRequest();
  }
}

/**
 * A request body: JSON, or multipart/form-data as "Uploading Files" describes it — the message as a
 * `payload_json` field and each file as a `files[n]` part with its filename.
 */
async function parseBody(
  raw: Buffer,
  contentType: string | undefined,
): Promise<{ body: unknown; files: UploadedFile[] }> {
  if (!raw.length) return { body: undefined, files: [] };
  if (!contentType?.startsWith('multipart/form-data')) return { body: parseJson(raw.toString('utf8')), files: [] };
  let form: FormData;
  try {
    form = await new Response(new Uint8Array(raw), { headers: { 'content-type': contentType } }).formData();
  } catch {
    throw badRequest();
  }
  const files: UploadedFile[] = [];
  let body: unknown;
  for (const [name, value] of form.entries()) {
    if (name === 'payload_json' && typeof value === 'string') body = parseJson(value);
    const index = /^files\[(\d+)\]$/.exec(name)?.[1];
    if (index !== undefined && typeof value !== 'string') {
      files.push({
        index: Number(index),
        filename: value.name,
        contentType: value.type || 'application/octet-stream',
        bytes: Buffer.from(await value.arrayBuffer()),
      });
    }
  }
  return { body, files };
}

function toPredicate(match: RequestMatch): (r: RestRequest) => boolean {
  if (typeof match === 'function') return match;
  return (r) =>
    (match.route === undefined || r.route === match.route) &&
    (match.method === undefined || r.method === match.method) &&
    (match.status === undefined || r.status === match.status) &&
    (match.since === undefined || r.index >= match.since);
}

function describe(match: RequestMatch): string {
  return typeof match === 'function' ? 'a predicate' : JSON.stringify(match);
}
