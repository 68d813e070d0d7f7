/**
 * Which `src/` modules ran between two moments of this process, from V8's precise coverage.
 *
 * The app runs in the test's own process (vitest evaluates `src/` inline, each module a script whose
 * URL is its file), so an inspector session on this isolate sees every function it calls. Taking the
 * coverage resets V8's call counts: each `take()` answers "what ran since the last one".
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Session } from 'node:inspector/promises';

interface FunctionCoverage {
  functionName: string;
  isBlockCoverage: boolean;
  ranges: Array<{ startOffset: number; endOffset: number; count: number }>;
}

interface ScriptCoverage {
  scriptId: string;
  url: string;
  functions: FunctionCoverage[];
}

/**
 * What vitest's module runner adds around a module, which runs without the module's own code
 * running: the wrapper that evaluates the top level once at import, and one getter per export that
 * runs whenever another module reads that binding (a constant, or a function it then calls).
 */
const RUNNER_WRAPPER = /^(?:'use strict';)?async \(__vite_ssr_exports__/;
const EXPORT_GETTER = /^\(\) => \{ try \{ return [\w$]+ \} catch \{\} \}$/;

export class ModuleCoverage {
  private readonly session = new Session();
  private readonly sources = new Map<string, string>();

  private readonly repo: string;

  private constructor(repo: string) {
    this.repo = repo;
  }

  /** Starts counting calls in this process; `take()` then reports what ran since the previous take. */
  static async start(repo: string): Promise<ModuleCoverage> {
    const coverage = new ModuleCoverage(repo);
    coverage.session.connect();
    await coverage.session.post('Profiler.enable');
    // The debugger only to read the scripts' source as vitest evaluated them (see RUNNER_WRAPPER).
    await coverage.session.post('Debugger.enable');
    // Function granularity is enough (a module ran or not) and keeps the bookkeeping cheap.
    await coverage.session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
    return coverage;
  }

  /** The repo-relative `src/` modules a function of which ran since the last take, sorted. */
  async take(): Promise<string[]> {
    const { result } = (await this.session.post('Profiler.takePreciseCoverage')) as { result: ScriptCoverage[] };
    const ran = new Set<string>();
    for (const script of result) {
      const file = this.srcFile(script.url);
      if (file && (await this.ranOwnCode(script))) ran.add(file);
    }
    return [...ran].sort();
  }

  async stop(): Promise<void> {
    await this.session.post('Profiler.stopPreciseCoverage');
    await this.session.post('Profiler.disable');
    await this.session.post('Debugger.disable');
    this.session.disconnect();
  }

  /** Whether one of the module's own functions was called, not only the runner's wrapper or getters. */
  private async ranOwnCode(script: ScriptCoverage): Promise<boolean> {
    const called = script.functions.filter((fn) => (fn.ranges[0]?.count ?? 0) > 0);
    if (called.length === 0) return false;
    const source = await this.source(script.scriptId);
    return called.some((fn) => {
      const { startOffset, endOffset } = fn.ranges[0]!;
      const text = source.slice(startOffset, endOffset);
      return !RUNNER_WRAPPER.test(text) && !EXPORT_GETTER.test(text);
    });
  }

  private async source(scriptId: string): Promise<string> {
    let source = this.sources.get(scriptId);
    if (source === undefined) {
      ({ scriptSource: source } = (await this.session.post('Debugger.getScriptSource', { scriptId })) as {
        scriptSource: string;
      });
      this.sources.set(scriptId, source);
    }
    return source;
  }

  private srcFile(url: string): string | undefined {
    if (!url.startsWith('file://')) return undefined;
    const relative = path
      .relative(this.repo, fileURLToPath(url.split('?')[0]!))
      .split(path.sep)
      .join('/');
    return relative.startsWith('src/') ? relative : undefined;
  }
}
