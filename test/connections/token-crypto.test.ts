import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseEncryptionKey, TokenSealer, TokenSealError } from '../../src/connections/token-crypto.ts';

const newKey = () => randomBytes(32).toString('base64');
const TOKENS = { access_token: 'gho_secretAccess123', refresh_token: 'ghr_secretRefresh456', token_type: 'Bearer' };

/** The sealed value with one character of part `index` (0 version … 4 tag) changed. */
function tamper(sealed: string, index: number): string {
  const parts = sealed.split('.');
  const part = parts[index]!;
  const flipped = part[0] === 'A' ? 'B' : 'A';
  parts[index] = flipped + part.slice(1);
  return parts.join('.');
}

function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a throw');
}

describe('TokenSealer', () => {
  it('opens what it sealed, for any JSON value', () => {
    const sealer = new TokenSealer(newKey());
    for (const value of [TOKENS, 'a verifier', 42, null, [1, { b: true }]]) {
      expect(sealer.open(sealer.seal(value))).toEqual(value);
    }
  });

  it('seals the same value differently each time, and never shows it', () => {
    const sealer = new TokenSealer(newKey());
    const a = sealer.seal(TOKENS);
    const b = sealer.seal(TOKENS);
    expect(a).not.toBe(b);
    for (const sealed of [a, b]) {
      expect(sealed).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+\.[\w-]+$/);
      expect(sealed).not.toContain('secretAccess');
      expect(Buffer.from(sealed.split('.')[3]!, 'base64url').toString('latin1')).not.toContain('secret');
    }
  });

  it('detects tampering with the IV, the ciphertext, the tag or the header', () => {
    const sealer = new TokenSealer(newKey());
    const sealed = sealer.seal(TOKENS);
    for (const index of [2, 3, 4]) {
      const error = errorOf(() => sealer.open(tamper(sealed, index)));
      expect(error).toBeInstanceOf(TokenSealError);
      expect(error.message).toMatch(/failed authentication|damaged/);
    }
    expect(errorOf(() => sealer.open(tamper(sealed, 1))).message).toMatch(/neither TOKEN_ENCRYPTION_KEY/);
    expect(errorOf(() => sealer.open(sealed.replace(/^v1/, 'v2'))).message).toMatch(/Not a sealed value/);
    expect(errorOf(() => sealer.open('gho_plain_token')).message).toMatch(/Not a sealed value/);
  });

  it('opens a value only in the context it was sealed for', () => {
    const sealer = new TokenSealer(newKey());
    const sealed = sealer.seal(TOKENS, 'slack:T1:alice:github');
    expect(sealer.open(sealed, 'slack:T1:alice:github')).toEqual(TOKENS);
    expect(errorOf(() => sealer.open(sealed, 'slack:T1:mallory:github'))).toBeInstanceOf(TokenSealError);
  });

  it('refuses a value sealed under another key, without showing key or plaintext', () => {
    const key = newKey();
    const sealed = new TokenSealer(newKey()).seal(TOKENS);
    const error = errorOf(() => new TokenSealer(key).open(sealed));
    expect(error).toBeInstanceOf(TokenSealError);
    expect(error.message).toMatch(/TOKEN_ENCRYPTION_KEY_PREVIOUS/);
    expect(error.message).not.toContain(key);
    expect(error.message).not.toContain('secret');
  });

  it('rotates: reads values sealed with the previous key and seals new ones with the current', () => {
    const oldKey = newKey();
    const currentKey = newKey();
    const before = new TokenSealer(oldKey).seal(TOKENS);
    const rotated = new TokenSealer(currentKey, oldKey);
    expect(rotated.open(before)).toEqual(TOKENS);

    const after = rotated.seal(TOKENS);
    expect(TokenSealer.keyIdOf(after)).toBe(rotated.currentKeyId);
    expect(TokenSealer.keyIdOf(after)).not.toBe(TokenSealer.keyIdOf(before));
    // Once the previous key is dropped, only the re-sealed value opens.
    const currentOnly = new TokenSealer(currentKey);
    expect(currentOnly.open(after)).toEqual(TOKENS);
    expect(errorOf(() => currentOnly.open(before))).toBeInstanceOf(TokenSealError);
    expect(errorOf(() => new TokenSealer(oldKey).open(after))).toBeInstanceOf(TokenSealError);
  });
});

describe('parseEncryptionKey', () => {
  it('takes 32 bytes as base64, padded or URL-safe', () => {
    const bytes = randomBytes(32);
    expect(parseEncryptionKey(bytes.toString('base64'))).toEqual(bytes);
    expect(parseEncryptionKey(bytes.toString('base64url'))).toEqual(bytes);
    expect(parseEncryptionKey(` ${bytes.toString('base64')}\n`)).toEqual(bytes);
  });

  it('refuses other lengths and non-base64 with a readable error that does not repeat the key', () => {
    for (const [text, said] of [
      [randomBytes(16).toString('base64'), 'decodes to 16 bytes'],
      [randomBytes(31).toString('base64'), 'decodes to 31 bytes'],
      [randomBytes(33).toString('base64'), 'decodes to 33 bytes'],
      ['not a key!', 'is not base64'],
      ['', 'is empty'],
    ] as const) {
      const error = errorOf(() => parseEncryptionKey(text));
      expect(error).toBeInstanceOf(TokenSealError);
      expect(error.message).toContain(`TOKEN_ENCRYPTION_KEY ${said}`);
      expect(error.message).toContain('openssl rand -base64 32');
      if (text !== '') expect(error.message).not.toContain(text);
    }
  });

  it('names the previous key when it is the wrong one', () => {
    const error = errorOf(() => new TokenSealer(newKey(), randomBytes(24).toString('base64')));
    expect(error.message).toMatch(/^TOKEN_ENCRYPTION_KEY_PREVIOUS decodes to 24 bytes/);
  });
});
