import type { ReplyTarget } from '../../core/reply-target.ts';
import { SLACK_RULES } from './rules.ts';

/**
 * Slack conversation ids, written and read only here: a thread is `slack:<team>:<channel>:<thread ts>`,
 * a DM (one conversation whatever its threads) `slack:<team>:dm:<channel>`.
 */
const DM = 'dm';

/** The conversation of a thread, or of a DM when `thread` is undefined. */
export function slackConversationId(team: string, channel: string, thread: string | undefined): string {
  return thread === undefined
    ? `${SLACK_RULES.name}:${team}:${DM}:${channel}`
    : `${SLACK_RULES.name}:${team}:${channel}:${thread}`;
}

/** A thread's conversation id back as the thread it lives in; undefined for DMs and anything else. */
export function threadOfConversation(id: string): ReplyTarget | undefined {
  const [platform, team, channel, thread, ...rest] = id.split(':');
  if (platform !== SLACK_RULES.name || !team || !channel || channel === DM || !thread || rest.length) return undefined;
  return { platform: SLACK_RULES.name, workspace: team, channel, thread };
}
