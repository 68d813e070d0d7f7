import { z } from 'zod';
import type { Queryable } from '../db/pool.ts';
import { Requester } from '../core/person.ts';
import { GrantArg, type Grant, type GrantOffer, type GrantPlace } from './grants.ts';

/** SQL of standing grants (countersign.grants). One statement per function; times are the database's. */

const GrantRow = z.object({
  id: z.string(),
  tool: z.string(),
  args: z.record(z.string(), GrantArg),
  platform: z.string(),
  workspace: z.string(),
  channel: z.string(),
  dm: z.boolean(),
  covers: z.string(),
  rule: z.string(),
  created_by: Requester,
  created_at: z.date(),
  expires_at: z.date(),
  revoked_at: z.date().nullable(),
  uses: z.number(),
});

function toGrant(raw: unknown): Grant {
  const row = GrantRow.parse(raw);
  return {
    id: row.id,
    tool: row.tool,
    args: row.args,
    place: { platform: row.platform, workspace: row.workspace, channel: row.channel, dm: row.dm },
    covers: row.covers,
    rule: row.rule,
    createdBy: row.created_by,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    ...(row.revoked_at ? { revokedAt: row.revoked_at } : {}),
    uses: row.uses,
  };
}

export async function insertGrant(
  db: Queryable,
  id: string,
  offer: GrantOffer,
  by: Requester,
  rule: string,
  envelopeId: string,
): Promise<Grant> {
  const { rows } = await db.query(
    `INSERT INTO countersign.grants
       (id, tool, args, platform, workspace, channel, dm, covers, rule, created_by, envelope_id, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, now() + make_interval(secs => $12))
     RETURNING *`,
    [
      id,
      offer.tool,
      JSON.stringify(offer.args),
      offer.place.platform,
      offer.place.workspace,
      offer.place.channel,
      offer.place.dm,
      offer.covers,
      rule,
      JSON.stringify(by),
      envelopeId,
      offer.ttlSeconds,
    ],
  );
  return toGrant(rows[0]);
}

/** The live grants for a tool in a place, oldest first; `claimGrantUse` is what decides a use. */
export async function liveGrantsFor(db: Queryable, tool: string, place: GrantPlace): Promise<Grant[]> {
  const { rows } = await db.query(
    `SELECT * FROM countersign.grants
      WHERE platform = $1 AND workspace = $2 AND channel = $3 AND dm = $4 AND tool = $5
        AND revoked_at IS NULL AND expires_at > now()
      ORDER BY created_at`,
    [place.platform, place.workspace, place.channel, place.dm, tool],
  );
  return rows.map(toGrant);
}

/**
 * Claims one use of a grant that is still live: an UPDATE, so it takes the row's lock and re-reads
 * the row under it. A revocation committed before finds no row here; one running at the same time
 * waits for the claim's transaction (or this waits for it, then sees the grant revoked).
 */
export async function claimGrantUse(db: Queryable, id: string): Promise<Grant | undefined> {
  const { rows } = await db.query(
    `UPDATE countersign.grants SET uses = uses + 1, last_used_at = now()
      WHERE id = $1 AND revoked_at IS NULL AND expires_at > now()
      RETURNING *`,
    [id],
  );
  return rows[0] ? toGrant(rows[0]) : undefined;
}

export async function findGrant(db: Queryable, id: string): Promise<Grant | undefined> {
  if (!/^[0-9a-f-]{36}$/.test(id)) return undefined;
  const { rows } = await db.query(`SELECT * FROM countersign.grants WHERE id = $1`, [id]);
  return rows[0] ? toGrant(rows[0]) : undefined;
}

/** Grants that still apply (unrevoked, unexpired), newest first; filtered by place and/or creator. */
export async function listLiveGrants(
  db: Queryable,
  filter: { place?: Pick<GrantPlace, 'platform' | 'workspace' | 'channel'>; createdBy?: string; limit?: number } = {},
): Promise<Grant[]> {
  const { rows } = await db.query(
    `SELECT * FROM countersign.grants
      WHERE revoked_at IS NULL AND expires_at > now()
        AND ($1::text IS NULL OR (platform = $1 AND workspace = $2 AND channel = $3))
        AND ($4::text IS NULL OR created_by->>'platform' || ':' || (created_by->>'userId') = $4)
      ORDER BY created_at DESC
      LIMIT $5`,
    [
      filter.place?.platform ?? null,
      filter.place?.workspace ?? null,
      filter.place?.channel ?? null,
      filter.createdBy ?? null,
      filter.limit ?? 100,
    ],
  );
  return rows.map(toGrant);
}

/** Revokes a live grant; undefined when there is none by that id, or it was already revoked or expired. */
export async function revokeGrant(db: Queryable, id: string, by: Requester): Promise<Grant | undefined> {
  if (!/^[0-9a-f-]{36}$/.test(id)) return undefined;
  const { rows } = await db.query(
    `UPDATE countersign.grants SET revoked_at = now(), revoked_by = $2
      WHERE id = $1 AND revoked_at IS NULL AND expires_at > now()
      RETURNING *`,
    [id, JSON.stringify(by)],
  );
  return rows[0] ? toGrant(rows[0]) : undefined;
}
