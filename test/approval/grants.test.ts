import { EventEmitter } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCountersign, type Countersign } from '../../src/app.ts';
import { ScriptedProvider, type Script } from '../../src/agent/providers/scripted.ts';
import { defineTool } from '../../src/agent/tools/tool.ts';
import type { ReplyOptions } from '../../src/reply/outbound.ts';
import type { ReplyTarget } from '../../src/core/reply-target.ts';
import { newWorkItem, Priority, type WorkItem } from '../../src/core/work-item.ts';
import { createLogger } from '../../src/log.ts';
import { enqueueWorkItem } from '../../src/queue/turn-lifecycle.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { testConfig, waitFor } from '../helpers/harness.ts';
import { runCli } from '../helpers/processes.ts';
import { RecordingOutbound } from '../helpers/recording-outbound.ts';

const shownTexts = new EventEmitter<{ text: [string] }>();

/** Resolves when the bot shows a text that `matches` (or after a deadline, for the test to fail on). */
function nextShown(matches: (text: string) => boolean): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      shownTexts.off('text', onText);
      resolve();
    };
    const onText = (text: string) => {
      if (matches(text)) done();
    };
    shownTexts.on('text', onText);
    AbortSignal.timeout(10_000).addEventListener('abort', done);
  });
}

/** Every text the bot showed, edits included: the progress line lives only in edits. */
class LoggingOutbound extends RecordingOutbound {
  readonly shown: string[] = [];
  override async post(target: ReplyTarget, text: string, options?: ReplyOptions) {
    this.shown.push(text);
    shownTexts.emit('text', text);
    return super.post(target, text, options);
  }
  override async edit(target: ReplyTarget, messageId: string, text: string, options?: ReplyOptions) {
    this.shown.push(text);
    shownTexts.emit('text', text);
    return super.edit(target, messageId, text, options);
  }
}

const runs: string[] = [];
const tailLog = defineTool({
  name: 'tail_log',
  description: 'Shows the end of a log file (test)',
  version: '1',
  input: z.object({ path: z.string(), lines: z.number().optional() }),
  approval: 'always',
  risk: 'medium',
  idempotent: true,
  async execute({ path: file }) {
    runs.push(file);
    // Runs until the progress line naming it has been shown, so the test can read that line.
    await nextShown((text) => text.includes('tail_log'));
    return `tail of ${file}`;
  },
});

const POLICY = `version: 1
rules:
  - name: tail-logs
    tool: tail_log
    outcome: ask
    grant:
      path: ["logs/**", "logs/app/**"]
`;

const call = (prompt: string, args: Record<string, unknown>) => ({
  match: `^${prompt}$`,
  rounds: [{ toolCalls: [{ name: 'tail_log', args }] }, { text: 'Result: {{lastToolResult}}' }],
});
const script: Script = {
  rules: [
    call('tail app', { path: 'logs/app/a.log' }),
    call('tail app2', { path: 'logs/app/b.log' }),
    call('tail db', { path: 'logs/db.log' }),
    call('tail lines', { path: 'logs/app/a.log', lines: 5 }),
    call('tail climb', { path: 'logs/app/../../secrets.txt' }),
    { rounds: [{ text: 'ok' }] },
  ],
};

const ALICE = { platform: 'test', userId: 'U1', displayName: 'Alice' };
const OPS: ReplyTarget = { platform: 'test', channel: 'C-OPS' };
const OTHER: ReplyTarget = { platform: 'test', channel: 'C-OTHER' };

