/**
 * A budget that covers a Discord role applies in a DM too, where Discord sends no roles: the
 * requester's roles are looked up (Get Current User Guilds, Get Guild Member), and when Discord
 * cannot say, the turn's model calls are refused with the reason (docs/budgets.md).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord } from '../fakes/discord/index.ts';
import { dmMessage } from '../fixtures/discord/payloads.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';
import type { Script } from '../../src/agent/providers/scripted.ts';

const script: Script = { rules: [{ rounds: [{ text: 'answered without a budget' }] }] };

describe('a budget on a Discord role, asked in a DM', () => {
  let fake: FakeDiscord;
  let h: Harness;
  let dir: string;
  let contractors: string;

  beforeAll(async () => {
    fake = await FakeDiscord.start();
    contractors = fake.world.addRole('contractors', []);
    dir = mkdtempSync(path.join(tmpdir(), 'cs-dm-budget-'));
    const policy = path.join(dir, 'policy.yaml');
    writeFileSync(
      policy,
      [
        'version: 1',
        'groups:',
        `  contractors: [discord-role:${contractors}]`,
        'budgets:',
        '  - name: contractors-daily',
        '    for: { group: contractors }',
        '    tokens: 1', // no call fits: a call it covers is refused, naming it
        '    per: day',
        '  - name: guild-monthly',
        `    for: { workspace: discord:${fake.scene.guildId} }`,
        '    tokens: 100000000',
        '    per: month',
      ].join('\n'),
    );
    h = await startHarness({
      script,
      env: {
        DISCORD_TOKEN: fake.token,
        DISCORD_APPLICATION_ID: fake.scene.applicationId,
        DISCORD_GUILD_ID: fake.scene.guildId,
        DISCORD_API_URL: fake.restUrl,
        POLICY_FILE: policy,
      },
    });
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Says `text` in the DM and waits for the bot's next answer there. */
  async function dm(text: string): Promise<string> {
    const before = fake.botTextIn(fake.scene.dmChannelId).length;
    fake.userSays(dmMessage(fake.scene, { text }));
    return fake.until(
      () => {
        const answers = fake.botTextIn(fake.scene.dmChannelId).slice(before);
        return answers.find((t) => t.includes('answered') || t.includes('I stopped here'));
      },
      'the answer in the DM',
      45_000,
    );
  }

  it('answers someone without the role: their roles were looked up and no role budget covers them', async () => {
    expect(await dm('first')).toContain('answered without a budget');
  });

  it('counts a DM from someone with the role against the role’s budget, though Discord sent no roles', async () => {
    fake.world.memberRoles.set(fake.scene.human.id, [contractors]);
    const answer = await dm('second');
    // One token can never hold a call: the refusal says the budget is smaller than one call.
    expect(answer).toContain('"contractors-daily" of the group contractors is 1 token, smaller than that');
  });

  it('refuses the calls, with the reason, when Discord cannot say which roles they have', async () => {
    fake.rateLimits.failNext('GET /users/@me/guilds', { retryAfterSeconds: 1 });
    const answer = await dm('third');
    expect(answer).toContain(
      'I could not tell whether the budget "contractors-daily" of the group contractors applies to you',
    );
    const { rows } = await h.app.pool.query(
      `SELECT reason, detail FROM countersign.approval_audit WHERE event = 'budget_refused' ORDER BY id DESC LIMIT 1`,
    );
    expect(rows[0]).toMatchObject({ reason: 'groups_unknown', detail: { budget: 'contractors-daily' } });
  });
});
