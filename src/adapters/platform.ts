import type { Logger } from 'pino';
import type { Pool } from '../db/pool.ts';
import type { ApprovalService } from '../approval/service.ts';
import type { HttpServer } from '../http/server.ts';
import type { Outbound } from '../reply/outbound.ts';
import type { CardRenderer } from '../core/approval-card.ts';
import type { SkillRegistry } from '../skills/index.ts';
import type { StopResult } from '../queue/stop-requests.ts';
import type { TurnEvents } from '../queue/turn-events.ts';
import type { FeedbackResult } from '../audit/feedback.ts';
import type { WorkItem, WorkItemDraft } from '../core/work-item.ts';
import type { Requester } from '../core/person.ts';

/** What Slack's listening half needs of the configuration (picked from `Config` in app.ts). */
interface SlackInboundSettings {
  botToken: string;
  /** `socket` (an outbound WebSocket, the default) or `http` (`POST /slack/events` on our port). */
  mode: 'socket' | 'http';
  /** Socket Mode's app-level token (xapp-…). */
  appToken?: string;
  /** HTTP mode's signing secret, checked on every request. */
  signingSecret?: string;
  /** Every Web API call goes here when set (tests, proxies). */
  apiUrl?: string;
  skillsCommand: string;
  skillCommand: string;
  /** `/countersign grants` and help; default `/countersign`. */
  countersignCommand?: string;
}

/** What Discord's listening half needs of the configuration (picked from `Config` in app.ts). */
export interface DiscordInboundSettings {
  token: string;
  applicationId: string;
  /** Slash commands are registered in this guild only (they update at once) instead of globally. */
  guildId?: string;
  /** Every REST call goes here when set (tests, proxies). */
  apiUrl?: string;
}

/** Each platform's section; an adapter reads its own and nothing else of the configuration. */
export interface InboundSettings {
  slack?: SlackInboundSettings;
  discord?: DiscordInboundSettings;
}

/**
 * What a platform adapter gets from the application. Adapters never run the agent: they enqueue
 * work items, pass clicks to the approval service, and speak through their outbound client.
 */
export interface AdapterContext {
  settings: InboundSettings;
  pool: Pool;
  log: Logger;
  approvals: ApprovalService;
  skills: SkillRegistry;
  http: HttpServer;
  /** Turn lifecycle events of this process (the console follows its turns through them). */
  events: TurnEvents;
  /** Durably enqueues a work item; acknowledge the platform only after this resolves. */
  enqueue(draft: WorkItemDraft): Promise<WorkItem>;
  /**
   * A 👍/👎 on a final answer: one vote per person (platform, workspace, user) and answer; the other
   * vote changes it, the same one again removes it; refused, recording nothing, to a person the policy
   * does not let use the bot where the answer was given.
   */
  recordFeedback(workItemId: string, by: Requester, vote: 'up' | 'down'): Promise<FeedbackResult>;
  /** A Stop click: only the requester or an approver may stop a turn. */
  stopTurn(workItemId: string, by: Requester): Promise<StopResult>;
}

/** The named platform's settings, or an error saying who should have supplied them. */
export function settingsOf<P extends keyof InboundSettings>(
  context: AdapterContext,
  platform: P,
): NonNullable<InboundSettings[P]> {
  const settings = context.settings[platform];
  if (!settings) throw new Error(`the adapter context has no ${platform} settings: app.ts picks them from Config`);
  return settings;
}

/** A running inbound half (Socket Mode connection, gateway session, HTTP receiver, terminal session). */
export interface InboundHandle {
  stop(): Promise<void>;
}

/**
 * One chat platform. The outbound half exists in every process (workers stream replies through it);
 * the inbound half runs only where the process listens (roles all and ingress).
 */
export interface PlatformAdapter {
  readonly outbound: Outbound;
  /** The platform's own approval card UI; without one, cards are text with buttons (approval/card.ts). */
  readonly cards?: CardRenderer;
  startInbound(context: AdapterContext): Promise<InboundHandle>;
  /** Follows the turns this process runs, for what the platform shows around a reply (Slack's agent sessions). */
  observeTurns?(events: TurnEvents): void;
}
