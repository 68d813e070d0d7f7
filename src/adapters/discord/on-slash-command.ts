import {
  MessageFlags,
  Routes,
  type AutocompleteInteraction,
  type ChatInputCommandInteraction,
  type REST,
} from 'discord.js';
import type { AdapterContext, AdmissionDraft, ConnectResult } from '../platform.ts';
import type { ReplyButton, ReplyTarget } from '../../core/reply-target.ts';
import { replyButtonRows } from './components/buttons.ts';
import { WORK_COMMAND_USAGE, WORK_COMMANDS, type WorkCommandName } from '../../core/work-commands.ts';
import { discordConversationId } from './conversation-ids.ts';
import { neutralizeMentions } from './format/index.ts';
import { Priority } from '../../core/work-item.ts';
import { formatSkillList, skillRunPrompt } from '../../skills/index.ts';
import type { DiscordOutbound } from './outbound.ts';
import { revokeGrantValue, scheduleButtonValue } from '../../core/buttons.ts';
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

/** The words of a work command, as the core reads them from a line: `REPO TASK`, `REPO BRANCH`, `WHEN TASK`, `TOPIC`. */
function workCommandText(name: WorkCommandName, interaction: ChatInputCommandInteraction): string {
  const option = (key: string) => interaction.options.getString(key) ?? '';
  if (name === 'code') return `${option('repo')} ${option('task')}`;
  if (name === 'review') return `${option('repo')} ${option('branch')}`;
  if (name === 'schedule') return `${option('when')} ${option('task')}`;
  return option('topic');
}

export const isWorkCommand = (name: string): name is WorkCommandName =>
  (WORK_COMMANDS as readonly string[]).includes(name);

const NO_THREAD =
  'I could not start a thread for this work. Give me the Create Public Threads and Send Messages in Threads permissions in this channel, or run the command in a thread or a DM.';

/** Where a run's header and its thread are: `headerId` is the interaction's response message. */
function workPlace(interaction: ChatInputCommandInteraction, headerId: string) {
  const place = placeOf(interaction);
  const threaded = interaction.inGuild() && !interaction.channel?.isThread();
  // Started on the header, a thread takes the header's id: the reply target is known before it exists.
  const reply: ReplyTarget = threaded ? { ...place, channel: headerId, parent: interaction.channelId } : place;
  return { threaded, reply, conversationId: discordConversationId(reply.channel, !interaction.inGuild()) };
}

/**
 * `/code`, `/review`, `/research`: the core reads the options once the policy admitted the person (an
 * unknown repository's answer lists the known ones, which is not for everyone). What it cannot read
 * is answered privately; otherwise the core's header is the public reply, and in a channel the work
 * runs in a thread started on it, a conversation of its own (in a thread or a DM: that one).
 */
export async function onWorkCommand(
  ctx: AdapterContext,
  deps: SlashCommandDeps,
  name: WorkCommandName,
  interaction: ChatInputCommandInteraction,
): Promise<void> {
  let headerId: string | undefined;
  let threadError: unknown;
  try {
    const admitted = await ctx.admit({
      requester: personOf(interaction),
      place: placeOf(interaction),
      queued: true,
      // Snowflakes are unique across Discord: the interaction's id cannot collide with a message's.
      // With it, the thread below is started inside the enqueue's transaction.
      eventId: interaction.id,
      draft: async (): Promise<AdmissionDraft | undefined> => {
        const work = ctx.workCommand(name, workCommandText(name, interaction));
        if (!work.ok) {
          await interaction.reply({ content: clip(work.message), ...PRIVATE });
          return undefined;
        }
        await interaction.deferReply();
        // The header may quote what the person typed: shown, never a mention (and allowedMentions is empty).
        const header = await interaction.editReply({ content: clip(neutralizeMentions(work.header)), ...PUBLIC_EDIT });
        headerId = header.id;
        const where = workPlace(interaction, header.id);
        return {
          type: work.type,
          priority: work.priority,
          conversationId: where.conversationId,
          input: { prompt: work.prompt, ...(work.call ? { call: work.call } : {}) },
          payload: { ...work.payload, interactionId: interaction.id },
          reply: where.reply,
          placeholder: '…',
        };
      },
      // Inside the enqueue's transaction, as a mention's thread is: no thread, no work item.
      beforeCommit: async () => {
        if (headerId === undefined || !workPlace(interaction, headerId).threaded) return;
        try {
          await startHeaderThread(deps, interaction, headerId, threadName(name, interaction));
        } catch (error) {
          threadError = error;
          throw error;
        }
      },
    });
    if (!admitted.ok) await interaction.reply({ content: clip(admitted.refusal), ...PRIVATE });
  } catch (error) {
    const answer = threadError === undefined ? TEXTS.unavailable : NO_THREAD;
    ctx.log.error(
      { err: error, channel: interaction.channelId, command: name },
      'could not enqueue a Discord work command',
    );
    if (interaction.deferred) await interaction.editReply({ content: answer, ...PUBLIC_EDIT }).catch(() => undefined);
    else await interaction.reply({ content: answer, ...PRIVATE }).catch(() => undefined);
  }
}

