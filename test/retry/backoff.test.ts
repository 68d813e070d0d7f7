import { describe, expect, it } from 'vitest';
import { backoffDelayMs, retryWithBackoff } from '../../src/retry/backoff.ts';

/** A sleep that only records the waits asked for. */
function recordingSleep() {
  const waits: number[] = [];
  return { waits, sleep: async (ms: number) => void waits.push(ms) };
}

/** An attempt that fails `failures` times with numbered errors, then answers 'done'. */
function failing(failures: number) {
  const seen: number[] = [];
  return {
    seen,
    attempt: async (n: number) => {
      seen.push(n);
      if (n <= failures) throw new Error(`failure ${n}`);
      return 'done';
    },
  };
}

describe('retryWithBackoff', () => {
  it('returns the first answer without waiting', async () => {
    const { waits, sleep } = recordingSleep();
    await expect(retryWithBackoff(async () => 'at once', { firstDelayMs: 100, sleep })).resolves.toBe('at once');
    expect(waits).toEqual([]);
  });

  it('doubles the wait after each failure up to the cap, numbering attempts from 1', async () => {
    const { waits, sleep } = recordingSleep();
    const { seen, attempt } = failing(5);
    await expect(retryWithBackoff(attempt, { firstDelayMs: 250, maxDelayMs: 1500, sleep })).resolves.toBe('done');
    expect(waits).toEqual([250, 500, 1000, 1500, 1500]);
    expect(seen).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('throws the last attempt’s own error once maxAttempts have failed', async () => {
    const { waits, sleep } = recordingSleep();
    const { seen, attempt } = failing(10);
    await expect(retryWithBackoff(attempt, { firstDelayMs: 250, maxAttempts: 4, sleep })).rejects.toThrow('failure 4');
    expect(seen).toEqual([1, 2, 3, 4]);
    expect(waits).toEqual([250, 500, 1000]);
  });

  it('sleeps the wait onFailure returns, and gives it the doubled one', async () => {
    const { waits, sleep } = recordingSleep();
    const offered: Array<{ attempt: number; delayMs: number }> = [];
    const { attempt } = failing(2);
    await retryWithBackoff(attempt, {
      firstDelayMs: 100,
      sleep,
      onFailure: (_error, failure) => {
        offered.push(failure);
        return 7;
      },
    });
    expect(offered).toEqual([
      { attempt: 1, delayMs: 100 },
      { attempt: 2, delayMs: 200 },
    ]);
    expect(waits).toEqual([7, 7]);
  });

  it('stops with what onFailure throws', async () => {
    const { waits, sleep } = recordingSleep();
    const { seen, attempt } = failing(10);
    const giveUp = (error: unknown, { attempt: n }: { attempt: number }) => {
      if (n === 2) throw new Error('not worth waiting for', { cause: error });
      return 1;
    };
    await expect(retryWithBackoff(attempt, { firstDelayMs: 1, sleep, onFailure: giveUp })).rejects.toThrow(
      'not worth waiting for',
    );
    expect(seen).toEqual([1, 2]);
    expect(waits).toEqual([1]);
  });

  it('does not start an attempt once the signal has aborted', async () => {
    const stop = new AbortController();
    stop.abort(new Error('stopping'));
    const { seen, attempt } = failing(0);
    await expect(retryWithBackoff(attempt, { firstDelayMs: 1, signal: stop.signal })).rejects.toThrow('stopping');
    expect(seen).toEqual([]);
  });

  it('rethrows the error of an attempt the abort cut off, without asking onFailure', async () => {
    const stop = new AbortController();
    let asked = false;
    const attempt = async () => {
      stop.abort();
      throw new Error('cut off mid-attempt');
    };
    await expect(
      retryWithBackoff(attempt, {
        firstDelayMs: 1,
        signal: stop.signal,
        onFailure: () => {
          asked = true;
          return 1;
        },
      }),
    ).rejects.toThrow('cut off mid-attempt');
    expect(asked).toBe(false);
  });

  it('cuts a long wait short when the signal aborts', async () => {
    const stop = new AbortController();
    const { seen, attempt } = failing(10);
    const running = retryWithBackoff(attempt, {
      firstDelayMs: 3_600_000,
      signal: stop.signal,
      onFailure: (_error, { delayMs }) => {
        queueMicrotask(() => stop.abort(new Error('stopping')));
        return delayMs;
      },
    });
    await expect(running).rejects.toMatchObject({ name: 'AbortError' });
    expect(seen).toEqual([1]);
  });
});

describe('backoffDelayMs', () => {
  it('is the first delay doubled once per earlier failure, never above the cap', () => {
    expect([1, 2, 3, 4].map((n) => backoffDelayMs(n, 1000, 5000))).toEqual([1000, 2000, 4000, 5000]);
    expect(backoffDelayMs(200, 1, 60_000)).toBe(60_000);
  });
});
