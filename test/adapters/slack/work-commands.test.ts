import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import { slashCommand, slashCommandEnvelope } from '../../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { makeRepo, setupGit } from '../../repos/git-fixture.ts';
import type { Script } from '../../../src/agent/providers/scripted.ts';
import { inviteHint } from '../../../src/adapters/slack/inbound.ts';
import { Priority } from '../../../src/core/work-item.ts';

const ALICE = 'U0ALICE001';
const BOB = 'U0BOB00001';
const MALLORY = 'U0MALLORY1';
const CHANNEL = 'C0DEV00001';
const REFUSAL = 'Sorry, I only work for the dev team here.';

const script: Script = {
  rules: [
    // Long enough that `/countersign status` sees it running.
    { match: 'Research this', rounds: [{ text: 'Found: '.padEnd(120, '.'), chunkSize: 4, delayMs: 60 }] },
    { rounds: [{ text: 'echo: {{lastUser}}' }] },
  ],
};

interface StoredItem {
  type: string;
  priority: number;
  conversationId: string;
  input: { prompt?: string };
  payload: Record<string, unknown>;
  reply: { channel: string; thread?: string; workspace?: string };
  requester: { userId: string; workspace?: string };
}

describe('/code, /review, /research and /countersign status on Slack', () => {
  let fake: FakeSlack;
  let h: Harness;
  let dir: string;
  let clone: string;

  beforeAll(async () => {
    fake = await FakeSlack.start();
    ({ dir, clone } = makeRepo());
    setupGit(clone, 'branch', 'feature/login');
    const policy = path.join(dir, 'policy.yaml');
    writeFileSync(
      policy,
      [
        'version: 1',
        `workspaces: [slack:${fake.team}]`,
        'requesters:',
        `  allow: [{ workspaces: [slack:${fake.team}] }]`,
        `  deny: [slack:${MALLORY}]`,
        `  refusal: "${REFUSAL}"`,
      ].join('\n'),
    );
    h = await startHarness({
      script,
      env: {
        ...fake.env({ SLACK_STREAMING: 'off' }),
        POLICY_FILE: policy,
        REPOS: `api=${clone}`,
        WORKTREES_DIR: path.join(dir, 'worktrees'),
      },
    });
    await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs a slash command with a response_url of its own; resolves with the ack's payload and that URL. */
  async function run(command: string, text: string, user = ALICE, channel = CHANNEL, team = fake.team) {
    const responseUrl = fake.responseUrl();
    const ack = await fake.deliver(
      slashCommandEnvelope({ ...slashCommand(team, { command, text, user, channel }), response_url: responseUrl }),
    );
    const answer = () =>
      waitFor(
        async () => fake.responses.find((r) => responseUrl.endsWith(r.path))?.body,
        10_000,
        `the response_url answer to ${command}`,
      );
    return { ack: ack.payload as { response_type?: string; text?: string } | undefined, answer };
  }

  const itemsOf = async (user: string) =>
    (
      await h.app.pool.query<{ item: StoredItem }>(
        `SELECT item FROM countersign.work_items WHERE item->'requester'->>'userId' = $1 ORDER BY created_at`,
        [user],
      )
    ).rows.map((r) => r.item);

  /** The bot's top-level message in the channel that starts with `text`. */
  const header = (text: string) =>
    waitFor(
      async () => fake.botMessages(CHANNEL).find((m) => m.thread_ts === undefined && m.text.startsWith(text)),
      10_000,
      `the header "${text}"`,
    );

  /**
   * What the channel itself shows (a work command's header): the earlier tests' turns still answer in
   * their threads while later tests run, so thread replies are not counted.
   */
  const headers = () => fake.botMessages(CHANNEL).filter((m) => m.thread_ts === undefined);

  it('posts /code’s header in the channel and enqueues a CODE item whose conversation is its thread', async () => {
    const { ack } = await run('/code', 'api add a health check');
    // Acknowledged at once, with nothing for the channel to see in the ack itself.
    expect(ack?.text).toBeUndefined();
    const posted = await header('Working on api: add a health check');
    const [item] = await waitFor(
      async () => ((await itemsOf(ALICE)).length ? itemsOf(ALICE) : undefined),
      10_000,
      'the CODE item',
    );
    expect(item).toMatchObject({
      type: 'CODE',
      priority: Priority.NORMAL,
      conversationId: `slack:${fake.team}:${CHANNEL}:${posted.ts}`,
      input: { prompt: 'add a health check' },
      payload: { repo: 'api' },
      reply: { channel: CHANNEL, thread: posted.ts, workspace: fake.team },
      requester: { userId: ALICE, workspace: fake.team },
    });
    // The turn answers in the header's thread.
    await waitFor(
      async () => (fake.textIn(CHANNEL, posted.ts).some((t) => t.startsWith('echo:')) ? true : undefined),
      20_000,
      'the answer in the thread',
    );
  });

  it('enqueues /review at HIGH and /research at LOW, each under a header of its own', async () => {
    await run('/review', 'api feature/login', BOB);
    const review = await header('Reviewing feature/login of api');
    await run('/research', 'how other bots queue work', BOB);
    const research = await header('Researching in the background: how other bots queue work');
    const items = await waitFor(
      async () => {
        const found = await itemsOf(BOB);
        return found.length === 2 ? found : undefined;
      },
      10_000,
      'both items',
    );
    const byType = Object.fromEntries(items.map((i) => [i.type, i]));
    expect(byType.REVIEW).toMatchObject({
      priority: Priority.HIGH,
      payload: { repo: 'api', branch: 'feature/login' },
      reply: { thread: review.ts },
    });
    expect(byType.RESEARCH).toMatchObject({ priority: Priority.LOW, reply: { thread: research.ts } });
    expect(byType.RESEARCH!.conversationId).not.toBe(byType.REVIEW!.conversationId);
  });

  it('answers an unknown repository privately with the known ones, posting and enqueueing nothing', async () => {
    const before = headers().length;
    const user = 'U0CAROL001';
    const { answer } = await run('/code', 'nosuch do something', user);
    const body = await answer();
    expect(body).toMatchObject({ response_type: 'ephemeral' });
    expect(String(body.text)).toContain('api');
    expect(headers()).toHaveLength(before);
    expect(await itemsOf(user)).toEqual([]);
  });

  it('tells a person the policy refuses only the refusal — no repository names, no header, no item', async () => {
    const before = headers().length;
    const { answer } = await run('/code', 'nosuch do something', MALLORY);
    const body = await answer();
    expect(body).toEqual(expect.objectContaining({ response_type: 'ephemeral', text: REFUSAL }));
    await run('/research', 'anything at all', MALLORY)
      .then(({ answer: second }) => second())
      .then((second) => expect(second.text).toBe(REFUSAL));
    expect(headers()).toHaveLength(before);
    expect(await itemsOf(MALLORY)).toEqual([]);
  });

  it('handles a command forged for another team as today’s commands are: the policy refuses it', async () => {
    const before = headers().length;
    const { answer } = await run('/code', 'api rm -rf everything', 'U0FORGED01', CHANNEL, 'T0OTHER001');
    expect((await answer()).text).toBe(REFUSAL);
    expect(headers()).toHaveLength(before);
    expect(await itemsOf('U0FORGED01')).toEqual([]);
  });

  it('shows mentions and markup in the task as text in the header, pinging nobody', async () => {
    await run(
      '/code',
      `api hostile <!channel> <!here|here> @everyone <@${BOB}> <!subteam^S0OPS|@ops> **now**`,
      'U0DAVE0001',
    );
    const posted = await header('Working on api: hostile');
    const shown = JSON.stringify({ text: posted.text, blocks: posted.blocks });
    for (const live of ['<!channel>', '<!here', '@everyone', `<@${BOB}>`, '<!subteam^'])
      expect(shown).not.toContain(live);
    expect(posted.text).toContain('everyone');
  });

  it('answers /countersign status privately with the asker’s own running and queued work', async () => {
    const user = 'U0ERIN0001';
    const empty = await run('/countersign', 'status', user);
    expect(empty.ack).toMatchObject({ response_type: 'ephemeral', text: 'You have no running or queued work.' });
    await run('/research', 'queue fairness', user);
    await header('Researching in the background: queue fairness');
    const status = await waitFor(
      async () => {
        const { ack } = await run('/countersign', 'status', user);
        return ack?.text?.includes('RESEARCH') ? ack : undefined;
      },
      10_000,
      'the research in the status',
    );
    expect(status.response_type).toBe('ephemeral');
    expect(status.text).toMatch(/RESEARCH · LOW · (queued|running)/);
    // Only the asker's work: Alice's CODE item is not in Erin's list.
    expect(status.text).not.toContain('health check');
  });

  it('refuses /countersign status to a person the policy refuses', async () => {
    const { ack } = await run('/countersign', 'status', MALLORY);
    expect(ack).toMatchObject({ response_type: 'ephemeral', text: REFUSAL });
  });

  it('names status and the work commands in /countersign’s help', async () => {
    const { ack } = await run('/countersign', 'help');
    expect(ack?.response_type).toBe('ephemeral');
    for (const line of ['/countersign status', '/code REPO TASK', '/review REPO BRANCH', '/research TOPIC'])
      expect(ack?.text).toContain(line);
  });

  it('answers a work command in a channel the bot is not in with how to invite it', async () => {
    const channel = 'C0NOTJOIN1';
    fake.world.botNotIn.add(channel);
    const { answer } = await run('/research', 'anything', 'U0FRANK001', channel);
    expect(await answer()).toMatchObject({ response_type: 'ephemeral', text: inviteHint('countersign', channel) });
    expect(await itemsOf('U0FRANK001')).toEqual([]);
  });
});
