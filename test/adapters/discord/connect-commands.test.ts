import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord } from '../../fakes/discord/index.ts';
import { startFakeOAuthServer, type FakeOAuthServer } from '../../fakes/oauth/server.ts';
import { slashCommandInteraction, type CommandOption } from '../../fixtures/discord/payloads.ts';
import { snowflake } from '../../fixtures/discord/snowflake.ts';
import type { ApiUser, Json } from '../../fixtures/discord/objects.ts';
import { startHarness, type Harness } from '../../helpers/harness.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { commandDefinitions, registerCommands } from '../../../src/adapters/discord/commands.ts';
import { createRest } from '../../../src/adapters/discord/outbound.ts';
import { createLogger } from '../../../src/log.ts';

const REFUSAL = 'Sorry, I only work for the dev team here.';
const PUBLIC_URL = 'http://127.0.0.1:9/';

const person = (name: string): ApiUser => ({
  id: snowflake(),
  username: name,
  global_name: name,
  discriminator: '0',
  avatar: null,
});

/** The `/countersign` subcommand's options. */
const connectOf = (definitions: ReturnType<typeof commandDefinitions>) =>
  (
    (definitions.find((c) => c.name === 'countersign')!.options as Json[]).find((o) => o.name === 'connect')!
      .options as Json[]
  ).find((o) => o.name === 'server')!;

