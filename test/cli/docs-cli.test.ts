/**
 * The CLI's wrong invocations and empty answers are the same across commands, as its help and the
 * docs describe them: a missing command prints usage on stderr and exits 2, and machine-readable
 * output stays parseable when there is nothing to list.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli-invocation.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { runCli } from '../helpers/processes.ts';

async function cli(args: string[], env: Record<string, string> = {}) {
  const run = runCli(args, { LOG_LEVEL: 'silent', ...env });
  const { code } = await run.exited;
  return { code, out: run.stdout(), err: run.stderr() };
}

describe('a command without its subcommand', () => {
  it.each([
    ['policy', 'Usage: countersign policy <command>'],
    ['skills', 'Usage: countersign skills <command>'],
    ['grants', 'Usage: countersign grants list'],
  ])('countersign %s prints its usage on stderr and exits 2', async (command, usage) => {
    const run = await cli([command]);
    expect(run.code).toBe(2);
    expect(run.out).toBe('');
    expect(run.err.startsWith(usage)).toBe(true);
  });

  it('countersign alone prints its usage on stderr and exits 2; help prints it on stdout and exits 0', async () => {
    const bare = await cli([]);
    expect(bare).toMatchObject({ code: 2, out: '' });
    expect(bare.err).toMatch(/^Usage: countersign <command>/);
    const help = await cli(['help']);
    expect(help).toMatchObject({ code: 0, err: '' });
    expect(help.out).toBe(bare.err);
  });
});

describe('the help texts agree', () => {
  it('policy lint takes an optional FILE and policy check a --policy FILE in both helps', async () => {
    const top = (await cli(['help'])).out;
    const policy = (await cli(['policy', 'help'])).out;
    for (const help of [top, policy]) {
      expect(help).toMatch(/policy lint \[FILE\]|^ {2}lint \[FILE\]/m);
      expect(help).toContain('[--policy FILE]');
    }
  });
});

describe('countersign grants list --json', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('grants_json');
  });
  afterAll(() => db.drop());

  it('prints an empty JSON array when no grant applies', async () => {
    const run = await cli(['grants', 'list', '--json'], { DATABASE_URL: db.url });
    expect(run.code, run.err).toBe(0);
    expect(JSON.parse(run.out)).toEqual([]);
  });
});

describe('the commands the docs name', () => {
  it('are each a command of the CLI, with the usage --help prints', () => {
    const pages = ['README.md', ...readdirSync('docs').map((f) => path.join('docs', f))].filter((f) =>
      f.endsWith('.md'),
    );
    const named = new Set<string>();
    for (const page of pages)
      for (const m of readFileSync(page, 'utf8').matchAll(/(?:npx |`)countersign ([a-z][a-z-]*)/g)) named.add(m[1]!);
    expect(named.size).toBeGreaterThan(5);
    expect([...named].filter((command) => !Object.hasOwn(COMMANDS, command))).toEqual([]);
  });
});
