import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { transaction, type Pool } from '../db/pool.ts';
import type { ModelRequest, ModelRound } from '../agent/model.ts';
import type { ModelSpend, SpendReservation } from '../agent/model-spend.ts';
import { audit } from '../approval/store.ts';
import type { Requester } from '../core/person.ts';
import type { ReplyButton, ReplyTarget } from '../core/reply-target.ts';
import { offerAllowance } from './allowances.ts';
import { metrics } from '../metrics.ts';
import { costOf, priceOf, type PriceTable } from '../model-prices.ts';
import type { Budget } from '../policy/index.ts';
import { fitCall, inputBound, type Fit } from './headroom.ts';
import {
  dropReservationsOf,
  insertReservation,
  lockPeriods,
  lockReservedPeriods,
  openPeriods,
  releaseReservation,
  reservedIn,
  settleReservation,
  commitWithoutWaiting,
  type BudgetKey,
  type PeriodRow,
  type ReservationLine,
  type SettledPeriod,
} from './store.ts';
import { refusalText, unpricedText, warningText } from './texts.ts';

/**
 * How long a reservation holds when its call never settles (the worker died mid-call): longer
 * than any model call runs (the providers' own time limits are minutes), short enough that a
 * dead worker's hold on a budget ends soon. A replay of the same work item drops it at once.
 */
const RESERVATION_LEASE_SECONDS = 15 * 60;

/** One turn's model calls under the budgets that apply to its requester and place. */
export interface SpendingTurn {
  pool: Pool;
  prices: PriceTable;
  budgets: Budget[];
  workItemId: string;
  requester: Requester;
  log: Logger;
  reply: ReplyTarget;
  /** Posts a message in the turn's conversation (a warning, an allowance offer); failures are only logged. */
  notify(text: string, buttons?: ReplyButton[]): Promise<void>;
  leaseSeconds?: number;
}

export const keyOf = (b: Budget): BudgetKey => ({ budget: b.name, unit: b.unit, per: b.per, tz: b.tz });

/** Reserves and settles each model call of one turn against its budgets (the loop's `ModelSpend`). */
export class TurnSpend implements ModelSpend {
  readonly #turn: SpendingTurn;

  constructor(turn: SpendingTurn) {
    this.#turn = turn;
  }

  async reserve(request: ModelRequest, model: string): Promise<SpendReservation> {
    const turn = this.#turn;
    const price = priceOf(turn.prices, model);
    const call = {
      inputTokens: inputBound([request.system, request.messages, request.tools]),
      maxTokens: request.maxTokens,
      price,
    };
    const id = randomUUID();
    const fit = await reserveInOneTransaction(turn, id, (periods) => fitCall(turn.budgets, periods, call));
    if (!fit.ok) return this.#refuse(fit, model);
    const { lines } = fit;
    return { ok: true, maxTokens: fit.maxTokens, settle: (round) => this.#settle(id, lines, round, model) };
  }

  async #refuse(fit: Extract<Fit, { ok: false }>, model: string): Promise<SpendReservation> {
    const { budget, period } = fit;
    const turn = this.#turn;
    metrics.budgetRefusals.inc({ budget: budget.name });
    const spent = (period?.spent ?? 0) + (period?.reserved ?? 0);
    const message =
      fit.why === 'unpriced'
        ? unpricedText(budget, model)
        : refusalText(budget, spent, period?.periodEnd ?? new Date());
    await audit(turn.pool, {
      event: 'budget_refused',
      actor: turn.requester,
      reason: fit.why,
      detail: {
        budget: budget.name,
        unit: budget.unit,
        limit: budget.limit,
        spent: period?.spent ?? 0,
        reserved: period?.reserved ?? 0,
        allowance: period?.allowance ?? 0,
        workItemId: turn.workItemId,
      },
    }).catch((error: unknown) => turn.log.warn({ err: error }, 'could not audit a budget refusal'));
    turn.log.info({ budget: budget.name, why: fit.why }, 'a budget refused a model call');
    if (fit.why === 'exhausted' && period) await this.#offerMore(budget, period.periodStart);
    return { ok: false, message };
  }

