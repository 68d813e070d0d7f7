import { App, LogLevel, type RespondFn } from '@slack/bolt';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { AdapterContext, InboundHandle } from '../platform.ts';
import { enqueueInboundWorkItem } from '../../queue/turn-lifecycle.ts';
import { Priority } from '../../core/work-item.ts';
import { parseStopButton } from '../../core/buttons.ts';
import { formatSkillList, skillRunPrompt } from '../../skills/index.ts';
import { CountersignHttpReceiver } from './http-receiver.ts';
import { DurableSocketModeReceiver } from './socket-receiver.ts';
import type { SlackOutbound } from './outbound.ts';
import { TEXTS } from '../../core/texts.ts';

const UNAVAILABLE = TEXTS.unavailable;

/**
 * Slack retries an Events API delivery it saw fail 3 times (nearly at once, after 1 minute, after 5
 * minutes); the delivery carrying this retry number is the last one, so only then is the person told.
 */
const LAST_SLACK_RETRY = 3;

/** The Web API errors that mean the bot may not post in the channel (it has not been invited). */
const NOT_A_MEMBER = new Set(['not_in_channel', 'channel_not_found']);

const SlackApiError = z.object({ data: z.object({ error: z.string() }) });
const slackErrorOf = (error: unknown): string | undefined => SlackApiError.safeParse(error).data?.data.error;

/** Why a command could not start, and what to do about it, for the person who ran it. */
export const inviteHint = (botName: string, channel: string): string =>
  `I can't post in <#${channel}> because I'm not a member of it. Invite me with \`/invite @${botName}\` and run the command again.`;

