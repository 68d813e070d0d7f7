import { z } from 'zod';
import { grantPatternProblem } from './grant-patterns.ts';
import { compileNameGlob, compilePathGlob, GlobError } from './glob.ts';
import { parsePerson } from './person.ts';

/**
 * The policy file's format (YAML or JSON), declared once. Every object is strict: a misspelt key is
 * an error, never a silently ignored rule. Values are checked here (globs, ids); references between
 * parts (group names, rule names) are checked in `parse.ts`, which knows the whole file.
 */

const OUTCOMES = ['allow', 'ask', 'countersign', 'deny'] as const;
export const Outcome = z.enum(OUTCOMES, { error: `expected one of ${OUTCOMES.join(', ')}` });
export type Outcome = z.infer<typeof Outcome>;

export const TOOL_KINDS = ['read', 'write', 'delete', 'exec', 'mcp', 'question'] as const;
export const ToolKind = z.enum(TOOL_KINDS, { error: `expected one of ${TOOL_KINDS.join(', ')}` });
export type ToolKind = z.infer<typeof ToolKind>;

const RISKS = ['low', 'medium', 'high'] as const;
export const Risk = z.enum(RISKS, { error: `expected one of ${RISKS.join(', ')}` });
export type Risk = z.infer<typeof Risk>;

const PLATFORMS = ['slack', 'discord', 'console'] as const;
const Platform = z.enum(PLATFORMS, { error: `expected one of ${PLATFORMS.join(', ')}` });

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

/** A person, a platform group (`discord-role:…`, `slack-usergroup:…`) or the name of a group in the file. */
const PersonRef = checked('a person id, a role or user group, or a group name', (value) => {
  if (GROUP_NAME.test(value) || value === APPROVERS_GROUP) return undefined;
  const parsed = parsePerson(value);
  return parsed.ok ? undefined : parsed.message;
});

const WORKSPACE = { slack: /^[TE][A-Z0-9]{2,}$/, discord: /^\d{1,20}$/, console: /^\S+$/ } as const;
const CHANNEL = { slack: /^[CGD][A-Z0-9]{2,}$/, discord: /^\d{1,20}$/, console: /^\S+$/ } as const;

function platformId(kind: 'workspace' | 'channel', value: string, allowBare: boolean): string | undefined {
  const shown = JSON.stringify(value);
  const example = kind === 'workspace' ? 'slack:T0123ABCD or discord:123456789012345678' : 'slack:C0123ABCD';
  if (value.startsWith('#'))
    return `${shown}: write the channel's id (${example}), not its name — names change, ids do not`;
  const match = /^([a-z]+):(.+)$/.exec(value);
  if (!match) {
    if (allowBare && /^[A-Za-z0-9]+$/.test(value)) return undefined;
    return `${shown} is not platform:${kind}-id (e.g. ${example})`;
  }
  const [, platform = '', id = ''] = match;
  const shapes = kind === 'workspace' ? WORKSPACE : CHANNEL;
  if (!Object.hasOwn(shapes, platform)) return `${shown} names an unknown platform "${platform}"`;
  if (!shapes[platform as keyof typeof shapes].test(id))
    return `${shown} is not a ${platform} ${kind} id${platform === 'slack' && shapes.slack.test(id.toUpperCase()) ? ' (Slack ids are upper-case)' : ''} (e.g. ${example})`;
  return undefined;
}

const WorkspaceId = checked('a workspace such as slack:T0123ABCD', (v) => platformId('workspace', v, false));
const ChannelId = checked('a channel such as slack:C0123ABCD', (v) => platformId('channel', v, true));

/** Where a call is asked, or where a requester speaks: every given field must hold; a list means any of. */
export const WhereMatch = z.strictObject({
  platforms: oneOrMany(Platform).optional(),
  workspaces: oneOrMany(WorkspaceId).optional(),
  channels: oneOrMany(ChannelId).optional(),
  dm: z.boolean({ error: 'expected true or false' }).optional(),
});
export type WhereMatch = z.infer<typeof WhereMatch>;

/** Who a requester entry means. `workspaces` is the requester's own (the one that issued their id). */
export const WhoMatch = z.preprocess(
  (v) => (typeof v === 'string' ? { people: [v] } : v),
  z.strictObject(
    {
      people: oneOrMany(PersonRef).optional(),
      workspaces: oneOrMany(WorkspaceId).optional(),
      platforms: oneOrMany(Platform).optional(),
      channels: oneOrMany(ChannelId).optional(),
      dm: z.boolean({ error: 'expected true or false' }).optional(),
      guest: z.boolean({ error: 'expected true or false' }).optional(),
    },
    { error: 'expected a person, a group name, or an object of people, workspaces, platforms, channels, dm, guest' },
  ),
);
export type WhoMatch = z.infer<typeof WhoMatch>;

const Scalar = z.union([z.string(), z.number(), z.boolean(), z.null()], {
  error: 'expected a string, number, true/false or null',
});

export const RuleSchema = z.strictObject({
  name: text('a rule name').optional(),
  tool: oneOrMany(ToolGlob),
  kind: oneOrMany(ToolKind).optional(),
  mcp: z
    .strictObject({
      trusted: z.boolean({ error: 'expected true or false' }).optional(),
      readOnly: z.boolean({ error: 'expected true or false' }).optional(),
      destructive: z.boolean({ error: 'expected true or false' }).optional(),
    })
    .optional(),
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
  from: oneOrMany(PersonRef).optional(),
  where: WhereMatch.optional(),
  outcome: Outcome,
  approvers: oneOrMany(PersonRef).optional(),
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
export type RuleSchema = z.infer<typeof RuleSchema>;

export const PolicySchema = z.strictObject({
  version: z.literal(1, { error: 'expected version: 1' }).optional(),
  /** Home workspaces: where short Slack ids (`slack:U…`) are valid. */
  workspaces: oneOrMany(WorkspaceId).optional(),
  groups: z.record(z.string(), oneOrMany(PersonRef)).optional(),
  /** Who decides `ask` and `countersign` rules that name no approvers; default: APPROVERS. */
  approvers: oneOrMany(PersonRef).optional(),
  requesters: z
    .strictObject({
      allow: z.array(WhoMatch).optional(),
      deny: z.array(WhoMatch).optional(),
      refusal: text('a refusal message').optional(),
    })
    .optional(),
  rules: z.array(RuleSchema).default([]),
  /** Per place, what a message does while its conversation is busy (first match; see docs/conversations.md). */
  conversations: z
    .array(
      z.strictObject({
        where: WhereMatch.optional(),
        mode: z.enum(['queue', 'steer', 'interrupt', 'collect'], {
          error: 'expected queue, steer, interrupt or collect',
        }),
      }),
    )
    .optional(),
});
export type PolicySchema = z.infer<typeof PolicySchema>;