/** Starts the work's thread on its header message (the interaction's public response). */
async function startHeaderThread(
  deps: SlashCommandDeps,
  interaction: ChatInputCommandInteraction,
  headerId: string,
  name: string,
): Promise<void> {
  const thread = (await deps.rest.post(Routes.threads(interaction.channelId, headerId), { body: { name } })) as {
    id?: string;
  };
  if (thread.id !== headerId) throw new Error(`thread ${String(thread.id)} for header ${headerId}`);
}

/** A thread name Discord accepts: the command and what it works on, on one line. */
function threadName(name: WorkCommandName, interaction: ChatInputCommandInteraction): string {
  const line = neutralizeMentions(`${name} ${workCommandText(name, interaction)}`.replace(/\s+/g, ' ').trim());
  return line.length <= LIMITS.threadName ? line : `${line.slice(0, LIMITS.threadName - 1)}…`;
}

/** `/countersign status` and `budget`: the asker's own work, or the budgets they count against here, privately. */
async function answerStatus(
  ctx: AdapterContext,
  interaction: ChatInputCommandInteraction,
  subcommand: 'status' | 'budget',
): Promise<void> {
  const person = personOf(interaction);
  const place = placeOf(interaction);
  const admitted = ctx.approvals.mayUse(person, place);
  if (!admitted.ok) {
    await interaction.reply({ content: clip(admitted.refusal), ...PRIVATE });
    return;
  }
  await interaction.deferReply({ flags: MessageFlags.Ephemeral });
  const text = subcommand === 'status' ? await ctx.workStatus(person) : await ctx.budgetStatus(person, place);
  await interaction.editReply({ content: clip(neutralizeMentions(text)), ...PUBLIC_EDIT });
}

/** `/countersign schedules`: the asker's schedules (an approver's: everyone's here), privately, with buttons. */
async function answerSchedules(ctx: AdapterContext, interaction: ChatInputCommandInteraction): Promise<void> {
  const person = personOf(interaction);
  const place = placeOf(interaction);
  const admitted = ctx.approvals.mayUse(person, place);
  if (!admitted.ok) {
    await interaction.reply({ content: clip(admitted.refusal), ...PRIVATE });
    return;
  }
  await interaction.deferReply({ flags: MessageFlags.Ephemeral });
  const listing = await ctx.schedules(person, place);
  const lines = listing.entries.map((e, i) => `${i + 1}. ${e.text}`);
  // Three buttons a schedule, and a message holds 25: the newest ones get them.
  const withButtons = listing.entries.slice(0, Math.floor((LIMITS.buttonsPerRow * LIMITS.actionRows) / 3));
  if (withButtons.length < listing.entries.length)
    lines.push(
      `(Buttons for the first ${withButtons.length}; \`countersign schedules\` in a shell reaches every one.)`,
    );
  const buttons = withButtons.flatMap((e, i) => [
    {
      type: 2,
      style: 2,
      label: `${e.paused ? 'Resume' : 'Pause'} ${i + 1}`,
      custom_id: scheduleButtonValue(e.paused ? 'resume' : 'pause', e.id),
    },
    { type: 2, style: 2, label: `History ${i + 1}`, custom_id: scheduleButtonValue('history', e.id) },
    { type: 2, style: 4, label: `Delete ${i + 1}`, custom_id: scheduleButtonValue('delete', e.id) },
  ]);
  const rows = [];
  for (let i = 0; i < buttons.length; i += LIMITS.buttonsPerRow) {
    rows.push({ type: 1, components: buttons.slice(i, i + LIMITS.buttonsPerRow) });
  }
  await interaction.editReply({
    content: clip(neutralizeMentions([listing.heading, ...lines].join('\n'))),
    components: rows,
    ...PUBLIC_EDIT,
  } as Parameters<ChatInputCommandInteraction['editReply']>[0]);
}

