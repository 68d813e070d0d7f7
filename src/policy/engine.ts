import { type Glob } from './glob.ts';
import { commandOf, holdsArgValue, isRecord, isShellString, pathsOf } from './call-args.ts';
import { formatPattern, personMatches, samePerson, type Person, type PersonPattern } from './person.ts';
import type { PolicyPlatforms } from './platforms.ts';
import { budgetApplies, publicBudget, type Budget, type CompiledBudget } from './budgets.ts';
import type { Outcome, Risk, ToolKind } from './schema.ts';

/** What kind of tool is called: the caller says, so the engine never imports tools. */
export interface ToolDescriptor {
  /** The model-facing name: `write_file`, `run_command`, `github__create_issue`. */
  name: string;
  kind: ToolKind;
  mcp?: {
    server: string;
    /** A server the operator runs (stdio); a remote URL server is not trusted. */
    trusted: boolean;
    readOnlyHint?: boolean;
    destructiveHint?: boolean;
    /** The MCP config's per-tool `approval` override, if any. */
    override?: 'always' | 'never';
    /** A per-person server: the call runs with the requester's own connection, never a shared credential. */
    personal?: boolean;
  };
}

/** Where a call is asked (or a message is sent). Ids are the platform's, unprefixed. */
export interface Where {
  platform: string;
  /** Slack team of the conversation, Discord guild; absent in Discord DMs. */
  workspace?: string;
  channel?: string;
  /** The channel a thread belongs to (Discord threads are channels of their own): rules naming it match. */
  parentChannel?: string;
  /** `channel` is a thread only its members see: grants made in it stay in it (approval/grants.ts). */
  privateThread?: boolean;
  dm: boolean;
}

export interface DecideInput {
  tool: ToolDescriptor;
  /** The arguments the tool will run with, path arguments replaced by their real workspace paths. */
  args: unknown;
  where: Where;
  requester: Person;
  /** What the caller found on disk and in the database; the engine itself does no I/O. */
  facts?: CallFacts;
}

/** Facts about a call's surroundings that only the caller can look up. */
export interface CallFacts {
  /** A path argument lies in git metadata: a `.git` folder, or a folder holding HEAD, objects/ and refs/. */
  gitMetadata?: boolean;
  /**
   * Workspace files that differ from what a second person vouched for (the last countersigned run's
   * state, the clean checkout, approved writes): a program run now could read them (docs/policy.md, taint).
   */
  changedFiles?: string[];
  /** A digest of exactly that state (paths and content): a card that names the files vouches for it. */
  changeDigest?: string;
  /** What secret the content a call would disclose seems to hold (a private key, a token), by its content. */
  secretContent?: string;
}

/** Which rule decided: its `name` (or `rules[3]`, or `default:write`) and `file:line` (or `built-in`). */
export interface RuleRef {
  name: string;
  source: string;
}

export interface Decision {
  outcome: Outcome;
  rule: RuleRef;
  /** Why a call is denied, for the model and the person; set for `deny`, optional otherwise. */
  message?: string;
  /** Who may decide (besides the requester, for `ask`); empty for `allow` and `deny`. */
  approvers: PersonPattern[];
  risk: Risk;
  /** Workspaces whose short ids count (see person.ts), frozen so `mayDecide` needs no policy. */
  home: string[];
  /** Whether an approval of this call may become a standing grant ("Always allow here"). */
  grantable: boolean;
  /**
   * Set when the call runs a program in a workspace holding one-person content: the digest of the
   * state its countersignature vouches for; `message` names the files.
   */
  vouchesFor?: string;
  /** How wide such a grant may be, per argument (the rule's `grant:`); absent: exactly as called. */
  grantPatterns?: Record<string, string[]>;
}

export type ConversationModeName = 'queue' | 'steer' | 'interrupt' | 'collect';

export type Verdict = { ok: true } | { ok: false; reason: string };
export type Admission = { ok: true } | { ok: false; refusal: string };

export interface CompiledWhere {
  platforms?: string[];
  /** `platform:id` */
  workspaces?: string[];
  /** `platform:id` or a bare id */
  channels?: string[];
  dm?: boolean;
}

export interface CompiledWho extends CompiledWhere {
  people?: PersonPattern[];
  guest?: boolean;
}

