import { z } from 'zod';

/**
 * The kinds of environment variable Countersign reads, as zod fields: one definition each, so the
 * core's variables (src/config.ts) and each platform's section (src/adapters/<platform>/settings.ts)
 * read and report them alike.
 */

export const int = (min: number, max: number) =>
  z.coerce
    .number({ error: `expected a whole number between ${min} and ${max}` })
    .int(`expected a whole number between ${min} and ${max}`)
    .min(min, `expected a whole number between ${min} and ${max}`)
    .max(max, `expected a whole number between ${min} and ${max}`);

/** The usual spellings of yes and no, any case: `TRUE`, `On` and `1` all mean true. */
const TRUE_WORDS = ['true', 'yes', 'on', '1'];
const FALSE_WORDS = ['false', 'no', 'off', '0'];

export const bool = z.string().transform((raw, ctx) => {
  const word = raw.trim().toLowerCase();
  if (TRUE_WORDS.includes(word)) return true;
  if (FALSE_WORDS.includes(word)) return false;
  ctx.addIssue({ code: 'custom', message: 'expected true or false (or yes/no, on/off, 1/0)' });
  return z.NEVER;
});

export const url = z.url({ error: 'expected an absolute URL such as https://example.com' });

export const list = z.string().transform((v) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);

export const optionalString = z.string().trim().min(1).optional();

/**
 * Why `value` cannot travel in an HTTP header, or undefined when it can. Headers carry printable
 * ASCII only; a placeholder pasted from the docs (`sk-ant-…`) otherwise fails every request with
 * "Cannot convert argument to a ByteString", retried, far from the variable that caused it.
 */
export function headerValueProblem(value: string): string | undefined {
  const index = [...value].findIndex((c) => c < ' ' || c > '~');
  if (index < 0) return undefined;
  const c = [...value][index]!;
  const code = `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
  const shown = c >= ' ' && c !== '\u007f' && !/\s/.test(c) ? `"${c}" (${code})` : code;
  const hint = c === '…' ? ': a placeholder copied from the docs? Put the real value here' : '';
  return `contains ${shown} at character ${index + 1}, which an HTTP header cannot carry${hint}`;
}

/** An API key or token: it is sent in an HTTP header, so it must be printable ASCII. */
export const headerSecret = z
  .string()
  .trim()
  .min(1)
  .superRefine((value, ctx) => {
    const problem = headerValueProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .optional();

/** The raw environment, as read: unset variables absent or undefined. */
export type Env = Record<string, string | undefined>;

/** A problem that involves one or more variables: the variable(s) to name, and what is wrong. */
export type EnvProblem = [variable: string, message: string];
