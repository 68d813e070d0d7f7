import { z } from 'zod';
import { buttonValue } from '../../../core/buttons.ts';
import { STOP_BUTTON_PREFIX } from '../../../core/buttons.ts';
import { LIMITS } from '../limits.ts';

/**
 * Button `custom_id`s: the only state a click carries back. They are exactly the platform-neutral
 * button values every adapter uses, so one click path (`ApprovalService.click`, `stopTurn`) serves
 * Slack, Discord and the console alike:
 *   `<nonce>.a<i>` approve call i · `<nonce>.d<i>` deny call i
 *   `<nonce>.A`    approve all    · `<nonce>.D`    deny all
 *   `stop:<turnId>` stop a running turn
 * A nonce is URL-safe base64 (`[A-Za-z0-9_-]`, never a dot), short enough that every id fits
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

const APPROVAL_ID = /^([A-Za-z0-9_-]+)\.(?:([AD])|([ad])(\d{1,2}))$/;

export function approvalCustomId(click: ApprovalClick): string {
  const { nonce: n, decision, call } = ApprovalClick.parse(click);
  const code = call === 'all' ? (decision === 'approve' ? 'A' : 'D') : `${decision === 'approve' ? 'a' : 'd'}${call}`;
  const id = buttonValue(n, code);
  assertCustomIdFits(id);
  return id;
}

/** The click a button's custom_id stands for, or undefined for any id that is not an approval button. */
export function parseApprovalCustomId(customId: string): ApprovalClick | undefined {
  if (customId.length > LIMITS.customId) return undefined;
  const m = APPROVAL_ID.exec(customId);
  if (!m) return undefined;
  const all = m[2];
  const parsed = ApprovalClick.safeParse(
    all
      ? { nonce: m[1], decision: all === 'A' ? 'approve' : 'deny', call: 'all' }
      : { nonce: m[1], decision: m[3] === 'a' ? 'approve' : 'deny', call: Number(m[4]) },
  );
  return parsed.success ? parsed.data : undefined;
}

const turnId = z
  .string()
  .regex(/^[A-Za-z0-9_-]+$/)
  .min(1)
  .max(LIMITS.customId - STOP_BUTTON_PREFIX.length);

export function stopCustomId(id: string): string {
  return `${STOP_BUTTON_PREFIX}${turnId.parse(id)}`;
}

/** The turn a Stop button stops, or undefined for any other custom_id. */
export function parseStopCustomId(customId: string): string | undefined {
  if (!customId.startsWith(STOP_BUTTON_PREFIX)) return undefined;
  const parsed = turnId.safeParse(customId.slice(STOP_BUTTON_PREFIX.length));
  return parsed.success ? parsed.data : undefined;
}

function assertCustomIdFits(id: string): void {
  if (id.length > LIMITS.customId) {
    throw new Error(`custom_id "${id}" is ${id.length} characters; Discord accepts at most ${LIMITS.customId}`);
  }
}
