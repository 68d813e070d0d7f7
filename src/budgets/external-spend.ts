import { randomUUID } from 'node:crypto';
import type { ModelRequest } from '../agent/model.ts';
import type { ModelSpend, RunBill, RunReservation, RunWorstCase, SpendReservation } from '../agent/model-spend.ts';
import type { Budget } from '../policy/index.ts';
import { keyOf, TurnSpend } from './spend.ts';
import type { SpendingTurn } from './spending-turn.ts';
import {
  openPeriods,
  readPeriods,
  releaseReservationsOf,
  reserveCall,
  settleReservation,
  type PeriodRow,
  type ReservationLine,
} from './store.ts';
import { amountOf, coveredBy, resetTime } from './texts.ts';
import { settleWithRetries } from './settle-retries.ts';
import { recordRefusal, warnIfCrossed, warnLevelsOf } from './turn-notices.ts';

/**
 * An external coding CLI's run under the turn's budgets (docs/budgets.md, "External coding agents"):
 * the same budgets, requester and place as the turn's model calls, the same two statements. A run
 * cannot be fitted to the room left as a model call's output can, so it is held whole or not at all.
 */

/** Tries of a run's reservation: once more after creating a new period's rows, once after a replay's cleanup. */
const RESERVE_ATTEMPTS = 3;

const PERIOD = { day: 'daily', month: 'monthly' } as const;

/** A run's hold in a budget's unit. */
const amountFor = (budget: Budget, worst: RunWorstCase): number => (budget.unit === 'usd' ? worst.usd : worst.tokens);

/** The turn's answer when a budget has less room than a run's worst case: the CLI was never started. */
function runRefusalText(budget: Budget, period: PeriodRow | undefined, held: number): string {
  const used = (period?.spent ?? 0) + (period?.reserved ?? 0);
  const limit = budget.limit + (period?.allowance ?? 0);
  const left = Math.max(0, limit - used);
  const setting = budget.unit === 'usd' ? 'CODING_AGENT_RESERVE_USD' : 'CODING_AGENT_RESERVE_TOKENS';
  return (
    `I did not start the coding agent: the ${PERIOD[budget.per]} budget "${budget.name}" of ${coveredBy(budget)} ` +
    `has ${amountOf(budget.unit, left)} left (${amountOf(budget.unit, used)} of ${amountOf(budget.unit, limit)} used, ` +
    `calls in progress included), and a coding agent's run is held at ${amountOf(budget.unit, held)} before it starts (${setting}). ` +
    `It resets at ${resetTime(period?.periodEnd ?? new Date(), budget.tz)}; an approver can allow more before then.`
  );
}

/** A turn's spend: its model calls (`TurnSpend`) and its external coding CLI's runs, on the same budgets. */
export class TurnSpendWithRuns implements ModelSpend {
  readonly #turn: SpendingTurn;
  readonly #calls: TurnSpend;
  #replayChecked = false;

  constructor(turn: SpendingTurn) {
    this.#turn = turn;
    this.#calls = new TurnSpend(turn);
  }

  reserve(request: ModelRequest, models: readonly string[]): Promise<SpendReservation> {
    return this.#calls.reserve(request, models);
  }

  /**
   * Holds `worst` against every budget in one statement (its unit's amount in each), or refuses the
   * run naming the budget without room. The hold is settled once, to what the run reported.
   */
  async reserveRun(worst: RunWorstCase): Promise<RunReservation> {
    const { pool, budgets, workItemId } = this.#turn;
    const id = randomUUID();
    const asks = budgets.map((b) => ({ ...keyOf(b), limit: b.limit, amount: amountFor(b, worst) }));
    let periods: PeriodRow[] = [];
    for (let attempt = 0; attempt < RESERVE_ATTEMPTS; attempt++) {
      const outcome = await reserveCall(pool, {
        id,
        workItemId,
        asks,
        leaseSeconds: worst.leaseSeconds,
        // The CLI runs in a process group of its own and can outlive a killed worker: a lost hold counts.
        spentIfLost: true,
      });
      periods = outcome.periods;
      if (outcome.held) {
        const lines: ReservationLine[] = asks.map((a) => ({
          budget: a.budget,
          unit: a.unit,
          periodStart: periods.find((p) => p.budget === a.budget && p.unit === a.unit)!.periodStart,
          amount: a.amount,
        }));
        return { ok: true, settle: (bill) => this.#settle(id, lines, bill) };
      }
      if (periods.length < budgets.length) await openPeriods(pool, budgets.map(keyOf));
      else if (!this.#replayChecked) {
        // A crashed attempt of this work item may still hold room (its run was cut off with its worker).
        this.#replayChecked = true;
        await releaseReservationsOf(pool, workItemId);
      } else break;
    }
    return this.#refuse(worst, periods);
  }

  /** Refuses the run as a model call is refused: counted, audited, and an approver offered to allow more. */
  async #refuse(worst: RunWorstCase, locked: PeriodRow[]): Promise<RunReservation> {
    const turn = this.#turn;
    const periodOf = (b: Budget) => locked.find((p) => p.budget === b.name && p.unit === b.unit);
    const room = (b: Budget) => {
      const p = periodOf(b);
      return p ? b.limit + p.allowance - p.spent - p.reserved - amountFor(b, worst) : Number.NEGATIVE_INFINITY;
    };
    // The budget furthest from fitting the run, as the statement found them.
    const budget = turn.budgets.reduce((a, b) => (room(b) < room(a) ? b : a));
    const [period] = await readPeriods(turn.pool, [keyOf(budget)]);
    await recordRefusal(
      turn,
      { budget, period, why: 'exhausted' },
      { run: 'coding agent', held: amountFor(budget, worst) },
    );
    return { ok: false, message: runRefusalText(budget, period, amountFor(budget, worst)) };
  }

  /**
   * Replaces the hold by what the run reported (a unit not reported: the hold, never zero). A report
   * above the hold is counted as reported: it was spent. A settle that fails is tried again
   * (settle-retries.ts); one that still fails is only logged, and the hold, given back later, leaves
   * the run uncounted.
   */
  async #settle(id: string, lines: ReservationLine[], bill: RunBill): Promise<void> {
    const turn = this.#turn;
    try {
      const settled = await settleWithRetries(() =>
        settleReservation(turn.pool, {
          id,
          workItemId: turn.workItemId,
          lines,
          usd: bill.usd ?? null,
          tokens: bill.tokens ?? null,
          levels: warnLevelsOf(turn.budgets),
        }),
      );
      for (const period of settled) await warnIfCrossed(turn, period);
    } catch (error) {
      turn.log.warn({ err: error }, 'could not settle a coding agent run against its budgets; its hold stays');
    }
  }
}
