import type { AdapterContext } from '../platform.ts';
import { WORK_COMMANDS, type WorkCommandName } from '../../core/work-commands.ts';
import type { ConsoleCommand } from './inbound.ts';
import { skillConsoleCommands } from './skill-commands.ts';
import { attachConsoleCommand } from './attach.ts';
import { scheduleButtonValue, type ScheduleButtonVerb } from '../../core/buttons.ts';
import { describeGrant } from '../../approval/service.ts';

/** `/code REPO TASK`, `/review REPO BRANCH`, `/research TOPIC`, `/schedule WHEN TASK`: the command and the rest of the line. */
const WORK_LINE = new RegExp(`^/(${WORK_COMMANDS.join('|')})(?:\\s+([\\s\\S]*))?$`);

/**
 * The work commands, `/status` and `/budget`. A work command becomes the line's work item (its type, priority
 * and prompt), in the console's own conversation: a terminal has no threads, so there is no header
 * to post, as for `/skill`. What the core cannot read is printed, and nothing is enqueued.
 */
function workConsoleCommands(
  ctx: Pick<AdapterContext, 'workCommand' | 'workStatus'> & Partial<Pick<AdapterContext, 'budgetStatus'>>,
): ConsoleCommand {
  return async (line, person) => {
    if (line === '/status') return { reply: await ctx.workStatus(person) };
    // The terminal is the operator's: every budget of the policy.
    if (line === '/budget' && ctx.budgetStatus) return { reply: await ctx.budgetStatus(person, undefined) };
    const typed = WORK_LINE.exec(line);
    if (!typed) return undefined;
    // The core reads the words, and answers a command typed without them with its usage.
    const work = ctx.workCommand(typed[1] as WorkCommandName, (typed[2] ?? '').trim());
    if (!work.ok) return { reply: work.message };
    return {
      draft: {
        type: work.type,
        priority: work.priority,
        input: { prompt: work.prompt, ...(work.call ? { call: work.call } : {}) },
        payload: work.payload,
      },
    };
  };
}

/** `/connect SERVER` (with or without the server; the core answers a name it does not know). */
const CONNECT_LINE = /^\/connect(?:\s+([\s\S]*))?$/;

/**
 * `/connect SERVER` prints the authorization URL for the operator to open (the terminal is theirs
 * alone); `/connections` prints their connections.
 */
function connectionConsoleCommands(
  ctx: Pick<AdapterContext, 'connect' | 'connections' | 'connectableServers'>,
): ConsoleCommand {
  return async (line, person) => {
    if (line === '/connections') return { reply: (await ctx.connections(person)).text };
    const typed = CONNECT_LINE.exec(line);
    if (!typed) return undefined;
    const server = (typed[1] ?? '').trim();
    if (!server) return { reply: connectUsage(ctx.connectableServers) };
    const result = await ctx.connect(person, server);
    if (!result.ok) return { reply: result.message };
    return {
      reply: `Open this link in your browser to connect your own ${result.server} account (it works once, and not for long):\n${result.url}`,
    };
  };
}

function connectUsage(servers: readonly string[]): string {
  if (servers.length === 0) return 'Usage: /connect SERVER. No per-person servers are configured here.';
  return `Usage: /connect SERVER. Per-person servers: ${servers.join(', ')}.`;
}

/** `/schedules`, or `/schedules pause|resume|delete|history ID` (the 8 characters the list shows, or more). */
const SCHEDULES_LINE = /^\/schedules(?:\s+(pause|resume|delete|history)\s+([0-9a-f-]{8,36}))?$/;

/**
 * `/schedules` prints the operator's schedules with their ids; `/schedules pause|resume|delete|history ID`
 * presses that schedule's button, through the same dispatch (and the same checks) as a click.
 */
