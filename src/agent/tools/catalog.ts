import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import { startsNothing, type ProgramSandbox } from '../../sandbox/sandbox.ts';
import { loadMcpConfig } from './mcp/config.ts';
import { McpHub, type PersonalAuth } from './mcp/hub.ts';
import { currentTimeTool } from './current-time.ts';
import { requestHumanApprovalTool } from './request-human-approval.ts';
import { createRunCommandTool, runCommandPromptNote } from './run-command.ts';
import type { AnyBuiltinTool, AnyTool, ToolKind } from './tool.ts';
import { createWorkspaceTools } from './workspace/tools.ts';
import type { WorkspaceRoots } from './workspace/access.ts';

export type CatalogConfig = Pick<Config, 'AGENT_WORKSPACE_ROOT' | 'MCP_CONFIG' | 'ENABLE_RUN_COMMAND'>;

export interface CatalogOptions {
  /** Connect the MCP servers (default true). A process that never runs tools can skip them. */
  mcp?: boolean;
  /** How long start-up waits for slow MCP servers before going on without them (they keep trying). */
  mcpStartTimeoutMs?: number;
  /** The skills' tools (src/skills builds them from its registry), offered after the built-in ones. */
  skillTools?: AnyTool[];
  /** Tools an embedding application (or a test) adds, offered last. */
  extra?: AnyTool[];
  /** Per-person MCP servers' connections (src/connections), where any server says `"auth": "oauth"`. */
  personalAuth?: PersonalAuth;
  /**
   * A conversation's own workspace, where it has one (a repository's worktree, src/repos): the
   * workspace tools and run_command of its calls work there instead of AGENT_WORKSPACE_ROOT.
   */
  rootOf?: WorkspaceRoots;
  /** Where run_command and MCP stdio servers start their programs (src/sandbox); default: nowhere. */
  sandbox?: ProgramSandbox;
}

export interface ToolCatalog {
  /**
   * Every tool the agent has, in the order the model is offered them: current_time and
   * request_human_approval, the skills', the workspace tools, run_command when enabled, the MCP tools
   * known at start-up, and the extra ones.
   */
  tools: AnyTool[];
  /** Sentences for the system prompt (e.g. that run_command is off). */
  promptNotes: string[];
  /** The workspace root, absolute. */
  workspaceRoot: string;
  /** The folder a conversation's calls work in: its own (`rootOf`), else `workspaceRoot`. */
  rootFor(conversationId: string): string;
  /** The MCP tools as they are now; call again after `onMcpToolsChanged` fires. */
  mcpTools(): AnyTool[];
  /** Lists per-person servers' tools not known yet (someone may have connected since). */
  discoverPersonalTools(): Promise<void>;
  /** Told when an MCP server's tool list changes (connect, reconnect, list_changed). */
  onMcpToolsChanged(listener: (tools: AnyTool[]) => void): () => void;
  close(): Promise<void>;
}

/**
 * Every tool the agent defines itself, confined to `root`: the workspace tools, run_command (whether
 * or not this deployment enables it), current_time and request_human_approval. The skills' tools are
 * src/skills/tools.ts'; MCP tools come from their servers.
 */
export function builtinTools(root: string): AnyBuiltinTool[] {
  // Built to be described (their policy kinds): run_command here starts nothing.
  return [
    ...createWorkspaceTools(root),
    createRunCommandTool(root, startsNothing()),
    currentTimeTool,
    requestHumanApprovalTool,
  ];
}

/** Each tool's policy kind, by name, as the tools themselves say it. */
export function kindsByName(tools: Iterable<AnyBuiltinTool>): ReadonlyMap<string, ToolKind> {
  return new Map([...tools].map((tool) => [tool.name, tool.kind]));
}

let builtinKinds: ReadonlyMap<string, ToolKind> | undefined;

/**
 * The policy kind of one of `builtinTools`, by name: for a call to a tool this process has not
 * registered (run_command where it is off). The root is a placeholder: building a tool touches no file.
 */
export function builtinToolKind(name: string): ToolKind | undefined {
  builtinKinds ??= kindsByName(builtinTools('.'));
  return builtinKinds.get(name);
}

/**
 * The one catalog of the agent's tools: the built-in ones, the skills' and extra ones given, and the
 * file, command and MCP tools this deployment's configuration asks for. Relative paths
 * (AGENT_WORKSPACE_ROOT, MCP_CONFIG) resolve against the current directory; the workspace is
 * created if missing. A broken MCP_CONFIG fails start-up with its problems named.
 */
export async function buildToolCatalog(
  config: CatalogConfig,
  log: Logger,
  options: CatalogOptions = {},
): Promise<ToolCatalog> {
  const workspaceRoot = path.resolve(process.cwd(), config.AGENT_WORKSPACE_ROOT);
  await mkdir(workspaceRoot, { recursive: true });
  const sandbox = options.sandbox ?? startsNothing();
  const local = [
    ...createWorkspaceTools(workspaceRoot, options.rootOf),
    ...(config.ENABLE_RUN_COMMAND ? [createRunCommandTool(workspaceRoot, sandbox, options.rootOf)] : []),
  ];
  const promptNotes = [runCommandPromptNote(config.ENABLE_RUN_COMMAND)].filter(Boolean);

  let hub: McpHub | undefined;
  if (config.MCP_CONFIG && options.mcp !== false) {
    hub = new McpHub(loadMcpConfig(path.resolve(process.cwd(), config.MCP_CONFIG)), log, sandbox, options.personalAuth);
    await hub.start(options.mcpStartTimeoutMs);
    // Through anyone's stored connection; later, before each turn (someone may connect meanwhile).
    if (options.personalAuth)
      await hub
        .discoverPersonalTools()
        .catch((error: unknown) => log.warn({ err: error }, 'could not list per-person tools'));
    // MCP names always contain "__" (server__tool) and built-in ones never do, so they can't clash.
  }
  const connected = hub;
  return {
    tools: [
      currentTimeTool,
      requestHumanApprovalTool,
      ...(options.skillTools ?? []),
      ...local,
      ...(connected?.tools() ?? []),
      ...(options.extra ?? []),
    ],
    promptNotes,
    workspaceRoot,
    rootFor: (conversationId) => options.rootOf?.(conversationId) ?? workspaceRoot,
    mcpTools: () => connected?.tools() ?? [],
    discoverPersonalTools: async () => {
      if (options.personalAuth) await connected?.discoverPersonalTools();
    },
    onMcpToolsChanged: (listener) => connected?.onToolsChanged(() => listener(connected.tools())) ?? (() => undefined),
    close: async () => {
      await connected?.close();
    },
  };
}
