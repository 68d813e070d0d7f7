import { z } from 'zod';
import { headerSecret, url, type Env, type EnvProblem } from '../../core/env-fields.ts';

/** A Discord id: a snowflake, 17 to 20 digits. */
const snowflake = z
  .string()
  .trim()
  .regex(/^\d{17,20}$/, 'expected a Discord id: 17 to 20 digits (Developer Mode on, then right-click → Copy ID)')
  .optional();

/** What Discord's listening half needs of the configuration (built by `discordSettings` below). */
export interface DiscordInboundSettings {
  token: string;
  applicationId: string;
  /** Slash commands are registered in this guild only (they update at once) instead of globally. */
  guildId?: string;
  /** Every REST call goes here when set (tests, proxies). */
  apiUrl?: string;
}

/** Discord's section of the environment: composed into the app's configuration by src/config.ts. */
export const DISCORD_ENV = {
  DISCORD_TOKEN: headerSecret,
  DISCORD_APPLICATION_ID: snowflake,
  DISCORD_GUILD_ID: snowflake,
  DISCORD_API_URL: url.optional(),
};

/** Discord's variables whose values never appear in logs, errors or `countersign config`. */
export const DISCORD_SECRETS = ['DISCORD_TOKEN'] as const;

/** The variable whose presence turns Discord on. */
export const DISCORD_CREDENTIAL = 'DISCORD_TOKEN';

type DiscordEnv = z.infer<z.ZodObject<typeof DISCORD_ENV>>;

/** What Discord's adapter is given (both halves), from its section of the configuration. */
export function discordSettings(env: DiscordEnv & { DISCORD_TOKEN: string }): DiscordInboundSettings {
  if (!env.DISCORD_APPLICATION_ID) {
    throw new Error('DISCORD_TOKEN and DISCORD_APPLICATION_ID are required for Discord');
  }
  return {
    token: env.DISCORD_TOKEN,
    applicationId: env.DISCORD_APPLICATION_ID,
    guildId: env.DISCORD_GUILD_ID,
    apiUrl: env.DISCORD_API_URL,
  };
}

/** Problems between Discord's variables, on the raw values. */
export function discordEnvProblems(env: Env): EnvProblem[] {
  return env.DISCORD_TOKEN && !env.DISCORD_APPLICATION_ID
    ? [['DISCORD_APPLICATION_ID', 'is missing: slash commands are registered under the application id']]
    : [];
}
