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

/** What `/countersign` (without `grants`) answers. */
export function countersignHelp(command: string, mode: keyof typeof MODE_HELP): string {
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
  const { log } = ctx;

  const onSkills = async ({ ack }: SlackCommandMiddlewareArgs) => {
    await ack({ response_type: 'ephemeral', text: formatSkillList(ctx.skills) });
  };

  const onSkill = async ({ command, ack, respond }: SlackCommandMiddlewareArgs) => {
    const [name = '', ...rest] = command.text.trim().split(/\s+/);
    const run = skillRunPrompt(ctx.skills, name, rest.join(' '));
    if (typeof run === 'string') {
      await ack({ response_type: 'ephemeral', text: run });
      return;
    }
    // Acknowledged first: Slack gives a command 3 seconds, and what follows makes platform calls.
    await ack();
    await startSkillRun(command, run, respond);
  };

  /** Posts the run's header in the channel (its thread is the conversation) and enqueues the run. */
  const startSkillRun = async (
    command: { team_id: string; channel_id: string; user_id: string },
    run: { prompt: string; skill: { name: string } },
    respond: SlackCommandMiddlewareArgs['respond'],
  ): Promise<void> => {
    const team = command.team_id;
    const target = { platform: 'slack', channel: command.channel_id, workspace: team, recipient: command.user_id };
    const groups = await deps.groups.groupsOf(team, command.user_id);
    const requester = {
      platform: 'slack',
      userId: command.user_id,
      workspace: team,
      ...(groups.length ? { groups } : {}),
    };
    const admitted = ctx.approvals.mayUse(requester, target);
    if (!admitted.ok) {
      await respond({ response_type: 'ephemeral', text: admitted.refusal });
      return;
    }
    let header: { messageId: string };
    try {
      header = await deps.outbound.post(target, `Running skill \`${run.skill.name}\`…`);
    } catch (error) {
      const code = slackErrorOf(error);
      if (!code || !NOT_A_MEMBER.has(code)) throw error;
      // chat.postEphemeral needs the bot in the channel too; the command's response_url does not.
      log.info({ channel: command.channel_id, error: code }, 'a skill was run in a channel the bot is not in');
      await respond({ response_type: 'ephemeral', text: inviteHint(deps.botName, command.channel_id) });
      return;
    }
    try {
      await ctx.enqueue({
        type: 'CHAT',
        priority: Priority.CRITICAL,
        conversationId: `slack:${team}:${command.channel_id}:${header.messageId}`,
        requester,
        input: { prompt: run.prompt, skill: run.skill.name },
        payload: {},
        reply: { ...target, thread: header.messageId },
        placeholder: '…',
      });
    } catch (error) {
      // Slack does not retry slash commands: say so, to the person who ran it.
      log.error({ err: error, channel: command.channel_id, user: command.user_id }, 'could not enqueue a skill run');
      await respond({ response_type: 'ephemeral', text: TEXTS.unavailable }).catch(() => undefined);
      await deps.outbound.edit(target, header.messageId, TEXTS.unavailable).catch(() => undefined);
    }
  };

  /**
   * `/countersign grants` lists the standing grants with a Revoke button each, to people the policy
   * lets use the bot, and only grants of conversations the viewer is in (a DM lists the viewer's own
   * grants from elsewhere, less those of channels they have since left); anything else: help.
   */
  const onCountersign = async ({ command, ack }: SlackCommandMiddlewareArgs) => {
    const [verb = ''] = command.text.trim().toLowerCase().split(/\s+/);
    if (verb !== 'grants') {
      const here = { platform: 'slack', channel: command.channel_id, workspace: command.team_id };
      await ack({
        response_type: 'ephemeral',
        text: countersignHelp(command.command, ctx.approvals.conversationMode(here)),
      });
      return;
    }
    const team = command.team_id;
    const groups = await deps.groups.groupsOf(team, command.user_id);
    const person = {
      platform: 'slack',
      userId: command.user_id,
      workspace: team,
      ...(groups.length ? { groups } : {}),
    };
    const place = { platform: 'slack', channel: command.channel_id, workspace: team, recipient: command.user_id };
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
  };

  return { onSkills, onSkill, onCountersign };
}
