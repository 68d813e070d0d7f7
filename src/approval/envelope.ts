import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { Requester } from '../core/person.ts';
import { CallDecision, ContentPin } from '../core/work-item.ts';
import { ReplyTarget } from '../core/reply-target.ts';
import { canonicalJson } from './canonical-json.ts';
import { GrantOffer } from './grants.ts';

/** 24 random bytes = 192 bits, base64url: 32 characters. */
export function newNonce(): string {
  return randomBytes(24).toString('base64url');
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** A person or group as the policy wrote it (src/policy/person.ts), stored with the call it may decide. */
const PersonPattern = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('user'), platform: z.string(), workspace: z.string().optional(), user: z.string() }),
  z.object({ kind: z.literal('members'), platform: z.string(), workspace: z.string() }),
  // `prefix`: how the policy wrote the group; rows stored before it was kept have none.
  z.object({ kind: z.literal('group'), platform: z.string(), group: z.string(), prefix: z.string().optional() }),
]);

/** The policy's decision that put a call on the card: who may decide it is read from here at click time. */
export const CallPolicy = z.object({
  outcome: z.enum(['ask', 'countersign']),
  rule: z.object({ name: z.string(), source: z.string() }),
  approvers: z.array(PersonPattern),
  home: z.array(z.string()),
  /** What "Always allow here" would grant, when the policy lets this call become a standing grant. */
  grant: GrantOffer.optional(),
  /** Why the card asks what it asks: files changed since the last countersigned run, paths that lead elsewhere. */
  why: z.string().optional(),
  /**
   * The digest of the workspace state the card named, which a countersignature vouches for
   * (taint.ts). Cards stored before #47 hold change ids: they never match, so such a run is refused.
   */
  vouchesFor: z.union([z.string(), z.array(z.number().int())]).optional(),
  /** The bytes the card showed (share_file): an approval covers only these (resume.ts). */
  content: ContentPin.optional(),
  /**
   * Others who count as the requester for the second signature (a change's other authors, each
   * `platform:user`): none of them may countersign it.
   */
  coRequesters: z.array(z.string()).optional(),
  /**
   * The call waits only for its requester to connect a per-person server (the policy lets it run):
   * connecting lets it go on. A call the policy asks about anyway still waits for a click.
   */
  onlyForConnection: z.boolean().optional(),
});
export type CallPolicy = z.infer<typeof CallPolicy>;

/** One call a person is asked to decide on, as shown on the card and hashed into the plan. */
export const PlannedCall = z.object({
  id: z.string().min(1),
  name: z.string().min(1),
  args: z.record(z.string(), z.unknown()),
  risk: z.enum(['low', 'medium', 'high']),
  /** Absent on envelopes stored before the policy: those follow APPROVERS and the two-person rule. */
  policy: CallPolicy.optional(),
});
export type PlannedCall = z.infer<typeof PlannedCall>;

export function planHash(callsCanonical: string): string {
  return sha256(callsCanonical);
}

/** What the calls would run against; if any of it changes between request and click, the click is refused. */
export const ApprovalScope = z.object({
  agent: z.string(),
  workspaceRoot: z.string(),
  tools: z.array(z.object({ name: z.string(), version: z.string() })),
  skills: z.string(),
});
export type ApprovalScope = z.infer<typeof ApprovalScope>;

export function scopeHash(scope: ApprovalScope): string {
  return sha256(canonicalJson(scope));
}

/** A copy of the card shown where approvers will see it, updated with the card. */
export const CardCopy = z.object({
  reply: ReplyTarget,
  messageId: z.string().min(1),
  /** The copy's line saying who asked, and where (with a link back when the platform has one). */
  origin: z.string().optional(),
});
export type CardCopy = z.infer<typeof CardCopy>;

export const EnvelopeRow = z.object({
  id: z.string(),
  nonce: z.string(),
  kind: z.enum(['tools', 'question']),
  context_id: z.string(),
  work_item_id: z.string(),
  conversation_id: z.string(),
  requester: Requester,
  approvers: z.array(z.string()),
  two_person_rule: z.boolean(),
  calls: z.string(),
  plan_hash: z.string(),
  scope: ApprovalScope,
  scope_hash: z.string(),
  turn_state: z.unknown(),
  reply: z.unknown(),
  card_message_id: z.string().nullable(),
  card_copies: z.array(CardCopy).default([]),
  status: z.enum(['pending', 'consumed', 'expired', 'superseded']),
  partial_decisions: z.array(CallDecision.extend({ by: Requester })),
  /** `partial_decisions` exactly as read, for compare-and-set updates. */
  partial_decisions_read: z.string(),
  decisions: z.array(CallDecision).nullable(),
  decided_by: Requester.nullable(),
  decided_at: z.date().nullable(),
  continuation_work_item: z.string().nullable(),
  expires_at: z.date(),
  created_at: z.date(),
  /** Whether the envelope is past its expiry by the database's clock. */
  expired_now: z.boolean(),
});
export type EnvelopeRow = z.infer<typeof EnvelopeRow>;

/** The envelope's calls, parsed from the canonical JSON they were stored (and hashed) as. */
export function parseCalls(envelope: Pick<EnvelopeRow, 'calls'>): PlannedCall[] {
  return PlannedCall.array().parse(JSON.parse(envelope.calls));
}
