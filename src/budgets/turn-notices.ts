import { audit } from '../approval/store.ts';
import { metrics } from '../metrics.ts';
import type { Budget } from '../policy/index.ts';
import { offerAllowance } from './allowances.ts';
import type { SpendingTurn } from './spending-turn.ts';
import type { PeriodRow, SettledPeriod, WarnLevel } from './store.ts';
import { warningText } from './texts.ts';

/**
 * What a turn's spend tells people and records when a budget refuses or warns, whether a model call
 * or an external coding CLI's run asked (spend.ts, external-spend.ts): the metric, the audit row,
 * the approvers' button to allow more, the warning in the conversation. Failures are only logged:
 * the refusal or the settle stands whatever the telling does.
 */

/** Counts and audits a refusal by `budget` (its period as it stands), and offers an approver to allow more when it was spent. */
export async function recordRefusal(
  turn: SpendingTurn,
  refused: { budget: Budget; period: PeriodRow | undefined; why: 'exhausted' | 'unpriced' },
  detail: Record<string, unknown> = {},
): Promise<void> {
  const { budget, period, why } = refused;
  metrics.budgetRefusals.inc({ budget: budget.name });
  await audit(turn.pool, {
    event: 'budget_refused',
    actor: turn.requester,
    reason: why,
    detail: {
      budget: budget.name,
      unit: budget.unit,
      limit: budget.limit,
      spent: period?.spent ?? 0,
      reserved: period?.reserved ?? 0,
      allowance: period?.allowance ?? 0,
      workItemId: turn.workItemId,
      ...detail,
    },
  }).catch((error: unknown) => turn.log.warn({ err: error }, 'could not audit a budget refusal'));
  turn.log.info({ budget: budget.name, why, ...detail }, 'a budget refused');
  if (why === 'exhausted' && period) await offerMore(turn, budget, period, detail.callNeeds);
}

/**
 * Under the refusal, an approver's button to allow more for this period: the policy's allowance, or
 * where that would still leave too little for the call that was refused (`callNeeds`, in the
 * budget's unit), enough for it — a button whose amount can never let a call through only misleads.
 */
async function offerMore(turn: SpendingTurn, budget: Budget, period: PeriodRow, callNeeds: unknown): Promise<void> {
  try {
    const { workItemId, requester, reply } = turn;
    const room = budget.limit + period.allowance - period.spent;
    const short = typeof callNeeds === 'number' ? callNeeds - room : 0;
    const offer = await offerAllowance(turn.pool, {
      budget,
      periodStart: period.periodStart,
      workItemId,
      requester,
      reply,
      atLeast: short,
    });
    await turn.notify(offer.text, offer.buttons);
  } catch (error) {
    turn.log.warn({ err: error }, 'could not offer an allowance under a budget refusal');
  }
}

/** The warning levels of a turn's budgets, as its settles and lease writes check them. */
export const warnLevelsOf = (budgets: Budget[]): WarnLevel[] =>
  budgets.map((b) => ({ budget: b.name, unit: b.unit, limit: b.limit, warnAt: b.warnAt }));

/** After a settle: where it took a budget past its warning level (once a period), audits it and tells the conversation. */
export async function warnIfCrossed(turn: SpendingTurn, period: SettledPeriod): Promise<void> {
  const budget = turn.budgets.find((b) => b.name === period.budget && b.unit === period.unit);
  if (!budget || !period.warnedNow) return;
  const limit = budget.limit + period.allowance;
  await audit(turn.pool, {
    event: 'budget_warned',
    actor: turn.requester,
    detail: { budget: budget.name, unit: budget.unit, limit, spent: period.spent, workItemId: turn.workItemId },
  });
  await turn.notify(warningText(budget, period.spent, limit, period.periodEnd)).catch((error: unknown) => {
    turn.log.warn({ err: error }, 'could not post a budget warning');
  });
}
