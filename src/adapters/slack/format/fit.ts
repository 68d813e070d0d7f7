/**
 * Slack's limits count characters of mrkdwn, but a text is cut in its Markdown, then converted —
 * never the other way round: cutting converted text can split an entity (`&am`), a link
 * (`<https://x|la`) or a mention token, which Slack then shows broken or reads differently. Escaping
 * makes the mrkdwn longer than its Markdown (`&` → `&amp;`) and links shorter, so the cut is found by
 * converting shorter prefixes until one fits.
 */
import { markdownToMrkdwn, openFenceAtEnd } from './mrkdwn.ts';
import type { MentionPolicy } from './mentions.ts';

/** The whole text converted, or its longest start that fits in `max` characters with an ellipsis after it. */
export function fitMrkdwn(markdown: string, max: number, policy: MentionPolicy = {}): string {
  const whole = markdownToMrkdwn(markdown, policy);
  if (whole.length <= max) return whole;
  const { converted } = fittingStart(markdown, max - 1, policy);
  return `${converted}…`;
}

/**
 * The text converted in consecutive pieces of at most `max` characters each, cut at line breaks or
 * spaces where possible; a piece cut inside a fenced code block closes it and the next opens it again.
 */
export function mrkdwnPieces(markdown: string, max: number, policy: MentionPolicy = {}): string[] {
  const pieces: string[] = [];
  let rest = markdown;
  for (;;) {
    const { length, converted } = fittingStart(rest, max, policy);
    pieces.push(converted);
    if (length >= rest.length) return pieces;
    const fence = openFenceAtEnd(rest.slice(0, length));
    // Reopened only when that still leaves the next piece shorter than this rest: always progress.
    const reopen = fence && fence.length + 1 < length ? `${fence}\n` : '';
    rest = `${reopen}${rest.slice(length)}`;
  }
}

/**
 * Markdown converts to at most five times its length (`&` → `&amp;`), so a start this many times the
 * limit is as much as one piece is ever tried with; longer texts are not converted whole per piece.
 */
const WIDEST_TRY = 4;

/**
 * A long start of `markdown` whose mrkdwn fits in `max`: shrunk in proportion until one fits, grown
 * back by halving the gap to the shortest start that did not, then moved back to a line break or a
 * space when that start fits too. Conversion is linear, and this converts O(log max) starts.
 */
function fittingStart(markdown: string, max: number, policy: MentionPolicy): { length: number; converted: string } {
  const convert = (length: number) => markdownToMrkdwn(markdown.slice(0, length), policy);
  let tooLong = Math.min(markdown.length, WIDEST_TRY * max);
  let converted = convert(tooLong);
  if (converted.length <= max) return { length: tooLong, converted };
  let fits = tooLong;
  for (;;) {
    fits = Math.max(1, Math.min(fits - 1, Math.floor(fits * (max / converted.length) * 0.95)));
    converted = convert(fits);
    // One character converts to at most a few (`&amp;`), so a single one always fits a Slack limit.
    if (converted.length <= max || fits === 1) break;
    tooLong = fits;
  }
  for (let longest = Math.min(tooLong, fits + max); longest - fits > 1;) {
    const middle = Math.floor((fits + longest) / 2);
    const tried = convert(middle);
    if (tried.length <= max) [fits, converted] = [middle, tried];
    else longest = middle;
  }
  const nicer = cutPoint(markdown, fits);
  if (nicer < fits) {
    const tried = convert(nicer);
    if (tried.length <= max) return { length: nicer, converted: tried };
  }
  return { length: fits, converted };
}

/** A cut at or before `at`: after a line break or a space in the latter half, never inside a surrogate pair. */
function cutPoint(text: string, at: number): number {
  const lineBreak = text.lastIndexOf('\n', at - 1);
  if (lineBreak >= at / 2) return lineBreak + 1;
  const space = text.lastIndexOf(' ', at - 1);
  if (space >= at / 2) return space + 1;
  const code = text.charCodeAt(at - 1);
  return code >= 0xd800 && code <= 0xdbff && at > 1 ? at - 1 : at;
}
