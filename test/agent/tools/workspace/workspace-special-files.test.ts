import { execFileSync } from 'node:child_process';
import { lstatSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnyTool, ToolOutput } from '../../../../src/agent/tools/tool.ts';
import { createWorkspaceTools } from '../../../../src/agent/tools/workspace/tools.ts';
import { testToolContext } from '../../../helpers/tools.ts';

/**
 * Named pipes and sockets in the workspace: opening a FIFO for reading waits for a writer forever
 * and holds one of libuv's four pool threads, so before these checks every test below hung.
 */
const ctx = testToolContext();
let root: string;
let server: net.Server;
let tools: Map<string, AnyTool>;

async function run(name: string, args: Record<string, unknown>): Promise<Required<ToolOutput>> {
  const tool = tools.get(name)!;
  const out = await tool.execute(tool.input.parse(args), ctx);
  return typeof out === 'string' ? { content: out, isError: false } : { isError: false, ...out };
}
const card = (name: string, args: Record<string, unknown>) => tools.get(name)!.describeForApproval!(args, ctx);

beforeAll(async () => {
  root = realpathSync(mkdtempSync(path.join(tmpdir(), 'cs-special-')));
  writeFileSync(path.join(root, 'notes.md'), 'hello from a regular file\n');
  execFileSync('mkfifo', [path.join(root, 'pipe')]);
  server = net.createServer();
  await new Promise<void>((resolve) => server.listen(path.join(root, 'sock'), resolve));
  tools = new Map(createWorkspaceTools(root).map((t) => [t.name, t]));
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(root, { recursive: true, force: true });
});

const kinds: Array<[name: string, file: string, kind: string]> = [
  ['a named pipe', 'pipe', 'a named pipe (FIFO)'],
  ['a unix socket', 'sock', 'a socket'],
];

describe.each(kinds)('workspace tools facing %s', (_name, file, kind) => {
  const notRegular = `That is ${kind}, not a regular file; workspace tools only read and change regular files and folders.`;

  it('read_file refuses it', async () => {
    expect(await run('read_file', { path: file })).toEqual({ content: notRegular, isError: true });
  });

  it('edit_file refuses it, and its approval card says why', async () => {
    const args = { path: file, old_text: 'a', new_text: 'b' };
    expect(await run('edit_file', args)).toEqual({ content: notRegular, isError: true });
    expect(await card('edit_file', args)).toBe(notRegular);
  });

  it('write_file refuses to replace it, and its approval card says why', async () => {
    const args = { path: file, content: 'x' };
    expect(await run('write_file', args)).toEqual({ content: notRegular, isError: true });
    expect(await card('write_file', args)).toBe(notRegular);
    expect(lstatSync(path.join(root, file)).isFile()).toBe(false);
  });

  it('delete_file refuses it, and its approval card says why', async () => {
    expect(await run('delete_file', { path: file })).toEqual({ content: notRegular, isError: true });
    expect(await card('delete_file', { path: file })).toBe(notRegular);
    expect(lstatSync(path.join(root, file)).isFile()).toBe(false);
  });

  it('list_files and search_files refuse it as a folder', async () => {
    const notFolder = `That is ${kind}, not a folder; workspace tools only read and change regular files and folders.`;
    expect(await run('list_files', { path: file })).toEqual({ content: notFolder, isError: true });
    expect(await run('search_files', { query: 'x', path: file })).toEqual({ content: notFolder, isError: true });
  });
});

describe('searching a folder that holds a pipe and a socket', () => {
  it('searches the regular files and says what it skipped', async () => {
    expect(await run('search_files', { query: 'hello' })).toEqual({
      content:
        'notes.md:1: hello from a regular file\n[skipped 2 entries that are not regular files (pipes, sockets, devices)]',
      isError: false,
    });
  });
});

describe('approval card previews', () => {
  it('give up with a note once the card’s signal has aborted', async () => {
    const aborted = testToolContext({ signal: AbortSignal.abort() });
    const note = 'The preview could not be prepared in time; check the file before approving.';
    for (const [name, args] of [
      ['write_file', { path: 'notes.md', content: 'new' }],
      ['edit_file', { path: 'notes.md', old_text: 'hello', new_text: 'bye' }],
      ['delete_file', { path: 'notes.md' }],
    ] as const) {
      expect(await tools.get(name)!.describeForApproval!(args, aborted)).toBe(note);
    }
  });
});
