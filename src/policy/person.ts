/**
 * People and who a policy line means. A person is `platform:workspace:user` internally: the Slack
 * team (or Enterprise Grid org) that issued the user id, or the Discord guild they are speaking in
 * (`@me` in a DM). The policy and APPROVERS also accept the short `slack:U…` / `discord:…` forms.
 *
 * Uniqueness decides what a short form may match. Discord user ids are global snowflakes, so
 * `discord:123` is that account in every guild and DM. Slack user ids are unique only within the
 * org that issued them: in a Slack Connect channel a user of another org can carry a same-looking
 * id. So `slack:U…` (and `slack-usergroup:S…`) match only people whose id was issued by one of the
 * policy's home workspaces (`workspaces:` in the file), or, when none are configured, by the
 * workspace the conversation happens in. To name someone from another org, write the full form.
 */

export interface Person {
  platform: string;
  /** The Slack team (T…) or Enterprise Grid org (E…) that issued `user`; the Discord guild, or `@me`. */
  workspace: string;
  user: string;
  /** Discord role ids, Slack user group ids (S…) the person is in, as the adapter found them. */
  groups?: readonly string[];
  /** A Slack single- or multi-channel guest, or an external (Slack Connect) user: set by the adapter. */
  guest?: boolean;
  displayName?: string;
}

export type PersonPattern =
  /** One account; `workspace` absent for the short form. */
  | { kind: 'user'; platform: string; workspace?: string; user: string }
  /** Everyone whose id a workspace issued (`slack:T…:*`), or everyone in a guild (`discord:G:*`). */
  | { kind: 'members'; platform: string; workspace: string }
  /** A Discord role (`discord-role:ID`) or a Slack user group (`slack-usergroup:S…`). */
  | { kind: 'group'; platform: string; group: string };

export type ParsedPerson = { ok: true; pattern: PersonPattern } | { ok: false; message: string };

/** What ids look like on each platform; ids are case-sensitive. */
export const PERSON_ID_SHAPES = {
  slack: {
    user: /^[UW][A-Z0-9]{2,}$/,
    workspace: /^[TE][A-Z0-9]{2,}$/,
    group: /^S[A-Z0-9]{2,}$/,
    example: 'slack:U0123ABCD',
  },
  discord: {
    user: /^\d{1,20}$/,
    workspace: /^(\d{1,20}|@me)$/,
    group: /^\d{1,20}$/,
    example: 'discord:123456789012345678',
  },
  console: { user: /^\S{1,64}$/, workspace: /^\S{1,64}$/, group: /^$/, example: 'console:alice' },
} as const;

type Platform = keyof typeof PERSON_ID_SHAPES;
const isPlatform = (p: string): p is Platform => Object.hasOwn(PERSON_ID_SHAPES, p);
const GROUP_PREFIXES: Record<string, Platform> = { 'discord-role': 'discord', 'slack-usergroup': 'slack' };

const FORMS =
  'platform:user-id or platform:workspace:user-id (e.g. slack:U0123ABCD, slack:T0123ABCD:U0123ABCD, discord:123456789012345678)';

function shapeProblem(platform: Platform, part: 'user' | 'workspace' | 'group', id: string): string | undefined {
  if (PERSON_ID_SHAPES[platform][part].test(id)) return undefined;
  const what = { user: 'user id', workspace: 'workspace id', group: 'group id' }[part];
  const hint =
    platform === 'slack' && PERSON_ID_SHAPES.slack[part].test(id.toUpperCase()) ? ' (Slack ids are upper-case)' : '';
  const example = {
    slack: { user: 'U0123ABCD', workspace: 'T0123ABCD', group: 'S0123ABCD' },
    discord: { user: '123456789012345678', workspace: '123456789012345678', group: '123456789012345678' },
    console: { user: 'alice', workspace: 'local', group: '' },
  }[platform][part];
  return `"${id}" is not a ${platform} ${what}${hint}, e.g. ${example}`;
}

/**
 * Reads a person or group as the policy and APPROVERS write it: `slack:U0123ABCD`,
 * `slack:T0123ABCD:U0123ABCD`, `slack:T0123ABCD:*`, `discord:123…`, `discord:GUILD:123…`,
 * `discord-role:ID`, `slack-usergroup:S0123ABCD`. Never guesses: `U123`, `slack:u123` and
 * `slack: U123` are refused with what to write instead.
 */
