import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Pool } from '../db/pool.ts';
import type { BudgetUnit } from '../policy/index.ts';
import {
  flushLease,
  openPeriods,
  reserveCall,
  type ReservationAsk,
  type SettledPeriod,
  type WarnLevel,
} from './store.ts';

/**
 * A process's leases on budgets with plenty of room (docs/budgets.md, "Leases"). Reserving and
 * settling each model call on the period row costs two statements on a row every call of every
 * turn shares; a lease reserves many calls' worst case in one statement and this process hands it
 * out in memory, writing what its calls spent a moment later in one statement for all of them. The
 * budget's headroom stays exact — the whole lease is held in the database, and spend the process has
 * not written yet is inside that hold — only `spent` (the operators' views, the warning) lags by
 * `flushDelayMs`. Near a limit no lease is taken and each call reserves on its own, as before.
 */
export interface BudgetLeasesOptions {
  pool: Pool;
  /** This process's id in countersign.worker_processes: its leases end with it. */
  processId: string;
  log: Logger;
  /** How many calls' worst case one lease holds; 0: no leases, every call reserves on its own. */
  callsPerLease: number;
  /** How long settled spend waits in memory before it is written (with everything settled meanwhile). */
  flushDelayMs?: number;
  /** A lease takes new calls this long, then hands back its room once its calls settled: other processes get their share. */
  lifetimeMs?: number;
}

/**
 * A lease is taken only while all the leases of a budget's period, the new one included, are at most
 * this share of what is not spent yet. So a call can be refused for room leased and not used only in
 * the last twentieth of a budget, and then only until those leases end (`lifetimeMs` at most, plus
 * the calls they lent to).
 */
const LEASED_SHARE = 0.05;

/**
 * What a lease's row says it expires in. A lease ends with its process, not at a time, and this
 * release's housekeeping never expires one; the release before leases (migration 033) expired every
 * reservation past its `expires_at`, and while it still runs beside this one (a rolling deploy) it
 * would give back a lease this process still lends from, whose spend would then be written nowhere.
 */
const LEASE_ROW_SECONDS = 100 * 365 * 24 * 3600;

/** After a budget had too little room for a lease, its calls reserve on their own this long before a lease is tried again. */
const NO_LEASE_FOR_MS = 1_000;

/** One budget's part of a lease, in the budget's unit. */
interface LeaseLine {
  budget: string;
  unit: BudgetUnit;
  periodStart: Date;
  periodEnd: Date;
  /** Held in the database for this lease. */
  held: number;
  /** Handed to calls still running (their worst case). */
  lent: number;
  /** Settled by calls and not written yet. */
  unwritten: number;
}

/** A call's share of a lease: what it holds of each budget, and how it settles. */
export interface LeaseDraw {
  /** The call's real cost in each budget's unit, by budget line (null: unknown, its whole share is spent). */
  settle(cost: (unit: BudgetUnit) => number | null, onWarned: (period: SettledPeriod) => Promise<void>): void;
}

class Lease {
  readonly openedAt = Date.now();
  retired = false;
  closed = false;
  /** Calls lent a share and not settled yet (counted, not summed: sums of floats never come back to exactly 0). */
  #running = 0;
  /** The warning of the last call settled: a crossing found by a flush is told in its conversation. */
  onWarned: ((period: SettledPeriod) => Promise<void>) | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** Ends the lease's lending at its lifetime, whether or not a call of its budgets comes again. */
  #endOfLife: NodeJS.Timeout | undefined;
  #writing: Promise<void> | undefined;

  readonly id: string;
  readonly lines: LeaseLine[];
  readonly levels: WarnLevel[];
  readonly owner: BudgetLeases;

  constructor(id: string, lines: LeaseLine[], levels: WarnLevel[], owner: BudgetLeases) {
    this.id = id;
    this.lines = lines;
    this.levels = levels;
    this.owner = owner;
  }

  /** Whether a call asking `asks` fits in what is left of this lease now. */
  fits(asks: ReservationAsk[], now: number, lifetimeMs: number): boolean {
    if (this.retired || now - this.openedAt >= lifetimeMs) return false;
    return asks.every((ask) => {
      const line = this.#line(ask.budget, ask.unit);
      return line !== undefined && now < line.periodEnd.getTime() && free(line) >= ask.amount;
    });
  }

