import { z } from 'zod';
import { headerSecret, int, optionalString, url, type Env, type EnvProblem } from '../../core/env-fields.ts';

const slashCommand = (example: string) =>
  z
    .string()
    .regex(/^\/[a-z0-9_-]{1,31}$/, `expected a slash command such as ${example}`)
    .default(example);

/** What Slack's listening half needs of the configuration (built by `slackInboundSettings` below). */
export interface SlackInboundSettings {
  botToken: string;
  /** `socket` (an outbound WebSocket, the default) or `http` (`POST /slack/events` on our port). */
  mode: 'socket' | 'http';
  /** Socket Mode's app-level token (xapp-…). */
  appToken?: string;
  /** HTTP mode's signing secret, checked on every request. */
  signingSecret?: string;
  /** Every Web API call goes here when set (tests, proxies). */
  apiUrl?: string;
  skillsCommand: string;
  skillCommand: string;
  /** `/countersign grants` and help; default `/countersign`. */
  countersignCommand?: string;
  /** The work commands (src/core/work-commands.ts); defaults `/code`, `/review`, `/research`, `/schedule`. */
  codeCommand?: string;
  reviewCommand?: string;
  researchCommand?: string;
  scheduleCommand?: string;
}

/** What Slack's outbound half needs of the configuration (the inbound half gets its own section). */
export interface SlackOutboundSettings {
  botToken: string;
  apiUrl?: string;
  /** Posts and edits per minute per workspace, shared by every worker (SLACK_UPDATES_PER_MINUTE). */
  updatesPerMinute: number;
  /** `auto`: native streaming where Slack allows it; `off`: edits only (SLACK_STREAMING). */
  streaming: 'auto' | 'off';
  streamRolloverSeconds: number;
  streamStartsPerMinute: number;
  /** SLACK_AGENT_SESSIONS; absent: `off` (an embedding app that built its own settings). */
  agentSessions?: 'auto' | 'off';
  agentSessionsFallbackMinutes?: number;
}

/** Slack's section of the environment: composed into the app's configuration by src/config.ts. */
export const SLACK_ENV = {
  SLACK_BOT_TOKEN: headerSecret,
  SLACK_APP_TOKEN: headerSecret,
  SLACK_SIGNING_SECRET: optionalString,
  SLACK_MODE: z.enum(['socket', 'http']).default('socket'),
  SLACK_API_URL: url.optional(),
  SLACK_SKILLS_COMMAND: slashCommand('/skills'),
  SLACK_SKILL_COMMAND: slashCommand('/skill'),
  SLACK_COUNTERSIGN_COMMAND: slashCommand('/countersign'),
  SLACK_CODE_COMMAND: slashCommand('/code'),
  SLACK_REVIEW_COMMAND: slashCommand('/review'),
  SLACK_RESEARCH_COMMAND: slashCommand('/research'),
  SLACK_SCHEDULE_COMMAND: slashCommand('/schedule'),
  /** `auto`: Slack agent sessions (status, title, native Stop) where the workspace allows them; `off`: never. */
  SLACK_AGENT_SESSIONS: z.enum(['auto', 'off']).default('auto'),
  /** After a workspace refuses agent sessions, how long before they are tried there again. */
  SLACK_AGENT_SESSIONS_FALLBACK_MINUTES: int(1, 1440).default(30),
  /** Below Tier 3's 50 chat.update per minute (limits.ts), with room for the cards' own edits. */
  SLACK_UPDATES_PER_MINUTE: int(1, 600).default(45),
  SLACK_STREAMING: z.enum(['auto', 'off']).default('auto'),
  /** Slack ends a stream after about five minutes: roll over before it does. */
  SLACK_STREAM_ROLLOVER_SECONDS: int(1, 295).default(270),
  /** Below chat.startStream's Tier 2 (about 20 a minute). */
  SLACK_STREAM_STARTS_PER_MINUTE: int(1, 600).default(18),
};

/** Slack's variables whose values never appear in logs, errors or `countersign config`. */
export const SLACK_SECRETS = ['SLACK_BOT_TOKEN', 'SLACK_APP_TOKEN', 'SLACK_SIGNING_SECRET'] as const;

/** The variable whose presence turns Slack on. */
export const SLACK_CREDENTIAL = 'SLACK_BOT_TOKEN';

type SlackEnv = z.infer<z.ZodObject<typeof SLACK_ENV>>;