interface SlackMessageEvent {
  type: string;
  subtype?: string;
  user?: string;
  bot_id?: string;
  text?: string;
  ts: string;
  thread_ts?: string;
  channel: string;
  channel_type?: string;
}

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
 * Slack's listening half: a Bolt app over Socket Mode (default) or HTTP (behind a load balancer).
 * Mentions get a threaded reply, DMs a reply in the DM, and follow-ups in a thread the bot is already
 * in need no mention. A delivery is acknowledged only once its work item is committed (with the
 * event's dedupe mark, in one statement), so a delivery we could not take is redelivered by Slack and
 * a retried one is taken once. No platform call happens before the enqueue: the worker posts the
 * "…" placeholder.
 */
export async function startSlackInbound(
  ctx: AdapterContext,
  deps: { outbound: SlackOutbound },
): Promise<InboundHandle> {
  const { config, log, pool } = ctx;
  const clientOptions = config.SLACK_API_URL ? { slackApiUrl: config.SLACK_API_URL } : {};
  const receiver =
    config.SLACK_MODE === 'http'
      ? new CountersignHttpReceiver({ http: ctx.http, signingSecret: config.SLACK_SIGNING_SECRET ?? '', log })
      : new DurableSocketModeReceiver(
          {
            appToken: config.SLACK_APP_TOKEN ?? '',
            logger: boltLogger(log),
            // Every call, apps.connections.open included, goes to SLACK_API_URL when it is set.
            installerOptions: { clientOptions },
          },
          log,
        );
  const app = new App({
    token: config.SLACK_BOT_TOKEN,
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

  const conversationOf = (team: string, event: SlackMessageEvent, thread: string | undefined) =>
    event.channel_type === 'im' ? `slack:${team}:dm:${event.channel}` : `slack:${team}:${event.channel}:${thread}`;

  const takeMessage = async (
    team: string,
    event: SlackMessageEvent,
    eventId: string,
    retryNum: number | undefined,
  ): Promise<void> => {
    const prompt = (event.text ?? '').replace(new RegExp(`<@${botUserId}>`, 'g'), '').trim();
    if (!prompt || !event.user) return;
    const isDm = event.channel_type === 'im';
    const thread = isDm ? event.thread_ts : (event.thread_ts ?? event.ts);
    const target = {
      platform: 'slack',
      channel: event.channel,
      workspace: team,
      recipient: event.user,
      ...(thread ? { thread } : {}),
    };
    const ids = { eventId, channel: event.channel, ts: event.ts, team, retryNum: retryNum ?? 0 };
    try {
      const item = await enqueueInboundWorkItem(pool, `slack:${eventId}`, {
        type: 'CHAT',
        priority: Priority.CRITICAL,
        conversationId: conversationOf(team, event, thread),
        requester: { platform: 'slack', userId: event.user },
        input: { prompt },
        payload: { ts: event.ts, eventId },
        reply: target,
        placeholder: '…',
      });
      if (!item) log.debug(ids, 'Slack event already taken; acknowledging the redelivery');
    } catch (error) {
      // Rethrown: the delivery goes unacknowledged and Slack retries it. Only its last retry is
      // answered in the thread, so a person is never left without a word.
      if ((retryNum ?? 0) >= LAST_SLACK_RETRY) {
        log.error({ err: error, ...ids }, 'could not enqueue a Slack message on its last delivery; it is lost');
        await deps.outbound.post(target, UNAVAILABLE).catch(() => undefined);
      }
      throw error;
    }
  };

  app.event('app_mention', async ({ event, body, context }) => {
    const e = event as unknown as SlackMessageEvent;
    if (e.bot_id) return;
    await takeMessage(String(body.team_id), e, String(body.event_id), context.retryNum);
  });

  app.event('message', async ({ event, body, context }) => {
    const e = event as unknown as SlackMessageEvent;
    // Bots (this one included), edits, joins and other subtypes are not messages to answer.
    if (e.subtype || e.bot_id || !e.user || e.user === botUserId) return;
    const team = String(body.team_id);
    if (e.channel_type === 'im') return takeMessage(team, e, String(body.event_id), context.retryNum);
    // A mention arrives as app_mention too; answer it once.
    if ((e.text ?? '').includes(`<@${botUserId}>`) || !e.thread_ts) return;
    const { rowCount } = await pool.query('SELECT 1 FROM countersign.conversations WHERE id = $1', [
      conversationOf(team, e, e.thread_ts),
    ]);
    if (rowCount) await takeMessage(team, e, String(body.event_id), context.retryNum);
  });

  app.command(config.SLACK_SKILLS_COMMAND, async ({ ack }) => {
    await ack({ response_type: 'ephemeral', text: formatSkillList(ctx.skills) });
  });

  app.command(config.SLACK_SKILL_COMMAND, async ({ command, ack, respond }) => {
    const [name = '', ...rest] = command.text.trim().split(/\s+/);
    const run = skillRunPrompt(ctx.skills, name, rest.join(' '));
    if (typeof run === 'string') {
      await ack({ response_type: 'ephemeral', text: run });
      return;
    }
    // Acknowledged first: Slack gives a command 3 seconds, and what follows makes platform calls.
    await ack();
    await startSkillRun(command, run, respond);
  });

  /** Posts the run's header in the channel (its thread is the conversation) and enqueues the run. */
  const startSkillRun = async (
    command: { team_id: string; channel_id: string; user_id: string },
    run: { prompt: string; skill: { name: string } },
    respond: RespondFn,
  ): Promise<void> => {
    const team = command.team_id;
    const target = { platform: 'slack', channel: command.channel_id, workspace: team, recipient: command.user_id };
    let header: { messageId: string };
    try {
      header = await deps.outbound.post(target, `Running skill \`${run.skill.name}\`…`);
    } catch (error) {
      const code = slackErrorOf(error);
      if (!code || !NOT_A_MEMBER.has(code)) throw error;
      // chat.postEphemeral needs the bot in the channel too; the command's response_url does not.
      log.info({ channel: command.channel_id, error: code }, 'a skill was run in a channel the bot is not in');
      await respond({ response_type: 'ephemeral', text: inviteHint(botName, command.channel_id) });
      return;
    }
    try {
      await ctx.enqueue({
        type: 'CHAT',
        priority: Priority.CRITICAL,
        conversationId: `slack:${team}:${command.channel_id}:${header.messageId}`,
        requester: { platform: 'slack', userId: command.user_id },
        input: { prompt: run.prompt, skill: run.skill.name },
        payload: {},
        reply: { ...target, thread: header.messageId },
        placeholder: '…',
      });
    } catch (error) {
      // Slack does not retry slash commands: say so, to the person who ran it.
      log.error({ err: error, channel: command.channel_id, user: command.user_id }, 'could not enqueue a skill run');
      await respond({ response_type: 'ephemeral', text: UNAVAILABLE }).catch(() => undefined);
      await deps.outbound.edit(target, header.messageId, UNAVAILABLE).catch(() => undefined);
    }
  };

  app.action(/.*/, async ({ ack, body, action }) => {
    await ack();
    const value = (action as { value?: string }).value ?? '';
    const user = body.user.id;
    const person = { platform: 'slack', userId: user };
    const stopId = parseStopButton(value);
    const result = stopId ? await ctx.stopTurn(stopId, person) : await ctx.approvals.click(value, person);
    if (!result.ok) {
      const channel = (body as { channel?: { id: string } }).channel?.id;
      const thread = (body as { message?: { thread_ts?: string } }).message?.thread_ts;
      if (channel) await deps.outbound.ephemeral(channel, user, result.reason, thread);
    }
  });

  // Rethrown, so that the receivers see the failure: an event is then left unacknowledged (Slack
  // retries it) instead of being answered as taken. The receivers log it with the delivery's ids.
  app.error(async (error) => {
    throw error;
  });

  await app.start();
  log.info({ mode: config.SLACK_MODE, botUserId }, 'Slack connected');
  return {
    async stop() {
      await app.stop();
    },
  };
}
