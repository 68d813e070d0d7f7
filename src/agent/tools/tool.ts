import { z } from 'zod';
import type { Logger } from 'pino';
import type { ToolSpec } from '../model.ts';
import type { Requester } from '../../core/person.ts';
import type { ReplyTarget } from '../../core/reply-target.ts';
import type { ContentPin } from '../../core/work-item.ts';

export const RiskLevel = z.enum(['low', 'medium', 'high']);
export type RiskLevel = z.infer<typeof RiskLevel>;

/** `never` runs at once, `always` asks a person first, a function decides from the arguments. */
type ApprovalPolicy<Args> = 'never' | 'always' | ((args: Args) => boolean);

export interface ToolContext {
  workItemId: string;
  conversationId: string;
  requester: Requester;
  /** Where the turn answers (a tool that posts into the conversation: share_file). */
  reply?: ReplyTarget;
  /** For a call a person approved on a card that showed content (`pinContent`): the bytes it showed. */
  approvedContent?: ContentPin;
  signal: AbortSignal;
  log: Logger;
}

export interface ToolOutput {
  content: string;
  isError?: boolean;
}

/** What a tool does, in the policy's words (src/policy): the built-in rules are written per kind. */
export type ToolKind = 'read' | 'write' | 'delete' | 'exec' | 'mcp' | 'question' | 'merge' | 'schedule' | 'share';

/** What the policy weighs about an MCP tool: its server, whether the operator vouches for it, its hints. */
export interface McpToolFacts {
  server: string;
  /** The operator runs it (stdio) or marked it `trusted` in the MCP config; a remote server's hints are only hints. */
  trusted: boolean;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  /** The MCP config's per-tool `approval` override. */
  override?: 'always' | 'never';
  /** A per-person server (`"auth": "oauth"`): each call runs with the requester's own connection. */
  personal?: boolean;
}

export interface Tool<Args = Record<string, unknown>> {
  name: string;
  description: string;
  /**
   * The policy's kind for this tool. Countersign's own tools and MCP tools always say it (see
   * `BuiltinTool`); a tool an embedding application adds may not, and then keeps its own
   * `approval` and `risk` (see `kindOf` in approval/gate.ts).
   */
  kind?: ToolKind;
  mcp?: McpToolFacts;
  /**
   * Never offered to the model: the bot proposes this tool's calls itself (a change card's merge).
   * A call the model makes anyway is ruled and approved like any other.
   */
  hidden?: boolean;
  /** Bumped when the tool's behaviour changes; part of an approval's scope hash. */
  version: string;
  input: z.ZodType<Args>;
  approval: ApprovalPolicy<Args>;
  risk: RiskLevel | ((args: Args) => RiskLevel);
  /**
   * Safe to run again after a crash left its outcome unknown. Tools that change the world are not:
   * a replay reports the unknown outcome to the model instead of running them twice.
   */
  idempotent: boolean;
  /**
   * How long one execution may take, in seconds, given the deployment's default
   * (TOOL_TIMEOUT_SECONDS). A call past it is abandoned and recorded as failed, and a replay after a
   * crash reports it instead of running it again. Default: the deployment's default.
   */
  timeLimitSeconds?(args: Args, defaultSeconds: number): number;
  execute(args: Args, ctx: ToolContext): Promise<ToolOutput | string>;
  /** The JSON Schema the model sees, when the tool has its own (MCP tools); default: from `input`. */
  inputJsonSchema?: Record<string, unknown>;
  /**
   * People who count as the requester of a call besides the one who asked (`platform:user`, e.g. the
   * authors of a change a card asks to merge): where a second signature is needed, none of them may
   * give it.
   */
  coRequesters?(args: Args): string[];
  /**
   * Run when a person denies the call (a change card's Discard removes the change); what it returns
   * is added to what the model is told. It may run twice after a crash: make it idempotent.
   */
  onDenied?(rawArgs: unknown, ctx: ToolContext): Promise<string | undefined>;
  /**
   * Run when the call's card expires undecided (a change card's worktree goes, so an abandoned change
   * does not hold a place toward the limit). It may run twice after a crash: make it idempotent.
   */
  onExpired?(rawArgs: unknown, ctx: ToolContext): Promise<void>;
  /** Extra detail for the approval card, e.g. a unified diff of an edit. */
  describeForApproval?(args: Args, ctx: ToolContext): Promise<string | undefined>;
  /**
   * The content a call would disclose, read when it is judged (`args` with real paths, relative to
   * the real `workspaceRoot`): its sha256 and size, which a card's approval is bound to, and what
   * secret it seems to hold (a floor of the policy then wants a countersignature). Undefined: no
   * content to bind (the file is missing or not the tool's to read); the tool's own run reports why.
   */
  pinContent?(args: Args, workspaceRoot: string): (ContentPin & { secret?: string }) | undefined;
}

// Tools of different argument types live in one registry; their own `input` schema narrows the type.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTool = Tool<any>;

export function defineTool<Args>(tool: Tool<Args>): Tool<Args> {
  return tool;
}

