import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PolicyFileError, PolicyStore, type Outcome } from '../../src/policy/index.ts';
import { people, places, tools } from './helpers.ts';

const policyWith = (outcome: Outcome | 'sometimes') =>
  `rules:\n  - name: notes\n    tool: write_file\n    outcome: ${outcome}\n`;

/** Polls `read` until it returns `want`, for at most five seconds. */
async function eventually<T>(read: () => T, want: T): Promise<T> {
  const until = Date.now() + 5000;
  let got = read();
  while (got !== want && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 25));
    got = read();
  }
  return got;
}

describe('PolicyStore', () => {
  let dir: string;
  let file: string;
  let store: PolicyStore | undefined;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'policy-'));
    file = path.join(dir, 'policy.yaml');
  });
  afterEach(async () => {
    store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const outcome = () =>
    store!.current().decide({ tool: tools.write_file, args: { path: 'a.md' }, where: places.dm, requester: people.dev })
      .outcome;

  it('uses the built-in policy without a file', () => {
    store = new PolicyStore();
    expect(store.load().source).toBe('built-in');
  });

  it('refuses to start on an invalid file, listing every problem', async () => {
    await writeFile(file, 'rules:\n  - tool: a\n    outcome: maybe\n    colour: red\n');
    store = new PolicyStore({ file });
    expect(() => store!.load()).toThrow(PolicyFileError);
    expect(() => store!.load()).toThrow(/policy\.yaml:3:14.*\n.*policy\.yaml:4:5/);
  });

  it('applies an edit without a restart', async () => {
    await writeFile(file, policyWith('deny'));
    store = new PolicyStore({ file, restatMs: 0 });
    store.load();
    expect(outcome()).toBe('deny');
    await writeFile(file, policyWith('allow'));
    expect(await eventually(outcome, 'allow')).toBe('allow');
  });

  it('notices an edit by watching, without being asked', async () => {
    await writeFile(file, policyWith('deny'));
    store = new PolicyStore({ file, restatMs: 3_600_000, debounceMs: 10 }).watch();
    store.load();
    const changes: number[] = [];
    store.onChange((change) => changes.push(change.problems.length));
    await writeFile(file, policyWith('allow'));
    expect(await eventually(() => changes.length > 0, true)).toBe(true);
    expect(outcome()).toBe('allow');
  });

  it('keeps the last good policy when an edit is invalid, and reports why', async () => {
    await writeFile(file, policyWith('deny'));
    const warnings: string[] = [];
    const log = { info: () => undefined, warn: (_: unknown, message: string) => void warnings.push(message) };
    store = new PolicyStore({ file, restatMs: 0, log: log as never });
    store.load();
    await writeFile(file, policyWith('sometimes'));
    expect(await eventually(() => store!.problems().length, 1)).toBe(1);
    expect(store.problems()[0]).toMatchObject({ file, line: 4, column: 14 });
    expect(outcome()).toBe('deny');
    expect(warnings[0]).toMatch(/the last good policy stays in force/);
  });

  it('keeps the last good policy when the file disappears', async () => {
    await writeFile(file, policyWith('deny'));
    store = new PolicyStore({ file, restatMs: 0 });
    store.load();
    await rm(file);
    expect(await eventually(() => store!.problems()[0]?.message, 'the file does not exist')).toBe(
      'the file does not exist',
    );
    expect(outcome()).toBe('deny');
  });
});
