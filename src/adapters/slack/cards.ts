import type { ApprovalCard, CardRenderer, ClickedMessage } from '../../core/approval-card.ts';
import { replacedThroughClick } from '../../approval/card-renderers.ts';
import type { ReplyTarget } from '../../core/reply-target.ts';
import { cardText } from '../../approval/card.ts';
import { approvalCardPages, ownerMention } from './blocks.ts';
import { fitMrkdwn } from './format/index.ts';
import { LIMITS } from './limits.ts';
import type { SlackOutbound } from './outbound.ts';

/** Slack ts values contain a dot, never a comma: a card of several messages is their ts joined. */
const CARD_ID_SEPARATOR = ',';

/**
 * Approval cards as Block Kit messages, one or more (see `approvalCardPages`); the text card is the
 * first message's notification and fallback text. An update edits every message of the card.
 */
export class SlackCardRenderer implements CardRenderer {
  readonly platform = 'slack';
  readonly #outbound: SlackOutbound;

  constructor(outbound: SlackOutbound) {
    this.#outbound = outbound;
  }

  async show(
    target: ReplyTarget,
    card: ApprovalCard,
    messageId?: string,
    clicked?: ClickedMessage,
  ): Promise<{ messageId: string }> {
    const pages = approvalCardPages(card);
    // The first message's text is its notification: it carries the owner's mention too.
    const mention = ownerMention(card);
    const fallback = (i: number) =>
      i === 0
        ? `${mention ? `${mention} ` : ''}${fitMrkdwn(cardText(card), LIMITS.sectionText)}`
        : `Approval card, part ${i + 1} of ${pages.length}`;
    if (messageId) {
      const ids = messageId.split(CARD_ID_SEPARATOR);
      // The number of messages depends only on the number of calls, so a card never gains one.
      for (const [i, blocks] of pages.entries()) {
        const id = ids[i];
        if (!id) continue;
        // The clicked message through the click's response_url: outside the chat.update budget.
        const replaced = await replacedThroughClick(clicked, id, { text: fallback(i), blocks });
        if (!replaced) await this.#outbound.postBlocks(target, fallback(i), blocks, id);
      }
      return { messageId };
    }
    const posted: string[] = [];
    try {
      // In order, so Approve all (on the last message) appears only after every call it covers.
      for (const [i, blocks] of pages.entries()) {
        posted.push((await this.#outbound.postBlocks(target, fallback(i), blocks)).messageId);
      }
    } catch (error) {
      // The show-card job posts the whole card again; no half card with live buttons is left behind.
      for (const id of posted) await this.#outbound.deleteMessage(target, id);
      throw error;
    }
    return { messageId: posted.join(CARD_ID_SEPARATOR) };
  }
}
