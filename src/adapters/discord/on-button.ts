import { MessageFlags, type ButtonInteraction, type ModalSubmitInteraction } from 'discord.js';
import type { AdapterContext, ButtonSurface } from '../platform.ts';
import type { DiscordOutbound } from './outbound.ts';
import { denyReasonModal, type ApiMessagePayload } from './components/index.ts';
import { LIMITS } from './limits.ts';
import { personOf, PRIVATE, PUBLIC_EDIT } from './interaction-replies.ts';

export interface ButtonDeps {
  outbound: DiscordOutbound;
}

/**
 * A button click: the core decodes and does what the value asks; this answers the clicker the
 * Discord way. Every interaction is answered within Discord's 3 seconds: a modal at once, a
 * deferral before any work that may wait on others, or (full arguments) a private reply after one
 * indexed read of the envelope.
 */
export async function onButton(ctx: AdapterContext, deps: ButtonDeps, interaction: ButtonInteraction): Promise<void> {
  let acknowledged: 'private' | 'update' | undefined;
  const surface: ButtonSurface = {
    async acknowledge(answer) {
      acknowledged = answer;
      if (answer === 'private') await interaction.deferReply({ flags: MessageFlags.Ephemeral });
      else await interaction.deferUpdate();
    },
    // A modal must be the interaction's first answer; the submission is verified like a click.
    openDenyForm: (nonce) =>
      interaction.showModal(denyReasonModal(nonce) as unknown as Parameters<ButtonInteraction['showModal']>[0]),
    async showFullArguments(call) {
      const parts = call ? fullArgumentMessages(call.tool, call.text) : ['That call is no longer on record.'];
      await interaction.reply({ content: parts[0]!, ...PRIVATE });
      for (const part of parts.slice(1)) await interaction.followUp({ content: part, ...PRIVATE });
    },
    async tellClicker(text) {
      if (acknowledged === 'private') await interaction.editReply({ content: text, ...PUBLIC_EDIT });
      else if (acknowledged === 'update') await interaction.followUp({ content: text, ...PRIVATE });
      else await interaction.reply({ content: text, ...PRIVATE });
    },
    // The card is updated through this interaction when it is the message clicked (its webhook is
    // outside the global limit); a failure there falls back to a channel edit.
    clicked: {
      messageId: interaction.message.id,
      replace: (payload) =>
        deps.outbound.patchInteractionMessage(interaction.token, payload as ApiMessagePayload).catch((error) => {
          ctx.log.warn({ err: error }, 'could not update the card through the interaction; editing it instead');
          throw error;
        }),
    },
  };
  await ctx.pressButton(interaction.customId, personOf(interaction), surface);
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
  const size = LIMITS.messageContent - LIMITS.fullArgumentMargin;
  const safe = text.replaceAll('```', '`\u200b``');
  const parts: string[] = [];
  for (let at = 0; at < safe.length && parts.length < LIMITS.fullArgumentMessages; at += size) {
    parts.push(
      `${parts.length === 0 ? `\`${tool}\` · ${text.length} characters\n` : ''}\`\`\`json\n${safe.slice(at, at + size)}\n\`\`\``,
    );
  }
  const shown = Math.min(safe.length, size * LIMITS.fullArgumentMessages);
  if (shown < safe.length) parts.push(`… ${safe.length - shown} more characters do not fit ten messages.`);
  return parts;
}
