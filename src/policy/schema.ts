import { z } from 'zod';
import { grantPatternProblem } from './grant-patterns.ts';
import { compileNameGlob, compilePathGlob, GlobError } from './glob.ts';
import { isTimeZone } from './budgets.ts';
import { parsePerson } from './person.ts';
import { examples, type PolicyPlatforms } from './platforms.ts';

/**
 * The policy file's format (YAML or JSON), declared once. Every object is strict: a misspelt key is
 * an error, never a silently ignored rule. Values are checked here (globs, ids); references between
 * parts (group names, rule names) are checked in `parse.ts`, which knows the whole file.
 */

const OUTCOMES = ['allow', 'ask', 'countersign', 'deny'] as const;
export const Outcome = z.enum(OUTCOMES, { error: `expected one of ${OUTCOMES.join(', ')}` });
export type Outcome = z.infer<typeof Outcome>;

export const TOOL_KINDS = ['read', 'write', 'delete', 'exec', 'mcp', 'question', 'merge', 'schedule', 'share'] as const;
export const ToolKind = z.enum(TOOL_KINDS, { error: `expected one of ${TOOL_KINDS.join(', ')}` });
export type ToolKind = z.infer<typeof ToolKind>;

const RISKS = ['low', 'medium', 'high'] as const;
export const Risk = z.enum(RISKS, { error: `expected one of ${RISKS.join(', ')}` });
export type Risk = z.infer<typeof Risk>;

/** A group defined in the file, or the reserved name for the APPROVERS variable. */
/** Group names are lower-case, so an id that lost its platform (`U123`) is never read as one. */
export const GROUP_NAME = /^[a-z][a-z0-9_-]{0,63}$/;
export const APPROVERS_GROUP = 'APPROVERS';

/** One item or a list of them: `tool: github__*` and `tool: [a, b]` both read as a list. */
const oneOrMany = <T extends z.ZodType>(item: T) =>
  z.preprocess((v) => (typeof v === 'string' ? [v] : v), z.array(item).min(1, 'expected at least one entry'));

const text = (what: string) =>
  z
    .string({ error: `expected ${what}` })
    .trim()
    .min(1, `expected ${what}`);

