import { transaction } from '../db/pool.ts';
import type { ToolCall } from '../agent/messages.ts';
import type { GrantUse } from '../agent/call-ruling.ts';
import { personKey, type Requester } from '../core/person.ts';
import type { ReplyTarget } from '../core/reply-target.ts';
import type { WorkItem } from '../core/work-item.ts';
import type { ApprovalContext } from './context.ts';
import { describeArgs, grantCovers, placesCovering, policyStillAllows, ruleName, type Grant } from './grants.ts';
import { judgeAndDecide } from './taint.ts';
import { claimGrantUse, findGrant, listLiveGrants, liveGrantsFor, revokeGrant } from './grant-store.ts';
import { audit } from './store.ts';
import { makeVisible } from './card.ts';

/** A time as grants show it: "2026-12-01 14:00 UTC". */
function grantTime(date: Date): string {
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

function grantCreator(grant: Grant): string {
  return makeVisible(grant.createdBy.displayName ?? personKey(grant.createdBy));
}

/**
 * A live grant that covers this call, claimed for it. The loop asks this where it would otherwise
 * park the call, and the claim, its count and its audit row commit together; the claim re-checks the
 * row (unrevoked, unexpired) under its lock, so a revocation committed a moment earlier is seen and
 * a concurrent one waits for this claim. The policy in force must still let the call be granted
 * (see `policyStillAllows`).
 */
export async function useGrant(ctx: ApprovalContext, item: WorkItem, call: ToolCall): Promise<GrantUse | undefined> {
  if (!ctx.settings.grantTtlSeconds) return undefined;
  const { decision, judged: real } = await judgeAndDecide(
    ctx,
    ctx.pool,
    call,
    item.requester,
    item.reply,
    item.conversationId,
  );
  if (!decision.grantable) return undefined;
  const where = ctx.gate.whereOf(item.reply);
  // Read without a transaction: most calls have no grant, and the claim below re-checks the row anyway.
  const places = placesCovering(where);
  const live = (await Promise.all(places.map((place) => liveGrantsFor(ctx.pool, call.name, place)))).flat();
  // Judged where the paths really lead, as the grant's own arguments were when it was offered.
  const judged = { name: call.name, args: real.args };
  const covering = live.find((g) => grantCovers(g, judged, where) && policyStillAllows(g, decision));
  if (!covering) return undefined;
  return transaction(ctx.pool, async (client) => {
    const grant = await claimGrantUse(client, covering.id);
    if (!grant) return undefined;
    await audit(client, {
      event: 'grant_used',
      actor: item.requester,
      detail: {
        workItemId: item.id,
        call: call.id,
        tool: call.name,
        grant: grant.id,
        rule: ruleName(decision.rule),
      },
    });
    ctx.log.info({ grant: grant.id, tool: call.name, workItemId: item.id }, 'call allowed by a standing grant');
    return {
      grantId: grant.id,
      grantedBy: grant.createdBy,
      note: `allowed by a grant from ${grantCreator(grant)}, expires ${grantTime(grant.expiresAt)}`,
    };
  });
}

/**
 * The grants a person sees from a place: the ones that apply there (in a private thread, its own and
 * its parent channel's; in the parent, never the thread's), and (in a DM) the ones they made anywhere.
 */
export async function grantsSeenFrom(ctx: ApprovalContext, person: Requester, reply: ReplyTarget): Promise<Grant[]> {
  const where = ctx.gate.whereOf(reply);
  const lists = await Promise.all(placesCovering(where).map((place) => listLiveGrants(ctx.pool, { place })));
  const here = lists.flat();
  if (!where.dm) return here;
  const mine = await listLiveGrants(ctx.pool, { createdBy: personKey(person) });
  const seen = new Set(here.map((g) => g.id));
  // `createdBy` in SQL is the platform and id; an id another Slack workspace issued is someone else.
  return [...here, ...mine.filter((g) => !seen.has(g.id) && ctx.gate.sameAccount(g.createdBy, person))];
}

export type RevokeResult = { ok: true; grant: Grant } | { ok: false; reason: string };

/**
 * Revokes a grant for a person in chat: its creator, or an approver where it applies, may. Takes
 * effect for every worker at once: the next claim re-reads the row.
 */
export async function revokeFromChat(ctx: ApprovalContext, grantId: string, by: Requester): Promise<RevokeResult> {
  const grant = await findGrant(ctx.pool, grantId);
  if (!grant || grant.revokedAt || grant.expiresAt.getTime() <= Date.now())
    return { ok: false, reason: 'That grant no longer applies (revoked or expired); nothing to do.' };
  const place: ReplyTarget = {
    platform: grant.place.platform,
    channel: grant.place.channel,
    ...(grant.place.workspace ? { workspace: grant.place.workspace } : {}),
  };
  const mayRevoke = ctx.gate.sameAccount(by, grant.createdBy) || ctx.gate.isApprover(by, place);
  if (!mayRevoke) return { ok: false, reason: 'Only whoever made this grant, or an approver, can revoke it.' };
  return revoke(ctx, grantId, by);
}

/** Revokes a grant (the CLI: the operator may revoke any). */
export async function revoke(
  ctx: Pick<ApprovalContext, 'pool'>,
  grantId: string,
  by: Requester,
): Promise<RevokeResult> {
  const revoked = await transaction(ctx.pool, async (client) => {
    const grant = await revokeGrant(client, grantId, by);
    if (grant)
      await audit(client, { event: 'grant_revoked', actor: by, detail: { grant: grant.id, tool: grant.tool } });
    return grant;
  });
  return revoked
    ? { ok: true, grant: revoked }
    : { ok: false, reason: 'That grant no longer applies (revoked or expired); nothing to do.' };
}

/** One grant as a list shows it (Markdown): what it covers, who made it, until when, how often used. */
export function describeGrant(grant: Grant): string {
  const what = `\`${makeVisible(grant.tool)}\` with ${describeArgs(grant.args)}`;
  const exact = Object.entries(grant.args).filter(([, a]) => 'eq' in a);
  const shown =
    exact.length > 0
      ? ` — ${exact
          .map(
            ([k, a]) =>
              `${makeVisible(k)}=${makeVisible(JSON.stringify((a as { eq: unknown }).eq) ?? 'null').slice(0, 120)}`,
          )
          .join(', ')}`
      : '';
  const uses = `used ${grant.uses} time${grant.uses === 1 ? '' : 's'}`;
  return (
    `**${grant.id.slice(0, 8)}** · ${what}${shown} · ${grant.place.dm ? 'in a DM' : `in ${grant.place.platform} channel ${grant.place.channel}`}` +
    ` · by ${grantCreator(grant)} · expires ${grantTime(grant.expiresAt)} · ${uses}`
  );
}

/** What `/countersign grants` says when there is nothing to list. */
export const NO_GRANTS =
  'No standing grants apply here. "Always allow here" on an approval card creates one; it is listed here with a Revoke button.';
