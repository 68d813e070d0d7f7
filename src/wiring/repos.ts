import path from 'node:path';
import type { Logger } from 'pino';
import { CODING_AGENT_WITHHELD, ConfigError, type Config } from '../config.ts';
import type { Pool } from '../db/pool.ts';
import type { AnyBuiltinTool } from '../agent/tools/tool.ts';
import type { ChangeDiffSource } from '../approval/change-diff.ts';
import { audit } from '../approval/store.ts';
import { conversationExists } from '../queue/turn-lifecycle.ts';
import type { TaintedWorkspace } from '../approval/context.ts';
import { changeDiff, checkoutTree } from '../repos/changes.ts';
import { ChangeAuthors } from '../repos/change-authors.ts';
import { CodeTurns } from '../repos/code-turns.ts';
import { CodeWorkspaces } from '../repos/code-workspaces.ts';
import { parseCodingAgentCommand } from '../repos/coding-agent.ts';
import { checkRepos } from '../repos/repos-check.ts';
import { loadReposFile, parseReposVariable, RepoCatalog, type RepoConfig } from '../repos/repos-config.ts';
import { changeOf, createCodeTools, MergeChangeArgs, type RecordCodeEvent } from '../repos/tools.ts';
import { Worktrees } from '../repos/worktrees.ts';
import type { ProgramSandbox } from '../sandbox/sandbox.ts';

/** Code work as the rest of the app is given it (docs/code-work.md). */
export interface CodeWork {
  catalog: RepoCatalog;
  repos: readonly RepoConfig[];
  /** use_repository and merge_change. */
  tools: AnyBuiltinTool[];
  /** A conversation's worktree, when it works on a repository: where its tools work. */
  rootOf(conversationId: string): string | undefined;
  /** Before and after each turn (the worker). */
  turns: CodeTurns;
  /** A change card's full diff. */
  changeDiff: ChangeDiffSource;
  /** Removes the worktrees and bindings of conversations that are gone (housekeeping). */
  sweep(): Promise<number>;
  /** A bound conversation's worktree as the taint names and scans it (src/approval/taint.ts). */
  taintedWorkspaceOf(conversationId: string): Promise<TaintedWorkspace | undefined>;
}

/**
 * REPOS or REPOS_FILE read and checked — where turns run, every repository must be a git clone — with the worktrees
 * under WORKTREES_DIR and CODING_AGENT_COMMAND parsed. Undefined when no repositories are configured.
 * Any problem stops the start, all of them named at once.
 */
export async function openCodeWork(
  config: Config,
  log: Logger,
  pool: Pool,
  { runsTurns, sandbox }: { runsTurns: boolean; sandbox: ProgramSandbox },
): Promise<CodeWork | undefined> {
  if (!config.REPOS && !config.REPOS_FILE) return undefined;
  const read = config.REPOS
    ? parseReposVariable(config.REPOS)
    : loadReposFile(path.resolve(process.cwd(), config.REPOS_FILE ?? ''));
  // An ingress process only reads the commands: the clones need to be on the hosts that run turns.
  const source = config.REPOS ? 'REPOS' : (config.REPOS_FILE ?? 'REPOS_FILE');
  const problems = !read.ok ? read.problems : runsTurns ? await checkRepos(read.repos, source) : [];
  let codingAgent: string[] | undefined;
  try {
    codingAgent = config.CODING_AGENT_COMMAND ? parseCodingAgentCommand(config.CODING_AGENT_COMMAND) : undefined;
  } catch (error) {
    problems.push(`CODING_AGENT_COMMAND: ${(error as Error).message}`);
  }
  if (!read.ok || problems.length > 0) throw new ConfigError(problems);
  const repos = read.repos;
  const catalog = new RepoCatalog(repos);
  const worktrees = new Worktrees({
    root: path.resolve(process.cwd(), config.WORKTREES_DIR),
    maxPerRepo: config.REPO_WORKTREES_MAX,
  });
  const authors = new ChangeAuthors(pool);
  const workspaces = new CodeWorkspaces(catalog, worktrees, authors);
  const record: RecordCodeEvent = (event, detail, actor) => audit(pool, { event, ...(actor ? { actor } : {}), detail });
  log.info({ repos: repos.map((r) => r.name), codingAgent: Boolean(codingAgent) }, 'repositories for code work');
  return {
    catalog,
    repos,
    tools: createCodeTools(workspaces, record),
    rootOf: (conversationId) => workspaces.rootOf(conversationId),
    turns: new CodeTurns(
      workspaces,
      record,
      authors,
      codingAgent
        ? {
            argv: codingAgent,
            passed: config.CODING_AGENT_ENV,
            withheld: CODING_AGENT_WITHHELD,
            sandbox,
            reserve: { usd: config.CODING_AGENT_RESERVE_USD, tokens: config.CODING_AGENT_RESERVE_TOKENS },
          }
        : undefined,
    ),
    changeDiff: (args, conversationId) => diffFile(workspaces, args, conversationId),
    sweep: () => workspaces.sweep(repos, (id) => conversationExists(pool, id)),
    taintedWorkspaceOf: (conversationId) => taintedWorktree(workspaces, conversationId),
  };
}

/**
 * The taint's name for a conversation's worktree: its repository, branch and the commit it was made
 * from (a worktree made afresh after a merge starts from its clean checkout again), the same from
 * every process. Bound but not open yet: a name of its own, with nothing in it.
 */
async function taintedWorktree(
  workspaces: CodeWorkspaces,
  conversationId: string,
): Promise<TaintedWorkspace | undefined> {
  const root = workspaces.rootOf(conversationId);
  if (root === undefined) return undefined;
  const now = await workspaces.current(conversationId);
  if (!now) return { key: `worktree-unopened:${path.basename(root)}`, root };
  const { repo, worktree } = now;
  const checkout = worktree.review?.head ?? worktree.baseCommit;
  const kind = worktree.review ? `review/${path.basename(worktree.path)}` : 'code';
  return {
    key: `worktree:${repo.name}@${worktree.branch}#${checkout}:${kind}`,
    root: worktree.path,
    checkout: () => checkoutTree(worktree.path, checkout),
  };
}

/** The change a card names, as a `.diff` file. */
async function diffFile(
  workspaces: CodeWorkspaces,
  raw: Record<string, unknown>,
  conversationId: string,
): Promise<{ filename: string; content: Buffer } | { problem: string }> {
  const args = MergeChangeArgs.safeParse(raw);
  if (!args.success) return { problem: 'the card does not name a change' };
  const repo = await changeOf(workspaces, args.data, conversationId);
  if (!repo) return { problem: 'the card does not name a change of this conversation' };
  try {
    const text = await changeDiff(repo.path, args.data.from, args.data.sha);
    return { filename: `${repo.name}-${args.data.sha.slice(0, 12)}.diff`, content: Buffer.from(text, 'utf8') };
  } catch (error) {
    return { problem: `the commit is no longer in ${repo.name} (${(error as Error).message.slice(0, 200)})` };
  }
}
