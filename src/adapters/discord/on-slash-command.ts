import {
  MessageFlags,
  Routes,
  type AutocompleteInteraction,
  type ChatInputCommandInteraction,
  type REST,
} from 'discord.js';
import type { AdapterContext } from '../platform.ts';
import { discordConversationId } from './conversation-ids.ts';
import { Priority } from '../../core/work-item.ts';
import { formatSkillList, skillRunPrompt } from '../../skills/index.ts';
import type { DiscordOutbound } from './outbound.ts';
import { revokeGrantValue } from '../../core/buttons.ts';
import { describeGrant, NO_GRANTS } from '../../approval/service.ts';
import type { Grant } from '../../approval/grants.ts';
import { grantsVisibleTo } from './grant-visibility.ts';
import { LIMITS } from './limits.ts';
import { MODE_HELP, TEXTS } from '../../core/texts.ts';
import { clip, personOf, placeOf, PRIVATE, PUBLIC_EDIT } from './interaction-replies.ts';

export interface SlashCommandDeps {
  rest: REST;
  outbound: DiscordOutbound;
}

/** `/skills`: the skills this bot can run, privately. */
export async function onSkills(ctx: AdapterContext, interaction: ChatInputCommandInteraction): Promise<void> {
  await interaction.reply({ content: clip(formatSkillList(ctx.skills)), ...PRIVATE });
}

/** `/skill`: an unknown skill or a refused person is answered privately; otherwise the run is enqueued. */
export async function onSkill(
  ctx: AdapterContext,
  deps: SlashCommandDeps,
  interaction: ChatInputCommandInteraction,
): Promise<void> {
  const run = skillRunPrompt(
    ctx.skills,
    interaction.options.getString('name', true),
    interaction.options.getString('input') ?? '',
  );
  if (typeof run === 'string') {
    await interaction.reply({ content: clip(run), ...PRIVATE });
    return;
  }
  const target = placeOf(interaction);
  let placeholderId: string | undefined;
  try {
    const admitted = await ctx.admit({
      requester: personOf(interaction),
      place: target,
      queued: true,
      // Admitted first: the placeholder is posted only for a run that will be enqueued.
      draft: async () => {
        await interaction.deferReply();
        // Interaction tokens expire after 15 minutes; a long turn replies through an ordinary message.
        placeholderId = (await deps.outbound.post(target, '…')).messageId;
        return {
          type: 'CHAT',
          priority: Priority.CRITICAL,
          conversationId: discordConversationId(interaction.channelId, !interaction.inGuild()),
          input: { prompt: run.prompt, skill: run.skill.name },
          payload: { interactionId: interaction.id },
          reply: { ...target, messageId: placeholderId },
        };
      },
    });
    if (!admitted.ok) await interaction.reply({ content: clip(admitted.refusal), ...PRIVATE });
    else await interaction.editReply({ content: `Running skill \`${run.skill.name}\`…`, ...PUBLIC_EDIT });
  } catch (error) {
    ctx.log.error({ err: error, channel: interaction.channelId }, 'could not enqueue a Discord skill run');
    if (placeholderId !== undefined)
      await deps.rest.delete(Routes.channelMessage(interaction.channelId, placeholderId)).catch(() => {});
    const answer = { content: TEXTS.unavailable, ...PUBLIC_EDIT };
    await (interaction.deferred ? interaction.editReply(answer) : interaction.reply({ ...answer, ...PRIVATE }));
  }
}

/** `/countersign grants`: the standing grants here, privately, with a Revoke button each; `help` otherwise. */
export async function onCountersign(ctx: AdapterContext, interaction: ChatInputCommandInteraction): Promise<void> {
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
  const place = placeOf(interaction);
  const person = personOf(interaction);
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
  await interaction.editReply({
    ...grantList(grants),
    ...PUBLIC_EDIT,
  } as Parameters<ChatInputCommandInteraction['editReply']>[0]);
}

/** The grants answer: numbered lines, and a row of Revoke buttons per five grants listed. */
function grantList(grants: Grant[]) {
  const listed = grants.slice(0, MAX_LISTED_GRANTS);
  const lines = listed.map((g, i) => `${i + 1}. ${describeGrant(g)}`);
  if (grants.length > listed.length) lines.push(`… and ${grants.length - listed.length} more.`);
  const rows = [];
  for (let i = 0; i < listed.length; i += LIMITS.buttonsPerRow) {
    rows.push({
      type: 1,
      components: listed.slice(i, i + LIMITS.buttonsPerRow).map((g, j) => ({
        type: 2,
        style: 4,
        label: `Revoke ${i + j + 1}`,
        custom_id: revokeGrantValue(g.id),
      })),
    });
  }
  return {
    content: clip(
      grants.length ? `**Standing grants that apply here** (${grants.length})\n${lines.join('\n')}` : NO_GRANTS,
    ),
    components: rows,
  };
}

/** The skill names that start with what was typed, for `/skill name:`. */
export async function onAutocomplete(ctx: AdapterContext, interaction: AutocompleteInteraction): Promise<void> {
  const typed = String(interaction.options.getFocused()).trim().toLowerCase();
  const choices = ctx.skills
    .list()
    .filter((s) => s.name.toLowerCase().startsWith(typed))
    .slice(0, LIMITS.autocompleteChoices)
    .map((s) => ({ name: s.name, value: s.name }));
  await interaction.respond(choices);
}

/** Grants one `/countersign grants` answer lists: two rows of five Revoke buttons, and text within 2,000 characters. */
const MAX_LISTED_GRANTS = LIMITS.listedGrants;

const COUNTERSIGN_HELP = [
  '**/countersign grants** — the standing grants ("Always allow here") that apply in this channel, each with a Revoke button. In a DM: also every grant you made.',
  '**/skills** — the skills I can run · **/skill** — run one.',
  'Mention me in a channel, or write to me in a DM, to ask for anything else. Risky actions always wait for an Approve.',
].join('\n');
