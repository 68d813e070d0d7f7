import { MessageFlags, type ButtonInteraction, type ModalSubmitInteraction } from 'discord.js';
import type { AdapterContext } from '../platform.ts';
import type { DiscordOutbound } from './outbound.ts';
import { denyReasonModal, parseStopCustomId, type ApiMessagePayload } from './components/index.ts';
import type { ClickedMessage } from '../../core/approval-card.ts';
import { ButtonPayload, parseFeedback, parseRevokeGrant } from '../../core/buttons.ts';
import { LIMITS } from './limits.ts';
import { TEXTS } from '../../core/texts.ts';
import { personOf, PRIVATE, PUBLIC_EDIT } from './interaction-replies.ts';

export interface ButtonDeps {
  outbound: DiscordOutbound;
}

/**
 * A button click: the deny-with-reason form, a call's full arguments, a feedback vote, a grant's
 * Revoke, or (anything else) Stop or a card's button, which the approval service verifies.
 */
export async function onButton(ctx: AdapterContext, deps: ButtonDeps, interaction: ButtonInteraction): Promise<void> {
  const form = ButtonPayload.safeParse(interaction.customId);
  if (form.success && form.data.decision === 'R') {
    // A modal must be the interaction's first answer; the submission is verified like a click.
    await interaction.showModal(
      denyReasonModal(form.data.nonce) as unknown as Parameters<ButtonInteraction['showModal']>[0],
    );
    return;
  }
  if (form.success && form.data.decision.startsWith('f')) {
    return showFullArguments(ctx, interaction, form.data.nonce, Number(form.data.decision.slice(1)));
  }
  const feedback = parseFeedback(interaction.customId);
  if (feedback) return recordFeedback(ctx, interaction, feedback);
  const grantId = parseRevokeGrant(interaction.customId);
  if (grantId) return revokeGrant(ctx, interaction, grantId);
  await clickCardOrStop(ctx, deps, interaction);
}

/** The whole arguments of one call of a card, privately to the clicker. */
async function showFullArguments(
  ctx: AdapterContext,
  interaction: ButtonInteraction,
  nonce: string,
  callIndex: number,
): Promise<void> {
  const args = await ctx.approvals.fullArguments(nonce, callIndex);
  const parts = args ? fullArgumentMessages(args.tool, args.text) : ['That call is no longer on record.'];
  await interaction.reply({ content: parts[0]!, ...PRIVATE });
  for (const part of parts.slice(1)) await interaction.followUp({ content: part, ...PRIVATE });
}

async function recordFeedback(
  ctx: AdapterContext,
  interaction: ButtonInteraction,
  feedback: NonNullable<ReturnType<typeof parseFeedback>>,
): Promise<void> {
  await interaction.deferReply({ flags: MessageFlags.Ephemeral });
  const recorded = await ctx.recordFeedback(feedback.workItemId, personOf(interaction), feedback.vote);
  const text = recorded.ok ? recorded.text : recorded.reason;
  await interaction.editReply({ content: text, ...PUBLIC_EDIT });
}

async function revokeGrant(ctx: AdapterContext, interaction: ButtonInteraction, grantId: string): Promise<void> {
  await interaction.deferReply({ flags: MessageFlags.Ephemeral });
  const revoked = await ctx.approvals.revokeGrant(grantId, personOf(interaction));
  const text = revoked.ok ? TEXTS.grantRevoked(revoked.grant.id) : revoked.reason;
  await interaction.editReply({ content: text, ...PUBLIC_EDIT });
}

/** A Stop button, or a card's button: the turn stops, or the approval service takes the click. */
async function clickCardOrStop(ctx: AdapterContext, deps: ButtonDeps, interaction: ButtonInteraction): Promise<void> {
  await interaction.deferUpdate();
  const person = personOf(interaction);
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
}

/** The deny-with-reason form, submitted: verified and consumed like a click. */
export async function onDenyForm(
  ctx: AdapterContext,
  interaction: ModalSubmitInteraction,
  nonce: string,
): Promise<void> {
  await interaction.deferUpdate();
  const person = personOf(interaction);
  const reason = interaction.fields.getTextInputValue('reason');
  const result = await ctx.approvals.denyWithReason(nonce, reason, person);
  if (!result.ok) await interaction.followUp({ content: result.reason, ...PRIVATE });
}

/** Private messages that hold a call's whole arguments: code blocks under Discord's 2,000 characters, at most 10. */
function fullArgumentMessages(tool: string, text: string): string[] {
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