/** One of Countersign's own tools: its policy kind is part of its definition. */
export type BuiltinTool<Args = Record<string, unknown>> = Tool<Args> & { kind: ToolKind };

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyBuiltinTool = BuiltinTool<any>;

export function defineBuiltinTool<Args>(tool: BuiltinTool<Args>): BuiltinTool<Args> {
  return tool;
}

export function toolSpec(tool: AnyTool): ToolSpec {
  if (tool.inputJsonSchema)
    return { name: tool.name, description: tool.description, inputSchema: tool.inputJsonSchema };
  const schema = z.toJSONSchema(tool.input, { target: 'draft-7', io: 'input' }) as Record<string, unknown>;
  delete schema.$schema;
  return { name: tool.name, description: tool.description, inputSchema: schema };
}

/** Arguments a tool accepted, exactly as it will run with them, or why it refuses them. */
export type AdmittedArgs = { ok: true; args: Record<string, unknown> } | { ok: false; problem: string };

const isPlainRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The one argument object a call is judged, shown, hashed, granted and run with: the tool's schema
 * applied (defaults filled in), every key the tool does not declare refused, and every value as
 * JSON carries it (`asJsonCarriesIt`). A schema that silently dropped an unknown key would let a key
 * the tool ignores (`path`, `dry_run`) steer the policy or a grant while the tool ran without it.
 */
export function admitArgs(tool: AnyTool, sent: unknown): AdmittedArgs {
  // The schema checks what the tool would receive, and its output (defaults filled in) is carried too.
  const raw = sent === undefined ? sent : asJsonCarriesIt(sent);
  if (sent !== undefined && raw === undefined) return { ok: false, problem: '(arguments): must be a JSON object' };
  const parsed = tool.input.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(arguments)'}: ${i.message}`).join('; ');
    return { ok: false, problem: problems };
  }
  if (!isPlainRecord(parsed.data)) return { ok: false, problem: '(arguments): must be a JSON object' };
  const kept = parsed.data;
  const unknown = isPlainRecord(raw) ? Object.keys(raw).filter((key) => !Object.hasOwn(kept, key)) : [];
  if (unknown.length > 0) return { ok: false, problem: unknownArgsProblem(tool.name, unknown) };
  const args = asJsonCarriesIt(kept);
  if (!isPlainRecord(args)) return { ok: false, problem: '(arguments): must be a JSON object' };
  return { ok: true, args };
}

/**
 * The arguments as they reach a tool over JSON (an MCP server, a resumed turn's stored call): what
 * JSON cannot say is said its way here, once, so the policy decides on the values the tool gets.
 * `-0` becomes `0`, a number too large for a double (`1e400`, read as Infinity) becomes `null`, an
 * `undefined` property goes. Without this a deny rule on `replicas: 0` missed `-0`, and the tool
 * then received `0`.
 */
function asJsonCarriesIt(value: unknown): unknown {
  // Nearly every call is already what JSON would make of it: checking is cheaper than copying its text.
  if (isJsonStable(value)) return value;
  try {
    const text = JSON.stringify(value);
    return text === undefined ? undefined : (JSON.parse(text) as unknown);
  } catch {
    // A cycle or a BigInt: nothing JSON could carry, so nothing a tool could receive.
    return undefined;
  }
}

/** Whether JSON would carry `value` unchanged: plain data, finite numbers, no `-0`, no `undefined`. */
function isJsonStable(value: unknown, depth = 0): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value) && !Object.is(value, -0);
  // Deeper than any real call, or a cycle: let the round trip decide.
  if (typeof value !== 'object' || depth > 64) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!(i in value) || !isJsonStable(value[i], depth + 1)) return false;
    return true;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return false;
  if ('toJSON' in value) return false;
  return Object.values(value).every((v) => isJsonStable(v, depth + 1));
}

/** The tool error for arguments a tool does not declare. */
export function unknownArgsProblem(toolName: string, keys: readonly string[]): string {
  const list = keys.map((k) => JSON.stringify(k)).join(', ');
  return `${toolName} has no argument${keys.length === 1 ? '' : 's'} ${list}; send only the arguments its schema declares`;
}

export function needsApproval(tool: AnyTool, args: unknown): boolean {
  if (tool.approval === 'never') return false;
  if (tool.approval === 'always') return true;
  return tool.approval(args);
}

/** TOOL_TIMEOUT_SECONDS' default, for callers that are not given the deployment's value. */
export const DEFAULT_TOOL_TIMEOUT_SECONDS = 120;

/** The time limit of one execution of `tool` with `args`, in whole seconds (at least 1). */
export function timeLimitOf(tool: AnyTool, args: unknown, defaultSeconds: number): number {
  const seconds = tool.timeLimitSeconds?.(args, defaultSeconds) ?? defaultSeconds;
  return Math.max(1, Math.ceil(seconds));
}

export function riskOf(tool: AnyTool, args: unknown): RiskLevel {
  return typeof tool.risk === 'function' ? tool.risk(args) : tool.risk;
}
