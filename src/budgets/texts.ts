import type { Budget } from '../policy/index.ts';

/** What people read about budgets: the refusal, the warning, the operators' table. */

/** An amount in the budget's unit: `$4.20`, `1,200,000 tokens`. */
export function amountOf(unit: Budget['unit'], amount: number): string {
  const tokens = Math.round(amount);
  return unit === 'usd' ? `$${amount.toFixed(2)}` : `${tokens.toLocaleString('en')} token${tokens === 1 ? '' : 's'}`;
}

/** Whom or where a budget covers, as a sentence's subject: `the channel slack:C0OPS0001`. */
export function coveredBy(budget: Budget): string {
  const { kind, value } = budget.covers;
  switch (kind) {
    case 'everyone':
      return 'everyone';
    case 'person':
      return value;
    default:
      return `the ${kind} ${value}`;
  }
}

const PERIOD = { day: 'daily', month: 'monthly' } as const;

/** When a period ends, in the budget's time zone: `2026-11-27 00:00 Europe/Berlin`. */
export function resetTime(at: Date, tz: string): string {
  const shown = new Intl.DateTimeFormat('en-CA', {
    timeZone: tz,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  })
    .format(at)
    .replace(', ', ' ');
  return `${shown} ${tz}`;
}

/**
 * The turn's answer when a budget has no room for the next model call: `spent` (calls in progress
 * included) and what one call `needs` at least (its input's bound and a small answer), in the
 * budget's unit. A budget smaller than one call, even with nothing spent, says so: "used up (0 of
 * 300)" read as a bug.
 */
export function refusalText(
  budget: Budget,
  used: { spent: number; needs: number; allowance: number },
  resetsAt: Date,
): string {
  const { spent, needs, allowance } = used;
  const limit = amountOf(budget.unit, budget.limit);
  const which = `the ${PERIOD[budget.per]} budget "${budget.name}" of ${coveredBy(budget)}`;
  if (needs > budget.limit + allowance)
    return (
      `I stopped here: one call needs about ${amountOf(budget.unit, needs)} (what it sends and a short answer), ` +
      `and ${which} is ${limit}${allowance > 0 ? ` (${amountOf(budget.unit, allowance)} allowed on top)` : ''}, ` +
      `smaller than that even with nothing spent. An operator can raise it in the policy; an approver can allow more ` +
      `for this period (it resets at ${resetTime(resetsAt, budget.tz)}).`
    );
  return (
    `I stopped here: ${which} is used up ` +
    `(${amountOf(budget.unit, spent)} of ${limit}, calls in progress included; the next call needs about ${amountOf(budget.unit, needs)}). ` +
    `It resets at ${resetTime(resetsAt, budget.tz)}; an approver can allow more before then.`
  );
}

/** The turn's answer when a USD budget applies but the model has no price to count it by. */
export function unpricedText(budget: Budget, model: string): string {
  return (
    `I stopped here: the budget "${budget.name}" is in US dollars and the model ${model} has no price, ` +
    `so its spend cannot be counted. An operator can add the price to MODEL_PRICES_FILE (docs/costs.md).`
  );
}

/**
 * The turn's answer when a budget covers the requester only if they are in a group it names, and
 * the platform could not say whether they are (a Discord DM carries no roles; Slack did not list
 * its user groups).
 */
export function unknownGroupsText(budget: Budget, reason: string): string {
  return (
    `I stopped here: I could not tell whether the budget "${budget.name}" of ${coveredBy(budget)} applies to you: ` +
    `the platform did not say which groups you are in (${reason}). Try again in a moment; an operator can check ` +
    `the bot's access to roles or user groups.`
  );
}

/** The one message a conversation gets when a budget passes its warning level. */
export function warningText(budget: Budget, spent: number, limit: number, resetsAt: Date): string {
  const share = Math.floor((spent / limit) * 100);
  return (
    `Heads up: ${coveredBy(budget)} has used ${share}% of its ${amountOf(budget.unit, limit)} ` +
    `${PERIOD[budget.per]} budget "${budget.name}" (resets at ${resetTime(resetsAt, budget.tz)}).`
  );
}
