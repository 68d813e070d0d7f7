/**
 * No test sleeps a literal time over 100 ms (issue 49): such a sleep is paid on every run, and on a
 * loaded machine it is still too short. A test waits on the condition it needs instead (`waitFor`
 * from helpers/harness.ts, `vi.waitFor`, an event). The fakes in test/fakes/ may: their delays are
 * the behaviour of the platform they stand for (Retry-After, a slow model).
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { longSleeps, longSleepsIn } from './long-sleeps.ts';

const REPO = path.resolve(import.meta.dirname, '../..');
const LIMIT_MS = 100;

describe('sleeps in the tests', () => {
  it('has no literal sleep over 100 ms outside test/fakes/', () => {
    expect(longSleeps(REPO, 'test', ['test/fakes'], LIMIT_MS)).toEqual([]);
  });

  it('finds the shapes a sleep takes, and leaves deadlines and short polls alone', () => {
    const found = (code: string) => longSleepsIn(code, 'x.ts', LIMIT_MS).map((s) => s.ms);
    expect(found('await new Promise((r) => setTimeout(r, 1_500));')).toEqual([1500]);
    expect(found('await new Promise((resolve) => { setTimeout(resolve, 300); });')).toEqual([300]);
    expect(found("new Promise((r) => setTimeout(() => r('waiting'), 300));")).toEqual([300]);
    expect(found("import { setTimeout as sleep } from 'node:timers/promises';\nawait sleep(250);")).toEqual([250]);
    expect(found("import { setTimeout } from 'node:timers/promises';\nawait setTimeout(2 * 1000);")).toEqual([1000]);
    expect(found('const sleep = (ms) => new Promise((r) => setTimeout(r, ms));\nawait sleep(300);')).toEqual([300]);
    expect(found('await delay(options.ms ?? 1500);')).toEqual([1500]);
    // A deadline whose handle is kept costs nothing when the test passes.
    expect(found('const timer = setTimeout(() => child.kill(), 10_000);')).toEqual([]);
    expect(found('await new Promise((r) => setTimeout(r, 100));')).toEqual([]);
    // A number inside the callback is not the delay.
    expect(found('setTimeout(() => emit(5000), 20);')).toEqual([]);
  });
});
