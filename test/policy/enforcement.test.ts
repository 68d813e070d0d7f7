import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCountersign, type Countersign } from '../../src/app.ts';
import { ScriptedProvider, type Script } from '../../src/agent/providers/scripted.ts';
import { defineTool, type AnyTool, type McpToolFacts } from '../../src/agent/tools/tool.ts';
import type { Requester } from '../../src/core/person.ts';
import { Priority, type WorkItem } from '../../src/core/work-item.ts';
import type { ReplyTarget } from '../../src/core/reply-target.ts';
import { createLogger } from '../../src/log.ts';
import { policyCommand } from '../../src/policy/index.ts';
import { enqueueWorkItem } from '../../src/queue/turn-lifecycle.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { restingStatus, testConfig, waitFor } from '../helpers/harness.ts';
import { builtinToolKinds as toolKinds, platforms } from './helpers.ts';
import { RecordingOutbound } from '../helpers/recording-outbound.ts';
import { vouchForWorkspace } from '../helpers/taint-baseline.ts';

const HOME = 'T0OPS0001';
const GUILD = '444444444444444444';
const SRE_ROLE = '222222222222222222';

const POLICY = `version: 1
workspaces: [slack:${HOME}]
groups:
  sre: [slack:U0SRE0001, discord-role:${SRE_ROLE}]
  oncall: [slack:U0ONCALL1]
approvers: [sre]
rules:
  - name: kubectl-read
    tool: run_command
    command: kubectl get
    from: [sre]
    outcome: allow
  - name: kubectl
    tool: run_command
    command: [kubectl]
    outcome: countersign
    approvers: [oncall]
  - name: deploy-in-ops
    tool: deploy__*
    where: { channels: [slack:C0OPS0001] }
    outcome: countersign
    approvers: [oncall]
  - name: deploy-elsewhere
    tool: deploy__*
    outcome: deny
    message: "Deploys run only in #ops."
  - name: runbooks
    tool: [write_file, edit_file]
    paths: runbooks/**
    outcome: allow
  - name: no-deletes-in-dms
    tool: delete_file
    where: { dm: true }
    outcome: deny
`;

/** MCP-shaped tools (`server__tool`) with the facts the hub would give them. */
function mcpTool(name: string, mcp: McpToolFacts): AnyTool {
  return defineTool({
    name,
    description: `${name} (test)`,
    version: '1',
    input: z.object({ service: z.string() }),
    approval: 'always',
    risk: 'medium',
    idempotent: false,
    kind: 'mcp',
    mcp,
    async execute({ service }) {
      return `${name} ${service}`;
    },
  });
}

const MCP_TOOLS = [
  mcpTool('deploy__apply', { server: 'deploy', trusted: true, destructiveHint: true }),
  mcpTool('github__list_issues', { server: 'github', trusted: false, readOnlyHint: true }),
  mcpTool('ops__status', { server: 'ops', trusted: true, readOnlyHint: true }),
  mcpTool('ops__note', { server: 'ops', trusted: true }),
  mcpTool('ops__archive', { server: 'ops', trusted: true, destructiveHint: false }),
];
const MCP_FLAGS: Record<string, string[]> = {
  deploy__apply: ['--mcp', 'trusted', '--hints', 'destructive'],
  github__list_issues: ['--mcp', 'untrusted', '--hints', 'read-only'],
  ops__status: ['--mcp', 'trusted', '--hints', 'read-only'],
  ops__note: ['--mcp', 'trusted'],
  ops__archive: ['--mcp', 'trusted', '--hints', 'additive'],
};

/** A person as `policy check --as` writes them, and where they ask. */
interface Who {
  as: string;
  groups?: string[];
}
const SRE: Who = { as: `slack:${HOME}:U0SRE0001` };
const DEV: Who = { as: `slack:${HOME}:U0DEV0001` };
const OTHER_ORG_SRE: Who = { as: 'slack:T0OTHER01:U0SRE0001' };
const DISCORD_SRE: Who = { as: `discord:${GUILD}:111111111111111111`, groups: [SRE_ROLE] };
const DISCORD_DEV: Who = { as: `discord:${GUILD}:333333333333333333` };
const DISCORD_DM: Who = { as: 'discord:@me:333333333333333333' };

