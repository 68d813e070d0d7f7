/**
 * `/schedule when: task:` on Discord (docs/schedules.md): registered beside the other work commands;
 * its header starts a thread where the card — the schedule, its next three runs, the task — waits
 * before the schedule exists, with no model round. A stranger's Approve and a forged button change
 * nothing; a WHEN that cannot be read and a refused person are answered privately.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord } from '../../fakes/discord/index.ts';
import type { ApiUser, Json } from '../../fixtures/discord/objects.ts';
import { buttonInteraction, slashCommandInteraction } from '../../fixtures/discord/payloads.ts';
import { snowflake } from '../../fixtures/discord/snowflake.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import type { ModelProvider } from '../../../src/agent/model.ts';
import { ScriptedProvider } from '../../../src/agent/providers/scripted.ts';
import { listSchedules } from '../../../src/schedules/store.ts';

const REFUSAL = 'Sorry, I only work for the ops team here.';
const person = (name: string): ApiUser => ({
  id: snowflake(),
  username: name,
  global_name: name,
  discriminator: '0',
  avatar: null,
});

type Button = { label: string; custom_id: string };
const buttonsOf = (message: Json) =>
  ((message.components as Json[] | undefined) ?? []).flatMap((row) => (row.components as Button[] | undefined) ?? []);
const opt = (name: string, value: string) => ({ name, type: 3, value });

describe('/schedule on Discord', () => {
  let fake: FakeDiscord;
  let h: Harness;
  let dir: string;
  let rounds = 0;
  const mallory = person('mallory');
  const stranger = person('stranger');

  beforeAll(async () => {
    fake = await FakeDiscord.start();
    fake.world.addMember(mallory);
    fake.world.addMember(stranger);
    dir = mkdtempSync(path.join(tmpdir(), 'cs-discord-schedule-'));
    const policy = path.join(dir, 'policy.yaml');
    writeFileSync(
      policy,
      [
        'version: 1',
        'requesters:',
        `  allow: [{ workspaces: [discord:${fake.scene.guildId}] }]`,
        `  deny: [discord:${mallory.id}]`,
        `  refusal: "${REFUSAL}"`,
      ].join('\n'),
    );
    const inner = new ScriptedProvider({ rules: [{ rounds: [{ text: 'the model was asked' }] }] });
    const provider = Object.create(inner) as ModelProvider;
    provider.streamRound = (...args: Parameters<ModelProvider['streamRound']>) => {
      rounds += 1;
      return inner.streamRound(...args);
    };
    h = await startHarness({
      provider,
      env: {
        DISCORD_TOKEN: fake.token,
        DISCORD_APPLICATION_ID: fake.scene.applicationId,
        DISCORD_GUILD_ID: fake.scene.guildId,
        DISCORD_API_URL: fake.restUrl,
        POLICY_FILE: policy,
      },
    });
    await fake.until(() => fake.world.commands.get(fake.scene.guildId), 'the registered commands', 45_000);
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const schedule = (when: string, task: string, user?: ApiUser) =>
    fake.runCommand(
      slashCommandInteraction(fake.scene, {
        name: 'schedule',
        options: [opt('when', when), opt('task', task)],
        ...(user ? { user } : {}),
      }),
    );
  const schedulesOf = (user: ApiUser) =>
    listSchedules(h.app.pool, { ownerKey: `discord:${user.id}@${fake.scene.guildId}` });
  const click = (user: ApiUser, message: Json, customId: string) =>
    fake.interact(buttonInteraction(fake.scene, { customId, message, user }));
  const privately = (run: ReturnType<typeof click>, pattern: RegExp, what: string) =>
    fake.until(
      () => {
        const inline = run.response?.data;
        const texts = [
          ...(inline && typeof inline.content === 'string' ? [inline.content] : []),
          ...run.followupIds.map((id) => String(fake.message(id)?.message.content ?? '')),
        ];
        return texts.find((t) => pattern.test(t));
      },
      what,
      45_000,
    );

  it('registers /schedule with required when and task options', () => {
    const registered = fake.world.commands.get(fake.scene.guildId) ?? [];
    const command = registered.find((c) => c.name === 'schedule');
    expect(command?.options).toMatchObject([
      { name: 'when', required: true, type: 3 },
      { name: 'task', required: true, type: 3 },
    ]);
    expect(() => fake.runCommand(slashCommandInteraction(fake.scene, { name: 'schedule', options: [] }))).toThrow(
      /needs when, task/,
    );
  });

  it('shows the card in the header’s thread; a stranger and a forged button change nothing; Approve makes it', async () => {
    const human = fake.scene.human;
    const run = schedule('every 15m', 'check the deploy');
    const header = await fake.until(
      () => {
        const message = run.originalMessageId ? fake.message(run.originalMessageId) : undefined;
        return String(message?.message.content ?? '').startsWith('Scheduling') ? message : undefined;
      },
      'the header',
      45_000,
    );
    const thread = header.message.id as string;
    const card = await fake.until(
      () => fake.messagesIn(thread).find((m) => buttonsOf(m.message).some((b) => b.label === 'Approve')),
      'the card',
      45_000,
    );
    const shown = JSON.stringify(card.message);
    expect(shown).toContain('Schedule: every 15m');
    expect(shown.match(/• \w{3}, \d{4}-\d{2}-\d{2}, \d{2}:\d{2}/g)).toHaveLength(3);
    expect(shown).toContain('Task: check the deploy');
    expect(await schedulesOf(human)).toEqual([]);

    const approve = buttonsOf(card.message).find((b) => b.label === 'Approve')!.custom_id;
    await privately(click(stranger, card.message, approve), /not allowed to decide/, 'the stranger’s refusal');
    const [nonce, decision] = approve.split('.');
    const forged = `${nonce!.slice(0, -2)}zz.${decision!}`;
    await privately(click(human, card.message, forged), /does not exist/, 'the forged button’s refusal');
    expect(await schedulesOf(human)).toEqual([]);

    click(human, card.message, approve);
    const [made] = await waitFor(
      async () => ((await schedulesOf(human)).length ? schedulesOf(human) : undefined),
      20_000,
      'the schedule',
    );
    expect(made).toMatchObject({
      when_text: 'every 15m',
      task: 'check the deploy',
      place: { platform: 'discord', channel: thread, parent: fake.scene.channelId },
    });
    expect(rounds).toBe(0);
  });

  it('answers a WHEN it cannot read, and a person the policy refuses, privately', async () => {
    const bad = schedule('every fortnight', 'water the plants');
    await fake.until(() => bad.response, 'the answer', 45_000);
    expect(bad.response!.data).toMatchObject({ flags: 64 | 4 });
    expect(String(bad.response!.data!.content)).toMatch(/every 15m/);

    const refused = schedule('every 15m', 'check the deploy', mallory);
    await fake.until(() => refused.response, 'the refusal', 45_000);
    expect(refused.response!.data).toMatchObject({ flags: 64 | 4, content: REFUSAL });
    expect(await schedulesOf(mallory)).toEqual([]);
  });
});