export interface CompiledRule {
  ref: RuleRef;
  tools: Glob[];
  kinds?: ToolKind[];
  mcp?: { trusted?: boolean; readOnly?: boolean; destructive?: boolean; personal?: boolean };
  /** The call runs only as the requester's own account (`connection: required`). */
  connection?: 'required';
  paths?: Glob[];
  /** How `paths` apply; default: `any` for rules that tighten, `all` for rules that loosen. */
  pathMatch?: 'any' | 'all';
  command?: string[];
  args?: Record<string, unknown[]>;
  from?: PersonPattern[];
  where?: CompiledWhere;
  /** Built-in conditions the file format has no word for (the MCP config's override). */
  test?: (input: DecideInput) => boolean;
  outcome: Outcome;
  /** Undefined: the policy's default approvers. */
  approvers?: PersonPattern[];
  message?: string;
  /** A built-in rule's reason, made from the call (the changed files a countersignature vouches for). */
  explain?: (input: DecideInput) => string;
  risk?: Risk;
  grantable: boolean;
  /** Per argument, the patterns a grant may widen it to (see grant-patterns.ts). */
  grant?: Record<string, string[]>;
}

export interface PolicyParts {
  /** `built-in` or the file the policy came from. */
  source: string;
  /** What the policy knows of the platforms it names (whose ids are workspace-scoped, who is a guest). */
  platforms: PolicyPlatforms;
  /** Home workspace ids (see person.ts). */
  home: string[];
  defaultApprovers: PersonPattern[];
  requesters?: { allow?: CompiledWho[]; deny?: CompiledWho[]; refusal?: string };
  rules: CompiledRule[];
  /** Per place, the conversation mode (first match); none: the caller's default. */
  conversations?: Array<{ where?: CompiledWhere; mode: ConversationModeName }>;
  /** Built-in rules tried after the file's: they always decide. */
  fallback: CompiledRule[];
  /** Built-in floors no file rule can go below (writes that can later run or change the agent). */
  floors: CompiledRule[];
  /**
   * A program run in a changed workspace (docs/policy.md, taint): applied after every other rule, so
   * no rule — not even an equally strict one of the file, nor a grant — runs it without a
   * countersignature whose card names the changed files. Absent where nobody could countersign.
   */
  taint?: CompiledRule;
  /** Spend limits on model calls (`budgets:`). */
  budgets?: CompiledBudget[];
}

/** The platforms whose groups (`kind: 'group'` patterns) a compiled policy names, wherever they stand in it. */
function groupPlatformsIn(parts: PolicyParts): Set<string> {
  const found = new Set<string>();
  const seen = new Set<object>();
  const visit = (value: unknown): void => {
    if (typeof value !== 'object' || value === null || value instanceof RegExp || seen.has(value)) return;
    seen.add(value);
    const record = value as Record<string, unknown>;
    if (record.kind === 'group' && typeof record.platform === 'string') found.add(record.platform);
    for (const inner of Array.isArray(value) ? value : Object.values(record)) visit(inner);
  };
  visit(parts);
  return found;
}

const DEFAULT_REFUSAL =
  "Sorry — I can't take requests from you here. If you need me, ask whoever runs this bot to add you.";

const STRICTNESS: Record<Outcome, number> = { allow: 0, ask: 1, countersign: 2, deny: 3 };
const RISK_ORDER: Record<Risk, number> = { low: 0, medium: 1, high: 2 };

/**
 * A rule that loosens (allow, ask) must cover the whole call: every path argument matches, and the
 * program is exactly the one named (`./kubectl` is not `kubectl`: it could be a script the agent
 * wrote). A rule that tightens (countersign, deny) applies as soon as any part matches, and the
 * program is compared by its base name (`/usr/local/bin/kubectl` is `kubectl`).
 */
const tightens = (rule: CompiledRule) => STRICTNESS[rule.outcome] >= STRICTNESS.countersign;

function matchesPaths(rule: CompiledRule, args: unknown): boolean {
  if (!rule.paths) return true;
  const paths = pathsOf(args);
  if (paths.length === 0) return false;
  const hit = (p: string) => rule.paths!.some((g) => g.test(p));
  const any = rule.pathMatch ? rule.pathMatch === 'any' : tightens(rule);
  return any ? paths.some(hit) : paths.every(hit);
}

function startsWithCommand(rule: CompiledRule, argv: readonly string[], from = 0): boolean {
  const words = rule.command!;
  if (argv.length - from < words.length) return false;
  return words.every((word, i) => {
    const given = argv[from + i]!;
    if (given === word) return true;
    return i === 0 && tightens(rule) && given.split('/').pop() === word;
  });
}

/**
 * A loosening rule matches a command string only when no shell could read more into it (see
 * `commandOf`). A tightening rule also looks inside one that a shell could: any program in it
 * (after `;`, `|`, `&&`, `$(`…) that the rule names makes the rule apply.
 */
