import type { SlackCommandMiddlewareArgs } from '@slack/bolt';
import type { AdapterContext } from '../platform.ts';
import { Priority } from '../../core/work-item.ts';
import { MODE_HELP, TEXTS } from '../../core/texts.ts';
import { formatSkillList, skillRunPrompt } from '../../skills/index.ts';
import type { SlackOutbound } from './outbound.ts';
import { slackErrorOf } from './api-errors.ts';
import type { SlackUserGroups } from './user-groups.ts';
import { describeGrant, NO_GRANTS } from '../../approval/service.ts';
import { grantListBlocks } from './blocks.ts';
import { grantsInTheirConversations, type SlackMemberships } from './memberships.ts';
import { SLACK_RULES } from './rules.ts';
import { slackConversationId } from './conversation-ids.ts';

/** What `/countersign` (without `grants`) answers. */
function countersignHelp(command: string, mode: keyof typeof MODE_HELP): string {
  return [
    `Here, a message you send while I'm working ${MODE_HELP[mode]} (mode \`${mode}\`, docs/conversations.md).`,
    `*${command} grants* — the standing grants ("Always allow here") that apply in this channel, each with a Revoke button. In a DM: also the grants you made in conversations you are still in.`,
    '*/skills* — the skills I can run · */skill <name> <input>* — run one.',
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
}

/** The slash commands: the skills list, and a skill run that starts a conversation in the channel. */
export function createCommandHandlers(ctx: AdapterContext, deps: CommandDeps) {
  return {
    onSkills: (args: SlackCommandMiddlewareArgs) => listSkills(ctx, args),
    onSkill: (args: SlackCommandMiddlewareArgs) => runSkill(ctx, deps, args),
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
  await startSkillRun(ctx, deps, command, run, respond);
}

/** The fields of a slash command that say who ran it, and where. */
type CommandOrigin = { team_id: string; channel_id: string; user_id: string };

/** Where a command was run, as a reply target addressed to the person who ran it. */
const commandPlace = (command: CommandOrigin) => ({
  platform: SLACK_RULES.name,
  channel: command.channel_id,
  workspace: command.team_id,
  recipient: command.user_id,
});

/** Posts the run's header in the channel (its thread is the conversation) and enqueues the run. */
async function startSkillRun(
  ctx: AdapterContext,
  deps: CommandDeps,
  command: CommandOrigin,
  run: { prompt: string; skill: { name: string } },
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
        const header = await postRunHeader(ctx, deps, target, run.skill.name, respond);
        if (!header) return undefined;
        headerId = header.messageId;
        return {
          type: 'CHAT',
          priority: Priority.CRITICAL,
          conversationId: slackConversationId(command.team_id, command.channel_id, header.messageId),
          input: { prompt: run.prompt, skill: run.skill.name },
          payload: {},
          reply: { ...target, thread: header.messageId },
          placeholder: '…',
        };
      },
    });
    if (!admitted.ok) await respond({ response_type: 'ephemeral', text: admitted.refusal });
  } catch (error) {
    // Slack does not retry slash commands: say so, to the person who ran it.
    ctx.log.error({ err: error, channel: command.channel_id, user: command.user_id }, 'could not enqueue a skill run');
    await respond({ response_type: 'ephemeral', text: TEXTS.unavailable }).catch(() => undefined);
    if (headerId) await deps.outbound.edit(target, headerId, TEXTS.unavailable).catch(() => undefined);
  }
}

/**
 * Posts "Running skill …" in the channel. Undefined when the bot is not a member there: the person
 * who ran the command has been told how to invite it.
 */
async function postRunHeader(
  ctx: AdapterContext,
  deps: CommandDeps,
  target: ReturnType<typeof commandPlace>,
  skillName: string,
  respond: SlackCommandMiddlewareArgs['respond'],
): Promise<{ messageId: string } | undefined> {
  try {
    return await deps.outbound.post(target, `Running skill \`${skillName}\`…`);
  } catch (error) {
    const code = slackErrorOf(error);
    if (!code || !NOT_A_MEMBER.has(code)) throw error;
    // chat.postEphemeral needs the bot in the channel too; the command's response_url does not.
    ctx.log.info({ channel: target.channel, error: code }, 'a skill was run in a channel the bot is not in');
    await respond({ response_type: 'ephemeral', text: inviteHint(deps.botName, target.channel) });
    return undefined;
  }
}

/**
 * `/countersign grants` lists the standing grants with a Revoke button each, to people the policy
 * lets use the bot, and only grants of conversations the viewer is in (a DM lists the viewer's own
 * grants from elsewhere, less those of channels they have since left); anything else: help.
 */
async function answerCountersign(
  ctx: AdapterContext,
  deps: CommandDeps,
  { command, ack }: SlackCommandMiddlewareArgs,
): Promise<void> {
  const [verb = ''] = command.text.trim().toLowerCase().split(/\s+/);
  if (verb !== 'grants') {
    const here = { platform: SLACK_RULES.name, channel: command.channel_id, workspace: command.team_id };
    await ack({
      response_type: 'ephemeral',
      text: countersignHelp(command.command, ctx.approvals.conversationMode(here)),
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
  const grants = await grantsInTheirConversations(
    await ctx.approvals.grantsSeenFrom(person, place),
    command.user_id,
    command.channel_id,
    deps.memberships,
  );
  if (grants.length === 0) {
    await ack({ response_type: 'ephemeral', text: NO_GRANTS });
    return;
  }
  const lines = grants.map((g) => ({ id: g.id, text: describeGrant(g) }));
  await ack({
    response_type: 'ephemeral',
    text: `${grants.length} standing grant${grants.length === 1 ? '' : 's'} apply here.`,
    blocks: grantListBlocks(lines, grants.length),
  });
}
