import { readFileSync } from 'node:fs';
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node } from 'yaml';
import type { ZodError } from 'zod';
import { approverPatterns, builtinRules, type PolicyOptions } from './defaults.ts';
import { Policy, type CompiledRule, type CompiledWho, type CompiledWhere, type PolicyParts } from './engine.ts';
import { compileNameGlob, compilePathGlob } from './glob.ts';
import { parsePerson, type PersonPattern } from './person.ts';
import type { PolicyPlatforms } from './platforms.ts';
import type { CompiledBudget } from './budgets.ts';
import {
  APPROVERS_GROUP,
  GROUP_NAME,
  policySchema,
  type BudgetSchema,
  type PolicySchema,
  type RuleSchema,
  type WhereMatch,
  type WhoMatch,
} from './schema.ts';

/** One thing wrong with a policy file, where it is. `line` and `column` are 1-based. */
export interface PolicyProblem {
  file: string;
  line: number;
  column: number;
  message: string;
}

/** `file:line:column: message`, the shape editors and CI annotate from. */
export function formatPolicyProblem(problem: PolicyProblem): string {
  return `${problem.file}:${problem.line}:${problem.column}: ${problem.message}`;
}

export type PolicyParse = { ok: true; policy: Policy } | { ok: false; problems: PolicyProblem[] };

type Path = ReadonlyArray<PropertyKey>;

/** Positions of the parsed document's nodes, so a problem found on the data points into the file. */
class Locator {
  readonly #lines = new LineCounter();
  readonly #file: string;
  contents: Node | null = null;

  constructor(file: string) {
    this.#file = file;
  }

  get lineCounter(): LineCounter {
    return this.#lines;
  }

  at(offset: number, message: string): PolicyProblem {
    const { line, col } = this.#lines.linePos(offset);
    return { file: this.#file, line, column: col, message };
  }

  /** The deepest node on `path` (or the key of `key` in the map there). */
  offset(path: Path, key?: string): number {
    let node: unknown = this.contents;
    let offset = (this.contents?.range?.[0] as number | undefined) ?? 0;
    const steps = key === undefined ? path : [...path, key];
    for (let i = 0; i < steps.length; i++) {
      const step = steps[i];
      if (isMap(node)) {
        const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(step));
        if (!pair) break;
        const isLast = i === steps.length - 1;
        const target = isLast && key !== undefined ? pair.key : (pair.value ?? pair.key);
        const range = (target as Node | null)?.range;
        if (range) offset = range[0];
        node = isLast && key !== undefined ? undefined : pair.value;
      } else if (isSeq(node) && typeof step === 'number') {
        const item = node.items[step] as Node | undefined;
        if (!item?.range) break;
        offset = item.range[0];
        node = item;
      } else break;
    }
    return offset;
  }

  problem(path: Path, message: string, key?: string): PolicyProblem {
    return this.at(this.offset(path, key), `${describePath(key === undefined ? path : [...path, key])}${message}`);
  }
}

function describePath(path: Path): string {
  let out = '';
  for (const step of path) out += typeof step === 'number' ? `[${step}]` : `${out ? '.' : ''}${String(step)}`;
  return out ? `${out}: ` : '';
}

function valueAt(raw: unknown, path: Path): unknown {
  let value = raw;
  for (const step of path) {
    // A scalar where a list was expected stands for its one item (`tool: x` reads as `tool: [x]`).
    if (typeof value !== 'object' || value === null) return value;
    value = (value as Record<PropertyKey, unknown>)[step];
  }
  return value;
}

function zodProblems(error: ZodError, where: Locator, raw: unknown): PolicyProblem[] {
  const problems: PolicyProblem[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) problems.push(where.problem(issue.path, 'unknown key (check its spelling)', key));
      continue;
    }
    if (issue.path.length > 0 && valueAt(raw, issue.path) === undefined) {
      const key = String(issue.path[issue.path.length - 1] ?? '');
      const parent = issue.path.slice(0, -1);
      const hint =
        key === 'outcome' ? ' (allow, ask, countersign or deny)' : key === 'tool' ? ' (a tool name or glob)' : '';
      problems.push(where.at(where.offset(parent), `${describePath(parent)}"${key}" is missing${hint}`));
      continue;
    }
    const message =
      issue.code === 'invalid_type' && issue.message.startsWith('Invalid input')
        ? `expected ${issue.expected}`
        : issue.message;
    problems.push(where.problem(issue.path, message));
  }
  return problems;
}

