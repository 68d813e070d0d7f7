import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord } from '../../fakes/discord/index.ts';
import { autocompleteInteraction, slashCommandInteraction } from '../../fixtures/discord/payloads.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import type { Script } from '../../../src/agent/providers/scripted.ts';

const script: Script = {
  rules: [
    { match: 'Use the skill "runbook"', rounds: [{ text: 'Runbook for restart-api: step one, step two.' }] },
    { rounds: [{ text: 'echo: {{lastUser}}' }] },
  ],
};

describe('Discord slash commands against the fake Discord', () => {
  let fake: FakeDiscord;
  let db: TestDatabase;
  let h: Harness;
  const env = () => ({
    DISCORD_TOKEN: fake.token,
    DISCORD_APPLICATION_ID: fake.scene.applicationId,
    DISCORD_GUILD_ID: fake.scene.guildId,
    DISCORD_API_URL: fake.restUrl,
  });

  beforeAll(async () => {
    fake = await FakeDiscord.start();
    db = await createTestDatabase();
    h = await startHarness({ db, script, env: env() });
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
    await db.drop();
  });

  it('registers /skills and /skill in the configured guild, once across two restarts', async () => {
    const gets = () => fake.requestsMatching({ route: 'GET /applications/:application_id/guilds/:guild_id/commands' });
    expect(fake.commandPuts(fake.scene.guildId)).toBe(1);
    expect(fake.commandPuts('global')).toBe(0);
    for (let restart = 1; restart <= 2; restart++) {
      await h.stop();
      h = await startHarness({ db, script, env: env() });
      // Each start compared the stored definition, and found nothing to change.
      expect(gets()).toHaveLength(1 + restart);
    }
    expect(fake.commandPuts(fake.scene.guildId)).toBe(1);
  });

  it('lists the skills only to the person who asked', async () => {
    const list = fake.interact(slashCommandInteraction(fake.scene, { name: 'skills' }));
    await fake.until(() => list.response, 'the /skills answer', 45_000);
    expect(list.response!.type).toBe(4);
    // Ephemeral (64), with link previews suppressed (4) as on every bot message.
    expect(list.response!.data).toMatchObject({ flags: 64 | 4 });
    const content = String(list.response!.data!.content);
    const installed = h.app.skills.list().map((s) => s.name);
    expect(installed).toContain('runbook');
    for (const name of installed) expect(content).toContain(name);
  });

  it('autocompletes skill names by the typed prefix', async () => {
    const auto = fake.interact(autocompleteInteraction(fake.scene, { name: 'skill', focused: 'name', partial: 'run' }));
    await fake.until(() => auto.response, 'autocomplete', 45_000);
    expect(auto.response).toMatchObject({ type: 8, data: { choices: [{ name: 'runbook', value: 'runbook' }] } });
  });

  it('does not autocomplete a name that merely contains the typed text', async () => {
    const auto = fake.interact(
      autocompleteInteraction(fake.scene, { name: 'skill', focused: 'name', partial: 'book' }),
    );
    await fake.until(() => auto.response, 'autocomplete', 45_000);
    expect(auto.response!.data).toEqual({ choices: [] });
  });

  it('offers every skill, at most 25, before anything is typed', async () => {
    const auto = fake.interact(autocompleteInteraction(fake.scene, { name: 'skill', focused: 'name', partial: '' }));
    await fake.until(() => auto.response, 'autocomplete', 45_000);
    const choices = (auto.response!.data as { choices: Array<{ name: string }> }).choices;
    const installed = h.app.skills.list().map((s) => s.name);
    expect(choices.map((c) => c.name)).toEqual(installed.slice(0, 25));
    expect(choices.length).toBeGreaterThan(1);
  });

  it('runs /skill as a turn that answers in an ordinary channel message', async () => {
    const since = fake.requests.length;
    const run = fake.interact(
      slashCommandInteraction(fake.scene, {
        name: 'skill',
        options: [
          { name: 'name', type: 3, value: 'runbook' },
          { name: 'input', type: 3, value: 'restart-api' },
        ],
      }),
    );
    await fake.until(() => (run.response?.type === 5 ? true : undefined), 'the deferred /skill', 45_000);
    await fake.until(
      () =>
        fake.botTextIn(fake.scene.channelId).includes('Runbook for restart-api: step one, step two.')
          ? true
          : undefined,
      'the skill’s answer in the channel',
      45_000,
    );
    // The reply is a channel message the bot posted, not the interaction response (its token dies after 15 min).
    const placeholder = fake.requestsMatching({ route: 'POST /channels/:channel_id/messages', since })[0]!;
    expect(placeholder.params.channel_id).toBe(fake.scene.channelId);
    const reply = fake.message((placeholder.response as { id: string }).id)!;
    expect(reply.source).toBe('rest');
    expect(reply.message.content).toBe('Runbook for restart-api: step one, step two.');
    const { rows } = await h.app.pool.query<{ item: { input: { skill?: string; prompt: string } } }>(
      `SELECT item FROM countersign.work_items WHERE item->'input'->>'skill' = 'runbook'`,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.item.input.prompt).toContain('restart-api');
    const original = await waitFor(
      async () => (run.originalMessageId ? fake.message(run.originalMessageId) : undefined),
      10_000,
      'the interaction response message',
    );
    await fake.until(
      () => (String(original.message.content).includes('runbook') ? true : undefined),
      'the deferred reply to say what runs',
      10_000,
    );
  });

  it('tells only the asker when a /skill names no installed skill', async () => {
    const run = fake.interact(
      slashCommandInteraction(fake.scene, { name: 'skill', options: [{ name: 'name', type: 3, value: 'runbok' }] }),
    );
    await fake.until(() => run.response, 'the answer', 45_000);
    expect(run.response!.data).toMatchObject({ flags: 64 | 4 });
    expect(String(run.response!.data!.content)).toMatch(/no skill named "runbok".*Did you mean "runbook"/);
  });
});
