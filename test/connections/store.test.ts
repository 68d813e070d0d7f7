import { randomBytes, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  clientOf,
  connectionOf,
  confirmStateInBrowser,
  consumeState,
  createState,
  deleteConnection,
  listConnections,
  saveClient,
  saveConnection,
  saveStateLink,
  saveStateVerifier,
  stateHash,
  sweepExpiredStates,
  touchConnection,
  type ConnectionPerson,
} from '../../src/connections/store.ts';
import { TokenSealer } from '../../src/connections/token-crypto.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createPool } from '../../src/db/pool.ts';
import { createLogger } from '../../src/log.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

const alice: ConnectionPerson = { platform: 'slack', userId: 'U0ALICE01', workspace: 'T0OPS0001' };
const bob: ConnectionPerson = { platform: 'slack', userId: 'U0BOB0001', workspace: 'T0OPS0001' };
// The same user id vouched for by another workspace is another person.
const aliceElsewhere: ConnectionPerson = { ...alice, workspace: 'T0OTHER01' };

const tokensOf = (who: string) => ({
  access_token: `at_${who}_${randomBytes(6).toString('hex')}`,
  refresh_token: `rt_${who}_${randomBytes(6).toString('hex')}`,
  token_type: 'Bearer',
  expires_in: 3600,
  issuer: 'https://auth.example.com/',
});

