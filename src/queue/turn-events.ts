import { EventEmitter } from 'node:events';
import type { ToolCall } from '../agent/messages.ts';
import type { WorkItem } from '../core/work-item.ts';

/** In-process notifications about turns this process ran (console adapter, metrics, tests). */
export interface TurnEventMap {
  /** graphile-worker handed this process the item's job; its state is not read yet (benchmarks). */
  jobStarted: [{ workItemId: string }];
  /** The job started (attempt > 1: a replay after a crash, a hand-over or a retry). */
  started: [{ item: WorkItem; attempt: number }];
  finished: [{ item: WorkItem; text: string; durationMs: number }];
  awaitingApproval: [{ item: WorkItem; calls: ToolCall[] }];
  failed: [{ item: WorkItem; error: string }];
  cancelled: [{ item: WorkItem; by: { platform: string; userId: string } }];
  firstVisibleText: [{ item: WorkItem; latencyMs: number }];
  /** Housekeeping deleted these conversations (idle past the history retention, no work left). */
  conversationsExpired: [{ ids: string[] }];
}

export class TurnEvents extends EventEmitter<TurnEventMap> {}
