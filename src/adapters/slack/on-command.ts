import type { SlackCommandMiddlewareArgs } from '@slack/bolt';
import type { AdapterContext, AdmissionDraft, ConnectResult } from '../platform.ts';
import { Priority } from '../../core/work-item.ts';
import { MODE_HELP, TEXTS } from '../../core/texts.ts';
import { WORK_COMMAND_USAGE, WORK_COMMANDS, type WorkCommandName } from '../../core/work-commands.ts';
import { formatSkillList, skillRunPrompt } from '../../skills/index.ts';
import type { SlackOutbound } from './outbound.ts';
import { slackErrorOf } from './api-errors.ts';
import type { SlackUserGroups } from './user-groups.ts';
import { describeGrant, NO_GRANTS } from '../../approval/service.ts';
import { connectLinkMessage, grantListBlocks, replyBlocks, scheduleListBlocks, type Block } from './blocks.ts';
import type { ReplyButton } from '../../core/reply-target.ts';
import { grantsInTheirConversations, type SlackMemberships } from './memberships.ts';
import { SLACK_RULES } from './rules.ts';
import { slackConversationId } from './conversation-ids.ts';
import { markdownToMrkdwn } from './format/index.ts';
import type { Requester } from '../../core/person.ts';

/** The names this app's work commands are registered under (SLACK_CODE_COMMAND and its kin). */
type WorkCommandNames = Record<WorkCommandName, string>;

const DEFAULT_WORK_COMMAND_NAMES: WorkCommandNames = {
  code: '/code',
  review: '/review',
  research: '/research',
  schedule: '/schedule',
};

/** What `/countersign` (without `grants`, `status`, `connect` or `connections`) answers. */
function countersignHelp(command: string, mode: keyof typeof MODE_HELP, names: WorkCommandNames): string {
  return [
    `Here, a message you send while I'm working ${MODE_HELP[mode]} (mode \`${mode}\`, docs/conversations.md).`,
    `*${command} grants* — the standing grants ("Always allow here") that apply in this channel, each with a Revoke button. In a DM: also the grants you made in conversations you are still in.`,
    `*${command} status* — your running and queued work: type, priority, age.`,
    `*${command} budget* — the spend limits your requests here count against: used, reserved, left, reset.`,
    `*${command} schedules* — your schedules (an approver: everyone's in this channel), each with Pause/Resume and Delete.`,
    `*${command} connect SERVER* — connect your own account to a per-person server; the link is shown to you alone.`,
    `*${command} connections* — your connections: server, account, connected, last used.`,
    '*/skills* — the skills I can run · */skill <name> <input>* — run one.',
    ...WORK_COMMANDS.map((w) => `*${names[w]} ${WORK_COMMAND_USAGE[w].args}* — ${WORK_COMMAND_USAGE[w].description}.`),
    'Mention me in a channel, or write to me in a DM, to ask for anything else. Risky actions always wait for an Approve.',
  ].join('\n');
}

/** The Web API errors that mean the bot may not post in the channel (it has not been invited). */
const NOT_A_MEMBER = new Set(['not_in_channel', 'channel_not_found']);

/** Why a command could not start, and what to do about it, for the person who ran it. */
export const inviteHint = (botName: string, channel: string): string =>
  `I can't post in <#${channel}> because I'm not a member of it. Invite me with \`/invite @${botName}\` and run the command again.`;

export interface CommandDeps {
  outbound: SlackOutbound;
  botName: string;
  groups: SlackUserGroups;
  memberships: Pick<SlackMemberships, 'isMember'>;
  /** For the help text; default `/code`, `/review`, `/research`. */
  workCommandNames?: WorkCommandNames;
}

/**
 * The slash commands: the skills list, and the runs — a skill, `/code`, `/review`, `/research` —
 * that start a conversation in the channel, in the thread of the header they post.
 */
export function createCommandHandlers(ctx: AdapterContext, deps: CommandDeps) {
  return {
    onSkills: (args: SlackCommandMiddlewareArgs) => listSkills(ctx, args),
    onSkill: (args: SlackCommandMiddlewareArgs) => runSkill(ctx, deps, args),
    onWork: (name: WorkCommandName) => (args: SlackCommandMiddlewareArgs) => runWorkCommand(ctx, deps, name, args),
    onCountersign: (args: SlackCommandMiddlewareArgs) => answerCountersign(ctx, deps, args),
  };
}

/** `/skills`: the skills this bot can run, to the person who asked. */
async function listSkills(ctx: AdapterContext, { ack }: SlackCommandMiddlewareArgs): Promise<void> {
  await ack({ response_type: 'ephemeral', text: formatSkillList(ctx.skills) });
}

