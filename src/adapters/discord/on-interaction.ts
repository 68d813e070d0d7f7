import {
  MessageFlags,
  Routes,
  type AutocompleteInteraction,
  type ButtonInteraction,
  type ChatInputCommandInteraction,
  type Interaction,
  type ModalSubmitInteraction,
  type REST,
} from 'discord.js';
import type { AdapterContext } from '../platform.ts';
import { Priority } from '../../core/work-item.ts';
import { formatSkillList, skillRunPrompt } from '../../skills/index.ts';
import type { DiscordOutbound } from './outbound.ts';
import { denyReasonModal, parseStopCustomId, type ApiMessagePayload } from './components/index.ts';
import type { ClickedMessage } from '../../core/approval-card.ts';
import {
  ButtonPayload,
  parseDenyFormId,
  parseFeedback,
  parseRevokeGrant,
  revokeGrantValue,
} from '../../core/buttons.ts';
import { describeGrant, NO_GRANTS } from '../../approval/service.ts';
import { grantsVisibleTo } from './grant-visibility.ts';
import { LIMITS } from './limits.ts';
import { requesterOf } from './people.ts';
import { MODE_HELP, TEXTS } from '../../core/texts.ts';

export interface InteractionDeps {
  rest: REST;
  outbound: DiscordOutbound;
}

// SuppressEmbeds on everything the bot says: a link in its text is never fetched for a preview.
// A deferred reply cannot carry it (Discord accepts only Ephemeral there); the edit that fills it does.
const PRIVATE = {
  flags: MessageFlags.Ephemeral | MessageFlags.SuppressEmbeds,
  allowedMentions: { parse: [] },
} as const;
const PUBLIC_EDIT = { flags: MessageFlags.SuppressEmbeds, allowedMentions: { parse: [] } } as const;

/**
 * Slash commands, autocomplete and button clicks. Every interaction is acknowledged (deferred)
 * before any database work: Discord fails it after 3 seconds without an answer.
 */
