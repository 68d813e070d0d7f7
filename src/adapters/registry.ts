import { PlatformDirectory, type PlatformRules } from '../core/platform-rules.ts';
import { SLACK_RULES } from './slack/rules.ts';
import { DISCORD_RULES } from './discord/rules.ts';
import { CONSOLE_RULES } from './console/rules.ts';

/**
 * The platforms Countersign ships. Their rules are known to every process whatever it is configured
 * to listen to: a worker answers turns, and a policy names people, of any of them. Loading a rules
 * module loads no platform SDK.
 */
const BUILT_IN_PLATFORM_RULES: readonly PlatformRules[] = [SLACK_RULES, DISCORD_RULES, CONSOLE_RULES];

/** The built-in platforms' rules, and those of the extra platforms given (an embedding application's). */
export function platformDirectory(extra: Iterable<PlatformRules> = []): PlatformDirectory {
  return new PlatformDirectory([...BUILT_IN_PLATFORM_RULES, ...extra]);
}