  /** Under the refusal, an approver's button to allow more for this period. */
  async #offerMore(budget: Budget, periodStart: Date): Promise<void> {
    const turn = this.#turn;
    try {
      const { workItemId, requester, reply } = turn;
      const offer = await offerAllowance(turn.pool, { budget, periodStart, workItemId, requester, reply });
      await turn.notify(offer.text, offer.buttons);
    } catch (error) {
      turn.log.warn({ err: error }, 'could not offer an allowance under a budget refusal');
    }
  }

  /**
   * Replaces the reservation by the call's real cost (cache reads and writes at their prices).
   * Never throws: a settle that fails leaves the reservation to its lease, which overcounts the
   * budget for a while but never lets it be overspent.
   */
  async #settle(
    id: string,
    lines: ReservationLine[],
    round: ModelRound | undefined,
    reservedModel: string,
  ): Promise<void> {
    const turn = this.#turn;
    try {
      if (!round) return await releaseReservation(turn.pool, id);
      const price = priceOf(turn.prices, round.model) ?? priceOf(turn.prices, reservedModel);
      const { usage } = round;
      const tokens = usage.inputTokens + usage.outputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
      const usd = price ? costOf(usage, price).billed : null;
      const settled = await settleInOneTransaction(turn, { id, lines, usd, tokens });
      for (const period of settled) await this.#afterSettle(period);
    } catch (error) {
      turn.log.warn({ err: error }, 'could not settle a model call against its budgets; its reservation stays');
    }
  }

  async #afterSettle(period: SettledPeriod): Promise<void> {
    const turn = this.#turn;
    const budget = turn.budgets.find((b) => b.name === period.budget && b.unit === period.unit);
    if (!budget) return;
    if (budget.unit === 'usd') metrics.budgetSpentUsd.set({ budget: budget.name }, period.spent);
    if (!period.warnedNow) return;
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
}

/**
 * The reservation in one transaction: the periods are created if new and locked (in one order),
 * then the call is fitted to what they leave and its worst case held. Concurrent calls on the same
 * budget wait for each other's lock, so each sees the others' reservations: none can overspend.
 */
async function reserveInOneTransaction(
  turn: SpendingTurn,
  id: string,
  fit: (periods: PeriodRow[]) => Fit,
): Promise<Fit> {
  const keys = turn.budgets.map(keyOf);
  return transaction(turn.pool, async (client) => {
    await commitWithoutWaiting(client);
    await dropReservationsOf(client, turn.workItemId);
    await openPeriods(client, keys);
    const locked = await lockPeriods(client, keys);
    const reserved = await reservedIn(client, keys);
    const result = fit(locked.map((p) => ({ ...p, reserved: reserved.get(`${p.budget}\u0000${p.unit}`) ?? 0 })));
    if (result.ok) {
      const leaseSeconds = turn.leaseSeconds ?? RESERVATION_LEASE_SECONDS;
      await insertReservation(client, { id, workItemId: turn.workItemId, lines: result.lines, leaseSeconds });
    }
    return result;
  });
}

/** The settle in one transaction, taking the periods' locks in the order reserving takes them. */
async function settleInOneTransaction(
  turn: SpendingTurn,
  settle: { id: string; lines: ReservationLine[]; usd: number | null; tokens: number },
): Promise<SettledPeriod[]> {
  const levels = turn.budgets.map((b) => ({ budget: b.name, unit: b.unit, limit: b.limit, warnAt: b.warnAt }));
  return transaction(turn.pool, async (client) => {
    await commitWithoutWaiting(client);
    await lockReservedPeriods(client, settle.lines);
    return settleReservation(client, { ...settle, levels });
  });
}
