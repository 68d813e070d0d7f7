import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  statSync,
  chmodSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { needsApproval, riskOf, type AnyTool, type ToolOutput } from '../../../../src/agent/tools/tool.ts';
import { WORKSPACE_LIMITS } from '../../../../src/agent/tools/workspace/confine.ts';
import { createWorkspaceTools } from '../../../../src/agent/tools/workspace/tools.ts';
import { testToolContext } from '../../../helpers/tools.ts';

const ctx = testToolContext();
let root: string;
let tools: Map<string, AnyTool>;

async function run(name: string, args: Record<string, unknown>): Promise<Required<ToolOutput>> {
  const tool = tools.get(name)!;
  const parsed = tool.input.safeParse(args);
  if (!parsed.success) return { content: `invalid arguments: ${parsed.error.message}`, isError: true };
  const out = await tool.execute(parsed.data, ctx);
  return typeof out === 'string' ? { content: out, isError: false } : { isError: false, ...out };
}
/** The approval card's detail for raw arguments, as the approval service passes them. */
const card = (name: string, args: Record<string, unknown>) => tools.get(name)!.describeForApproval!(args, ctx);
const file = (p: string) => readFileSync(path.join(root, p), 'utf8');

beforeEach(() => {
  root = realpathSync(mkdtempSync(path.join(tmpdir(), 'cs-ws-')));
  writeFileSync(path.join(root, 'notes.md'), 'line one\nline two\nline three\n');
  tools = new Map(createWorkspaceTools(root).map((t) => [t.name, t]));
});

describe('workspace tools: approval', () => {
  it('lists, reads and searches at once; writes and edits ask at medium risk; deletes ask at high risk', () => {
    const policy = Object.fromEntries(
      [...tools.values()].map((t) => [t.name, [needsApproval(t, {}) ? 'asks' : 'runs', riskOf(t, {}), t.idempotent]]),
    );
    expect(policy).toEqual({
      list_files: ['runs', 'low', true],
      read_file: ['runs', 'low', true],
      search_files: ['runs', 'low', true],
      write_file: ['asks', 'medium', false],
      edit_file: ['asks', 'medium', false],
      delete_file: ['asks', 'high', false],
    });
  });
});

describe('list_files', () => {
  it('lists one folder, marking folders', async () => {
    mkdirSync(path.join(root, 'runbooks/db'), { recursive: true });
    writeFileSync(path.join(root, 'runbooks/db/restore.md'), 'x');
    expect((await run('list_files', {})).content).toBe('notes.md\nrunbooks/');
    expect((await run('list_files', { path: 'runbooks', recursive: true })).content).toBe(
      'runbooks/db/\nrunbooks/db/restore.md',
    );
  });

  it('stops a recursive listing at its cap and says so', async () => {
    for (let i = 0; i < 30; i++) {
      mkdirSync(path.join(root, `d${i}`));
      for (let j = 0; j < 20; j++) writeFileSync(path.join(root, `d${i}`, `f${j}.txt`), '');
    }
    const lines = (await run('list_files', { recursive: true })).content.split('\n');
    expect(lines).toHaveLength(WORKSPACE_LIMITS.listEntries + 1);
    expect(lines.at(-1)).toBe(`[stopped after ${WORKSPACE_LIMITS.listEntries} entries; list a sub-folder to see more]`);
  });
});

describe('read_file', () => {
  it('reads a whole file, or a range of lines', async () => {
    expect(await run('read_file', { path: 'notes.md' })).toEqual({
      content: 'line one\nline two\nline three\n',
      isError: false,
    });
    expect((await run('read_file', { path: 'notes.md', fromLine: 2, toLine: 3 })).content).toBe('line two\nline three');
    expect((await run('read_file', { path: 'notes.md', fromLine: 3 })).content).toBe('line three');
  });

  it('says where a file ends when the range starts past it', async () => {
    expect(await run('read_file', { path: 'notes.md', fromLine: 9 })).toEqual({
      content: 'The file has 3 lines; fromLine 9 is past its end.',
      isError: true,
    });
  });

  it('refuses a binary file (NUL bytes or invalid UTF-8) with a clear message', async () => {
    writeFileSync(path.join(root, 'image.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2]));
    writeFileSync(path.join(root, 'latin1.txt'), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]));
    for (const p of ['image.png', 'latin1.txt']) {
      expect(await run('read_file', { path: p })).toEqual({
        content: 'That file is binary; only text files can be read or edited.',
        isError: true,
      });
    }
  });

  it('refuses a file over 1 MiB', async () => {
    writeFileSync(path.join(root, 'big.log'), 'x'.repeat(WORKSPACE_LIMITS.readBytes + 1));
    const result = await run('read_file', { path: 'big.log' });
    expect(result.isError).toBe(true);
    expect(result.content).toMatch(/^The file is 1048577 bytes; files over 1048576 bytes are not read/);
  });

  it('says a missing file is missing, without naming where the workspace is', async () => {
    const result = await run('read_file', { path: 'nope.md' });
    expect(result).toEqual({
      content: 'No such file or directory in the workspace. Use list_files to see what is there.',
      isError: true,
    });
  });
});

