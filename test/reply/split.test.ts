import { describe, expect, it } from 'vitest';
import { openFenceAt, splitMessage } from '../../src/reply/split.ts';

const paragraph = (n: number, word = 'lorem') => Array.from({ length: n }, (_, i) => `${word}${i}`).join(' ');

describe('splitting long replies', () => {
  it('leaves a message that fits alone', () => {
    expect(splitMessage('short', 100)).toEqual(['short']);
  });

  it('cuts at a paragraph break when one is in reach', () => {
    const text = `${paragraph(30)}\n\n${paragraph(30, 'ipsum')}`;
    const parts = splitMessage(text, 300);
    expect(parts[0]).toBe(paragraph(30));
    expect(parts.every((p) => p.length <= 300)).toBe(true);
    expect(parts.join(' ').replace(/\s+/g, ' ')).toBe(text.replace(/\s+/g, ' '));
  });

  it('never leaves a code block open: a 4,500-character answer splits into 3 valid messages of at most 2,000', () => {
    const code = Array.from({ length: 60 }, (_, i) => `  const value${i} = compute(${i}); // step ${i}`).join('\n');
    const text = `${paragraph(150)}\n\n\`\`\`ts\n${code}\n\`\`\`\n\n${paragraph(120, 'tail')}`;
    expect(text.length).toBeGreaterThan(4400);
    expect(text.length).toBeLessThan(4700);
    const parts = splitMessage(text, 2000);
    expect(parts).toHaveLength(3);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(2000);
      expect(openFenceAt(part)).toBeUndefined();
    }
    // Every line of code survives, in order, and reopened blocks keep their language.
    const joined = parts.join('\n');
    for (let i = 0; i < 60; i++) expect(joined).toContain(`const value${i} = compute(${i});`);
    const reopened = parts.slice(1).filter((p) => p.startsWith('```'));
    for (const p of reopened) expect(p.startsWith('```ts\n')).toBe(true);
  });

  it('cuts inside a word only when a text has no spaces at all', () => {
    const parts = splitMessage('x'.repeat(250), 100);
    expect(parts.map((p) => p.length)).toEqual([95, 95, 60]);
  });

  it('never splits a surrogate pair', () => {
    const parts = splitMessage('😀'.repeat(100), 101);
    for (const p of parts) expect(p).not.toMatch(/[\ud800-\udbff]$/);
    expect(parts.join('')).toBe('😀'.repeat(100));
  });
});
