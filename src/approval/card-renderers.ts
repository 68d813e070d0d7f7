import type { ApprovalCard, CardRenderer, ClickedMessage } from '../core/approval-card.ts';
import type { ReplyTarget } from '../core/reply-target.ts';
import type { Outbound, OutboundRegistry } from '../reply/outbound.ts';
import { cardButtons, cardText } from './card.ts';

/**
 * The card renderer of each platform that has one; every other platform gets the text card
 * (card.ts) posted and edited through its outbound, which is all a plain chat API needs.
 */
export class CardRenderers {
  readonly #byPlatform = new Map<string, CardRenderer>();
  readonly #outbounds: OutboundRegistry;

  constructor(outbounds: OutboundRegistry, renderers: Iterable<CardRenderer> = []) {
    this.#outbounds = outbounds;
    for (const renderer of renderers) this.#byPlatform.set(renderer.platform, renderer);
  }

  for(target: ReplyTarget): CardRenderer {
    return this.#byPlatform.get(target.platform) ?? new TextCardRenderer(this.#outbounds.for(target));
  }
}

/** The card as text with buttons, for a platform without its own card UI. */
class TextCardRenderer implements CardRenderer {
  readonly platform: string;
  readonly #outbound: Outbound;

  constructor(outbound: Outbound) {
    this.platform = outbound.platform;
    this.#outbound = outbound;
  }

  async show(target: ReplyTarget, card: ApprovalCard, messageId?: string): Promise<{ messageId: string }> {
    const text = cardText(card);
    const options = { buttons: cardButtons(card) };
    if (!messageId) return this.#outbound.post(target, text, options);
    await this.#outbound.edit(target, messageId, text, options);
    return { messageId };
  }
}

/**
 * Replaces message `messageId` through the click when it is the clicked one; false when it is not
 * or the click's channel failed (the adapter logs why), so the caller edits it the usual way.
 */
export function replacedThroughClick(
  clicked: ClickedMessage | undefined,
  messageId: string,
  payload: unknown,
): Promise<boolean> {
  if (clicked?.messageId !== messageId) return Promise.resolve(false);
  return clicked.replace(payload).then(
    () => true,
    () => false,
  );
}
