import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseDotenv } from 'dotenv';
import { z } from 'zod';
import { parsePerson } from './policy/person.ts';
import { parseReposVariable } from './repos/repos-config.ts';
import { parseEncryptionKey } from './connections/token-crypto.ts';
import { platformDirectory } from './adapters/registry.ts';
import { bool, headerSecret, int, list, optionalString, url, type Env, type EnvProblem } from './core/env-fields.ts';
import { SLACK_CREDENTIAL, SLACK_ENV, SLACK_SECRETS, slackEnvProblems } from './adapters/slack/settings.ts';
import { DISCORD_CREDENTIAL, DISCORD_ENV, DISCORD_SECRETS, discordEnvProblems } from './adapters/discord/settings.ts';
import { SANDBOX_ENV } from './sandbox/settings.ts';

/** The directory Countersign is installed in (shipped skills and migrations resolve from here). */
export const INSTALL_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Variables whose values never appear in logs, errors or `countersign config`. */
export const SECRET_VARIABLES = new Set([
  'DATABASE_URL',
  'ANTHROPIC_API_KEY',
  'OPENAI_API_KEY',
  'OPENROUTER_API_KEY',
  'METRICS_TOKEN',
  'TOKEN_ENCRYPTION_KEY',
  'TOKEN_ENCRYPTION_KEY_PREVIOUS',
  ...SLACK_SECRETS,
  ...DISCORD_SECRETS,
]);

/**
 * What an external coding agent (CODING_AGENT_COMMAND) never sees: every secret but the model API
 * keys, which a coding CLI needs to run at all.
 */
export const CODING_AGENT_WITHHELD: ReadonlySet<string> = new Set(
  [...SECRET_VARIABLES].filter((name) => !name.endsWith('_API_KEY')),
);

/** An OTLP/HTTP collector: http(s) only, as the exporter sends nothing anywhere else. */
const otlpEndpoint = z
  .url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL such as http://localhost:4318' })
  .optional();

const PROVIDERS = ['anthropic', 'openai', 'openrouter', 'scripted'] as const;
export const Provider = z.enum(PROVIDERS, { error: `expected one of ${PROVIDERS.join(', ')}` });
export type Provider = z.infer<typeof Provider>;

