import { appendFile, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PolicyFileError, PolicyFile, type Outcome } from '../../src/policy/index.ts';
import { people, places, platforms, tools } from './helpers.ts';

const policyWith = (outcome: Outcome | 'sometimes') =>
  `rules:\n  - name: notes\n    tool: write_file\n    outcome: ${outcome}\n`;

/**
 * An edit that restricts `write_file allow` to channels, and its first half: a valid policy of its
 * own that allows the write everywhere. An editor that saves in two chunks leaves the half on disk.
 */
const channelsOnly = 'rules:\n  - name: notes\n    tool: write_file\n    outcome: allow\n';
const channelsOnlyRest = '    where:\n      dm: false\n';

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

describe('PolicyFile', () => {
  let dir: string;
  let file: string;
  let policyFile: PolicyFile | undefined;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'policy-'));
    file = path.join(dir, 'policy.yaml');
  });
  afterEach(async () => {
    policyFile?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const outcome = () =>
    policyFile!
      .current()
      .decide({ tool: tools.write_file, args: { path: 'a.md' }, where: places.dm, requester: people.dev }).outcome;

  it('uses the built-in policy without a file', () => {
    policyFile = new PolicyFile({ platforms });
    expect(policyFile.load().source).toBe('built-in');
  });

  it('refuses to start on an invalid file, listing every problem', async () => {
    await writeFile(file, 'rules:\n  - tool: a\n    outcome: maybe\n    colour: red\n');
    policyFile = new PolicyFile({ platforms, file });
    expect(() => policyFile!.load()).toThrow(PolicyFileError);
    expect(() => policyFile!.load()).toThrow(/policy\.yaml:3:14.*\n.*policy\.yaml:4:5/);
  });

  it('applies an edit without a restart', async () => {
    await writeFile(file, policyWith('deny'));
    policyFile = new PolicyFile({ platforms, file, restatMs: 0 });
    policyFile.load();
    expect(outcome()).toBe('deny');
    await writeFile(file, policyWith('allow'));
    expect(await eventually(outcome, 'allow')).toBe('allow');
  });

  it('notices an edit by watching, without being asked', async () => {
    await writeFile(file, policyWith('deny'));
    policyFile = new PolicyFile({ platforms, file, restatMs: 3_600_000, debounceMs: 10 }).watch();
    policyFile.load();
    const changes: number[] = [];
    policyFile.onChange((change) => changes.push(change.problems.length));
    await writeFile(file, policyWith('allow'));
    expect(await eventually(() => changes.length > 0, true)).toBe(true);
    expect(outcome()).toBe('allow');
  });

  it('keeps the last good policy when an edit is invalid, and reports why', async () => {
    await writeFile(file, policyWith('deny'));
    const warnings: string[] = [];
    const log = { info: () => undefined, warn: (_: unknown, message: string) => void warnings.push(message) };
    policyFile = new PolicyFile({ platforms, file, restatMs: 0, log: log as never });
    policyFile.load();
    await writeFile(file, policyWith('sometimes'));
    expect(await eventually(() => policyFile!.problems().length, 1)).toBe(1);
    expect(policyFile.problems()[0]).toMatchObject({ file, line: 4, column: 14 });
    expect(outcome()).toBe('deny');
    expect(warnings[0]).toMatch(/the last good policy stays in force/);
  });

  it('keeps the last good policy when the file disappears', async () => {
    await writeFile(file, policyWith('deny'));
    policyFile = new PolicyFile({ platforms, file, restatMs: 0 });
    policyFile.load();
    await rm(file);
    expect(await eventually(() => policyFile!.problems()[0]?.message, 'the file does not exist')).toBe(
      'the file does not exist',
    );
    expect(outcome()).toBe('deny');
  });

  it('never puts a half-written file in force when it notices the change on use', async () => {
    await writeFile(file, policyWith('deny'));
    // A debounce far longer than the two writes below take, so the half is never the settled file.
    policyFile = new PolicyFile({ platforms, file, restatMs: 0, debounceMs: 1000 });
    policyFile.load();
    await writeFile(file, channelsOnly);
    const seen = [outcome()];
    await appendFile(file, channelsOnlyRest);
    seen.push(outcome());
    // In a DM the finished rule does not match, so the built-in rule for writes asks.
    const until = Date.now() + 10_000;
    while (seen.at(-1) !== 'ask' && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 25));
      seen.push(outcome());
    }
    expect(seen.at(-1)).toBe('ask');
    expect(seen).not.toContain('allow');
  });

  it('reads an invalid first chunk and its rest as one edit, even when asked in between', async () => {
    await writeFile(file, policyWith('deny'));
    const warnings: string[] = [];
    const log = { info: () => undefined, warn: (_: unknown, message: string) => void warnings.push(message) };
    policyFile = new PolicyFile({ platforms, file, restatMs: 0, debounceMs: 1000, log: log as never }).watch();
    policyFile.load();
    const changes: number[] = [];
    policyFile.onChange((change) => changes.push(change.problems.length));
    const whole = policyWith('allow');
    await writeFile(file, whole.slice(0, whole.length - 4));
    expect(policyFile.problems()).toEqual([]);
    await appendFile(file, whole.slice(whole.length - 4));
    expect(await eventually(() => changes.length > 0, true)).toBe(true);
    expect(changes).toEqual([0]);
    expect(warnings).toEqual([]);
    expect(outcome()).toBe('allow');
  });

  it('keeps the previous policy through a truncate-then-write', async () => {
    await writeFile(file, policyWith('deny'));
    policyFile = new PolicyFile({ platforms, file, restatMs: 0, debounceMs: 1000 }).watch();
    policyFile.load();
    const changes: number[] = [];
    policyFile.onChange((change) => changes.push(change.problems.length));
    await writeFile(file, '');
    expect(policyFile.problems()).toEqual([]);
    await writeFile(file, policyWith('allow'));
    expect(await eventually(outcome, 'allow')).toBe('allow');
    expect(changes).toEqual([0]);
  });

  it('picks up a file renamed into place (an atomic save) by watching', async () => {
    await writeFile(file, policyWith('deny'));
    policyFile = new PolicyFile({ platforms, file, restatMs: 3_600_000, debounceMs: 10 }).watch();
    policyFile.load();
    const saved = path.join(dir, '.policy.yaml.tmp');
    await writeFile(saved, policyWith('allow'));
    await rename(saved, file);
    expect(await eventually(outcome, 'allow')).toBe('allow');
  });
});
