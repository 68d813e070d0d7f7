import type { ApprovalCard } from '../core/approval-card.ts';
import { personKey } from '../core/person.ts';
import { ReplyTarget } from '../core/reply-target.ts';
import { formatPattern } from '../policy/index.ts';
import type { ApprovalContext } from './context.ts';
import { parseCalls, type CardCopy, type EnvelopeRow } from './envelope.ts';
import { addCardCopy } from './store.ts';

/** DMs one card may send: a longer approver list should use an approvals channel. */
const MAX_CARD_DMS = 10;

/** Where copies of a card go, and what the requester's card says about it. */
export interface Route {
  /** The approvals channel, or each approver's DM; empty when nobody else needs to see the card. */
  destinations: Array<{ kind: 'channel' } | { kind: 'dm'; user: string }>;
  /** For the requester's card: "Sent to … for a countersignature." */
  note?: string;
}

/**
 * A card that needs someone other than the requester (a `countersign` call) goes where those people
 * are: the platform's approvals channel (APPROVAL_CHANNEL) when there is one, else a DM to each
 * approver named as a person on this platform (roles and user groups cannot be messaged).
 */
export function routeOf(ctx: ApprovalContext, envelope: EnvelopeRow): Route {
  const calls = parseCalls(envelope);
  const needsOthers = calls.filter((c) => c.policy?.outcome === 'countersign' && c.policy.approvers.length > 0);
  if (needsOthers.length === 0) return { destinations: [] };
  const reply = ReplyTarget.parse(envelope.reply);
  const channel = ctx.settings.approvalChannels?.[reply.platform];
  if (channel) {
    if (channel === reply.channel) return { destinations: [] };
    return {
      destinations: [{ kind: 'channel' }],
      note: 'Sent to the approvals channel for a countersignature.',
    };
  }
  const requester = personKey(envelope.requester);
  const users = new Set<string>();
  for (const call of needsOthers) {
    for (const p of call.policy!.approvers) {
      if (p.kind !== 'user' || p.platform !== reply.platform) continue;
      if (`${p.platform}:${p.user}` === requester) continue;
      users.add(p.user);
    }
  }
  const dms = [...users].slice(0, MAX_CARD_DMS);
  if (dms.length === 0) return { destinations: [] };
  return {
    destinations: dms.map((user) => ({ kind: 'dm' as const, user })),
    note: `Sent by direct message to ${dms.map((u) => formatPattern({ kind: 'user', platform: reply.platform, user: u })).join(', ')} for a countersignature.`,
  };
}

/** The copy's line: who asked, with a link back to the conversation when the platform gives one. */
async function originOf(ctx: ApprovalContext, envelope: EnvelopeRow, card: ApprovalCard): Promise<string> {
  const reply = ReplyTarget.parse(envelope.reply);
  const outbound = ctx.outbounds.for(reply);
  const link =
    envelope.card_message_id && outbound.linkTo
      ? await outbound.linkTo(reply, envelope.card_message_id.split(',')[0]!).catch(() => undefined)
      : undefined;
  return link
    ? `Asked by ${card.requesterLabel} — [open the conversation](${link})`
    : `Asked by ${card.requesterLabel} in another conversation`;
}

/**
 * Posts the copies `route` asks for that the envelope does not have yet (the show-card job may run
 * again after a crash), and records each. A copy that cannot be sent is logged and skipped: the
 * card in the requester's conversation is already there.
 */
export async function sendCopies(ctx: ApprovalContext, envelope: EnvelopeRow, card: ApprovalCard): Promise<void> {
  const route = routeOf(ctx, envelope);
  if (route.destinations.length === 0) return;
  const reply = ReplyTarget.parse(envelope.reply);
  const outbound = ctx.outbounds.for(reply);
  const origin = await originOf(ctx, envelope, card);
  for (const destination of route.destinations) {
    try {
      let target: ReplyTarget;
      if (destination.kind === 'channel') {
        target = { platform: reply.platform, channel: ctx.settings.approvalChannels![reply.platform]! };
        if (reply.workspace) target.workspace = reply.workspace;
      } else {
        if (!outbound.directChannel) return;
        target = await outbound.directChannel(destination.user, reply.workspace);
      }
      if (envelope.card_copies.some((c) => c.reply.channel === target.channel)) continue;
      const shown = await ctx.cards.for(target).show(target, { ...card, origin, routedTo: undefined });
      const copy: CardCopy = { reply: target, messageId: shown.messageId, origin };
      await addCardCopy(ctx.pool, envelope.id, copy);
    } catch (error) {
      ctx.log.warn({ err: error, envelopeId: envelope.id, destination }, 'could not send a copy of an approval card');
    }
  }
}

/** Updates every copy like the card itself; a failure is logged, never undoes the decision. */
export async function refreshCopies(ctx: ApprovalContext, envelope: EnvelopeRow, card: ApprovalCard): Promise<void> {
  for (const copy of envelope.card_copies) {
    try {
      await ctx.cards
        .for(copy.reply)
        .show(
          copy.reply,
          { ...card, ...(copy.origin ? { origin: copy.origin } : {}), routedTo: undefined },
          copy.messageId,
        );
    } catch (error) {
      ctx.log.warn({ err: error, envelopeId: envelope.id }, 'could not update a copy of an approval card');
    }
  }
}
