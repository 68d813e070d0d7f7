import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toJsonb } from '../../src/core/storable-text.ts';
import { createPool, transaction, type Pool } from '../../src/db/pool.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

/** Issue #47 §6: a NUL in any string parameter no longer fails its statement. */
describe('the pool stores any text', () => {
  let db: TestDatabase;
  let pool: Pool;
  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool(db.url, 2);
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it('stores a text parameter holding a NUL, with U+FFFD in its place', async () => {
    const { rows } = await pool.query<{ t: string }>('SELECT $1::text AS t', ['a\0b']);
    expect(rows[0]!.t).toBe('a\ufffdb');
  });

  it('does so for a query given as an object, and inside a transaction', async () => {
    const { rows } = await pool.query<{ t: string }>({ text: 'SELECT $1::text AS t', values: ['c\0'] });
    expect(rows[0]!.t).toBe('c\ufffd');
    const inside = await transaction(pool, (client) => client.query<{ t: string }>('SELECT $1::text AS t', ['\0']));
    expect(inside.rows[0]!.t).toBe('\ufffd');
  });

  it('stores jsonb serialized with toJsonb, which JSON.stringify’s text Postgres refuses', async () => {
    const value = { out: 'a\0b', half: '\udc00', 'k\0': 1 };
    await expect(pool.query('SELECT $1::jsonb', [JSON.stringify(value)])).rejects.toThrow(/Unicode escape/);
    const { rows } = await pool.query<{ j: Record<string, unknown> }>('SELECT $1::jsonb AS j', [toJsonb(value)]);
    expect(rows[0]!.j).toEqual({ out: 'a\ufffdb', half: '\ufffd', 'k\ufffd': 1 });
  });

  it('leaves a written-out escape in plain text as it is', async () => {
    const { rows } = await pool.query<{ t: string }>('SELECT $1::text AS t', ['say "\\u0000"']);
    expect(rows[0]!.t).toBe('say "\\u0000"');
  });
});
