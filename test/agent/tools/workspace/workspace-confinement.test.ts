import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createRunCommandTool } from '../../../../src/agent/tools/run-command.ts';
import type { AnyTool, ToolOutput } from '../../../../src/agent/tools/tool.ts';
import { resolveInWorkspace, WorkspacePathError } from '../../../../src/agent/tools/workspace/confine.ts';
import { createWorkspaceTools } from '../../../../src/agent/tools/workspace/tools.ts';
import { testToolContext } from '../../../helpers/tools.ts';
import { unconfinedSandbox } from '../../../helpers/sandbox.ts';

const ctx = testToolContext();
const CANARY = 'secret outside the workspace';

let base: string;
let root: string;
let outside: string;
let tools: Map<string, AnyTool>;

/** Every file under `dir` with its content, to prove nothing outside the workspace changed. */
function snapshot(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const full = path.join(entry.parentPath, entry.name);
    files[path.relative(dir, full)] = entry.isFile()
      ? readFileSync(full, 'utf8')
      : `<${entry.isDirectory() ? 'dir' : 'other'}>`;
  }
  return files;
}

/** Like the agent loop: arguments that fail the tool's schema never reach it. */
async function run(name: string, args: Record<string, unknown>): Promise<Required<ToolOutput>> {
  const tool = tools.get(name)!;
  const parsed = tool.input.safeParse(args);
  if (!parsed.success) return { content: `invalid arguments: ${parsed.error.message}`, isError: true };
  const out = await tool.execute(parsed.data, ctx);
  return typeof out === 'string' ? { content: out, isError: false } : { isError: false, ...out };
}

beforeAll(() => {
  base = realpathSync(mkdtempSync(path.join(tmpdir(), 'cs-confine-')));
  root = path.join(base, 'workspace');
  outside = path.join(base, 'outside');
  mkdirSync(root);
  mkdirSync(outside);
  writeFileSync(path.join(outside, 'canary.txt'), CANARY);
  writeFileSync(path.join(root, 'notes.md'), 'inside\n');
  mkdirSync(path.join(root, 'docs'));
  symlinkSync(path.join(outside, 'canary.txt'), path.join(root, 'link-out.txt'));
  symlinkSync(outside, path.join(root, 'dir-out'));
  symlinkSync(path.join(outside, 'not-yet.txt'), path.join(root, 'dangling-out.txt'));
  symlinkSync(path.join(root, 'notes.md'), path.join(root, 'docs', 'link-in.md'));
  tools = new Map(createWorkspaceTools(root).map((t) => [t.name, t]));
});

const corpus: Array<[label: string, userPath: string]> = [
  ['a parent reference', '../outside/canary.txt'],
  ['a parent reference after a folder', 'foo/../../outside/canary.txt'],
  ['a parent reference back into the workspace', 'docs/../notes.md/../../outside/canary.txt'],
  ['percent-encoded slashes', '..%2foutside%2fcanary.txt'],
  ['percent-encoded dots', '%2e%2e/outside/canary.txt'],
  ['double percent-encoding', '%252e%252e/outside/canary.txt'],
  ['backslashes', '..\\outside\\canary.txt'],
  ['an absolute path', '/etc/passwd'],
  ['an absolute path to the canary', '/OUTSIDE/canary.txt'],
  ['a Windows drive', 'C:\\Windows\\win.ini'],
  ['a UNC path', '\\\\server\\share\\x'],
  ['a home-relative path', '~/.ssh/id_rsa'],
  ['a NUL byte', 'notes.md\0/../../outside/canary.txt'],
  ['a symlink to a file outside', 'link-out.txt'],
  ['a file under a symlinked folder outside', 'dir-out/canary.txt'],
  ['a new file under a symlinked folder outside', 'dir-out/new-file.txt'],
  ['a new folder under a symlinked folder outside', 'dir-out/sub/new-file.txt'],
  ['a dangling symlink pointing outside', 'dangling-out.txt'],
  ['a path over 1024 characters', `${'a/'.repeat(600)}x`],
  ['a segment over 255 characters', `${'x'.repeat(300)}.txt`],
];
const resolved = (p: string) => p.replace('/OUTSIDE', () => outside);

