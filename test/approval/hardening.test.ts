import { existsSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startCountersign, type Countersign } from '../../src/app.ts';
import { defineTool, type AnyTool } from '../../src/agent/tools/tool.ts';
import { ScriptedProvider, type Script } from '../../src/agent/providers/scripted.ts';
import type { Requester } from '../../src/core/person.ts';
import { Priority, type WorkItem } from '../../src/core/work-item.ts';
import type { ReplyTarget } from '../../src/core/reply-target.ts';
import { createLogger } from '../../src/log.ts';
import { enqueueWorkItem } from '../../src/queue/turn-lifecycle.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { restingStatus, testConfig, waitFor } from '../helpers/harness.ts';
import { RecordingOutbound } from '../helpers/recording-outbound.ts';
import { vouchForWorkspace } from '../helpers/taint-baseline.ts';

/**
 * The review's reproductions (issue 30), each through the real worker: a requester who is not an
 * approver tries to get a program of their choosing run on their own clicks alone.
 */
const HOME = 'T0HARD001';

const POLICY = `version: 1
workspaces: [slack:${HOME}]
groups:
  sre: [slack:U0SRE0001]
approvers: [sre]
rules:
  - name: sandbox
    tool: '*'
    paths: sandbox/**
    outcome: ask
  - name: dry-runs
    tool: run_command
    args: { dry_run: true }
    outcome: allow
  - name: git-status
    tool: run_command
    command: [git, -C, x, status]
    outcome: allow
  - name: run-notes
    tool: run_command
    command: [sh, notes.txt]
    outcome: countersign
    grantable: true
  - name: make-test
    tool: shell__run
    command: make test
    outcome: allow
`;

const call = (name: string, args: Record<string, unknown>) => ({ toolCalls: [{ name, args }] });
const RESULT = { text: 'Result: {{lastToolResult}}' };

const script: Script = {
  rules: [
    {
      match: '^extra key',
      rounds: [call('run_command', { command: ['sh', '-c', 'echo pwned > pwned.txt'], path: 'sandbox/x' }), RESULT],
    },
    {
      match: '^dry run',
      rounds: [call('run_command', { command: ['sh', '-c', 'echo pwned > pwned.txt'], dry_run: true }), RESULT],
    },
    {
      match: '^git config',
      rounds: [call('write_file', { path: 'x/config', content: '[core]\n\tfsmonitor = touch pwned.txt\n' }), RESULT],
    },
    { match: '^git head', rounds: [call('write_file', { path: 'x/HEAD', content: 'ref: refs/heads/main\n' }), RESULT] },
    { match: '^git status', rounds: [call('run_command', { command: ['git', '-C', 'x', 'status'] }), RESULT] },
    { match: '^sandbox note', rounds: [call('write_file', { path: 'sandbox/note.txt', content: 'hi' }), RESULT] },
    { match: '^through link', rounds: [call('write_file', { path: 'docs/sk/evil/SKILL.md', content: 'x' }), RESULT] },
    { match: '^into git', rounds: [call('write_file', { path: 'docs/gitmeta/config', content: 'x' }), RESULT] },
    { match: '^echo hi', rounds: [call('run_command', { command: ['echo', 'hi'] }), RESULT] },
    { match: '^run notes', rounds: [call('run_command', { command: ['sh', 'notes.txt'] }), RESULT] },
    {
      match: '^write notes',
      rounds: [call('write_file', { path: 'notes.txt', content: 'touch pwned.txt\n' }), RESULT],
    },
    { match: '^write later', rounds: [call('write_file', { path: 'later.txt', content: 'later\n' }), RESULT] },
    { match: '^write readme', rounds: [call('write_file', { path: 'README.txt', content: 'hello\n' }), RESULT] },
    { match: '^mcp write', rounds: [call('fs__write', { path: 'src/lib.rs', content: 'fn main() {}\n' }), RESULT] },
    { match: '^mcp make', rounds: [call('shell__run', { command: 'make test' }), RESULT] },
    { rounds: [{ text: 'ok' }] },
  ],
};

