import type { Interaction } from 'discord.js';
import type { AdapterContext } from '../platform.ts';
import { parseDenyFormId } from '../../core/buttons.ts';
import { onButton, onDenyForm, type ButtonDeps } from './on-button.ts';
import {
  isWorkCommand,
  onAutocomplete,
  onCountersign,
  onSkill,
  onSkills,
  onWorkCommand,
  type SlashCommandDeps,
} from './on-slash-command.ts';

export type InteractionDeps = ButtonDeps & SlashCommandDeps;

/**
 * Slash commands, autocomplete and button clicks. Every interaction is acknowledged (deferred)
 * before any database work: Discord fails it after 3 seconds without an answer.
 */
export function createInteractionHandler(ctx: AdapterContext, deps: InteractionDeps) {
  return async function onInteraction(interaction: Interaction): Promise<void> {
    if (interaction.isButton()) return onButton(ctx, deps, interaction);
    if (interaction.isModalSubmit()) {
      const nonce = parseDenyFormId(interaction.customId);
      return nonce ? onDenyForm(ctx, interaction, nonce) : undefined;
    }
    if (interaction.isAutocomplete()) return onAutocomplete(ctx, interaction);
    if (!interaction.isChatInputCommand()) return;
    if (interaction.commandName === 'skills') return onSkills(ctx, interaction);
    if (interaction.commandName === 'skill') return onSkill(ctx, deps, interaction);
    if (interaction.commandName === 'countersign') return onCountersign(ctx, interaction);
    if (isWorkCommand(interaction.commandName)) return onWorkCommand(ctx, deps, interaction.commandName, interaction);
  };
}
