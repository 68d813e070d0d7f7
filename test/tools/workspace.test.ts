import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createWorkspaceTools } from '../../src/agent/tools/workspace/tools.ts';
import { unifiedDiff } from '../../src/agent/tools/workspace/diff.ts';
import { needsApproval, riskOf, type AnyTool } from '../../src/agent/tools/tool.ts';
import { fitToBudget } from '../../src/agent/tools/result-budget.ts';
import { createRunCommandTool } from '../../src/agent/tools/run-command.ts';
import { testToolContext } from '../helpers/tools.ts';

const ctx = testToolContext();

let root: string;
let outside: string;
let tools: Map<string, AnyTool>;
/** Like the agent loop: arguments failing the tool's schema never reach it. */
const run = async (name: string, args: Record<string, unknown>) => {
  const tool = tools.get(name)!;
  const parsed = tool.input.safeParse(args);
  if (!parsed.success) return { content: `invalid arguments: ${parsed.error.message}`, isError: true };
  const out = await tool.execute(parsed.data, ctx);
  return typeof out === 'string' ? { content: out, isError: false } : { isError: false, ...out };
};

beforeAll(() => {
  const base = mkdtempSync(path.join(tmpdir(), 'cs-ws-'));
  root = path.join(base, 'workspace');
  outside = path.join(base, 'outside');
  mkdirSync(root);
  mkdirSync(outside);
  writeFileSync(path.join(outside, 'canary.txt'), 'secret outside the workspace');
  writeFileSync(path.join(root, 'notes.md'), 'line one\nline two\nline three\n');
  writeFileSync(path.join(root, 'blob.bin'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3]));
  symlinkSync(path.join(outside, 'canary.txt'), path.join(root, 'link-out.txt'));
  symlinkSync(outside, path.join(root, 'dir-out'));
  tools = new Map(createWorkspaceTools(root).map((t) => [t.name, t]));
});

describe('workspace confinement', () => {
  const traversal = [
    '../outside/canary.txt',
    'foo/../../outside/canary.txt',
    '..%2foutside%2fcanary.txt',
    '%2e%2e/outside/canary.txt',
    '..\\outside\\canary.txt',
    '/etc/passwd',
    'C:\\Windows\\win.ini',
    '~/.ssh/id_rsa',
    'notes.md\0.txt',
    'link-out.txt',
    'dir-out/canary.txt',
    'dir-out/new-file.txt',
    `${'a/'.repeat(600)}x`,
    `${'x'.repeat(300)}.txt`,
  ];

  it.each(traversal)('refuses to read %j', async (p) => {
    const result = await run('read_file', { path: p });
    expect(result.isError).toBe(true);
    expect(result.content).not.toContain('secret outside');
    expect(result.content).not.toContain(outside);
  });

  it.each(traversal)('refuses to write %j and nothing outside changes', async (p) => {
    const result = await run('write_file', { path: p, content: 'pwned' });
    expect(result.isError).toBe(true);
    expect(readFileSync(path.join(outside, 'canary.txt'), 'utf8')).toBe('secret outside the workspace');
    expect(existsSync(path.join(outside, 'new-file.txt'))).toBe(false);
  });

  it('refuses binary files with a clear message', async () => {
    expect(await run('read_file', { path: 'blob.bin' })).toEqual({
      content: 'That file is binary; only text files can be read or edited.',
      isError: true,
    });
  });
});

describe('workspace tools', () => {
  it('reads, lists and searches without approval; writes, edits and deletes ask first', () => {
    const policy = Object.fromEntries(
      [...tools.values()].map((t) => [t.name, needsApproval(t, {}) ? riskOf(t, {}) : 'no approval']),
    );
    expect(policy).toEqual({
      list_files: 'no approval',
      read_file: 'no approval',
      search_files: 'no approval',
      write_file: 'medium',
      edit_file: 'medium',
      delete_file: 'high',
    });
  });

  it('writes atomically inside new folders, edits exact text once, and deletes', async () => {
    expect((await run('write_file', { path: 'runbooks/db.md', content: 'step 1\nstep 2\n' })).content).toBe(
      'Wrote 14 bytes to runbooks/db.md.',
    );
    expect(await run('read_file', { path: 'runbooks/db.md', fromLine: 2, toLine: 2 })).toMatchObject({
      content: 'step 2',
    });
    expect(await run('edit_file', { path: 'runbooks/db.md', old_text: 'step', new_text: 'x' })).toMatchObject({
      isError: true,
      content: expect.stringMatching(/occurs 2 times/),
    });
    expect((await run('edit_file', { path: 'runbooks/db.md', old_text: 'step 2', new_text: 'step two' })).isError).toBe(
      false,
    );
    expect(readFileSync(path.join(root, 'runbooks/db.md'), 'utf8')).toBe('step 1\nstep two\n');
    expect((await run('search_files', { query: 'two' })).content).toBe(
      'notes.md:2: line two\nrunbooks/db.md:2: step two',
    );
    expect((await run('list_files', { path: 'runbooks' })).content).toBe('runbooks/db.md');
    expect((await run('delete_file', { path: 'runbooks/db.md' })).content).toBe('Deleted runbooks/db.md.');
    expect(existsSync(path.join(root, 'runbooks/db.md'))).toBe(false);
  });

  it('shows an edit on the approval card as a unified diff', async () => {
    const edit = tools.get('edit_file')!;
    const detail = await edit.describeForApproval!(
      edit.input.parse({ path: 'notes.md', old_text: 'line two', new_text: 'line 2' }),
      ctx,
    );
    expect(detail).toBe(
      ['--- a/notes.md', '+++ b/notes.md', '@@ -1,3 +1,3 @@', ' line one', '-line two', '+line 2', ' line three'].join(
        '\n',
      ),
    );
  });
});

