import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Pool } from '../db/pool.ts';
import type { CardRenderer } from '../core/approval-card.ts';
import type { PlatformDirectory } from '../core/platform-rules.ts';
import type { OutboundRegistry } from '../reply/outbound.ts';
import { ApprovalService } from '../approval/service.ts';
import type { ChangeDiffSource } from '../approval/change-diff.ts';
import type { ConnectionGate } from '../approval/connections.ts';
import { CardRenderers } from '../approval/card-renderers.ts';
import { PolicyGate } from '../approval/gate.ts';
import type { ApprovalContext } from '../approval/context.ts';
import { PolicyFile } from '../policy/index.ts';
import type { AgentTools } from './tools.ts';

/**
 * POLICY_FILE (or the built-in policy), loaded and watched. The policy file and the MCP config are
 * guarded like scripts when they live inside the agent's workspace: writing them changes the agent.
 * `platforms`: the platforms a policy may name (their id shapes and rules).
 */
export function openPolicyFile(config: Config, log: Logger, platforms: PlatformDirectory): PolicyFile {
  const workspace = path.resolve(process.cwd(), config.AGENT_WORKSPACE_ROOT);
  const protectedPaths = [config.POLICY_FILE, config.MCP_CONFIG].flatMap((file) => {
    if (!file) return [];
    const inside = path.relative(workspace, path.resolve(process.cwd(), file));
    return inside && !inside.startsWith('..') && !path.isAbsolute(inside) ? [inside.split(path.sep).join('/')] : [];
  });
  const policyFile = new PolicyFile({
    platforms,
    ...(config.POLICY_FILE ? { file: config.POLICY_FILE } : {}),
    approvers: config.APPROVERS,
    twoPersonRule: config.APPROVAL_TWO_PERSON_RULE,
    customSkillsDir: config.CUSTOM_SKILLS_DIR,
    protectedPaths,
    log,
  });
  const policy = policyFile.load();
  if (config.POLICY_FILE) policyFile.watch();
  log.info({ policy: policy.source }, 'policy in force');
  return policyFile;
}

interface ApprovalWiring {
  config: Config;
  log: Logger;
  pool: Pool;
  outbounds: OutboundRegistry;
  policies: PolicyFile;
  /** What each platform says of its places and people, for the policy gate. */
  platformRules: PlatformDirectory;
  agentTools: AgentTools;
  /** The card renderers of the platforms that draw their own cards. */
  cardRenderers: CardRenderer[];
  /** A change card's full diff (code work), where repositories are configured. */
  changeDiff?: ChangeDiffSource;
  /** Per-person MCP servers' connections, where any is configured. */
  connections?: ConnectionGate;
  /** A conversation's worktree as the taint scans it (code work), where repositories are configured. */
  workspaceOf?: ApprovalContext['workspaceOf'];
}

/**
 * The policy gate and the approval service. Clicks arrive at inbound adapters, so every role
 * verifies and consumes them.
 */
export function createApprovals(wiring: ApprovalWiring): { gate: PolicyGate; approvals: ApprovalService } {
  const { config, agentTools } = wiring;
  const { tools, catalog, scope } = agentTools;
  const gate = new PolicyGate(
    wiring.policies,
    tools,
    wiring.platformRules,
    config.CONVERSATION_MODE,
    (conversationId) => (conversationId === undefined ? catalog.workspaceRoot : catalog.rootFor(conversationId)),
  );
  const approvals = new ApprovalService({
    pool: wiring.pool,
    outbounds: wiring.outbounds,
    cards: new CardRenderers(wiring.outbounds, wiring.cardRenderers),
    gate,
    tools,
    scope,
    log: wiring.log,
    ...(wiring.changeDiff ? { changeDiff: wiring.changeDiff } : {}),
    ...(wiring.connections ? { connections: wiring.connections } : {}),
    ...(wiring.workspaceOf ? { workspaceOf: wiring.workspaceOf } : {}),
    settings: {
      ttlSeconds: config.APPROVAL_TTL_SECONDS,
      approvers: config.APPROVERS,
      twoPersonRule: config.APPROVAL_TWO_PERSON_RULE,
      approvalChannels: config.APPROVAL_CHANNEL,
      rejectionAuditsPerMinute: config.APPROVAL_REJECTION_AUDITS_PER_MINUTE,
      grantTtlSeconds: config.GRANT_TTL_SECONDS,
    },
  });
  return { gate, approvals };
}
