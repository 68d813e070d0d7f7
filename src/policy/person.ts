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
 * The platforms' rules say which ids are workspace-scoped and what ids look like (platforms.ts):
 * nothing here names a platform.
 */

import { groupPrefixes, type PolicyPlatformRules, type PolicyPlatforms } from './platforms.ts';

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
  /**
   * A platform's group: a Discord role (`discord-role:ID`), a Slack user group (`slack-usergroup:S…`).
   * `prefix` is how the policy wrote it; patterns stored before it was kept have none.
   */
  | { kind: 'group'; platform: string; group: string; prefix?: string };

export type ParsedPerson = { ok: true; pattern: PersonPattern } | { ok: false; message: string };

/** The forms a person is written in, with examples of the first platforms. */
function forms(platforms: PolicyPlatforms): string {
  const [first, second] = platforms.all();
  const shown = first
    ? [
        `${first.name}:${first.ids.examples.user}`,
        `${first.name}:${first.ids.examples.workspace}:${first.ids.examples.user}`,
        ...(second ? [`${second.name}:${second.ids.examples.user}`] : []),
      ]
    : [];
  return `platform:user-id or platform:workspace:user-id${shown.length ? ` (e.g. ${shown.join(', ')})` : ''}`;
}

function shapeProblem(
  rules: PolicyPlatformRules,
  part: 'user' | 'workspace' | 'group',
  id: string,
): string | undefined {
  const { ids } = rules;
  if (part === 'workspace' && ids.directWorkspace !== undefined && id === ids.directWorkspace) return undefined;
  const shape = ids[part];
  if (shape?.test(id)) return undefined;
  const what = { user: 'user id', workspace: 'workspace id', group: 'group id' }[part];
  const hint = ids.upperCase && shape?.test(id.toUpperCase()) ? ` (${rules.displayName} ids are upper-case)` : '';
  return `"${id}" is not a ${rules.name} ${what}${hint}, e.g. ${ids.examples[part] ?? ''}`;
}

/**
 * Reads a person or group as the policy and APPROVERS write it: `platform:USER`,
 * `platform:WORKSPACE:USER`, `platform:WORKSPACE:*`, `<groupPrefix>:GROUP` (e.g. `slack:U0123ABCD`,
 * `slack:T0123ABCD:U0123ABCD`, `discord-role:ID`), with ids of the shapes `platforms` describe.
 * Never guesses: `U123`, `slack:u123` and `slack: U123` are refused with what to write instead.
 */
export function parsePerson(text: string, platforms: PolicyPlatforms): ParsedPerson {
  const shown = JSON.stringify(text.slice(0, 60));
  const written = forms(platforms);
  if (/\s/.test(text)) return { ok: false, message: `${shown} contains a space; write it as ${written}` };
  const parts = text.split(':');
  if (parts.length < 2 || parts.some((p) => p === '')) return { ok: false, message: `${shown} is not ${written}` };
  const [prefix = '', ...ids] = parts;
  const prefixes = groupPrefixes(platforms);
  const groupPlatform = prefixes.get(prefix);
  if (groupPlatform) {
    if (ids.length !== 1) return { ok: false, message: `${shown} is not ${prefix}:ID` };
    const problem = shapeProblem(groupPlatform, 'group', ids[0]!);
    return problem
      ? { ok: false, message: `${shown}: ${problem}` }
      : { ok: true, pattern: { kind: 'group', platform: groupPlatform.name, prefix, group: ids[0]! } };
  }
  if (!platforms.has(prefix)) {
    const known = [...platforms.all().map((r) => r.name), ...[...prefixes.keys()].sort()].join(', ');
    return { ok: false, message: `${shown} names an unknown platform "${prefix}" (expected one of ${known})` };
  }
  const rules = platforms.rulesOf(prefix);
  if (ids.length === 1) {
    const problem = shapeProblem(rules, 'user', ids[0]!);
    return problem
      ? { ok: false, message: `${shown}: ${problem}` }
      : { ok: true, pattern: { kind: 'user', platform: prefix, user: ids[0]! } };
  }
  if (ids.length === 2) {
    const [workspace = '', user = ''] = ids;
    const problem =
      shapeProblem(rules, 'workspace', workspace) ?? (user === '*' ? undefined : shapeProblem(rules, 'user', user));
    if (problem) return { ok: false, message: `${shown}: ${problem}` };
    return {
      ok: true,
      pattern:
        user === '*'
          ? { kind: 'members', platform: prefix, workspace }
          : { kind: 'user', platform: prefix, workspace, user },
    };
  }
  return { ok: false, message: `${shown} is not ${written}` };
}

/** A full person id (`platform:workspace:user`) as a person; short forms and groups are refused. */
export function personFromId(text: string, platforms: PolicyPlatforms): Person | { error: string } {
  const parsed = parsePerson(text, platforms);
  if (!parsed.ok) return { error: parsed.message };
  const p = parsed.pattern;
  if (p.kind !== 'user' || p.workspace === undefined) {
    const first = platforms.all()[0];
    const example = first ? `, e.g. ${first.name}:${first.ids.examples.workspace}:${first.ids.examples.user}` : '';
    return { error: `"${text}" is not a full person id: write platform:workspace:user${example}` };
  }
  return { platform: p.platform, workspace: p.workspace, user: p.user };
}

/**
 * A pattern as a policy writes it. Group patterns stored before they carried their prefix (envelope
 * rows in the database) read `<platform>-group:ID`.
 */
export function formatPattern(pattern: PersonPattern): string {
  switch (pattern.kind) {
    case 'user':
      return pattern.workspace === undefined
        ? `${pattern.platform}:${pattern.user}`
        : `${pattern.platform}:${pattern.workspace}:${pattern.user}`;
    case 'members':
      return `${pattern.platform}:${pattern.workspace}:*`;
    case 'group':
      return `${pattern.prefix ?? `${pattern.platform}-group`}:${pattern.group}`;
  }
}

/** Whether an id issued in `workspace` is one the short forms may name (see the module comment). */
function inHome(platforms: PolicyPlatforms, person: Person, home: readonly string[]): boolean {
  return !platforms.rulesOf(person.platform).workspaceScopedIds || home.includes(person.workspace);
}

/**
 * Whether `pattern` names `person`. `home` lists the workspaces whose ids short forms of a
 * workspace-scoped platform may match (the policy's `workspaces:`, else the conversation's
 * workspace); without it such a short form matches nobody, which fails closed.
 */
export function personMatches(
  platforms: PolicyPlatforms,
  pattern: PersonPattern,
  person: Person,
  home: readonly string[] = [],
): boolean {
  if (pattern.platform !== person.platform) return false;
  switch (pattern.kind) {
    case 'user':
      if (pattern.user !== person.user) return false;
      return pattern.workspace === undefined ? inHome(platforms, person, home) : pattern.workspace === person.workspace;
    case 'members':
      return pattern.workspace === person.workspace;
    case 'group':
      // A workspace-scoped group lists ids of the workspace the bot asked; an id from another is someone else.
      return (person.groups ?? []).includes(pattern.group) && inHome(platforms, person, home);
  }
}

/** The same account: the same user id, issued by the same workspace where ids are workspace-scoped. */
export function samePerson(platforms: PolicyPlatforms, a: Person, b: Person): boolean {
  return (
    a.platform === b.platform &&
    a.user === b.user &&
    (!platforms.rulesOf(a.platform).workspaceScopedIds || a.workspace === b.workspace)
  );
}