export function createInteractionHandler(ctx: AdapterContext, deps: InteractionDeps) {
  const onButton = async (interaction: ButtonInteraction) => {
    const form = ButtonPayload.safeParse(interaction.customId);
    if (form.success && form.data.decision === 'R') {
      // A modal must be the interaction's first answer; the submission is verified like a click.
      await interaction.showModal(
        denyReasonModal(form.data.nonce) as unknown as Parameters<ButtonInteraction['showModal']>[0],
      );
      return;
    }
    if (form.success && form.data.decision.startsWith('f')) {
      const args = await ctx.approvals.fullArguments(form.data.nonce, Number(form.data.decision.slice(1)));
      const parts = args ? fullArgumentMessages(args.tool, args.text) : ['That call is no longer on record.'];
      await interaction.reply({ content: parts[0]!, ...PRIVATE });
      for (const part of parts.slice(1)) await interaction.followUp({ content: part, ...PRIVATE });
      return;
    }
    const feedback = parseFeedback(interaction.customId);
    if (feedback) {
      await interaction.deferReply({ flags: MessageFlags.Ephemeral });
      const by = requesterOf(interaction.user, { guildId: interaction.guildId, roles: interaction.member?.roles });
      const recorded = await ctx.recordFeedback(feedback.workItemId, by, feedback.vote);
      const text = recorded.ok ? recorded.text : recorded.reason;
      await interaction.editReply({ content: text, ...PUBLIC_EDIT });
      return;
    }
    const grantId = parseRevokeGrant(interaction.customId);
    if (grantId) {
      await interaction.deferReply({ flags: MessageFlags.Ephemeral });
      const by = requesterOf(interaction.user, { guildId: interaction.guildId, roles: interaction.member?.roles });
      const revoked = await ctx.approvals.revokeGrant(grantId, by);
      const text = revoked.ok ? TEXTS.grantRevoked(revoked.grant.id) : revoked.reason;
      await interaction.editReply({ content: text, ...PUBLIC_EDIT });
      return;
    }
    await interaction.deferUpdate();
    const person = requesterOf(interaction.user, {
      guildId: interaction.guildId,
      roles: interaction.member?.roles,
    });
    const stopId = parseStopCustomId(interaction.customId);
    // The card is updated through this interaction when it is the message clicked (its webhook is
    // outside the global limit); a failure there falls back to a channel edit.
    const clicked: ClickedMessage = {
      messageId: interaction.message.id,
      replace: (payload) =>
        deps.outbound.patchInteractionMessage(interaction.token, payload as ApiMessagePayload).catch((error) => {
          ctx.log.warn({ err: error }, 'could not update the card through the interaction; editing it instead');
          throw error;
        }),
    };
    // Button custom_ids are the platform-neutral values: the approval service parses them itself.
    const result = stopId
      ? await ctx.stopTurn(stopId, person)
      : await ctx.approvals.click(interaction.customId, person, clicked);
    // Only the clicker sees why nothing happened.
    if (!result.ok) await interaction.followUp({ content: result.reason, ...PRIVATE });
  };

  const onDenyForm = async (interaction: ModalSubmitInteraction, nonce: string) => {
    await interaction.deferUpdate();
    const person = requesterOf(interaction.user, {
      guildId: interaction.guildId,
      roles: interaction.member?.roles,
    });
    const reason = interaction.fields.getTextInputValue('reason');
    const result = await ctx.approvals.denyWithReason(nonce, reason, person);
    if (!result.ok) await interaction.followUp({ content: result.reason, ...PRIVATE });
  };

  const onSkills = async (interaction: ChatInputCommandInteraction) => {
    await interaction.reply({ content: clip(formatSkillList(ctx.skills)), ...PRIVATE });
  };

  const onSkill = async (interaction: ChatInputCommandInteraction) => {
    const run = skillRunPrompt(
      ctx.skills,
      interaction.options.getString('name', true),
      interaction.options.getString('input') ?? '',
    );
    if (typeof run === 'string') {
      await interaction.reply({ content: clip(run), ...PRIVATE });
      return;
    }
    const thread = interaction.channel?.isThread() ? interaction.channel : undefined;
    const target = {
      platform: 'discord',
      channel: interaction.channelId,
      ...(interaction.guildId ? { workspace: interaction.guildId } : {}),
      ...(thread?.parentId ? { parent: thread.parentId } : {}),
    };
    const requester = requesterOf(interaction.user, {
      guildId: interaction.guildId,
      roles: interaction.member?.roles,
    });
    const admitted = ctx.approvals.mayUse(requester, target);
    if (!admitted.ok) {
      await interaction.reply({ content: clip(admitted.refusal), ...PRIVATE });
      return;
    }
    await interaction.deferReply();
    // Interaction tokens expire after 15 minutes; a long turn replies through an ordinary message.
    const placeholder = await deps.outbound.post(target, '…');
    try {
      await ctx.enqueue({
        type: 'CHAT',
        priority: Priority.CRITICAL,
        conversationId: interaction.inGuild()
          ? `discord:${interaction.channelId}`
          : `discord:dm:${interaction.channelId}`,
        requester,
        input: { prompt: run.prompt, skill: run.skill.name },
        payload: { interactionId: interaction.id },
        reply: { ...target, messageId: placeholder.messageId },
      });
      await interaction.editReply({ content: `Running skill \`${run.skill.name}\`…`, ...PUBLIC_EDIT });
    } catch (error) {
      ctx.log.error({ err: error, channel: interaction.channelId }, 'could not enqueue a Discord skill run');
      await deps.rest.delete(Routes.channelMessage(interaction.channelId, placeholder.messageId)).catch(() => {});
      await interaction.editReply({ content: TEXTS.unavailable, ...PUBLIC_EDIT });
    }
  };

  /** `/countersign grants`: the standing grants here, privately, with a Revoke button each; `help` otherwise. */
  const onCountersign = async (interaction: ChatInputCommandInteraction) => {
    if (interaction.options.getSubcommand(false) !== 'grants') {
      const here = {
        platform: 'discord',
        channel: interaction.channelId,
        ...(interaction.guildId ? { workspace: interaction.guildId } : {}),
      };
      const mode = ctx.approvals.conversationMode(here);
      const line = `Here, a message you send while I'm working ${MODE_HELP[mode]} (mode \`${mode}\`).`;
      await interaction.reply({ content: clip(`${line}\n${COUNTERSIGN_HELP}`), ...PRIVATE });
      return;
    }
    const thread = interaction.channel?.isThread() ? interaction.channel : undefined;
    const place = {
      platform: 'discord',
      channel: interaction.channelId,
      ...(interaction.guildId ? { workspace: interaction.guildId } : {}),
      ...(thread?.parentId ? { parent: thread.parentId } : {}),
    };
    const person = requesterOf(interaction.user, { guildId: interaction.guildId, roles: interaction.member?.roles });
    const admitted = ctx.approvals.mayUse(person, place);
    if (!admitted.ok) {
      await interaction.reply({ content: clip(admitted.refusal), ...PRIVATE });
      return;
    }
    await interaction.deferReply({ flags: MessageFlags.Ephemeral });
    // Only grants of places this person can view: a grant names what runs there.
    const grants = await grantsVisibleTo(
      interaction.client,
      { userId: interaction.user.id, channelId: interaction.channelId },
      await ctx.approvals.grantsSeenFrom(person, place),
    );
    const listed = grants.slice(0, MAX_LISTED_GRANTS);
    const lines = listed.map((g, i) => `${i + 1}. ${describeGrant(g)}`);
    if (grants.length > listed.length) lines.push(`… and ${grants.length - listed.length} more.`);
    const rows = [];
    for (let i = 0; i < listed.length; i += 5) {
      rows.push({
        type: 1,
        components: listed.slice(i, i + 5).map((g, j) => ({
          type: 2,
          style: 4,
          label: `Revoke ${i + j + 1}`,
          custom_id: revokeGrantValue(g.id),
        })),
      });
    }
    await interaction.editReply({
      content: clip(
        grants.length ? `**Standing grants that apply here** (${grants.length})\n${lines.join('\n')}` : NO_GRANTS,
      ),
      components: rows,
      ...PUBLIC_EDIT,
    } as Parameters<ChatInputCommandInteraction['editReply']>[0]);
  };

  const onAutocomplete = async (interaction: AutocompleteInteraction) => {
    const typed = String(interaction.options.getFocused()).trim().toLowerCase();
    const choices = ctx.skills
      .list()
      .filter((s) => s.name.toLowerCase().startsWith(typed))
      .slice(0, LIMITS.autocompleteChoices)
      .map((s) => ({ name: s.name, value: s.name }));
    await interaction.respond(choices);
  };

  return async function onInteraction(interaction: Interaction): Promise<void> {
    if (interaction.isButton()) return onButton(interaction);
    if (interaction.isModalSubmit()) {
      const nonce = parseDenyFormId(interaction.customId);
      return nonce ? onDenyForm(interaction, nonce) : undefined;
    }
    if (interaction.isAutocomplete()) return onAutocomplete(interaction);
    if (!interaction.isChatInputCommand()) return;
    if (interaction.commandName === 'skills') return onSkills(interaction);
    if (interaction.commandName === 'skill') return onSkill(interaction);
    if (interaction.commandName === 'countersign') return onCountersign(interaction);
  };
}

