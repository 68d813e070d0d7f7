/**
 * Linear-time building blocks for the converters. Model text is untrusted and may be crafted, so
 * every rule is one left-to-right walk over a line. Where a rule needs "the nearest X from here on",
 * it reads a table built in one right-to-left walk instead of searching, so no character is looked
 * at more than a fixed number of times per rule. (Regular expressions with a lazy `.+?` or a
 * `[^x]*` run search the rest of the line again from every candidate opener: quadratic, and cubic
 * for backtick runs, which made crafted texts of 80,000 characters never finish.)
 */

const WHITESPACE = /\s/;
const WORD = /\w/;

/** `\s` of a regular expression, for one character (false past either end of the text). */
export const isSpace = (c: string | undefined): boolean => c !== undefined && WHITESPACE.test(c);

/** `\w` of a regular expression, for one character (false past either end of the text). */
export const isWord = (c: string | undefined): boolean => c !== undefined && WORD.test(c);

/**
 * For every position i from 0 to `length`, the smallest j ≥ i where `holds(j)`, or `length` when
 * there is none: "the next X" in constant time, after one walk from the end.
 */
export function nearestFrom(length: number, holds: (i: number) => boolean): Int32Array {
  const next = new Int32Array(length + 1);
  next[length] = length;
  for (let i = length - 1; i >= 0; i--) next[i] = holds(i) ? i : next[i + 1]!;
  return next;
}

/** The length of the run of `char` starting at `from`. */
export function runLength(text: string, from: number, char: string): number {
  let end = from;
  while (text[end] === char) end++;
  return end - from;
}
