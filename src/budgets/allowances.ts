import { randomUUID } from 'node:crypto';
import type { Pool } from '../db/pool.ts';
import { audit } from '../approval/store.ts';
import { mayBeSamePerson, Requester } from '../core/person.ts';
import { ReplyTarget, type ReplyButton } from '../core/reply-target.ts';
import { allowBudgetValue } from '../core/buttons.ts';
import type { Budget } from '../policy/index.ts';
import { grantAllowanceOffer, insertAllowanceOffer, readAllowanceOffer } from './store.ts';
import { amountOf, resetTime } from './texts.ts';

/**
 * One-off allowances (docs/budgets.md): a refused turn offers more room for the period it was
 * refused in, as a button; an approver who is not the requester grants it (countersign), once.
 */

const PERIOD_WORD = { day: 'today', month: 'this month' } as const;

/** Records the offer and returns its message and button, posted under the refusal. */
export async function offerAllowance(
  pool: Pool,
  refused: {
    budget: Budget;
    periodStart: Date;
    workItemId: string;
    requester: Requester;
    reply: ReplyTarget;
    /** What the refused call lacked, in the budget's unit: the offer is never less (0 or absent: no floor). */
    atLeast?: number;
  },
): Promise<{ text: string; buttons: ReplyButton[] }> {
  const { budget } = refused;
  const id = randomUUID();
  // The policy's allowance_usd / allowance_tokens, a quarter of the limit by default ("Allow $5.00 more today"),
  // or what the refused call lacked where that is more, rounded up to a plain amount.
  const amount = Math.max(budget.allowance, roundedUp(budget.unit, refused.atLeast ?? 0));
  await insertAllowanceOffer(pool, {
    id,
    budget: budget.name,
    unit: budget.unit,
    periodStart: refused.periodStart,
    tz: budget.tz,
    amount,
    workItemId: refused.workItemId,
    requester: refused.requester,
    reply: refused.reply,
  });
  const more = `${amountOf(budget.unit, amount)} more ${PERIOD_WORD[budget.per]}`;
  return {
    text: `An approver other than the requester can allow "${budget.name}" ${more}.`,
    buttons: [{ label: `Allow ${more}`, value: allowBudgetValue(id), style: 'primary' }],
  };
}

/** `amount` rounded up to a whole cent, or to a hundred tokens. */
function roundedUp(unit: Budget['unit'], amount: number): number {
  if (amount <= 0) return 0;
  return unit === 'usd' ? Math.ceil(amount * 100) / 100 : Math.ceil(amount / 100) * 100;
}

export type AllowanceResult = { ok: true; text: string } | { ok: false; reason: string };

/** Grants allowance offers from their buttons: approvers only, never the requester, once each. */
export class BudgetAllowances {
  readonly #pool: Pool;
  readonly #isApprover: (person: Requester, reply: ReplyTarget) => boolean;

  constructor(pool: Pool, isApprover: (person: Requester, reply: ReplyTarget) => boolean) {
    this.#pool = pool;
    this.#isApprover = isApprover;
  }

  async grant(offerId: string, by: Requester): Promise<AllowanceResult> {
    const offer = await readAllowanceOffer(this.#pool, offerId);
    if (!offer) return { ok: false, reason: 'That allowance is no longer on offer.' };
    const requester = Requester.parse(offer.requester);
    const reply = ReplyTarget.parse(offer.reply);
    // Countersign: the person whose turn was refused never raises their own limit.
    if (mayBeSamePerson(by, requester))
      return { ok: false, reason: 'You asked for that turn: an approver other than you has to allow more.' };
    if (!this.#isApprover(by, reply)) return { ok: false, reason: 'Only an approver can allow more spend.' };
    if (offer.granted) return { ok: false, reason: 'That allowance was granted already.' };
    if (!(await grantAllowanceOffer(this.#pool, offerId, by)))
      return { ok: false, reason: 'That allowance was granted already, or its period is over.' };
    const amount = amountOf(offer.unit, offer.amount);
    await audit(this.#pool, {
      event: 'budget_allowance',
      actor: by,
      detail: { budget: offer.budget, unit: offer.unit, amount: offer.amount, offer: offer.id, requester },
    });
    return {
      ok: true,
      text: `Allowed ${amount} more on "${offer.budget}" until ${resetTime(offer.periodEnd, offer.tz)}. Ask again to go on.`,
    };
  }
}
