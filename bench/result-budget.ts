import { fitToBudget } from '../src/agent/tools/result-budget.ts';
import { round } from './stats.ts';

/**
 * BUDGET: how long fitToBudget takes to cut a tool result of 1 MB and 10 MB to the default budget,
 * for several shapes of text. It runs on the worker's event loop, so its time is time the worker's
 * heartbeat waits; the identifier scan used to be quadratic (200 KB of `a-a-…` took 24 s).
 * `node bench/result-budget.ts` runs it alone; BENCH_BUDGET_SIZES=200000 picks other sizes (bytes).
 */

const SHAPES: Record<string, (chars: number) => string> = {
  /** A log without line breaks (a JSON blob or a joined log): one 1–10 MB line. */
  'one long line': (chars) =>
    repeatTo(chars, (i) => `ts=${i} level=info pod=web-${i % 50}-7d9f8c msg="served" ms=${i % 97} `),
  /** An ordinary log: short lines, an identifier now and then. */
  'many lines': (chars) =>
    repeatTo(
      chars,
      (i) =>
        `2024-06-01T12:${String(i % 60).padStart(2, '0')}:00Z INFO request ${i % 9 === 0 ? `OPS-${i} ` : ''}served in ${i % 97} ms\n`,
    ),
  /** Nothing but identifiers, all different: URLs, UUID-like ids, pods, paths, e-mails. */
  'identifier-dense': (chars) =>
    repeatTo(
      chars,
      (i) =>
        `https://grafana.example.com/d/${i.toString(16)}?from=now-1h 3f2a9c1e-77b4-4c2e-9d0a-${String(i).padStart(12, '0')} payments-api-7d9f8c6b5-${i} /var/log/app/${i}.log u${i}@example.org\n`,
    ),
  /** Runs that made the old scan quadratic: dashes, dots, pluses, dotted paths without a slash. */
  adversarial: (chars) => {
    const quarter = Math.floor(chars / 4);
    return ['a-', 'a.', 'a+', 'ab.c-'].map((unit) => unit.repeat(Math.ceil(quarter / unit.length))).join('\n');
  },
};

function repeatTo(chars: number, piece: (i: number) => string): string {
  const parts: string[] = [];
  let length = 0;
  for (let i = 0; length < chars; i++) {
    const p = piece(i);
    parts.push(p);
    length += p.length;
  }
  return parts.join('').slice(0, chars);
}

export interface BudgetFigure {
  shape: string;
  chars: number;
  /** Median of the runs, milliseconds. */
  ms: number;
  /** Characters of the fitted result (within the default budget of 100,000). */
  fittedChars: number;
}

export function benchBudget(sizes = [1_000_000, 10_000_000], runs = 3): BudgetFigure[] {
  const figures: BudgetFigure[] = [];
  for (const chars of sizes) {
    for (const [shape, make] of Object.entries(SHAPES)) {
      const text = make(chars);
      const times: number[] = [];
      let fitted = '';
      for (let r = 0; r < runs; r++) {
        const start = performance.now();
        fitted = fitToBudget(text);
        times.push(performance.now() - start);
      }
      times.sort((a, b) => a - b);
      figures.push({ shape, chars, ms: round(times[Math.floor(times.length / 2)]!, 1), fittedChars: fitted.length });
    }
  }
  return figures;
}

if (import.meta.main) {
  const sizes = process.env.BENCH_BUDGET_SIZES?.split(',').map(Number);
  for (const f of benchBudget(sizes)) {
    process.stdout.write(
      `${f.shape.padEnd(18)} ${String(f.chars).padStart(9)} chars  ${String(f.ms).padStart(8)} ms\n`,
    );
  }
}