export function parsePerson(text: string): ParsedPerson {
  const shown = JSON.stringify(text.slice(0, 60));
  if (/\s/.test(text)) return { ok: false, message: `${shown} contains a space; write it as ${FORMS}` };
  const parts = text.split(':');
  if (parts.length < 2 || parts.some((p) => p === '')) return { ok: false, message: `${shown} is not ${FORMS}` };
  const [prefix = '', ...ids] = parts;
  const groupPlatform = GROUP_PREFIXES[prefix];
  if (groupPlatform) {
    if (ids.length !== 1) return { ok: false, message: `${shown} is not ${prefix}:ID` };
    const problem = shapeProblem(groupPlatform, 'group', ids[0]!);
    return problem
      ? { ok: false, message: `${shown}: ${problem}` }
      : { ok: true, pattern: { kind: 'group', platform: groupPlatform, group: ids[0]! } };
  }
  if (!isPlatform(prefix)) {
    const known = [...Object.keys(PERSON_ID_SHAPES), ...Object.keys(GROUP_PREFIXES)].join(', ');
    return { ok: false, message: `${shown} names an unknown platform "${prefix}" (expected one of ${known})` };
  }
  if (ids.length === 1) {
    const problem = shapeProblem(prefix, 'user', ids[0]!);
    return problem
      ? { ok: false, message: `${shown}: ${problem}` }
      : { ok: true, pattern: { kind: 'user', platform: prefix, user: ids[0]! } };
  }
  if (ids.length === 2) {
    const [workspace = '', user = ''] = ids;
    const problem =
      shapeProblem(prefix, 'workspace', workspace) ?? (user === '*' ? undefined : shapeProblem(prefix, 'user', user));
    if (problem) return { ok: false, message: `${shown}: ${problem}` };
    return {
      ok: true,
      pattern:
        user === '*'
          ? { kind: 'members', platform: prefix, workspace }
          : { kind: 'user', platform: prefix, workspace, user },
    };
  }
  return { ok: false, message: `${shown} is not ${FORMS}` };
}

/** A full person id (`slack:T…:U…`) as a person; short forms and groups are refused. */
export function personFromId(text: string): Person | { error: string } {
  const parsed = parsePerson(text);
  if (!parsed.ok) return { error: parsed.message };
  const p = parsed.pattern;
  if (p.kind !== 'user' || p.workspace === undefined)
    return {
      error: `"${text}" is not a full person id: write platform:workspace:user, e.g. slack:T0123ABCD:U0123ABCD`,
    };
  return { platform: p.platform, workspace: p.workspace, user: p.user };
}

export function formatPattern(pattern: PersonPattern): string {
  switch (pattern.kind) {
    case 'user':
      return pattern.workspace === undefined
        ? `${pattern.platform}:${pattern.user}`
        : `${pattern.platform}:${pattern.workspace}:${pattern.user}`;
    case 'members':
      return `${pattern.platform}:${pattern.workspace}:*`;
    case 'group':
      return `${pattern.platform === 'discord' ? 'discord-role' : 'slack-usergroup'}:${pattern.group}`;
  }
}

/**
 * Platforms whose user ids are unique only within the workspace that issued them (see the module
 * comment). Every other platform's ids name one account everywhere: Discord's snowflakes, the
 * console's local user, and platforms an embedding application adds.
 */
const SCOPED_IDS = new Set(['slack']);
const globalIds = (platform: string) => !SCOPED_IDS.has(platform);

/** Whether an id issued in `workspace` is one the short forms may name. */
function inHome(person: Person, home: readonly string[]): boolean {
  return globalIds(person.platform) || home.includes(person.workspace);
}

/**
 * Whether `pattern` names `person`. `home` lists the workspaces whose ids short Slack forms may
 * match (the policy's `workspaces:`, else the conversation's workspace); without it a short Slack
 * form matches nobody, which fails closed.
 */
export function personMatches(pattern: PersonPattern, person: Person, home: readonly string[] = []): boolean {
  if (pattern.platform !== person.platform) return false;
  switch (pattern.kind) {
    case 'user':
      if (pattern.user !== person.user) return false;
      return pattern.workspace === undefined ? inHome(person, home) : pattern.workspace === person.workspace;
    case 'members':
      return pattern.workspace === person.workspace;
    case 'group':
      // A Slack user group lists ids of the org the bot asked; an id from another org is someone else.
      return (person.groups ?? []).includes(pattern.group) && inHome(person, home);
  }
}

/** The same account: the same user id, issued by the same workspace where ids are not global. */
export function samePerson(a: Person, b: Person): boolean {
  return a.platform === b.platform && a.user === b.user && (globalIds(a.platform) || a.workspace === b.workspace);
}
