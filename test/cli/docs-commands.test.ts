/**
 * The docs check (`npm run docs:check`): the examples in README.md and docs/*.md do what their
 * pages say, so the pages cannot drift from the code again.
 *
 * - Every YAML and JSON example goes through the linter the bot itself uses: a policy (a YAML map
 *   with policy keys) through the policy parser, a YAML list of rules as a policy's `rules:`, an
 *   MCP config (`mcpServers` / `servers`) through the MCP config loader, a price table (`models`)
 *   through its schema, a ```markdown block starting with `---` as a SKILL.md through the skills
 *   loader (no warnings either). Any other YAML or JSON must at least parse.
 * - Shell blocks are run only when marked. Markers are HTML comments on the line before the fence
 *   (blank lines between are fine), so pages render without them:
 *
 *     <!-- docs-check: run -->           run every command of the next sh block (exit code 0)
 *     <!-- docs-check: run, exits N -->  …and expect exit code N from each
 *     <!-- docs-check: file NAME -->     write the next block to NAME before the page's commands run
 *     <!-- docs-check: skip REASON -->   do not lint the next block (a fragment); be sparing
 *
 *   In a run block, `# ` lines right after a command are the output it must print (in order; a
 *   line ending in `…` matches any line starting with the rest), a command with a `…` placeholder
 *   is shown, not run, and a line ending in `\` continues on the next.
 * - Commands run with bash in a fresh folder per page (the checkout linked in, no `.env`), against
 *   a throwaway database, on a free HTTP port, with no tokens and npm offline: the clean checkout
 *   a newcomer has. Nothing is written outside the test's own temporary folders and database.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseReposFile } from '../../src/repos/repos-config.ts';
import { platformDirectory } from '../../src/adapters/registry.ts';
import { parseMcpConfig } from '../../src/agent/tools/mcp/config.ts';
import { PriceTable } from '../../src/usage/model-prices.ts';
import { formatPolicyProblem, parsePolicy } from '../../src/policy/parse.ts';
import { loadSkillFolder } from '../../src/skills/load.ts';
import { formatProblem } from '../../src/skills/problem.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** What the sandbox links from the checkout: enough for `npx countersign …` and `npm start`. */
const CHECKOUT_ENTRIES = ['package.json', 'node_modules', 'bin', 'src', 'migrations', 'skills'];

const COMMAND_TIMEOUT_MS = 30_000;

const PAGES = [
  'README.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];

type Marker =
  | { kind: 'run'; exits: number }
  | { kind: 'file'; name: string }
  | { kind: 'skip'; reason: string }
  | { kind: 'unknown'; text: string };

interface Block {
  page: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  text: string;
  marker?: Marker;
}

interface Command {
  line: number;
  command: string;
  expected: string[];
}

const SHELL = new Set(['sh', 'bash', 'shell', 'console']);
const MARKER = /^\s*<!--\s*docs-check:\s*(.*?)\s*-->\s*$/;

function parseMarker(text: string): Marker {
  const run = /^run(?:,\s*exits\s+(\d+))?$/.exec(text);
  if (run) return { kind: 'run', exits: Number(run[1] ?? 0) };
  const file = /^file\s+([\w.-]+)$/.exec(text);
  if (file) return { kind: 'file', name: file[1]! };
  const skip = /^skip\s+(\S.*)$/.exec(text);
  if (skip) return { kind: 'skip', reason: skip[1]! };
  return { kind: 'unknown', text };
}

/** The marker comment right above line `index` (blank lines between allowed), if any. */
function markerBefore(lines: string[], index: number): Marker | undefined {
  let i = index - 1;
  while (i >= 0 && lines[i]!.trim() === '') i--;
  const found = i >= 0 ? MARKER.exec(lines[i]!) : null;
  return found ? parseMarker(found[1]!) : undefined;
}

const FENCE_OPEN = /^( *)(`{3,}|~{3,})\s*([^\s`]*)/;

const closesFence = (line: string, fence: string) => {
  const t = line.trim();
  return t.startsWith(fence) && [...t].every((c) => c === fence[0]);
};

/** Every fenced block of a Markdown page, with its info string's language and its marker. */
function blocksOf(page: string, source: string): Block[] {
  const lines = source.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE_OPEN.exec(lines[i]!);
    if (!open) continue;
    const [, indent = '', fence = '```', lang = ''] = open;
    let end = i + 1;
    while (end < lines.length && !closesFence(lines[end]!, fence)) end++;
    const body = lines.slice(i + 1, end).map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l.trimStart()));
    const marker = markerBefore(lines, i);
    blocks.push({
      page,
      line: i + 1,
      lang: lang.toLowerCase(),
      text: `${body.join('\n')}\n`,
      ...(marker ? { marker } : {}),
    });
    i = end;
  }
  return blocks;
}

