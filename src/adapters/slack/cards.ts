import type { ApprovalCard, CardRenderer } from '../../core/approval-card.ts';
import type { ReplyTarget } from '../../core/reply-target.ts';
import { cardText } from '../../approval/card.ts';
import { approvalCardBlocks } from './blocks.ts';
import { markdownToMrkdwn } from './format/index.ts';
import { LIMITS } from './limits.ts';
import type { SlackOutbound } from './outbound.ts';

/** Approval cards as Block Kit messages; the text card is their notification and fallback text. */
export class SlackCardRenderer implements CardRenderer {
  readonly platform = 'slack';
  readonly #outbound: SlackOutbound;

  constructor(outbound: SlackOutbound) {
    this.#outbound = outbound;
  }

  show(target: ReplyTarget, card: ApprovalCard, messageId?: string): Promise<{ messageId: string }> {
    const text = markdownToMrkdwn(cardText(card)).slice(0, LIMITS.sectionText);
    return this.#outbound.postBlocks(target, text, approvalCardBlocks(card), messageId);
  }
}
