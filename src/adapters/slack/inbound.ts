import { App, LogLevel } from '@slack/bolt';
import type { Logger } from 'pino';
import type { AdapterContext, InboundHandle } from '../platform.ts';
import type { SlackInboundSettings } from './settings.ts';

/** What the listening half is given by the adapter: its own settings and its speaking half. */
interface SlackInboundDeps {
  settings: SlackInboundSettings;
  outbound: SlackOutbound;
  sessions?: SlackAgentSessions;
}
import { CountersignHttpReceiver } from './http-receiver.ts';
import { DurableSocketModeReceiver } from './socket-receiver.ts';
import type { SlackOutbound } from './outbound.ts';
import { createEventHandlers, type SlackDelivery, type SlackMessageEvent } from './on-event.ts';
import { createCommandHandlers } from './on-command.ts';
import { WORK_COMMANDS } from '../../core/work-commands.ts';
import { createActionHandler, createDenyFormHandler } from './on-action.ts';
import { DENY_FORM_CALLBACK } from './blocks.ts';
import { SlackUserGroups } from './user-groups.ts';
import { SlackMemberships } from './memberships.ts';
import type { SlackAgentSessions } from './agent-sessions.ts';
import { connectWhenReachable, DEFAULT_SLACK_API_URL } from './reachability.ts';
import {
  createSessionStoppedHandler,
  createThreadStartedHandler,
  type AgentSessionStoppedEvent,
  type AssistantThreadStartedEvent,
} from './on-session.ts';

export { inviteHint } from './on-command.ts';

/** Bolt's logs go through pino, at warn and above. */
function boltLogger(log: Logger) {
  const child = log.child({ component: 'slack-bolt' });
  return {
    debug: () => undefined,
    info: () => undefined,
    warn: (...msg: unknown[]) => child.warn(msg.map(String).join(' ')),
    error: (...msg: unknown[]) => child.error(msg.map(String).join(' ')),
    setLevel: () => undefined,
    getLevel: () => LogLevel.WARN,
    setName: () => undefined,
  };
}

/**
 * Slack's listening half, wiring only: a receiver (Socket Mode by default, or HTTP behind a load
 * balancer) feeds a Bolt app whose listeners are the handlers of `on-event.ts`, `on-command.ts` and
 * `on-action.ts`. A delivery is acknowledged only once its work item is committed (with the event's
 * dedupe mark, in one statement), so a delivery we could not take is redelivered by Slack and a
 * retried one is taken once.
 */
export async function startSlackInbound(ctx: AdapterContext, deps: SlackInboundDeps): Promise<InboundHandle> {
  const { settings } = deps;
  return connectWhenReachable({
    apiUrl: settings.apiUrl ?? DEFAULT_SLACK_API_URL,
    log: ctx.log,
    holdReadiness: (what) => ctx.http.holdReadiness(what),
    connect: () => connectSlack(ctx, deps),
  });
}

/** Starts the Bolt app once Slack can be reached: the receiver, the bot's identity, the listeners. */
async function connectSlack(ctx: AdapterContext, deps: SlackInboundDeps): Promise<InboundHandle> {
  const { log } = ctx;
  const { settings } = deps;
  const clientOptions = settings.apiUrl ? { slackApiUrl: settings.apiUrl } : {};
  const receiver =
    settings.mode === 'http'
      ? new CountersignHttpReceiver({ http: ctx.http, signingSecret: settings.signingSecret ?? '', log })
      : new DurableSocketModeReceiver(
          {
            appToken: settings.appToken ?? '',
            logger: boltLogger(log),
            // Every call, apps.connections.open included, goes to the API URL when it is set.
            installerOptions: { clientOptions },
          },
          log,
        );
  const app = new App({
    token: settings.botToken,
    receiver,
    clientOptions,
    logger: boltLogger(log),
    // Both receivers acknowledge an event only after Bolt processed it (see their comments); this
    // flag documents the intent, Bolt itself ignores it for custom receivers.
    processBeforeResponse: true,
  });
  const auth = await app.client.auth.test();
  const botUserId = String(auth.user_id ?? '');
  const botName = String(auth.user ?? 'Countersign');

  const groups = new SlackUserGroups(app.client, log, { namesGroups: () => ctx.approvals.namesGroups('slack') });
  const events = createEventHandlers(ctx, { botUserId, outbound: deps.outbound, groups });
  const memberships = new SlackMemberships(app.client, log);
  const workCommandNames = {
    code: settings.codeCommand ?? '/code',
    review: settings.reviewCommand ?? '/review',
    research: settings.researchCommand ?? '/research',
    schedule: settings.scheduleCommand ?? '/schedule',
  };
  const commands = createCommandHandlers(ctx, {
    outbound: deps.outbound,
    botName,
    groups,
    memberships,
    workCommandNames,
  });
  const delivery = (
    event: unknown,
    body: { team_id?: unknown; event_id?: unknown },
    context: { retryNum?: number },
  ): SlackDelivery => ({
    team: String(body.team_id),
    eventId: String(body.event_id),
    event: event as SlackMessageEvent,
    ...(context.retryNum !== undefined ? { retryNum: context.retryNum } : {}),
  });

  app.event('app_mention', ({ event, body, context }) => events.onMention(delivery(event, body, context)));
  app.event('message', ({ event, body, context }) => events.onMessage(delivery(event, body, context)));
  const sessionStopped = createSessionStoppedHandler(ctx, {
    outbound: deps.outbound,
    groups,
    ...(deps.sessions ? { sessions: deps.sessions } : {}),
  });
  app.event('agent_session_stopped', ({ event, body }) =>
    sessionStopped(event as unknown as AgentSessionStoppedEvent, String((body as { team_id?: unknown }).team_id)),
  );
  const threadStarted = createThreadStartedHandler(ctx, { client: app.client });
  app.event('assistant_thread_started', ({ event, body }) =>
    threadStarted(event as unknown as AssistantThreadStartedEvent, String((body as { team_id?: unknown }).team_id)),
  );
  app.command(settings.skillsCommand, commands.onSkills);
  app.command(settings.skillCommand, commands.onSkill);
  app.command(settings.countersignCommand ?? '/countersign', commands.onCountersign);
  for (const name of WORK_COMMANDS) app.command(workCommandNames[name], commands.onWork(name));
  app.action(/.*/, createActionHandler(ctx, { outbound: deps.outbound, groups }));
  app.view(DENY_FORM_CALLBACK, createDenyFormHandler(ctx, { outbound: deps.outbound, groups }));

  // Rethrown, so that the receivers see the failure: an event is then left unacknowledged (Slack
  // retries it) instead of being answered as taken. The receivers log it with the delivery's ids.
  app.error(async (error) => {
    throw error;
  });

  await app.start();
  log.info({ mode: settings.mode, botUserId }, 'Slack connected');
  return {
    async stop() {
      await app.stop();
    },
  };
}