describe('/countersign connect and connections on Discord', () => {
  let fake: FakeDiscord;
  let oauth: FakeOAuthServer;
  let db: TestDatabase;
  let h: Harness;
  let dir: string;
  const mallory = person('mallory');

  beforeAll(async () => {
    fake = await FakeDiscord.start();
    oauth = await startFakeOAuthServer();
    dir = mkdtempSync(path.join(tmpdir(), 'cs-discord-connect-'));
    writeFileSync(
      path.join(dir, 'policy.yaml'),
      [
        'version: 1',
        'requesters:',
        `  allow: [{ workspaces: [discord:${fake.scene.guildId}] }, { dm: true }]`,
        `  deny: [discord:${mallory.id}]`,
        `  refusal: "${REFUSAL}"`,
      ].join('\n'),
    );
    writeFileSync(
      path.join(dir, 'mcp.json'),
      JSON.stringify({ mcpServers: { github: { url: oauth.mcpUrl, auth: 'oauth' } } }),
    );
    fake.world.addMember(mallory);
    db = await createTestDatabase();
    h = await startHarness({
      db,
      env: {
        DISCORD_TOKEN: fake.token,
        DISCORD_APPLICATION_ID: fake.scene.applicationId,
        DISCORD_GUILD_ID: fake.scene.guildId,
        DISCORD_API_URL: fake.restUrl,
        POLICY_FILE: path.join(dir, 'policy.yaml'),
        MCP_CONFIG: path.join(dir, 'mcp.json'),
        PUBLIC_URL,
        TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      },
    });
  });
  afterAll(async () => {
    await h?.stop();
    await fake?.close();
    await oauth?.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const countersign = (subcommand: string, options: CommandOption[] = [], user?: ApiUser) =>
    fake.interact(
      slashCommandInteraction(fake.scene, {
        name: 'countersign',
        options: [{ name: subcommand, type: 1, options }],
        ...(user ? { user } : {}),
      }),
    );
  const server = (value: string): CommandOption => ({ name: 'server', type: 3, value });

  /** The interaction's response message once it no longer shows "thinking". */
  const answered = (run: ReturnType<typeof countersign>, what: string) =>
    fake.until(
      () => {
        const id = run.originalMessageId;
        const message = id ? fake.message(id) : undefined;
        const loading = message ? ((message.message.flags as number) & 128) !== 0 : true;
        return message && !loading && message.message.content ? message : undefined;
      },
      what,
      45_000,
    );

  /** What the bot said where more than its asker sees it: live messages that are not ephemeral. */
  const public_ = () =>
    JSON.stringify([...fake.world.messages.values()].filter((m) => !m.ephemeral).map((m) => m.message));

  it('registers connect (the per-person servers as choices) and connections under /countersign', () => {
    const registered = fake.world.commands.get(fake.scene.guildId) ?? [];
    const countersignCommand = registered.find((c) => c.name === 'countersign')!;
    const subcommands = countersignCommand.options as Json[];
    expect(subcommands.map((o) => o.name)).toEqual(expect.arrayContaining(['connect', 'connections']));
    const option = (subcommands.find((o) => o.name === 'connect')!.options as Json[])[0]!;
    expect(option).toMatchObject({ name: 'server', required: true, choices: [{ name: 'github', value: 'github' }] });
  });

  it('offers choices only when Discord can show them all, and free text otherwise', () => {
    expect(connectOf(commandDefinitions([], ['github', 'linear'])).choices).toEqual([
      { name: 'github', value: 'github' },
      { name: 'linear', value: 'linear' },
    ]);
    expect(connectOf(commandDefinitions([], [])).choices).toBeUndefined();
    expect(
      connectOf(
        commandDefinitions(
          [],
          Array.from({ length: 26 }, (_, i) => `s${i}`),
        ),
      ).choices,
    ).toBeUndefined();
    const countersignCommand = commandDefinitions([], ['github']).find((c) => c.name === 'countersign')!;
    for (const o of countersignCommand.options as Json[])
      expect(String(o.description).length, String(o.name)).toBeLessThanOrEqual(100);
  });

  it('registers again when the per-person servers change (a subcommand’s choices count), not when they stay', async () => {
    const rest = createRest(fake.token, fake.restUrl);
    const log = createLogger('silent');
    const { applicationId, guildId } = fake.scene;
    await registerCommands(rest, applicationId, guildId, log, [], ['github']);
    const puts = fake.commandPuts(guildId);
    expect(await registerCommands(rest, applicationId, guildId, log, [], ['github'])).toBe(false);
    expect(await registerCommands(rest, applicationId, guildId, log, [], ['github', 'linear'])).toBe(true);
    expect(await registerCommands(rest, applicationId, guildId, log, [], ['github'])).toBe(true);
    expect(fake.commandPuts(guildId)).toBe(puts + 2);
  });

  it('answers connect privately with a Link button and the URL as text, never in the channel', async () => {
    const run = countersign('connect', [server('github')]);
    // Deferred as ephemeral at once: the core asks the server's sign-in before answering.
    await fake.until(() => (run.response ? true : undefined), 'the deferred reply', 45_000);
    expect(run.response).toMatchObject({ type: 5, data: { flags: 64 } });
    const shown = await answered(run, 'the Connect link');
    expect(shown.ephemeral).toBe(true);
    const [row] = shown.message.components as Array<{ components: Json[] }>;
    const button = row!.components[0]!;
    expect(button).toMatchObject({ type: 2, style: 5, label: 'Connect github' });
    const url = new URL(String(button.url));
    expect(url.origin).toBe(new URL(PUBLIC_URL).origin);
    expect(url.pathname).toBe('/oauth/start');
    expect(url.searchParams.get('s')).toBeTruthy();
    expect(String(shown.message.content)).toContain(url.toString());
    expect(public_()).not.toContain(url.searchParams.get('s')!);
    expect(public_()).not.toContain('/authorize');
  });

  it('gives a person the policy refuses the refusal and nothing else', async () => {
    const registrations = oauth.registrations.length;
    for (const [subcommand, options] of [
      ['connect', [server('github')]],
      ['connections', []],
    ] as const) {
      const run = countersign(subcommand, [...options], mallory);
      await fake.until(() => (run.response ? true : undefined), `the refusal of ${subcommand}`, 45_000);
      expect(run.response).toMatchObject({ type: 4, data: { content: REFUSAL, flags: 64 | 4 } });
      expect(run.response!.data).not.toHaveProperty('components');
    }
    expect(oauth.registrations.length).toBe(registrations);
  });

  it('answers an unknown server privately, with a mention in it shown as text and pinging no one', async () => {
    const bob = person('bob');
    const run = countersign('connect', [server(`<@${bob.id}> @everyone`)]);
    const shown = await answered(run, 'the unknown server');
    expect(shown.ephemeral).toBe(true);
    expect(String(shown.message.content)).toContain('Known: github');
    expect(String(shown.message.content)).not.toContain(`<@${bob.id}>`);
    expect(String(shown.message.content)).not.toContain('@everyone');
    expect(shown.pings).toMatchObject({ users: [], everyone: false });
    expect(shown.message.components ?? []).toEqual([]);
  });

  it('lists the person’s own connections privately', async () => {
    const run = countersign('connections');
    const shown = await answered(run, 'the connections');
    expect(shown.ephemeral).toBe(true);
    expect(String(shown.message.content)).toContain('github: not connected');
    expect(public_()).not.toContain('Your connections');
  });

  it('names connect and connections in the help', async () => {
    const run = countersign('help');
    await fake.until(() => (run.response ? true : undefined), 'the help', 45_000);
    const content = String((run.response!.data as Json).content);
    expect(content).toContain('/countersign connect');
    expect(content).toContain('/countersign connections');
  });
});