/** Everything a file's references resolve to, or the problems that stop them resolving. */
class Resolver {
  readonly problems: PolicyProblem[] = [];
  readonly #groups: Record<string, string[]>;
  readonly #approversEnv: PersonPattern[];
  readonly #where: Locator;
  readonly #platforms: PolicyPlatforms;
  readonly #expanded = new Map<string, PersonPattern[]>();

  constructor(
    groups: Record<string, string[]>,
    approversEnv: PersonPattern[],
    where: Locator,
    platforms: PolicyPlatforms,
  ) {
    this.#platforms = platforms;
    this.#groups = groups;
    this.#approversEnv = approversEnv;
    this.#where = where;
    for (const name of Object.keys(groups)) {
      if (!GROUP_NAME.test(name) || name === APPROVERS_GROUP) {
        this.problems.push(
          where.problem(
            ['groups'],
            name === APPROVERS_GROUP
              ? `"${APPROVERS_GROUP}" is reserved for the APPROVERS variable; pick another name`
              : 'a group name is lower-case: a letter, then letters, digits, "_" and "-"',
            name,
          ),
        );
      }
    }
    for (const name of Object.keys(groups)) this.#group(name, ['groups', name], []);
  }

  #group(name: string, path: Path, stack: string[]): PersonPattern[] {
    const known = this.#expanded.get(name);
    if (known) return known;
    if (stack.includes(name)) {
      this.problems.push(
        this.#where.problem(path, `group "${name}" includes itself (${[...stack, name].join(' → ')})`),
      );
      return [];
    }
    const members = (this.#groups[name] ?? []).flatMap((ref, i) =>
      this.#ref(ref, ['groups', name, i], [...stack, name]),
    );
    this.#expanded.set(name, members);
    return members;
  }

  #ref(ref: string, path: Path, stack: string[]): PersonPattern[] {
    if (ref === APPROVERS_GROUP) return this.#approversEnv;
    if (GROUP_NAME.test(ref)) {
      if (!Object.hasOwn(this.#groups, ref)) {
        const known = Object.keys(this.#groups);
        this.problems.push(
          this.#where.problem(
            path,
            `unknown group "${ref}" (${known.length ? `groups: ${known.join(', ')}` : 'no groups are defined'}; APPROVERS means the variable)`,
          ),
        );
        return [];
      }
      return this.#group(ref, path, stack);
    }
    const parsed = parsePerson(ref, this.#platforms);
    return parsed.ok ? [parsed.pattern] : [];
  }

  /** People named by a list of references (group names expanded). */
  people(refs: string[] | undefined, path: Path): PersonPattern[] | undefined {
    return refs?.flatMap((ref, i) => this.#ref(ref, [...path, i], []));
  }
}

const where = (match: WhereMatch | undefined): CompiledWhere | undefined =>
  match && {
    ...(match.platforms ? { platforms: match.platforms } : {}),
    ...(match.workspaces ? { workspaces: match.workspaces } : {}),
    ...(match.channels ? { channels: match.channels } : {}),
    ...(match.dm !== undefined ? { dm: match.dm } : {}),
  };

function who(match: WhoMatch, resolve: Resolver, path: Path): CompiledWho {
  const people = resolve.people(match.people, [...path, 'people']);
  return {
    ...where(match),
    ...(people ? { people } : {}),
    ...(match.workspaces ? { workspaces: match.workspaces } : {}),
    ...(match.guest !== undefined ? { guest: match.guest } : {}),
  };
}

/**
 * Parses and validates a policy file's text (YAML, or JSON, which is YAML too), reporting every
 * problem with its line and column, and compiles it. Never throws on bad input.
 */
export function parsePolicy(text: string, file: string, options: PolicyOptions): PolicyParse {
  const read = readPolicySpec(text, file, options.platforms);
  if (!read.ok) return read;
  const { spec, locate } = read;

  const approversEnv = approverPatterns(options.approvers ?? [], options.platforms);
  const resolve = new Resolver(spec.groups ?? {}, approversEnv, locate, options.platforms);
  const problems = resolve.problems;
  const defaultApprovers = resolve.people(spec.approvers, ['approvers']) ?? approversEnv;
  const compiling: RuleCompiling = { file, locate, resolve, defaultApprovers, names: new Set<string>() };
  const rules = spec.rules.map((rule, i) => compileRule(rule, i, compiling));
  const requesters = compileRequesters(spec.requesters, resolve);
  const budgets = compileBudgets(spec.budgets ?? [], compiling);
  if (problems.length > 0) return { ok: false, problems: dedupe(problems) };

  return {
    ok: true,
    policy: new Policy({
      source: file,
      platforms: options.platforms,
      home: (spec.workspaces ?? []).map((w) => w.slice(w.indexOf(':') + 1)),
      defaultApprovers,
      ...(requesters ? { requesters } : {}),
      rules,
      ...(spec.conversations
        ? {
            conversations: spec.conversations.map((c) => ({
              ...(c.where ? { where: where(c.where)! } : {}),
              mode: c.mode,
            })),
          }
        : {}),
      ...(budgets.length > 0 ? { budgets } : {}),
      ...builtinRules(defaultApprovers.length > 0, options),
    }),
  };
}

type SpecRead = { ok: true; spec: PolicySchema; locate: Locator } | { ok: false; problems: PolicyProblem[] };

/** The file's YAML checked against the schema, with the positions of its nodes; or its problems. */
function readPolicySpec(text: string, file: string, platforms: PolicyPlatforms): SpecRead {
  const locate = new Locator(file);
  const doc = parseDocument(text, { lineCounter: locate.lineCounter, uniqueKeys: true, prettyErrors: false });
  locate.contents = doc.contents as Node | null;
  if (doc.errors.length > 0) {
    return {
      ok: false,
      problems: doc.errors.map((e) => {
        const pos = e.linePos?.[0] ?? { line: 1, col: 1 };
        return { file, line: pos.line, column: pos.col, message: e.message.split('\n')[0]! };
      }),
    };
  }
  const raw: unknown = doc.toJS({ maxAliasCount: 100 });
  if (raw === null || raw === undefined)
    return {
      ok: false,
      problems: [locate.at(0, 'the policy file is empty; write at least "rules: []" (see docs/policy.md)')],
    };
  const parsed = policySchema(platforms).safeParse(raw);
  if (!parsed.success) return { ok: false, problems: zodProblems(parsed.error, locate, raw) };
  return { ok: true, spec: parsed.data, locate };
}

/** What compiling each rule shares: where problems go (`resolve.problems`) and the names taken so far. */
interface RuleCompiling {
  file: string;
  locate: Locator;
  resolve: Resolver;
  defaultApprovers: PersonPattern[];
  names: Set<string>;
}

function compileRule(rule: RuleSchema, i: number, c: RuleCompiling): CompiledRule {
  const path = ['rules', i];
  const name = rule.name ?? `rules[${i}]`;
  checkRuleName(rule, path, c);
  const approvers = c.resolve.people(rule.approvers, [...path, 'approvers']);
  checkRuleOutcome(rule, path, approvers ?? c.defaultApprovers, c);
  const from = c.resolve.people(rule.from, [...path, 'from']);
  const line = c.locate.lineCounter.linePos(c.locate.offset(path)).line;
  return {
    ref: { name, source: `${c.file}:${line}` },
    tools: rule.tool.map(compileNameGlob),
    ...(rule.kind ? { kinds: rule.kind } : {}),
    ...(rule.mcp ? { mcp: rule.mcp } : {}),
    ...(rule.connection ? { connection: rule.connection } : {}),
    ...(rule.paths ? { paths: rule.paths.map(compilePathGlob) } : {}),
    ...(rule.command ? { command: rule.command } : {}),
    ...(rule.args
      ? { args: Object.fromEntries(Object.entries(rule.args).map(([k, v]) => [k, Array.isArray(v) ? v : [v]])) }
      : {}),
    ...(from ? { from } : {}),
    ...(rule.where ? { where: where(rule.where)! } : {}),
    outcome: rule.outcome,
    ...(approvers ? { approvers } : {}),
    ...(rule.message !== undefined
      ? { message: rule.message }
      : rule.outcome === 'deny'
        ? { message: `The policy does not allow this (rule ${name}).` }
        : {}),
    ...(rule.risk ? { risk: rule.risk } : {}),
    grantable: rule.grantable ?? rule.outcome === 'ask',
    ...(rule.grant ? { grant: rule.grant } : {}),
  };
}

/** A rule's own name must not look built-in or repeat another's. */
function checkRuleName(rule: RuleSchema, path: Path, { locate, resolve, names }: RuleCompiling): void {
  if (rule.name === undefined) return;
  if (rule.name.startsWith('default:'))
    resolve.problems.push(
      locate.problem([...path, 'name'], 'names starting with "default:" belong to the built-in rules'),
    );
  else if (names.has(rule.name))
    resolve.problems.push(locate.problem([...path, 'name'], `another rule is already named "${rule.name}"`));
  names.add(rule.name);
}

/** Approvers and grants only mean something on rules a person decides, and countersign needs someone. */
function checkRuleOutcome(
  rule: RuleSchema,
  path: Path,
  approvers: PersonPattern[],
  { locate, resolve }: RuleCompiling,
): void {
  const problems = resolve.problems;
  const decides = rule.outcome === 'ask' || rule.outcome === 'countersign';
  if (rule.approvers && !decides)
    problems.push(
      locate.problem([...path, 'approvers'], `approvers only apply to ask and countersign, not ${rule.outcome}`),
    );
  if (rule.grantable && !decides)
    problems.push(locate.problem([...path, 'grantable'], `only ask and countersign rules can be grantable`));
  if (rule.grant && !decides)
    problems.push(locate.problem([...path, 'grant'], `only ask and countersign rules can have grant patterns`));
  if (rule.grant && rule.grantable === false)
    problems.push(locate.problem([...path, 'grant'], `grant patterns need a grantable rule (grantable is false here)`));
  if (rule.outcome === 'countersign' && approvers.length === 0)
    problems.push(
      locate.problem(
        [...path, 'outcome'],
        'countersign needs someone to countersign: give the rule approvers, set approvers at the top, or set APPROVERS',
      ),
    );
}

/** Who may ask at all (`requesters`), with group names expanded. */
function compileRequesters(gate: PolicySchema['requesters'], resolve: Resolver): PolicyParts['requesters'] {
  return (
    gate && {
      ...(gate.allow ? { allow: gate.allow.map((m, i) => who(m, resolve, ['requesters', 'allow', i])) } : {}),
      ...(gate.deny ? { deny: gate.deny.map((m, i) => who(m, resolve, ['requesters', 'deny', i])) } : {}),
      ...(gate.refusal ? { refusal: gate.refusal } : {}),
    }
  );
}

/** The allowance a budget offers when the file sets none: a quarter of its limit, in whole cents or tokens. */
function quarterOf(budget: BudgetSchema): number {
  if (budget.usd !== undefined) return Math.max(0.01, Math.round(budget.usd * 25) / 100);
  return Math.max(1, Math.round(budget.tokens! / 4));
}

/** Budgets with their people resolved (group names expanded); a name is used once. */
function compileBudgets(budgets: BudgetSchema[], c: RuleCompiling): CompiledBudget[] {
  const names = new Set<string>();
  return budgets.map((budget, i) => {
    const path = ['budgets', i];
    if (names.has(budget.name))
      c.resolve.problems.push(c.locate.problem([...path, 'name'], `another budget is already named "${budget.name}"`));
    names.add(budget.name);
    const [kind, value] = Object.entries(budget.for).find(([, v]) => v !== undefined)! as [
      CompiledBudget['covers']['kind'],
      string | true,
    ];
    const ref = typeof value === 'string' ? value : '';
    const people = kind === 'person' || kind === 'group' ? c.resolve.people([ref], [...path, 'for', kind]) : undefined;
    const line = c.locate.lineCounter.linePos(c.locate.offset(path)).line;
    return {
      name: budget.name,
      source: `${c.file}:${line}`,
      covers: { kind, value: ref },
      unit: budget.usd !== undefined ? 'usd' : 'tokens',
      limit: budget.usd ?? budget.tokens!,
      per: budget.per,
      tz: budget.tz ?? 'UTC',
      warnAt: budget.warn_at ?? 0.8,
      allowance: budget.allowance_usd ?? budget.allowance_tokens ?? quarterOf(budget),
      ...(people ? { people } : {}),
    };
  });
}

function dedupe(problems: PolicyProblem[]): PolicyProblem[] {
  const seen = new Set<string>();
  return problems
    .filter((p) => {
      const key = `${p.line}:${p.column}:${p.message}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    })
    .sort((a, b) => a.line - b.line || a.column - b.column);
}

/** Reads and parses a policy file; an unreadable file is one problem at 1:1. */
export function loadPolicyFile(file: string, options: PolicyOptions): PolicyParse & { text?: string } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'the file does not exist' : `the file could not be read (${code ?? 'error'})`;
    return { ok: false, problems: [{ file, line: 1, column: 1, message: why }] };
  }
  return { ...parsePolicy(text, file, options), text };
}
