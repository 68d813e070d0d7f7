import type { AdapterContext } from '../platform.ts';
import { LIMITS } from './limits.ts';
import { SLACK_RULES } from './rules.ts';
import { slackConversationId } from './conversation-ids.ts';
import type { SlackOutbound } from './outbound.ts';
import type { SlackUserGroups } from './user-groups.ts';
import type { SlackAgentSessions } from './agent-sessions.ts';

/** `agent_session_stopped`, as Slack documents it (team_id is on the enclosing event_callback). */
export interface AgentSessionStoppedEvent {
  type: 'agent_session_stopped';
  channel: string;
  thread_ts?: string;
  user?: string;
  streaming_message_ts?: string[];
  event_ts?: string;
}

/**
 * Slack's native Stop on an agent session: stops the thread's running turn exactly as the Stop
 * button does (the same permission check, recorded, cross-process by notification). Slack does not
 * move the session away from `processing` itself: the worker's `cancelled` does, and here, when
 * nothing was running to stop, the session is set `active` at once.
 */
export function createSessionStoppedHandler(
  ctx: AdapterContext,
  deps: { outbound: SlackOutbound; groups: SlackUserGroups; sessions?: SlackAgentSessions },
) {
  return async function onSessionStopped(event: AgentSessionStoppedEvent, team: string): Promise<void> {
    const conversation = slackConversationId(
      team,
      event.channel,
      SLACK_RULES.isDirect({ platform: SLACK_RULES.name, channel: event.channel }) ? undefined : event.thread_ts,
    );
    const running = await ctx.activeTurnOf(conversation);
    const reply = {
      platform: SLACK_RULES.name,
      channel: event.channel,
      workspace: team,
      ...(event.thread_ts ? { thread: event.thread_ts } : {}),
    };
    if (!running || !event.user) {
      ctx.log.info({ channel: event.channel, thread: event.thread_ts }, 'agent session stopped with nothing running');
      await deps.sessions?.set(reply, 'active');
      return;
    }
    const result = await ctx.stopTurn(running, await deps.groups.personOf(event.user, team, team));
    if (!result.ok) await deps.outbound.ephemeral(event.channel, event.user, result.reason, event.thread_ts);
  };
}

/** `assistant_thread_started`, as Slack documents it: a person opened the agent (a new assistant thread). */
export interface AssistantThreadStartedEvent {
  type: 'assistant_thread_started';
  assistant_thread: { user_id: string; channel_id: string; thread_ts: string; context?: { channel_id?: string } };
}

/**
 * When a person opens the agent, suggest what it can do for them: one prompt per skill (the first
 * four), each a short request a click sends as their message. Someone the policy does not serve
 * gets none. A failure only logs: the thread works without suggestions.
 */
export function createThreadStartedHandler(
  ctx: AdapterContext,
  deps: { client: { apiCall(method: string, args: Record<string, unknown>): Promise<unknown> } },
) {
  return async function onThreadStarted(event: AssistantThreadStartedEvent, team: string): Promise<void> {
    const thread = event.assistant_thread;
    const person = { platform: SLACK_RULES.name, userId: thread.user_id, workspace: team };
    const place = { platform: SLACK_RULES.name, channel: thread.channel_id, workspace: team, thread: thread.thread_ts };
    if (!ctx.approvals.mayUse(person, place).ok) return;
    const prompts = ctx.skills
      .list()
      .slice(0, LIMITS.suggestedPrompts)
      .map((skill) => ({
        title: skill.name.slice(0, LIMITS.suggestedPromptTitle),
        message: `Use the ${skill.name} skill${skill.description ? `: ${skill.description}` : '.'}`.slice(
          0,
          LIMITS.suggestedPromptMessage,
        ),
      }));
    if (prompts.length === 0) return;
    try {
      await deps.client.apiCall('assistant.threads.setSuggestedPrompts', {
        channel_id: thread.channel_id,
        thread_ts: thread.thread_ts,
        title: 'Skills you can run',
        prompts,
      });
    } catch (error) {
      ctx.log.warn({ err: error, channel: thread.channel_id }, 'could not suggest prompts for an assistant thread');
    }
  };
}
