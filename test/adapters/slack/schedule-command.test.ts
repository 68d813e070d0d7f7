/**
 * `/schedule WHEN TASK` on Slack (docs/schedules.md): the command ends in the same card as the model's
 * `schedule_task` call — the exact schedule, the next three runs, the task — before the schedule
 * exists, with no model round; the policy's kind `schedule` rules it, and only a valid click makes it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import {
  blockAction,
  buttonIn,
  interactiveEnvelope,
  slashCommand,
  slashCommandEnvelope,
} from '../../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import type { ModelProvider } from '../../../src/agent/model.ts';
import { ScriptedProvider } from '../../../src/agent/providers/scripted.ts';
import { listSchedules } from '../../../src/schedules/store.ts';
import { ownerKeyOf } from '../../../src/schedules/manage.ts';

const CHANNEL = 'C0OPS00001';
const STRICT = 'C0STRICT01';
const CLOSED = 'C0CLOSED01';
const ALICE = 'U0ALICE001';
const BOB = 'U0BOB00001';
const CAROL = 'U0CAROL001';
const MALLORY = 'U0MALLORY1';
const REFUSAL = 'Sorry, I only work for the ops team here.';

/** A provider that counts its rounds, so "no model round" is observable. */
function countingProvider(): { provider: ModelProvider; rounds: () => number } {
  const inner = new ScriptedProvider({ rules: [{ rounds: [{ text: 'the model was asked' }] }] });
  let rounds = 0;
  const provider = Object.create(inner) as ModelProvider;
  provider.streamRound = (...args: Parameters<ModelProvider['streamRound']>) => {
    rounds += 1;
    return inner.streamRound(...args);
  };
  return { provider, rounds: () => rounds };
}

