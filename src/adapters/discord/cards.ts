import type { ApprovalCard, CardRenderer, ClickedMessage } from '../../core/approval-card.ts';
import { replacedThroughClick } from '../../approval/card-renderers.ts';
import type { ReplyTarget } from '../../core/reply-target.ts';
import { cardButtons, cardText } from '../../approval/card.ts';
import {
  approvalCard,
  decidedApprovalCard,
  expiredApprovalCard,
  MessageFlag,
  NO_MENTIONS,
  refusedApprovalCard,
  supersededApprovalCard,
  replyButtonRows,
  type ApiMessagePayload,
  type ApprovalCardInput,
} from './components/index.ts';
import { neutralizeMentions } from './format/index.ts';
import { LIMITS } from './limits.ts';
import { DISCORD_RULES } from './rules.ts';
import type { DiscordOutbound } from './outbound.ts';

const CARD_ID_SEPARATOR = ',';
/** Card messages whose last payload a process remembers; the oldest is forgotten first. */
const CARD_MEMORY = 1000;

/**
 * Approval cards as Discord messages with components. A card may take several messages (see
 * `callPages`); its message id is their ids joined by commas (Discord ids are digits), so an update
 * patches every one of them.
 */
export class DiscordCardRenderer implements CardRenderer {
  readonly platform = 'discord';
  readonly #outbound: DiscordOutbound;
  /**
   * What this process last sent to each card message. A click on a card of several messages changes
   * one of them; patching only that one keeps a decision from spending the channel's 5 edits per
   * 5 seconds on unchanged messages. Another process's renderer starts empty and patches them all.
   */
  readonly #sent = new Map<string, string>();

  constructor(outbound: DiscordOutbound) {
    this.#outbound = outbound;
  }

  async show(
    target: ReplyTarget,
    card: ApprovalCard,
    messageId?: string,
    clicked?: ClickedMessage,
  ): Promise<{ messageId: string }> {
    const pages = renderCard(card);
    if (messageId) {
      const ids = messageId.split(CARD_ID_SEPARATOR);
      for (const [i, body] of pages.entries()) {
        const id = ids[i];
        // The layout depends only on the number of calls, so a card never gains a message.
        if (!id) break;
        const json = JSON.stringify(body);
        if (this.#sent.get(id) === json) continue;
        // The clicked message through the interaction's webhook: outside the bot's global limit.
        if (!(await replacedThroughClick(clicked, id, body))) await this.#outbound.patchPayload(target, id, body);
        this.#remember(id, json);
      }
      return { messageId };
    }
    const posted: string[] = [];
    try {
      // In order, so Approve all / Deny all (on the last message) appear only after every call.
      for (const body of pages) {
        const { messageId: id } = await this.#outbound.postPayload(target, body);
        posted.push(id);
        this.#remember(id, JSON.stringify(body));
      }
    } catch (error) {
      // The show-card job posts the whole card again; no half card with live buttons is left behind.
      for (const id of posted) await this.#outbound.deleteMessage(target, id);
      throw error;
    }
    return { messageId: posted.join(CARD_ID_SEPARATOR) };
  }

  #remember(messageId: string, json: string): void {
    this.#sent.delete(messageId);
    this.#sent.set(messageId, json);
    if (this.#sent.size > CARD_MEMORY) this.#sent.delete(this.#sent.keys().next().value!);
  }
}

/** The requester to ping on a card nobody watches: only a well-formed user id, so nobody else can be. */
function ownerToMention(card: ApprovalCard): string | undefined {
  return card.state === 'pending' && card.mention && DISCORD_RULES.ids.user.test(card.mention)
    ? card.mention
    : undefined;
}

/**
 * The approval card in Discord's components, one payload per message; button custom_ids are the
 * neutral `nonce.decision` values. Cards with calls keep their rich embed, so they cannot carry
 * SUPPRESS_EMBEDS (it hides that embed too); their `content` has its links wrapped instead.
 */
function renderCard(card: ApprovalCard): ApiMessagePayload[] {
  const owner = ownerToMention(card);
  if (card.kind === 'question') {
    const asked = neutralizeMentions(cardText(card));
    return [
      {
        content: (owner ? `<@${owner}> a scheduled run of yours asks: ${asked}` : asked).slice(
          0,
          LIMITS.messageContent,
        ),
        embeds: [],
        allowed_mentions: owner ? { parse: [], users: [owner] } : NO_MENTIONS,
        components: replyButtonRows(cardButtons(card)),
        flags: MessageFlag.suppressEmbeds,
      },
    ];
  }
  const input: ApprovalCardInput = {
    nonce: card.nonce,
    calls: card.calls.map((c) => ({
      index: c.index,
      tool: c.tool,
      argsPretty: c.argsPretty,
      risk: c.risk,
      ...(c.detail ? { detail: c.detail } : {}),
      ...(c.who ? { who: c.who } : {}),
      ...(c.argsFull ? { argsFull: c.argsFull } : {}),
      // A change card offers no standing grant, so it does not describe one.
      ...(c.grant && card.state === 'pending' && !card.change ? { grant: c.grant } : {}),
    })),
    planHashPrefix: card.planHashPrefix,
    expiresAt: card.expiresAt,
    requesterLabel: card.requesterLabel,
    ...(owner ? { mention: owner } : {}),
    ...(card.origin || card.routedTo ? { note: (card.origin ?? card.routedTo)! } : {}),
    ...(card.change ? { change: card.change } : {}),
  };
  const outcomes = (card.decisions ?? []).map((d) => ({
    index: d.index,
    decision: d.approved ? ('approve' as const) : ('deny' as const),
    ...(d.grantId ? { grantId: d.grantId } : {}),
  }));
  if (card.state === 'expired') return expiredApprovalCard(input);
  if (card.state === 'refused') return refusedApprovalCard(input);
  if (card.state === 'superseded') return supersededApprovalCard(input);
  if (card.state === 'decided') {
    const by = [...new Set((card.decisions ?? []).map((d) => d.by))].join(', ');
    return decidedApprovalCard(input, outcomes, by);
  }
  return approvalCard(input, outcomes);
}
