import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import type { Pool } from '../../db/pool.ts';
import type { PlatformAdapter } from '../platform.ts';

export function createSlackAdapter(_config: Config, _pool: Pool, _log: Logger): PlatformAdapter {
  throw new Error('The Slack adapter is not part of this build yet; unset SLACK_* variables to run without it.');
}
