import { ApplicationCommandOptionType, Routes, type REST } from 'discord.js';
import type { Logger } from 'pino';
import { createHash } from 'node:crypto';

/** The slash commands, as Discord's bulk-overwrite endpoint takes them. */
function commandDefinitions() {
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
      description: 'Standing grants (with Revoke) and help',
      type: 1,
      options: [
        {
          type: ApplicationCommandOptionType.Subcommand,
          name: 'grants',
          description: 'Standing grants that apply here',
        },
        { type: ApplicationCommandOptionType.Subcommand, name: 'help', description: 'What Countersign can do' },
      ],
    },
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
