import { ApplicationCommandOptionType, Routes, type REST } from 'discord.js';
import type { Logger } from 'pino';
import { createHash } from 'node:crypto';
import { WORK_COMMAND_USAGE } from '../../core/work-commands.ts';

/**
 * Discord's bounds on an option's choices (API v10, Application Commands: "Application Command
 * Option Choice Structure"): at most 25 choices, names and values of 1 to 100 characters.
 */
const MAX_CHOICES = 25;
const MAX_CHOICE_LENGTH = 100;
/** Command and option descriptions: 1 to 100 characters. */
const MAX_DESCRIPTION = 100;

const description = (text: string) =>
  text.length <= MAX_DESCRIPTION ? text : `${text.slice(0, MAX_DESCRIPTION - 1)}…`;

/**
 * A required string option that is a pick list of `names` when Discord can show them all, free text
 * otherwise (the core then names the known ones).
 */
function pickOption(name: string, text: string, names: readonly string[]) {
  const listable =
    names.length > 0 &&
    names.length <= MAX_CHOICES &&
    names.every((n) => n.length >= 1 && n.length <= MAX_CHOICE_LENGTH);
  return {
    type: ApplicationCommandOptionType.String,
    name,
    description: text,
    required: true,
    ...(listable ? { choices: names.map((n) => ({ name: n, value: n })) } : {}),
  };
}

/** The `repo` option of `/code` and `/review`: the configured repositories. */
const repoOption = (repoNames: readonly string[]) => pickOption('repo', 'Which repository', repoNames);

const stringOption = (name: string, text: string) => ({
  type: ApplicationCommandOptionType.String,
  name,
  description: text,
  required: true,
});

/** `/code`, `/review`, `/research`, `/schedule` (src/core/work-commands.ts), with their options. */
function workCommandDefinitions(repoNames: readonly string[]) {
  return [
    {
      name: 'code',
      description: description(`Code: ${WORK_COMMAND_USAGE.code.description}`),
      type: 1,
      options: [repoOption(repoNames), stringOption('task', 'What to change')],
    },
    {
      name: 'review',
      description: description(`Review: ${WORK_COMMAND_USAGE.review.description}`),
      type: 1,
      options: [repoOption(repoNames), stringOption('branch', 'The branch to review')],
    },
    {
      name: 'research',
      description: description(`Research: ${WORK_COMMAND_USAGE.research.description}`),
      type: 1,
      options: [stringOption('topic', 'What to find out')],
    },
    {
      name: 'schedule',
      description: description(`Schedule: ${WORK_COMMAND_USAGE.schedule.description}`),
      type: 1,
      options: [
        stringOption('when', 'When: 0 9 * * 1-5 Europe/Berlin, every 15m, in 2h, 2026-12-01 09:00 UTC'),
        stringOption('task', 'What to do at each run'),
      ],
    },
  ];
}

/** The slash commands, as Discord's bulk-overwrite endpoint takes them. */
export function commandDefinitions(repoNames: readonly string[] = [], connectableServers: readonly string[] = []) {
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
    {
      name: 'countersign',
      description: 'Standing grants, your work, your connections, and help',
      type: 1,
      options: [
        {
          type: ApplicationCommandOptionType.Subcommand,
          name: 'grants',
          description: 'Standing grants that apply here',
        },
        { type: ApplicationCommandOptionType.Subcommand, name: 'help', description: 'What Countersign can do' },
        {
          type: ApplicationCommandOptionType.Subcommand,
          name: 'status',
          description: 'Your running and queued work: type, priority, age',
        },
        {
          type: ApplicationCommandOptionType.Subcommand,
          name: 'budget',
          description: 'The spend limits your requests here count against: used, left, reset',
        },
        {
          type: ApplicationCommandOptionType.Subcommand,
          name: 'schedules',
          description: 'Your schedules (approvers: everyone’s here), with Pause/Resume and Delete',
        },
        {
          type: ApplicationCommandOptionType.Subcommand,
          name: 'connect',
          description: 'Connect your own account to a per-person server (the link is shown to you alone)',
          options: [pickOption('server', 'Which server', connectableServers)],
        },
        {
          type: ApplicationCommandOptionType.Subcommand,
          name: 'connections',
          description: 'Your connections: server, account, connected, last used',
        },
      ],
    },
    ...workCommandDefinitions(repoNames),
  ];
}

/**
 * What Discord echoes back of a command, reduced to the fields we define, for "did it change?".
 * Discord adds ids, versions and defaults to what it stores, so the raw JSON never compares equal.
 */
function fingerprint(commands: Array<Record<string, unknown>>): string {
  const normal = commands
    .map((c) => ({
      name: c.name,
      description: c.description,
      type: c.type ?? 1,
      options: normalOptions(c.options),
    }))
    .sort((a, b) => String(a.name).localeCompare(String(b.name)));
  return createHash('sha256').update(JSON.stringify(normal)).digest('hex');
}

/** Options as compared, a subcommand's own options included (`/countersign connect server:`). */
function normalOptions(options: unknown): unknown[] {
  return ((options as Array<Record<string, unknown>> | undefined) ?? []).map((o) => ({
    type: o.type,
    name: o.name,
    description: o.description,
    required: Boolean(o.required),
    autocomplete: Boolean(o.autocomplete),
    // A repository or per-person server added or removed changes a pick list: register again.
    choices: ((o.choices as Array<{ name: unknown; value: unknown }> | undefined) ?? []).map((c) => [c.name, c.value]),
    options: normalOptions(o.options),
  }));
}

/**
 * Registers the slash commands only when their definition changed, so restarts (and every
 * ingress replica) do not spend Discord's 200-creates-a-day command budget. Guild-scoped commands
 * update at once — handy while developing; global ones can take up to an hour to appear.
 */
export async function registerCommands(
  rest: REST,
  applicationId: string,
  guildId: string | undefined,
  log: Logger,
  repoNames: readonly string[] = [],
  connectableServers: readonly string[] = [],
): Promise<boolean> {
  const route = guildId
    ? Routes.applicationGuildCommands(applicationId, guildId)
    : Routes.applicationCommands(applicationId);
  const existing = (await rest.get(route)) as Array<Record<string, unknown>>;
  const desired = commandDefinitions(repoNames, connectableServers);
  if (fingerprint(existing) === fingerprint(desired)) return false;
  await rest.put(route, { body: desired });
  log.info({ scope: guildId ? `guild ${guildId}` : 'global' }, 'registered Discord slash commands');
  return true;
}