/** Every environment variable Countersign reads, with its default. `.env.example` documents each. */
export const ConfigSchema = z
  .object({
    /** Unset: info, or warn while the console adapter owns the terminal. */
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional(),
    HTTP_PORT: int(0, 65535).default(3000),
    HTTP_HOST: z.string().default('0.0.0.0'),
    /** Set: /metrics answers only requests with `Authorization: Bearer <token>`; unset: only loopback clients. */
    METRICS_TOKEN: headerSecret,

    DATABASE_URL: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'expected a postgres:// or postgresql:// connection string')
      .optional(),
    EMBEDDED_POSTGRES_DIR: z.string().default('.data/postgres'),
    /** How long a start waits for the database to answer before it exits 1 (src/db/first-connection.ts). */
    DATABASE_WAIT_SECONDS: int(0, 86_400).default(60),
    DATABASE_POOL_SIZE: int(2, 200).default(10),
    DATABASE_ADMISSION_POOL_SIZE: int(1, 100).default(4),

    WORKER_CONCURRENCY: int(1, 256).default(8),
    BACKGROUND_CONCURRENCY: int(1, 256).default(2),
    /** Slots only a quiet place's turn may take (src/queue/runner.ts); 0 turns the express pool off. */
    EXPRESS_CONCURRENCY: int(0, 64).default(2),
    /** Slots for delivery jobs (approval cards), which wait on platforms' rate limits apart from turns. */
    DELIVERY_CONCURRENCY: int(1, 256).default(4),
    WORKER_HEARTBEAT_SECONDS: int(1, 60).default(5),
    WORKER_DEAD_AFTER_SECONDS: int(3, 600).default(15),
    WORKER_POLL_INTERVAL_MS: int(100, 60_000).default(1000),
    SHUTDOWN_GRACE_SECONDS: int(0, 3600).default(10),
    HISTORY_RETENTION_DAYS: int(0, 36500).default(90),
    AUDIT_RETENTION_DAYS: int(0, 36500).default(365),

    AGENT_NAME: z.string().min(1).max(80).default('Countersign'),
    AGENT_MAX_ROUNDS: int(1, 100).default(10),
    STOP_BUTTON_AFTER_MS: int(0, 60_000).default(1500),
    AGENT_EMPTY_ROUND_RETRIES: int(0, 10).default(2),
    AGENT_MAX_TOKENS: int(64, 200_000).default(4096),
    AGENT_HISTORY_MESSAGES: int(2, 1000).default(50),
    /**
     * Estimated tokens of history past which older turns are compacted into a stored summary
     * (src/agent/history); 0 turns compaction off and the AGENT_HISTORY_MESSAGES window slides instead.
     */
    AGENT_HISTORY_TOKENS: int(0, 1_000_000).default(30_000),
    /** Anthropic prompt caching: breakpoints on the tools, the system prompt and the conversation. */
    PROMPT_CACHE: bool.default(true),
    AGENT_WORKSPACE_ROOT: z.string().default('data/workspace'),

    AI_PROVIDER: Provider.optional(),
    AI_PROVIDER_FALLBACK: list.pipe(z.array(Provider)).default([]),
    MODEL_MAX_RETRIES: int(0, 10).default(3),
    SCRIPTED_MODEL_SCRIPT: optionalString,
    ANTHROPIC_API_KEY: headerSecret,
    ANTHROPIC_MODEL: z.string().min(1).default('claude-sonnet-5-5'),
    ANTHROPIC_BASE_URL: url.optional(),
    OPENAI_API_KEY: headerSecret,
    OPENAI_MODEL: z.string().min(1).default('gpt-4.1'),
    OPENAI_BASE_URL: url.optional(),
    /** Whether OPENAI_MODEL takes images; false for a text-only model: images are saved and named, never sent. */
    OPENAI_VISION: bool.default(true),
    OPENROUTER_API_KEY: headerSecret,
    // A family alias OpenRouter keeps pointing at the newest Sonnet: a default must not retire under users.
    OPENROUTER_MODEL: z.string().min(1).default('~anthropic/claude-sonnet-latest'),
    OPENROUTER_BASE_URL: url.default('https://openrouter.ai/api/v1'),
    /** Whether OPENROUTER_MODEL takes images (as OPENAI_VISION). */
    OPENROUTER_VISION: bool.default(true),

    APPROVAL_TTL_SECONDS: int(30, 7 * 24 * 3600).default(3600),
    APPROVERS: list.default([]),
    /** Per platform, a channel that gets a copy of every card needing a countersignature: slack:C…,discord:… */
    APPROVAL_CHANNEL: z
      .string()
      .transform((raw, ctx) => {
        const channels: Record<string, string> = {};
        for (const entry of raw
          .split(',')
          .map((e) => e.trim())
          .filter(Boolean)) {
          const match = /^(slack|discord):(\S+)$/.exec(entry);
          const shape = match?.[1] === 'slack' ? /^[CG][A-Z0-9]{2,}$/ : /^\d{1,20}$/;
          if (!match || !shape.test(match[2]!) || channels[match[1]!]) {
            ctx.addIssue({
              code: 'custom',
              message: `"${entry.slice(0, 60)}" is not platform:channel-id, once per platform (e.g. slack:C0123ABCD,discord:123456789012345678)`,
            });
            return z.NEVER;
          }
          channels[match[1]!] = match[2]!;
        }
        return channels;
      })
      .default({}),
    APPROVAL_TWO_PERSON_RULE: bool.default(true),
    /** What a message does while its conversation is busy; unset: steer on Slack and Discord, queue elsewhere. */
    CONVERSATION_MODE: z.enum(['queue', 'steer', 'interrupt', 'collect']).optional(),
    /** `collect`: how long a turn waits for more lines of a burst before it starts. */
    CONVERSATION_COLLECT_WINDOW_MS: int(100, 30_000).default(1500),
    /** 👍/👎 on final answers in Slack and Discord, recorded with the turn. */
    FEEDBACK_BUTTONS: bool.default(true),
    /** How long an "Always allow here" grant lasts; 0 switches the button off. */
    GRANT_TTL_SECONDS: int(0, 90 * 24 * 3600).default(7 * 24 * 3600),
    /** Rejected clicks audited per clicker and minute; the rest are counted, not written (a flood of forged clicks). */
    APPROVAL_REJECTION_AUDITS_PER_MINUTE: int(0, 10_000).default(20),

    SKILLS_DIR: z.string().default('skills'),
    CUSTOM_SKILLS_DIR: z.string().default('skills'),
    MCP_CONFIG: optionalString,
    /** Who may use the bot, who must countersign, what never needs a click (docs/policy.md); unset: the built-in policy. */
    POLICY_FILE: optionalString,
    /** JSON price table over the built-in one: `countersign usage` and USD budgets (docs/costs.md, docs/budgets.md). */
    MODEL_PRICES_FILE: optionalString,
    /** How many model calls' worst case a worker's lease on a roomy budget holds (src/budgets/leases.ts); 0: none. */
    BUDGET_LEASE_CALLS: int(0, 1000).default(16),
    ENABLE_RUN_COMMAND: bool.default(false),
    TOOL_RESULT_MAX_TOKENS: int(1000, 1_000_000).default(25_000),
    /** A tool running longer than this is abandoned, recorded as failed, and never replayed. */
    TOOL_TIMEOUT_SECONDS: int(1, 3600).default(120),
    /** Bytes one file may have, received (a pasted log, a screenshot) or shared (docs/files.md). */
    MAX_FILE_BYTES: int(1, 1024 * 1024 * 1024).default(20 * 1024 * 1024),

    /** Repositories people may ask to change (docs/code-work.md): `name=path` pairs, or REPOS_FILE. */
    REPOS: optionalString,
    /** YAML or JSON: per repository its path, base branch, test command and push remote. */
    REPOS_FILE: optionalString,
    /** Where each conversation's worktree of a repository lives. */
    WORKTREES_DIR: z.string().default('.data/worktrees'),
    /** Worktrees one repository may have at once; a new conversation past it is refused. */
    REPO_WORKTREES_MAX: int(1, 1000).default(20),
    /** An external coding CLI that does `/code` work instead of the built-in loop (argv, JSON or words). */
    CODING_AGENT_COMMAND: optionalString,
    /**
     * What one run of it is held at under a budget in dollars before it starts (docs/budgets.md), and
     * what "{budget_usd}" in the command becomes, for a CLI's own spend cap.
     */
    CODING_AGENT_RESERVE_USD: z.coerce
      .number({ error: 'expected an amount of US dollars such as 5 or 2.50' })
      .positive('expected an amount of US dollars above 0, such as 5 or 2.50')
      .max(100_000, 'expected at most 100000 dollars')
      .default(5),
    /** The same under a budget in tokens (input, output, cache reads and writes). */
    CODING_AGENT_RESERVE_TOKENS: int(1, 1_000_000_000).default(2_000_000),
    /** Variables the coding CLI gets besides PATH, LANG and TERM (its sandbox's allowlist); never a withheld one. */
    CODING_AGENT_ENV: list.default(['ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'OPENROUTER_API_KEY']),

    /** Where this bot's HTTP server is reachable from people's browsers (the OAuth callback: docs/connections.md). */
    PUBLIC_URL: url.optional(),
    /** 32 bytes, base64: seals per-person OAuth tokens at rest (AES-256-GCM). */
    TOKEN_ENCRYPTION_KEY: optionalString,
    /** The key before the current one, while tokens are re-sealed (read with either, written with the current). */
    TOKEN_ENCRYPTION_KEY_PREVIOUS: optionalString,
    /** How long a Connect link works. */
    CONNECT_TTL_SECONDS: int(30, 86_400).default(600),

    /** Schedules one person may have that have not finished (docs/schedules.md). */
    SCHEDULES_MAX_PER_PERSON: int(1, 10_000).default(20),
    /** The shortest time between two runs of a schedule: a duration such as 5m, 300s or 1h. */
    SCHEDULE_MIN_INTERVAL: z
      .string()
      .regex(/^\d{1,6}(s|m|h|d)$/, 'expected a duration such as 5m, 300s or 1h')
      .default('5m'),

    ...SLACK_ENV,
    ...DISCORD_ENV,
    ...SANDBOX_ENV,

    /** Which platforms' inbound halves this process runs (ingress and all roles); unset: every configured one. */
    /** OpenTelemetry's own variables, read by src/telemetry/sdk.ts: checked here so a typo stops the start. */
    OTEL_EXPORTER_OTLP_ENDPOINT: otlpEndpoint,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: otlpEndpoint,

    INGRESS_PLATFORMS: list
      .pipe(z.array(z.enum(['slack', 'discord'], { error: 'expected slack and/or discord' })))
      .optional(),
  })
  .transform((c) => ({
    ...c,
    /** The provider in use: explicit, else the first one with a key, else the offline scripted model. */
    AI_PROVIDER:
      c.AI_PROVIDER ??
      (c.ANTHROPIC_API_KEY
        ? 'anthropic'
        : c.OPENAI_API_KEY
          ? 'openai'
          : c.OPENROUTER_API_KEY
            ? 'openrouter'
            : 'scripted'),
  }));

export type Config = z.infer<typeof ConfigSchema>;

/** The variable whose presence turns each platform on (INGRESS_PLATFORMS names platforms). */
const PLATFORM_CREDENTIALS: Record<string, string> = { slack: SLACK_CREDENTIAL, discord: DISCORD_CREDENTIAL };

/**
 * APPROVERS entries that would silently match nobody: a missing platform (`U123`), a stray space
 * (`slack: U123`), a lowercased Slack id (`slack:u123`), or an id of the wrong shape. What ids look
 * like, the platforms' rules say; entries of a platform they do not describe (one an embedding
 * application adds) are taken as written.
 */
function approverProblems(raw: string): string[] {
  const platforms = platformDirectory();
  const groupPrefixes = new Set(platforms.all().flatMap((r) => (r.ids.groupPrefix ? [r.ids.groupPrefix] : [])));
  const examples = platforms
    .all()
    .slice(0, 2)
    .map((r) => `${r.name}:${r.ids.examples.user}`)
    .join(' or ');
  const problems: string[] = [];
  for (const entry of raw.split(',').filter((e) => e.trim() !== '')) {
    const shown = JSON.stringify(entry.trim().slice(0, 60));
    // Full forms (slack:T…:U…) and groups (discord-role:…, slack-usergroup:…): the policy's parser.
    const [head = '', ...ids] = entry.trim().split(':');
    if ((ids.length > 0 && groupPrefixes.has(head)) || ids.length === 2) {
      const parsed = parsePerson(entry.trim(), platforms);
      if (!parsed.ok) problems.push(parsed.message);
      continue;
    }
    const match = /^([a-z]+):(\S+)$/.exec(entry.trim());
    if (!match) {
      problems.push(`${shown} is not platform:user-id (e.g. ${examples})`);
      continue;
    }
    const [, platform = '', id = ''] = match;
    if (!platforms.has(platform)) continue;
    const rules = platforms.rulesOf(platform);
    if (!rules.ids.user.test(id))
      problems.push(`${shown} is not a ${platform} user id (e.g. ${platform}:${rules.ids.examples.user})`);
  }
  return problems;
}

/**
 * Problems that involve several variables. They are checked on the raw values, next to the schema,
 * so one run reports them together with every single-variable problem.
 */
function crossFieldProblems(env: Env): EnvProblem[] {
  const problems: EnvProblem[] = [];
  const need = (variable: string, message: string) => problems.push([variable, message]);
  const provider = env.AI_PROVIDER;
  const fallback = (env.AI_PROVIDER_FALLBACK ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const keyFor: Record<string, [string, string | undefined]> = {
    anthropic: ['ANTHROPIC_API_KEY', env.ANTHROPIC_API_KEY],
    openai: ['OPENAI_API_KEY', env.OPENAI_API_KEY ?? env.OPENAI_BASE_URL],
    openrouter: ['OPENROUTER_API_KEY', env.OPENROUTER_API_KEY],
  };
  for (const chosen of new Set([...(provider ? [provider] : []), ...fallback])) {
    const key = keyFor[chosen];
    if (key && !key[1]) {
      need(
        key[0],
        `is missing: ${chosen === provider ? 'AI_PROVIDER' : 'AI_PROVIDER_FALLBACK'} uses ${chosen}, which needs an API key`,
      );
    }
  }
  problems.push(...slackEnvProblems(env));
  for (const platform of (env.INGRESS_PLATFORMS ?? '').split(',').map((s) => s.trim())) {
    const credential = PLATFORM_CREDENTIALS[platform];
    if (credential && !env[credential]) need('INGRESS_PLATFORMS', `names ${platform}, but ${credential} is not set`);
  }
  for (const problem of approverProblems(env.APPROVERS ?? '')) need('APPROVERS', problem);
  problems.push(...discordEnvProblems(env));
  if (env.REPOS && env.REPOS_FILE) need('REPOS_FILE', 'is set together with REPOS: set one of them');
  for (const name of ['TOKEN_ENCRYPTION_KEY', 'TOKEN_ENCRYPTION_KEY_PREVIOUS'] as const) {
    const value = env[name];
    if (!value) continue;
    try {
      parseEncryptionKey(value, name);
    } catch (error) {
      need(name, (error as Error).message.replace(new RegExp(`^${name}:? ?`), ''));
    }
  }
  if (env.TOKEN_ENCRYPTION_KEY_PREVIOUS && !env.TOKEN_ENCRYPTION_KEY)
    need('TOKEN_ENCRYPTION_KEY', 'is missing: TOKEN_ENCRYPTION_KEY_PREVIOUS is only read beside a current key');
  if (env.REPOS) {
    const repos = parseReposVariable(env.REPOS);
    if (!repos.ok) for (const problem of repos.problems) need('REPOS', problem.replace(/^REPOS: /, ''));
  }
  return problems;
}

/** The line every configuration error ends with, wherever it is found (at load, or as a feature starts). */
const CONFIG_HINT = 'See .env.example for every variable and its default.';

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(
      `Invalid configuration (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${problems.map((p) => `  - ${p}`).join('\n')}\n${CONFIG_HINT}`,
    );
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** Reads `.env` (if present) under the real environment: a variable set in the environment wins. */
function readEnv(env: Env = process.env, dotenvPath = path.resolve('.env')): Env {
  if (!existsSync(dotenvPath)) return { ...env };
  const fromFile = parseDotenv(readFileSync(dotenvPath));
  return { ...fromFile, ...env };
}

/** Validates the environment, reporting every problem at once and never echoing a secret. */
export function loadConfig(env: Env = readEnv()): Config {
  // Empty strings mean "unset" (a blank line in .env, `FOO= npm start`).
  const relevant: Env = {};
  for (const key of Object.keys(ConfigSchema.in.shape)) {
    const value = env[key];
    if (value !== undefined && value.trim() !== '') relevant[key] = value;
  }
  const parsed = ConfigSchema.safeParse(relevant);
  const crossField = crossFieldProblems(relevant);
  if (parsed.success && crossField.length === 0) return parsed.data;
  const problems = (parsed.success ? [] : parsed.error.issues).map((issue) => {
    const variable = String(issue.path[0] ?? 'config');
    const value = relevant[variable];
    const shown =
      value === undefined || SECRET_VARIABLES.has(variable) ? '' : ` (got ${JSON.stringify(value.slice(0, 80))})`;
    return `${variable}: ${issue.message}${shown}`;
  });
  for (const [variable, message] of crossField) problems.push(`${variable}: ${message}`);
  throw new ConfigError(problems);
}

function maskSecret(value: string): string {
  if (value.length <= 8) return '****';
  return `${value.slice(0, 4)}…****`;
}

/** The effective configuration as printable lines, secrets masked. */
export function describeConfig(config: Config): Array<[string, string]> {
  return Object.entries(config).map(([key, value]) => {
    if (value === undefined) return [key, '(unset)'];
    const text = Array.isArray(value)
      ? value.join(',')
      : typeof value === 'object' && value !== null
        ? Object.entries(value)
            .map(([k, v]) => `${k}:${String(v)}`)
            .join(',')
        : String(value);
    return [key, SECRET_VARIABLES.has(key) ? maskSecret(text) : text];
  });
}
