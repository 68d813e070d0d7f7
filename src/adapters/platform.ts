import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Pool } from '../db/pool.ts';
import type { ApprovalService } from '../approval/service.ts';
import type { HttpServer } from '../http/server.ts';
import type { Outbound } from '../reply/outbound.ts';
import type { SkillRegistry } from '../skills/index.ts';
import type { StopResult } from '../queue/stop-requests.ts';
import type { WorkItem, WorkItemDraft } from '../core/work-item.ts';
import type { Requester } from '../core/person.ts';

/**
 * What a platform adapter gets from the application. Adapters never run the agent: they enqueue
 * work items, pass clicks to the approval service, and speak through their outbound client.
 */
export interface AdapterContext {
  config: Config;
  pool: Pool;
  log: Logger;
  approvals: ApprovalService;
  skills: SkillRegistry;
  http: HttpServer;
  /** Durably enqueues a work item; acknowledge the platform only after this resolves. */
  enqueue(draft: WorkItemDraft): Promise<WorkItem>;
  /** A Stop click: only the requester or an approver may stop a turn. */
  stopTurn(workItemId: string, by: Requester): Promise<StopResult>;
}

/** A running inbound half (Socket Mode connection, gateway session, HTTP receiver). */
export interface InboundHandle {
  stop(): Promise<void>;
}

/**
 * One chat platform. The outbound half exists in every process (workers stream replies through it);
 * the inbound half runs only where the process listens (roles all and ingress).
 */
export interface PlatformAdapter {
  readonly outbound: Outbound;
  startInbound(context: AdapterContext): Promise<InboundHandle>;
}
