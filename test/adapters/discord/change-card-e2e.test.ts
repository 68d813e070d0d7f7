import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord } from '../../fakes/discord/index.ts';
import type { ApiUser, Json } from '../../fixtures/discord/objects.ts';
import { buttonInteraction, guildMessageMentioningBot, threadMessage } from '../../fixtures/discord/payloads.ts';
import { snowflake } from '../../fixtures/discord/snowflake.ts';
import { startHarness, type Harness } from '../../helpers/harness.ts';
import { makeRepo, setupGit } from '../../repos/git-fixture.ts';
import type { Script } from '../../../src/agent/providers/scripted.ts';

/** Three writes of ~700 KB each: a change whose diff is over 2 MB, far past any message. */
const BIG = Array.from({ length: 3 }, (_, i) => `${`line ${i} `.padEnd(69, 'x')}\n`.repeat(10_000));

const script: Script = {
  rules: [
    {
      match: 'use_repository',
      rounds: [
        { toolCalls: [{ name: 'use_repository', args: { repo: 'api' } }] },
        {
          text: 'Writing the data files.',
          toolCalls: BIG.map((content, i) => ({ name: 'write_file', args: { path: `data/part${i}.txt`, content } })),
        },
        { text: 'Add the data files\n\nThree parts.' },
        { text: 'Result: {{lastToolResult}}' },
      ],
    },
    {
      match: 'small change (?<file>\\S+)',
      rounds: [
        { toolCalls: [{ name: 'use_repository', args: { repo: 'api' } }] },
        { toolCalls: [{ name: 'write_file', args: { path: '{{file}}', content: 'small\n' } }] },
        { text: 'Add {{file}}' },
        { text: 'Result: {{lastToolResult}}' },
      ],
    },
    { rounds: [{ text: 'ok' }] },
  ],
};

const CAROL: ApiUser = { id: snowflake(), username: 'carol', global_name: 'carol', discriminator: '0', avatar: null };
const BOB: ApiUser = { id: snowflake(), username: 'bob', global_name: 'bob', discriminator: '0', avatar: null };

type Button = { label: string; custom_id: string };
const buttonsOf = (message: Json) =>
  ((message.components as Json[] | undefined) ?? []).flatMap((row) => (row.components as Button[] | undefined) ?? []);

/**
 * A change on Discord, end to end through the fake: asked in plain words (use_repository) in a
 * mention, the writes approved, the change card drawn within Discord's component limits with
 * Merge / Discard / Full diff, the requester's own Merge refused privately, Full diff shared as a
 * 2 MB attachment in the thread (not inlined), and an approver's Merge landing the change.
 */