describe('unified diff', () => {
  it('groups distant changes into separate hunks with three lines of context', () => {
    const before = Array.from({ length: 20 }, (_, i) => `l${i + 1}`).join('\n');
    const after = before.replace('l2\n', 'L2\n').replace('l18', 'L18');
    expect(unifiedDiff(before, after, 'a', 'b')).toBe(
      [
        '--- a',
        '+++ b',
        '@@ -1,5 +1,5 @@',
        ' l1',
        '-l2',
        '+L2',
        ' l3',
        ' l4',
        ' l5',
        '@@ -15,6 +15,6 @@',
        ' l15',
        ' l16',
        ' l17',
        '-l18',
        '+L18',
        ' l19',
        ' l20',
      ].join('\n'),
    );
  });

  it('diffs a new file against nothing', () => {
    expect(unifiedDiff('', 'a\nb\n', 'a/x', 'b/x')).toBe(
      ['--- a/x', '+++ b/x', '@@ -0,0 +1,2 @@', '+a', '+b'].join('\n'),
    );
  });
});

describe('large tool results', () => {
  it('fit a 200k-token result into the budget, keeping its start, end and the identifiers in between', () => {
    const rows = Array.from(
      { length: 16_000 },
      (_, i) => `row ${i}: status ok for service-${i % 50} latency ${i % 97} ms ${'.'.repeat(30)}`,
    );
    rows[8000] =
      'ERROR in request 3f2a9c1e-77b4-4c2e-9d0a-1b2c3d4e5f60 see https://logs.example.com/q?id=991 ticket OPS-4821';
    const text = `BEGIN REPORT\n${rows.join('\n')}\nEND REPORT`;
    expect(text.length).toBeGreaterThan(800_000);
    const fitted = fitToBudget(text, 25_000);
    expect(fitted.length).toBeLessThanOrEqual(25_000 * 4 + 200);
    expect(fitted.startsWith('BEGIN REPORT')).toBe(true);
    expect(fitted.endsWith('END REPORT')).toBe(true);
    expect(fitted).toMatch(/\[… cut \d+ of \d+ characters to fit the 25000-token budget/);
    for (const id of ['3f2a9c1e-77b4-4c2e-9d0a-1b2c3d4e5f60', 'https://logs.example.com/q?id=991', 'OPS-4821']) {
      expect(fitted).toContain(id);
    }
  });
});

describe('run_command', () => {
  it('always needs approval, shows the exact command, runs without a shell and caps its output', async () => {
    const tool = createRunCommandTool(root);
    expect(needsApproval(tool, {})).toBe(true);
    expect(riskOf(tool, {})).toBe('high');
    const args = tool.input.parse({ command: ['sh', '-c', 'yes x | head -c 200000; echo done >&2; exit 3'] });
    expect(await tool.describeForApproval!(args, ctx)).toBe(
      "$ sh -c 'yes x | head -c 200000; echo done >&2; exit 3'\n# in: .  (workspace)\n# timeout: 60 s  risk: high",
    );
    const out = await tool.execute(args, ctx);
    const result = typeof out === 'string' ? { content: out, isError: false } : out;
    expect(result.isError).toBe(true);
    expect(result.content).toContain('exit code 3');
    expect(result.content).toContain('(output capped at 65536 bytes per stream)');
    expect(result.content).toContain('stderr:\ndone');
    const echo = await tool.execute(tool.input.parse({ command: ['echo', '$HOME', ';', 'rm'] }), ctx);
    expect(typeof echo === 'string' ? echo : echo.content).toContain('stdout:\n$HOME ; rm');
  });

  it('kills a command that runs past its timeout, and one that is stopped', async () => {
    const tool = createRunCommandTool(root);
    const slow = await tool.execute(tool.input.parse({ command: ['sleep', '30'], timeoutSeconds: 1 }), ctx);
    expect(typeof slow === 'string' ? slow : slow.content).toContain('killed: timed out after 1 s');
    const controller = new AbortController();
    const stopped = tool.execute(tool.input.parse({ command: ['sleep', '30'] }), { ...ctx, signal: controller.signal });
    setTimeout(() => controller.abort(), 200);
    const result = await stopped;
    expect(typeof result === 'string' ? result : result.content).toContain('killed: stopped');
  });

  it('refuses a working directory outside the workspace', async () => {
    const tool = createRunCommandTool(root);
    const out = await tool.execute(tool.input.parse({ command: ['ls'], cwd: '../outside' }), ctx);
    expect(out).toMatchObject({ isError: true, content: 'Paths may not contain "..".' });
  });
});
