/**
 * What the policy needs to know of the platforms, as data handed in by the caller: the policy names
 * no platform itself (issue #32). The app passes its platform directory (`src/core/platform-rules.ts`),
 * which has this shape; the policy imports nothing of the app, so the shape is declared here.
 */

/** What ids look like on a platform, for checking the ones a policy or APPROVERS writes. */
interface PolicyIdShapes {
  readonly user: RegExp;
  readonly workspace: RegExp;
  readonly channel: RegExp;
  /** The platform's groups (roles, user groups); absent when it has none. */
  readonly group?: RegExp;
  /** The workspace that vouches for a person speaking in a direct message, where it is not an id (`@me`). */
  readonly directWorkspace?: string;
  /** How a group is written in a policy (`<prefix>:ID`). */
  readonly groupPrefix?: string;
  /** One valid id of each kind, shown in errors and help. */
  readonly examples: {
    readonly user: string;
    readonly workspace: string;
    readonly channel: string;
    readonly group?: string;
  };
  /** Whether ids are upper-case only (an error then says so when a lower-case one would match). */
  readonly upperCase: boolean;
}

export interface PolicyPlatformRules {
  readonly name: string;
  /** How the platform is named to people ("Slack"). */
  readonly displayName: string;
  readonly ids: PolicyIdShapes;
  /**
   * Whether a user id is unique only within the workspace that issued it: then short forms
   * (`platform:USER`, groups) match only ids the policy's home workspaces issued (see person.ts).
   */
  readonly workspaceScopedIds: boolean;
  /** Whether a person whose id another workspace issued than the conversation's counts as a guest. */
  readonly foreignIdsAreGuests: boolean;
  /**
   * Whether the one person there is the operator at the process's own terminal: `requesters` never
   * turn them away. Absent: false.
   */
  readonly operatorTerminal: boolean;
}

/** The platforms a policy may name. A name not described gets rules that fail closed. */
export interface PolicyPlatforms {
  has(name: string): boolean;
  rulesOf(name: string): PolicyPlatformRules;
  /** Every described platform, in a stable order: the first ones give the examples in errors. */
  all(): readonly PolicyPlatformRules[];
}

/** The platforms' groups by how a policy writes them (`<groupPrefix>:ID`). */
export function groupPrefixes(platforms: PolicyPlatforms): Map<string, PolicyPlatformRules> {
  const out = new Map<string, PolicyPlatformRules>();
  for (const rules of platforms.all()) {
    if (rules.ids.groupPrefix !== undefined && rules.ids.group) out.set(rules.ids.groupPrefix, rules);
  }
  return out;
}

/** `platform:<example>` of the first `count` platforms, for errors and help. */
export function examples(platforms: PolicyPlatforms, kind: 'user' | 'workspace' | 'channel', count: number): string[] {
  return platforms
    .all()
    .slice(0, count)
    .map((r) => `${r.name}:${r.ids.examples[kind]}`);
}
