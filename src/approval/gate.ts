import type { ToolRegistry } from '../agent/tools/registry.ts';
import { admitArgs, needsApproval, riskOf, type AnyTool, type ToolKind } from '../agent/tools/tool.ts';
import { builtinToolKind } from '../agent/tools/catalog.ts';
import { WorkspacePaths, type RealPaths } from './real-paths.ts';
import type { Requester } from '../core/person.ts';
import type { ReplyTarget } from '../core/reply-target.ts';
import type { ConversationMode } from '../core/work-item.ts';
import type { CallPolicy } from './envelope.ts';
import {
  mayDecide,
  type Admission,
  type CallFacts,
  type Decision,
  type Person,
  type Policy,
  type ToolDescriptor,
  type Verdict,
  type Where,
} from '../policy/index.ts';

/** A call as the policy judges it (see `PolicyGate.judge`). */
export interface JudgedCall {
  tool: ToolDescriptor;
  args: unknown;
  moved: RealPaths['moved'];
  gitMetadata: boolean;
}

/** Where the policy in force comes from: a PolicyFile (POLICY_FILE, hot reload) or a fixed policy. */
export interface PolicySource {
  current(): Policy;
}

/** A person as the policy knows them. Rows stored before people carried a workspace match no short Slack form. */
function personOf(requester: Requester): Person {
  const workspace =
    requester.workspace ??
    (requester.platform === 'discord' ? '@me' : requester.platform === 'slack' ? 'unknown' : 'local');
  return {
    platform: requester.platform,
    workspace,
    user: requester.userId,
    ...(requester.groups ? { groups: requester.groups } : {}),
    ...(requester.guest !== undefined ? { guest: requester.guest } : {}),
    ...(requester.displayName ? { displayName: requester.displayName } : {}),
  };
}

/** Where a conversation happens, from its reply target: Slack DMs are `D…` channels, Discord DMs have no guild. */
export function whereOf(reply: ReplyTarget): Where {
  const dm =
    reply.platform === 'slack'
      ? reply.channel.startsWith('D')
      : reply.platform === 'discord'
        ? reply.workspace === undefined
        : reply.platform === 'console';
  return {
    platform: reply.platform,
    ...(reply.workspace !== undefined ? { workspace: reply.workspace } : {}),
    channel: reply.channel,
    ...(reply.parent !== undefined ? { parentChannel: reply.parent } : {}),
    dm,
  };
}

/**
 * A tool's kind: its own (Countersign's tools and MCP tools always say it), else, for a tool an
 * embedding application adds without one, what its own `approval` and `risk` say: one that never
 * asks reads, a high-risk one executes, any other writes.
 */
function kindOf(tool: AnyTool, args: unknown): ToolKind {
  if (tool.kind) return tool.kind;
  if (!needsApproval(tool, args)) return 'read';
  return riskOf(tool, args) === 'high' ? 'exec' : 'write';
}

function describeTool(tool: AnyTool, args: unknown): ToolDescriptor {
  return { name: tool.name, kind: kindOf(tool, args), ...(tool.mcp ? { mcp: tool.mcp } : {}) };
}

/**
 * The policy applied to Countersign's tools and people: the one place that turns a tool call and
 * its requester into a policy decision. Every call reads the policy in force at that moment.
 */
export class PolicyGate {
  readonly #policies: PolicySource;
  readonly #tools: ToolRegistry;

  readonly #defaultMode: ConversationMode | undefined;

  readonly #paths: WorkspacePaths | undefined;

  /**
   * `defaultMode`: CONVERSATION_MODE; unset, Slack and Discord steer and other platforms queue.
   * `workspaceRoot`: where path arguments are resolved to their real location (see real-paths.ts).
   */
  constructor(policies: PolicySource, tools: ToolRegistry, defaultMode?: ConversationMode, workspaceRoot?: string) {
    this.#policies = policies;
    this.#tools = tools;
    this.#defaultMode = defaultMode;
    this.#paths = workspaceRoot !== undefined ? new WorkspacePaths(workspaceRoot) : undefined;
  }

  /** What a message does here while its conversation is busy: the policy file's, else the default. */
  conversationMode(reply: ReplyTarget): ConversationMode {
    const set = this.#policies.current().conversationMode(whereOf(reply));
    if (set) return set;
    if (this.#defaultMode) return this.#defaultMode;
    return reply.platform === 'slack' || reply.platform === 'discord' ? 'steer' : 'queue';
  }

  /** Whether this person may use the bot where they wrote; outside the policy: the refusal to show. */
  mayUse(requester: Requester, reply: ReplyTarget): Admission {
    return this.#policies.current().mayUse(personOf(requester), whereOf(reply));
  }

  /** Whether this person is an approver where `reply` is (who may stop someone else's turn). */
  isApprover(person: Requester, reply: ReplyTarget): boolean {
    return this.#policies.current().isApprover(personOf(person), whereOf(reply));
  }

  /**
   * The decision for one call. An unknown tool (or one its MCP server dropped) is described by its
   * name only and falls to the strictest built-in rule that matches.
   */
  decide(
    call: { name: string; args: unknown },
    requester: Requester,
    reply: ReplyTarget,
    facts: Omit<CallFacts, 'gitMetadata'> = {},
  ): Decision {
    return this.decideJudged(this.judge(call), requester, reply, facts);
  }

  /** `decide` for a call already judged (`judge` reads the disk: a caller that has one reuses it). */
  decideJudged(
    judged: JudgedCall,
    requester: Requester,
    reply: ReplyTarget,
    facts: Omit<CallFacts, 'gitMetadata'> = {},
  ): Decision {
    return this.#policies.current().decide({
      tool: judged.tool,
      args: judged.args,
      where: whereOf(reply),
      requester: personOf(requester),
      facts: { ...facts, gitMetadata: judged.gitMetadata },
    });
  }

  /**
   * A call as the policy judges it: the arguments its tool will run with (anything the tool does
   * not declare is refused before a call gets here, see `admitArgs`), path arguments at their real
   * location. The card shows the paths that moved.
   */
  judge(call: { name: string; args: unknown }): JudgedCall {
    const tool = this.#tools.get(call.name);
    const admitted = tool ? admitArgs(tool, call.args) : undefined;
    const args = admitted?.ok ? admitted.args : call.args;
    const descriptor: ToolDescriptor = tool
      ? describeTool(tool, args)
      : { name: call.name, kind: builtinToolKind(call.name) ?? (call.name.includes('__') ? 'mcp' : 'exec') };
    const real = this.#paths?.resolve(args) ?? { args, moved: [], gitMetadata: false };
    return { tool: descriptor, ...real };
  }

  /** Whether the policy in force names anyone who can countersign. */
  hasApprovers(): boolean {
    return this.#policies.current().hasApprovers;
  }
}

/** Whether `clicker` may approve (or deny) a call whose stored decision is `stored`. */
export function mayDecideStored(
  stored: CallPolicy,
  clicker: Requester,
  requester: Requester,
  action: 'approve' | 'deny',
): Verdict {
  const decision: Decision = {
    outcome: stored.outcome,
    rule: stored.rule,
    approvers: stored.approvers,
    home: stored.home,
    risk: 'low',
    grantable: false,
  };
  return mayDecide(decision, personOf(clicker), personOf(requester), action);
}
