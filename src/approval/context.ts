import type { Logger } from 'pino';
import type { Pool } from '../db/pool.ts';
import type { ToolRegistry } from '../agent/tools/registry.ts';
import type { OutboundRegistry } from '../reply/outbound.ts';
import type { CardRenderers } from './card-renderers.ts';
import type { PolicyGate } from './gate.ts';
import type { ApprovalScope } from './envelope.ts';
import type { Requester } from '../core/person.ts';
import type { ReplyTarget } from '../core/reply-target.ts';

/** A change card's diff as a file, or why there is none (src/repos makes it; approvals only carry it). */
export type ChangeDiffSource = (
  args: Record<string, unknown>,
  conversationId: string,
) => Promise<{ filename: string; content: Buffer } | { problem: string }>;

interface ApprovalSettings {
  ttlSeconds: number;
  approvers: string[];
  twoPersonRule: boolean;
  /** APPROVAL_CHANNEL: per platform, the channel that gets a copy of every card needing a countersignature. */
  approvalChannels?: Record<string, string>;
  /** GRANT_TTL_SECONDS: how long an "Always allow here" grant lasts; 0 offers none. */
  grantTtlSeconds?: number;
  /** Rejected clicks audited per clicker per minute; default REJECTION_AUDITS_PER_MINUTE. */
  rejectionAuditsPerMinute?: number;
}

/**
 * What every verb of an approval (request, show, decide, resume, expire) works with. One object,
 * built once by `ApprovalService`, so the verbs are plain functions that share no hidden state.
 */
export interface ApprovalContext {
  pool: Pool;
  outbounds: OutboundRegistry;
  cards: CardRenderers;
  tools: ToolRegistry;
  /** The policy in force: who may decide each call, and the re-check at resume. */
  gate: PolicyGate;
  settings: ApprovalSettings;
  /** What calls of these tools in this conversation would run against now; read at request and again at resume. */
  scope: (toolNames: readonly string[], conversationId: string) => ApprovalScope;
  log: Logger;
  /** A change card's diff as a file (src/repos), where repositories are configured. */
  changeDiff?: ChangeDiffSource;
  /** Per-person MCP servers' connections (docs/connections.md), where any is configured. */
  connections?: ConnectionGate;
  /**
   * The workspace a conversation works in as the taint knows it (taint.ts): a repository's worktree
   * where code work names one (src/repos, handed in by the wiring); else the deployment's workspace.
   */
  workspaceOf?: (conversationId: string) => Promise<TaintedWorkspace | undefined>;
}

/** A workspace whose one-person content the taint reads from disk (taint.ts, docs/policy.md). */
export interface TaintedWorkspace {
  /** A name that is the same from every process (not a path that depends on a working directory). */
  key: string;
  /** Where its files are. */
  root: string;
  /**
   * For a worktree: the files of the commit it was checked out from (path → git mode and object
   * id). Its baseline until a second person vouches for more: what is on disk and matches it.
   */
  checkout?: () => Promise<Map<string, { mode: string; blob: string }>>;
}

/**
 * Per-person MCP servers as approvals see them (docs/connections.md; src/connections keeps the tokens,
 * the wiring hands this in).
 */
export interface ConnectionGate {
  /** The per-person server a call needs that its requester has not connected, if any. */
  missing(requester: Requester, call: { name: string }): Promise<string | undefined>;
  /**
   * Sends the requester alone a Connect link for `server`, bound to the parked turn (a DM; the
   * operator's terminal), with "Continue without it" for the card of `nonce`. False where the
   * platform has no private way: the card names the command.
   */
  sendLink(
    requester: Requester,
    reply: ReplyTarget,
    server: string,
    card: { workItemId: string; nonce: string },
  ): Promise<boolean>;
}