function matchesCommand(rule: CompiledRule, args: unknown): boolean {
  if (!rule.command) return true;
  const argv = commandOf(args);
  if (argv) return startsWithCommand(rule, argv);
  if (!tightens(rule) || !isShellString(args)) return false;
  const words = String((args as { command: string }).command)
    .split(/[\s;&|()<>`$'"{}]+/)
    .filter(Boolean);
  return words.some((_, i) => startsWithCommand(rule, words, i));
}

/** How `args:` values are read: exactly, or as a lenient tool might read them (see `holdsArgValue`). */
type ArgsReading = 'exact' | 'lenient';

function matchesArgs(rule: CompiledRule, args: unknown, reading: ArgsReading): boolean {
  if (!rule.args) return true;
  if (!isRecord(args)) return false;
  const loose = reading === 'lenient';
  return Object.entries(rule.args).every(([key, values]) =>
    values.some((v) => Object.hasOwn(args, key) && holdsArgValue(v, args[key], loose)),
  );
}

/**
 * `connection: required` on a tool that runs on a shared credential (a built-in tool, or an MCP server
 * without `"auth": "oauth"`): refused, since it could not run as the requester's own account.
 */
function sharedCredentialRefused(
  rule: CompiledRule,
  tool: ToolDescriptor,
  home: Decision['home'],
  risk: Risk,
): Decision {
  const server = tool.mcp ? `its server ${tool.mcp.server} uses one shared credential` : 'it has no per-person account';
  return {
    outcome: 'deny',
    rule: rule.ref,
    message: `${tool.name} must run as the requester's own account (rule ${rule.ref.name}: connection: required), but ${server}.`,
    approvers: [],
    risk,
    home,
    grantable: false,
  };
}

function matchesMcp(rule: CompiledRule, tool: ToolDescriptor): boolean {
  if (!rule.mcp) return true;
  const mcp = tool.mcp;
  if (!mcp) return false;
  const readOnly = mcp.readOnlyHint === true;
  // MCP spec: destructiveHint defaults to true and means something only when readOnlyHint is false.
  const destructive = !readOnly && mcp.destructiveHint !== false;
  const want = rule.mcp;
  return (
    (want.trusted === undefined || want.trusted === mcp.trusted) &&
    (want.readOnly === undefined || want.readOnly === readOnly) &&
    (want.destructive === undefined || want.destructive === destructive) &&
    (want.personal === undefined || want.personal === (mcp.personal === true))
  );
}

function matchesWhere(want: CompiledWhere | undefined, where: Where): boolean {
  if (!want) return true;
  if (want.platforms && !want.platforms.includes(where.platform)) return false;
  if (want.workspaces && !(where.workspace && want.workspaces.includes(`${where.platform}:${where.workspace}`)))
    return false;
  if (want.channels) {
    const named = (channel: string | undefined) =>
      channel !== undefined && want.channels!.some((c) => c === channel || c === `${where.platform}:${channel}`);
    if (!named(where.channel) && !named(where.parentChannel)) return false;
  }
  if (want.dm !== undefined && want.dm !== where.dm) return false;
  return true;
}

function ruleMatches(
  platforms: PolicyPlatforms,
  rule: CompiledRule,
  input: DecideInput,
  home: readonly string[],
  reading: ArgsReading = 'exact',
): boolean {
  return (
    rule.tools.some((g) => g.test(input.tool.name)) &&
    (!rule.kinds || rule.kinds.includes(input.tool.kind)) &&
    matchesMcp(rule, input.tool) &&
    matchesWhere(rule.where, input.where) &&
    (!rule.from || rule.from.some((p) => personMatches(platforms, p, input.requester, home))) &&
    matchesPaths(rule, input.args) &&
    matchesCommand(rule, input.args) &&
    matchesArgs(rule, input.args, reading) &&
    (!rule.test || rule.test(input))
  );
}

/**
 * A person whose id another workspace issued than the conversation's counts as a guest on platforms
 * that say so (a Slack Connect user of another org), whatever the adapter said.
 */
function isGuest(platforms: PolicyPlatforms, person: Person, where: Where): boolean {
  if (person.guest) return true;
  return (
    platforms.rulesOf(person.platform).foreignIdsAreGuests &&
    where.workspace !== undefined &&
    person.workspace !== where.workspace
  );
}

function whoMatches(
  platforms: PolicyPlatforms,
  who: CompiledWho,
  person: Person,
  where: Where,
  home: readonly string[],
): boolean {
  if (who.people && !who.people.some((p) => personMatches(platforms, p, person, home))) return false;
  if (who.workspaces && !who.workspaces.includes(`${person.platform}:${person.workspace}`)) return false;
  if (who.guest !== undefined && who.guest !== isGuest(platforms, person, where)) return false;
  return matchesWhere(who, where);
}

/**
 * A validated policy, ready to answer. Every answer is pure and synchronous: no I/O, no clock.
 */
export class Policy {
  readonly #parts: PolicyParts;

  constructor(parts: PolicyParts) {
    this.#parts = parts;
  }

  /** `built-in`, or the file this policy was read from. */
  get source(): string {
    return this.#parts.source;
  }

  /** Whether a requester may use the bot here at all; outside the policy they get `refusal` and no turn. */
  mayUse(requester: Person, where: Where): Admission {
    const gate = this.#parts.requesters;
    const { platforms } = this.#parts;
    // The operator's own terminal (the console) is never turned away.
    if (!gate || platforms.rulesOf(requester.platform).operatorTerminal === true) return { ok: true };
    const home = this.#home(where);
    const refused = { ok: false as const, refusal: gate.refusal ?? DEFAULT_REFUSAL };
    if (gate.deny?.some((who) => whoMatches(platforms, who, requester, where, home))) return refused;
    if (gate.allow && !gate.allow.some((who) => whoMatches(platforms, who, requester, where, home))) return refused;
    return { ok: true };
  }

  /**
   * The outcome for one tool call: the first matching rule of the file, then the built-in defaults.
   * Where a rule's `args:` could hold the call's values read leniently (`"0"` for `0`, `Secrets` for
   * `secrets`, see `holdsArgValue`) the call is decided both ways and the stricter outcome stands:
   * a tool that reads them leniently is held to the rule, and a lenient reading never loosens.
   */
  decide(input: DecideInput): Decision {
    const exact = this.#decide(input, 'exact');
    if (!this.#parts.rules.some((r) => r.args)) return exact;
    const lenient = this.#decide(input, 'lenient');
    return STRICTNESS[lenient.outcome] > STRICTNESS[exact.outcome] ? lenient : exact;
  }

  #decide(input: DecideInput, reading: ArgsReading): Decision {
    const home = this.#home(input.where);
    const { platforms } = this.#parts;
    const first = (rules: CompiledRule[]) => rules.find((r) => ruleMatches(platforms, r, input, home, reading));
    const builtin = first(this.#parts.fallback);
    if (!builtin) throw new Error('the built-in rules end in a catch-all; this cannot happen');
    let rule = first(this.#parts.rules) ?? builtin;
    const floor = first(this.#parts.floors);
    // The floor decides when it is stricter, and names itself over an equally strict built-in rule.
    if (floor) {
      const diff = STRICTNESS[floor.outcome] - STRICTNESS[rule.outcome];
      if (diff > 0 || (diff === 0 && rule.ref.source === floor.ref.source)) rule = floor;
    }
    const tainted =
      this.#parts.taint && ruleMatches(platforms, this.#parts.taint, input, home) ? this.#parts.taint : undefined;
    if (tainted && STRICTNESS[tainted.outcome] > STRICTNESS[rule.outcome]) rule = tainted;
    const classified = floor && RISK_ORDER[floor.risk!] > RISK_ORDER[builtin.risk!] ? floor.risk! : builtin.risk!;
    const needsDecision = rule.outcome === 'ask' || rule.outcome === 'countersign';
    // A countersignature in a changed workspace vouches for the changes: its card names them, and it
    // is never turned into a grant that would run the next program without anyone seeing them.
    const vouches = tainted !== undefined && rule.outcome === 'countersign';
    const note = vouches ? tainted.explain!(input) : undefined;
    const own = rule === tainted ? undefined : (rule.explain?.(input) ?? rule.message);
    const message = [own, note].filter(Boolean).join(' · ') || undefined;
    const grantable = rule.grantable && !vouches;
    if (rule.connection === 'required' && input.tool.mcp?.personal !== true)
      return sharedCredentialRefused(rule, input.tool, home, classified);
    return {
      outcome: rule.outcome,
      rule: rule.ref,
      ...(message !== undefined ? { message } : {}),
      approvers: needsDecision ? (rule.approvers ?? this.#parts.defaultApprovers) : [],
      risk: vouches ? 'high' : (rule.risk ?? classified),
      home,
      grantable,
      ...(grantable && rule.grant ? { grantPatterns: rule.grant } : {}),
      ...(vouches ? { vouchesFor: input.facts?.changeDigest ?? '' } : {}),
    };
  }

  /** The conversation mode the file sets for this place, or undefined (CONVERSATION_MODE decides). */
  conversationMode(where: Where): ConversationModeName | undefined {
    return this.#parts.conversations?.find((c) => matchesWhere(c.where, where))?.mode;
  }

  /** The budgets a model call by `requester` in `where` counts against, in the file's order. */
  budgetsFor(requester: Person, where: Where): Budget[] {
    const home = this.#home(where);
    return (this.#parts.budgets ?? [])
      .filter((b) => budgetApplies(this.#parts.platforms, b, requester, where, home))
      .map(publicBudget);
  }

  /** The groups (Discord roles, Slack user groups) budgets name on `platform`: what to look up for someone whose groups are unknown. */
  budgetGroups(platform: string): string[] {
    const named = (this.#parts.budgets ?? []).flatMap((b) => b.people ?? []);
    return [...new Set(named.flatMap((p) => (p.kind === 'group' && p.platform === platform ? [p.group] : [])))];
  }

  /**
   * Whether the policy names a group of `platform` anywhere (requesters, rules, approvers, budgets):
   * where it names none, nobody's groups there can change a decision, so they are never looked up
   * (a free Slack workspace has no user groups to list).
   */
  namesGroups(platform: string): boolean {
    this.#groupPlatforms ??= groupPlatformsIn(this.#parts);
    return this.#groupPlatforms.has(platform);
  }
  #groupPlatforms: Set<string> | undefined;

  /** Every budget of the policy (operators' views). */
  get budgets(): Budget[] {
    return (this.#parts.budgets ?? []).map(publicBudget);
  }

  /** Whether anyone can countersign: the policy names approvers (the file's `approvers:`, else APPROVERS). */
  get hasApprovers(): boolean {
    return this.#parts.defaultApprovers.length > 0;
  }

  /** Whether `person` is one of the policy's approvers (the file's `approvers:`, else APPROVERS) there. */
  isApprover(person: Person, where: Where): boolean {
    const home = this.#home(where);
    return this.#parts.defaultApprovers.some((p) => personMatches(this.#parts.platforms, p, person, home));
  }

  /** See the free function `mayDecide`. */
  mayDecide(decision: Decision, clicker: Person, requester: Person, action: 'approve' | 'deny' = 'approve'): Verdict {
    return mayDecide(this.#parts.platforms, decision, clicker, requester, action);
  }

  #home(where: Where): string[] {
    if (this.#parts.home.length > 0) return this.#parts.home;
    return where.workspace !== undefined ? [where.workspace] : [];
  }
}

const describeRule = (rule: RuleRef) => `${rule.name}, ${rule.source}`;

/**
 * Whether `clicker` may approve (or deny) a call decided as `decision`, asked by `requester`.
 * `ask`: the requester or an approver. `countersign`: an approver who is not the requester — the
 * requester may still deny (withdraw) their own call. `allow` and `deny` take no decision.
 * `platforms` says whose ids are workspace-scoped (who is the same person).
 */
export function mayDecide(
  platforms: PolicyPlatforms,
  decision: Decision,
  clicker: Person,
  requester: Person,
  action: 'approve' | 'deny' = 'approve',
): Verdict {
  const isRequester = samePerson(platforms, clicker, requester);
  // The two-person rule fails closed: one user id is one person to it, whatever workspace a payload
  // named (Slack's Enterprise Grid can send different team ids for the same person).
  const mightBeRequester = isRequester || (clicker.platform === requester.platform && clicker.user === requester.user);
  const isApprover = decision.approvers.some((p) => personMatches(platforms, p, clicker, decision.home));
  switch (decision.outcome) {
    case 'allow':
      return { ok: false, reason: 'This call runs without a decision.' };
    case 'deny':
      return {
        ok: false,
        reason: `The policy denies this call (${describeRule(decision.rule)}); nobody can approve it.`,
      };
    case 'ask':
      return isRequester || isApprover
        ? { ok: true }
        : { ok: false, reason: 'Only the requester or an approver can decide on this call.' };
    case 'countersign':
      if (isRequester && action === 'deny') return { ok: true };
      if (mightBeRequester)
        return {
          ok: false,
          reason: `This call needs a second signature (two-person rule): someone other than you has to approve it (${describeRule(decision.rule)}).`,
        };
      return isApprover
        ? { ok: true }
        : {
            ok: false,
            reason: `Only an approver can countersign this call (${describeRule(decision.rule)}): ${decision.approvers.map(formatPattern).join(', ') || 'nobody is configured'}.`,
          };
  }
}
