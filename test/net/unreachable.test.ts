import { describe, expect, it } from 'vitest';
import { whyUnreachable } from '../../src/net/unreachable.ts';

const coded = (code: string) => Object.assign(new Error(`connect ${code}`), { code });

describe('whyUnreachable', () => {
  it('words a socket code found two causes down, as the SDKs report it', () => {
    const error = new Error('Connection error.', {
      cause: new TypeError('fetch failed', { cause: coded('ENOTFOUND') }),
    });
    expect(whyUnreachable(error)).toBe('name not found');
  });

  it('reads the members of an AggregateError (happy eyeballs tries each address)', () => {
    const error = new TypeError('fetch failed', {
      cause: new AggregateError([coded('ECONNREFUSED'), coded('ECONNREFUSED')]),
    });
    expect(whyUnreachable(error)).toBe('connection refused');
  });

  it('says nothing for an error that is not about opening a connection', () => {
    expect(whyUnreachable(new Error('400 bad request'))).toBeUndefined();
    expect(whyUnreachable(coded('ECONNRESET'))).toBeUndefined();
    expect(whyUnreachable('a string')).toBeUndefined();
  });

  it('stops at a cause that points back at itself', () => {
    const looped = new Error('loop') as Error & { cause?: unknown };
    looped.cause = looped;
    expect(whyUnreachable(looped)).toBeUndefined();
  });
});
