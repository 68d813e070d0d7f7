import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { platformDirectory } from '../../src/adapters/registry.ts';
import { ToolRegistry } from '../../src/agent/tools/registry.ts';
import { PolicyGate } from '../../src/approval/gate.ts';
import { recordFeedback, type Vote } from '../../src/audit/feedback.ts';
import type { Requester } from '../../src/core/person.ts';
import { Priority, type WorkItem } from '../../src/core/work-item.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createPool } from '../../src/db/pool.ts';
import { createLogger } from '../../src/log.ts';
import { registry } from '../../src/metrics.ts';
import { PolicyFile } from '../../src/policy/index.ts';
import { enqueueWorkItem } from '../../src/queue/turn-lifecycle.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

const OPS = 'T0OPS0001';
const OTHER_ORG = 'T0OTHER01';
const CHANNEL = 'C0OPS0001';
const REFUSAL = 'Sorry, I only work for the ops team here.';

const POLICY = `requesters:
  allow: [{ workspaces: [slack:${OPS}, slack:${OTHER_ORG}] }]
  refusal: '${REFUSAL}'
rules: []
`;

const person = (userId: string, extra: Partial<Requester> = {}): Requester => ({
  platform: 'slack',
  userId,
  workspace: OPS,
  ...extra,
});

/** A metric's value for the given labels, read from the registry /metrics exposes. */
async function metricValue(name: string, labels: Record<string, string>): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return 0;
  const { values } = await metric.get();
  const found = values.find((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want));
  return found?.value ?? 0;
}