interface Case {
  who: Who;
  /** `dm` or a channel id, as `policy check --where` takes it. */
  where: string;
  tool: string;
  args: Record<string, unknown>;
}

const w = (path: string) => ({ path, content: 'x' });
const cmd = (...command: string[]) => ({ command });
const CASES: Case[] = [
  { who: SRE, where: 'C0OPS0001', tool: 'read_file', args: { path: 'a.txt' } },
  { who: DEV, where: 'dm', tool: 'read_file', args: { path: 'a.txt' } },
  { who: DEV, where: 'C0GEN0001', tool: 'list_files', args: { path: '.' } },
  { who: DEV, where: 'C0GEN0001', tool: 'write_file', args: w('notes.md') },
  { who: SRE, where: 'C0OPS0001', tool: 'write_file', args: w('runbooks/restart.md') },
  { who: SRE, where: 'C0OPS0001', tool: 'write_file', args: w('runbooks/restart.sh') },
  { who: DEV, where: 'C0GEN0001', tool: 'write_file', args: w('tools/x.sh') },
  { who: DEV, where: 'dm', tool: 'write_file', args: w('.gitconfig') },
  { who: DEV, where: 'C0GEN0001', tool: 'write_file', args: w('skills/new/SKILL.md') },
  { who: DEV, where: 'C0GEN0001', tool: 'edit_file', args: { path: 'runbooks/a.md', old_text: 'a', new_text: 'b' } },
  { who: DEV, where: 'C0GEN0001', tool: 'delete_file', args: { path: 'old.log' } },
  { who: DEV, where: 'dm', tool: 'delete_file', args: { path: 'old.log' } },
  { who: SRE, where: 'C0OPS0001', tool: 'run_command', args: cmd('kubectl', 'get', 'pods') },
  { who: DEV, where: 'C0OPS0001', tool: 'run_command', args: cmd('kubectl', 'get', 'pods') },
  { who: SRE, where: 'C0OPS0001', tool: 'run_command', args: cmd('kubectl', 'delete', 'pod', 'x') },
  { who: SRE, where: 'C0OPS0001', tool: 'run_command', args: cmd('./kubectl', 'get', 'pods') },
  { who: DEV, where: 'C0GEN0001', tool: 'run_command', args: cmd('ls') },
  { who: OTHER_ORG_SRE, where: 'C0OPS0001', tool: 'run_command', args: cmd('kubectl', 'get', 'pods') },
  { who: SRE, where: 'C0OPS0001', tool: 'deploy__apply', args: { service: 'api' } },
  { who: SRE, where: 'C0GEN0001', tool: 'deploy__apply', args: { service: 'api' } },
  { who: DEV, where: 'dm', tool: 'deploy__apply', args: { service: 'api' } },
  { who: DEV, where: 'C0GEN0001', tool: 'github__list_issues', args: { service: 'api' } },
  { who: DEV, where: 'C0GEN0001', tool: 'ops__status', args: { service: 'api' } },
  { who: DEV, where: 'C0GEN0001', tool: 'ops__note', args: { service: 'api' } },
  { who: DEV, where: 'C0GEN0001', tool: 'ops__archive', args: { service: 'api' } },
  { who: DEV, where: 'C0GEN0001', tool: 'current_time', args: {} },
  {
    who: DEV,
    where: 'C0GEN0001',
    tool: 'request_human_approval',
    args: { question: 'Which region?', options: ['eu', 'us'] },
  },
  { who: DISCORD_SRE, where: '555555555555555555', tool: 'run_command', args: cmd('kubectl', 'get', 'pods') },
  { who: DISCORD_DEV, where: '555555555555555555', tool: 'run_command', args: cmd('kubectl', 'get', 'pods') },
  { who: DISCORD_DM, where: 'dm', tool: 'write_file', args: w('notes.md') },
  { who: DISCORD_DM, where: 'dm', tool: 'delete_file', args: { path: 'notes.md' } },
];

