import { describe, expect, it } from 'vitest';
import { storableParameter, storableText, storableTextMarked, toJsonb } from '../../src/core/storable-text.ts';

describe('text Postgres will store', () => {
  it('replaces NULs and unpaired surrogates with U+FFFD, counting each', () => {
    expect(storableText('a\0b\0')).toEqual({ text: 'a\ufffdb\ufffd', nuls: 2, unpaired: 0 });
    expect(storableText('x\ud800y\udc00')).toEqual({ text: 'x\ufffdy\ufffd', nuls: 0, unpaired: 2 });
    expect(storableText('end\ud83d')).toEqual({ text: 'end\ufffd', nuls: 0, unpaired: 1 });
  });

  it('keeps text that needs nothing, surrogate pairs (emoji) included, as it is', () => {
    for (const text of ['', 'plain', 'ok 🙂 ok', '\\u0000 written out', 'é\ufffd']) {
      expect(storableText(text)).toEqual({ text, nuls: 0, unpaired: 0 });
      expect(storableTextMarked(text)).toBe(text);
    }
  });

  it('says what it replaced on a line of its own', () => {
    expect(storableTextMarked('a\0b')).toBe('a\ufffdb\n[1 NUL byte replaced with U+FFFD]');
    expect(storableTextMarked('a\0\0\ud800\n')).toBe(
      'a\ufffd\ufffd\ufffd\n[2 NUL bytes and 1 unpaired surrogate replaced with U+FFFD]',
    );
  });

  it('serializes JSON with every string made storable, keys and nested values too', () => {
    const value = { 'k\0': ['v\ud800', { deep: 'n\0' }], n: 1, ok: 'fine 🙂', at: new Date(0) };
    expect(JSON.parse(toJsonb(value))).toEqual({
      'k\ufffd': ['v\ufffd', { deep: 'n\ufffd' }],
      n: 1,
      ok: 'fine 🙂',
      at: '1970-01-01T00:00:00.000Z',
    });
    expect(toJsonb(value)).not.toMatch(/\\u0000|\\ud800/);
    expect(toJsonb({ a: 'plain' })).toBe(JSON.stringify({ a: 'plain' }));
    // Escapes written out as text (a backslash, then u0000) are text, and stay as they are.
    const written = { code: 'printf "\\u0000 \\ud800"' };
    expect(toJsonb(written)).toBe(JSON.stringify(written));
    expect(toJsonb(undefined)).toBeUndefined();
  });

  it('takes only raw NULs out of a query parameter, never an escape written out', () => {
    expect(storableParameter('a\0b')).toBe('a\ufffdb');
    expect(storableParameter('"\\u0000"')).toBe('"\\u0000"');
    expect(storableParameter(7)).toBe(7);
    const bytes = Buffer.from([0, 1]);
    expect(storableParameter(bytes)).toBe(bytes);
  });
});