  lend(asks: ReservationAsk[]): LeaseDraw {
    const shares = asks.map((ask) => ({ line: this.#line(ask.budget, ask.unit)!, amount: ask.amount }));
    for (const { line, amount } of shares) line.lent += amount;
    this.#running += 1;
    let settled = false;
    return {
      settle: (cost, onWarned) => {
        if (settled) return;
        settled = true;
        this.#running -= 1;
        for (const { line, amount } of shares) {
          line.lent -= amount;
          line.unwritten += cost(line.unit) ?? amount;
        }
        // A call billed beyond its share (attempts that failed before it) ate other calls' room: no new ones.
        if (this.lines.some((line) => free(line) < 0)) this.retired = true;
        this.onWarned = onWarned;
        this.schedule();
      },
    };
  }

  retire(): void {
    this.retired = true;
    this.schedule();
  }

  /**
   * Retires the lease `lifetimeMs` after it opened: a lease is otherwise retired only when a call of
   * the same budgets finds it too old, and one whose budgets are not called again (a person who went
   * home, a period that ended) would keep its room from every other process until this one stops.
   */
  retireAfter(lifetimeMs: number): void {
    this.#endOfLife = setTimeout(() => this.retire(), Math.max(0, this.openedAt + lifetimeMs - Date.now()));
    // The process's stop writes what is left (`BudgetLeases.close`): this timer alone keeps nothing alive.
    this.#endOfLife.unref();
  }

  /** Writes soon (once per `flushDelayMs`, whatever settles meanwhile). */
  schedule(): void {
    if (this.#timer || this.closed || this.owner.stopped) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.write();
    }, this.owner.flushDelayMs);
  }

  /** Writes what was settled; a retired lease also gives back its free room, and closes once no call holds any of it. */
  async write(): Promise<void> {
    if (this.#writing) return this.#writing.then(() => this.write());
    this.#writing = this.#write().finally(() => {
      this.#writing = undefined;
    });
    return this.#writing;
  }

  /** No write is pending any more (the process stops and writes for the last time itself). */
  cancel(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    clearTimeout(this.#endOfLife);
  }

  async #write(): Promise<void> {
    if (this.closed || this.owner.stopped) return;
    const close = this.retired && this.#running === 0;
    const written = this.lines.map((line) => ({
      line,
      spend: line.unwritten,
      giveBack: this.retired ? Math.max(0, free(line)) : 0,
    }));
    if (!close && written.every((w) => w.spend === 0 && w.giveBack === 0)) return;
    let warned: SettledPeriod[];
    try {
      warned = await flushLease(this.owner.pool, {
        id: this.id,
        close,
        levels: this.levels,
        lines: written.map(({ line, spend, giveBack }) => ({ ...line, spend, giveBack })),
      });
    } catch (error) {
      // Still held in the database: nothing can be overspent, and the next write carries it.
      this.owner.log.warn({ err: error }, 'could not write a budget lease’s settled calls; trying again');
      this.schedule();
      return;
    }
    for (const { line, spend, giveBack } of written) {
      line.unwritten -= spend;
      line.held = Math.max(0, line.held - spend - giveBack);
    }
    if (close) this.#closed();
    // A retired lease none of whose calls is running closes at the next write; settled spend is written soon.
    else if ((this.retired && this.#running === 0) || this.lines.some((l) => l.unwritten > 0)) this.schedule();
    const tell = this.onWarned;
    for (const period of warned.filter((p) => p.warnedNow)) {
      await tell?.(period).catch((error: unknown) => this.owner.log.warn({ err: error }, 'could not warn of a budget'));
    }
  }

  #closed(): void {
    this.closed = true;
    clearTimeout(this.#endOfLife);
    this.owner.forget(this);
  }

  #line(budget: string, unit: BudgetUnit): LeaseLine | undefined {
    return this.lines.find((l) => l.budget === budget && l.unit === unit);
  }
}

const free = (line: LeaseLine) => line.held - line.lent - line.unwritten;

/**
 * What a set of budgets is keyed by: each call of a turn asks the same set. The limit, period and
 * time zone are part of it: a turn begun after the policy changed a budget must not be lent room a
 * lease took under the old one (its calls would be counted against neither the new limit nor period).
 */
const keyOf = (asks: ReservationAsk[]) =>
  asks
    .map((a) => [a.budget, a.unit, a.per, a.tz, a.limit].join('\u0000'))
    .sort()
    .join('\u0001');

/** This process's leases, one open per set of budgets (a turn's calls all count against the same set). */
export class BudgetLeases {
  readonly pool: Pool;
  readonly log: Logger;
  readonly flushDelayMs: number;
  /** Set by `close`: nothing is written any more (the pool may be gone). */
  stopped = false;
  readonly #processId: string;
  readonly #callsPerLease: number;
  readonly #lifetimeMs: number;
  readonly #open = new Map<string, Lease>();
  readonly #all = new Set<Lease>();
  readonly #opening = new Map<string, Promise<Lease | undefined>>();
  readonly #noLeaseUntil = new Map<string, number>();

  constructor(options: BudgetLeasesOptions) {
    this.pool = options.pool;
    this.log = options.log;
    this.#processId = options.processId;
    this.#callsPerLease = options.callsPerLease;
    this.flushDelayMs = options.flushDelayMs ?? 250;
    this.#lifetimeMs = options.lifetimeMs ?? 5_000;
  }

  /**
   * A share of a lease for a call asking `asks` (each budget's worst case for the call), taking a new
   * lease when none fits; undefined when the budgets have too little room for a lease (the call then
   * reserves on its own).
   */
  async lend(asks: ReservationAsk[], levels: WarnLevel[]): Promise<LeaseDraw | undefined> {
    if (this.#callsPerLease <= 0 || asks.length === 0) return undefined;
    const key = keyOf(asks);
    const now = Date.now();
    const current = this.#open.get(key);
    if (current?.fits(asks, now, this.#lifetimeMs)) return current.lend(asks);
    if (current) {
      this.#open.delete(key);
      current.retire();
    }
    const noLeaseUntil = this.#noLeaseUntil.get(key);
    if (noLeaseUntil !== undefined && noLeaseUntil > now) return undefined;
    // Past its second: forgotten, so sets of budgets that were once near a limit do not pile up here.
    this.#noLeaseUntil.delete(key);
    const lease = await this.#take(key, asks, levels);
    // Calls that waited for the same new lease may have used it up: such a call reserves on its own.
    return lease?.fits(asks, Date.now(), this.#lifetimeMs) ? lease.lend(asks) : undefined;
  }

  /** One new lease per set of budgets at a time, however many calls ask for it at once. */
  #take(key: string, asks: ReservationAsk[], levels: WarnLevel[]): Promise<Lease | undefined> {
    let opening = this.#opening.get(key);
    if (!opening) {
      opening = this.#reserve(key, asks, levels).finally(() => this.#opening.delete(key));
      this.#opening.set(key, opening);
    }
    return opening;
  }

  async #reserve(key: string, asks: ReservationAsk[], levels: WarnLevel[]): Promise<Lease | undefined> {
    const amounts = asks.map((a) => ({ ...a, amount: a.amount * this.#callsPerLease }));
    const leaseAsks = amounts.map((a) => ({ ...a, leasedShare: LEASED_SHARE }));
    const id = randomUUID();
    for (let attempt = 0; attempt < 2; attempt++) {
      const outcome = await reserveCall(this.pool, {
        id,
        workItemId: undefined,
        asks: leaseAsks,
        leaseSeconds: LEASE_ROW_SECONDS,
        processId: this.#processId,
      });
      if (outcome.held) {
        this.#noLeaseUntil.delete(key);
        const lines = leaseAsks.map((a) => {
          const period = outcome.periods.find((p) => p.budget === a.budget && p.unit === a.unit)!;
          const { periodStart, periodEnd } = period;
          return { budget: a.budget, unit: a.unit, periodStart, periodEnd, held: a.amount, lent: 0, unwritten: 0 };
        });
        const lease = new Lease(id, lines, levels, this);
        lease.retireAfter(this.#lifetimeMs);
        this.#open.set(key, lease);
        this.#all.add(lease);
        return lease;
      }
      if (outcome.periods.length === asks.length) break;
      await openPeriods(this.pool, asks);
    }
    this.#noLeaseUntil.set(key, Date.now() + NO_LEASE_FOR_MS);
    return undefined;
  }

  /** A lease that closed: nothing of it is held any more. */
  forget(lease: Lease): void {
    this.#all.delete(lease);
    for (const [key, open] of this.#open) if (open === lease) this.#open.delete(key);
  }

  /**
   * Ends every lease (the process stops): writes what was settled and gives back what no call holds.
   * What calls still running hold stays until housekeeping counts it as spent after this process is gone.
   */
  async close(): Promise<void> {
    this.#open.clear();
    for (const lease of [...this.#all]) {
      lease.cancel();
      lease.retired = true;
      await lease.write();
      lease.cancel();
    }
    this.stopped = true;
  }
}