/** `/skill <name> <input>`: an unknown skill is answered privately; a known one starts a run. */
async function runSkill(
  ctx: AdapterContext,
  deps: CommandDeps,
  { command, ack, respond }: SlackCommandMiddlewareArgs,
): Promise<void> {
  const [name = '', ...rest] = command.text.trim().split(/\s+/);
  const run = skillRunPrompt(ctx.skills, name, rest.join(' '));
  if (typeof run === 'string') {
    await ack({ response_type: 'ephemeral', text: run });
    return;
  }
  // Acknowledged first: Slack gives a command 3 seconds, and what follows makes platform calls.
  await ack();
  const skillRun: CommandRun = {
    header: `Running skill \`${run.skill.name}\`…`,
    item: {
      type: 'CHAT',
      priority: Priority.CRITICAL,
      input: { prompt: run.prompt, skill: run.skill.name },
      payload: {},
    },
  };
  await startRun(ctx, deps, command, async () => skillRun, respond);
}

/**
 * `/code`, `/review`, `/research`: the core reads the text only once the policy admitted the person
 * (an unknown repository's answer lists the known ones, which is not for everyone); what it cannot
 * read is answered privately, anything else is posted and enqueued as a skill run is.
 */
async function runWorkCommand(
  ctx: AdapterContext,
  deps: CommandDeps,
  name: WorkCommandName,
  { command, ack, respond }: SlackCommandMiddlewareArgs,
): Promise<void> {
  await ack();
  await startRun(
    ctx,
    deps,
    command,
    async () => {
      const work = ctx.workCommand(name, command.text);
      if (work.ok) {
        const { header, type, priority, prompt, payload, call } = work;
        return { header, item: { type, priority, input: { prompt, ...(call ? { call } : {}) }, payload } };
      }
      await respond({ response_type: 'ephemeral', text: markdownToMrkdwn(work.message) });
      return undefined;
    },
    respond,
  );
}

/** A run a command starts: the header posted in the channel, and its work item less where it lives. */
interface CommandRun {
  header: string;
  item: Pick<AdmissionDraft, 'type' | 'priority' | 'input' | 'payload'>;
}

/** The fields of a slash command that say who ran it, and where. */
type CommandOrigin = { team_id: string; channel_id: string; user_id: string; command: string };

/** Where a command was run, as a reply target addressed to the person who ran it. */
const commandPlace = (command: CommandOrigin) => ({
  platform: SLACK_RULES.name,
  channel: command.channel_id,
  workspace: command.team_id,
  recipient: command.user_id,
});

/**
 * Posts the run's header in the channel (its thread is the conversation) and enqueues the run.
 * `prepare` is asked only once the person is admitted; undefined from it means the person was told
 * why there is no run, and nothing is posted.
 */
async function startRun(
  ctx: AdapterContext,
  deps: CommandDeps,
  command: CommandOrigin,
  prepare: () => Promise<CommandRun | undefined>,
  respond: SlackCommandMiddlewareArgs['respond'],
): Promise<void> {
  const target = commandPlace(command);
  const requester = await deps.groups.personOf(command.user_id, command.team_id, command.team_id);
  let headerId: string | undefined;
  try {
    const admitted = await ctx.admit({
      requester,
      place: target,
      queued: true,
      // Admitted first: the header is posted only for a run that will be enqueued.
      draft: async () => {
        const run = await prepare();
        if (!run) return undefined;
        const header = await postRunHeader(ctx, deps, target, run.header, respond);
        if (!header) return undefined;
        headerId = header.messageId;
        return {
          ...run.item,
          conversationId: slackConversationId(command.team_id, command.channel_id, header.messageId),
          reply: { ...target, thread: header.messageId },
          placeholder: '…',
        };
      },
    });
    if (!admitted.ok) await respond({ response_type: 'ephemeral', text: admitted.refusal });
  } catch (error) {
    // Slack does not retry slash commands: say so, to the person who ran it.
    ctx.log.error(
      { err: error, channel: command.channel_id, user: command.user_id, command: command.command },
      'could not enqueue a command run',
    );
    await respond({ response_type: 'ephemeral', text: TEXTS.unavailable }).catch(() => undefined);
    if (headerId) await deps.outbound.edit(target, headerId, TEXTS.unavailable).catch(() => undefined);
  }
}

/**
 * Posts the header ("Running skill …", or the core's for a work command) in the channel. It is
 * Markdown that may quote what the person typed: the outbound's conversion shows a mention in it as
 * text and never pings. Undefined when the bot is not a member there: the person who ran the
 * command has been told how to invite it.
 */
async function postRunHeader(
  ctx: AdapterContext,
  deps: CommandDeps,
  target: ReturnType<typeof commandPlace>,
  header: string,
  respond: SlackCommandMiddlewareArgs['respond'],
): Promise<{ messageId: string } | undefined> {
  try {
    return await deps.outbound.post(target, header);
  } catch (error) {
    const code = slackErrorOf(error);
    if (!code || !NOT_A_MEMBER.has(code)) throw error;
    // chat.postEphemeral needs the bot in the channel too; the command's response_url does not.
    ctx.log.info({ channel: target.channel, error: code }, 'a command was run in a channel the bot is not in');
    await respond({ response_type: 'ephemeral', text: inviteHint(deps.botName, target.channel) });
    return undefined;
  }
}

/** The `/countersign` verbs that answer the person who ran it about their own things. */
const PERSONAL_VERBS = new Set(['grants', 'status', 'budget', 'schedules', 'connect', 'connections']);

