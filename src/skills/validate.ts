import { z } from 'zod';
import { charCount, LIMITS } from './limits.ts';
import type { KeyLines } from './parse.ts';
import { skillError, skillWarning, specViolation, type SkillProblem, type SkillProblemSeverity } from './problem.ts';

/** The frontmatter keys the Agent Skills format defines. Anything else is reported, not fatal. */
const ALLOWED_KEYS = ['name', 'description', 'license', 'compatibility', 'metadata', 'allowed-tools'] as const;

const ALLOWED_KEY_SET: ReadonlySet<string> = new Set(ALLOWED_KEYS);

/** What a YAML value turned out to be, in words a skill author recognises. */
function describeYamlValue(value: unknown): string {
  if (value === null || value === undefined) return 'an empty value';
  if (Array.isArray(value)) return 'a list';
  if (value instanceof Date) return 'a date';
  if (typeof value === 'number') return 'a number';
  if (typeof value === 'boolean') return 'true/false';
  if (typeof value === 'object') return 'a map';
  if (typeof value === 'string') return 'plain text';
  return `a ${typeof value}`;
}

/**
 * The form a name is compared and stored in: NFKC, as the reference validator does, so "café"
 * typed with a combining accent is the same name as its folder "café".
 */
function normaliseSkillName(name: string): string {
  return name.normalize('NFKC');
}

/** Why a name cannot identify a skill at all (type, characters, hyphens); its length aside. */
function skillNameFormProblem(name: unknown): string | undefined {
  if (name === null || name === undefined || name === '') {
    return '"name" is empty: use the skill\'s folder name, e.g. name: my-skill';
  }
  if (typeof name !== 'string') {
    return `"name" must be text made of lowercase letters, digits and hyphens, but it is ${describeYamlValue(name)}`;
  }
  const form = normaliseSkillName(name);
  // The spec: "unicode lowercase alphanumeric characters and hyphens". Letters without case
  // (技能) count as lowercase, as in the reference validator.
  const invalid = [...new Set(form.replace(/[\p{L}\p{N}-]/gu, ''))];
  if (invalid.length > 0) {
    return `"name" "${name}" may only use lowercase letters, digits and hyphens; remove ${invalid.map((c) => JSON.stringify(c)).join(', ')}`;
  }
  if (form !== form.toLowerCase()) return `"name" "${name}" has uppercase letters; use "${form.toLowerCase()}"`;
  if (form.startsWith('-') || form.endsWith('-')) return `"name" "${name}" must not start or end with a hyphen`;
  if (form.includes('--')) return `"name" "${name}" must not contain consecutive hyphens (--)`;
  return undefined;
}

const nameTooLong = (name: string) =>
  charCount(name) > LIMITS.nameChars
    ? `"name" is ${charCount(name)} characters long; the limit is ${LIMITS.nameChars}`
    : undefined;

/** Why a skill name is unacceptable, or undefined when it is fine. One reason, the most useful first. */
export function skillNameProblem(name: unknown): string | undefined {
  return skillNameFormProblem(name) ?? nameTooLong(normaliseSkillName(name as string));
}

/**
 * The description `skills new` writes. It reads like a real one, so without a check a scaffolded
 * skill would pass lint and reach the prompt catalog saying nothing of what it does.
 */
const PLACEHOLDER_DESCRIPTION = {
  before: 'Describe what ',
  after: ' does and when to use it, naming the requests that should trigger it.',
};

export const placeholderDescription = (name: string) =>
  `${PLACEHOLDER_DESCRIPTION.before}${name}${PLACEHOLDER_DESCRIPTION.after}`;

const isPlaceholderDescription = (description: string) => {
  const text = description.trim();
  return text.startsWith(PLACEHOLDER_DESCRIPTION.before) && text.endsWith(PLACEHOLDER_DESCRIPTION.after);
};

/** Marks an issue as breaking a rule the spec requires, where the skill still loads. */
const BREAKS_SPEC = { breaksSpec: true } as const;

const requiredText = (key: string, advice: string) =>
  z.unknown().transform((value, ctx) => {
    if (value === null || value === undefined || (typeof value === 'string' && value.trim() === '')) {
      ctx.addIssue({ code: 'custom', message: `"${key}" is empty: ${advice}` });
      return z.NEVER;
    }
    if (typeof value !== 'string') {
      ctx.addIssue({ code: 'custom', message: `"${key}" must be text, but it is ${describeYamlValue(value)}` });
      return z.NEVER;
    }
    return value;
  });

const SkillNameField = z.unknown().transform((value, ctx) => {
  const problem = skillNameFormProblem(value);
  if (problem) {
    ctx.addIssue({ code: 'custom', message: problem });
    return z.NEVER;
  }
  return normaliseSkillName(value as string);
});

const DescriptionField = requiredText('description', 'say what the skill does and when to use it');

