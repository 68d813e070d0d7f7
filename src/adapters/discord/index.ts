import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import type { Pool } from '../../db/pool.ts';
import type { PlatformAdapter } from '../platform.ts';

export function createDiscordAdapter(_config: Config, _pool: Pool, _log: Logger): PlatformAdapter {
  throw new Error('The Discord adapter is not part of this build yet; unset DISCORD_* variables to run without it.');
}
