import { Piscina } from 'piscina';
import { z } from 'zod';
import { MemoryGuard } from './memory-guard.ts';

/**
 * The threads that read received bytes (parse-worker.ts): a stranger's file can make a parser slow
 * or greedy, and on the event loop that would stall every turn and the worker's heartbeat. In a
 * thread, a parse over its time or memory is ended by terminating the thread (a blocked thread
 * cannot be interrupted any other way: piscina terminates it when the task's signal aborts), the
 * person and the model read why, and the pool starts a fresh thread for the next file.
 */
export const PARSERS = {
  /**
   * Threads at most: two, so one file held to its time limit does not stall every other file; more
   * would take the cores turns need (parsing is CPU-bound).
   */
  threads: 2,
  /** One file's parse, queue wait included, before its thread is ended. */
  timeoutMs: 20_000,
  /** A thread's V8 heap: pdf.js holds a 20 MB file's objects in well under this. */
  heapMb: 512,
  /**
   * What the process may grow by while parses run, checked every 20 ms (their buffers are outside
   * the heap: memory-guard.ts). pdf.js fills a gigabyte in about a second, so the process may hold
   * a few hundred MB past this before the parse is ended.
   */
  memoryMb: 512,
  /** An idle thread ends after this long; the next file starts one (about 100 ms). */
  idleMs: 30_000,
  /**
   * How much lower the threads' CPU priority is than the event loop's (Linux nice, per thread): on a
   * busy machine a parse waits for a core, the loop and its heartbeat do not.
   */
  niceIncrement: 10,
} as const;

/** What crosses back from a thread is checked like any other boundary. */
const FileType = z.object({ ext: z.string(), mime: z.string() });
type FileType = z.infer<typeof FileType>;
const PageCount = z.object({
  pages: z.number().int().nonnegative(),
  complete: z.boolean(),
  scannedBytes: z.number(),
  inflatedBytes: z.number(),
});
type PageCount = z.infer<typeof PageCount>;

/**
 * What a parse gave, or why it gave nothing, in words for the person and the model: `why` follows a
 * subject ("this PDF could not be read within 20 s").
 */
export type Parsed<T> = { ok: true; value: T } | { ok: false; why: string };

export interface ParsePoolOptions {
  /** The worker module; default parse-worker.ts. Tests point it at a worker of their own. */
  worker?: URL;
  threads?: number;
  timeoutMs?: number;
  heapMb?: number;
  memoryMb?: number;
}

export class ParsePool {
  readonly #pool: Piscina;
  readonly #timeoutMs: number;
  readonly #heapMb: number;
  readonly #memoryMb: number;
  readonly #memory: MemoryGuard;

  constructor(options: ParsePoolOptions = {}) {
    this.#timeoutMs = options.timeoutMs ?? PARSERS.timeoutMs;
    this.#heapMb = options.heapMb ?? PARSERS.heapMb;
    this.#memoryMb = options.memoryMb ?? PARSERS.memoryMb;
    this.#memory = new MemoryGuard(this.#memoryMb);
    this.#pool = new Piscina({
      // A `.ts` entry, loaded by Node's type stripping as the app's own modules are.
      filename: (options.worker ?? new URL('./parse-worker.ts', import.meta.url)).href,
      minThreads: 0,
      maxThreads: options.threads ?? PARSERS.threads,
      idleTimeout: PARSERS.idleMs,
      niceIncrement: PARSERS.niceIncrement,
      resourceLimits: { maxOldGenerationSizeMb: this.#heapMb, maxYoungGenerationSizeMb: 32, stackSizeMb: 4 },
    });
    // A thread that dies with no task on it (piscina then emits 'error') is replaced at the next task;
    // unheard, the event would end the process.
    this.#pool.on('error', () => undefined);
  }

  /** The type a file's magic bytes say (`file-type`), or null when they say none. */
  type(bytes: Uint8Array): Promise<Parsed<FileType | null>> {
    return this.run('detectType', bytes, FileType.nullable());
  }

  /** The page objects of a PDF (pdf-pages.ts). */
  pages(bytes: Uint8Array): Promise<Parsed<PageCount>> {
    return this.run('countPages', bytes, PageCount);
  }

  /** A PDF's text layer (pdf-text.ts), or null when it has none. */
  text(bytes: Uint8Array): Promise<Parsed<string | null>> {
    return this.run('readPdfText', bytes, z.string().nullable());
  }

  /**
   * Runs the worker's export `task` on a copy of `bytes`, its answer checked against `answer`;
   * over the time limit, the heap or the memory budget, the thread is ended and `why` says so.
   */
  async run<T>(task: string, bytes: Uint8Array, answer: z.ZodType<T>): Promise<Parsed<T>> {
    // Whole seconds as the app sets them; tenths for the short limits of tests.
    const seconds = Math.round(this.#timeoutMs / 100) / 10;
    const copy = await copyInSlices(bytes);
    const memory = this.#memory.watch();
    try {
      const value: unknown = await this.#pool.run(copy, {
        name: task,
        transferList: [copy.buffer],
        signal: AbortSignal.any([AbortSignal.timeout(this.#timeoutMs), memory.signal]),
      });
      const checked = answer.safeParse(value);
      if (!checked.success)
        return { ok: false, why: 'could not be read (its reader gave an answer of the wrong shape)' };
      return { ok: true, value: checked.data };
    } catch (error) {
      const { name, code, message } = error as Error & { code?: string };
      if (memory.signal.aborted)
        return { ok: false, why: `could not be read in the ${this.#memoryMb} MB of memory files may take` };
      if (name === 'AbortError') return { ok: false, why: `could not be read within ${seconds} s` };
      if (code === 'ERR_WORKER_OUT_OF_MEMORY')
        return { ok: false, why: `could not be read in the ${this.#heapMb} MB of memory a file may take` };
      return { ok: false, why: `could not be read (its reader failed: ${message})` };
    } finally {
      memory.done();
    }
  }

  close(): Promise<void> {
    return this.#pool.close({ force: true });
  }
}

/**
 * The thread's own copy of exactly these bytes (a Buffer may be a view of a larger one), handed
 * over without a second copy; made a slice at a time, with the event loop let through between
 * slices, as a 20 MB copy is tens of milliseconds on a busy machine.
 */
async function copyInSlices(bytes: Uint8Array): Promise<Uint8Array<ArrayBuffer>> {
  const SLICE = 4 * 1024 * 1024;
  const copy = new Uint8Array(bytes.byteLength);
  for (let at = 0; at < bytes.byteLength; at += SLICE) {
    if (at > 0) await new Promise((resolve) => setImmediate(resolve));
    copy.set(bytes.subarray(at, at + SLICE), at);
  }
  return copy;
}

let shared: ParsePool | undefined;

/** The process's pool, started at its first file: idle, its threads end and hold nothing open. */
export const parsePool = (): ParsePool => (shared ??= new ParsePool());
