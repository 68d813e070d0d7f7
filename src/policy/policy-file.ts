import { createHash } from 'node:crypto';
import { statSync, watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { builtinPolicy, type PolicyOptions } from './defaults.ts';
import type { Policy } from './engine.ts';
import { formatPolicyProblem, loadPolicyFile, type PolicyProblem } from './parse.ts';

const POLICY_FILE_LIMITS = {
  /**
   * Quiet period a changed file must stay unchanged before it is read (editors write in several
   * steps: a truncate then a write, a write in two chunks); a change during it starts it again.
   */
  debounceMs: 150,
  /** `current()` re-stats the file at most this often, so a missed watch event costs one second at most. */
  restatMs: 1000,
} as const;

export interface PolicyFileOptions extends PolicyOptions {
  /** POLICY_FILE; unset: the built-in policy, and nothing to watch. */
  file?: string;
  log?: Pick<Logger, 'info' | 'warn'>;
  debounceMs?: number;
  restatMs?: number;
}

export interface PolicyChange {
  policy: Policy;
  /** Empty when the edit was applied; otherwise why it was refused (the previous policy stays). */
  problems: PolicyProblem[];
}

export class PolicyFileError extends Error {
  readonly problems: PolicyProblem[];
  constructor(problems: PolicyProblem[]) {
    super(
      `Invalid policy (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${problems.map((p) => `  - ${formatPolicyProblem(p)}`).join('\n')}`,
    );
    this.name = 'PolicyFileError';
    this.problems = problems;
  }
}

const stamp = (file: string): string => {
  try {
    const s = statSync(file);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return 'missing';
  }
};

/**
 * The policy in force, from POLICY_FILE, applied without a restart. An edit that does not validate
 * is reported (logged, `problems()`, `onChange`) and the last good policy stays in force: a typo
 * never opens the gates nor locks everyone out. Changes are noticed by watching the file's folder
 * (editors often replace a file rather than write it) and, in case an event is missed (network
 * file systems, containers), by re-statting the file on `current()`. Either way a change is read
 * only after the file has stayed the same for the debounce, and applied only when it did not change
 * during the read: a half-written file is never read as a whole one, even when its prefix is valid.
 */
export class PolicyFile {
  readonly #options: PolicyFileOptions;
  readonly #file: string | undefined;
  #policy: Policy;
  #problems: PolicyProblem[] = [];
  #stamp = '';
  #hash = '';
  #checkedAt = 0;
  #watcher: FSWatcher | undefined;
  #timer: NodeJS.Timeout | undefined;
  readonly #listeners = new Set<(change: PolicyChange) => void>();

  constructor(options: PolicyFileOptions) {
    this.#options = options;
    this.#file = options.file === undefined ? undefined : path.resolve(options.file);
    this.#policy = builtinPolicy(options);
  }

  /**
   * Reads the file for the first time. Invalid at start there is no last good policy to keep, so it
   * throws `PolicyFileError` with every problem (the app exits 1, as for bad configuration).
   */
  load(): Policy {
    if (!this.#file) return this.#policy;
    const problems = this.#read(true);
    if (problems.length > 0) throw new PolicyFileError(problems);
    return this.#policy;
  }

  /** The policy to decide with now. Cheap: at most one `stat` a second. */
  current(): Policy {
    if (this.#file) {
      const now = Date.now();
      if (now - this.#checkedAt >= (this.#options.restatMs ?? POLICY_FILE_LIMITS.restatMs)) {
        this.#checkedAt = now;
        // Never read here: the change may be a write still under way. Read once it has settled.
        if (stamp(this.#file) !== this.#stamp && !this.#timer) this.#readWhenSettled();
      }
    }
    return this.#policy;
  }

  /** What is wrong with the file as it is now; empty when the policy in force is the file's. */
  problems(): PolicyProblem[] {
    this.current();
    return [...this.#problems];
  }

  /**
   * Re-reads the file now, for a caller that knows the write is complete (changes seen by the watcher
   * itself wait for the debounce). Returns the problems that kept it from applying (empty: applied or
   * unchanged).
   */
  reload(): PolicyProblem[] {
    return this.#file ? this.#read(false) : [];
  }

  onChange(listener: (change: PolicyChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  watch(): this {
    if (!this.#file || this.#watcher) return this;
    const dir = path.dirname(this.#file);
    const base = path.basename(this.#file);
    try {
      // persistent: false so watching never keeps the process alive on its own.
      this.#watcher = watch(dir, { persistent: false }, (_event, name) => {
        // A rename into place (an atomic save) names the file too, as `rename`.
        if (name !== null && name !== base) return;
        this.#readWhenSettled();
      });
      this.#watcher.on('error', (err) =>
        this.#options.log?.warn({ err, file: this.#file }, 'policy file watch failed; changes are noticed on use'),
      );
    } catch (err) {
      this.#options.log?.warn({ err, file: this.#file }, 'policy file not watched; changes are noticed on use');
    }
    return this;
  }

  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#watcher?.close();
    this.#watcher = undefined;
    this.#listeners.clear();
  }

  /**
   * Reads the file once it has stayed the same for the debounce: each call (a watch event, a change
   * seen on use) starts the quiet period again, and a change seen when it ends starts another.
   */
  #readWhenSettled(): void {
    clearTimeout(this.#timer);
    const seen = stamp(this.#file!);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (stamp(this.#file!) !== seen) this.#readWhenSettled();
      else this.#read(false);
    }, this.#options.debounceMs ?? POLICY_FILE_LIMITS.debounceMs);
    // The timer never keeps the process alive on its own, as the watcher does not.
    this.#timer.unref();
  }

  #read(first: boolean): PolicyProblem[] {
    const file = this.#file!;
    const before = stamp(file);
    const result = loadPolicyFile(file, this.#options);
    // Written to while it was read: what was read may be half of it. Read again once it settles.
    if (!first && stamp(file) !== before) {
      this.#readWhenSettled();
      return this.#problems;
    }
    this.#stamp = before;
    const hash = createHash('sha256')
      .update(result.text ?? '\0missing')
      .digest('hex');
    if (!first && hash === this.#hash) return this.#problems;
    this.#hash = hash;
    if (result.ok) {
      this.#policy = result.policy;
      this.#problems = [];
      if (!first) this.#options.log?.info({ file }, 'policy file changed; the new policy is in force');
    } else {
      this.#problems = result.problems;
      if (!first)
        this.#options.log?.warn(
          { file, problems: result.problems.map(formatPolicyProblem) },
          `policy file edit refused (${result.problems.length} problem${result.problems.length === 1 ? '' : 's'}); the last good policy stays in force`,
        );
    }
    if (!first) this.#emit({ policy: this.#policy, problems: this.#problems });
    return this.#problems;
  }

  #emit(change: PolicyChange): void {
    for (const listener of this.#listeners) {
      try {
        listener(change);
      } catch (err) {
        this.#options.log?.warn({ err }, 'a policy change listener threw');
      }
    }
  }
}
