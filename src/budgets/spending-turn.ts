import type { Logger } from 'pino';
import type { Requester } from '../core/person.ts';
import type { ReplyButton, ReplyTarget } from '../core/reply-target.ts';
import type { Pool } from '../db/pool.ts';
import type { PriceTable } from '../usage/model-prices.ts';
import type { Budget } from '../policy/index.ts';
import type { BudgetLeases } from './leases.ts';

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
  /** How long a call waits for calls in flight to give back room it needs (spend.ts `ROOM_WAIT_MS` when unset). */
  roomWaitMs?: number;
  /** This process's leases (leases.ts): where the budgets have plenty of room, a call is lent a share of one. */
  leases?: BudgetLeases;
}
