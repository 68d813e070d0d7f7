import type { ToolRegistry } from '../agent/tools/registry.ts';
import { admitArgs, needsApproval, riskOf, type AnyTool, type ToolKind } from '../agent/tools/tool.ts';
import { builtinToolKind } from '../agent/tools/catalog.ts';
import { WorkspacePaths, type RealPaths } from './real-paths.ts';
import type { Requester } from '../core/person.ts';
import type { PlatformDirectory } from '../core/platform-rules.ts';
import type { ReplyTarget } from '../core/reply-target.ts';
import type { ContentPin, ConversationMode } from '../core/work-item.ts';
import type { CallPolicy } from './envelope.ts';
import {
  mayDecide,
  personMatches,
  type Admission,
  type Budget,
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
  /** The content the call would disclose, as its tool read it (`Tool.pinContent`): a card binds to it. */
  content?: ContentPin & { secret?: string };
}

/** Where the policy in force comes from: a PolicyFile (POLICY_FILE, hot reload) or a fixed policy. */
export interface PolicySource {
  current(): Policy;
}

/**
 * A person as the policy knows them. Rows stored before people carried a workspace are compared as
 * of the platform's `unknownWorkspace` (on Slack one no short form matches).
 */
function personOf(platforms: PlatformDirectory, requester: Requester): Person {
  const workspace = requester.workspace ?? platforms.rulesOf(requester.platform).unknownWorkspace;
  return {
    platform: requester.platform,
    workspace,
    user: requester.userId,
    ...(requester.groups ? { groups: requester.groups } : {}),
    ...(requester.guest !== undefined ? { guest: requester.guest } : {}),
    ...(requester.displayName ? { displayName: requester.displayName } : {}),
  };
}

