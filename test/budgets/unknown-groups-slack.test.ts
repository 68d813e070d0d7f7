/**
 * A budget that covers a Slack user group applies when Slack did not list the requester's groups
 * as their message came in: the worker lists them again before the turn spends, and when Slack still
 * cannot say, the turn's model calls are refused with the reason (docs/budgets.md).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from '../fakes/slack/fake-slack.ts';
import { appMention, eventCallback, eventsApiEnvelope } from '../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import type { Script } from '../../src/agent/providers/scripted.ts';

const CHANNEL = 'C0BUDGET01';
const ALICE = 'U0ALICE001';
const script: Script = { rules: [{ rounds: [{ text: 'answered without a budget' }] }] };

describe('a budget on a Slack user group, when Slack does not list the groups', () => {
  let fake: FakeSlack;
  let h: Harness;
  let dir: string;

  beforeAll(async () => {
    fake = await FakeSlack.start();
    const contractors = fake.world.addUserGroup(fake.team, 'contractors', [ALICE]);
    dir = mkdtempSync(path.join(tmpdir(), 'cs-slack-budget-'));
    const policy = path.join(dir, 'policy.yaml');
    writeFileSync(
      policy,
      [
        'version: 1',
        `workspaces: [slack:${fake.team}]`,
        'groups:',
        `  contractors: [slack-usergroup:${contractors}]`,
        'budgets:',
        '  - name: contractors-daily',
        '    for: { group: contractors }',
        '    tokens: 1', // no call fits: a call it covers is refused, naming it
        '    per: day',
      ].join('\n'),
    );
    h = await startHarness({ script, env: { ...fake.env({ SLACK_STREAMING: 'off' }), POLICY_FILE: policy } });
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Alice mentions the bot; its answer in the thread. */
  async function ask(text: string): Promise<string> {
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: `<@${fake.botUserId}> ${text}` });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, mention)));
    return waitFor(
      async () =>
        fake
          .botMessages(CHANNEL, mention.ts)
          .map((m) => m.text ?? '')
          .find((t) => t.includes('answered') || t.includes('I stopped here')),
      45_000,
      'the answer',
    );
  }

  it('refuses the calls, with the reason, when Slack lists no groups at the message nor for the turn', async () => {
    // The message's listing and the worker's both fail.
    fake.failNext('usergroups.list', { error: 'fatal_error' }, 2);
    const answer = await ask('first');
    expect(answer).toContain(
      'I could not tell whether the budget "contractors-daily" of the group contractors applies to you',
    );
    expect(answer).toContain('fatal_error');
  });

  it('counts the turn against the group’s budget once the worker’s own listing answers', async () => {
    // The message's listing failed a moment ago and is not asked again yet: her groups came in unknown.
    const answer = await ask('second');
    // One token can never hold a call: the refusal says the budget is smaller than one call.
    expect(answer).toContain('"contractors-daily" of the group contractors is 1 token, smaller than that');
  });
});