/** The commands of a shell block, each with the output lines the page says it prints. */
function commandsOf(block: Block): Command[] {
  const commands: Command[] = [];
  let current: Command | undefined;
  let continued = false;
  block.text.split('\n').forEach((line, k) => {
    if (continued && current) {
      current.command += `\n${line}`;
      continued = line.endsWith('\\');
      return;
    }
    if (line.trim() === '') {
      current = undefined;
      return;
    }
    if (line.startsWith('#')) {
      current?.expected.push(line.replace(/^# ?/, ''));
      return;
    }
    current = { line: block.line + 1 + k, command: line, expected: [] };
    commands.push(current);
    continued = line.endsWith('\\');
  });
  return commands;
}

/** Where the expected lines are missing from `stdout`, in order; empty when all are there. */
function missingOutput(expected: string[], stdout: string): string[] {
  const lines = stdout.split('\n').map((l) => l.trimEnd());
  let at = 0;
  const missing: string[] = [];
  for (const want of expected) {
    const matches = (line: string) => (want.endsWith('…') ? line.startsWith(want.slice(0, -1)) : line === want);
    const found = lines.findIndex((line, i) => i >= at && matches(line));
    if (found === -1) missing.push(want);
    else at = found + 1;
  }
  return missing;
}

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const POLICY_KEYS = ['version', 'workspaces', 'groups', 'approvers', 'requesters', 'rules', 'conversations'];

/** Any `${VAR}` an MCP example refers to is set: the check is about the file's shape. */
const ANY_ENV = new Proxy({} as Record<string, string | undefined>, {
  get: (_, name) => (typeof name === 'string' ? 'docs-check' : undefined),
});

/** Header and env values a newcomer pastes as they are: a `…` placeholder fails only at the first request. */
function mcpPlaceholders(config: Record<string, unknown>): string[] {
  const servers = config.mcpServers ?? config.servers;
  if (!isMap(servers)) return [];
  return Object.entries(servers).flatMap(([name, server]) => {
    if (!isMap(server)) return [];
    return (['headers', 'env'] as const).flatMap((field) =>
      Object.entries(isMap(server[field]) ? (server[field] as Record<string, unknown>) : {})
        .filter(([, value]) => typeof value === 'string' && /[^\x20-\x7e]/.test(value))
        .map(([key]) => `MCP server "${name}": ${field} ${key} is not plain ASCII; write \${VARIABLE} instead`),
    );
  });
}

/** A YAML example: a policy (or a list of its rules) through the policy parser; problems at page lines. */
function lintYaml(block: Block): string[] {
  let value: unknown;
  try {
    value = parseYaml(block.text);
  } catch (error) {
    return [`${block.page}:${block.line}: not YAML: ${(error as Error).message.split('\n')[0]}`];
  }
  // `lineOffset`: the page line before the policy text's first line.
  const asPolicy = (policy: string, lineOffset: number) => {
    const parsed = parsePolicy(policy, block.page, { platforms: platformDirectory() });
    return parsed.ok ? [] : parsed.problems.map((p) => formatPolicyProblem({ ...p, line: p.line + lineOffset }));
  };
  if (isMap(value) && POLICY_KEYS.some((k) => k in value)) return asPolicy(block.text, block.line);
  if (isMap(value) && 'repos' in value) {
    const repos = parseReposFile(block.text, `${block.page}:${block.line}`);
    return repos.ok ? [] : repos.problems;
  }
  if (Array.isArray(value) && value.every((rule) => isMap(rule) && 'outcome' in rule)) {
    // A fragment of `rules:`, linted under that key (one line more than the block).
    return asPolicy(`rules:\n${block.text.replace(/^(?=.)/gm, '  ')}`, block.line - 1);
  }
  return [];
}

function lintJson(text: string, where: string): string[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return [`${where}: not JSON: ${(error as Error).message}`];
  }
  if (isMap(value) && ('mcpServers' in value || 'servers' in value)) {
    // Checked here too (not only by the loader), named in the docs' own terms: use ${VARIABLE}.
    const placeholders = mcpPlaceholders(value).map((p) => `${where}: ${p}`);
    if (placeholders.length) return placeholders;
    try {
      parseMcpConfig(value, ANY_ENV);
      return [];
    } catch (error) {
      return [`${where}: ${(error as Error).message}`];
    }
  }
  if (isMap(value) && 'models' in value) {
    const parsed = PriceTable.safeParse(value);
    return parsed.success ? [] : [`${where}: not a price table: ${parsed.error.message}`];
  }
  return [];
}

/** A SKILL.md example, loaded from a folder named after it: it must load with no problem at all. */
async function lintSkill(text: string, where: string): Promise<string[]> {
  const frontmatter = /^---\n([\s\S]*?)\n---/.exec(text)?.[1] ?? '';
  const name = (parseYaml(frontmatter) as { name?: unknown } | null)?.name;
  if (typeof name !== 'string' || !/^[\w-]+$/.test(name)) return [`${where}: a SKILL.md example needs a plain name:`];
  const root = await mkdtemp(path.join(tmpdir(), 'docs-skill-'));
  try {
    const dir = path.join(root, name);
    await mkdir(dir);
    await writeFile(path.join(dir, 'SKILL.md'), text);
    const { problems } = await loadSkillFolder(dir, root, 'custom');
    return problems.map((p) => `${where}: ${formatProblem(p, 'SKILL.md')}`);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/** What is wrong with a block by its linter; empty when it passes or is not lintable. */
async function lintBlock(block: Block): Promise<string[]> {
  if (block.marker?.kind === 'skip') return [];
  const where = `${block.page}:${block.line}`;
  if (block.lang === 'yaml' || block.lang === 'yml') return lintYaml(block);
  if (block.lang === 'json') return lintJson(block.text, where);
  if ((block.lang === 'markdown' || block.lang === 'md') && block.text.startsWith('---\n'))
    return lintSkill(block.text, where);
  return [];
}

/** Problems with the markers themselves: a typo must not silently turn a check off. */
function markerProblems(block: Block): string[] {
  const where = `${block.page}:${block.line}`;
  const marker = block.marker;
  if (!marker) return [];
  if (marker.kind === 'unknown') return [`${where}: unknown marker "docs-check: ${marker.text}"`];
  if (marker.kind === 'run' && !SHELL.has(block.lang))
    return [`${where}: "run" marks a ${block.lang || 'plain'} block`];
  if (marker.kind === 'skip' && SHELL.has(block.lang))
    return [`${where}: shell blocks run only when marked; drop "skip"`];
  return [];
}

interface Sandbox {
  dir: string;
  env: Record<string, string>;
}

async function createSandbox(databaseUrl: string, files: Block[]): Promise<Sandbox> {
  const dir = await mkdtemp(path.join(tmpdir(), 'docs-check-'));
  for (const entry of CHECKOUT_ENTRIES) await symlink(path.join(ROOT, entry), path.join(dir, entry));
  for (const block of files) {
    if (block.marker?.kind === 'file') await writeFile(path.join(dir, block.marker.name), block.text);
  }
  const home = path.join(dir, '.home');
  await mkdir(home);
  return {
    dir,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: home,
      DATABASE_URL: databaseUrl,
      HTTP_PORT: '0',
      HTTP_HOST: '127.0.0.1',
      // `npx countersign` must resolve to this checkout, never to a download.
      npm_config_offline: 'true',
      npm_config_cache: path.join(home, '.npm'),
      npm_config_update_notifier: 'false',
      npm_config_fund: 'false',
      npm_config_audit: 'false',
    },
  };
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runShell(command: string, sandbox: Sandbox): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-o', 'pipefail', '-c', command], {
      cwd: sandbox.dir,
      env: sandbox.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    // A command that hangs is a failure of the page, not of the run: end its process group.
    const timer = setTimeout(() => {
      stderr += `\n(docs check: no exit within ${COMMAND_TIMEOUT_MS / 1000} s; stopped)`;
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    }, COMMAND_TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs a page's marked commands in a fresh sandbox; returns one line per failure. */
async function runPage(blocks: Block[], databaseUrl: string): Promise<string[]> {
  const sandbox = await createSandbox(databaseUrl, blocks);
  const failures: string[] = [];
  try {
    for (const block of blocks) {
      if (block.marker?.kind !== 'run') continue;
      for (const command of commandsOf(block)) {
        if (command.command.includes('…')) continue; // a placeholder: shown, not run
        const ran = await runShell(command.command, sandbox);
        const where = `${block.page}:${command.line}: ${command.command.split('\n')[0]}`;
        const tail = `\n  stdout: ${ran.stdout.trim().slice(-800)}\n  stderr: ${ran.stderr.trim().slice(-800)}`;
        if (ran.code !== block.marker.exits)
          failures.push(`${where}\n  exit ${ran.code}, the page says ${block.marker.exits}${tail}`);
        const missing = missingOutput(command.expected, ran.stdout);
        if (missing.length) failures.push(`${where}\n  did not print: ${missing.join(' | ')}${tail}`);
      }
    }
  } finally {
    await rm(sandbox.dir, { recursive: true, force: true });
  }
  return failures;
}

const blocksByPage = new Map(PAGES.map((page) => [page, blocksOf(page, readFileSync(path.join(ROOT, page), 'utf8'))]));
const runnablePages = PAGES.filter((page) => blocksByPage.get(page)!.some((b) => b.marker?.kind === 'run'));

describe('the docs check itself', () => {
  const page = [
    'Text.',
    '<!-- docs-check: run -->',
    '',
    '```sh',
    'echo one; echo two',
    '# one',
    '# tw…',
    'false   # fails',
    'curl https://example.com -H "Authorization: Bearer …"',
    '```',
    '',
    '  ```yaml',
    '  rules:',
    '    - tool: a',
    '      outcome: maybe',
    '  ```',
    '<!-- docs-check: skip a fragment -->',
    '````json',
    '{"mcpServers": {"x": {"url": "https://x.example", "headers": {"Authorization": "Bearer …"}}}}',
    '````',
    '```json',
    '{"mcpServers": {"x": {"url": "https://x.example", "headers": {"Authorization": "Bearer …"}}}}',
    '```',
    '<!-- docs-check: runn -->',
    '```sh',
    'true',
    '```',
  ].join('\n');
  const blocks = blocksOf('page.md', page);

  it('finds each block with its language, indentation removed, and its marker', () => {
    expect(blocks.map((b) => [b.line, b.lang, b.marker?.kind])).toEqual([
      [4, 'sh', 'run'],
      [12, 'yaml', undefined],
      [18, 'json', 'skip'],
      [21, 'json', undefined],
      [25, 'sh', 'unknown'],
    ]);
    expect(blocks[1]!.text).toBe('rules:\n  - tool: a\n    outcome: maybe\n');
  });

  it('reads the output a page promises after each command', () => {
    expect(commandsOf(blocks[0]!).map((c) => [c.line, c.expected])).toEqual([
      [5, ['one', 'tw…']],
      [8, []],
      [9, []],
    ]);
  });

  it('fails a command that exits otherwise or does not print what the page says, and skips placeholders', async () => {
    const db = await createTestDatabase('docs_self');
    try {
      const wrong = { ...blocks[0]!, text: 'echo one\n# three\nfalse\n' };
      expect(await runPage([blocks[0]!], db.url)).toEqual([
        expect.stringMatching(/^page\.md:8: false {3}# fails\n {2}exit 1/),
      ]);
      expect(await runPage([wrong], db.url)).toEqual([
        expect.stringMatching(/did not print: three/),
        expect.stringMatching(/page\.md:7: false\n {2}exit 1/),
      ]);
    } finally {
      await db.drop();
    }
  });

  it('fails a policy its linter refuses and an MCP header with a placeholder, unless skipped', async () => {
    expect(await lintBlock(blocks[1]!)).toEqual([expect.stringMatching(/^page\.md:15:14: /)]);
    expect(await lintBlock(blocks[2]!)).toEqual([]);
    expect(await lintBlock(blocks[3]!)).toEqual([
      'page.md:21: MCP server "x": headers Authorization is not plain ASCII; write ${VARIABLE} instead',
    ]);
    expect(markerProblems(blocks[4]!)).toEqual(['page.md:25: unknown marker "docs-check: runn"']);
  });
});

describe('docs examples', () => {
  it('every marker is one the check knows, on a block it applies to', () => {
    expect(PAGES.flatMap((page) => blocksByPage.get(page)!.flatMap(markerProblems))).toEqual([]);
  });

  it.each(PAGES)('%s: every YAML, JSON and SKILL.md example passes its linter', async (page) => {
    const problems: string[] = [];
    for (const block of blocksByPage.get(page)!) problems.push(...(await lintBlock(block)));
    expect(problems).toEqual([]);
  });

  it('every repository file the pages name or link to exists', () => {
    const missing = PAGES.flatMap((page) => {
      const text = readFileSync(path.join(ROOT, page), 'utf8');
      const named = [
        ...text.matchAll(/`((?:src|test|bench|migrations|docs|skills)\/[\w./-]+\.(?:ts|md|sql|js|json|ya?ml))`/g),
      ].map((m) => path.join(ROOT, m[1]!));
      const linked = [...text.matchAll(/\]\(((?!https?:|mailto:|#)[^)\s]+)\)/g)].map((m) =>
        path.resolve(ROOT, path.dirname(page), m[1]!.split('#')[0]!),
      );
      return [...named, ...linked]
        .filter((file) => !existsSync(file))
        .map((file) => `${page}: ${path.relative(ROOT, file)}`);
    });
    expect(missing).toEqual([]);
  });

  it('has commands marked to run where a newcomer starts', () => {
    expect(runnablePages).toEqual(expect.arrayContaining(['docs/policy.md', 'docs/skills.md', 'docs/approvals.md']));
  });
});

describe('docs commands, run offline on a clean checkout', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('docs');
  });
  afterAll(() => db.drop());

  // A page runs each of its commands as a new process (several seconds each on a busy machine).
  it.each(runnablePages)(
    '%s: every command marked to run does what the page says',
    async (page) => {
      expect(await runPage(blocksByPage.get(page)!, db.url)).toEqual([]);
    },
    300_000,
  );
});