/** MCP-shaped tools (`server__tool`) as the hub would describe them: a file writer and a shell. */
const MCP_TOOLS: AnyTool[] = [
  defineTool({
    name: 'fs__write',
    description: 'writes a file (test)',
    version: '1',
    input: z.object({ path: z.string(), content: z.string() }),
    approval: 'always',
    risk: 'medium',
    idempotent: false,
    kind: 'mcp',
    mcp: { server: 'fs', trusted: true, destructiveHint: false },
    // A real MCP server writes where it writes: into the workspace here, so the disk shows it.
    async execute({ path: p, content }) {
      mkdirSync(path.dirname(path.join(mcpWorkspace, p)), { recursive: true });
      writeFileSync(path.join(mcpWorkspace, p), content);
      return `wrote ${p}`;
    },
  }),
  defineTool({
    name: 'shell__run',
    description: 'runs a shell command (test)',
    version: '1',
    input: z.object({ command: z.string() }),
    approval: 'always',
    risk: 'high',
    idempotent: false,
    kind: 'mcp',
    mcp: { server: 'shell', trusted: true, destructiveHint: true },
    async execute({ command }) {
      return `ran ${command}`;
    },
  }),
];

/** The workspace the fake MCP file server writes into (set once the app has made it). */
let mcpWorkspace = '';

const slackPerson = (user: string, workspace = HOME): Requester => ({ platform: 'slack', userId: user, workspace });
const DEV = slackPerson('U0DEV0001');
const SRE = slackPerson('U0SRE0001');
const GENERAL: ReplyTarget = { platform: 'slack', channel: 'C0GEN0001', workspace: HOME };

