import type { ReplyTarget } from './reply-target.ts';

/** A platform-neutral approval card: adapters render it as Block Kit, Discord components or text. */
export interface ApprovalCard {
  envelopeId: string;
  nonce: string;
  kind: 'tools' | 'question';
  calls: Array<{
    index: number;
    id: string;
    tool: string;
    /** The arguments as the card shows them: cut in the middle when long, saying so where it is cut. */
    argsPretty: string;
    /** All of the arguments, for the "Full arguments" path (a modal, an ephemeral reply, the console). */
    argsFull?: string;
    risk: 'low' | 'medium' | 'high';
    detail?: string;
    /** Who may decide this call and the policy rule that asked, as one line. */
    who?: string;
    /** What "Always allow here" would grant, in one sentence; absent when the policy offers no grant. */
    grant?: string;
  }>;
  question?: string;
  options?: string[];
  planHashPrefix: string;
  expiresAt: Date;
  requesterLabel: string;
  /**
   * On the card of a run nobody is watching (a scheduled run): the requester's user id on the card's
   * platform, which its renderer turns into a mention that notifies them. Absent: nobody is pinged.
   */
  mention?: string;
  state: 'pending' | 'decided' | 'expired' | 'refused' | 'superseded';
  /** On a copy sent to approvers: who asked, and where (Markdown, with a link back when there is one). */
  origin?: string;
  /** On the card in the requester's conversation: who else was sent the card. */
  routedTo?: string;
  /** `reason`: why a call did not run after all (the policy changed), or why it was denied. */
  decisions?: Array<{
    index: number;
    approved: boolean;
    answer?: string;
    reason?: string;
    /** The standing grant this approval also created. */
    grantId?: string;
    by: string;
  }>;
  decidedAt?: Date;
  /**
   * Set on a change card (docs/code-work.md): a single `merge_change` call whose Approve merges and
   * whose Deny discards. Renderers label those buttons with these words and add a "Full diff" button
   * (`fullDiffValue`) that shares the change's diff as a file; the diff is never inlined.
   */
  change?: { approveLabel: string; denyLabel: string; fullDiffValue: string };
}

/**
 * Shows approval cards in one platform's own UI (Block Kit, message components, a terminal prompt).
 * A platform without one gets the card as text with buttons through its outbound's post and edit.
 */
export interface CardRenderer {
  readonly platform: string;
  /**
   * Posts the card, or with `messageId` updates it in place; returns the id to update it by later.
   * With `clicked`, the card message the click came from is replaced through the click itself.
   */
  show(
    target: ReplyTarget,
    card: ApprovalCard,
    messageId?: string,
    clicked?: ClickedMessage,
  ): Promise<{ messageId: string }>;
}

/**
 * The message a click came from, answerable through the click itself (Slack's response_url,
 * Discord's interaction webhook). Those edits are outside the platform's message budgets (Slack's
 * per-workspace chat.update tier, Discord's global limit), so a decision shows at once even when
 * many cards are decided together; the budgets are left to the replies.
 */
export interface ClickedMessage {
  messageId: string;
  /** Replaces the clicked message with `payload`, the platform's own message body; throws if it could not. */
  replace(payload: unknown): Promise<void>;
}
