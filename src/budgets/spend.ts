import { randomUUID } from 'node:crypto';
import type { ModelRequest } from '../agent/model.ts';
import type { ModelSpend, SpendReservation, SpentOn } from '../agent/model-spend.ts';
import { costOf, priceOf, type ModelPrice, type PriceTable } from '../usage/model-prices.ts';
import type { Budget } from '../policy/index.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  fitCall,
  inputBound,
  smallestCall,
  tightestBudget,
  unpricedBudget,
  withoutHolds,
  worstCase,
  type CallBound,
  type Fit,
} from './headroom.ts';
import {
  openPeriods,
  readPeriods,
  releaseReservationsOf,
  reserveCall,
  settleReservation,
  type BudgetKey,
  type ReservationLine,
} from './store.ts';
import type { SpendingTurn } from './spending-turn.ts';
import { refusalText, unpricedText } from './texts.ts';
import { settleWithRetries } from './settle-retries.ts';
import { recordRefusal, warnIfCrossed, warnLevelsOf } from './turn-notices.ts';

/**
 * How long a reservation holds when its call never settles (the worker died mid-call): longer
 * than any model call runs (the providers' own time limits are minutes), short enough that a
 * dead worker's hold on a budget ends soon. A replay of the same work item drops it at once.
 */
const RESERVATION_LEASE_SECONDS = 15 * 60;

/**
 * How often a reservation is tried again when calls reserved in between took the room it was
 * fitted to: each try fits the call to the periods as the last one found them, so it only fails
 * again when yet more calls got in first. Past this, the call is refused like one that does not fit.
 */
const RESERVE_ATTEMPTS = 8;

/**
 * How long a call waits for calls in flight to settle when they hold the room it needs and what is
 * spent would leave it enough. Each call holds its worst case (input bound and whole output) while it
 * runs and most settle far below it: refusing at once, ten turns at once against a 20,000-token
 * budget had 8 refused with 86% of it unspent (issue 48). Longer than a model call usually runs;
 * a hold that outlasts it (a dead worker's) ends in a refusal as before.
 */
const ROOM_WAIT_MS = 120_000;
/** How often a waiting call looks at the periods again: one indexed read per waiting call. */
const ROOM_POLL_MS = 100;

/**
 * What a call is settled at, in dollars and tokens: its round's usage at the price of the model
 * that answered (a fallback's own), or what a call cut short was billed so far, plus what its failed
 * attempts before were billed. Null: not known (nothing reported, an attempt that streamed output
 * without its usage reported, or a model without a price), and the reservation's worst case is spent.
 */
function billOf(prices: PriceTable, spent: SpentOn): { usd: number | null; tokens: number | null } {
  const last = 'round' in spent ? spent.round : spent.cutShort;
  // An attempt billed for output it streamed, its usage never reported: not known, the reservation is spent.
  if (!last || spent.unreported) return { usd: null, tokens: null };
  // Failed attempts before it were billed too, each at its own model's price.
  let usd: number | null = 0;
  let tokens = 0;
  for (const { usage, model } of [...(spent.earlier ?? []), last]) {
    const price = priceOf(prices, model);
    usd = usd !== null && price ? usd + costOf(usage, price).billed : null;
    tokens += usage.inputTokens + usage.outputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
  }
  return { usd, tokens };
}

/** One price at least as dear as each of `prices`, kind by kind (input, output, cache reads and writes). */
function dearest(prices: ModelPrice[]): ModelPrice {
  const most = (pick: (p: ModelPrice) => number) => Math.max(...prices.map(pick));
  return {
    input: most((p) => p.input),
    output: most((p) => p.output),
    cacheRead: most((p) => p.cacheRead ?? p.input),
    cacheWrite: most((p) => p.cacheWrite ?? p.input),
  };
}

type Refusal = Extract<Fit, { ok: false }>;
/** A reservation that holds: the call may go ahead with `maxTokens` of output. */
type Held = { ok: true; maxTokens: number; lines: ReservationLine[] };

