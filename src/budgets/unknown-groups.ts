import type { Logger } from 'pino';
import type { ModelRequest } from '../agent/model.ts';
import type { ModelSpend, RunReservation, RunWorstCase, SpendReservation } from '../agent/model-spend.ts';
import { audit } from '../approval/store.ts';
import type { Requester } from '../core/person.ts';
import type { Pool } from '../db/pool.ts';
import { metrics } from '../metrics.ts';
import type { Budget } from '../policy/index.ts';
import { unknownGroupsText } from './texts.ts';

/**
 * A budget that covers a person applies whatever is unknown about their groups. A Discord DM carries
 * no roles and a Slack user-group listing can fail: taken as told, the person would be in no group,
 * and a `for: { group: … }` budget would not count what they spend. So where a budget would cover
 * them if they were in a group it names, their groups are looked up (as a scheduled run looks its
 * owner's up) before the turn's first model call or coding-agent run, and the turn counts against
 * the budgets that cover them then. When the platform cannot say, every call is refused with the
 * reason: spend that cannot be counted against its budget is not allowed.
 */

/** How long a turn waits for the platform to say who the requester is (the first call waits on it). */
const LOOKUP_TIMEOUT_MS = 10_000;

export interface UnknownGroupsTurn {
  pool: Pool;
  log: Logger;
  workItemId: string;
  requester: Requester;
  /** Budgets that cover the turn only if the requester is in a group they name. */
  unsure: Budget[];
  /** The requester with their groups as the platform says now; throws when it could not say. */
  lookUp(): Promise<Requester>;
  /** The turn's spend for the requester as looked up: undefined when no budget covers it. */
  spendFor(requester: Requester): ModelSpend | undefined;
}

type Settled = { spend: ModelSpend | undefined } | { refusal: string };

/** A turn's spend whose budgets wait on its requester's groups being looked up, once. */
export class SpendAfterGroupLookup implements ModelSpend {
  readonly #turn: UnknownGroupsTurn;
  #settled: Promise<Settled> | undefined;

  constructor(turn: UnknownGroupsTurn) {
    this.#turn = turn;
  }

  async reserve(request: ModelRequest, models: readonly string[]): Promise<SpendReservation> {
    const settled = await this.#settle();
    if ('refusal' in settled) return { ok: false, message: settled.refusal };
    if (!settled.spend) return { ok: true, maxTokens: request.maxTokens, settle: async () => undefined };
    return settled.spend.reserve(request, models);
  }

  async reserveRun(worst: RunWorstCase): Promise<RunReservation> {
    const settled = await this.#settle();
    if ('refusal' in settled) return { ok: false, message: settled.refusal };
    if (!settled.spend) return { ok: true, settle: async () => undefined };
    // A spend that cannot count a run refuses it (model-spend.ts).
    if (!settled.spend.reserveRun)
      return { ok: false, message: 'I did not start the coding agent: its spend cannot be counted.' };
    return settled.spend.reserveRun(worst);
  }

  #settle(): Promise<Settled> {
    this.#settled ??= this.#lookUp();
    return this.#settled;
  }

  async #lookUp(): Promise<Settled> {
    const turn = this.#turn;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${LOOKUP_TIMEOUT_MS / 1000} s`)), LOOKUP_TIMEOUT_MS);
    });
    try {
      const requester = await Promise.race([turn.lookUp(), timedOut]);
      return { spend: turn.spendFor({ ...requester, groupsUnknown: false }) };
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      turn.log.warn({ err: error, workItemId: turn.workItemId }, 'could not look up a requester’s groups for a budget');
      const budget = turn.unsure[0]!;
      metrics.budgetRefusals.inc({ budget: budget.name });
      await audit(turn.pool, {
        event: 'budget_refused',
        actor: turn.requester,
        reason: 'groups_unknown',
        detail: { budget: budget.name, workItemId: turn.workItemId, lookup: reason },
      }).catch((auditError: unknown) => turn.log.warn({ err: auditError }, 'could not audit a budget refusal'));
      return { refusal: unknownGroupsText(budget, reason) };
    } finally {
      clearTimeout(timer);
    }
  }
}