/** The requester and reply target the adapters would build for a case. */
function turnOf(c: Case): { requester: Requester; reply: ReplyTarget } {
  const [platform, workspace, user] = c.who.as.split(':') as [string, string, string];
  const requester: Requester = {
    platform,
    userId: user,
    workspace,
    ...(c.who.groups ? { groups: c.who.groups } : {}),
  };
  if (platform === 'slack') {
    return { requester, reply: { platform, channel: c.where === 'dm' ? 'D0DM00001' : c.where, workspace: HOME } };
  }
  if (c.where === 'dm') return { requester, reply: { platform, channel: '777777777777777777' } };
  return { requester, reply: { platform, channel: c.where, workspace } };
}

const script: Script = {
  rules: [
    ...CASES.map((c, i) => ({
      match: `^case ${i}$`,
      rounds: [{ toolCalls: [{ name: c.tool, args: c.args }] }, { text: `case ${i} done` }],
    })),
    {
      match: '^restart',
      rounds: [
        { toolCalls: [{ name: 'run_command', args: cmd('echo', 'restarted') }] },
        { text: 'Result: {{lastToolResult}}' },
      ],
    },
    {
      match: '^note',
      rounds: [
        { toolCalls: [{ name: 'write_file', args: { path: 'notes.md', content: 'remember' } }] },
        { text: 'Result: {{lastToolResult}}' },
      ],
    },
    {
      match: '^script',
      rounds: [{ toolCalls: [{ name: 'write_file', args: w('tools/x.sh') }] }, { text: 'Result: {{lastToolResult}}' }],
    },
    { rounds: [{ text: 'ok' }] },
  ],
};

const slackPerson = (user: string): Requester => ({ platform: 'slack', userId: user, workspace: HOME });
const GENERAL: ReplyTarget = { platform: 'slack', channel: 'C0GEN0001', workspace: HOME };