const optionalText = (key: string, max?: number, params?: typeof BREAKS_SPEC) =>
  z.unknown().transform((value, ctx) => {
    if (typeof value !== 'string') {
      ctx.addIssue({
        code: 'custom',
        message: `"${key}" must be text, but it is ${describeYamlValue(value)}; it was ignored`,
        params,
      });
      return z.NEVER;
    }
    if (max !== undefined && charCount(value) > max) {
      ctx.addIssue({
        code: 'custom',
        message: `"${key}" is ${charCount(value)} characters long; the limit is ${max} (it was ignored)`,
        params,
      });
      return z.NEVER;
    }
    return value;
  });

/** `metadata` is a string → string map; a non-string entry is dropped and reported on its own line. */
const MetadataField = z.unknown().transform((value, ctx) => {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof Date) {
    ctx.addIssue({
      code: 'custom',
      message: `"metadata" must be a map of names to text values, but it is ${describeYamlValue(value)}; it was ignored`,
      params: BREAKS_SPEC,
    });
    return z.NEVER;
  }
  const kept: Record<string, string> = {};
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry === 'string') {
      kept[key] = entry;
      continue;
    }
    ctx.addIssue({
      code: 'custom',
      path: [key],
      message: `"metadata.${key}" must be text, but it is ${describeYamlValue(entry)}; quote the value (it was ignored)`,
    });
  }
  return kept;
});

/**
 * The spec makes `allowed-tools` a space-separated string; some clients write a YAML list, which
 * is read too but warned about (`allowedToolsListWarning`): other clients may refuse it. In
 * Countersign it is advisory only: it never skips a human approval.
 */
const AllowedToolsField = z.unknown().transform((value, ctx) => {
  if (typeof value === 'string') return value.split(/\s+/).filter(Boolean);
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value as string[];
  ctx.addIssue({
    code: 'custom',
    message: `"allowed-tools" must be a space-separated list of tool names, but it is ${describeYamlValue(value)}${Array.isArray(value) ? ' with non-text items' : ''}; it was ignored`,
  });
  return z.NEVER;
});

/**
 * The checks per key. A required key that is missing or unusable fails the skill; problems with
 * optional ones only warn, because a skill written for another client should still load (the
 * spec's guide to clients asks for leniency). Issues marked BREAKS_SPEC still fail `skills lint`.
 */
const FIELD_RULES = {
  name: { severity: 'error', schema: SkillNameField },
  description: { severity: 'error', schema: DescriptionField },
  license: { severity: 'warning', schema: optionalText('license') },
  compatibility: { severity: 'warning', schema: optionalText('compatibility', LIMITS.compatibilityChars, BREAKS_SPEC) },
  metadata: { severity: 'warning', schema: MetadataField },
  'allowed-tools': { severity: 'warning', schema: AllowedToolsField },
} as const satisfies Record<(typeof ALLOWED_KEYS)[number], { severity: SkillProblemSeverity; schema: z.ZodType }>;

/** The validated frontmatter of a skill that loads. */
export const SkillFrontmatter = z.object({
  name: z.string(),
  description: z.string(),
  license: z.string().optional(),
  compatibility: z.string().optional(),
  metadata: z.record(z.string(), z.string()),
  allowedTools: z.array(z.string()),
});
export type SkillFrontmatter = z.infer<typeof SkillFrontmatter>;

export interface FrontmatterCheck {
  /** Present when there is no error: the skill can load. */
  frontmatter?: SkillFrontmatter;
  problems: SkillProblem[];
}

export interface FrontmatterContext {
  file: string;
  keyLines: KeyLines;
  /** The skill's folder name, which `name` must equal. */
  folderName: string;
}

type FieldValues = Partial<Record<(typeof ALLOWED_KEYS)[number], unknown>>;

/** Checks parsed frontmatter against the Agent Skills format. Every problem carries its key's line. */
export function validateFrontmatter(data: unknown, context: FrontmatterContext): FrontmatterCheck {
  if (typeof data !== 'object' || data === null || Array.isArray(data) || data instanceof Date) {
    return {
      problems: [
        skillError(
          context.file,
          2,
          `the frontmatter must be YAML keys (name: …, description: …), but it is ${describeYamlValue(data)}`,
        ),
      ],
    };
  }
  const record = data as Record<string, unknown>;
  const problems: SkillProblem[] = unknownKeyWarnings(record, context);
  const values = checkFields(record, context, problems);
  problems.push(...specLimitProblems(values, context), ...adviceWarnings(record, values, context));

  problems.sort((a, b) => a.line - b.line);
  if (problems.some((p) => p.severity === 'error')) return { problems };
  return {
    frontmatter: SkillFrontmatter.parse({
      name: values.name,
      description: values.description,
      license: typeof values.license === 'string' ? values.license : undefined,
      compatibility: typeof values.compatibility === 'string' ? values.compatibility : undefined,
      metadata: (values.metadata as Record<string, string> | undefined) ?? {},
      allowedTools: (values['allowed-tools'] as string[] | undefined) ?? [],
    }),
    problems,
  };
}

