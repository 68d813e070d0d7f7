import type { ReplyTarget } from './reply-target.ts';
import type { Requester } from './person.ts';

/**
 * What only a platform knows about its people and places, as plain data and pure functions. Each
 * adapter declares its own (`src/adapters/<platform>/rules.ts`); the composition root hands the
 * platforms' rules to the parts of the core that need them (the policy gate, the turn endings, the
 * system prompt), so nothing outside `src/adapters/` branches on a platform's name.
 */
export interface PlatformRules {
  /** The platform's name as it appears in ids and job payloads (`ReplyTarget.platform`). */
  readonly name: string;
  /** How the platform is named to the model and to people ("a terminal" for the console). */
  readonly displayName: string;
  readonly ids: PlatformIdShapes;
  /**
   * Whether a user id is unique only within the workspace that issued it (Slack's `U…` ids outside
   * Enterprise Grid). Ids of platforms where this is false name one account everywhere.
   */
  readonly workspaceScopedIds: boolean;
  /** Whether a person whose id another workspace issued than the conversation's counts as a guest. */
  readonly foreignIdsAreGuests: boolean;
  /** The workspace a stored person without one is compared as (rows from before people carried one). */
  readonly unknownWorkspace: string;
  /**
   * Whether the platform's one person is the operator at the process's terminal: spoken to as "you",
   * and never turned away by the policy's `requesters` (they own the machine the bot runs on).
   */
  readonly operatorTerminal: boolean;
  /** Whether a reply target is a direct message with the bot. */
  isDirect(reply: ReplyTarget): boolean;
  readonly capabilities: PlatformCapabilities;
}

/** What ids look like on a platform, for checking the ones people write in a policy or APPROVERS. */
interface PlatformIdShapes {
  user: RegExp;
  workspace: RegExp;
  channel: RegExp;
  /** The platform's groups (roles, user groups); absent when it has none. */
  group?: RegExp;
  /** The workspace that vouches for a person speaking in a direct message, where it is not an id (`@me`). */
  directWorkspace?: string;
  /** How a group is written in a policy (`<prefix>:ID`). */
  groupPrefix?: string;
  /** One valid id of each kind, shown in errors. */
  examples: { user: string; workspace: string; channel: string; group?: string };
  /** Whether ids are upper-case only (an error then says so when a lower-case one would match). */
  upperCase: boolean;
}

/** What the platform's UI can do; the core chooses what to show from these, never from the name. */
interface PlatformCapabilities {
  /** 👍/👎 buttons under a final answer. */
  feedback: boolean;
  /** A message while the conversation is busy steers the running turn by default (else it queues). */
  steersByDefault: boolean;
  /** The platform streams a reply natively rather than by editing a message in place. */
  nativeStream: boolean;
  /** Forms (the Deny-with-reason modal, full arguments). */
  modals: boolean;
  /** Messages only one person in a shared place sees. */
  ephemeral: boolean;
}

/**
 * The rules of a platform no adapter described (rows of a platform this process does not run, or a
 * test's outbound-only platform): no DMs, no guests, no optional UI, and ids taken as global, as
 * every platform but Slack's were before platforms described themselves. Global ids are the one
 * permissive default: a short id in APPROVERS matches that id from any workspace. A platform whose
 * ids are scoped to a workspace must say so in its adapter's rules.
 */
function unknownPlatformRules(name: string): PlatformRules {
  const any = /^\S{1,200}$/;
  return {
    name,
    displayName: name,
    ids: {
      user: any,
      workspace: any,
      channel: any,
      examples: { user: 'user-id', workspace: 'workspace-id', channel: 'channel-id' },
      upperCase: false,
    },
    workspaceScopedIds: false,
    foreignIdsAreGuests: false,
    unknownWorkspace: 'unknown',
    operatorTerminal: false,
    isDirect: () => false,
    capabilities: { feedback: false, steersByDefault: false, nativeStream: false, modals: false, ephemeral: false },
  };
}

/** How a platform's name is written: the first word of a person or group in a policy. */
const PLATFORM_NAME = /^[a-z][a-z0-9-]{0,31}$/;

/** The platforms this process knows, by name; a name no adapter described gets `unknownPlatformRules`. */
export class PlatformDirectory {
  readonly #rules = new Map<string, PlatformRules>();

  constructor(rules: Iterable<PlatformRules> = []) {
    for (const r of rules) this.add(r);
  }

  /**
   * Adds a platform's rules. Refused, with what to change: a name that cannot be written in a
   * policy (`name:id`), a second, different description of a platform already known, and a name
   * or group prefix that another platform's reads the same as — the policy tells people and groups
   * apart by that first word, so a collision would change what existing policy lines mean.
   */
  add(rules: PlatformRules): this {
    const known = this.#rules.get(rules.name);
    if (known === rules) return this;
    if (!PLATFORM_NAME.test(rules.name)) {
      throw new Error(
        `"${rules.name}" cannot name a platform: use lower-case letters, digits and -, starting with a letter`,
      );
    }
    if (known) throw new Error(`the platform "${rules.name}" is described twice, differently`);
    const words = new Set(
      [...this.#rules.values()].flatMap((r) => [r.name, ...(r.ids.groupPrefix ? [r.ids.groupPrefix] : [])]),
    );
    for (const word of [rules.name, ...(rules.ids.groupPrefix ? [rules.ids.groupPrefix] : [])]) {
      if (words.has(word)) {
        throw new Error(
          `"${word}" (platform ${rules.name}) is already a platform name or group prefix: policies could not tell them apart`,
        );
      }
    }
    if (rules.ids.groupPrefix === rules.name) {
      throw new Error(`the platform "${rules.name}" cannot use its own name as its group prefix`);
    }
    this.#rules.set(rules.name, rules);
    return this;
  }

  rulesOf(platform: string): PlatformRules {
    return this.#rules.get(platform) ?? unknownPlatformRules(platform);
  }

  has(platform: string): boolean {
    return this.#rules.has(platform);
  }

  /**
   * The same account, wherever each acted (a grant listed or revoked from a DM): the same id, and,
   * where the platform's ids are scoped to a workspace, the same issuing workspace. An id another
   * workspace issued is someone else.
   */
  sameAccount(a: Requester, b: Requester): boolean {
    if (a.platform !== b.platform || a.userId !== b.userId) return false;
    return !this.rulesOf(a.platform).workspaceScopedIds || (a.workspace ?? '') === (b.workspace ?? '');
  }

  /** Every described platform, in the order they were added. */
  all(): PlatformRules[] {
    return [...this.#rules.values()];
  }
}
