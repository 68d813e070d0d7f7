import { personMatches, type Person, type PersonPattern } from './person.ts';
import type { PolicyPlatforms } from './platforms.ts';

/**
 * Spend limits (`budgets:` in the policy file, docs/budgets.md): what each budget covers and how
 * much it allows per period. Which budgets apply to a model call is answered here, purely; counting
 * the spend against them is src/budgets' job.
 */

export type BudgetUnit = 'usd' | 'tokens';
type BudgetPeriod = 'day' | 'month';

/** What a budget covers, as the file wrote it (`channel: …`), for the messages people see. */
interface BudgetCovers {
  kind: 'person' | 'group' | 'channel' | 'workspace' | 'everyone';
  /** The id or group name as written; empty for everyone. */
  value: string;
}

/** One budget of the policy, as src/budgets counts it. */
export interface Budget {
  name: string;
  /** `file:line` of the budget. */
  source: string;
  covers: BudgetCovers;
  unit: BudgetUnit;
  /** The limit per period, in `unit`. */
  limit: number;
  per: BudgetPeriod;
  /** An IANA time zone: where the period's day or month begins. */
  tz: string;
  /** The share of the limit at which the conversation is warned, once per period. */
  warnAt: number;
  /**
   * How much more an approver's one-off allowance adds to the current period, in `unit`
   * (`allowance_usd:` / `allowance_tokens:`; default a quarter of the limit).
   */
  allowance: number;
}

/** A budget with what the engine matches people and places against. */
export interface CompiledBudget extends Budget {
  /** person and group budgets: who is counted. */
  people?: PersonPattern[];
}

/** Where a model call happens, as budgets match it (the policy's `Where`, without what they ignore). */
interface BudgetPlace {
  platform: string;
  workspace?: string;
  channel?: string;
  parentChannel?: string;
}

/** Whether a call by `person` in `place` counts against `budget`. */
export function budgetApplies(
  platforms: PolicyPlatforms,
  budget: CompiledBudget,
  person: Person,
  place: BudgetPlace,
  home: readonly string[],
): boolean {
  const { kind, value } = budget.covers;
  switch (kind) {
    case 'everyone':
      return true;
    case 'person':
    case 'group':
      return (budget.people ?? []).some((p) => personMatches(platforms, p, person, home));
    case 'workspace':
      return place.workspace !== undefined && value === `${place.platform}:${place.workspace}`;
    case 'channel': {
      // A thread counts against its channel's budget, as the policy's channel rules match it.
      const named = (channel: string | undefined) =>
        channel !== undefined && (value === channel || value === `${place.platform}:${channel}`);
      return named(place.channel) || named(place.parentChannel);
    }
  }
}

/** Whether `tz` names a time zone the runtime knows (Europe/Berlin, UTC). */
export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** The budget without the engine's matching data: what callers outside the policy see. */
export function publicBudget({ people: _people, ...budget }: CompiledBudget): Budget {
  return budget;
}
