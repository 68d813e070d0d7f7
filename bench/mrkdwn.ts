import { markdownToMrkdwn } from '../src/adapters/slack/format/index.ts';
import { round } from './stats.ts';

/**
 * MRKDWN: how long the Slack converter (src/adapters/slack/format) takes on crafted model text of
 * 80,000 and 160,000 characters. It runs on the worker's event loop for every edit of a reply, so a
 * slow conversion stalls every turn of that worker. The regex converter was quadratic or worse on
 * these shapes (a 20,300-character text took 16.9 s; 80,000 never finished); target: under a second
 * at 80,000, and about twice the time at twice the size. `node bench/mrkdwn.ts` runs it alone;
 * BENCH_MRKDWN_SIZES=20000 picks other sizes (characters). test/adapters/slack/format/format-linear.test.ts
 * checks the converter's output on the same shapes.
 */
export const ADVERSARIAL_MARKDOWN: Record<string, (chars: number) => string> = {
  'backtick runs of every length': (chars) => {
    const pieces: string[] = [];
    for (let n = 1, length = 0; length < chars; n = (n % 400) + 1) {
      pieces.push(`${'`'.repeat(n)}a`);
      length += n + 1;
    }
    return pieces.join('').slice(0, chars);
  },
  'lone backticks': (chars) => '`a'.repeat(chars / 2),
  'open brackets': (chars) => '['.repeat(chars),
  'unclosed links': (chars) => '[a](https://x'.repeat(Math.ceil(chars / 13)).slice(0, chars),
  'links without their )': (chars) => '[a](https://x "t'.repeat(Math.ceil(chars / 16)).slice(0, chars),
  'autolink openers': (chars) => '<https://'.repeat(Math.ceil(chars / 9)).slice(0, chars),
  'stars and words': (chars) => '*a *'.repeat(chars / 4),
  'bold openers': (chars) => '**a '.repeat(chars / 4),
  'bold italic openers': (chars) => '***a '.repeat(chars / 5),
  'underscore openers': (chars) => ' __a'.repeat(chars / 4),
  'strike openers': (chars) => '~~a '.repeat(chars / 4),
  'nested emphasis': (chars) => '**_~~*'.repeat(chars / 6),
  'mention labels without >': (chars) => '<@U1|'.repeat(chars / 5),
  'heading of spaces': (chars) => `# a${' '.repeat(chars - 5)}b`,
  'quote markers before a line separator': (chars) => `${'> '.repeat(chars / 2 - 1)}\u2028`,
  'short lines': (chars) => '**a** `b` [c](https://d)\n'.repeat(Math.ceil(chars / 25)).slice(0, chars),
};

export interface MrkdwnFigure {
  shape: string;
  chars: number;
  /** Median of the runs, milliseconds. */
  ms: number;
}

export function benchMrkdwn(sizes = [80_000, 160_000], runs = 3): MrkdwnFigure[] {
  const figures: MrkdwnFigure[] = [];
  for (const chars of sizes) {
    for (const [shape, make] of Object.entries(ADVERSARIAL_MARKDOWN)) {
      const text = make(chars);
      const times: number[] = [];
      for (let r = 0; r < runs; r++) {
        const start = performance.now();
        markdownToMrkdwn(text);
        times.push(performance.now() - start);
      }
      times.sort((a, b) => a - b);
      figures.push({ shape, chars: text.length, ms: round(times[Math.floor(times.length / 2)]!, 1) });
    }
  }
  return figures;
}

if (import.meta.main) {
  const sizes = process.env.BENCH_MRKDWN_SIZES?.split(',').map(Number);
  for (const f of benchMrkdwn(sizes)) {
    process.stdout.write(
      `${f.shape.padEnd(40)} ${String(f.chars).padStart(7)} chars  ${String(f.ms).padStart(8)} ms\n`,
    );
  }
}