describe('search_files', () => {
  it('finds a substring case-insensitively across text files, shallow folders first, skipping binaries', async () => {
    mkdirSync(path.join(root, 'docs'));
    writeFileSync(path.join(root, 'docs/a.md'), 'Line TWO of a\n');
    writeFileSync(path.join(root, 'blob.bin'), Buffer.from('line two\0'));
    expect((await run('search_files', { query: 'line two' })).content).toBe(
      'notes.md:2: line two\ndocs/a.md:1: Line TWO of a',
    );
  });

  it('treats the query literally unless regex is set', async () => {
    expect((await run('search_files', { query: 'line t.o' })).content).toBe('No matches.');
    expect((await run('search_files', { query: 'line t.o$', regex: true })).content).toBe('notes.md:2: line two');
    expect(await run('search_files', { query: '(', regex: true })).toMatchObject({
      isError: true,
      content: expect.stringMatching(/^That is not a valid regular expression/),
    });
  });

  it('runs a catastrophically backtracking pattern in linear time and finds the right lines', async () => {
    // On V8's backtracking engine this pattern takes 2^n steps on a near-miss line: 27 characters
    // blocked the event loop for 4 s, and this test would never return.
    writeFileSync(path.join(root, 'aaa.txt'), `${'a'.repeat(9_000)}!\n${'a'.repeat(9_000)}\nbaaa\n`);
    const result = await run('search_files', { query: '^(a+)+$', regex: true, path: '.' });
    expect(result.isError).toBe(false);
    expect(result.content.split('\n').map((l) => l.slice(0, 12))).toEqual(['aaa.txt:2: a']);
  });

  it('accepts JavaScript syntax RE2 shares: classes, named groups, \\u escapes, case-insensitivity', async () => {
    writeFileSync(path.join(root, 'cafe.txt'), 'Café 42\n');
    expect((await run('search_files', { query: String.raw`(?<word>caf\u00e9)\s\d+$`, regex: true })).content).toBe(
      'cafe.txt:1: Café 42',
    );
  });

  it.each([
    ['a backreference', String.raw`(a)\1`, String.raw`the backreference \1`],
    ['a named backreference', String.raw`(?<x>a)\k<x>`, String.raw`a named backreference \k<…>`],
    ['a lookahead', '(?=line)l', 'the lookaround (?=…)'],
    ['a negative lookbehind', '(?<!x)line', 'the lookaround (?<!…)'],
  ])('refuses %s with an error the model can act on', async (_what, query, construct) => {
    const result = await run('search_files', { query, regex: true });
    expect(result.isError).toBe(true);
    expect(result.content).toContain(
      `That regular expression uses ${construct}. search_files runs regular expressions on a linear-time engine (RE2 syntax)`,
    );
  });

  it('matches brackets and backslashes in a character class literally, not as lookaround', async () => {
    writeFileSync(path.join(root, 'odd.txt'), 'x(?=y\n');
    expect((await run('search_files', { query: String.raw`[(?=]{3}y`, regex: true })).content).toBe('odd.txt:1: x(?=y');
  });

  it('caps the number of matches and says so', async () => {
    writeFileSync(path.join(root, 'many.txt'), 'hit\n'.repeat(WORKSPACE_LIMITS.searchMatches * 2));
    const lines = (await run('search_files', { query: 'hit' })).content.split('\n');
    expect(lines).toHaveLength(WORKSPACE_LIMITS.searchMatches + 1);
    expect(lines.at(-1)).toBe(`[stopped at ${WORKSPACE_LIMITS.searchMatches} matches; narrow the query or the folder]`);
  });
});

describe('write_file', () => {
  it('creates missing folders and writes the file', async () => {
    expect(await run('write_file', { path: 'runbooks/db/restore.md', content: 'step 1\n' })).toEqual({
      content: 'Wrote 7 bytes to runbooks/db/restore.md.',
      isError: false,
    });
    expect(file('runbooks/db/restore.md')).toBe('step 1\n');
  });

  it('replaces a file atomically, keeping its permissions and leaving no temporary file', async () => {
    chmodSync(path.join(root, 'notes.md'), 0o600);
    await run('write_file', { path: 'notes.md', content: 'new\n' });
    expect(file('notes.md')).toBe('new\n');
    expect(statSync(path.join(root, 'notes.md')).mode & 0o777).toBe(0o600);
    expect(readdirSync(root)).toEqual(['notes.md']);
  });

  it('refuses content over 1 MiB (counted in bytes, not characters)', async () => {
    const content = 'é'.repeat(WORKSPACE_LIMITS.writeBytes / 2 + 1);
    expect(await run('write_file', { path: 'big.txt', content })).toEqual({
      content: `The content is ${WORKSPACE_LIMITS.writeBytes + 2} bytes; files over ${WORKSPACE_LIMITS.writeBytes} bytes are not written.`,
      isError: true,
    });
    expect(existsSync(path.join(root, 'big.txt'))).toBe(false);
  });

  it('refuses to replace a folder, leaving no temporary file behind', async () => {
    mkdirSync(path.join(root, 'docs'));
    expect(await run('write_file', { path: 'docs', content: 'x' })).toEqual({
      content: 'That is a directory, not a file.',
      isError: true,
    });
    expect(readdirSync(root).sort()).toEqual(['docs', 'notes.md']);
  });

  it('shows a new file on the approval card as a diff against nothing', async () => {
    expect(await card('write_file', { path: 'new/plan.md', content: 'a\nb\n' })).toBe(
      ['--- /dev/null', '+++ b/new/plan.md', '@@ -0,0 +1,2 @@', '+a', '+b'].join('\n'),
    );
    expect(existsSync(path.join(root, 'new'))).toBe(false);
  });

  it('shows an overwrite on the approval card as a unified diff', async () => {
    expect(await card('write_file', { path: 'notes.md', content: 'line one\nline 2\nline three\n' })).toBe(
      ['--- a/notes.md', '+++ b/notes.md', '@@ -1,3 +1,3 @@', ' line one', '-line two', '+line 2', ' line three'].join(
        '\n',
      ),
    );
  });
});

