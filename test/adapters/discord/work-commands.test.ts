import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord } from '../../fakes/discord/index.ts';
import { slashCommandInteraction } from '../../fixtures/discord/payloads.ts';
import { snowflake } from '../../fixtures/discord/snowflake.ts';
import type { ApiUser, Json } from '../../fixtures/discord/objects.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { makeRepo, setupGit } from '../../repos/git-fixture.ts';
import type { Script } from '../../../src/agent/providers/scripted.ts';
import { Priority } from '../../../src/core/work-item.ts';
import { commandDefinitions, registerCommands } from '../../../src/adapters/discord/commands.ts';
import { createRest } from '../../../src/adapters/discord/outbound.ts';
import { createLogger } from '../../../src/log.ts';

const REFUSAL = 'Sorry, I only work for the dev team here.';
const script: Script = {
  rules: [
    { match: 'Research this', rounds: [{ text: 'Found: '.padEnd(120, '.'), chunkSize: 4, delayMs: 60 }] },
    { rounds: [{ text: 'echo: {{lastUser}}' }] },
  ],
};

const person = (name: string): ApiUser => ({
  id: snowflake(),
  username: name,
  global_name: name,
  discriminator: '0',
  avatar: null,
});

interface StoredItem {
  type: string;
  priority: number;
  conversationId: string;
  input: { prompt?: string };
  payload: Record<string, unknown>;
  reply: { channel: string; parent?: string; workspace?: string };
}

type Option = { name: string; type: number; value: string };
const opt = (name: string, value: string): Option => ({ name, type: 3, value });