describe('a change card on Discord', () => {
  let fake: FakeDiscord;
  let h: Harness;
  let dir: string;
  let clone: string;

  beforeAll(async () => {
    fake = await FakeDiscord.start();
    fake.world.addMember(BOB);
    fake.world.addMember(CAROL);
    ({ dir, clone } = makeRepo());
    h = await startHarness({
      script,
      env: {
        DISCORD_TOKEN: fake.token,
        DISCORD_APPLICATION_ID: fake.scene.applicationId,
        DISCORD_GUILD_ID: fake.scene.guildId,
        DISCORD_API_URL: fake.restUrl,
        APPROVERS: `discord:${BOB.id}`,
        REPOS: `api=${clone}`,
        WORKTREES_DIR: path.join(dir, 'worktrees'),
      },
    });
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const cardWith = (thread: string, label: string) =>
    fake.until(
      () => fake.messagesIn(thread).find((m) => buttonsOf(m.message).some((b) => b.label === label)),
      `a card with "${label}"`,
      45_000,
    );

  const click = (user: ApiUser, card: { message: Json }, label: string) => {
    const button = buttonsOf(card.message).find((b) => b.label === label)!;
    return fake.interact(buttonInteraction(fake.scene, { customId: button.custom_id, message: card.message, user }));
  };

  /** What the bot said privately to an interaction: its ephemeral response or follow-ups. */
  const privateAnswers = (run: ReturnType<typeof click>): string[] => {
    const response = run.response?.data;
    const inline =
      response && ((response.flags as number | undefined) ?? 0) & 64 && typeof response.content === 'string'
        ? [response.content]
        : [];
    const followups = run.followupIds
      .map((id) => fake.message(id))
      .filter((m) => m?.ephemeral)
      .map((m) => String(m!.message.content));
    return [...inline, ...followups];
  };

  it('draws the card within the limits, shares the full diff as a file, and lands only an approver’s merge', async () => {
    const human = fake.scene.human;
    const before = setupGit(clone, 'rev-parse', 'main').trim();
    const since = fake.requests.length;
    fake.userSays(guildMessageMentioningBot(fake.scene, { text: 'please use_repository api and add data' }));
    const started = await fake.waitForRequest(
      { route: 'POST /channels/:channel_id/messages/:message_id/threads', since },
      45_000,
    );
    const thread = (started.response as { id: string }).id;

    const writes = await cardWith(thread, 'Approve all');
    click(human, writes, 'Approve all');

    const card = await cardWith(thread, 'Merge into main');
    // The fake checked content, embeds and components against Discord's limits before storing it.
    expect(buttonsOf(card.message).map((b) => b.label)).toEqual([
      'Merge into main',
      'Discard',
      'Deny with reason…',
      'Full diff',
    ]);
    const text = JSON.stringify(card.message);
    expect(text).toContain('data/part0.txt');
    // The card is a card, not the diff.
    expect(String(card.message.content ?? '').length).toBeLessThanOrEqual(2000);
    expect(text).not.toContain('x'.repeat(200));

    const own = click(human, card, 'Merge into main');
    const refusal = await fake.until(
      () => privateAnswers(own).find((t) => /second signature/i.test(t)),
      'the requester’s private refusal',
      45_000,
    );
    // Nothing public about it, and nothing merged.
    expect(fake.botTextIn(thread).some((t) => t === refusal)).toBe(false);
    expect(setupGit(clone, 'rev-parse', 'main').trim()).toBe(before);

    // The diff is shared only when asked for.
    expect(fake.uploads).toEqual([]);
    click(BOB, card, 'Full diff');
    const file = await fake.until(
      () => fake.uploads.find((u) => u.filename.endsWith('.diff')),
      'the diff attachment',
      45_000,
    );
    expect(file.filename).toMatch(/^api-[0-9a-f]{12}\.diff$/);
    expect(file.bytes.length).toBeGreaterThan(2_000_000);
    expect(file.bytes.length).toBeLessThanOrEqual(10 * 1024 * 1024);
    expect(file.channelId).toBe(thread);
    expect(file.bytes.toString('utf8')).toContain('+++ b/data/part2.txt');
    const shared = fake.message(file.messageId)!;
    expect(shared.message.content).toContain('Full diff of');
    expect(shared.pings).toEqual({ users: [], roles: [], everyone: false });

    click(BOB, card, 'Merge into main');
    await fake.until(
      () => (fake.botTextIn(thread).some((t) => t.includes('Merged')) ? true : undefined),
      'the merge reply',
      45_000,
    );
    const merged = setupGit(clone, 'rev-parse', 'main').trim();
    expect(merged).not.toBe(before);
    // What landed is the commit whose diff was shown.
    expect(merged.startsWith(file.filename.slice('api-'.length, -'.diff'.length))).toBe(true);
    expect(setupGit(clone, 'show', 'main:data/part2.txt') === BIG[2]).toBe(true);
  });

  it('lets the requester discard their own change with the Discard button, under APPROVERS', async () => {
    const human = fake.scene.human;
    const before = setupGit(clone, 'rev-parse', 'main').trim();
    const since = fake.requests.length;
    fake.userSays(guildMessageMentioningBot(fake.scene, { text: 'small change discard-me.txt' }));
    const started = await fake.waitForRequest(
      { route: 'POST /channels/:channel_id/messages/:message_id/threads', since },
      45_000,
    );
    const thread = (started.response as { id: string }).id;
    click(human, await cardWith(thread, 'Approve'), 'Approve');
    const card = await cardWith(thread, 'Merge into main');
    const branch = /countersign\/[0-9a-f]{12}/.exec(JSON.stringify(card.message))![0];
    expect(setupGit(clone, 'branch', '--list', branch)).toContain(branch);

    const own = click(human, card, 'Discard');
    await fake.until(
      () => (fake.botTextIn(thread).some((t) => t.includes('discarded')) ? true : undefined),
      'the discard reply',
      45_000,
    );
    expect(privateAnswers(own).some((t) => /second signature|not allowed/i.test(t))).toBe(false);
    expect(setupGit(clone, 'branch', '--list', branch)).toBe('');
    expect(setupGit(clone, 'rev-parse', 'main').trim()).toBe(before);
  });

  it('lets an author discard the change on a card someone else asked for', async () => {
    const human = fake.scene.human;
    const since = fake.requests.length;
    fake.userSays(guildMessageMentioningBot(fake.scene, { text: 'small change authored.txt' }));
    const started = await fake.waitForRequest(
      { route: 'POST /channels/:channel_id/messages/:message_id/threads', since },
      45_000,
    );
    const thread = (started.response as { id: string }).id;
    click(human, await cardWith(thread, 'Approve'), 'Approve');
    const first = await cardWith(thread, 'Merge into main');
    const branch = /countersign\/[0-9a-f]{12}/.exec(JSON.stringify(first.message))![0];
    // Carol, neither an author nor an approver, writes in the thread: her turn shows the card again.
    fake.userSays(threadMessage(fake.scene, { threadId: thread, text: 'thanks', author: CAROL }));
    const card = await fake.until(
      () =>
        fake
          .messagesIn(thread)
          .find((m) => m !== first && buttonsOf(m.message).some((b) => b.label === 'Merge into main')),
      'the card of Carol’s turn',
      45_000,
    );
    const own = click(human, card, 'Discard');
    await fake.until(
      () => (fake.botTextIn(thread).some((t) => t.includes('discarded')) ? true : undefined),
      'the discard reply',
      45_000,
    );
    expect(privateAnswers(own)).toEqual([]);
    expect(setupGit(clone, 'branch', '--list', branch)).toBe('');
  });
});
