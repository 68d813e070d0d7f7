import type { Logger } from 'pino';

/** What a starting process has to undo: each part adds its stop as it starts, and they run newest first. */
export class Cleanups {
  readonly #log: Logger;
  readonly #steps: Array<() => Promise<void>> = [];

  constructor(log: Logger) {
    this.#log = log;
  }

  add(step: () => Promise<void>): void {
    this.#steps.push(step);
  }

  /** Runs every step once, in reverse order of adding; a failing step is logged and the rest still run. */
  async run(): Promise<void> {
    for (const cleanup of this.#steps.splice(0).reverse()) {
      await cleanup().catch((error: unknown) => this.#log.warn({ err: error }, 'error while stopping'));
    }
  }
}