function scheduleConsoleCommands(ctx: Pick<AdapterContext, 'schedules' | 'pressButton'>): ConsoleCommand {
  return async (line, person) => {
    const typed = SCHEDULES_LINE.exec(line.trim());
    if (!typed) return undefined;
    // A terminal is its operator's own place: the list is theirs.
    const listing = await ctx.schedules(person, { platform: person.platform, channel: person.userId });
    const [, change, id] = typed;
    if (!change || !id) {
      const lines = [listing.heading.replaceAll('**', ''), ...listing.entries.map((e) => e.text)];
      if (listing.entries.length)
        lines.push('Change one with /schedules pause|resume|delete ID, or see its runs with /schedules history ID.');
      return { reply: lines.join('\n') };
    }
    const entry = listing.entries.find((e) => e.id.startsWith(id));
    if (!entry) return { reply: `None of your schedules has the id ${id}.` };
    let said = '';
    await ctx.pressButton(scheduleButtonValue(change as ScheduleButtonVerb, entry.id), person, {
      openDenyForm: async () => undefined,
      showFullArguments: async () => undefined,
      tellClicker: async (text) => {
        said = text;
      },
    });
    return { reply: said };
  };
}

/** The chat platforms' empty list points at a Revoke button; the console has none, it has `a` and `/grants revoke`. */
const NO_CONSOLE_GRANTS =
  'No standing grants apply here. Answering a ("Always allow here") at an approval card creates one; /grants lists it and /grants revoke ID revokes it.';

/** `/grants`, or `/grants revoke ID` (the 8 characters the list shows, or more). */
const GRANTS_LINE = /^\/grants(?:\s+revoke\s+([0-9a-f-]{8,36}))?$/;

/** A grant's list line for a terminal: the Markdown of the chat lists (bold id, code spans) left out. */
const plainGrant = (text: string) => text.replace(/^\*\*([0-9a-f]{8})\*\*/, '$1').replace(/`/g, '');

/**
 * `/grants` lists the standing grants that apply to the operator here, as `/countersign grants` does
 * on Slack; `/grants revoke ID` is that list's Revoke button (the same check: its creator or an approver).
 */
function grantConsoleCommands(
  approvals: Pick<AdapterContext['approvals'], 'grantsSeenFrom' | 'revokeGrant'>,
): ConsoleCommand {
  return async (line, person) => {
    const typed = GRANTS_LINE.exec(line.trim());
    if (!typed) return undefined;
    const grants = await approvals.grantsSeenFrom(person, { platform: person.platform, channel: person.userId });
    const id = typed[1];
    if (!id) {
      if (grants.length === 0) return { reply: NO_CONSOLE_GRANTS };
      return {
        reply: [...grants.map((g) => plainGrant(describeGrant(g))), 'Revoke one with /grants revoke ID.'].join('\n'),
      };
    }
    const matches = grants.filter((g) => g.id.startsWith(id));
    if (matches.length !== 1)
      return {
        reply:
          matches.length === 0
            ? `None of the grants that apply here has the id ${id}.`
            : `${matches.length} grants start with ${id}; give more of the id.`,
      };
    const result = await approvals.revokeGrant(matches[0]!.id, person);
    return { reply: result.ok ? `Revoked ${plainGrant(describeGrant(result.grant))}` : result.reason };
  };
}

/** What the commands use of the adapter context; without the connection verbs, `/connect` is not a command. */
type CommandContext = Pick<AdapterContext, 'skills' | 'workCommand' | 'workStatus'> &
  Partial<Pick<AdapterContext, 'budgetStatus'>> &
  Partial<Pick<AdapterContext, 'schedules' | 'pressButton' | 'approvals'>> &
  Partial<Pick<AdapterContext, 'connect' | 'connections' | 'connectableServers'>>;

const hasConnections = (
  ctx: CommandContext,
): ctx is CommandContext & Pick<AdapterContext, 'connect' | 'connections' | 'connectableServers'> =>
  ctx.connect !== undefined && ctx.connections !== undefined && ctx.connectableServers !== undefined;

/** Every line the console answers itself: the skills' commands, the work commands, the connections. */
export function consoleCommands(ctx: CommandContext): ConsoleCommand {
  const handlers = [
    skillConsoleCommands(ctx.skills),
    workConsoleCommands(ctx),
    attachConsoleCommand(),
    ...(ctx.approvals ? [grantConsoleCommands(ctx.approvals)] : []),
    ...(hasConnections(ctx) ? [connectionConsoleCommands(ctx)] : []),
    ...(ctx.schedules && ctx.pressButton
      ? [scheduleConsoleCommands({ schedules: ctx.schedules, pressButton: ctx.pressButton })]
      : []),
  ];
  return async (line, person) => {
    for (const handle of handlers) {
      const answer = await handle(line, person);
      if (answer) return answer;
    }
    return undefined;
  };
}