/** Private messages that hold a call's whole arguments: code blocks under Discord's 2,000 characters, at most 10. */
export function fullArgumentMessages(tool: string, text: string): string[] {
  const size = LIMITS.messageContent - 200;
  const safe = text.replaceAll('```', '`\u200b``');
  const parts: string[] = [];
  for (let at = 0; at < safe.length && parts.length < 10; at += size) {
    parts.push(
      `${parts.length === 0 ? `\`${tool}\` · ${text.length} characters\n` : ''}\`\`\`json\n${safe.slice(at, at + size)}\n\`\`\``,
    );
  }
  const shown = Math.min(safe.length, size * 10);
  if (shown < safe.length) parts.push(`… ${safe.length - shown} more characters do not fit ten messages.`);
  return parts;
}

/** Grants one `/countersign grants` answer lists: two rows of five Revoke buttons, and text within 2,000 characters. */
const MAX_LISTED_GRANTS = 10;

const COUNTERSIGN_HELP = [
  '**/countersign grants** — the standing grants ("Always allow here") that apply in this channel, each with a Revoke button. In a DM: also every grant you made.',
  '**/skills** — the skills I can run · **/skill** — run one.',
  'Mention me in a channel, or write to me in a DM, to ask for anything else. Risky actions always wait for an Approve.',
].join('\n');

const clip = (text: string) =>
  text.length <= LIMITS.messageContent ? text : `${text.slice(0, LIMITS.messageContent - 1)}…`;
