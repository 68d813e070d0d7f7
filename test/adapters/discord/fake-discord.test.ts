import {
  ChannelType,
  Client,
  Events,
  GatewayIntentBits,
  MessageFlags,
  Partials,
  type AutocompleteInteraction,
  type ButtonInteraction,
  type ChatInputCommandInteraction,
  type Message,
} from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  autocompleteInteraction,
  botAuthoredMessage,
  buttonInteraction,
  dmMessage,
  guildMessageMentioningBot,
  slashCommandInteraction,
  threadMessage,
} from '../../fixtures/discord/payloads.ts';
import { FakeDiscord, GatewayOp } from '../../fakes/discord/index.ts';

/** Resolves with the next `event` the client emits that passes `filter`. */
function next<T>(
  client: Client,
  event: string,
  filter: (value: T) => boolean = () => true,
  timeoutMs = 10_000,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${event} within ${timeoutMs} ms`)), timeoutMs);
    const listener = (value: T) => {
      if (!filter(value)) return;
      clearTimeout(timer);
      client.off(event, listener);
      resolve(value);
    };
    client.on(event, listener);
  });
}

describe('the real discord.js Client against FakeDiscord', () => {
  let fake: FakeDiscord;
  let client: Client;

  beforeAll(async () => {
    fake = await FakeDiscord.start();
    client = new Client({
      intents: [
        GatewayIntentBits.Guilds,
        GatewayIntentBits.GuildMessages,
        GatewayIntentBits.DirectMessages,
        GatewayIntentBits.MessageContent,
      ],
      partials: [Partials.Channel],
      ...fake.clientOptions(),
    });
    const ready = next(client, Events.ClientReady);
    await client.login(fake.token);
    await ready;
  });

  afterAll(async () => {
    await client?.destroy();
    await fake?.close();
  });

  it('logs in: IDENTIFY carries the token and intents, READY names the bot and its guild', () => {
    const identify = fake.gateway.received.find((f) => f.op === GatewayOp.Identify)!;
    expect((identify.d as { token: string }).token).toBe(fake.token);
    expect(fake.gateway.sessions[0]!.intents & GatewayIntentBits.MessageContent).toBe(GatewayIntentBits.MessageContent);
    expect(client.user?.id).toBe(fake.scene.bot.id);
    expect(client.guilds.cache.get(fake.scene.guildId)?.name).toBe(fake.world.guild.name);
    expect(client.application?.id).toBe(fake.scene.applicationId);
  });

  it('delivers a mention as messageCreate with its content', async () => {
    const received = next<Message>(client, Events.MessageCreate, (m) => !m.author.bot);
    fake.userSays(guildMessageMentioningBot(fake.scene, { text: 'what is the disk usage?' }));
    const message = await received;
    expect(message.content).toBe(`<@${fake.scene.bot.id}> what is the disk usage?`);
    expect(message.mentions.users.has(fake.scene.bot.id)).toBe(true);
    expect(message.guildId).toBe(fake.scene.guildId);
  });

  it('stores a reply sent with channel.send and its edits, with allowed_mentions as sent', async () => {
    const channel = await client.channels.fetch(fake.scene.channelId);
    if (!channel?.isSendable()) throw new Error('general should be a sendable text channel');
    const sent = await channel.send({ content: 'Checking…', allowedMentions: { parse: [] } });
    await sent.edit('Disk usage is 42%.');
    const stored = fake.message(sent.id)!;
    expect(stored.history.map((v) => v.content)).toEqual(['Checking…', 'Disk usage is 42%.']);
    expect(stored.message.content).toBe('Disk usage is 42%.');
    expect(stored.allowedMentions).toEqual({ parse: [] });
    expect(fake.botTextIn(fake.scene.channelId)).toContain('Disk usage is 42%.');
  });

  it('defers a slash command, then edits the original and sends a follow-up', async () => {
    const received = next<ChatInputCommandInteraction>(client, Events.InteractionCreate);
    const state = fake.interact(
      slashCommandInteraction(fake.scene, { name: 'ask', options: [{ name: 'question', type: 3, value: 'uptime?' }] }),
    );
    const interaction = await received;
    expect(interaction.isChatInputCommand()).toBe(true);
    expect(interaction.options.getString('question')).toBe('uptime?');
    await interaction.deferReply();
    expect(fake.message(state.originalMessageId!)?.message.flags).toBe(128);
    await interaction.editReply('Up 12 days.');
    await interaction.followUp({ content: 'Anything else?', flags: MessageFlags.Ephemeral });
    expect(state.response?.type).toBe(5);
    expect(fake.message(state.originalMessageId!)?.message.content).toBe('Up 12 days.');
    expect(fake.message(state.originalMessageId!)?.message.flags).toBe(0);
    const followup = fake.message(state.followupIds[0]!)!;
    expect(followup.message.content).toBe('Anything else?');
    expect(followup.ephemeral).toBe(true);
  });

  it('resumes after the gateway closes with a resumable code and receives events sent meanwhile', async () => {
    const resumed = next(client, Events.ShardResume);
    fake.gateway.closeConnections(4000, 'test: unknown error');
    // Dispatched while the socket is down: only a RESUME replay can deliver it.
    const received = next<Message>(client, Events.MessageCreate, (m) => m.content.includes('after the outage'));
    fake.userSays(guildMessageMentioningBot(fake.scene, { text: 'after the outage' }));
    await resumed;
    await received;
    expect(fake.gateway.countOp(GatewayOp.Resume)).toBe(1);
    expect(fake.gateway.countOp(GatewayOp.Identify)).toBe(1);
  });

  it('sees its own message arrive over the gateway after posting it, as Discord echoes it', async () => {
    const echoed = next<Message>(client, Events.MessageCreate, (m) => m.content === 'echo check');
    const channel = await client.channels.fetch(fake.scene.channelId);
    if (!channel?.isSendable()) throw new Error('general should be sendable');
    await channel.send('echo check');
    const message = await echoed;
    expect(message.author.id).toBe(fake.scene.bot.id);
  });

  it('delivers a DM (no guild, channel type 1) when the Channel partial is enabled', async () => {
    const received = next<Message>(client, Events.MessageCreate, (m) => m.content === 'hello in private');
    fake.userSays(dmMessage(fake.scene, { text: 'hello in private' }));
    const message = await received;
    expect(message.guildId).toBeNull();
    expect(message.channel.type).toBe(ChannelType.DM);
  });

  it('delivers a message posted in a thread the client learned of through THREAD_CREATE', async () => {
    const created = next(client, Events.ThreadCreate);
    const thread = fake.createThread({ name: 'incident-42' });
    await created;
    const received = next<Message>(client, Events.MessageCreate, (m) => m.content.endsWith('status?'));
    fake.userSays(threadMessage(fake.scene, { threadId: thread.id as string, text: 'status?' }));
    const message = await received;
    expect(message.channel.isThread()).toBe(true);
    expect(message.channelId).toBe(thread.id);
  });

  it('starts a thread from a message: the thread takes the message id and is type 11', async () => {
    const channel = await client.channels.fetch(fake.scene.channelId);
    if (!channel || channel.type !== ChannelType.GuildText) throw new Error('general should be a text channel');
    const starter = await channel.send('Starting work');
    const thread = await starter.startThread({ name: 'Countersign: disk usage' });
    expect(thread.id).toBe(starter.id);
    expect(fake.world.channel(thread.id)?.type).toBe(11);
    await thread.send('In the thread');
    expect(fake.botTextIn(thread.id)).toEqual(['In the thread']);
  });

  it('marks another bot as a bot, so an adapter can ignore it', async () => {
    const received = next<Message>(client, Events.MessageCreate, (m) => m.content.endsWith('bot to bot'));
    fake.userSays(botAuthoredMessage(fake.scene, { text: 'bot to bot' }));
    expect((await received).author.bot).toBe(true);
  });

  it('answers autocomplete with choices the fake records', async () => {
    const received = next<AutocompleteInteraction>(client, Events.InteractionCreate, (i) => i.isAutocomplete());
    const state = fake.interact(
      autocompleteInteraction(fake.scene, { name: 'skill', focused: 'name', partial: 'dis' }),
    );
    const interaction = await received;
    expect(interaction.options.getFocused(true)).toMatchObject({ name: 'name', value: 'dis' });
    await interaction.respond([{ name: 'disk-usage', value: 'disk-usage' }]);
    expect(state.response).toMatchObject({ type: 8, data: { choices: [{ name: 'disk-usage', value: 'disk-usage' }] } });
  });

  it('updates the clicked message when a button interaction is answered with update()', async () => {
    const channel = await client.channels.fetch(fake.scene.channelId);
    if (!channel?.isSendable()) throw new Error('general should be sendable');
    const card = await channel.send({
      content: 'Approve?',
      components: [{ type: 1, components: [{ type: 2, style: 3, label: 'Approve', custom_id: 'ap:n1:a0' }] }],
    });
    const received = next<ButtonInteraction>(client, Events.InteractionCreate, (i) => i.isButton());
    const state = fake.interact(
      buttonInteraction(fake.scene, { customId: 'ap:n1:a0', message: fake.message(card.id)!.message }),
    );
    const click = await received;
    expect(click.customId).toBe('ap:n1:a0');
    await click.update({ content: 'Approved', components: [] });
    expect(state.response?.type).toBe(7);
    expect(fake.message(card.id)?.message).toMatchObject({ content: 'Approved', components: [] });
  });

  it('lets a test await the REST call an event causes: a reply to a mention', async () => {
    const since = fake.requests.length;
    const handler = (m: Message) => {
      if (m.content.endsWith('please reply'))
        void m.reply({ content: 'On it.', allowedMentions: { parse: [], repliedUser: false } });
    };
    client.on(Events.MessageCreate, handler);
    const asked = fake.userSays(guildMessageMentioningBot(fake.scene, { text: 'please reply' }));
    const post = await fake.waitForRequest({ route: 'POST /channels/:channel_id/messages', since });
    client.off(Events.MessageCreate, handler);
    expect(post.status).toBe(200);
    expect(post.body).toMatchObject({ content: 'On it.', message_reference: { message_id: asked.message.id } });
    const reply = fake.message((post.response as { id: string }).id)!;
    expect(reply.message.type).toBe(19);
    expect(reply.pings).toEqual({ users: [], roles: [], everyone: false });
  });

  it('resumes after op 7 RECONNECT without identifying again', async () => {
    const resumesBefore = fake.gateway.countOp(GatewayOp.Resume);
    const resumed = next(client, Events.ShardResume);
    fake.gateway.requestReconnect();
    await resumed;
    expect(fake.gateway.countOp(GatewayOp.Resume)).toBe(resumesBefore + 1);
    expect(fake.gateway.countOp(GatewayOp.Identify)).toBe(1);
  });
});