describe('hardening: no one-person path to code execution', () => {
  let db: TestDatabase;
  let app: Countersign;
  let workspace: string;
  const slack = new RecordingOutbound('slack');

  const say = (text: string, requester: Requester = DEV): Promise<WorkItem> =>
    enqueueWorkItem(app.pool, {
      type: 'CHAT',
      priority: Priority.CRITICAL,
      conversationId: `hardening:${text}:${Math.random()}`,
      requester,
      input: { prompt: text },
      payload: {},
      reply: GENERAL,
    });

  const settled = (id: string) => restingStatus(app.pool, id);
  const resultOf = async (id: string) =>
    (await app.pool.query(`SELECT result->>'text' AS text FROM countersign.work_items WHERE id = $1`, [id])).rows[0]
      ?.text as string | undefined;
  const envelopeOf = async (itemId: string) => {
    const { rows } = await app.pool.query(
      `SELECT nonce, calls FROM countersign.approval_envelopes WHERE work_item_id = $1`,
      [itemId],
    );
    return rows[0] as { nonce: string; calls: string } | undefined;
  };
  const policyOf = async (itemId: string) => JSON.parse((await envelopeOf(itemId))!.calls)[0].policy;
  const approve = async (itemId: string, by: Requester) => {
    const click = await app.approvals.click(`${(await envelopeOf(itemId))!.nonce}.A`, by);
    if (!click.ok || !('continuation' in click)) return click;
    await settled(click.continuation.id);
    return click;
  };
  const executions = async (program?: string) =>
    (
      await app.pool.query(
        `SELECT tool, args FROM countersign.tool_executions WHERE $1::text IS NULL OR args->'command'->>0 = $1
          ORDER BY started_at`,
        [program ?? null],
      )
    ).rows as Array<{
      tool: string;
      args: Record<string, unknown>;
    }>;

  beforeAll(async () => {
    db = await createTestDatabase();
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-hardening-'));
    const policyFile = path.join(dir, 'policy.yaml');
    writeFileSync(policyFile, POLICY);
    const config = testConfig(db.url, { POLICY_FILE: policyFile, ENABLE_RUN_COMMAND: 'true' });
    workspace = config.AGENT_WORKSPACE_ROOT;
    mcpWorkspace = workspace;
    app = await startCountersign(config, {
      role: 'all',
      provider: new ScriptedProvider(script),
      outbounds: [slack],
      tools: MCP_TOOLS,
      console: false,
      log: createLogger('silent'),
    });
  });
  afterAll(async () => {
    await app.stop();
    await db.drop();
  });
  beforeEach(async () => {
    await vouchForWorkspace(app.pool, workspace);
  });

  it('refuses an argument the tool does not declare, so it cannot pick the rule (extra `path`)', async () => {
    const item = await say('extra key');
    expect(await settled(item.id)).toBe('done');
    expect(await envelopeOf(item.id)).toBeUndefined();
    expect(await resultOf(item.id)).toMatch(/Invalid arguments for run_command: run_command has no argument "path"/);
    expect(existsSync(path.join(workspace, 'pwned.txt'))).toBe(false);
    expect((await executions()).filter((e) => e.tool === 'run_command')).toEqual([]);
  });

  it('refuses an argument the tool does not declare, so it cannot match an allow rule (`dry_run`)', async () => {
    const item = await say('dry run');
    expect(await settled(item.id)).toBe('done');
    expect(await envelopeOf(item.id)).toBeUndefined();
    expect(await resultOf(item.id)).toMatch(/has no argument "dry_run"/);
    expect(existsSync(path.join(workspace, 'pwned.txt'))).toBe(false);
  });

  it('judges, shows and runs one argument object: the card holds what the tool runs with', async () => {
    const item = await say('echo hi');
    expect(await settled(item.id)).toBe('awaiting_approval');
    const calls = JSON.parse((await envelopeOf(item.id))!.calls);
    // The defaults the tool fills in are on the card and in the plan hash, not added after it.
    expect(calls[0].args).toEqual({ command: ['echo', 'hi'], cwd: '.', timeoutSeconds: expect.any(Number) });
    const signed = await approve(item.id, SRE);
    expect(signed.ok).toBe(true);
    const ran = (await executions()).find(
      (e) => e.tool === 'run_command' && (e.args.command as string[])[0] === 'echo',
    );
    expect(ran?.args).toEqual(calls[0].args);
  });

  it('makes a program run after a self-approved write need a countersignature naming the changed files', async () => {
    // 1. The requester writes x/config on their own click (a plain `ask`).
    const write = await say('git config');
    expect(await settled(write.id)).toBe('awaiting_approval');
    expect(await policyOf(write.id)).toMatchObject({ outcome: 'ask' });
    const own = await approve(write.id, DEV);
    expect(own.ok).toBe(true);
    expect(existsSync(path.join(workspace, 'x', 'config'))).toBe(true);

    // 2. Making x a repository needs HEAD, and HEAD is git metadata: never one person's click.
    const head = await say('git head');
    expect(await settled(head.id)).toBe('awaiting_approval');
    expect(await policyOf(head.id)).toMatchObject({ outcome: 'countersign' });
    expect((await approve(head.id, DEV)).ok).toBe(false);

    // 3. `git status` in x is allowed by a rule, but the workspace changed on one person's say.
    const run = await say('git status');
    expect(await settled(run.id)).toBe('awaiting_approval');
    const policy = await policyOf(run.id);
    expect(policy).toMatchObject({ outcome: 'countersign', rule: { name: 'default:tainted-workspace' } });
    expect(policy.why).toBe('files changed since the last countersigned run: x/config');
    await waitFor(
      async () =>
        slack
          .channelText('C0GEN0001')
          .some(
            (t) =>
              t.includes('Approval needed') && t.includes('files changed since the last countersigned run: x/config'),
          )
          ? true
          : undefined,
      10_000,
      'the card naming the changed file',
    );
    expect(await approve(run.id, DEV)).toEqual({ ok: false, reason: expect.stringMatching(/second signature/) });
    expect(await executions('git')).toEqual([]);

    // 4. The approver countersigns: it runs once, and the files it vouched for no longer taint.
    const signed = await approve(run.id, SRE);
    expect(signed.ok).toBe(true);
    expect(await executions('git')).toHaveLength(1);
    const again = await say('git status');
    expect(await settled(again.id)).toBe('done');
    expect(await envelopeOf(again.id)).toBeUndefined();
  });

  it('keeps the taint when the requester approves from a payload naming another workspace', async () => {
    const write = await say('sandbox note');
    expect(await settled(write.id)).toBe('awaiting_approval');
    // Enterprise Grid: the same user id, another team id in the click's payload.
    const click = await approve(write.id, slackPerson('U0DEV0001', 'E0GRID001'));
    // Not the requester for what they may do on their own (an `ask` needs the requester)…
    expect(click.ok).toBe(false);
    expect((await approve(write.id, DEV)).ok).toBe(true);
    // …and one person to the two-person rule: the run after it needs the approver.
    const run = await say('git status');
    expect(await settled(run.id)).toBe('awaiting_approval');
    expect((await approve(run.id, slackPerson('U0DEV0001', 'E0GRID001'))).ok).toBe(false);
    const { rows } = await app.pool.query(`SELECT status FROM countersign.approval_envelopes WHERE work_item_id = $1`, [
      run.id,
    ]);
    expect(rows[0].status).toBe('pending');
  });

  it('judges a path through a folder link by where it really leads, and the card says so', async () => {
    mkdirSync(path.join(workspace, 'skills'), { recursive: true });
    mkdirSync(path.join(workspace, 'docs'), { recursive: true });
    symlinkSync('../skills', path.join(workspace, 'docs', 'sk'));
    const item = await say('through link');
    expect(await settled(item.id)).toBe('awaiting_approval');
    const policy = await policyOf(item.id);
    expect(policy).toMatchObject({ outcome: 'countersign', rule: { name: 'default:agent-changing-write' } });
    expect(policy.why).toBe('docs/sk/evil/SKILL.md is really skills/evil/SKILL.md');
    expect((await approve(item.id, DEV)).ok).toBe(false);
    expect(existsSync(path.join(workspace, 'skills', 'evil'))).toBe(false);
  });

  it('judges a path through a link into .git as git metadata', async () => {
    mkdirSync(path.join(workspace, '.git'), { recursive: true });
    mkdirSync(path.join(workspace, 'docs'), { recursive: true });
    symlinkSync('../.git', path.join(workspace, 'docs', 'gitmeta'));
    const item = await say('into git');
    expect(await settled(item.id)).toBe('awaiting_approval');
    expect(await policyOf(item.id)).toMatchObject({ outcome: 'countersign' });
    expect((await approve(item.id, DEV)).ok).toBe(false);
    expect(existsSync(path.join(workspace, '.git', 'config'))).toBe(false);
  });

  it('applies the taint over an equally strict rule of the file, and never through its grant', async () => {
    // The approver once made "Always allow here" for `sh notes.txt` under the file's countersign rule.
    const first = await say('run notes');
    expect(await settled(first.id)).toBe('awaiting_approval');
    expect(await policyOf(first.id)).toMatchObject({ rule: { name: 'run-notes' }, grant: expect.anything() });
    const granted = await app.approvals.click(`${(await envelopeOf(first.id))!.nonce}.g0`, SRE);
    expect(granted.ok).toBe(true);
    if ('continuation' in granted && granted.continuation) await settled(granted.continuation.id);
    // The requester changes notes.txt on their own click…
    const write = await say('write notes');
    expect(await settled(write.id)).toBe('awaiting_approval');
    expect((await approve(write.id, DEV)).ok).toBe(true);
    // …and the grant no longer runs `sh notes.txt`: a card names the changed file.
    const run = await say('run notes');
    expect(await settled(run.id)).toBe('awaiting_approval');
    const policy = await policyOf(run.id);
    expect(policy).toMatchObject({ outcome: 'countersign', rule: { name: 'run-notes' } });
    expect(policy.why).toContain('files changed since the last countersigned run: notes.txt');
    expect(policy.grant).toBeUndefined();
    expect(existsSync(path.join(workspace, 'pwned.txt'))).toBe(false);
  });

  it('does not run a countersigned program when the workspace changed after its card was shown', async () => {
    const readme = await say('write readme');
    expect(await settled(readme.id)).toBe('awaiting_approval');
    expect((await approve(readme.id, DEV)).ok).toBe(true);
    const run = await say('git status');
    expect(await settled(run.id)).toBe('awaiting_approval');
    expect((await policyOf(run.id)).why).toBe('files changed since the last countersigned run: README.txt');
    // In another conversation, the requester changes a file after the card was drawn.
    const later = await say('write later');
    expect(await settled(later.id)).toBe('awaiting_approval');
    expect((await approve(later.id, DEV)).ok).toBe(true);
    const signed = await approve(run.id, SRE);
    if (!signed.ok || !('continuation' in signed))
      throw new Error(`expected a continuation: ${JSON.stringify(signed)}`);
    expect(await resultOf(signed.continuation.id)).toMatch(/workspace changed after the card was shown/);
    const ran = await app.pool.query(
      `SELECT count(*)::int AS n FROM countersign.tool_executions WHERE work_item_id = $1`,
      [signed.continuation.id],
    );
    expect(ran.rows[0].n).toBe(0);
    // What the card named is not vouched for by a run that did not happen.
    const again = await say('git status');
    expect(await settled(again.id)).toBe('awaiting_approval');
    expect((await policyOf(again.id)).why).toBe(
      'files changed since the last countersigned run: later.txt, README.txt',
    );
  });

  it('counts an MCP write as a change, and an MCP shell tool as a program run', async () => {
    const write = await say('mcp write');
    expect(await settled(write.id)).toBe('awaiting_approval');
    expect(await policyOf(write.id)).toMatchObject({ outcome: 'ask' });
    expect((await approve(write.id, DEV)).ok).toBe(true);
    const run = await say('mcp make');
    expect(await settled(run.id)).toBe('awaiting_approval');
    const policy = await policyOf(run.id);
    expect(policy).toMatchObject({ outcome: 'countersign', rule: { name: 'default:tainted-workspace' } });
    expect(policy.why).toBe('files changed since the last countersigned run: src/lib.rs');
  });
});