describe('standing grants ("Always allow here") across two worker processes', () => {
  let db: TestDatabase;
  let env: Record<string, string>;
  let workerA: Countersign | undefined;
  let workerB: Countersign | undefined;
  const outbound = new LoggingOutbound();

  const start = () =>
    startCountersign(testConfig(db.url, { ...env }), {
      role: 'worker',
      provider: new ScriptedProvider(script),
      outbounds: [outbound],
      tools: [tailLog],
      console: false,
      log: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
    });

  beforeAll(async () => {
    db = await createTestDatabase();
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-grants-'));
    writeFileSync(path.join(dir, 'policy.yaml'), POLICY);
    env = { POLICY_FILE: path.join(dir, 'policy.yaml') };
    workerA = await start();
  });
  afterAll(async () => {
    await workerA?.stop();
    await workerB?.stop();
    await db.drop();
  });

  const app = () => (workerB ?? workerA)!;
  const say = (prompt: string, reply: ReplyTarget) =>
    enqueueWorkItem(app().pool, {
      type: 'CHAT',
      priority: Priority.CRITICAL,
      conversationId: `grants:${prompt}:${Math.random()}`,
      requester: ALICE,
      input: { prompt },
      payload: {},
      reply,
    });
  const settled = (id: string) =>
    waitFor(
      async () => {
        const { rows } = await app().pool.query(`SELECT status, result FROM countersign.work_items WHERE id = $1`, [
          id,
        ]);
        const row = rows[0] as { status: string; result: { text?: string } | null } | undefined;
        return row && row.status !== 'queued' && row.status !== 'running' ? row : undefined;
      },
      30_000,
      `work item ${id} to settle`,
    );
  const cardOf = (itemId: string) =>
    waitFor(
      async () => {
        const { rows } = await app().pool.query(
          `SELECT id, nonce, card_message_id FROM countersign.approval_envelopes WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
          [itemId],
        );
        return rows[0] as { id: string; nonce: string; card_message_id: string } | undefined;
      },
      20_000,
      'the card',
    );
  const envelopes = async (itemId: string) =>
    Number(
      (
        await app().pool.query(
          `SELECT count(*)::int AS n FROM countersign.approval_envelopes WHERE work_item_id = $1`,
          [itemId],
        )
      ).rows[0].n,
    );
  const liveGrants = async () =>
    (
      await app().pool.query(
        `SELECT id, args, channel, uses FROM countersign.grants WHERE revoked_at IS NULL AND expires_at > now()`,
      )
    ).rows as Array<{ id: string; args: Record<string, unknown>; channel: string; uses: number }>;

  /** Asks, shows the card, and clicks "Always allow here" on it; returns the grant made. */
  async function grantFrom(prompt: string, reply: ReplyTarget) {
    const item = await say(prompt, reply);
    expect((await settled(item.id)).status).toBe('awaiting_approval');
    const envelope = await cardOf(item.id);
    const card = { ...outbound.messages.get(envelope.card_message_id)! };
    expect(card.buttons?.map((b) => b.label)).toEqual(['Approve', 'Always allow here', 'Deny', 'Deny with reason…']);
    const clicked = await app().approvals.click(`${envelope.nonce}.g0`, ALICE);
    if (!clicked.ok || !('continuation' in clicked))
      throw new Error(`the grant click was refused: ${JSON.stringify(clicked)}`);
    const done = await settled(clicked.continuation.id);
    expect(done.status).toBe('done');
    return { item, envelope, card };
  }

  /** A turn that waits for a card: the call was not covered. */
  async function asks(prompt: string, reply: ReplyTarget): Promise<void> {
    const before = runs.length;
    const item = await say(prompt, reply);
    expect((await settled(item.id)).status).toBe('awaiting_approval');
    expect(runs.length).toBe(before);
  }

  /** A turn whose call ran at once under a grant: no envelope, the tool ran, the audit names the grant. */
  async function runsUnderGrant(prompt: string, reply: ReplyTarget, grantId: string): Promise<void> {
    const item = await say(prompt, reply);
    const done = await settled(item.id);
    expect(done.status).toBe('done');
    expect(done.result?.text).toMatch(/Result: tail of logs\/app\//);
    expect(await envelopes(item.id)).toBe(0);
    const { rows } = await app().pool.query(
      `SELECT detail FROM countersign.approval_audit WHERE event = 'grant_used' AND detail->>'workItemId' = $1`,
      [item.id],
    );
    expect(rows.map((r) => r.detail.grant)).toEqual([grantId]);
  }

  it('grants what the card said, then lets covered calls run without a card on another worker', async () => {
    const { card } = await grantFrom('tail app', OPS);
    // The card said what the grant would cover before the click: the narrowest pattern of the policy.
    expect(card.text).toContain('Always allow here: later `tail_log` calls with path matching `logs/app/**`');
    expect(card.text).toContain('for anyone, for 7 days or until revoked');
    const grants = await liveGrants();
    expect(grants).toHaveLength(1);
    expect(grants[0]!.args).toEqual({ path: { glob: 'logs/app/**' } });
    const decided = outbound.messages.get(card.id)!.text;
    expect(decided).not.toContain('Always allow here:');
    expect(decided).toContain(`always allowed here from now on (grant ${grants[0]!.id.slice(0, 8)})`);

    // The worker that made the grant goes away; another process carries on.
    await workerA!.stop();
    workerA = undefined;
    workerB = await start();

    const before = outbound.shown.length;
    await runsUnderGrant('tail app', OPS, grants[0]!.id);
    await runsUnderGrant('tail app2', OPS, grants[0]!.id);
    expect(outbound.shown.slice(before).some((t) => /allowed by a grant from Alice, expires \d{4}-/.test(t))).toBe(
      true,
    );
    expect((await liveGrants())[0]!.uses).toBe(2);
  });

  it('asks again for other arguments, a path that climbs out, and another channel', async () => {
    await asks('tail db', OPS);
    await asks('tail lines', OPS);
    await asks('tail climb', OPS);
    await asks('tail app', OTHER);
  });

  it('asks again once the grant is revoked from the CLI (another process)', async () => {
    const [grant] = await liveGrants();
    const list = runCli(['grants', 'list'], { DATABASE_URL: db.url, LOG_LEVEL: 'silent' });
    expect((await list.exited).code).toBe(0);
    expect(list.stdout()).toContain(grant!.id);
    expect(list.stdout()).toContain('path matching logs/app/**');
    const revoke = runCli(['grants', 'revoke', grant!.id.slice(0, 8)], { DATABASE_URL: db.url, LOG_LEVEL: 'silent' });
    expect((await revoke.exited).code, revoke.stderr()).toBe(0);
    expect(await liveGrants()).toHaveLength(0);
    await asks('tail app', OPS);
    const audit = await app().pool.query(
      `SELECT actor FROM countersign.approval_audit WHERE event = 'grant_revoked' AND detail->>'grant' = $1`,
      [grant!.id],
    );
    expect(audit.rows).toHaveLength(1);
  });

  it('asks again once the grant has expired', async () => {
    await grantFrom('tail app', OPS);
    const [grant] = await liveGrants();
    await runsUnderGrant('tail app2', OPS, grant!.id);
    await app().pool.query(`UPDATE countersign.grants SET expires_at = now() - interval '1 second' WHERE id = $1`, [
      grant!.id,
    ]);
    await asks('tail app2', OPS);
  });

  it('never lets a call through on a grant whose revocation commits while it is being claimed', async () => {
    await grantFrom('tail app', OPS);
    const [grant] = await liveGrants();
    const item: WorkItem = newWorkItem({
      type: 'CHAT',
      priority: Priority.CRITICAL,
      conversationId: 'grants:race',
      requester: ALICE,
      input: { prompt: 'tail app' },
      payload: {},
      reply: OPS,
    });
    const client = await app().pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(`UPDATE countersign.grants SET revoked_at = now() WHERE id = $1`, [grant!.id]);
      // The claim has to wait for the revoking transaction's row lock...
      const claim = app().approvals.useGrant(item, {
        id: 'race-1',
        name: 'tail_log',
        args: { path: 'logs/app/a.log' },
      });
      let settled = false;
      claim.then(
        () => (settled = true),
        () => (settled = true),
      );
      await waitFor(
        async () => {
          const { rows } = await app().pool.query(
            `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
          );
          return rows.length > 0 ? true : undefined;
        },
        10_000,
        'the claim to wait for the row lock',
      );
      expect(settled).toBe(false);
      await client.query('COMMIT');
      // ...and then sees the grant revoked.
      expect(await claim).toBeUndefined();
    } finally {
      client.release();
    }
  });

  it('refuses "Always allow here" from someone who may not approve, and for a call the policy does not offer it for', async () => {
    const item = await say('tail app', OPS);
    expect((await settled(item.id)).status).toBe('awaiting_approval');
    const envelope = await cardOf(item.id);
    const mallory = { platform: 'test', userId: 'U666' };
    const refused = await app().approvals.click(`${envelope.nonce}.g0`, mallory);
    expect(refused.ok).toBe(false);
    const nothing = await app().approvals.click(`${envelope.nonce}.g7`, ALICE);
    expect(nothing).toEqual({ ok: false, reason: 'That button names a call that was not requested.' });
  });
});
