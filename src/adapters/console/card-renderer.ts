import type { ApprovalCard, CardRenderer } from '../../core/approval-card.ts';
import type { ReplyTarget } from '../../core/reply-target.ts';
import { cardText } from '../../approval/card.ts';
import type { ConsoleOutbound } from './outbound.ts';

/**
 * The console answers cards at its prompt: the card's text is shown like any message, and the
 * session that owns the terminal is told the card is there, so it can ask for the answer.
 */
export class ConsoleCardRenderer implements CardRenderer {
  readonly platform = 'console';
  readonly #outbound: ConsoleOutbound;
  #listener: ((card: ApprovalCard, target: ReplyTarget) => void) | undefined;

  constructor(outbound: ConsoleOutbound) {
    this.#outbound = outbound;
  }

  onCard(listener: (card: ApprovalCard, target: ReplyTarget) => void): void {
    this.#listener = listener;
  }

  async show(target: ReplyTarget, card: ApprovalCard, messageId?: string): Promise<{ messageId: string }> {
    // A terminal has room: every argument is printed whole.
    const text = cardText({
      ...card,
      calls: card.calls.map((c) => ({ ...c, argsPretty: c.argsFull ?? c.argsPretty })),
    });
    const shown = card.change && card.state === 'pending' ? `${text}\n${changeAnswers(card.change)}` : text;
    const posted = messageId
      ? (await this.#outbound.edit(target, messageId, shown), { messageId })
      : await this.#outbound.post(target, shown);
    this.#listener?.(card, target);
    return posted;
  }
}

/** What the prompt's answers do on a change card: its buttons' words, since a terminal has no buttons. */
function changeAnswers(change: NonNullable<ApprovalCard['change']>): string {
  return `y: **${change.approveLabel}** · n: **${change.denyLabel}** · n <reason>: ${change.denyLabel.toLowerCase()} and say why · diff: **Full diff**`;
}