describe('connections store', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  const sealer = new TokenSealer(randomBytes(32).toString('base64'));

  /** Every column of every row of a table, as text: what someone reading the database sees. */
  async function rawTable(table: string): Promise<string> {
    const { rows } = await pool.query(`SELECT row_to_json(t)::text AS row FROM countersign.${table} t`);
    return rows.map((r: { row: string }) => r.row).join('\n');
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    await migrate(db.url, createLogger('silent'));
    pool = createPool(db.url, 8);
  });

  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  describe('connections', () => {
    it('keeps tokens as ciphertext at rest and gives them back in the clear', async () => {
      const tokens = tokensOf('alice');
      await saveConnection(pool, sealer, alice, 'github', { tokens, accountName: 'alice-gh', reconnected: true });

      const raw = await rawTable('connections');
      expect(raw).toContain('alice-gh');
      expect(raw).not.toContain(tokens.access_token);
      expect(raw).not.toContain(tokens.refresh_token);
      expect(raw).not.toContain('at_alice');

      const connection = await connectionOf(pool, sealer, alice, 'github');
      expect(connection?.tokens).toEqual(tokens);
      expect(connection?.accountName).toBe('alice-gh');
      const expiresIn = connection!.expiresAt!.getTime() - Date.now();
      expect(expiresIn).toBeGreaterThan(3500_000);
      expect(expiresIn).toBeLessThan(3700_000);
    });

    it('keys a connection by platform, user and workspace', async () => {
      expect(await connectionOf(pool, sealer, aliceElsewhere, 'github')).toBeUndefined();
      expect(await connectionOf(pool, sealer, bob, 'github')).toBeUndefined();
      expect(await connectionOf(pool, sealer, alice, 'jira')).toBeUndefined();
    });

    it('refuses a sealed token copied onto another person’s row', async () => {
      await saveConnection(pool, sealer, bob, 'github', { tokens: tokensOf('bob') });
      await pool.query(
        `UPDATE countersign.connections SET sealed_tokens =
           (SELECT sealed_tokens FROM countersign.connections WHERE user_id = $1 AND server = 'github')
         WHERE user_id = $2 AND server = 'github'`,
        [alice.userId, bob.userId],
      );
      await expect(connectionOf(pool, sealer, bob, 'github')).rejects.toThrow(/failed authentication/);
      await deleteConnection(pool, bob, 'github');
    });

    it('keeps connected_at and the account name on a refresh, and renews them on a reconnection', async () => {
      const before = (await connectionOf(pool, sealer, alice, 'github'))!;
      const refreshed = tokensOf('alice');
      await saveConnection(pool, sealer, alice, 'github', { tokens: refreshed });
      const after = (await connectionOf(pool, sealer, alice, 'github'))!;
      expect(after.tokens).toEqual(refreshed);
      expect(after.connectedAt).toEqual(before.connectedAt);
      expect(after.accountName).toBe('alice-gh');

      await saveConnection(pool, sealer, alice, 'github', { tokens: tokensOf('alice'), reconnected: true });
      const again = (await connectionOf(pool, sealer, alice, 'github'))!;
      expect(again.connectedAt.getTime()).toBeGreaterThan(before.connectedAt.getTime());
    });

    it('records the last use and deletes once', async () => {
      expect((await connectionOf(pool, sealer, alice, 'github'))?.lastUsedAt).toBeUndefined();
      expect(await touchConnection(pool, alice, 'github')).toBe(true);
      expect((await connectionOf(pool, sealer, alice, 'github'))?.lastUsedAt).toBeInstanceOf(Date);
      expect(await touchConnection(pool, bob, 'github')).toBe(false);

      await saveConnection(pool, sealer, alice, 'linear', { tokens: tokensOf('alice') });
      expect(await deleteConnection(pool, alice, 'linear')).toBe(true);
      expect(await deleteConnection(pool, alice, 'linear')).toBe(false);
      expect(await connectionOf(pool, sealer, alice, 'linear')).toBeUndefined();
    });

    it('lists a person’s connections, or everyone’s, without a token', async () => {
      await saveConnection(pool, sealer, bob, 'jira', { tokens: tokensOf('bob') });
      await saveConnection(pool, sealer, aliceElsewhere, 'jira', { tokens: tokensOf('alice') });

      const mine = await listConnections(pool, alice);
      expect(mine.map((c) => c.server)).toEqual(['github']);
      expect(mine[0]).toMatchObject({ platform: 'slack', userId: alice.userId, workspace: 'T0OPS0001' });

      const everyone = await listConnections(pool);
      expect(everyone.map((c) => `${c.workspace}/${c.userId}/${c.server}`)).toEqual([
        `T0OPS0001/${alice.userId}/github`,
        `T0OPS0001/${bob.userId}/jira`,
        `T0OTHER01/${alice.userId}/jira`,
      ]);
      const listed = JSON.stringify(everyone);
      expect(listed).not.toMatch(/at_|rt_|sealed|v1\./);
      for (const c of everyone) expect(Object.keys(c)).not.toContain('tokens');
    });
  });

  describe('client registrations', () => {
    const registration = (id: string) => ({
      client_id: id,
      client_secret: `secret-of-${id}-${randomBytes(6).toString('hex')}`,
      redirect_uris: ['https://bot.example.com/oauth/callback'],
      issuer: 'https://auth.example.com/',
    });

    it('keeps one per server, its secret sealed', async () => {
      const client = registration('client-1');
      expect(await saveClient(pool, sealer, 'github', client)).toBe(true);
      expect(await clientOf(pool, sealer, 'github')).toEqual(client);
      expect(await clientOf(pool, sealer, 'jira')).toBeUndefined();
      const raw = await rawTable('oauth_clients');
      expect(raw).toContain('client-1');
      expect(raw).not.toContain(client.client_secret);
    });

    it('keeps the first of two registrations made at once, and replaces only the one read', async () => {
      expect(await saveClient(pool, sealer, 'github', registration('client-2'))).toBe(false);
      expect(await saveClient(pool, sealer, 'github', registration('client-3'), 'client-2')).toBe(false);
      expect((await clientOf(pool, sealer, 'github'))?.client_id).toBe('client-1');
      expect(await saveClient(pool, sealer, 'github', registration('client-4'), 'client-1')).toBe(true);
      expect((await clientOf(pool, sealer, 'github'))?.client_id).toBe('client-4');
    });
  });

  describe('authorization states', () => {
    const turn = randomUUID();

    async function startedState(ttlSeconds = 600, person = alice): Promise<string> {
      const raw = await createState(pool, { person, server: 'github', workItemId: turn, ttlSeconds });
      expect(await saveStateVerifier(pool, sealer, raw, `verifier-${raw}`)).toBe(true);
      return raw;
    }

    it('stores only a hash of the state, and the verifier sealed', async () => {
      const raw = await startedState();
      expect(raw).toMatch(/^[\w-]{43}$/);
      const stored = await rawTable('oauth_states');
      expect(stored).not.toContain(raw);
      expect(stored).toContain(stateHash(raw));
    });

    it('binds a state to the confirming browser’s cookie hash, only while its link is usable', async () => {
      const raw = await startedState();
      // No Connect page link yet: nothing to confirm.
      expect(await confirmStateInBrowser(pool, raw, 'h0')).toBeUndefined();
      expect(await saveStateLink(pool, raw, 'https://auth.example.com/authorize?state=x', 'Alice')).toBe(true);
      const confirmed = await confirmStateInBrowser(pool, raw, 'h1');
      expect(confirmed?.authorizationUrl).toBe('https://auth.example.com/authorize?state=x');
      expect(confirmed!.secondsLeft).toBeGreaterThan(590);
      expect(await confirmStateInBrowser(pool, raw, 'h2')).toBeDefined();
      const consumed = await consumeState(pool, sealer, raw);
      expect(consumed.ok && consumed.state.browserHash).toBe('h2');
      expect(await confirmStateInBrowser(pool, raw, 'h3')).toBeUndefined();
    });

    it('gives the state back once, bound to the person, server and turn', async () => {
      const raw = await startedState();
      const first = await consumeState(pool, sealer, raw);
      expect(first).toEqual({
        ok: true,
        state: {
          person: { platform: 'slack', userId: alice.userId, workspace: 'T0OPS0001' },
          server: 'github',
          workItemId: turn,
          codeVerifier: `verifier-${raw}`,
          browserHash: null,
        },
      });
      expect(await consumeState(pool, sealer, raw)).toEqual({ ok: false, reason: 'replayed' });
    });

    it('refuses a forged state, and one whose authorization never got a verifier', async () => {
      expect(await consumeState(pool, sealer, randomBytes(32).toString('base64url'))).toEqual({
        ok: false,
        reason: 'forged',
      });
      const unfinished = await createState(pool, { person: alice, server: 'github', ttlSeconds: 600 });
      expect(await consumeState(pool, sealer, unfinished)).toEqual({ ok: false, reason: 'forged' });
    });

    it('refuses an expired state', async () => {
      const raw = await startedState(0);
      expect(await consumeState(pool, sealer, raw)).toEqual({ ok: false, reason: 'expired' });
    });

    it('lets exactly one of several simultaneous callbacks use a state', async () => {
      const raw = await startedState();
      const results = await Promise.all(Array.from({ length: 6 }, () => consumeState(pool, sealer, raw)));
      expect(results.filter((r) => r.ok)).toHaveLength(1);
      expect(results.filter((r) => !r.ok).map((r) => !r.ok && r.reason)).toEqual(Array(5).fill('replayed'));
    });

    it('does not save a verifier onto a used state', async () => {
      const raw = await startedState();
      await consumeState(pool, sealer, raw);
      expect(await saveStateVerifier(pool, sealer, raw, 'late')).toBe(false);
    });

    it('sweeps states that expired longer ago than the grace', async () => {
      const old = await startedState(0);
      const live = await startedState(600);
      await pool.query(
        `UPDATE countersign.oauth_states SET expires_at = now() - interval '2 days' WHERE state_hash = $1`,
        [stateHash(old)],
      );
      expect(await sweepExpiredStates(pool)).toBeGreaterThanOrEqual(1);
      expect(await consumeState(pool, sealer, old)).toEqual({ ok: false, reason: 'forged' });
      expect((await consumeState(pool, sealer, live)).ok).toBe(true);
    });
  });
});