describe('the policy, enforced by the running bot', () => {
  let db: TestDatabase;
  let app: Countersign;
  let policyFile: string;
  const slack = new RecordingOutbound('slack');

  const say = (text: string, requester: Requester, reply: ReplyTarget): Promise<WorkItem> =>
    enqueueWorkItem(app.pool, {
      type: 'CHAT',
      priority: Priority.CRITICAL,
      conversationId: `policy:${text}:${Math.random()}`,
      requester,
      input: { prompt: text },
      payload: {},
      reply,
    });

  const settled = (id: string) => restingStatus(app.pool, id);

  const envelopeOf = (itemId: string) =>
    waitFor(
      async () => {
        const { rows } = await app.pool.query(
          `SELECT nonce, calls FROM countersign.approval_envelopes WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
          [itemId],
        );
        return rows[0] as { nonce: string; calls: string } | undefined;
      },
      20_000,
      'the card',
    );

  let workspaceRoot = '';
  beforeAll(async () => {
    db = await createTestDatabase();
    policyFile = path.join(mkdtempSync(path.join(tmpdir(), 'cs-policy-')), 'policy.yaml');
    writeFileSync(policyFile, POLICY);
    const config = testConfig(db.url, { POLICY_FILE: policyFile, ENABLE_RUN_COMMAND: 'true' });
    workspaceRoot = config.AGENT_WORKSPACE_ROOT;
    app = await startCountersign(config, {
      role: 'all',
      provider: new ScriptedProvider(script),
      outbounds: [slack, new RecordingOutbound('discord')],
      tools: MCP_TOOLS,
      console: false,
      log: createLogger('silent'),
    });
  });
  afterAll(async () => {
    await app.stop();
    await db.drop();
  });

  const resultOf = async (id: string) =>
    (await app.pool.query(`SELECT result->>'text' AS text FROM countersign.work_items WHERE id = $1`, [id])).rows[0]
      ?.text as string | undefined;

  it("refuses a requester's own Approve of run_command; an approver's click runs it once", async () => {
    const item = await say('restart please', slackPerson('U0DEV0001'), GENERAL);
    expect(await settled(item.id)).toBe('awaiting_approval');
    const { nonce, calls } = await envelopeOf(item.id);
    expect(JSON.parse(calls)[0].policy).toMatchObject({ outcome: 'countersign', rule: { name: 'default:exec' } });
    // The card says who may decide and which rule asked.
    const card = slack.channelText('C0GEN0001').find((t) => t.includes('Approval needed') && t.includes('echo'));
    expect(card).toContain(
      'needs a countersignature by slack:U0SRE0001, discord-role:222222222222222222, not the requester · rule default:exec',
    );
    const own = await app.approvals.click(`${nonce}.A`, slackPerson('U0DEV0001'));
    expect(own).toEqual({ ok: false, reason: expect.stringMatching(/second signature/) });
    // Someone who is neither requester nor approver.
    const stranger = await app.approvals.click(`${nonce}.A`, slackPerson('U0DEV0002'));
    expect(stranger).toEqual({ ok: false, reason: expect.stringMatching(/not allowed/) });
    const sre = await app.approvals.click(`${nonce}.A`, slackPerson('U0SRE0001'));
    if (!sre.ok || !('continuation' in sre)) throw new Error(`expected a continuation, got ${JSON.stringify(sre)}`);
    expect(await settled(sre.continuation.id)).toBe('done');
    expect(await resultOf(sre.continuation.id)).toMatch(/^Result: \$ echo restarted[\s\S]*exit code 0/);
    const ran = await app.pool.query(
      `SELECT count(*)::int AS n FROM countersign.tool_executions WHERE work_item_id = ANY($1) AND tool = 'run_command'`,
      [[item.id, sre.continuation.id]],
    );
    expect(ran.rows[0].n).toBe(1);
  });

  it('closes the laundering path: writing a script needs a countersignature, so it cannot be self-approved', async () => {
    const item = await say('script it', slackPerson('U0DEV0001'), GENERAL);
    expect(await settled(item.id)).toBe('awaiting_approval');
    const { nonce, calls } = await envelopeOf(item.id);
    // The built-in floor: a write that can later run (tools/x.sh) is high risk, whoever asks.
    expect(JSON.parse(calls)[0]).toMatchObject({
      risk: 'high',
      policy: { outcome: 'countersign', rule: { name: 'default:agent-changing-write' } },
    });
    const own = await app.approvals.click(`${nonce}.A`, slackPerson('U0DEV0001'));
    expect(own).toEqual({ ok: false, reason: expect.stringMatching(/second signature/) });
    // Withdrawing one's own call is always allowed.
    const withdrawn = await app.approvals.click(`${nonce}.D`, slackPerson('U0DEV0001'));
    expect(withdrawn.ok).toBe(true);
  });

  /** Waits until the running app rules by the policy file's edit (it re-stats the file at most once a second). */
  const freezeInForce = (item: WorkItem, inForce: boolean) =>
    waitFor(
      async () => {
        const ruling = await app.approvals.rule(item, { id: 'probe', name: 'write_file', args: w('notes.md') });
        return ruling.rule.startsWith('freeze,') === inForce ? true : undefined;
      },
      10_000,
      `the freeze rule to be ${inForce ? 'in force' : 'gone'}`,
    );

  it('does not run an approved call that the policy, edited while its card waited, now denies', async () => {
    const item = await say('note this', slackPerson('U0DEV0001'), GENERAL);
    expect(await settled(item.id)).toBe('awaiting_approval');
    const { nonce } = await envelopeOf(item.id);
    try {
      writeFileSync(
        policyFile,
        POLICY.replace(
          'rules:\n',
          'rules:\n  - name: freeze\n    tool: write_file\n    outcome: deny\n    message: "Change freeze until Monday."\n',
        ),
      );
      await freezeInForce(item, true);
      const click = await app.approvals.click(`${nonce}.A`, slackPerson('U0DEV0001'));
      if (!click.ok || !('continuation' in click))
        throw new Error(`expected a continuation, got ${JSON.stringify(click)}`);
      expect(await settled(click.continuation.id)).toBe('done');
      expect(await resultOf(click.continuation.id)).toMatch(/policy changed[\s\S]*freeze/i);
      const ran = await app.pool.query(
        `SELECT count(*)::int AS n FROM countersign.tool_executions WHERE work_item_id = $1`,
        [click.continuation.id],
      );
      expect(ran.rows[0].n).toBe(0);
      const audit = await app.pool.query(
        `SELECT count(*)::int AS n FROM countersign.approval_audit WHERE event = 'policy_denied' AND reason LIKE '%freeze%'`,
      );
      expect(audit.rows[0].n).toBe(1);
      // The card says why the approved call did not run.
      await waitFor(
        async () =>
          slack.channelText('C0GEN0001').some((t) => t.includes('not run: the policy changed') && t.includes('freeze'))
            ? true
            : undefined,
        10_000,
        'the card to say why',
      );
    } finally {
      writeFileSync(policyFile, POLICY);
      await freezeInForce(item, false);
    }
  });

  it(`agrees with \`policy check\` on all ${CASES.length} cases of a table`, async () => {
    // Writes a rule lets through change the workspace on nobody's countersignature, and then a
    // program run there needs one (the taint, docs/policy.md), which `policy check` cannot know of:
    // the table's writes go after everything else has been decided.
    const writes = new Set(['write_file', 'edit_file', 'delete_file']);
    // The earlier tests of this file changed the workspace too.
    await vouchForWorkspace(app.pool, workspaceRoot);
    const start = (c: (typeof CASES)[number], i: number) => {
      const { requester, reply } = turnOf(c);
      return say(`case ${i}`, requester, reply);
    };
    const items: Array<Awaited<ReturnType<typeof say>>> = [];
    const first = await Promise.all(CASES.map((c, i) => (writes.has(c.tool) ? undefined : start(c, i))));
    for (const item of first) if (item) await settled(item.id);
    const then = await Promise.all(CASES.map((c, i) => (writes.has(c.tool) ? start(c, i) : undefined)));
    for (const i of CASES.keys()) items.push((first[i] ?? then[i])!);
    const seen: string[] = [];
    const expected: string[] = [];
    for (const [i, c] of CASES.entries()) {
      const item = items[i]!;
      const status = await settled(item.id);
      let outcome: string;
      let rule: string;
      if (status === 'awaiting_approval') {
        const call = JSON.parse((await envelopeOf(item.id)).calls)[0];
        outcome = call.policy.outcome;
        rule = `${call.policy.rule.name} (${call.policy.rule.source})`;
      } else {
        const { rows } = await app.pool.query(
          `SELECT event, detail->>'rule' AS rule FROM countersign.approval_audit
            WHERE event IN ('allowed', 'policy_denied') AND detail->>'workItemId' = $1`,
          [item.id],
        );
        outcome = rows[0]?.event === 'policy_denied' ? 'deny' : rows[0]?.event === 'allowed' ? 'allow' : `?${status}`;
        rule = String(rows[0]?.rule ?? '').replace(/, (.*)$/, ' ($1)');
      }
      seen.push(`${i} ${c.tool} ${outcome} ${rule}`);
      const check = policyCommand(
        [
          'check',
          '--as',
          c.who.as,
          '--where',
          c.where,
          '--tool',
          c.tool,
          '--args',
          JSON.stringify(c.args),
          ...(c.who.groups ? ['--groups', c.who.groups.join(',')] : []),
          ...(MCP_FLAGS[c.tool] ?? []),
        ],
        { file: policyFile, options: { platforms }, toolKinds },
      );
      expect(check.exitCode).toBe(0);
      const line = (key: string) => check.lines.find((l) => l.startsWith(`${key}: `))?.slice(key.length + 2);
      expected.push(`${i} ${c.tool} ${line('outcome')} ${line('rule')}`);
    }
    expect(seen).toEqual(expected);
    // The table covers every outcome.
    const outcomes = new Set(seen.map((s) => s.split(' ')[2]));
    expect([...outcomes].sort()).toEqual(['allow', 'ask', 'countersign', 'deny']);
  });
});
