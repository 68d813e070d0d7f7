import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { skillRunPrompt } from '../../src/skills/index.ts';
import type { Script } from '../../src/agent/providers/scripted.ts';
import { runCli } from '../helpers/processes.ts';

const NEW_SKILL = `---
name: deploy-check
description: Checks that a deployment is healthy after it rolls out. Use when someone asks whether a deploy went well.
---

# Deploy check

1. Read the service's status page from the workspace with read_file.
2. Summarise what is healthy and what is not.
`;

const INCIDENT = `# Incident: API outage

## Impact
Checkout API returned 502 for 14 minutes.

## Timeline
- 10:02 alerts fired
- 10:16 rollback finished

## Root cause
A bad config push.
`;

/** One script for the three shipped skills, keyed on the skill the turn runs. */
const script: Script = {
  rules: [
    {
      match: 'skill "skillmaker"',
      rounds: [
        {
          text: 'Drafting the skill.',
          toolCalls: [{ name: 'write_file', args: { path: 'skills/deploy-check/SKILL.md', content: NEW_SKILL } }],
        },
        { text: 'Saved: {{lastToolResult}}' },
      ],
    },
    {
      match: 'skill "incident-report"',
      rounds: [
        {
          text: 'Here is the report.',
          toolCalls: [{ name: 'write_file', args: { path: 'incidents/2026-11-22-api-outage.md', content: INCIDENT } }],
        },
        { text: 'Report saved: {{lastToolResult}}' },
      ],
    },
    {
      match: 'skill "runbook"',
      rounds: [
        { text: 'Reading the runbook.', toolCalls: [{ name: 'read_file', args: { path: 'runbooks/restart-api.md' } }] },
        {
          text: 'Step 1 of 1: restart the API.',
          toolCalls: [
            {
              name: 'request_human_approval',
              args: { question: 'Step 1: restart the API pods?', options: ['Approve', 'Skip'] },
            },
          ],
        },
        { text: 'Step 1 done ({{lastToolResult}}). Runbook complete.' },
      ],
    },
  ],
};

describe('shipped skills, end to end on the scripted model', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ script });
  });
  afterAll(() => h.stop());

  const runSkill = async (conversation: string, name: string, input: string) => {
    const run = skillRunPrompt(h.app.skills, name, input);
    if (typeof run === 'string') throw new Error(run);
    return h.say(conversation, run.prompt, { input: { prompt: run.prompt, skill: name } });
  };
  const approveCard = async (itemId: string, choose = 'A') => {
    expect((await h.settled(itemId)).status).toBe('awaiting_approval');
    const envelope = await waitFor(
      async () =>
        (
          await h.app.pool.query(
            `SELECT nonce FROM countersign.approval_envelopes WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
            [itemId],
          )
        ).rows[0] as { nonce: string } | undefined,
      10_000,
      'the approval card',
    );
    const result = await h.app.approvals.click(`${envelope.nonce}.${choose}`, { platform: 'test', userId: 'U1' });
    if (!result.ok || !('continuation' in result)) throw new Error('expected a continuation');
    return result.continuation.id;
  };

  it('skillmaker writes a new custom skill through an approved write, and it passes lint and loads', async () => {
    const item = await runSkill('sk-1', 'skillmaker', 'a skill that checks deploys');
    const continuation = await approveCard(item.id);
    const done = await h.settled(continuation);
    expect(done.result?.text).toBe(
      `Saved: Wrote ${Buffer.byteLength(NEW_SKILL)} bytes to skills/deploy-check/SKILL.md.`,
    );
    const skillDir = path.join(h.config.AGENT_WORKSPACE_ROOT, 'skills');
    const lint = runCli(['skills', 'lint', skillDir], {});
    expect((await lint.exited).code, lint.stdout() + lint.stderr()).toBe(0);
    // Picked up without a restart.
    await waitFor(async () => h.app.skills.get('deploy-check'), 20_000, 'the new skill to load');
  });

  it('incident-report saves the report to the workspace after approval', async () => {
    const item = await runSkill('sk-2', 'incident-report', 'the checkout outage this morning');
    const done = await h.settled(await approveCard(item.id));
    expect(done.result?.text).toMatch(/^Report saved: Wrote \d+ bytes to incidents\/2026-11-22-api-outage\.md\.$/);
    expect(readFileSync(path.join(h.config.AGENT_WORKSPACE_ROOT, 'incidents/2026-11-22-api-outage.md'), 'utf8')).toBe(
      INCIDENT,
    );
  });

  it('runbook reads the runbook and asks a person before the step that acts', async () => {
    mkdirSync(path.join(h.config.AGENT_WORKSPACE_ROOT, 'runbooks'), { recursive: true });
    writeFileSync(
      path.join(h.config.AGENT_WORKSPACE_ROOT, 'runbooks/restart-api.md'),
      '# Restart API\n1. Restart the api pods.\n',
    );
    const item = await runSkill('sk-3', 'runbook', 'restart-api');
    const done = await h.settled(await approveCard(item.id, 'o0'));
    expect(done.result?.text).toBe('Step 1 done (The person answered: Approve). Runbook complete.');
    const { rows } = await h.app.pool.query(
      `SELECT tool FROM countersign.tool_executions WHERE work_item_id = $1 ORDER BY started_at`,
      [item.id],
    );
    expect(rows.map((r) => r.tool)).toEqual(['read_file']);
  });
});
