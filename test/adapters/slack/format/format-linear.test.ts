/**
 * The Slack converter on crafted text of 80,000 characters, the shapes that made the regex converter
 * quadratic or worse (it never finished these). Only correctness is asserted here, within the default
 * test timeout; the timing goal (under a second) is the MRKDWN benchmark (bench/mrkdwn.ts).
 */
import { describe, expect, it } from 'vitest';
import { ADVERSARIAL_MARKDOWN } from '../../../../bench/mrkdwn.ts';
import {
  markdownToMrkdwn,
  neutralizeMarkdownMentions,
  neutralizeMentions,
} from '../../../../src/adapters/slack/format/index.ts';

const SIZE = 80_000;
/** Equality of texts too long to print in a failure's diff. */
const same = (actual: string, expected: string) => actual.length === expected.length && actual === expected;

describe('markdownToMrkdwn on 80,000 crafted characters', () => {
  it.each(Object.entries(ADVERSARIAL_MARKDOWN))('converts %s safely', (_shape, make) => {
    const markdown = make(SIZE);
    const out = markdownToMrkdwn(markdown);
    // Nothing of the converter's own markers leaks, nobody is pinged, and every < opens a link.
    expect(out).not.toMatch(/[\uE000-\uE001]/);
    expect(out).not.toMatch(/<[!@]/);
    expect(out.match(/<(?!https?:\/\/|mailto:)/g) ?? []).toEqual([]);
    expect(out.length).toBeLessThanOrEqual(5 * markdown.length);
  });

  it('leaves text with no span to convert as it is', () => {
    for (const shape of ['backtick runs of every length', 'open brackets', 'unclosed links', 'links without their )']) {
      const markdown = ADVERSARIAL_MARKDOWN[shape]!(SIZE);
      expect(same(markdownToMrkdwn(markdown), markdown), shape).toBe(true);
    }
    const openers = ADVERSARIAL_MARKDOWN['autolink openers']!(SIZE);
    expect(same(markdownToMrkdwn(openers), openers.replaceAll('<', '&lt;'))).toBe(true);
  });

  it('converts every span of a long text of short lines', () => {
    const lines = ADVERSARIAL_MARKDOWN['short lines']!(SIZE).split('\n').slice(0, -1);
    expect(same(markdownToMrkdwn(lines.join('\n')), lines.map(() => '*a* `b` <https://d|c>').join('\n'))).toBe(true);
  });

  it('neutralizes mentions in long crafted text without searching from every <', () => {
    const labels = '<@U1|'.repeat(SIZE / 5);
    expect(same(neutralizeMentions(labels), labels)).toBe(true);
    // The first label runs to the only `>`: one mention, shown as text.
    expect(same(neutralizeMentions(`${labels}x>`), `@\u200B${labels.slice(5)}x`)).toBe(true);
    const brackets = '[a.example]('.repeat(SIZE / 12);
    expect(same(neutralizeMarkdownMentions(brackets), brackets)).toBe(true);
  });
});