describe('/schedule on Slack', () => {
  let fake: FakeSlack;
  let h: Harness;
  let dir: string;
  let model: ReturnType<typeof countingProvider>;

  beforeAll(async () => {
    fake = await FakeSlack.start();
    dir = mkdtempSync(path.join(tmpdir(), 'cs-schedule-cmd-'));
    const policy = path.join(dir, 'policy.yaml');
    writeFileSync(
      policy,
      [
        'version: 1',
        `workspaces: [slack:${fake.team}]`,
        `approvers: [slack:${BOB}]`,
        'requesters:',
        `  allow: [{ workspaces: [slack:${fake.team}] }]`,
        `  deny: [slack:${MALLORY}]`,
        `  refusal: "${REFUSAL}"`,
        'rules:',
        '  - name: schedules-need-two',
        "    tool: '*'",
        '    kind: schedule',
        `    where: { channels: [slack:${STRICT}] }`,
        '    outcome: countersign',
        '  - name: no-schedules-here',
        "    tool: '*'",
        '    kind: schedule',
        `    where: { channels: [slack:${CLOSED}] }`,
        '    outcome: deny',
      ].join('\n'),
    );
    model = countingProvider();
    h = await startHarness({
      provider: model.provider,
      env: { ...fake.env({ SLACK_STREAMING: 'off' }), POLICY_FILE: policy },
    });
    await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs `/schedule` with a response_url of its own; `answer` waits for what was sent there. */
  async function schedule(text: string, user = ALICE, channel = CHANNEL) {
    const responseUrl = fake.responseUrl();
    await fake.deliver(
      slashCommandEnvelope({
        ...slashCommand(fake.team, { command: '/schedule', text, user, channel }),
        response_url: responseUrl,
      }),
    );
    return () =>
      waitFor(async () => fake.responses.find((r) => responseUrl.endsWith(r.path))?.body, 10_000, 'the answer');
  }

  const header = (channel: string, start: string) =>
    waitFor(
      async () => fake.botMessages(channel).find((m) => m.thread_ts === undefined && m.text.startsWith(start)),
      10_000,
      `the header "${start}"`,
    );
  const cardIn = (channel: string, thread: string) =>
    waitFor(
      async () =>
        fake.messages.find(
          (m) => m.channel === channel && m.thread_ts === thread && JSON.stringify(m.blocks ?? []).includes('Approve'),
        ),
      20_000,
      'the card',
    );
  const click = (user: string, channel: string, card: { ts: string; thread_ts?: string }, value: string) =>
    fake.deliver(
      interactiveEnvelope(
        blockAction(fake.team, {
          user,
          channel,
          messageTs: card.ts,
          ...(card.thread_ts ? { threadTs: card.thread_ts } : {}),
          value,
          actionId: 'approve',
        }),
      ),
    );
  const schedulesOf = (user: string) =>
    listSchedules(h.app.pool, { ownerKey: ownerKeyOf({ platform: 'slack', userId: user, workspace: fake.team }) });
  const privately = (user: string, pattern: RegExp) =>
    waitFor(
      async () => fake.messages.find((m) => m.ephemeralFor === user && pattern.test(m.text)),
      10_000,
      `a private answer to ${user} matching ${pattern}`,
    );

  it('shows the exact schedule, the next three runs and the task on a card; an approval makes it', async () => {
    await schedule('0 9 * * 1-5 Europe/Berlin summarise yesterday’s incidents');
    const posted = await header(CHANNEL, 'Scheduling');
    const card = await cardIn(CHANNEL, posted.ts);
    const shown = JSON.stringify(card.blocks);
    expect(shown).toContain('Schedule: 0 9 * * 1-5 Europe/Berlin');
    expect(shown.match(/• \w{3}, \d{4}-\d{2}-\d{2}, 09:00 Europe\/Berlin \(GMT\+[12]\)/g)).toHaveLength(3);
    expect(shown).toContain('Task: summarise yesterday’s incidents');
    // Before the click nothing exists, and no model was asked to read the command.
    expect(await schedulesOf(ALICE)).toEqual([]);

    // A stranger's click and a forged value change nothing.
    await click(CAROL, CHANNEL, card, buttonIn(card.blocks, 'Approve').value);
    await privately(CAROL, /not allowed to decide/);
    const approve = buttonIn(card.blocks, 'Approve').value;
    const forged = `${approve.split('.')[0]!.slice(0, -2)}xx.${approve.split('.')[1]!}`;
    await click(ALICE, CHANNEL, card, forged);
    await privately(ALICE, /does not exist/);
    expect(await schedulesOf(ALICE)).toEqual([]);

    await click(ALICE, CHANNEL, card, buttonIn(card.blocks, 'Approve').value);
    const [made] = await waitFor(
      async () => ((await schedulesOf(ALICE)).length ? schedulesOf(ALICE) : undefined),
      20_000,
      'the schedule',
    );
    expect(made).toMatchObject({
      when_text: '0 9 * * 1-5 Europe/Berlin',
      task: 'summarise yesterday’s incidents',
      kind: 'cron',
      status: 'active',
      place: { platform: 'slack', channel: CHANNEL, thread: posted.ts, workspace: fake.team },
    });
    await waitFor(
      async () => (fake.textIn(CHANNEL, posted.ts).some((t) => t.startsWith('Scheduled ')) ? true : undefined),
      20_000,
      'the answer in the thread',
    );
    expect(model.rounds()).toBe(0);
  });

  it('answers a WHEN it cannot read privately, with an example, and posts nothing', async () => {
    const before = fake.botMessages(CHANNEL).length;
    const answer = await schedule('every fortnight water the plants');
    const body = await answer();
    expect(body).toMatchObject({ response_type: 'ephemeral' });
    expect(String(body.text)).toMatch(/every 15m/);
    const tooOften = await (await schedule('every 1m poll the API'))();
    expect(String(tooOften.text)).toMatch(/too often/);
    expect(fake.botMessages(CHANNEL)).toHaveLength(before);
  });

  it('refuses a person the policy does not admit privately, with the refusal only', async () => {
    const body = await (await schedule('every 15m check the deploy', MALLORY))();
    expect(body).toEqual(expect.objectContaining({ response_type: 'ephemeral', text: REFUSAL }));
    expect(await schedulesOf(MALLORY)).toEqual([]);
  });

  it('does not let the requester approve her own schedule where the policy says countersign', async () => {
    await schedule('every 15m check the deploy', ALICE, STRICT);
    const posted = await header(STRICT, 'Scheduling');
    const card = await cardIn(STRICT, posted.ts);
    const approve = buttonIn(card.blocks, 'Approve').value;
    await click(ALICE, STRICT, card, approve);
    await privately(ALICE, /second|approver|countersign/i);
    expect((await schedulesOf(ALICE)).filter((s) => s.place.channel === STRICT)).toEqual([]);
    await click(BOB, STRICT, card, approve);
    await waitFor(
      async () => ((await schedulesOf(ALICE)).some((s) => s.place.channel === STRICT) ? true : undefined),
      20_000,
      'the countersigned schedule',
    );
  });

  it('answers where the policy denies schedules without a card or a schedule', async () => {
    await schedule('in 2h check the deploy', ALICE, CLOSED);
    const posted = await header(CLOSED, 'Scheduling');
    await waitFor(
      async () =>
        fake.textIn(CLOSED, posted.ts).some((t) => t.includes('policy does not allow this here')) ? true : undefined,
      20_000,
      'the refusal in the thread',
    );
    expect(fake.messages.some((m) => m.channel === CLOSED && JSON.stringify(m.blocks ?? []).includes('Approve'))).toBe(
      false,
    );
    expect((await schedulesOf(ALICE)).filter((s) => s.place.channel === CLOSED)).toEqual([]);
    expect(model.rounds()).toBe(0);
  });
});
