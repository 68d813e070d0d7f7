import {
  ApplicationCommandOptionType,
  ChannelType,
  Client,
  GatewayIntentBits,
  MessageFlags,
  Partials,
  Routes,
  type AutocompleteInteraction,
  type ButtonInteraction,
  type ChatInputCommandInteraction,
  type Message,
  type REST,
} from 'discord.js';
import type { Logger } from 'pino';
import { createHash } from 'node:crypto';
import type { AdapterContext, InboundHandle } from '../platform.ts';
import { Priority } from '../../queue/work-item.ts';
import { parseStopButton } from '../../queue/stop-requests.ts';
import { formatSkillList, skillRunPrompt } from '../../skills/index.ts';
import type { DiscordOutbound } from './outbound.ts';
import { parseApprovalCustomId } from './components/index.ts';
import { LIMITS } from './limits.ts';

const UNAVAILABLE =
  'Countersign is temporarily unavailable (its database is unreachable). Please try again in a moment.';

/** The slash commands, as Discord's bulk-overwrite endpoint takes them. */
export function commandDefinitions() {
  return [
    { name: 'skills', description: 'List the skills Countersign can run', type: 1 },
    {
      name: 'skill',
      description: 'Run a skill',
      type: 1,
      options: [
        {
          type: ApplicationCommandOptionType.String,
          name: 'name',
          description: 'Which skill',
          required: true,
          autocomplete: true,
        },
        {
          type: ApplicationCommandOptionType.String,
          name: 'input',
          description: 'What the skill should work on',
          required: false,
        },
      ],
    },
  ];
}

/** What Discord echoes back of a command, reduced to what we define, for "did it change?". */
function fingerprint(commands: Array<Record<string, unknown>>): string {
  const normal = commands
    .map((c) => ({
      name: c.name,
      description: c.description,
      type: c.type ?? 1,
      options: ((c.options as Array<Record<string, unknown>> | undefined) ?? []).map((o) => ({
        type: o.type,
        name: o.name,
        description: o.description,
        required: Boolean(o.required),
        autocomplete: Boolean(o.autocomplete),
      })),
    }))
    .sort((a, b) => String(a.name).localeCompare(String(b.name)));
  return createHash('sha256').update(JSON.stringify(normal)).digest('hex');
}

/** Registers the slash commands only when their definition changed (idempotent across restarts). */
export async function registerCommands(
  rest: REST,
  applicationId: string,
  guildId: string | undefined,
  log: Logger,
): Promise<boolean> {
  const route = guildId
    ? Routes.applicationGuildCommands(applicationId, guildId)
    : Routes.applicationCommands(applicationId);
  const existing = (await rest.get(route)) as Array<Record<string, unknown>>;
  const desired = commandDefinitions();
  if (fingerprint(existing) === fingerprint(desired)) return false;
  await rest.put(route, { body: desired });
  log.info({ scope: guildId ? `guild ${guildId}` : 'global' }, 'registered Discord slash commands');
  return true;
}

/**
 * Discord's listening half: a discord.js gateway client. Mentions start a thread, DMs and threads
 * the bot started need no mention; every message becomes a CRITICAL work item; buttons go to the
 * approval service or stop a turn.
 */