describe('feedback: one vote per person per answer', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  let gate: PolicyGate;

  beforeAll(async () => {
    db = await createTestDatabase();
    await migrate(db.url, createLogger('silent'));
    pool = createPool(db.url, 4);
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-feedback-'));
    const file = path.join(dir, 'policy.yaml');
    writeFileSync(file, POLICY);
    const platforms = platformDirectory();
    const policyFile = new PolicyFile({ file, platforms });
    policyFile.load();
    gate = new PolicyGate(policyFile, new ToolRegistry(), platforms);
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  const answer = (): Promise<WorkItem> =>
    enqueueWorkItem(pool, {
      type: 'CHAT',
      priority: Priority.CRITICAL,
      conversationId: `slack:${CHANNEL}:${Math.random()}`,
      requester: person('U0ASKER01'),
      input: { prompt: 'how is the api?' },
      payload: {},
      reply: { platform: 'slack', workspace: OPS, channel: CHANNEL },
    });

  const vote = (item: WorkItem, by: Requester, value: Vote) =>
    recordFeedback(pool, item.id, by, value, (p, reply) => gate.mayUse(p, reply));

  async function votesOn(item: WorkItem) {
    const { rows } = await pool.query<{ workspace: string; user_id: string; vote: string }>(
      `SELECT workspace, user_id, vote FROM countersign.turn_feedback WHERE work_item_id = $1 ORDER BY workspace`,
      [item.id],
    );
    return rows;
  }

  async function auditOf(item: WorkItem) {
    const { rows } = await pool.query<{ actor: Requester; detail: { vote: Vote | null; previous: Vote | null } }>(
      `SELECT actor, detail FROM countersign.approval_audit WHERE event = 'feedback' AND detail->>'workItemId' = $1 ORDER BY id`,
      [item.id],
    );
    return rows;
  }

  it('takes a vote back when the same vote is clicked again', async () => {
    const item = await answer();
    const first = await vote(item, person('U0ANA0001'), 'up');
    expect(first).toMatchObject({ ok: true, vote: 'up', text: expect.stringMatching(/👍 is recorded/) });
    const again = await vote(item, person('U0ANA0001'), 'up');
    expect(again).toMatchObject({ ok: true, vote: null, text: expect.stringMatching(/👍 is removed/) });
    expect(await votesOn(item)).toEqual([]);
  });

  it('changes a vote when the other vote is clicked', async () => {
    const item = await answer();
    await vote(item, person('U0ANA0001'), 'down');
    const changed = await vote(item, person('U0ANA0001'), 'up');
    expect(changed).toMatchObject({ ok: true, vote: 'up' });
    expect(await votesOn(item)).toEqual([{ workspace: OPS, user_id: 'U0ANA0001', vote: 'up' }]);
  });

  it('counts each change once in the metrics and the audit log, and a standing vote once', async () => {
    const item = await answer();
    const labels = (v: Vote) => ({ platform: 'slack', vote: v });
    const before = {
      up: await metricValue('countersign_feedback_total', labels('up')),
      down: await metricValue('countersign_feedback_total', labels('down')),
      upWithdrawn: await metricValue('countersign_feedback_withdrawn_total', labels('up')),
      downWithdrawn: await metricValue('countersign_feedback_withdrawn_total', labels('down')),
    };
    // 👍, 👎 (a change), 👎 again (taken back), 👍: one person, one standing 👍.
    for (const v of ['up', 'down', 'down', 'up'] as const) await vote(item, person('U0BO00001'), v);
    const after = {
      up: await metricValue('countersign_feedback_total', labels('up')),
      down: await metricValue('countersign_feedback_total', labels('down')),
      upWithdrawn: await metricValue('countersign_feedback_withdrawn_total', labels('up')),
      downWithdrawn: await metricValue('countersign_feedback_withdrawn_total', labels('down')),
    };
    expect(after.up - before.up).toBe(2);
    expect(after.down - before.down).toBe(1);
    expect(after.upWithdrawn - before.upWithdrawn).toBe(1);
    expect(after.downWithdrawn - before.downWithdrawn).toBe(1);
    // Standing = took effect − withdrawn: one 👍, no 👎.
    expect(after.up - before.up - (after.upWithdrawn - before.upWithdrawn)).toBe(1);
    expect(after.down - before.down - (after.downWithdrawn - before.downWithdrawn)).toBe(0);
    expect((await auditOf(item)).map((r) => r.detail)).toEqual([
      expect.objectContaining({ vote: 'up', previous: null }),
      expect.objectContaining({ vote: 'down', previous: 'up' }),
      expect.objectContaining({ vote: null, previous: 'down' }),
      expect.objectContaining({ vote: 'up', previous: null }),
    ]);
  });

  it('applies two quick clicks of one person one after the other', async () => {
    const item = await answer();
    const clicks = await Promise.all([vote(item, person('U0CY00001'), 'up'), vote(item, person('U0CY00001'), 'up')]);
    // One recorded it, the other took it back, whichever came first.
    expect(clicks.map((c) => c.ok && c.vote).sort()).toEqual(['up', null].sort());
    expect(await votesOn(item)).toEqual([]);
    expect(await auditOf(item)).toHaveLength(2);
  });

  it('refuses a person the policy does not let use the bot, and records nothing', async () => {
    const item = await answer();
    const before = await metricValue('countersign_feedback_total', { platform: 'slack', vote: 'down' });
    const stranger = await vote(item, person('U0STR0001', { workspace: 'T0STRANGE' }), 'down');
    expect(stranger).toEqual({ ok: false, reason: REFUSAL });
    expect(await votesOn(item)).toEqual([]);
    expect(await auditOf(item)).toEqual([]);
    expect(await metricValue('countersign_feedback_total', { platform: 'slack', vote: 'down' })).toBe(before);
  });

  it('keeps two people with the same user id in different workspaces (a Slack Connect org) as two votes', async () => {
    const item = await answer();
    await vote(item, person('U0SAME001', { workspace: OPS }), 'up');
    await vote(item, person('U0SAME001', { workspace: OTHER_ORG }), 'down');
    expect(await votesOn(item)).toEqual([
      { workspace: OPS, user_id: 'U0SAME001', vote: 'up' },
      { workspace: OTHER_ORG, user_id: 'U0SAME001', vote: 'down' },
    ]);
  });

  it('says an answer no longer on record is not on record', async () => {
    const missing = await recordFeedback(
      pool,
      '00000000-0000-4000-8000-000000000000',
      person('U0ANA0001'),
      'up',
      (p, reply) => gate.mayUse(p, reply),
    );
    expect(missing).toEqual({ ok: false, reason: 'That answer is no longer on record.' });
  });
});
