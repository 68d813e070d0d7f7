import type { Logger } from 'pino';
import type { ApprovalService } from '../approval/service.ts';
import type { HttpServer } from '../http/server.ts';
import type { Outbound } from '../reply/outbound.ts';
import type { CardRenderer } from '../core/approval-card.ts';
import type { PlatformRules } from '../core/platform-rules.ts';
import type { ReplyButton, ReplyTarget } from '../core/reply-target.ts';
import type { SkillRegistry } from '../skills/index.ts';
import type { StopResult } from '../queue/stop-requests.ts';
import type { TurnEvents } from '../queue/turn-events.ts';
import type { FeedbackResult } from '../audit/feedback.ts';
import type { Requester } from '../core/person.ts';
import type { ScheduleListing } from '../core/schedule-list.ts';
import type { AdmissionRequest, AdmissionResult } from '../approval/admission.ts';
import type { ButtonSurface } from '../approval/press-button.ts';
import type { WorkCommandName, WorkCommandResult } from '../core/work-commands.ts';

export type { AdmissionDraft, AdmissionRequest } from '../approval/admission.ts';
export type { ButtonSurface } from '../approval/press-button.ts';

/** A terminal-like session whose turns die with its process (see `AdapterContext.claimSession`). */
interface SessionClaim {
  /** Turns of earlier sessions on this platform whose process is gone, now cancelled. */
  cancelled: number;
  /** The session's input ended: withdraws the cards its parked turns wait on, which cancels them. */
  end(): Promise<void>;
  release(): void;
}

/**
 * What a platform adapter gets from the application, bound to that platform. Adapters never run the
 * agent and never touch the database: they ask the core to admit work, hand it what was clicked,
 * and speak through their outbound client.
 */
export interface AdapterContext {
  log: Logger;
  approvals: ApprovalService;
  skills: SkillRegistry;
  http: HttpServer;
  /** Turn lifecycle events of this process (the console follows its turns through them). */
  events: TurnEvents;
  /**
   * The one way in for work: the policy's `mayUse`, the conversation mode, the durable enqueue (once
   * per `eventId`), and the cards a steering message superseded. Acknowledge the platform only after
   * this resolves.
   */
  admit(request: AdmissionRequest): Promise<AdmissionResult>;
  /** Whether a conversation already exists (a thread the bot is in answers without a mention). */
  conversationExists(conversationId: string): Promise<boolean>;
  /** The work item a conversation is running now, if any. */
  activeTurnOf(conversationId: string): Promise<string | undefined>;
  /** A pressed button, decoded and done by the core for every platform; the surface answers the clicker. */
  pressButton(value: string, by: Requester, surface: ButtonSurface): Promise<void>;
  /**
   * A 👍/👎 on a final answer: one vote per person (platform, workspace, user) and answer; the other
   * vote changes it, the same one again removes it; refused, recording nothing, to a person the policy
   * does not let use the bot where the answer was given.
   */
  recordFeedback(workItemId: string, by: Requester, vote: 'up' | 'down'): Promise<FeedbackResult>;
  /** A Stop click: only the requester or an approver may stop a turn. */
  stopTurn(workItemId: string, by: Requester): Promise<StopResult>;
  /**
   * Holds a process-bound session of this platform (the console's terminal) for as long as this
   * process lives, and cancels the unfinished turns of its earlier sessions whose process is gone.
   * Only a platform whose rules say its sessions are the operator's terminal may; any other throws.
   */
  claimSession(session: string, by: Requester): Promise<SessionClaim>;
  /**
   * `/code`, `/review`, `/research` (src/core/work-commands.ts): the work item the command's text
   * asks for, or the message for the person who ran it (an unknown repository lists the known ones).
   * The adapter posts `header`, makes its thread the conversation and admits the draft.
   */
  workCommand(command: WorkCommandName, text: string): WorkCommandResult;
  /** The repositories `/code` and `/review` accept (REPOS / REPOS_FILE), for a platform's command options. */
  repoNames: readonly string[];
  /** `status`: this person's running and queued work — type, priority, age — as text for them alone. */
  workStatus(person: Requester): Promise<string>;
  /**
   * `budget` (docs/budgets.md): the budgets a model call for this person in `place` counts against —
   * limit, spent, reserved, left, reset — as Markdown for them alone; `place` undefined (the
   * operator's terminal): every budget of the policy.
   */
  budgetStatus(person: Requester, place: ReplyTarget | undefined): Promise<string>;
  /**
   * `schedules` (docs/schedules.md): this person's schedules (an approver's: everyone's in `place`),
   * for them alone; each entry's Pause/Resume/Delete buttons go through `pressButton`.
   */
  schedules(person: Requester, place: ReplyTarget): Promise<ScheduleListing>;
  /**
   * `connect SERVER` (docs/connections.md): the authorization link that connects this person's own
   * account to a per-person MCP server — shown to them alone (an ephemeral message, a DM, the
   * terminal), never in the channel — or why not (an unknown server lists the per-person ones).
   */
  connect(person: Requester, server: string): Promise<ConnectResult>;
  /**
   * `connections`: this person's connections (server, account, connected, last used) as text for them
   * alone, with a Disconnect button for each connected one (a click ends the clicker's own).
   */
  connections(person: Requester): Promise<{ text: string; buttons: ReplyButton[] }>;
  /** The per-person MCP servers a person can connect to, for a platform's command options. */
  connectableServers: readonly string[];
}

/** What `connect` answers: a link for the person alone, or a message. */
export type ConnectResult = { ok: true; server: string; url: string } | { ok: false; message: string };

/** A running inbound half (Socket Mode connection, gateway session, HTTP receiver, terminal session). */
export interface InboundHandle {
  stop(): Promise<void>;
}

/**
 * One chat platform. The outbound half exists in every process (workers stream replies through it);
 * the inbound half runs only where the process listens (roles all and ingress).
 */
export interface PlatformAdapter {
  /** What only this platform knows: its name, id shapes, DMs, guests and UI capabilities. */
  readonly rules: PlatformRules;
  readonly outbound: Outbound;
  /** The platform's own approval card UI; without one, cards are text with buttons (approval/card.ts). */
  readonly cards?: CardRenderer;
  startInbound(context: AdapterContext): Promise<InboundHandle>;
  /** Follows the turns this process runs, for what the platform shows around a reply (Slack's agent sessions). */
  observeTurns?(events: TurnEvents): void;
}
