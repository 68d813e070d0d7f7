import { z } from 'zod';
import { LIMITS } from '../limits.ts';

/**
 * Button `custom_id`s: the only state a click carries back. Formats:
 *   `ap:<nonce>:a<i>` approve call i · `ap:<nonce>:d<i>` deny call i
 *   `ap:<nonce>:aa`  approve all    · `ap:<nonce>:da`  deny all
 *   `stop:<turnId>`  stop a running turn
 * A nonce is URL-safe base64 (or any `[A-Za-z0-9_-]`), short enough that every id fits
 * Discord's 100-character custom_id.
 */

const NONCE_MAX = 80;
const nonce = z
  .string()
  .regex(/^[A-Za-z0-9_-]+$/, 'a nonce is URL-safe base64')
  .min(1)
  .max(NONCE_MAX);

export const ApprovalDecision = z.enum(['approve', 'deny']);
export type ApprovalDecision = z.infer<typeof ApprovalDecision>;

export const ApprovalClick = z.object({
  nonce,
  decision: ApprovalDecision,
  /** The call's index on the card, or `all` for the Approve all / Deny all buttons. */
  call: z.union([z.number().int().min(0).max(99), z.literal('all')]),
});
export type ApprovalClick = z.infer<typeof ApprovalClick>;

const APPROVAL_ID = /^ap:([^:]+):([ad])(a|\d{1,2})$/;

export function approvalCustomId(click: ApprovalClick): string {
  const { nonce: n, decision, call } = ApprovalClick.parse(click);
  const id = `ap:${n}:${decision === 'approve' ? 'a' : 'd'}${call === 'all' ? 'a' : String(call)}`;
  assertCustomIdFits(id);
  return id;
}

/** The click a button's custom_id stands for, or undefined for any id this module did not build. */
export function parseApprovalCustomId(customId: string): ApprovalClick | undefined {
  if (customId.length > LIMITS.customId) return undefined;
  const m = APPROVAL_ID.exec(customId);
  if (!m) return undefined;
  const parsed = ApprovalClick.safeParse({
    nonce: m[1],
    decision: m[2] === 'a' ? 'approve' : 'deny',
    call: m[3] === 'a' ? 'all' : Number(m[3]),
  });
  return parsed.success ? parsed.data : undefined;
}

const turnId = z
  .string()
  .regex(/^[A-Za-z0-9_-]+$/)
  .min(1)
  .max(LIMITS.customId - 'stop:'.length);

export function stopCustomId(id: string): string {
  return `stop:${turnId.parse(id)}`;
}

/** The turn a Stop button stops, or undefined for any other custom_id. */
export function parseStopCustomId(customId: string): string | undefined {
  if (!customId.startsWith('stop:')) return undefined;
  const parsed = turnId.safeParse(customId.slice('stop:'.length));
  return parsed.success ? parsed.data : undefined;
}

function assertCustomIdFits(id: string): void {
  if (id.length > LIMITS.customId) {
    throw new Error(`custom_id "${id}" is ${id.length} characters; Discord accepts at most ${LIMITS.customId}`);
  }
}