export const keyOf = (b: Budget): BudgetKey => ({ budget: b.name, unit: b.unit, per: b.per, tz: b.tz });

/** Reserves and settles each model call of one turn against its budgets (the loop's `ModelSpend`). */
export class TurnSpend implements ModelSpend {
  readonly #turn: SpendingTurn;
  #replayChecked = false;

  constructor(turn: SpendingTurn) {
    this.#turn = turn;
  }

  async reserve(request: ModelRequest, models: readonly string[]): Promise<SpendReservation> {
    const turn = this.#turn;
    const prices = models.map((model) => ({ model, price: priceOf(turn.prices, model) }));
    const unpriced = prices.find((p) => !p.price);
    const call: CallBound = {
      inputTokens: inputBound(
        request,
        prices.map((p) => p.price),
      ),
      maxTokens: request.maxTokens,
      // Any model of the chain may answer: the call is held at the dearest price of each kind.
      price: unpriced ? undefined : dearest(prices.map((p) => p.price!)),
    };
    if (!unpriced) {
      const lent = await this.#lent(call);
      if (lent) return lent;
    }
    const id = randomUUID();
    const held = await this.#hold(id, call);
    if (!held.ok) return this.#refuse(held, unpriced?.model ?? models[0]!, call);
    const { lines } = held;
    return { ok: true, maxTokens: held.maxTokens, settle: (spent) => this.#settle(id, lines, spent) };
  }

  /** A share of this process's lease for the call at the output it asks for, where the budgets have room for a lease. */
  async #lent(call: CallBound): Promise<SpendReservation | undefined> {
    const { leases, budgets, prices } = this.#turn;
    if (!leases) return undefined;
    const asks = budgets.map((b) => ({ ...keyOf(b), limit: b.limit, amount: worstCase(b, call.maxTokens, call) }));
    const draw = await leases.lend(asks, warnLevelsOf(this.#turn.budgets));
    if (!draw) return undefined;
    return {
      ok: true,
      maxTokens: call.maxTokens,
      settle: async (spent) => {
        const { usd, tokens } = billOf(prices, spent);
        draw.settle(
          (unit) => (unit === 'usd' ? usd : tokens),
          (period) => warnIfCrossed(this.#turn, period),
        );
      },
    };
  }

  /**
   * Reserves the call's worst case (`#holdNow`); where calls in flight hold the room it needs and
   * what is spent would leave it enough, waits for them to settle (up to `ROOM_WAIT_MS`) and tries
   * again, fitted to the room they left. The guarantee is the reservation's: nothing is spent past a limit.
   */
  async #hold(id: string, call: CallBound): Promise<Held | Refusal> {
    const deadline = Date.now() + (this.#turn.roomWaitMs ?? ROOM_WAIT_MS);
    for (;;) {
      const held = await this.#holdNow(id, call);
      if (held.ok || held.why !== 'exhausted' || !(await this.#roomFreesUp(call, deadline))) return held;
    }
  }

  /**
   * Whether calls in flight leave enough room for this one before `deadline`: false at once when
   * what is spent alone leaves too little (waiting cannot help), true once the periods have room.
   */
  async #roomFreesUp(call: CallBound, deadline: number): Promise<boolean> {
    const { pool, budgets } = this.#turn;
    while (Date.now() < deadline) {
      const periods = await readPeriods(pool, budgets.map(keyOf));
      if (!fitCall(budgets, withoutHolds(periods), call).ok) return false;
      if (fitCall(budgets, periods, call).ok) return true;
      // Jittered, so calls that wait together do not all read and reserve in the same instant.
      await sleep(ROOM_POLL_MS * (0.5 + Math.random()));
    }
    return false;
  }

  /**
   * Reserves the call's worst case against every budget in one statement, first at the output the
   * request asks for; where a budget has less room, again at the output that fits what it found.
   */
  async #holdNow(id: string, call: CallBound): Promise<Held | Refusal> {
    const { pool, budgets, workItemId, leaseSeconds = RESERVATION_LEASE_SECONDS } = this.#turn;
    const unpriced = unpricedBudget(budgets, call);
    if (unpriced) return this.#refusal(unpriced, 'unpriced');
    let fit: Fit = { ok: true, maxTokens: call.maxTokens };
    for (let attempt = 0; attempt < RESERVE_ATTEMPTS && fit.ok; attempt++) {
      const { maxTokens } = fit;
      const asks = budgets.map((b) => ({ ...keyOf(b), limit: b.limit, amount: worstCase(b, maxTokens, call) }));
      const outcome = await reserveCall(pool, { id, workItemId, asks, leaseSeconds });
      if (outcome.held) {
        const lines = asks.map((a) => ({
          budget: a.budget,
          unit: a.unit,
          periodStart: outcome.periods.find((p) => p.budget === a.budget && p.unit === a.unit)!.periodStart,
          amount: a.amount,
        }));
        return { ok: true, maxTokens, lines };
      }
      if (outcome.periods.length < budgets.length) await openPeriods(pool, budgets.map(keyOf));
      else if (!this.#replayChecked) await this.#releaseCrashedAttempt();
      else fit = fitCall(budgets, outcome.periods, call);
    }
    return fit.ok ? this.#crowdedOut(call) : fit;
  }

  /**
   * Gives back what a crashed attempt of this work item still holds, once per turn and only when
   * the budgets seem full: otherwise the turn's first settle gives it back (`settleReservation`).
   */
  async #releaseCrashedAttempt(): Promise<void> {
    this.#replayChecked = true;
    await releaseReservationsOf(this.#turn.pool, this.#turn.workItemId);
  }

  /** The refusal of a call whose room other calls kept taking first, `RESERVE_ATTEMPTS` times over. */
  async #crowdedOut(call: CallBound): Promise<Refusal> {
    const { pool, budgets } = this.#turn;
    return this.#refusal(tightestBudget(budgets, await readPeriods(pool, budgets.map(keyOf)), call), 'exhausted');
  }

  /** A refusal naming `budget`, with its current period as it stands (for the message and the audit). */
  async #refusal(budget: Budget, why: Refusal['why']): Promise<Refusal> {
    const [period] = await readPeriods(this.#turn.pool, [keyOf(budget)]);
    return { ok: false, budget, period, why };
  }

  async #refuse(fit: Refusal, model: string, call: CallBound): Promise<SpendReservation> {
    const { budget, period } = fit;
    if (fit.why === 'unpriced') {
      await recordRefusal(this.#turn, fit);
      return { ok: false, message: unpricedText(budget, model) };
    }
    const needs = smallestCall(budget, call);
    const spent = (period?.spent ?? 0) + (period?.reserved ?? 0);
    const message = refusalText(
      budget,
      { spent, needs, allowance: period?.allowance ?? 0 },
      period?.periodEnd ?? new Date(),
    );
    await recordRefusal(this.#turn, fit, { callNeeds: needs });
    return { ok: false, message };
  }

  /**
   * Replaces the reservation by the call's real cost (cache reads and writes at their prices).
   * A settle that fails is tried again (settle-retries.ts). Never throws: one that still fails is
   * only logged, and its reservation, given back later, leaves the call uncounted.
   */
  async #settle(id: string, lines: ReservationLine[], spent: SpentOn): Promise<void> {
    const turn = this.#turn;
    try {
      const { usd, tokens } = billOf(turn.prices, spent);
      const { workItemId } = turn;
      const levels = warnLevelsOf(this.#turn.budgets);
      const settled = await settleWithRetries(() =>
        settleReservation(turn.pool, { id, workItemId, lines, usd, tokens, levels }),
      );
      for (const period of settled) await warnIfCrossed(turn, period);
    } catch (error) {
      turn.log.warn({ err: error }, 'could not settle a model call against its budgets; its reservation stays');
    }
  }
}
