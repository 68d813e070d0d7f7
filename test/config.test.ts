import { describe, expect, it } from 'vitest';
import { ConfigError, describeConfig, loadConfig } from '../src/config.ts';
import { runCli } from './helpers/processes.ts';

describe('configuration', () => {
  it('lists every problem at once, naming the variable and what was expected', () => {
    let error: unknown;
    try {
      loadConfig({ WORKER_CONCURRENCY: 'lots', HTTP_PORT: '99999', AI_PROVIDER: 'gemini', SLACK_MODE: 'webhook' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems).toHaveLength(4);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^WORKER_CONCURRENCY: expected a whole number between 1 and 256 \(got "lots"\)$/),
        expect.stringMatching(/^HTTP_PORT: expected a whole number between 0 and 65535/),
        expect.stringMatching(/^AI_PROVIDER: expected one of anthropic, openai, openrouter, scripted/),
        expect.stringMatching(/^SLACK_MODE: /),
      ]),
    );
  });

  it('never echoes a secret in a problem report', () => {
    expect(() =>
      loadConfig({ DATABASE_URL: 'mysql://root:hunter2@db/x', SLACK_APP_TOKEN: 'xapp-secret-value' }),
    ).toThrow(ConfigError);
    try {
      loadConfig({ DATABASE_URL: 'mysql://root:hunter2@db/x', SLACK_APP_TOKEN: 'xapp-secret-value' });
    } catch (e) {
      const text = (e as Error).message;
      expect(text).toContain('DATABASE_URL');
      expect(text).toContain('SLACK_BOT_TOKEN: is missing');
      expect(text).not.toContain('hunter2');
      expect(text).not.toContain('xapp-secret-value');
    }
  });

  it('requires the key of the chosen model provider at startup', () => {
    expect(() => loadConfig({ AI_PROVIDER: 'anthropic' })).toThrow(/ANTHROPIC_API_KEY: is missing/);
    expect(() => loadConfig({ AI_PROVIDER: 'scripted', AI_PROVIDER_FALLBACK: 'openai' })).toThrow(/OPENAI_API_KEY/);
  });

  it('falls back to the offline scripted model when no provider or key is configured', () => {
    expect(loadConfig({}).AI_PROVIDER).toBe('scripted');
    expect(loadConfig({ OPENAI_API_KEY: 'sk-abcdefghijkl' }).AI_PROVIDER).toBe('openai');
  });

  it('masks secrets when describing the effective configuration', () => {
    const rows = Object.fromEntries(
      describeConfig(loadConfig({ SLACK_BOT_TOKEN: 'xoxb-1234567890-abcdef', SLACK_APP_TOKEN: 'xapp-1-A0-123-abc' })),
    );
    expect(rows.SLACK_BOT_TOKEN).toBe('xoxb…****');
    expect(rows.WORKER_CONCURRENCY).toBe('8');
  });

  it('makes `countersign start` exit 1 with the whole list on bad env', async () => {
    const run = runCli(['start'], {
      WORKER_CONCURRENCY: '0',
      APPROVAL_TTL_SECONDS: 'soon',
      ANTHROPIC_API_KEY: '',
      AI_PROVIDER: 'anthropic',
    });
    const { code } = await run.exited;
    expect(code).toBe(1);
    const err = run.stderr();
    expect(err).toContain('Invalid configuration (3 problems)');
    expect(err).toContain('WORKER_CONCURRENCY');
    expect(err).toContain('APPROVAL_TTL_SECONDS');
    expect(err).toContain('ANTHROPIC_API_KEY: is missing');
  });

  it('prints the effective configuration with `countersign config`', async () => {
    const run = runCli(['config'], {
      DISCORD_TOKEN: 'discord-token-secret-value',
      DISCORD_APPLICATION_ID: '123456789012345678',
    });
    expect((await run.exited).code).toBe(0);
    expect(run.stdout()).toMatch(/DISCORD_TOKEN\s+disc…\*\*\*\*/);
    expect(run.stdout()).not.toContain('discord-token-secret-value');
  });

  it('refuses APPROVERS entries that would silently match nobody, naming each', () => {
    let error: unknown;
    try {
      loadConfig({
        APPROVERS: 'U123, slack:u123,slack: U123,discord:alice,slack:U0123ABCD,discord:123456789012345678',
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems).toEqual([
      'APPROVERS: "U123" is not platform:user-id (e.g. slack:U0123ABCD or discord:123456789012345678)',
      'APPROVERS: "slack:u123" is not a slack user id (e.g. slack:U0123ABCD)',
      'APPROVERS: "slack: U123" is not platform:user-id (e.g. slack:U0123ABCD or discord:123456789012345678)',
      'APPROVERS: "discord:alice" is not a discord user id (e.g. discord:123456789012345678)',
    ]);
    expect(loadConfig({ APPROVERS: 'slack:U0123ABCD, discord:123456789012345678' }).APPROVERS).toEqual([
      'slack:U0123ABCD',
      'discord:123456789012345678',
    ]);
  });

  it('accepts the full person forms and groups in APPROVERS, and refuses malformed ones', () => {
    const full = 'slack:T0123ABCD:U0123ABCD, discord-role:222222222222222222, slack-usergroup:S0ONCALL1';
    expect(loadConfig({ APPROVERS: full }).APPROVERS).toEqual([
      'slack:T0123ABCD:U0123ABCD',
      'discord-role:222222222222222222',
      'slack-usergroup:S0ONCALL1',
    ]);
    expect(() => loadConfig({ APPROVERS: 'slack:t0123:U0123ABCD' })).toThrow(/is not a slack workspace id/);
    expect(() => loadConfig({ APPROVERS: 'discord-role:oncall' })).toThrow(/is not a discord group id/);
  });

  it('refuses INGRESS_PLATFORMS naming a platform that has no token', () => {
    expect(() => loadConfig({ INGRESS_PLATFORMS: 'discord' })).toThrow(
      /INGRESS_PLATFORMS: names discord, but DISCORD_TOKEN is not set/,
    );
    expect(() => loadConfig({ INGRESS_PLATFORMS: 'teams' })).toThrow(
      /INGRESS_PLATFORMS: expected slack and\/or discord/,
    );
    expect(
      loadConfig({ INGRESS_PLATFORMS: 'slack', SLACK_BOT_TOKEN: 'xoxb-1-2', SLACK_APP_TOKEN: 'xapp-1-2' })
        .INGRESS_PLATFORMS,
    ).toEqual(['slack']);
  });

  it('refuses a key or token an HTTP header cannot carry, naming the character but never the value', () => {
    let error: unknown;
    try {
      loadConfig({
        ANTHROPIC_API_KEY: 'sk-ant-…',
        SLACK_BOT_TOKEN: 'xoxb-…',
        SLACK_APP_TOKEN: 'xapp-1-secret-é',
        OPENAI_API_KEY: 'sk-secret\u00a0value',
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      'ANTHROPIC_API_KEY: contains "…" (U+2026) at character 8, which an HTTP header cannot carry: a placeholder copied from the docs? Put the real value here',
      'OPENAI_API_KEY: contains U+00A0 at character 10, which an HTTP header cannot carry',
      'SLACK_BOT_TOKEN: contains "…" (U+2026) at character 6, which an HTTP header cannot carry: a placeholder copied from the docs? Put the real value here',
      'SLACK_APP_TOKEN: contains "é" (U+00E9) at character 15, which an HTTP header cannot carry',
    ]);
    expect((error as Error).message).not.toContain('secret');
  });

  it('names swapped Slack tokens as swapped, and each token of the wrong kind', () => {
    expect(() =>
      loadConfig({ SLACK_BOT_TOKEN: 'xapp-1-A0-123-abc', SLACK_APP_TOKEN: 'xoxb-1234567890-abcdef' }),
    ).toThrow(
      new ConfigError([
        'SLACK_BOT_TOKEN/SLACK_APP_TOKEN: the two tokens are swapped: the bot token (xoxb-…) goes in SLACK_BOT_TOKEN, the app-level token (xapp-…) in SLACK_APP_TOKEN',
      ]),
    );
    let error: unknown;
    try {
      loadConfig({ SLACK_BOT_TOKEN: 'xoxp-1234-user', SLACK_APP_TOKEN: 'not-a-token' });
    } catch (e) {
      error = e;
    }
    expect((error as ConfigError).problems).toEqual([
      'SLACK_BOT_TOKEN: is a user token (xoxp-…): expected the bot token, which starts with xoxb- (OAuth & Permissions → Bot User OAuth Token)',
      'SLACK_APP_TOKEN: is not a Slack token: expected the app-level token, which starts with xapp- (Basic Information → App-Level Tokens)',
    ]);
    expect((error as Error).message).not.toContain('1234');
  });

  it('refuses Discord application and guild ids that are not snowflakes, with every other problem', () => {
    let error: unknown;
    try {
      loadConfig({
        DISCORD_TOKEN: 'discord-token',
        DISCORD_APPLICATION_ID: '42',
        DISCORD_GUILD_ID: 'my-guild',
        SLACK_BOT_TOKEN: 'xapp-1',
        SLACK_APP_TOKEN: 'xapp-2',
      });
    } catch (e) {
      error = e;
    }
    expect((error as ConfigError).problems).toEqual([
      'DISCORD_APPLICATION_ID: expected a Discord id: 17 to 20 digits (Developer Mode on, then right-click → Copy ID) (got "42")',
      'DISCORD_GUILD_ID: expected a Discord id: 17 to 20 digits (Developer Mode on, then right-click → Copy ID) (got "my-guild")',
      'SLACK_BOT_TOKEN: is an app-level token (xapp-…): expected the bot token, which starts with xoxb- (OAuth & Permissions → Bot User OAuth Token)',
    ]);
    const ok = loadConfig({
      DISCORD_TOKEN: 'discord-token',
      DISCORD_APPLICATION_ID: '123456789012345678',
      DISCORD_GUILD_ID: '12345678901234567890',
    });
    expect(ok.DISCORD_GUILD_ID).toBe('12345678901234567890');
  });

  it('makes `countersign start` with a placeholder key exit 1 at once, naming the variable', async () => {
    const run = runCli(['start'], { AI_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'sk-ant-…' });
    expect((await run.exited).code).toBe(1);
    expect(run.stderr()).toContain(
      'ANTHROPIC_API_KEY: contains "…" (U+2026) at character 8, which an HTTP header cannot carry',
    );
  });

  it("reads what a coding CLI's run is held at under budgets, refusing amounts that are not one", () => {
    expect(loadConfig({})).toMatchObject({ CODING_AGENT_RESERVE_USD: 5, CODING_AGENT_RESERVE_TOKENS: 2_000_000 });
    expect(loadConfig({ CODING_AGENT_RESERVE_USD: '2.50' }).CODING_AGENT_RESERVE_USD).toBe(2.5);
    let error: unknown;
    try {
      loadConfig({ CODING_AGENT_RESERVE_USD: '0', CODING_AGENT_RESERVE_TOKENS: '1.5' });
    } catch (e) {
      error = e;
    }
    expect((error as ConfigError).problems).toEqual([
      expect.stringMatching(/^CODING_AGENT_RESERVE_USD: expected an amount of US dollars above 0/),
      expect.stringMatching(/^CODING_AGENT_RESERVE_TOKENS: expected a whole number between 1 and 1000000000/),
    ]);
  });

  it('defaults the OpenRouter model to an alias that does not retire', () => {
    expect(loadConfig({}).OPENROUTER_MODEL).toBe('~anthropic/claude-sonnet-latest');
  });

  it('refuses `start --role=ingress` with no platform to listen to, in one line', async () => {
    const run = runCli(['start', '--role=ingress'], {});
    expect((await run.exited).code).toBe(1);
    expect(run.stderr().trim()).toBe(
      'countersign: --role=ingress has no platform to listen to: set SLACK_BOT_TOKEN or DISCORD_TOKEN (the console runs only with --role=all)',
    );
  });
});

describe('settings read as people write them', () => {
  it.each([
    ['TRUE', true],
    ['on', true],
    ['Yes', true],
    ['1', true],
    ['False', false],
    ['OFF', false],
    ['no', false],
    ['0', false],
  ])('a boolean takes %s', (written, meant) => {
    expect(loadConfig({ ENABLE_RUN_COMMAND: written }).ENABLE_RUN_COMMAND).toBe(meant);
  });

  it('refuses a boolean it cannot read, naming the spellings it takes', () => {
    expect(() => loadConfig({ ENABLE_RUN_COMMAND: 'sure' })).toThrow(
      /ENABLE_RUN_COMMAND: expected true or false \(or yes\/no, on\/off, 1\/0\) \(got "sure"\)/,
    );
  });

  it('refuses an OTLP endpoint that is not an http(s) URL', () => {
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'notaurl' })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT: expected an http:\/\/ or https:\/\/ URL/,
    );
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://localhost:4318' }).OTEL_EXPORTER_OTLP_ENDPOINT).toBe(
      'http://localhost:4318',
    );
  });

  it('ends every configuration error with the same hint, however it is found', () => {
    expect(() => loadConfig({ HTTP_PORT: 'x' })).toThrow(/\nSee \.env\.example for every variable and its default\.$/);
    expect(new ConfigError(['REPOS_FILE: x']).message).toMatch(
      /\nSee \.env\.example for every variable and its default\.$/,
    );
  });
});
