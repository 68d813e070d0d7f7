import type { Requester } from '../core/person.ts';
import type { ApprovalContext } from './context.ts';
import { decideAll } from './decide.ts';
import { parseCalls } from './envelope.ts';
import { findPendingEnvelopesOf } from './store.ts';

export type { ConnectionGate } from './context.ts';

/*
 * Per-person MCP servers as approvals see them (docs/connections.md; src/connections keeps the
 * tokens, the wiring hands this in): a call whose requester has not connected the server's account
 * waits on a card like any other, the requester gets a private Connect link, and connecting lets
 * the turn go on by itself.
 */

/** The card's line for a call that waits for the requester's connection. */
export function waitsForConnection(who: string, server: string): string {
  return `runs as ${who}'s own ${server} account, which is not connected yet: ${who} can connect it (a private link, or /countersign connect ${server}) and the turn goes on by itself; Deny goes on without it`;
}

/**
 * After a person connected `server`: their pending cards whose every call waited only for that
 * connection are approved in their name, so the parked turns go on (once each: the nonce is
 * single-use). A call the policy asks about anyway (a write, a countersignature) still waits for its
 * click. Returns how many went on.
 */
export async function continueAfterConnect(ctx: ApprovalContext, person: Requester, server: string): Promise<number> {
  let continued = 0;
  for (const envelope of await findPendingEnvelopesOf(ctx.pool, person)) {
    const calls = parseCalls(envelope);
    // Connecting is not approving: only calls that waited for nothing but this connection go on.
    const onlyThis = (c: (typeof calls)[number]) =>
      ctx.tools.get(c.name)?.mcp?.server === server && c.policy?.onlyForConnection === true;
    if (calls.length === 0 || !calls.every(onlyThis)) continue;
    const result = await decideAll(
      ctx,
      envelope.nonce,
      calls.map((c) => ({ toolCallId: c.id, approved: true })),
      envelope.requester,
    );
    if (result.ok) continued++;
    else ctx.log.info({ envelopeId: envelope.id, reason: result.reason }, 'a connected call still waits for a person');
  }
  return continued;
}
