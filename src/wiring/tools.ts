import type { ProgramSandbox } from '../sandbox/sandbox.ts';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { ToolRegistry } from '../agent/tools/registry.ts';
import type { AnyBuiltinTool, AnyTool } from '../agent/tools/tool.ts';
import type { WorkspaceRoots } from '../agent/tools/workspace/access.ts';
import type { PersonalAuth } from '../agent/tools/mcp/hub.ts';
import { buildToolCatalog, builtinTools, kindsByName, type ToolCatalog } from '../agent/tools/catalog.ts';
import type { ApprovalScope } from '../approval/envelope.ts';
import {
  createSkillTools,
  SKILL_TOOL_NAMES,
  openSkillRegistry,
  skillDirs,
  type SkillRegistry,
} from '../skills/index.ts';
import type { Cleanups } from './cleanups.ts';
import type { Pool } from '../db/pool.ts';
import { createPool } from '../db/pool.ts';
import { OutboundRegistry } from '../reply/outbound.ts';
import type { ToolKinds } from '../policy/index.ts';
import { createCodeTools } from '../repos/tools.ts';
import { CodeWorkspaces } from '../repos/code-workspaces.ts';
import { RepoCatalog } from '../repos/repos-config.ts';
import { Worktrees } from '../repos/worktrees.ts';
import { scheduleTools } from './schedules.ts';
import { fileTools } from './files.ts';
import type { CodeWork } from './repos.ts';

/**
 * The skills, watched for edits where turns run. Problems are reported and the skill skipped, never
 * fatal; edits on disk apply without a restart.
 */
export async function openSkills(
  config: Config,
  log: Logger,
  { runsTurns }: { runsTurns: boolean },
  cleanups: Cleanups,
): Promise<SkillRegistry> {
  const skills: SkillRegistry = await openSkillRegistry({ ...skillDirs(config), log, watch: runsTurns });
  cleanups.add(async () => skills.close());
  // The registry logs each problem once as it finds it; here only a count, pointing at /skills.
  const skipped = skills.problems().length;
  if (skipped) log.warn(`${skipped} skill problem(s) found; /skills lists the skipped skills and why`);
  return skills;
}

export interface AgentTools {
  tools: ToolRegistry;
  catalog: ToolCatalog;
  /** What an approval of calls to these tools depends on (`ApprovalService`'s drift check). */
  scope(toolNames: readonly string[], conversationId: string): ApprovalScope;
}

/**
 * Every tool the agent has: the built-in ones, the skills', workspace tools, run_command when
 * enabled, MCP servers (not where no turns run: ingress runs no tools) and `extra` ones.
 */
export async function openTools(
  config: Config,
  log: Logger,
  {
    skills,
    runsTurns,
    extra,
    rootOf,
    personalAuth,
    sandbox,
  }: {
    skills: SkillRegistry;
    runsTurns: boolean;
    extra: AnyTool[];
    rootOf?: WorkspaceRoots;
    personalAuth?: PersonalAuth;
    /** Where run_command and MCP stdio servers start programs (src/sandbox). */
    sandbox: ProgramSandbox;
  },
  cleanups: Cleanups,
): Promise<AgentTools> {
  const catalog = await buildToolCatalog(config, log, {
    mcp: runsTurns,
    sandbox,
    skillTools: createSkillTools(skills),
    extra,
    ...(rootOf ? { rootOf } : {}),
    ...(personalAuth ? { personalAuth } : {}),
  });
  cleanups.add(() => catalog.close());
  const tools = new ToolRegistry(catalog.tools);
  catalog.onMcpToolsChanged((mcpTools) => tools.replaceMcpTools(mcpTools));
  // An approval depends on the tools its calls use (and the skills, when a call reads them); an
  // unrelated MCP server reconnecting must not refuse it as drift.
  // A conversation working on a repository runs its calls in its worktree: an approval given there
  // never runs anywhere else (after a discard, the same calls would land in the deployment's workspace).
  const scope = (toolNames: readonly string[], conversationId: string): ApprovalScope => ({
    agent: config.AGENT_NAME,
    workspaceRoot: catalog.rootFor(conversationId),
    tools: tools.fingerprint(toolNames),
    skills: toolNames.some((name) => SKILL_TOOL_NAMES.has(name)) ? skills.version() : 'not used',
  });
  return { tools, catalog, scope };
}

type FeatureConfig = Parameters<typeof scheduleTools>[0] & Parameters<typeof fileTools>[0];

/** The tools of the optional features: code work (where REPOS names some), schedules, files. */
export function featureTools(
  config: FeatureConfig,
  pool: Pool,
  outbounds: OutboundRegistry,
  codeWork: Pick<CodeWork, 'tools' | 'rootOf'> | undefined,
): AnyBuiltinTool[] {
  return [...(codeWork?.tools ?? []), ...scheduleTools(config, pool), ...fileTools(config, outbounds, codeWork)];
}

/**
 * The policy kind of every tool the app registers itself (MCP tools aside, whose servers say what
 * they are), for `countersign policy check`: built by the same builders the app calls, so a new
 * tool is known there the day it is registered. Built to be described: the placeholders are never
 * called (a pg pool connects on its first query; the code tools' catalog names no repository).
 */
export function registeredToolKinds(): ToolKinds {
  const noSkills = { list: () => [], get: () => undefined };
  const codeWork = {
    tools: createCodeTools(
      new CodeWorkspaces(new RepoCatalog([]), new Worktrees({ root: '.', maxPerRepo: 1 })),
      async () => undefined,
    ),
    rootOf: () => undefined,
  };
  const config = {
    AGENT_WORKSPACE_ROOT: '.',
    MAX_FILE_BYTES: 1,
    SCHEDULES_MAX_PER_PERSON: 1,
    SCHEDULE_MIN_INTERVAL: '5m',
  } satisfies FeatureConfig;
  return kindsByName([
    ...builtinTools('.'),
    ...createSkillTools(noSkills),
    ...featureTools(config, createPool('postgres://described-only', 1), new OutboundRegistry(), codeWork),
  ]);
}