describe('workspace confinement', () => {
  it('accepts plain relative paths, including new files in new folders and links that stay inside', async () => {
    await expect(resolveInWorkspace(root, 'docs/./new/file.txt')).resolves.toBe(path.join(root, 'docs/new/file.txt'));
    await expect(resolveInWorkspace(root, 'docs/link-in.md')).resolves.toBe(path.join(root, 'docs/link-in.md'));
    expect(await run('read_file', { path: 'docs/link-in.md' })).toEqual({ content: 'inside\n', isError: false });
  });

  it.each(corpus)('refuses %s in resolveInWorkspace', async (_, userPath) => {
    await expect(resolveInWorkspace(root, resolved(userPath))).rejects.toBeInstanceOf(WorkspacePathError);
  });

  it.each([
    ['foo/../../outside/canary.txt', 'Paths may not contain "..".'],
    ['..%2foutside', 'Percent-encoded path characters are not accepted; use plain relative paths.'],
    ['/etc/passwd', 'Use a path relative to the workspace, not an absolute one.'],
    ['C:\\Windows', 'Use a path relative to the workspace, not an absolute one.'],
    ['a\0b', 'Paths may not contain NUL bytes.'],
    ['dir-out/new-file.txt', 'That path leads outside the workspace (through a symbolic link) and is refused.'],
    ['dangling-out.txt', 'That path is a broken symbolic link and is refused.'],
    [`${'x'.repeat(300)}`, 'Each path segment is limited to 255 characters.'],
  ])('says why %j is refused', async (userPath, message) => {
    await expect(resolveInWorkspace(root, userPath)).rejects.toThrow(message);
  });

  describe.each(corpus)('with %s', (_, userPath) => {
    const operations: Array<[string, () => Record<string, unknown>]> = [
      ['read_file', () => ({ path: resolved(userPath) })],
      ['list_files', () => ({ path: resolved(userPath) })],
      ['search_files', () => ({ path: resolved(userPath), query: 'secret' })],
      ['write_file', () => ({ path: resolved(userPath), content: 'pwned' })],
      ['edit_file', () => ({ path: resolved(userPath), old_text: 'secret', new_text: 'pwned' })],
      ['delete_file', () => ({ path: resolved(userPath) })],
    ];
    it.each(operations)('%s is refused, reveals nothing outside and changes nothing there', async (tool, args) => {
      const before = snapshot(outside);
      const result = await run(tool, args());
      expect(result.isError).toBe(true);
      expect(result.content).not.toContain(CANARY);
      expect(result.content).not.toContain(outside);
      expect(result.content).not.toContain(base);
      expect(snapshot(outside)).toEqual(before);
    });

    it('describes no outside file on an approval card', async () => {
      for (const name of ['write_file', 'edit_file', 'delete_file']) {
        const tool = tools.get(name)!;
        const detail = await tool.describeForApproval!(
          { path: resolved(userPath), content: 'x', old_text: 'secret', new_text: 'x' },
          ctx,
        );
        expect(detail).not.toContain(CANARY);
        expect(detail).not.toContain(base);
      }
    });

    it('is refused as the working directory of run_command', async () => {
      const tool = createRunCommandTool(root, unconfinedSandbox());
      const args = tool.input.safeParse({ command: ['cat', 'canary.txt'], cwd: resolved(userPath) });
      if (!args.success) {
        // Refused by the schema before it could run: only the over-long path gets here.
        expect(resolved(userPath).length).toBeGreaterThan(1024);
        return;
      }
      const out = await tool.execute(args.data, ctx);
      expect(out).toMatchObject({ isError: true });
      expect(JSON.stringify(out)).not.toContain(CANARY);
    });
  });

  it('leaves the canary untouched and creates nothing next to it after the whole corpus', () => {
    expect(readFileSync(path.join(outside, 'canary.txt'), 'utf8')).toBe(CANARY);
    expect(readdirSync(outside)).toEqual(['canary.txt']);
    expect(existsSync(path.join(base, 'x'))).toBe(false);
  });

  it('does not list or search through a symlinked folder that points outside', async () => {
    const listing = await run('list_files', { path: '.', recursive: true });
    expect(listing.content.split('\n')).toContain('dir-out@');
    expect(listing.content).not.toContain('canary');
    expect((await run('search_files', { query: 'secret' })).content).toBe('No matches.');
  });
});
