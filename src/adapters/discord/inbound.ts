import { Client, GatewayIntentBits, Partials, type REST } from 'discord.js';
import type { AdapterContext, InboundHandle } from '../platform.ts';
import type { DiscordInboundSettings } from './settings.ts';
import type { DiscordOutbound } from './outbound.ts';
import { registerCommands } from './commands.ts';
import { createInteractionHandler } from './on-interaction.ts';
import { createMessageHandler } from './on-message.ts';

const BASE_INTENTS = [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.DirectMessages];

/**
 * Discord's listening half, wiring only: a discord.js gateway client (it heartbeats, resumes after a
 * resumable close and re-identifies otherwise on its own) whose events are handed to the handlers of
 * `on-message.ts` and `on-interaction.ts`; commands are registered once the session is up.
 */
export async function startDiscordInbound(
  ctx: AdapterContext,
  deps: { rest: REST; outbound: DiscordOutbound; settings: DiscordInboundSettings },
): Promise<InboundHandle> {
  const { log } = ctx;
  const { settings } = deps;
  let readsContent = true;
  const onMessage = createMessageHandler(ctx, { outbound: deps.outbound, readsContent: () => readsContent });
  const onInteraction = createInteractionHandler(ctx, deps);

  const connect = async (withContent: boolean): Promise<Client> => {
    const client = new Client({
      intents: withContent ? [...BASE_INTENTS, GatewayIntentBits.MessageContent] : BASE_INTENTS,
      // DM channels are not cached before their first message; without this partial DMs never arrive.
      partials: [Partials.Channel],
      // Mentions are neutralised per message too; this is the client-wide second lock.
      allowedMentions: { parse: [] },
      rest: settings.apiUrl ? { api: settings.apiUrl.replace(/\/v\d+\/?$/, '') } : {},
    });
    client.on('messageCreate', (message) => {
      onMessage(message).catch((error: unknown) =>
        log.error(
          { err: error, messageId: message.id, channel: message.channelId, author: message.author.id },
          'Discord message handling failed; the message was not taken',
        ),
      );
    });
    client.on('interactionCreate', (interaction) => {
      onInteraction(interaction).catch((error: unknown) =>
        log.error({ err: error }, 'Discord interaction handling failed'),
      );
    });
    client.on('error', (error) => log.warn({ err: error }, 'Discord client error'));
    client.on('shardResume', () => log.info('Discord gateway session resumed'));
    const ready = new Promise<void>((resolve) => client.once('clientReady', () => resolve()));
    try {
      await client.login(settings.token);
    } catch (error) {
      await client.destroy();
      throw error;
    }
    await ready;
    return client;
  };

  let client: Client;
  try {
    client = await connect(true);
  } catch (error) {
    // Close code 4014: the privileged intent is not enabled in the Developer Portal. Mentions and
    // DMs still carry their text without it, so run in that reduced mode rather than not at all.
    if (!(error instanceof Error && /disallowed intents/i.test(error.message))) throw error;
    log.warn(
      'Discord refused the Message Content intent: enable it under Bot → Privileged Gateway Intents in the ' +
        'Developer Portal. Until then Countersign answers only DMs and messages that mention it.',
    );
    readsContent = false;
    client = await connect(false);
  }
  try {
    await registerCommands(
      deps.rest,
      settings.applicationId,
      settings.guildId,
      log,
      ctx.repoNames,
      ctx.connectableServers,
    );
  } catch (error) {
    // Mentions and DMs work without commands; the next start tries again.
    log.error({ err: error }, 'could not register Discord slash commands; /skills and /skill may be missing or stale');
  }
  log.info({ user: client.user?.tag, readsContent }, 'Discord gateway connected');
  return {
    async stop() {
      await client.destroy();
    },
  };
}