/** The line a top-level key is on (1 when it is missing). */
const lineOf = (keyLines: KeyLines, key: string) => keyLines.top.get(key) ?? 1;

function unknownKeyWarnings(record: Record<string, unknown>, { file, keyLines }: FrontmatterContext): SkillProblem[] {
  return Object.keys(record)
    .filter((key) => !ALLOWED_KEY_SET.has(key))
    .map((key) =>
      skillWarning(
        file,
        lineOf(keyLines, key),
        `unknown key "${key}": the Agent Skills format allows ${ALLOWED_KEYS.join(', ')}; put extra fields under metadata`,
      ),
    );
}

/** Each known key checked by its FIELD_RULES entry; its problems are added to `problems`. */
function checkFields(
  record: Record<string, unknown>,
  { file, keyLines, folderName }: FrontmatterContext,
  problems: SkillProblem[],
): FieldValues {
  const values: FieldValues = {};
  for (const key of ALLOWED_KEYS) {
    const rule = FIELD_RULES[key];
    if (!(key in record)) {
      if (rule.severity === 'error') {
        const advice =
          key === 'name' ? `add name: ${folderName}` : 'add a description of what the skill does and when to use it';
        problems.push(skillError(file, 1, `missing required key "${key}": ${advice}`));
      }
      continue;
    }
    const result = rule.schema.safeParse(record[key]);
    for (const issue of result.error?.issues ?? []) {
      const nestedKey = issue.path[0];
      const line =
        (typeof nestedKey === 'string' ? keyLines.nested.get(key)?.get(nestedKey) : undefined) ?? lineOf(keyLines, key);
      const breaksSpec = (issue as { params?: { breaksSpec?: boolean } }).params?.breaksSpec === true;
      problems.push(
        rule.severity === 'error'
          ? skillError(file, line, issue.message)
          : breaksSpec
            ? specViolation(file, line, issue.message)
            : skillWarning(file, line, issue.message),
      );
    }
    values[key] = result.success ? result.data : key === 'metadata' ? textEntries(record[key]) : undefined;
  }
  return values;
}

/**
 * The spec requires these; the client guide asks to warn and load anyway (the name is still a
 * usable identifier, and the prompt catalog cuts long descriptions to its budget).
 */
function specLimitProblems(values: FieldValues, { file, keyLines, folderName }: FrontmatterContext): SkillProblem[] {
  const problems: SkillProblem[] = [];
  if (typeof values.name === 'string') {
    const tooLong = nameTooLong(values.name);
    if (tooLong) problems.push(specViolation(file, lineOf(keyLines, 'name'), tooLong));
    if (values.name !== normaliseSkillName(folderName)) {
      problems.push(
        specViolation(
          file,
          lineOf(keyLines, 'name'),
          `"name" "${values.name}" does not match its folder "${folderName}"; rename one so they are equal`,
        ),
      );
    }
  }
  if (typeof values.description === 'string' && charCount(values.description) > LIMITS.descriptionChars) {
    problems.push(
      specViolation(
        file,
        lineOf(keyLines, 'description'),
        `"description" is ${charCount(values.description)} characters long; the limit is ${LIMITS.descriptionChars} — keep it to what and when, and move detail into the body`,
      ),
    );
  }
  return problems;
}

/** Warnings about a skill that works but says less than it should, or in a form other clients may refuse. */
function adviceWarnings(
  record: Record<string, unknown>,
  values: FieldValues,
  { file, keyLines }: FrontmatterContext,
): SkillProblem[] {
  const problems: SkillProblem[] = [];
  if (typeof values.description === 'string' && isPlaceholderDescription(values.description)) {
    problems.push(
      skillWarning(
        file,
        lineOf(keyLines, 'description'),
        '"description" is still the placeholder `skills new` wrote; say what the skill does and when to use it (the model picks skills by it)',
      ),
    );
  }
  if (Array.isArray(record['allowed-tools']) && Array.isArray(values['allowed-tools'])) {
    const tools = values['allowed-tools'] as string[];
    problems.push(
      skillWarning(
        file,
        lineOf(keyLines, 'allowed-tools'),
        `"allowed-tools" is a YAML list; the Agent Skills format makes it one line of space-separated names: allowed-tools: ${tools.join(' ')} (Countersign reads the list anyway)`,
      ),
    );
  }
  return problems;
}

/** The usable part of a `metadata` map that had some non-text values. */
function textEntries(value: unknown): Record<string, string> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof Date) return undefined;
  return Object.fromEntries(
    Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}