describe('edit_file', () => {
  it('replaces text that occurs exactly once', async () => {
    expect(await run('edit_file', { path: 'notes.md', old_text: 'line two', new_text: 'line 2' })).toEqual({
      content: 'Edited notes.md (1 replacement).',
      isError: false,
    });
    expect(file('notes.md')).toBe('line one\nline 2\nline three\n');
  });

  it('refuses ambiguous text unless replace_all is set', async () => {
    expect(await run('edit_file', { path: 'notes.md', old_text: 'line', new_text: 'row' })).toEqual({
      content:
        'old_text occurs 3 times in the file. Include more surrounding lines to pick one, or set replace_all to change every occurrence.',
      isError: true,
    });
    expect(file('notes.md')).toBe('line one\nline two\nline three\n');
    expect(
      (await run('edit_file', { path: 'notes.md', old_text: 'line', new_text: 'row', replace_all: true })).content,
    ).toBe('Edited notes.md (3 replacements).');
    expect(file('notes.md')).toBe('row one\nrow two\nrow three\n');
  });

  it('says when the text is not there', async () => {
    expect(await run('edit_file', { path: 'notes.md', old_text: 'line four', new_text: 'x' })).toEqual({
      content:
        'old_text was not found in the file. Read the file again and copy the text exactly, including spaces and line breaks.',
      isError: true,
    });
  });

  it('keeps "$" sequences in the new text literally', async () => {
    await run('edit_file', { path: 'notes.md', old_text: 'line two', new_text: "cost $& and $' and $1" });
    expect(file('notes.md')).toBe("line one\ncost $& and $' and $1\nline three\n");
  });

  it('shows the edit on the approval card as an exact unified diff, from the raw arguments', async () => {
    writeFileSync(
      path.join(root, 'deploy.yaml'),
      [
        'name: api',
        'replicas: 2',
        'image: api:1.4.0',
        'port: 8080',
        'env: prod',
        'region: eu',
        'tier: web',
        'owner: ops',
        '',
      ].join('\n'),
    );
    expect(
      await card('edit_file', {
        path: 'deploy.yaml',
        old_text: 'image: api:1.4.0',
        new_text: 'image: api:1.5.0\npullPolicy: Always',
      }),
    ).toBe(
      [
        '--- a/deploy.yaml',
        '+++ b/deploy.yaml',
        '@@ -1,6 +1,7 @@',
        ' name: api',
        ' replicas: 2',
        '-image: api:1.4.0',
        '+image: api:1.5.0',
        '+pullPolicy: Always',
        ' port: 8080',
        ' env: prod',
        ' region: eu',
      ].join('\n'),
    );
  });

  it('puts the reason on the approval card when the edit cannot apply', async () => {
    expect(await card('edit_file', { path: 'notes.md', old_text: 'line', new_text: 'x' })).toMatch(
      /^old_text occurs 3 times/,
    );
  });
});

describe('delete_file', () => {
  it('deletes a file', async () => {
    expect(await run('delete_file', { path: 'notes.md' })).toEqual({ content: 'Deleted notes.md.', isError: false });
    expect(existsSync(path.join(root, 'notes.md'))).toBe(false);
  });

  it('refuses to delete a folder', async () => {
    mkdirSync(path.join(root, 'docs'));
    expect(await run('delete_file', { path: 'docs' })).toEqual({
      content: 'That is a folder; only files can be deleted.',
      isError: true,
    });
    expect(existsSync(path.join(root, 'docs'))).toBe(true);
  });

  it('shows the size and first lines of the file on the approval card', async () => {
    writeFileSync(path.join(root, 'log.txt'), Array.from({ length: 12 }, (_, i) => `entry ${i + 1}`).join('\n') + '\n');
    expect(await card('delete_file', { path: 'log.txt' })).toBe(
      [
        'Deletes log.txt (99 bytes, 12 lines). It begins:',
        ...Array.from({ length: 10 }, (_, i) => `entry ${i + 1}`),
        '… (2 more lines)',
      ].join('\n'),
    );
  });
});
