import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCountersign, type Countersign } from '../../src/app.ts';
import { ScriptedProvider, type Script } from '../../src/agent/providers/scripted.ts';
import { defineTool, type AnyTool } from '../../src/agent/tools/tool.ts';
import type { Requester } from '../../src/core/person.ts';
import { Priority, type WorkItem } from '../../src/core/work-item.ts';
import type { ReplyTarget } from '../../src/core/reply-target.ts';
import { createLogger } from '../../src/log.ts';
import { enqueueWorkItem } from '../../src/queue/turn-lifecycle.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { restingStatus, testConfig, waitFor } from '../helpers/harness.ts';
import { RecordingOutbound } from '../helpers/recording-outbound.ts';

/**
 * The repro of issue 47 (7, `-0`), through the running bot: the model writes `{"replicas": -0}`, a
 * rule keyed on `0` decides, and the tool receives exactly the arguments the policy decided on.
 */

const HOME = 'T0OPS0001';
const POLICY = `version: 1
workspaces: [slack:${HOME}]
approvers: [slack:U0SRE0001]
rules:
  - name: never-zero
    tool: k8s__scale
    args: { replicas: 0 }
    outcome: deny
    message: "Nothing scales to zero here."
  - { name: scale, tool: k8s__scale, outcome: allow }
  - name: zero-needs-two
    tool: k8s__rollout
    args: { replicas: 0 }
    outcome: countersign
  - { name: rollout, tool: k8s__rollout, outcome: allow }
`;

/** What each tool received, by call. */
const received: Array<{ tool: string; args: Record<string, unknown> }> = [];

function k8sTool(name: string): AnyTool {
  return defineTool({
    name,
    description: `${name} (test)`,
    version: '1',
    input: z.object({ replicas: z.number() }),
    approval: 'always',
    risk: 'medium',
    idempotent: false,
    kind: 'mcp',
    mcp: { server: 'k8s', trusted: true },
    async execute(args) {
      received.push({ tool: name, args });
      return `${name} to ${Object.is(args.replicas, -0) ? '-0' : String(args.replicas)}`;
    },
  });
}

const script: Script = {
  rules: [
    {
      match: '^scale$',
      rounds: [
        { toolCalls: [{ name: 'k8s__scale', rawArgs: '{"replicas": -0}' }] },
        { text: 'Result: {{lastToolResult}}' },
      ],
    },
    {
      match: '^rollout$',
      rounds: [
        { toolCalls: [{ name: 'k8s__rollout', rawArgs: '{"replicas": -0}' }] },
        { text: 'Result: {{lastToolResult}}' },
      ],
    },
    { rounds: [{ text: 'ok' }] },
  ],
};

const person = (user: string): Requester => ({ platform: 'slack', userId: user, workspace: HOME });
const GENERAL: ReplyTarget = { platform: 'slack', channel: 'C0GEN0001', workspace: HOME };

describe('a call the model sends with -0, through the running bot', () => {
  let db: TestDatabase;
  let app: Countersign;

  const say = (text: string): Promise<WorkItem> =>
    enqueueWorkItem(app.pool, {
      type: 'CHAT',
      priority: Priority.CRITICAL,
      conversationId: `args:${text}:${Math.random()}`,
      requester: person('U0DEV0001'),
      input: { prompt: text },
      payload: {},
      reply: GENERAL,
    });
  const resultOf = async (id: string) =>
    (await app.pool.query(`SELECT result->>'text' AS text FROM countersign.work_items WHERE id = $1`, [id])).rows[0]
      ?.text as string | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    const policyFile = path.join(mkdtempSync(path.join(tmpdir(), 'cs-args-')), 'policy.yaml');
    writeFileSync(policyFile, POLICY);
    app = await startCountersign(testConfig(db.url, { POLICY_FILE: policyFile }), {
      role: 'all',
      provider: new ScriptedProvider(script),
      outbounds: [new RecordingOutbound('slack')],
      tools: [k8sTool('k8s__scale'), k8sTool('k8s__rollout')],
      console: false,
      log: createLogger('silent'),
    });
  });
  afterAll(async () => {
    await app.stop();
    await db.drop();
  });

  it('is denied by a deny rule on 0, and never runs', async () => {
    const item = await say('scale');
    expect(await restingStatus(app.pool, item.id)).toBe('done');
    expect(received.filter((r) => r.tool === 'k8s__scale')).toEqual([]);
    const audit = await app.pool.query(
      `SELECT reason, detail->>'rule' AS rule FROM countersign.approval_audit WHERE event = 'policy_denied'`,
    );
    expect(audit.rows).toEqual([
      { reason: 'Nothing scales to zero here.', rule: expect.stringMatching(/^never-zero, /) },
    ]);
  });

  it('waits for a countersignature under a rule on 0, and runs with the arguments on the card', async () => {
    const item = await say('rollout');
    expect(await restingStatus(app.pool, item.id)).toBe('awaiting_approval');
    const { nonce, calls } = await waitFor(
      async () =>
        (
          await app.pool.query(
            `SELECT nonce, calls FROM countersign.approval_envelopes WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
            [item.id],
          )
        ).rows[0] as { nonce: string; calls: string } | undefined,
      20_000,
      'the card',
    );
    const [planned] = JSON.parse(calls) as Array<{
      args: unknown;
      policy: { outcome: string; rule: { name: string } };
    }>;
    expect(planned!.policy).toMatchObject({ outcome: 'countersign', rule: { name: 'zero-needs-two' } });
    const click = await app.approvals.click(`${nonce}.A`, person('U0SRE0001'));
    if (!click.ok || !('continuation' in click))
      throw new Error(`expected a continuation, got ${JSON.stringify(click)}`);
    expect(await restingStatus(app.pool, click.continuation.id)).toBe('done');
    expect(await resultOf(click.continuation.id)).toBe('Result: k8s__rollout to 0');
    // The tool got exactly the arguments the card showed and the policy decided on (0, never -0).
    expect(received).toEqual([{ tool: 'k8s__rollout', args: planned!.args }]);
    expect(received[0]!.args).toEqual({ replicas: 0 });
  });
});