const checked = (what: string, check: (value: string) => string | undefined) =>
  text(what).superRefine((value, ctx) => {
    const problem = check(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

const globProblem = (compile: (g: string) => unknown) => (value: string) => {
  try {
    compile(value);
    return undefined;
  } catch (error) {
    if (error instanceof GlobError) return `bad glob ${JSON.stringify(value)}: ${error.message}`;
    throw error;
  }
};

const ToolGlob = checked('a tool name or glob such as github__*', globProblem(compileNameGlob));
const PathGlob = checked('a path glob such as runbooks/**', globProblem(compilePathGlob));

const Scalar = z.union([z.string(), z.number(), z.boolean(), z.null()], {
  error: 'expected a string, number, true/false or null',
});

/** A platform's id of one kind, written `platform:ID` (or, for a channel, a bare id). */
function platformId(
  platforms: PolicyPlatforms,
  kind: 'workspace' | 'channel',
  value: string,
  allowBare: boolean,
): string | undefined {
  const shown = JSON.stringify(value);
  // Two workspaces show that the platform varies; one channel is example enough.
  const example = examples(platforms, kind, kind === 'workspace' ? 2 : 1).join(' or ');
  if (value.startsWith('#'))
    return `${shown}: write the channel's id (${example}), not its name — names change, ids do not`;
  const match = /^([a-z][a-z0-9_-]*):(.+)$/.exec(value);
  if (!match) {
    if (allowBare && /^[A-Za-z0-9]+$/.test(value)) return undefined;
    return `${shown} is not platform:${kind}-id (e.g. ${example})`;
  }
  const [, platform = '', id = ''] = match;
  if (!platforms.has(platform)) return `${shown} names an unknown platform "${platform}"`;
  const rules = platforms.rulesOf(platform);
  const shape = rules.ids[kind];
  if (!shape.test(id)) {
    const hint =
      rules.ids.upperCase && shape.test(id.toUpperCase()) ? ` (${rules.displayName} ids are upper-case)` : '';
    // The first platforms' examples show the form; a platform past them shows its own id.
    const shownFirst = platforms
      .all()
      .slice(0, 2)
      .some((r) => r.name === platform);
    const own = shownFirst ? example : `${platform}:${rules.ids.examples[kind]}`;
    return `${shown} is not a ${platform} ${kind} id${hint} (e.g. ${own})`;
  }
  return undefined;
}

/** The parts of the format that check ids against the platforms' shapes. */
function idSchemas(platforms: PolicyPlatforms) {
  const names = platforms.all().map((r) => r.name);
  const expected = `expected one of ${names.join(', ')}`;
  const platform = z.string({ error: expected }).refine((v) => platforms.has(v), { error: expected });

  /** A person, a platform group (`discord-role:…`, `slack-usergroup:…`) or the name of a group in the file. */
  const personRef = checked('a person id, a role or user group, or a group name', (value) => {
    if (GROUP_NAME.test(value) || value === APPROVERS_GROUP) return undefined;
    const parsed = parsePerson(value, platforms);
    return parsed.ok ? undefined : parsed.message;
  });

  const [first] = examples(platforms, 'workspace', 1);
  const [firstChannel] = examples(platforms, 'channel', 1);
  const workspaceId = checked(`a workspace such as ${first ?? 'platform:ID'}`, (v) =>
    platformId(platforms, 'workspace', v, false),
  );
  const channelId = checked(`a channel such as ${firstChannel ?? 'platform:ID'}`, (v) =>
    platformId(platforms, 'channel', v, true),
  );

  /** Where a call is asked, or where a requester speaks: every given field must hold; a list means any of. */
  const whereMatch = z.strictObject({
    platforms: oneOrMany(platform).optional(),
    workspaces: oneOrMany(workspaceId).optional(),
    channels: oneOrMany(channelId).optional(),
    dm: z.boolean({ error: 'expected true or false' }).optional(),
  });

  /** Who a requester entry means. `workspaces` is the requester's own (the one that issued their id). */
  const whoMatch = z.preprocess(
    (v) => (typeof v === 'string' ? { people: [v] } : v),
    z.strictObject(
      {
        people: oneOrMany(personRef).optional(),
        workspaces: oneOrMany(workspaceId).optional(),
        platforms: oneOrMany(platform).optional(),
        channels: oneOrMany(channelId).optional(),
        dm: z.boolean({ error: 'expected true or false' }).optional(),
        guest: z.boolean({ error: 'expected true or false' }).optional(),
      },
      { error: 'expected a person, a group name, or an object of people, workspaces, platforms, channels, dm, guest' },
    ),
  );

  return { personRef, workspaceId, channelId, whereMatch, whoMatch };
}

const COVERS = 'person, group, channel, workspace or everyone: true';

/** A spend limit (docs/budgets.md): whom or where it covers, how much per day or month. */
function budgetSchema(ids: ReturnType<typeof idSchemas>) {
  const covers = z
    .strictObject(
      {
        person: ids.personRef.optional(),
        group: checked('a group name', (v) =>
          GROUP_NAME.test(v) || v === APPROVERS_GROUP ? undefined : `${JSON.stringify(v)} is not a group name`,
        ).optional(),
        channel: ids.channelId.optional(),
        workspace: ids.workspaceId.optional(),
        everyone: z.literal(true, { error: 'expected everyone: true' }).optional(),
      },
      { error: `expected an object with one of ${COVERS}` },
    )
    .refine((c) => Object.values(c).filter((v) => v !== undefined).length === 1, {
      error: `give exactly one of ${COVERS}`,
    });
  return z
    .strictObject({
      name: text('a budget name'),
      for: covers,
      usd: z.number({ error: 'expected an amount in US dollars' }).positive('expected more than 0').optional(),
      tokens: z
        .number({ error: 'expected a number of tokens' })
        .int('expected a whole number of tokens')
        .positive('expected more than 0')
        .optional(),
      per: z.enum(['day', 'month'], { error: 'expected day or month' }),
      tz: checked('a time zone such as Europe/Berlin', (v) =>
        isTimeZone(v) ? undefined : `${JSON.stringify(v)} is not a time zone (e.g. UTC, Europe/Berlin)`,
      ).optional(),
      warn_at: z
        .number({ error: 'expected a share of the limit such as 0.8' })
        .gt(0, 'expected more than 0')
        .max(1, 'expected at most 1')
        .optional(),
      allowance_usd: z
        .number({ error: 'expected an amount in US dollars' })
        .positive('expected more than 0')
        .optional(),
      allowance_tokens: z
        .number({ error: 'expected a number of tokens' })
        .int('expected a whole number of tokens')
        .positive('expected more than 0')
        .optional(),
    })
    .refine((b) => (b.usd === undefined) !== (b.tokens === undefined), {
      error: 'give the limit as exactly one of usd or tokens',
    })
    .superRefine((b, ctx) => {
      // An approver's allowance adds to the limit, so it is in the limit's unit.
      if (b.allowance_usd !== undefined && b.usd === undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['allowance_usd'],
          message: 'the limit is in tokens: use allowance_tokens',
        });
      if (b.allowance_tokens !== undefined && b.tokens === undefined)
        ctx.addIssue({ code: 'custom', path: ['allowance_tokens'], message: 'the limit is in usd: use allowance_usd' });
    });
}

/** The format, with ids checked against the platforms' shapes. */
function buildSchemas(platforms: PolicyPlatforms) {
  const ids = idSchemas(platforms);
  const { personRef, workspaceId, whereMatch, whoMatch } = ids;
  const budget = budgetSchema(ids);
  const rule = z.strictObject({
    name: text('a rule name').optional(),
    tool: oneOrMany(ToolGlob),
    kind: oneOrMany(ToolKind).optional(),
    mcp: z
      .strictObject({
        trusted: z.boolean({ error: 'expected true or false' }).optional(),
        readOnly: z.boolean({ error: 'expected true or false' }).optional(),
        destructive: z.boolean({ error: 'expected true or false' }).optional(),
        /** A per-person server (`"auth": "oauth"`): each call runs as the requester's own account. */
        personal: z.boolean({ error: 'expected true or false' }).optional(),
      })
      .optional(),
    /**
     * `required`: a call this rule matches runs only as the requester's own account (a per-person
     * server's connection); a tool on a shared credential is refused, whatever the outcome says.
     */
    connection: z.literal('required', { error: 'expected connection: required' }).optional(),
    paths: oneOrMany(PathGlob).optional(),
    /** A prefix of run_command's argv: `kubectl get` or `[kubectl, get]`. */
    command: z
      .preprocess(
        (v) => (typeof v === 'string' ? v.trim().split(/\s+/).filter(Boolean) : v),
        z
          .array(text('a program or argument'), {
            error: 'expected a command prefix such as "kubectl get" or [kubectl, get]',
          })
          .min(1, 'expected a command prefix such as "kubectl get" or [kubectl, get]'),
      )
      .optional(),
    args: z.record(z.string(), z.union([Scalar, z.array(Scalar)])).optional(),
    from: oneOrMany(personRef).optional(),
    where: whereMatch.optional(),
    outcome: Outcome,
    approvers: oneOrMany(personRef).optional(),
    message: text('a message').optional(),
    risk: Risk.optional(),
    /** May a person turn an approval under this rule into a standing grant ("Always allow here")? */
    grantable: z.boolean({ error: 'expected true or false' }).optional(),
    /**
     * How wide such a grant may be, per argument: patterns (see grant-patterns.ts). An argument
     * without one is granted exactly as it was called.
     */
    grant: z
      .record(z.string(), oneOrMany(text('a grant pattern')))
      .superRefine((patterns, ctx) => {
        for (const [arg, sources] of Object.entries(patterns)) {
          for (const [i, source] of sources.entries()) {
            const problem = grantPatternProblem(arg, source);
            if (problem) ctx.addIssue({ code: 'custom', path: [arg, i], message: problem });
          }
        }
      })
      .optional(),
  });

  const policy = z.strictObject({
    version: z.literal(1, { error: 'expected version: 1' }).optional(),
    /** Home workspaces: where short ids of workspace-scoped platforms (`slack:U…`) are valid. */
    workspaces: oneOrMany(workspaceId).optional(),
    groups: z.record(z.string(), oneOrMany(personRef)).optional(),
    /** Who decides `ask` and `countersign` rules that name no approvers; default: APPROVERS. */
    approvers: oneOrMany(personRef).optional(),
    requesters: z
      .strictObject({
        allow: z.array(whoMatch).optional(),
        deny: z.array(whoMatch).optional(),
        refusal: text('a refusal message').optional(),
      })
      .optional(),
    rules: z.array(rule).default([]),
    /** Per place, what a message does while its conversation is busy (first match; see docs/conversations.md). */
    conversations: z
      .array(
        z.strictObject({
          where: whereMatch.optional(),
          mode: z.enum(['queue', 'steer', 'interrupt', 'collect'], {
            error: 'expected queue, steer, interrupt or collect',
          }),
        }),
      )
      .optional(),
    /** Spend limits on model calls (docs/budgets.md). */
    budgets: z.array(budget).optional(),
  });

  return { policy, rule, budget, whereMatch, whoMatch };
}

type Schemas = ReturnType<typeof buildSchemas>;
export type WhereMatch = z.infer<Schemas['whereMatch']>;
export type WhoMatch = z.infer<Schemas['whoMatch']>;
export type RuleSchema = z.infer<Schemas['rule']>;
export type BudgetSchema = z.infer<Schemas['budget']>;
export type PolicySchema = z.infer<Schemas['policy']>;

// A policy file is re-read on every edit: its schema is built once per set of platforms.
const schemas = new WeakMap<PolicyPlatforms, Schemas['policy']>();

/** The policy file's schema for these platforms: ids are checked against their shapes. */
export function policySchema(platforms: PolicyPlatforms): Schemas['policy'] {
  let schema = schemas.get(platforms);
  if (!schema) {
    schema = buildSchemas(platforms).policy;
    schemas.set(platforms, schema);
  }
  return schema;
}
