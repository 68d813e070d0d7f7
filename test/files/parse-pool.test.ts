import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { PARSERS, ParsePool, parsePool } from '../../src/files/parse-pool.ts';
import { inflatingPdf, markerPdf, textPdf } from './samples.ts';

/** A pool running test/fixtures/parsers/hostile-parser.ts, with a limit short enough to wait out. */
const hostile = new ParsePool({
  worker: new URL('../fixtures/parsers/hostile-parser.ts', import.meta.url),
  threads: 1,
  timeoutMs: 300,
  heapMb: 32,
});
/** The same with time enough that only the heap limit can end a greedy parse, however busy the machine. */
const patient = new ParsePool({
  worker: new URL('../fixtures/parsers/hostile-parser.ts', import.meta.url),
  threads: 1,
  timeoutMs: 30_000,
  heapMb: 32,
});
afterAll(() => Promise.all([hostile.close(), patient.close()]));

const ONE_KB = new Uint8Array(1024);
const measured = () => patient.run('measure', ONE_KB, z.number());

describe('the threads that parse received bytes', () => {
  it('end a parse that never yields at the time limit, say so, and read the next file on a fresh thread', async () => {
    expect(await hostile.run('spin', ONE_KB, z.number())).toEqual({
      ok: false,
      why: 'could not be read within 0.3 s',
    });
    expect(await measured()).toEqual({ ok: true, value: 1024 });
  });

  it('end a parse that outgrows its heap, say so, and read the next file on a fresh thread', async () => {
    expect(await patient.run('hoard', ONE_KB, z.number())).toEqual({
      ok: false,
      why: 'could not be read in the 32 MB of memory a file may take',
    });
    expect(await patient.run('measure', ONE_KB, z.number())).toEqual({ ok: true, value: 1024 });
  });

  it('end pdf.js filling buffers outside its heap at the memory budget, and read the next PDF', async () => {
    // Time enough that only the memory budget can end it, however busy the machine.
    const guarded = new ParsePool({ threads: 1, memoryMb: 128, timeoutMs: 110_000 });
    try {
      // 1 MB on the wire, a gigabyte decoded: without the guard it ran to the time limit, at 2.3 GB.
      expect(await guarded.text(inflatingPdf(1024))).toEqual({
        ok: false,
        why: 'could not be read in the 128 MB of memory files may take',
      });
      expect(await guarded.text(textPdf(['still reading']))).toEqual({ ok: true, value: 'still reading' });
    } finally {
      await guarded.close();
    }
  }, 120_000);

  it('report a parser’s error as the reason, and keep the thread', async () => {
    expect(await patient.run('fail', ONE_KB, z.number())).toEqual({
      ok: false,
      why: 'could not be read (its reader failed: bad xref table)',
    });
    expect(await measured()).toEqual({ ok: true, value: 1024 });
  });

  it('refuse an answer of the wrong shape rather than pass it on', async () => {
    expect(await patient.run('measure', ONE_KB, z.string())).toEqual({
      ok: false,
      why: 'could not be read (its reader gave an answer of the wrong shape)',
    });
  });

  it('give each parse its own copy of exactly the bytes it was given, not the buffer they are part of', async () => {
    const whole = Buffer.alloc(4096, 1);
    expect(await patient.run('measure', whole.subarray(100, 200), z.number())).toEqual({ ok: true, value: 100 });
    // Handed over, the copy left this thread; the caller's bytes did not.
    expect(whole.length).toBe(4096);
  });

  it('load the app’s own TypeScript worker and count the issue’s 20 MB PDF of 2,001 stream markers', async () => {
    const counted = await parsePool().pages(markerPdf(20 * 1024 * 1024));
    expect(counted).toMatchObject({ ok: true, value: { pages: 0, complete: true, inflatedBytes: 0 } });
    expect(PARSERS.timeoutMs).toBe(20_000);
  });
});