/** What Slack's listening half is given, from its section of the configuration. */
export function slackInboundSettings(env: SlackEnv & { SLACK_BOT_TOKEN: string }): SlackInboundSettings {
  return {
    botToken: env.SLACK_BOT_TOKEN,
    mode: env.SLACK_MODE,
    appToken: env.SLACK_APP_TOKEN,
    signingSecret: env.SLACK_SIGNING_SECRET,
    apiUrl: env.SLACK_API_URL,
    skillsCommand: env.SLACK_SKILLS_COMMAND,
    skillCommand: env.SLACK_SKILL_COMMAND,
    countersignCommand: env.SLACK_COUNTERSIGN_COMMAND,
    codeCommand: env.SLACK_CODE_COMMAND,
    reviewCommand: env.SLACK_REVIEW_COMMAND,
    researchCommand: env.SLACK_RESEARCH_COMMAND,
    scheduleCommand: env.SLACK_SCHEDULE_COMMAND,
  };
}

/** What Slack's speaking half is given, from its section of the configuration. */
export function slackOutboundSettings(env: SlackEnv & { SLACK_BOT_TOKEN: string }): SlackOutboundSettings {
  return {
    botToken: env.SLACK_BOT_TOKEN,
    apiUrl: env.SLACK_API_URL,
    updatesPerMinute: env.SLACK_UPDATES_PER_MINUTE,
    streaming: env.SLACK_STREAMING,
    streamRolloverSeconds: env.SLACK_STREAM_ROLLOVER_SECONDS,
    streamStartsPerMinute: env.SLACK_STREAM_STARTS_PER_MINUTE,
    agentSessions: env.SLACK_AGENT_SESSIONS,
    agentSessionsFallbackMinutes: env.SLACK_AGENT_SESSIONS_FALLBACK_MINUTES,
  };
}

/** Problems between Slack's variables, on the raw values, so one run reports them with the rest. */
export function slackEnvProblems(env: Env): EnvProblem[] {
  const problems: EnvProblem[] = [];
  const mode = env.SLACK_MODE ?? 'socket';
  if (env.SLACK_BOT_TOKEN && mode === 'socket' && !env.SLACK_APP_TOKEN) {
    problems.push([
      'SLACK_APP_TOKEN',
      'is missing: Socket Mode needs an app-level token with connections:write — or set SLACK_MODE=http',
    ]);
  }
  if (env.SLACK_BOT_TOKEN && mode === 'http' && !env.SLACK_SIGNING_SECRET) {
    problems.push([
      'SLACK_SIGNING_SECRET',
      "is missing: SLACK_MODE=http verifies every request with the app's signing secret",
    ]);
  }
  if ((env.SLACK_APP_TOKEN || env.SLACK_SIGNING_SECRET) && !env.SLACK_BOT_TOKEN) {
    problems.push(['SLACK_BOT_TOKEN', 'is missing: the Slack adapter needs the bot token (xoxb-…) to post replies']);
  }
  problems.push(...tokenProblems(env.SLACK_BOT_TOKEN?.trim(), env.SLACK_APP_TOKEN?.trim()));
  return problems;
}

/** Slack's token kinds by prefix, for saying which token was pasted where. */
const TOKEN_KINDS: Record<string, string> = {
  'xoxb-': 'a bot token',
  'xapp-': 'an app-level token',
  'xoxp-': 'a user token',
  'xoxe-': 'a token rotation or config token',
};

function tokenKind(token: string): string {
  const prefix = token.slice(0, 5);
  return TOKEN_KINDS[prefix] ? `${TOKEN_KINDS[prefix]} (${prefix}…)` : 'not a Slack token';
}

/**
 * The Slack tokens' shapes: the bot token starts `xoxb-`, the app-level token `xapp-`. Pasting one
 * into the other's variable is common (both are on the app's pages), and Slack's answer to it —
 * `not_allowed_token_type` or `invalid_auth` at connect — does not name the variable.
 */
function tokenProblems(bot: string | undefined, app: string | undefined): EnvProblem[] {
  if (bot?.startsWith('xapp-') && app?.startsWith('xoxb-')) {
    return [
      [
        'SLACK_BOT_TOKEN/SLACK_APP_TOKEN',
        'the two tokens are swapped: the bot token (xoxb-…) goes in SLACK_BOT_TOKEN, the app-level token (xapp-…) in SLACK_APP_TOKEN',
      ],
    ];
  }
  const problems: EnvProblem[] = [];
  if (bot && !bot.startsWith('xoxb-')) {
    problems.push([
      'SLACK_BOT_TOKEN',
      `is ${tokenKind(bot)}: expected the bot token, which starts with xoxb- (OAuth & Permissions → Bot User OAuth Token)`,
    ]);
  }
  if (app && !app.startsWith('xapp-')) {
    problems.push([
      'SLACK_APP_TOKEN',
      `is ${tokenKind(app)}: expected the app-level token, which starts with xapp- (Basic Information → App-Level Tokens)`,
    ]);
  }
  return problems;
}
