/**
 * Ends parses when the process's resident memory grows past a budget while they run. A thread's
 * `resourceLimits` cap its V8 heap only: the ArrayBuffers a parser fills (pdf.js decoding a stream
 * that inflates a thousandfold) live outside it, and a 1 MB PDF grew the process by 2.3 GB in 20 s.
 * Resident memory is the process's, so every parse in flight is ended; the next starts afresh.
 */
export class MemoryGuard {
  readonly #budgetBytes: number;
  readonly #everyMs: number;
  readonly #inFlight = new Set<AbortController>();
  #baseline = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(budgetMb: number, everyMs = 20) {
    this.#budgetBytes = budgetMb * 1024 * 1024;
    this.#everyMs = everyMs;
  }

  /** Watches one parse: its signal aborts when the budget is passed; `done` when it has ended. */
  watch(): { signal: AbortSignal; done: () => void } {
    const controller = new AbortController();
    if (this.#inFlight.size === 0) {
      // Measured when the first parse starts, so what the rest of the process holds is not counted.
      this.#baseline = process.memoryUsage.rss();
      this.#timer = setInterval(() => this.#check(), this.#everyMs);
      this.#timer.unref();
    }
    this.#inFlight.add(controller);
    return { signal: controller.signal, done: () => this.#forget(controller) };
  }

  #forget(controller: AbortController): void {
    this.#inFlight.delete(controller);
    if (this.#inFlight.size === 0) clearInterval(this.#timer);
  }

  #check(): void {
    const rss = process.memoryUsage.rss();
    // Growth from the lowest point: the rest of the process may free memory while a parse runs.
    this.#baseline = Math.min(this.#baseline, rss);
    if (rss - this.#baseline <= this.#budgetBytes) return;
    for (const controller of [...this.#inFlight]) {
      controller.abort(new Error('over the memory budget'));
      this.#forget(controller);
    }
  }
}
