import { describe, expect, it } from 'vitest';
import { secretIn } from '../../src/files/secrets.ts';

describe('what secret a file seems to hold', () => {
  it('is a secret setting: a NAME=value line whose name holds a secret’s word, exported or indented', () => {
    expect(secretIn('export GITHUB_TOKEN=ghx1')).toBe('a secret setting');
    expect(secretIn('# db\n  DB_PASSWORD = hunter2\n')).toBe('a secret setting');
    expect(secretIn('\tSTRIPE_SECRET_KEY=sk')).toBe('a secret setting');
    expect(secretIn('name=TOKEN\nTOKEN=\nREGION=eu\n')).toBeUndefined();
  });

  it('is still the key, token or private key it was', () => {
    expect(secretIn('-----BEGIN OPENSSH PRIVATE KEY-----')).toBe('a private key');
    expect(secretIn('id AKIAABCDEFGHIJKLMNOP')).toBe('an AWS access key');
    expect(secretIn('xoxb-1234567890-abc')).toBe('a chat token');
  });

  // A file someone sent can be asked to be shared, and the check runs on the event loop: the old
  // setting pattern (`^\s*` crossing lines) took 22 s for 40 KB of blank lines, and was quadratic
  // on a line of secret words. These return at once now; before, each ran for minutes.
  it('reads blank lines, spaces and a line of secret words in one pass', () => {
    expect(secretIn('\n'.repeat(200_000))).toBeUndefined();
    expect(secretIn(' \n\t\r'.repeat(100_000))).toBeUndefined();
    expect(secretIn('SECRET'.repeat(200_000))).toBeUndefined();
    // `^` also starts a line after \r and U+2028/U+2029: 80,000 of them took 35 s with `[^\S\n]*`.
    expect(secretIn('\r'.repeat(200_000))).toBeUndefined();
    expect(secretIn('\u2028'.repeat(200_000))).toBeUndefined();
    expect(secretIn('\r  TOKEN=abc')).toBe('a secret setting');
    expect(secretIn(`${'SECRET'.repeat(200_000)}=1`)).toBe('a secret setting');
  });
});
