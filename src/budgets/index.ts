import type { Logger } from 'pino';
import type { Pool } from '../db/pool.ts';
import type { ModelSpend } from '../agent/model-spend.ts';
import type { WorkItem } from '../core/work-item.ts';
import type { ReplyButton } from '../core/reply-target.ts';
import type { PriceTable } from '../usage/model-prices.ts';
import type { Budget } from '../policy/index.ts';
import type { Requester } from '../core/person.ts';
import { TurnSpendWithRuns } from './external-spend.ts';
import { SpendAfterGroupLookup } from './unknown-groups.ts';
import type { BudgetLeases } from './leases.ts';

/** What the spend limits of a process work with. */
export interface SpendLimitsOptions {
  pool: Pool;
  /** The price table (MODEL_PRICES_FILE over the built-in one) USD budgets are counted by. */
  prices: PriceTable;
  /** The budgets of the policy in force that a model call of this work item counts against. */
  budgetsFor(item: WorkItem): Budget[];
  /** This process's leases (leases.ts); absent: every model call reserves on its own. */
  leases?: BudgetLeases;
  /**
   * For a requester whose groups the platform did not say (`Requester.groupsUnknown`): the budgets
   * that would cover the item if its requester were in every group the budgets name, and the
   * requester as the platform says now (throws when it cannot say). Absent: groups as told.
   */
  unknownGroups?: {
    budgetsIfInGroups(item: WorkItem): Budget[];
    lookUp(item: WorkItem): Promise<Requester>;
  };
}

/**
 * The spend limits of the policy's `budgets:` (docs/budgets.md), per turn: its requester's and its
 * place's budgets, read from the policy in force when the turn starts. Scheduled and background
 * work count against their owner's (the work item's requester's) budgets like a chat turn.
 */
export class SpendLimits {
  readonly #options: SpendLimitsOptions;

  constructor(options: SpendLimitsOptions) {
    this.#options = options;
  }

  /**
   * The turn's `ModelSpend` (its model calls and its coding CLI's runs), or undefined when no budget
   * applies (its calls cost nothing extra). Where a budget covers the requester only if they are in
   * a group the platform did not say, their groups are looked up first (unknown-groups.ts).
   */
  forTurn(
    item: WorkItem,
    log: Logger,
    notify: (text: string, buttons?: ReplyButton[]) => Promise<void>,
  ): ModelSpend | undefined {
    const budgets = this.#options.budgetsFor(item);
    const unknown = this.#options.unknownGroups;
    if (item.requester.groupsUnknown && unknown) {
      const unsure = unknown.budgetsIfInGroups(item).filter((b) => !budgets.some((known) => known.name === b.name));
      if (unsure.length > 0)
        return new SpendAfterGroupLookup({
          pool: this.#options.pool,
          log,
          workItemId: item.id,
          requester: item.requester,
          unsure,
          lookUp: () => unknown.lookUp(item),
          spendFor: (requester) =>
            this.#spend({ ...item, requester }, this.#options.budgetsFor({ ...item, requester }), log, notify),
        });
    }
    return this.#spend(item, budgets, log, notify);
  }

  #spend(
    item: WorkItem,
    budgets: Budget[],
    log: Logger,
    notify: (text: string, buttons?: ReplyButton[]) => Promise<void>,
  ): ModelSpend | undefined {
    if (budgets.length === 0) return undefined;
    const { pool, prices, leases } = this.#options;
    const { id: workItemId, requester, reply } = item;
    return new TurnSpendWithRuns({
      pool,
      prices,
      budgets,
      workItemId,
      requester,
      reply,
      log,
      notify,
      ...(leases ? { leases } : {}),
    });
  }
}

export { BudgetAllowances } from './allowances.ts';
export { BudgetLeases } from './leases.ts';
