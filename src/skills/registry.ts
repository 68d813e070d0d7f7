import { createHash } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { createLogger, type Logger } from '../log.ts';
import { LIMITS } from './limits.ts';
import { scanSkillsRoot, type Skill, type SkillSource } from './load.ts';
import type { SkillProblem } from './problem.ts';

export interface SkillSummary {
  name: string;
  description: string;
  source: SkillSource;
  dir: string;
}

export interface SkillsChange {
  version: string;
  added: string[];
  removed: string[];
  updated: string[];
  problems: SkillProblem[];
}

export interface SkillRegistryOptions {
  /** Skills shipped with Countersign. */
  shippedDir?: string;
  /** Skills added in the workspace; one with the same name as a shipped skill replaces it. */
  customDir?: string;
  log?: Logger;
  /** Quiet period after a file change before re-scanning. */
  debounceMs?: number;
}

const problemKey = (p: SkillProblem) => `${p.severity}|${p.file}|${p.line}|${p.message}`;

/**
 * The skills the agent can use, read from disk. Broken skills are reported and skipped, never
 * fatal; `watch()` re-scans when files change so an edited or new skill is live within a moment.
 */
export class SkillRegistry {
  readonly #roots: Array<{ dir: string; source: SkillSource }>;
  readonly #log: Logger;
  readonly #debounceMs: number;
  #skills = new Map<string, Skill>();
  #problems: SkillProblem[] = [];
  #version = emptyVersion();
  #listeners = new Set<(change: SkillsChange) => void>();
  #watchers: FSWatcher[] = [];
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #closed = false;

  constructor(options: SkillRegistryOptions) {
    const roots: Array<{ dir: string; source: SkillSource }> = [];
    if (options.shippedDir) roots.push({ dir: path.resolve(options.shippedDir), source: 'shipped' });
    // The same folder configured twice would load every skill twice and "override" itself.
    if (options.customDir && !roots.some((r) => r.dir === path.resolve(options.customDir!))) {
      roots.push({ dir: path.resolve(options.customDir), source: 'custom' });
    }
    this.#roots = roots;
    this.#log = (options.log ?? createLogger('silent')).child({ component: 'skills' });
    this.#debounceMs = options.debounceMs ?? LIMITS.reloadDebounceMs;
  }

  /** Every loaded skill, sorted by name. */
  list(): SkillSummary[] {
    return [...this.#skills.values()]
      .sort((a, b) => a.name.localeCompare(b.name))
      .map(({ name, description, source, dir }) => ({ name, description, source, dir }));
  }

  get(name: string): Skill | undefined {
    return this.#skills.get(name);
  }

  /** Problems found by the last scan, errors (skipped skills) and warnings alike. */
  problems(): SkillProblem[] {
    return [...this.#problems];
  }

  /**
   * A fingerprint of the loaded skills (names, sources and content hashes). It changes whenever a
   * skill the model could follow changes, so an approval scoped to it lapses too.
   */
  version(): string {
    return this.#version;
  }

  /** Calls `listener` after a re-scan that changed the skills or their problems. Returns an unsubscribe. */
  onChange(listener: (change: SkillsChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Re-scans the skill folders. Overlapping calls are coalesced into one extra scan. */
  async reload(): Promise<void> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      try {
        do {
          this.#again = false;
          await this.#scan();
        } while (this.#again);
      } finally {
        this.#running = undefined;
      }
    })();
    return this.#running;
  }

  /**
   * Starts watching the skill folders. The custom folder is created if missing so a skill written
   * there later (by the skillmaker skill, say) is picked up without a restart.
   */
  async watch(): Promise<this> {
    for (const root of this.#roots) {
      if (root.source === 'custom') {
        await mkdir(root.dir, { recursive: true }).catch((err: unknown) =>
          this.#log.warn({ err, dir: root.dir }, 'could not create the custom skills folder; it will not be watched'),
        );
      }
      try {
        // persistent: false so an open registry never keeps the process alive on its own.
        const watcher = watch(root.dir, { recursive: true, persistent: false }, () => this.#schedule());
        watcher.on('error', (err) => this.#log.warn({ err, dir: root.dir }, 'skills folder watch failed'));
        this.#watchers.push(watcher);
      } catch (err) {
        this.#log.debug({ err, dir: root.dir }, 'skills folder not watched (it does not exist)');
      }
    }
    return this;
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    for (const watcher of this.#watchers) watcher.close();
    this.#watchers = [];
    this.#listeners.clear();
  }

  #schedule(): void {
    if (this.#closed) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.reload().catch((err: unknown) => this.#log.error({ err }, 'skills reload failed'));
    }, this.#debounceMs);
  }

  async #scan(): Promise<void> {
    const skills = new Map<string, Skill>();
    const problems: SkillProblem[] = [];
    // Roots are in precedence order: a later (custom) skill replaces an earlier (shipped) one.
    for (const root of this.#roots) {
      const scan = await scanSkillsRoot(root.dir, root.source);
      problems.push(...scan.problems);
      for (const skill of scan.skills) {
        const shadowed = skills.get(skill.name);
        if (shadowed) {
          this.#log.info(
            { skill: skill.name, custom: skill.dir, shipped: shadowed.dir },
            `custom skill "${skill.name}" overrides the shipped skill of the same name`,
          );
        }
        skills.set(skill.name, skill);
      }
    }
    if (this.#closed) return;

    const known = new Set(this.#problems.map(problemKey));
    for (const problem of problems) {
      if (known.has(problemKey(problem))) continue;
      const line = `${problem.file}:${problem.line}: ${problem.message}`;
      if (problem.severity === 'error')
        this.#log.warn({ file: problem.file, line: problem.line }, `skill skipped: ${line}`);
      else this.#log.info({ file: problem.file, line: problem.line }, `skill warning: ${line}`);
    }

    const before = this.#skills;
    const problemsChanged =
      problems.length !== this.#problems.length || problems.some((p) => !known.has(problemKey(p)));
    const version = fingerprint(skills);
    const changed = version !== this.#version || problemsChanged;
    this.#skills = skills;
    this.#problems = problems;
    this.#version = version;
    if (!changed) return;

    const change: SkillsChange = {
      version,
      added: [...skills.keys()].filter((n) => !before.has(n)).sort(),
      removed: [...before.keys()].filter((n) => !skills.has(n)).sort(),
      updated: [...skills.keys()]
        .filter((n) => before.has(n) && before.get(n)!.contentHash !== skills.get(n)!.contentHash)
        .sort(),
      problems: [...problems],
    };
    for (const listener of this.#listeners) {
      try {
        listener(change);
      } catch (err) {
        this.#log.error({ err }, 'a skills change listener threw');
      }
    }
  }
}

function fingerprint(skills: ReadonlyMap<string, Skill>): string {
  const hash = createHash('sha256');
  for (const skill of [...skills.values()].sort((a, b) => a.name.localeCompare(b.name))) {
    hash.update(`${skill.name}\0${skill.source}\0${skill.contentHash}\n`);
  }
  return hash.digest('hex');
}

function emptyVersion(): string {
  return fingerprint(new Map());
}

/** Creates a registry, loads it, and (unless told not to) starts watching for changes. */
export async function openSkillRegistry(options: SkillRegistryOptions & { watch?: boolean }): Promise<SkillRegistry> {
  const registry = new SkillRegistry(options);
  await registry.reload();
  if (options.watch !== false) await registry.watch();
  return registry;
}
