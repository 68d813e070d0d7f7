import { z } from 'zod';

export const SkillProblemSeverity = z.enum(['error', 'warning']);
export type SkillProblemSeverity = z.infer<typeof SkillProblemSeverity>;

/**
 * One thing wrong with a skill. An `error` means the skill was skipped; a `warning` means it
 * loaded anyway. `line` is 1-based and points at the offending frontmatter key when there is one.
 * `breaksSpec` marks a warning that breaks a rule the Agent Skills spec states as required: the
 * client guide asks clients to load such a skill anyway, but `skills lint` fails on it, since
 * other clients may refuse the skill.
 */
export const SkillProblem = z.discriminatedUnion('severity', [
  z.object({ severity: z.literal('error'), file: z.string(), line: z.number().int().min(1), message: z.string() }),
  z.object({
    severity: z.literal('warning'),
    file: z.string(),
    line: z.number().int().min(1),
    message: z.string(),
    breaksSpec: z.literal(true).optional(),
  }),
]);
export type SkillProblem = z.infer<typeof SkillProblem>;

export function skillError(file: string, line: number, message: string): SkillProblem {
  return { severity: 'error', file, line, message };
}

export function skillWarning(file: string, line: number, message: string): SkillProblem {
  return { severity: 'warning', file, line, message };
}

/** A rule the spec requires is broken, but the skill still loads (see `breaksSpec`). */
export function specViolation(file: string, line: number, message: string): SkillProblem {
  return { severity: 'warning', file, line, message, breaksSpec: true };
}

/** Fails `skills lint`: the skill was skipped, or it breaks a rule the spec requires. */
export function failsLint(problem: SkillProblem): boolean {
  return problem.severity === 'error' || problem.breaksSpec === true;
}

/**
 * `file:line: severity: message`, the shape editors and CI annotate from. A spec violation is
 * labelled `error` (lint fails on it) and says that Countersign loads the skill regardless.
 */
export function formatProblem(problem: SkillProblem, displayFile: string = problem.file): string {
  const label = failsLint(problem) ? 'error' : 'warning';
  const note = problem.severity === 'warning' && problem.breaksSpec ? ' (Countersign loads it anyway)' : '';
  return `${displayFile}:${problem.line}: ${label}: ${problem.message}${note}`;
}