/** Where a conversation happens, from its reply target; whether it is a DM, the platform says. */
function whereOf(platforms: PlatformDirectory, reply: ReplyTarget): Where {
  return {
    platform: reply.platform,
    ...(reply.workspace !== undefined ? { workspace: reply.workspace } : {}),
    channel: reply.channel,
    ...(reply.parent !== undefined ? { parentChannel: reply.parent } : {}),
    ...(reply.privateThread === true ? { privateThread: true } : {}),
    dm: platforms.rulesOf(reply.platform).isDirect(reply),
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
  readonly #platforms: PlatformDirectory;

  readonly #defaultMode: ConversationMode | undefined;

  readonly #rootFor: ((conversationId: string | undefined) => string) | undefined;

  /**
   * `platforms`: what each platform says of its places and people (DMs, ids of people stored without
   * a workspace, whether a busy conversation steers).
   * `defaultMode`: CONVERSATION_MODE; unset, platforms that steer by default steer, the others queue.
   * `rootFor`: the workspace a conversation's calls work in (AGENT_WORKSPACE_ROOT, or its repository
   * worktree), where path arguments are resolved to their real location (see real-paths.ts).
   */
  constructor(
    policies: PolicySource,
    tools: ToolRegistry,
    platforms: PlatformDirectory,
    defaultMode?: ConversationMode,
    rootFor?: (conversationId: string | undefined) => string,
  ) {
    this.#policies = policies;
    this.#tools = tools;
    this.#platforms = platforms;
    this.#defaultMode = defaultMode;
    this.#rootFor = rootFor;
  }

  /** What a message does here while its conversation is busy: the policy file's, else the default. */
  conversationMode(reply: ReplyTarget): ConversationMode {
    const set = this.#policies.current().conversationMode(this.whereOf(reply));
    if (set) return set;
    if (this.#defaultMode) return this.#defaultMode;
    return this.#platforms.rulesOf(reply.platform).capabilities.steersByDefault ? 'steer' : 'queue';
  }

  /** Where a conversation happens, as the policy matches places (`dm` as the platform says). */
  whereOf(reply: ReplyTarget): Where {
    return whereOf(this.#platforms, reply);
  }

  /** The same account wherever each acted (see `PlatformDirectory.sameAccount`). */
  sameAccount(a: Requester, b: Requester): boolean {
    return this.#platforms.sameAccount(a, b);
  }

  /** Whether this person may use the bot where they wrote; outside the policy: the refusal to show. */
  mayUse(requester: Requester, reply: ReplyTarget): Admission {
    return this.#policies.current().mayUse(this.#personOf(requester), this.whereOf(reply));
  }

  /** Every budget of the policy in force. */
  budgets(): Budget[] {
    return this.#policies.current().budgets;
  }

  /** The budgets a model call for this person there counts against (docs/budgets.md). */
  budgetsFor(requester: Requester, reply: ReplyTarget): Budget[] {
    return this.#policies.current().budgetsFor(this.#personOf(requester), this.whereOf(reply));
  }

  /** Whether the policy in force names any group of `platform` (see `Policy.namesGroups`). */
  namesGroups(platform: string): boolean {
    return this.#policies.current().namesGroups(platform);
  }

  /** The groups the policy's budgets name on a platform (see `PolicyEngine.budgetGroups`). */
  budgetGroups(platform: string): string[] {
    return this.#policies.current().budgetGroups(platform);
  }

  /** Whether this person is an approver where `reply` is (who may stop someone else's turn). */
  isApprover(person: Requester, reply: ReplyTarget): boolean {
    return this.#policies.current().isApprover(this.#personOf(person), this.whereOf(reply));
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
    facts: Omit<CallFacts, 'gitMetadata' | 'secretContent'> = {},
  ): Decision {
    const secret = judged.content?.secret;
    return this.#policies.current().decide({
      tool: judged.tool,
      args: judged.args,
      where: this.whereOf(reply),
      requester: this.#personOf(requester),
      facts: { ...facts, gitMetadata: judged.gitMetadata, ...(secret ? { secretContent: secret } : {}) },
    });
  }

  /**
   * A call as the policy judges it: the arguments its tool will run with (anything the tool does
   * not declare is refused before a call gets here, see `admitArgs`), path arguments at their real
   * location. The card shows the paths that moved.
   */
  judge(call: { name: string; args: unknown }, conversationId?: string): JudgedCall {
    const tool = this.#tools.get(call.name);
    const admitted = tool ? admitArgs(tool, call.args) : undefined;
    const args = admitted?.ok ? admitted.args : call.args;
    const descriptor: ToolDescriptor = tool
      ? describeTool(tool, args)
      : { name: call.name, kind: builtinToolKind(call.name) ?? (call.name.includes('__') ? 'mcp' : 'exec') };
    const root = this.#rootFor?.(conversationId);
    const real = root !== undefined ? new WorkspacePaths(root).resolve(args) : { args, moved: [], gitMetadata: false };
    const content = root !== undefined && admitted?.ok ? tool?.pinContent?.(real.args, root) : undefined;
    return { tool: descriptor, ...real, ...(content ? { content } : {}) };
  }

  /** The folder a conversation's calls work in (the deployment's workspace, or its worktree). */
  rootOf(conversationId: string): string | undefined {
    return this.#rootFor?.(conversationId);
  }

  /** Whether the policy in force names anyone who can countersign. */
  hasApprovers(): boolean {
    return this.#policies.current().hasApprovers;
  }

  /**
   * Whether `clicker` may approve (or deny) a call whose stored decision is `stored`: judged by the
   * decision as stored, not by the policy in force (resume re-checks that).
   */
  mayDecideStored(stored: CallPolicy, clicker: Requester, requester: Requester, action: 'approve' | 'deny'): Verdict {
    const decision: Decision = {
      outcome: stored.outcome,
      rule: stored.rule,
      approvers: stored.approvers,
      home: stored.home,
      risk: 'low',
      grantable: false,
    };
    return mayDecide(this.#platforms, decision, this.#personOf(clicker), this.#personOf(requester), action);
  }

  /**
   * Whether `clicker` is the person a stored `platform:user` key names (a change's author, stored
   * without the workspace that issued the id): matched as the policy matches its own short forms,
   * against the decision's home workspaces, so on Slack an id of another org never counts.
   */
  isNamedBy(stored: CallPolicy, key: string, clicker: Requester): boolean {
    const at = key.indexOf(':');
    if (at <= 0) return false;
    const pattern = { kind: 'user', platform: key.slice(0, at), user: key.slice(at + 1) } as const;
    return personMatches(this.#platforms, pattern, this.#personOf(clicker), stored.home);
  }

  #personOf(requester: Requester): Person {
    return personOf(this.#platforms, requester);
  }
}