/** Characters in a button's label. */
const MAX_BUTTON_LABEL = 80;

/**
 * `/countersign connect server:` and `connections`: the person's own connections, answered only to
 * them (an ephemeral reply, deferred first: starting a connection asks the server's sign-in, which
 * can take longer than Discord's 3 seconds). A refused person gets the refusal and nothing else.
 */
async function answerConnections(
  ctx: AdapterContext,
  interaction: ChatInputCommandInteraction,
  subcommand: 'connect' | 'connections',
): Promise<void> {
  const person = personOf(interaction);
  const admitted = ctx.approvals.mayUse(person, placeOf(interaction));
  if (!admitted.ok) {
    await interaction.reply({ content: clip(admitted.refusal), ...PRIVATE });
    return;
  }
  await interaction.deferReply({ flags: MessageFlags.Ephemeral });
  try {
    const answer =
      subcommand === 'connections'
        ? connectionsReply(await ctx.connections(person))
        : connectReply(await ctx.connect(person, interaction.options.getString('server', true).trim()));
    await interaction.editReply({ ...answer, ...PUBLIC_EDIT });
  } catch (error) {
    // Deferred already: without this the person's reply would say "thinking…" until it expires.
    ctx.log.error({ err: error, user: interaction.user.id, subcommand }, 'could not answer a connections command');
    await interaction.editReply({ content: TEXTS.unavailable, ...PUBLIC_EDIT }).catch(() => undefined);
  }
}

/** The answer to `connect`: the link as a Link button (where Discord takes its length) and as text; or why not. */
function connectReply(result: ConnectResult) {
  // What the person typed may be quoted in the core's message: shown, never a mention.
  if (!result.ok) return { content: clip(neutralizeMentions(result.message)), components: [] };
  const server = neutralizeMentions(result.server);
  const text = `Sign in to connect **your own** ${server} account. This link is for you alone: do not share it. It works once, and not for long.\n<${result.url}>`;
  const label = `Connect ${server}`;
  const button = {
    type: 2,
    style: 5,
    label: label.length <= MAX_BUTTON_LABEL ? label : `${label.slice(0, MAX_BUTTON_LABEL - 1)}…`,
    url: result.url,
  };
  return {
    content: clip(text),
    components: result.url.length <= LIMITS.linkButtonUrl ? [{ type: 1, components: [button] }] : [],
  };
}

/**
 * `/countersign grants`: the standing grants here, privately, with a Revoke button each; `status`:
 * the asker's work; `connect` and `connections`: their per-person connections; `help` otherwise.
 */
export async function onCountersign(ctx: AdapterContext, interaction: ChatInputCommandInteraction): Promise<void> {
  const subcommand = interaction.options.getSubcommand(false);
  if (subcommand === 'status' || subcommand === 'budget') return answerStatus(ctx, interaction, subcommand);
  if (subcommand === 'schedules') return answerSchedules(ctx, interaction);
  if (subcommand === 'connect' || subcommand === 'connections') return answerConnections(ctx, interaction, subcommand);
  if (subcommand !== 'grants') {
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
  '**/countersign status** — your running and queued work: type, priority, age.',
  '**/countersign budget** — the spend limits your requests here count against: used, reserved, left, reset.',
  '**/countersign schedules** — your schedules (an approver: everyone’s in this channel), each with Pause/Resume and Delete.',
  '**/countersign connect** server — connect your own account to a per-person server; the link is shown to you alone.',
  '**/countersign connections** — your connections: server, account, connected, last used.',
  '**/skills** — the skills I can run · **/skill** — run one.',
  ...WORK_COMMANDS.map((w) => `**/${w}** ${WORK_COMMAND_USAGE[w].args} — ${WORK_COMMAND_USAGE[w].description}.`),
  'Mention me in a channel, or write to me in a DM, to ask for anything else. Risky actions always wait for an Approve.',
].join('\n');

/** `connections`: the person's list, with a Disconnect button per connected server (ending the clicker's own). */
function connectionsReply(view: { text: string; buttons: ReplyButton[] }) {
  return { content: clip(neutralizeMentions(view.text)), components: replyButtonRows(view.buttons) };
}