/**
 * `/countersign grants` lists the standing grants with a Revoke button each, to people the policy
 * lets use the bot, and only grants of conversations the viewer is in (a DM lists the viewer's own
 * grants from elsewhere, less those of channels they have since left); `/countersign status` the
 * asker's own running and queued work; `connect SERVER` and `connections` their per-person
 * connections; anything else: help. Every answer is ephemeral: a Connect link is never in the channel.
 */
async function answerCountersign(
  ctx: AdapterContext,
  deps: CommandDeps,
  { command, ack, respond }: SlackCommandMiddlewareArgs,
): Promise<void> {
  const [verb = '', argument = ''] = command.text.trim().split(/\s+/);
  const asked = verb.toLowerCase();
  if (!PERSONAL_VERBS.has(asked)) {
    const here = { platform: SLACK_RULES.name, channel: command.channel_id, workspace: command.team_id };
    await ack({
      response_type: 'ephemeral',
      text: countersignHelp(
        command.command,
        ctx.approvals.conversationMode(here),
        deps.workCommandNames ?? DEFAULT_WORK_COMMAND_NAMES,
      ),
    });
    return;
  }
  const person = await deps.groups.personOf(command.user_id, command.team_id, command.team_id);
  const place = commandPlace(command);
  const admitted = ctx.approvals.mayUse(person, place);
  if (!admitted.ok) {
    await ack({ response_type: 'ephemeral', text: admitted.refusal });
    return;
  }
  if (asked === 'status') {
    await ack({ response_type: 'ephemeral', text: markdownToMrkdwn(await ctx.workStatus(person)) });
    return;
  }
  if (asked === 'budget') {
    await ack({ response_type: 'ephemeral', text: markdownToMrkdwn(await ctx.budgetStatus(person, place)) });
    return;
  }
  if (asked === 'schedules') {
    const listing = await ctx.schedules(person, place);
    const text = markdownToMrkdwn(listing.heading);
    await ack({ response_type: 'ephemeral', text, blocks: scheduleListBlocks(listing) });
    return;
  }
  if (asked === 'connect' || asked === 'connections') {
    // Acknowledged first: starting a connection asks the server's sign-in, which can take longer than
    // the 3 seconds Slack gives a command; the answer goes through the command's response_url.
    await ack();
    try {
      const answer =
        asked === 'connect'
          ? await connectAnswer(ctx, command.command, person, argument)
          : connectionsAnswer(await ctx.connections(person));
      await respond({ response_type: 'ephemeral', ...answer });
    } catch (error) {
      // Acknowledged already: without this the person would see nothing at all.
      ctx.log.error({ err: error, user: command.user_id, verb: asked }, 'could not answer a connections command');
      await respond({ response_type: 'ephemeral', text: TEXTS.unavailable }).catch(() => undefined);
    }
    return;
  }
  await ack({ response_type: 'ephemeral', ...(await grantsAnswer(ctx, deps, command, person)) });
}

/**
 * `/countersign connect SERVER`: a link button for this person alone, with the URL as text where
 * buttons are not shown; or the core's reason why not. What the person typed is shown only through
 * Markdown conversion, so a mention in it never pings.
 */
async function connectAnswer(
  ctx: AdapterContext,
  commandName: string,
  person: Requester,
  server: string,
): Promise<{ text: string; blocks?: Block[] }> {
  if (!server) return { text: markdownToMrkdwn(connectUsage(commandName, ctx.connectableServers)) };
  const result: ConnectResult = await ctx.connect(person, server);
  if (!result.ok) return { text: markdownToMrkdwn(result.message) };
  return connectLinkMessage(result.server, result.url);
}

/** `connect` without a server: how to use it, and the servers there are. */
function connectUsage(commandName: string, servers: readonly string[]): string {
  const usage = `Usage: \`${commandName} connect SERVER\`.`;
  if (servers.length === 0) return `${usage} No per-person servers are configured here.`;
  return `${usage} Per-person servers: ${servers.map((s) => `\`${s}\``).join(', ')}.`;
}

/** `/countersign grants`: the grants of conversations the viewer is in, a Revoke button each. */
async function grantsAnswer(
  ctx: AdapterContext,
  deps: CommandDeps,
  command: CommandOrigin,
  person: Requester,
): Promise<{ text: string; blocks?: Block[] }> {
  const grants = await grantsInTheirConversations(
    await ctx.approvals.grantsSeenFrom(person, commandPlace(command)),
    command.user_id,
    command.channel_id,
    deps.memberships,
  );
  if (grants.length === 0) return { text: NO_GRANTS };
  const lines = grants.map((g) => ({ id: g.id, text: describeGrant(g) }));
  return {
    text: `${grants.length} standing grant${grants.length === 1 ? '' : 's'} apply here.`,
    blocks: grantListBlocks(lines, grants.length),
  };
}

/** `connections`: the person's list, with a Disconnect button per connected server (ending the clicker's own). */
function connectionsAnswer(view: { text: string; buttons: ReplyButton[] }): { text: string; blocks: Block[] } {
  return { text: markdownToMrkdwn(view.text), blocks: replyBlocks(view.text, view.buttons) };
}
