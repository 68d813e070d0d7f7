import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import {
  appMention,
  blockAction,
  buttonIn,
  eventCallback,
  eventsApiEnvelope,
  interactiveEnvelope,
} from '../../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { makeRepo, setupGit } from '../../repos/git-fixture.ts';
import type { Script } from '../../../src/agent/providers/scripted.ts';

const ALICE = 'U0ALICE001';
const BOB = 'U0BOB00001';
const CHANNEL = 'C0DEV00001';

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

/**
 * A change on Slack, end to end through the fake: asked in plain words (use_repository), the writes
 * approved, the change card drawn within Block Kit's limits with Merge / Discard / Full diff, the
 * requester's own Merge refused privately, Full diff shared as a 2 MB file upload (not inlined), and
 * an approver's Merge landing exactly the shown commit.
 */
describe('a change card on Slack', () => {
  let fake: FakeSlack;
  let h: Harness;
  let dir: string;
  let clone: string;

  beforeAll(async () => {
    fake = await FakeSlack.start();
    ({ dir, clone } = makeRepo());
    h = await startHarness({
      script,
      env: {
        ...fake.env({ SLACK_STREAMING: 'off' }),
        APPROVERS: `slack:${BOB}`,
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

  const click = (user: string, card: { ts: string; blocks: unknown }, thread: string, label: string) =>
    press(user, card, thread, label, buttonIn(card.blocks, label));

  /** Delivers a click on `button` (as drawn, or forged, or kept from before the card changed). */
  const press = (
    user: string,
    card: { ts: string },
    thread: string,
    label: string,
    button: { value: string; action_id: string },
  ) =>
    fake.deliver(
      interactiveEnvelope(
        blockAction(fake.team, {
          user,
          channel: CHANNEL,
          messageTs: card.ts,
          threadTs: thread,
          value: button.value,
          actionId: button.action_id,
          label,
        }),
      ),
    );

  const cardWith = (thread: string, label: string) =>
    waitFor(
      async () =>
        fake.messages.find((m) => m.thread_ts === thread && JSON.stringify(m.blocks ?? []).includes(`"${label}"`)),
      30_000,
      `a card with "${label}"`,
    );

  it('draws the card within the limits, shares the full diff as a file, and lands only an approver’s merge', async () => {
    const before = setupGit(clone, 'rev-parse', 'main').trim();
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'please use_repository api and add data' });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, mention)));
    const writes = await cardWith(mention.ts, 'Approve all');
    await click(ALICE, writes, mention.ts, 'Approve all');

    const card = await cardWith(mention.ts, 'Merge into main');
    const text = JSON.stringify(card.blocks);
    expect(text).toContain('Discard');
    expect(text).toContain('Full diff');
    expect(text).toContain('data/part0.txt');
    // The card is a card, not the diff: Block Kit's limits hold (the fake refuses otherwise).
    expect(text.length).toBeLessThan(40_000);
    expect(text).not.toContain('x'.repeat(200));

    await click(ALICE, card, mention.ts, 'Merge into main');
    await waitFor(
      async () => fake.messages.find((m) => m.ephemeralFor === ALICE && /second|approver|countersign/i.test(m.text)),
      10_000,
      'the requester’s private refusal',
    );
    expect(setupGit(clone, 'rev-parse', 'main').trim()).toBe(before);

    await click(BOB, card, mention.ts, 'Full diff');
    const file = await waitFor(async () => fake.uploads.find((u) => u.filename.endsWith('.diff')), 20_000, 'the diff');
    expect(file.bytes.length).toBeGreaterThan(2_000_000);
    expect(file.channel).toBe(CHANNEL);
    expect(file.thread_ts).toBe(mention.ts);

    await click(BOB, card, mention.ts, 'Merge into main');
    await waitFor(
      async () => fake.botMessages(CHANNEL, mention.ts).find((m) => m.text.includes('Merged')),
      30_000,
      'the merge reply',
    );
    const merged = setupGit(clone, 'rev-parse', 'main').trim();
    expect(merged).not.toBe(before);
    expect(setupGit(clone, 'show', 'main:data/part2.txt') === BIG[2]).toBe(true);
  });

  /** A small change asked for by `user` in its own thread, its write approved by them: the change card. */
  async function smallChange(user: string, file: string) {
    const mention = appMention({ user, channel: CHANNEL, text: `small change ${file}` });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, mention)));
    const writes = await cardWith(mention.ts, 'Approve');
    await click(user, writes, mention.ts, 'Approve');
    const card = await cardWith(mention.ts, 'Merge into main');
    const branch = /countersign\/[0-9a-f]{12}/.exec(JSON.stringify(card.blocks))![0];
    return { thread: mention.ts, card, branch };
  }

  const branches = () => setupGit(clone, 'branch', '--list', 'countersign/*');

  it('lets the requester discard their own change with the Discard button, under APPROVERS', async () => {
    const before = setupGit(clone, 'rev-parse', 'main').trim();
    const { thread, card, branch } = await smallChange(ALICE, 'discard-me.txt');
    expect(branches()).toContain(branch);
    const refusals = () =>
      fake.messages.filter((m) => m.ephemeralFor === ALICE && /second signature/i.test(m.text)).length;
    const refusedBefore = refusals();
    await click(ALICE, card, thread, 'Discard');
    await waitFor(
      async () => fake.botMessages(CHANNEL, thread).find((m) => m.text.includes('discarded')),
      30_000,
      'the discard reply',
    );
    expect(refusals()).toBe(refusedBefore);
    expect(branches()).not.toContain(branch);
    expect(setupGit(clone, 'rev-parse', 'main').trim()).toBe(before);
  });

  it('refuses a stranger’s Discard and a forged button value, and keeps the change', async () => {
    const MALLORY = 'U0MALLORY1';
    const { thread, card, branch } = await smallChange(ALICE, 'keep-me.txt');
    await click(MALLORY, card, thread, 'Discard');
    await waitFor(
      async () => fake.messages.find((m) => m.ephemeralFor === MALLORY && /not allowed|only/i.test(m.text)),
      10_000,
      'the stranger’s private refusal',
    );
    const button = buttonIn(card.blocks, 'Discard');
    // Another nonce of the same shape: a card that does not exist.
    const forged = `${button.value[0] === 'A' ? 'B' : 'A'}${button.value.slice(1)}`;
    await press(ALICE, card, thread, 'Discard', { ...button, value: forged });
    await waitFor(
      async () =>
        fake.messages.find((m) => m.ephemeralFor === ALICE && /not ours|does not exist|not valid/i.test(m.text)),
      10_000,
      'the forged click’s refusal',
    );
    expect(branches()).toContain(branch);
    expect(fake.botMessages(CHANNEL, thread).some((m) => m.text.includes('discarded'))).toBe(false);
  });

  it('refuses a stale Discard after an approver merged the change', async () => {
    const { thread, card } = await smallChange(ALICE, 'merged-first.txt');
    const discard = buttonIn(card.blocks, 'Discard');
    await click(BOB, card, thread, 'Merge into main');
    await waitFor(
      async () => fake.botMessages(CHANNEL, thread).find((m) => m.text.includes('Merged')),
      30_000,
      'the merge reply',
    );
    const merged = setupGit(clone, 'rev-parse', 'main').trim();
    await press(ALICE, card, thread, 'Discard', discard);
    await waitFor(
      async () => fake.messages.find((m) => m.ephemeralFor === ALICE && /already decided/i.test(m.text)),
      10_000,
      'the stale click’s refusal',
    );
    expect(setupGit(clone, 'rev-parse', 'main').trim()).toBe(merged);
    expect(setupGit(clone, 'show', 'main:merged-first.txt')).toBe('small\n');
    expect(fake.botMessages(CHANNEL, thread).some((m) => m.text.includes('discarded'))).toBe(false);
  });
});
