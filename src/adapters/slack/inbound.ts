import { App, LogLevel, SocketModeReceiver } from '@slack/bolt';
import type { Logger } from 'pino';
import type { AdapterContext, InboundHandle } from '../platform.ts';
import { Priority } from '../../queue/work-item.ts';
import { parseStopButton } from '../../queue/stop-requests.ts';
import { formatSkillList, skillRunPrompt } from '../../skills/index.ts';
import { CountersignHttpReceiver } from './http-receiver.ts';
import type { SlackOutbound } from './outbound.ts';

const UNAVAILABLE =
  'Countersign is temporarily unavailable (its database is unreachable). Please try again in a moment.';

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
 * in need no mention. Retried deliveries are taken once.
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
      : new SocketModeReceiver({
          appToken: config.SLACK_APP_TOKEN ?? '',
          logger: boltLogger(log),
          // Every call, apps.connections.open included, goes to SLACK_API_URL when it is set.
          installerOptions: { clientOptions },
        });
  const app = new App({
    token: config.SLACK_BOT_TOKEN,
    receiver,
    clientOptions,
    logger: boltLogger(log),
    // Acknowledge only after the work item is enqueued: what we could not take, Slack redelivers.
    processBeforeResponse: config.SLACK_MODE === 'http',
  });
  const auth = await app.client.auth.test();
  const botUserId = String(auth.user_id ?? '');

  /** True the first time an event id is seen (a retried delivery carries the same id). */
  const firstDelivery = async (eventId: string | undefined) => {
    if (!eventId) return true;
    const { rowCount } = await pool.query(
      'INSERT INTO countersign.inbound_events (event_id) VALUES ($1) ON CONFLICT DO NOTHING',
      [eventId],
    );
    return rowCount === 1;
  };

  const conversationOf = (team: string, event: SlackMessageEvent, thread: string | undefined) =>
    event.channel_type === 'im' ? `slack:${team}:dm:${event.channel}` : `slack:${team}:${event.channel}:${thread}`;

  const takeMessage = async (team: string, event: SlackMessageEvent, eventId: string | undefined) => {
    const prompt = (event.text ?? '').replace(new RegExp(`<@${botUserId}>`, 'g'), '').trim();
    if (!prompt || !event.user) return;
    if (!(await firstDelivery(eventId))) return;
    const isDm = event.channel_type === 'im';
    const thread = isDm ? event.thread_ts : (event.thread_ts ?? event.ts);
    const target = {
      platform: 'slack',
      channel: event.channel,
      workspace: team,
      recipient: event.user,
      ...(thread ? { thread } : {}),
    };
    const placeholder = await deps.outbound.post(target, '…');
    try {
      await ctx.enqueue({
        type: 'CHAT',
        priority: Priority.CRITICAL,
        conversationId: conversationOf(team, event, thread),
        requester: { platform: 'slack', userId: event.user },
        input: { prompt },
        payload: { ts: event.ts },
        reply: { ...target, messageId: placeholder.messageId },
      });
    } catch (error) {
      log.error({ err: error }, 'could not enqueue a Slack message');
      await deps.outbound.edit(target, placeholder.messageId, UNAVAILABLE).catch(() => undefined);
      throw error;
    }
  };

  app.event('app_mention', async ({ event, body }) => {
    const e = event as unknown as SlackMessageEvent;
    if (e.bot_id) return;
    await takeMessage(String(body.team_id), e, String(body.event_id));
  });

  app.event('message', async ({ event, body }) => {
    const e = event as unknown as SlackMessageEvent;
    // Bots (this one included), edits, joins and other subtypes are not messages to answer.
    if (e.subtype || e.bot_id || !e.user || e.user === botUserId) return;
    const team = String(body.team_id);
    if (e.channel_type === 'im') return takeMessage(team, e, String(body.event_id));
    // A mention arrives as app_mention too; answer it once.
    if ((e.text ?? '').includes(`<@${botUserId}>`) || !e.thread_ts) return;
    const { rowCount } = await pool.query('SELECT 1 FROM countersign.conversations WHERE id = $1', [
      conversationOf(team, e, e.thread_ts),
    ]);
    if (rowCount) await takeMessage(team, e, String(body.event_id));
  });

  app.command(config.SLACK_SKILLS_COMMAND, async ({ ack }) => {
    await ack({ response_type: 'ephemeral', text: formatSkillList(ctx.skills) });
  });

  app.command(config.SLACK_SKILL_COMMAND, async ({ command, ack }) => {
    const [name = '', ...rest] = command.text.trim().split(/\s+/);
    const run = skillRunPrompt(ctx.skills, name, rest.join(' '));
    if (typeof run === 'string') {
      await ack({ response_type: 'ephemeral', text: run });
      return;
    }
    const team = command.team_id;
    const target = { platform: 'slack', channel: command.channel_id, workspace: team, recipient: command.user_id };
    const placeholder = await deps.outbound.post(target, `Running skill \`${run.skill.name}\`…`);
    const threaded = { ...target, thread: placeholder.messageId };
    const reply = await deps.outbound.post(threaded, '…');
    await ctx.enqueue({
      type: 'CHAT',
      priority: Priority.CRITICAL,
      conversationId: `slack:${team}:${command.channel_id}:${placeholder.messageId}`,
      requester: { platform: 'slack', userId: command.user_id },
      input: { prompt: run.prompt, skill: run.skill.name },
      payload: {},
      reply: { ...threaded, messageId: reply.messageId },
    });
    await ack();
  });

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

  app.error(async (error) => {
    log.error({ err: error }, 'Slack listener failed');
  });

  await app.start();
  log.info({ mode: config.SLACK_MODE, botUserId }, 'Slack connected');
  return {
    async stop() {
      await app.stop();
    },
  };
}