export async function startDiscordInbound(
  ctx: AdapterContext,
  deps: { rest: REST; outbound: DiscordOutbound },
): Promise<InboundHandle> {
  const { config, log } = ctx;
  const client = new Client({
    intents: [
      GatewayIntentBits.Guilds,
      GatewayIntentBits.GuildMessages,
      GatewayIntentBits.DirectMessages,
      GatewayIntentBits.MessageContent,
    ],
    partials: [Partials.Channel],
    rest: config.DISCORD_API_URL ? { api: config.DISCORD_API_URL.replace(/\/v\d+\/?$/, '') } : {},
  });

  const onMessage = async (message: Message) => {
    if (message.author.bot || message.system) return;
    const botId = client.user?.id;
    if (!botId) return;
    const isDm = !message.guildId;
    const mentioned = message.mentions.users.has(botId);
    const channel = message.channel;
    const inBotThread = channel.isThread() && channel.ownerId === botId;
    if (!isDm && !mentioned && !inBotThread) return;
    const prompt = message.content.replace(new RegExp(`<@!?${botId}>`, 'g'), '').trim();
    if (!prompt) return;
    let replyChannel = message.channelId;
    if (!isDm && !channel.isThread()) {
      // A mention in a channel: the conversation continues in a thread on that message.
      const thread = await message.startThread({ name: prompt.slice(0, LIMITS.threadName) || 'Countersign' });
      replyChannel = thread.id;
    }
    const placeholder = await deps.outbound.post({ platform: 'discord', channel: replyChannel }, '…');
    try {
      await ctx.enqueue({
        type: 'CHAT',
        priority: Priority.CRITICAL,
        conversationId: isDm ? `discord:dm:${message.channelId}` : `discord:${replyChannel}`,
        requester: { platform: 'discord', userId: message.author.id, displayName: message.author.username },
        input: { prompt },
        payload: { messageId: message.id },
        reply: {
          platform: 'discord',
          channel: replyChannel,
          ...(message.guildId ? { workspace: message.guildId } : {}),
          messageId: placeholder.messageId,
        },
      });
    } catch (error) {
      log.error({ err: error }, 'could not enqueue a Discord message');
      await deps.outbound.edit({ platform: 'discord', channel: replyChannel }, placeholder.messageId, UNAVAILABLE);
    }
  };

  const onButton = async (interaction: ButtonInteraction) => {
    await interaction.deferUpdate();
    const person = { platform: 'discord', userId: interaction.user.id, displayName: interaction.user.username };
    const stopId = parseStopButton(interaction.customId);
    let reason: string | undefined;
    if (stopId) {
      const result = await ctx.stopTurn(stopId, person);
      if (!result.ok) reason = result.reason;
    } else {
      const legacy = parseApprovalCustomId(interaction.customId);
      const value = legacy
        ? `${legacy.nonce}.${legacy.decision === 'approve' ? (legacy.call === 'all' ? 'A' : `a${legacy.call}`) : legacy.call === 'all' ? 'D' : `d${legacy.call}`}`
        : interaction.customId;
      const result = await ctx.approvals.click(value, person);
      if (!result.ok) reason = result.reason;
    }
    // Only the clicker sees why nothing happened.
    if (reason)
      await interaction.followUp({ content: reason, flags: MessageFlags.Ephemeral, allowedMentions: { parse: [] } });
  };

  const onCommand = async (interaction: ChatInputCommandInteraction) => {
    if (interaction.commandName === 'skills') {
      await interaction.reply({
        content: formatSkillList(ctx.skills).slice(0, LIMITS.messageContent),
        ephemeral: true,
      });
      return;
    }
    if (interaction.commandName !== 'skill') return;
    await interaction.deferReply();
    const name = interaction.options.getString('name', true);
    const input = interaction.options.getString('input') ?? '';
    const run = skillRunPrompt(ctx.skills, name, input);
    if (typeof run === 'string') {
      await interaction.editReply({ content: run });
      return;
    }
    // Interaction tokens expire after 15 minutes: the turn replies through an ordinary message.
    const placeholder = await deps.outbound.post({ platform: 'discord', channel: interaction.channelId }, '…');
    try {
      await ctx.enqueue({
        type: 'CHAT',
        priority: Priority.CRITICAL,
        conversationId: interaction.guildId
          ? `discord:${interaction.channelId}`
          : `discord:dm:${interaction.channelId}`,
        requester: { platform: 'discord', userId: interaction.user.id, displayName: interaction.user.username },
        input: { prompt: run.prompt, skill: run.skill.name },
        payload: {},
        reply: {
          platform: 'discord',
          channel: interaction.channelId,
          ...(interaction.guildId ? { workspace: interaction.guildId } : {}),
          messageId: placeholder.messageId,
        },
      });
      await interaction.editReply({ content: `Running skill \`${run.skill.name}\`…` });
    } catch (error) {
      log.error({ err: error }, 'could not enqueue a Discord skill run');
      await interaction.editReply({ content: UNAVAILABLE });
    }
  };

  const onAutocomplete = async (interaction: AutocompleteInteraction) => {
    const typed = String(interaction.options.getFocused()).toLowerCase();
    const choices = ctx.skills
      .list()
      .filter((s) => s.name.includes(typed))
      .slice(0, LIMITS.autocompleteChoices)
      .map((s) => ({ name: s.name, value: s.name }));
    await interaction.respond(choices);
  };

  client.on('messageCreate', (message) => {
    onMessage(message).catch((error: unknown) => log.error({ err: error }, 'Discord message handling failed'));
  });
  client.on('interactionCreate', (interaction) => {
    const handled = interaction.isButton()
      ? onButton(interaction)
      : interaction.isChatInputCommand()
        ? onCommand(interaction)
        : interaction.isAutocomplete()
          ? onAutocomplete(interaction)
          : Promise.resolve();
    handled.catch((error: unknown) => log.error({ err: error }, 'Discord interaction handling failed'));
  });
  client.on('error', (error) => log.warn({ err: error }, 'Discord client error'));

  const token = config.DISCORD_TOKEN ?? '';
  const ready = new Promise<void>((resolve) => client.once('clientReady', () => resolve()));
  await client.login(token);
  await ready;
  await registerCommands(deps.rest, config.DISCORD_APPLICATION_ID ?? '', config.DISCORD_GUILD_ID, log);
  log.info({ user: client.user?.tag }, 'Discord gateway connected');
  void ChannelType;
  return {
    async stop() {
      await client.destroy();
    },
  };
}