describe('/code, /review, /research and /countersign status on Discord', () => {
  let fake: FakeDiscord;
  let db: TestDatabase;
  let h: Harness;
  let dir: string;
  let clone: string;
  const mallory = person('mallory');
  const env = (extra: Record<string, string> = {}) => ({
    DISCORD_TOKEN: fake.token,
    DISCORD_APPLICATION_ID: fake.scene.applicationId,
    DISCORD_GUILD_ID: fake.scene.guildId,
    DISCORD_API_URL: fake.restUrl,
    POLICY_FILE: path.join(dir, 'policy.yaml'),
    REPOS: `api=${clone}`,
    WORKTREES_DIR: path.join(dir, 'worktrees'),
    ...extra,
  });

  beforeAll(async () => {
    fake = await FakeDiscord.start();
    ({ dir, clone } = makeRepo());
    setupGit(clone, 'branch', 'feature/login');
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
    db = await createTestDatabase();
    h = await startHarness({ db, script, env: env() });
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const itemsOf = async (userId: string) =>
    (
      await h.app.pool.query<{ item: StoredItem }>(
        `SELECT item FROM countersign.work_items WHERE item->'requester'->>'userId' = $1 ORDER BY seq`,
        [userId],
      )
    ).rows.map((r) => r.item);

  const command = (name: string, options: Option[], fields: { user?: ApiUser; inDm?: boolean } = {}) =>
    fake.interact(slashCommandInteraction(fake.scene, { name, options, ...fields }));

  /** The interaction's response message once it no longer shows "thinking". */
  const answered = (run: ReturnType<typeof command>, what: string) =>
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

  it('registers the work commands with the repositories as choices, and status under /countersign', () => {
    const registered = fake.world.commands.get(fake.scene.guildId) ?? [];
    const byName = Object.fromEntries(registered.map((c) => [c.name as string, c]));
    for (const name of ['code', 'review', 'research']) expect(byName[name], name).toBeDefined();
    const repo = (byName.code!.options as Json[]).find((o) => o.name === 'repo')!;
    expect(repo).toMatchObject({ required: true, choices: [{ name: 'api', value: 'api' }] });
    expect((byName.countersign!.options as Json[]).map((o) => o.name)).toContain('status');
  });

  it('runs /code in a thread started on its header: a CODE item of its own conversation', async () => {
    const run = command('code', [opt('repo', 'api'), opt('task', 'add a health check')]);
    await fake.until(() => (run.response?.type === 5 ? true : undefined), 'the deferred /code', 45_000);
    const header = await answered(run, 'the header');
    const headerId = header.message.id as string;
    expect(header.ephemeral).toBe(false);
    expect(header.message.content).toBe('Working on api: add a health check');
    // Discord gives a thread started on a message that message's id.
    const thread = await fake.until(() => fake.world.channels.get(headerId), 'the thread', 10_000);
    expect(thread).toMatchObject({ parent_id: fake.scene.channelId });
    const [item] = await waitFor(
      async () => ((await itemsOf(fake.scene.human.id)).length ? itemsOf(fake.scene.human.id) : undefined),
      10_000,
      'the CODE item',
    );
    expect(item).toMatchObject({
      type: 'CODE',
      priority: Priority.NORMAL,
      conversationId: `discord:${headerId}`,
      input: { prompt: 'add a health check' },
      payload: { repo: 'api', interactionId: run.id },
      reply: { channel: headerId, parent: fake.scene.channelId, workspace: fake.scene.guildId },
    });
    await fake.until(
      () => (fake.botTextIn(headerId).some((t) => t.startsWith('echo:')) ? true : undefined),
      'the answer in the thread',
      45_000,
    );
  });

  it('enqueues /review at HIGH in a thread, and /research at LOW in a DM’s own conversation', async () => {
    const reviewer = person('rita');
    fake.world.addMember(reviewer);
    const review = command('review', [opt('repo', 'api'), opt('branch', 'feature/login')], { user: reviewer });
    const reviewHeader = await answered(review, 'the review header');
    expect(reviewHeader.message.content).toBe('Reviewing feature/login of api');
    const research = command('research', [opt('topic', 'how other bots queue work')], { inDm: true });
    const researchHeader = await answered(research, 'the research header');
    expect(researchHeader.message.content).toBe('Researching in the background: how other bots queue work');
    const [reviewItem] = await waitFor(
      async () => ((await itemsOf(reviewer.id)).length ? itemsOf(reviewer.id) : undefined),
      10_000,
      'the REVIEW item',
    );
    expect(reviewItem).toMatchObject({
      type: 'REVIEW',
      priority: Priority.HIGH,
      conversationId: `discord:${reviewHeader.message.id as string}`,
      payload: { repo: 'api', branch: 'feature/login' },
    });
    const researchItem = await waitFor(
      async () => (await itemsOf(fake.scene.human.id)).find((i) => i.type === 'RESEARCH'),
      10_000,
      'the RESEARCH item',
    );
    expect(researchItem).toMatchObject({
      priority: Priority.LOW,
      conversationId: `discord:dm:${fake.scene.dmChannelId}`,
      reply: { channel: fake.scene.dmChannelId },
    });
  });

  it('answers an unknown repository only to the asker, with the known ones, and enqueues nothing', async () => {
    const carol = person('carol');
    fake.world.addMember(carol);
    const run = command('code', [opt('repo', 'nosuch'), opt('task', 'anything')], { user: carol });
    await fake.until(() => run.response, 'the answer', 45_000);
    expect(run.response!.type).toBe(4);
    expect(run.response!.data).toMatchObject({ flags: 64 | 4 });
    expect(String(run.response!.data!.content)).toContain('api');
    expect(await itemsOf(carol.id)).toEqual([]);
  });

  it('gives a person the policy refuses only the refusal, privately: no repository names, no item', async () => {
    fake.world.addMember(mallory);
    const run = command('code', [opt('repo', 'nosuch'), opt('task', 'anything')], { user: mallory });
    await fake.until(() => run.response, 'the refusal', 45_000);
    expect(run.response!.data).toMatchObject({ flags: 64 | 4, content: REFUSAL });
    expect(await itemsOf(mallory.id)).toEqual([]);
  });

  it('handles a command forged for another guild as today’s commands are: the policy refuses it', async () => {
    const other = snowflake();
    const payload = slashCommandInteraction(fake.scene, {
      name: 'research',
      options: [opt('topic', 'anything')],
    });
    const forged = {
      ...payload,
      guild_id: other,
      guild: { id: other, locale: 'en-US', features: [] },
      channel: { ...(payload.channel as Json), guild_id: other },
    };
    const run = fake.interact(forged);
    await fake.until(() => run.response, 'the refusal', 45_000);
    expect(run.response!.data).toMatchObject({ flags: 64 | 4, content: REFUSAL });
    const { rows } = await h.app.pool.query(
      `SELECT 1 FROM countersign.work_items WHERE item->'requester'->>'workspace' = $1`,
      [other],
    );
    expect(rows).toEqual([]);
  });

  it('shows mentions in the task as text in the header, pinging nobody', async () => {
    const dave = person('dave');
    fake.world.addMember(dave);
    const role = fake.world.addRole('oncall', [dave.id]);
    const task = `hostile @everyone @here <@${dave.id}> <@&${role}> **now**`;
    const run = command('code', [opt('repo', 'api'), opt('task', task)], { user: dave });
    const header = await answered(run, 'the header');
    expect(header.pings).toMatchObject({ everyone: false, users: [], roles: [] });
    expect(String(header.message.content)).not.toMatch(/@everyone|@here|<@\d|<@&\d/);
    // The thread's name is what was asked, neutralized the same way.
    const thread = await fake.until(() => fake.world.channels.get(header.message.id as string), 'the thread', 10_000);
    expect(String(thread.name)).not.toContain('@everyone');
  });

  it('says so on the header, and enqueues nothing, when the thread cannot be started', async () => {
    const gina = person('gina');
    fake.world.addMember(gina);
    fake.rateLimits.failNext('POST /channels/:channel_id/messages/:message_id/threads', {
      count: 1,
      retryAfterSeconds: 30,
    });
    const run = command('research', [opt('topic', 'threads refused')], { user: gina });
    const shown = await fake.until(
      () => {
        const message = run.originalMessageId ? fake.message(run.originalMessageId) : undefined;
        return String(message?.message.content ?? '').includes('could not start a thread') ? message : undefined;
      },
      'the header saying the thread could not be started',
      45_000,
    );
    expect(shown.ephemeral).toBe(false);
    expect(await itemsOf(gina.id)).toEqual([]);
  });

  it('answers /countersign status privately with the asker’s own work', async () => {
    const erin = person('erin');
    fake.world.addMember(erin);
    const status = async () => {
      const run = command('countersign', [{ name: 'status', type: 1 } as unknown as Option], { user: erin });
      const shown = await answered(run, 'the status');
      expect(shown.ephemeral).toBe(true);
      return String(shown.message.content);
    };
    expect(await status()).toBe('You have no running or queued work.');
    await answered(command('research', [opt('topic', 'queue fairness')], { user: erin }), 'the research header');
    const text = await waitFor(
      async () => {
        const shown = await status();
        return shown.includes('RESEARCH') ? shown : undefined;
      },
      15_000,
      'the research in the status',
    );
    expect(text).toMatch(/RESEARCH · LOW · (queued|running)/);
    expect(text).not.toContain('health check');
  });

  it('names status and the work commands in /countersign help', async () => {
    const run = command('countersign', [{ name: 'help', type: 1 } as unknown as Option]);
    await fake.until(() => run.response, 'the help', 45_000);
    const content = String(run.response!.data!.content);
    for (const line of ['/countersign status', '/code', '/review', '/research']) expect(content).toContain(line);
  });
});

describe('Discord work command registration', () => {
  let fake: FakeDiscord;
  beforeAll(async () => {
    fake = await FakeDiscord.start();
  });
  afterAll(() => fake.close());

  it('offers repositories as choices only when Discord can list them all', () => {
    const repoOf = (names: string[]) =>
      (commandDefinitions(names).find((c) => c.name === 'code')!.options as Json[]).find((o) => o.name === 'repo')!;
    expect(repoOf(['api', 'web']).choices).toEqual([
      { name: 'api', value: 'api' },
      { name: 'web', value: 'web' },
    ]);
    expect(repoOf([]).choices).toBeUndefined();
    expect(repoOf(Array.from({ length: 26 }, (_, i) => `r${i}`)).choices).toBeUndefined();
    for (const c of commandDefinitions(['api'])) expect(c.description.length).toBeLessThanOrEqual(100);
  });

  it('registers again when the repositories change, and not when they stay the same', async () => {
    const rest = createRest(fake.token, fake.restUrl);
    const log = createLogger('silent');
    const { applicationId, guildId } = fake.scene;
    expect(await registerCommands(rest, applicationId, guildId, log, ['api'])).toBe(true);
    expect(await registerCommands(rest, applicationId, guildId, log, ['api'])).toBe(false);
    expect(await registerCommands(rest, applicationId, guildId, log, ['api', 'web'])).toBe(true);
    expect(fake.commandPuts(guildId)).toBe(2);
  });
});
