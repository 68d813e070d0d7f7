import { describe, expect, it } from 'vitest';
import {
  neutralizeMentions,
  splitForDiscord,
  toDiscordMessages,
} from '../../../../src/adapters/discord/format/index.ts';
import { openFenceAt } from '../../../../src/reply/split.ts';

const ZWSP = '\u200b';

/** Prose paragraphs of `n` sentences. */
function prose(sentences: number, seed: string): string {
  const lines: string[] = [];
  for (let i = 0; i < sentences; i++)
    lines.push(`The ${seed} check number ${i} looked at the disk and found nothing alarming today.`);
  const paragraphs: string[] = [];
  for (let i = 0; i < lines.length; i += 4) paragraphs.push(lines.slice(i, i + 4).join(' '));
  return paragraphs.join('\n\n');
}

function codeBlock(lines: number): string {
  const body = Array.from(
    { length: lines },
    (_, i) => `echo "step ${String(i).padStart(3, '0')}: df -h /var/lib/postgresql/data"`,
  );
  return ['```bash', ...body, '```'].join('\n');
}

/** A 4,500-character answer: prose, a long shell block, prose. */
function longAnswer(): string {
  const text = `${prose(18, 'first')}\n\n${codeBlock(38)}\n\n${prose(16, 'second')}`;
  return text;
}

describe('neutralizeMentions', () => {
  it('makes @everyone and @here inert with a zero-width space', () => {
    expect(neutralizeMentions('ping @everyone and @here')).toBe(`ping @${ZWSP}everyone and @${ZWSP}here`);
  });

  it('makes user, nickname and role mentions inert', () => {
    expect(neutralizeMentions('<@123> <@!456> <@&789>')).toBe(`<@${ZWSP}123> <@${ZWSP}!456> <@${ZWSP}&789>`);
  });

  it('leaves channel mentions, emoji and plain text as they are', () => {
    const text = 'see <#123> :tada: <:party:456> and email ops@example.com';
    expect(neutralizeMentions(text)).toBe(text);
  });

  it('is idempotent: neutralizing twice changes nothing more', () => {
    const once = neutralizeMentions('@everyone <@1> <@&2>');
    expect(neutralizeMentions(once)).toBe(once);
  });

  it('leaves no text Discord would parse as a mention', () => {
    const out = neutralizeMentions('a @here b <@!42> c @everyone d <@&7>');
    expect(out).not.toMatch(/@(everyone|here)/);
    expect(out).not.toMatch(/<@[!&]?\d+>/);
  });
});

describe('splitForDiscord', () => {
  it('keeps a message of 2000 characters whole', () => {
    const text = 'a'.repeat(2000);
    expect(splitForDiscord(text)).toEqual([text]);
  });

  it('splits a 4,500-character answer with a code block into exactly 3 messages of at most 2000 characters', () => {
    const text = longAnswer();
    expect(text.length).toBeGreaterThanOrEqual(4400);
    expect(text.length).toBeLessThanOrEqual(4600);
    const parts = splitForDiscord(text);
    expect(parts).toHaveLength(3);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(2000);
  });

  it('never leaves a code fence open in any message', () => {
    for (const part of splitForDiscord(longAnswer())) expect(openFenceAt(part)).toBeUndefined();
  });

  it('loses nothing: joined messages equal the original apart from added fence lines and whitespace at cuts', () => {
    const text = longAnswer();
    const parts = splitForDiscord(text);
    const isFence = (line: string) => /^\s*```/.test(line);
    const fenceLines = (s: string) => s.split('\n').filter(isFence).length;
    const withoutFences = (s: string) =>
      s
        .split('\n')
        .filter((line) => !isFence(line))
        .join(' ')
        .replace(/\s+/g, ' ')
        .trim();
    expect(withoutFences(parts.join('\n'))).toBe(withoutFences(text));
    // Each cut inside the block adds one closing and one reopening fence, nothing else.
    const added = parts.reduce((n, p) => n + fenceLines(p), 0) - fenceLines(text);
    expect([0, 2, 4]).toContain(added);
  });

  it('closes a code block longer than a message at the cut and reopens it with its language', () => {
    const text = `${prose(4, 'intro')}\n\n${codeBlock(60)}\n\nDone.`;
    const parts = splitForDiscord(text);
    expect(parts.length).toBeGreaterThanOrEqual(2);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(2000);
      expect(openFenceAt(part)).toBeUndefined();
    }
    expect(parts.slice(1).some((p) => p.startsWith('```bash\n'))).toBe(true);
  });

  it('neutralizes mentions before splitting model output', () => {
    const parts = toDiscordMessages(`@everyone ${'x '.repeat(1200)}<@123>`);
    expect(parts.join('')).not.toMatch(/@everyone|<@123>/);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(2000);
  });
});
