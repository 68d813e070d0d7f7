import { z } from 'zod';

export const SkillProblemSeverity = z.enum(['error', 'warning']);
export type SkillProblemSeverity = z.infer<typeof SkillProblemSeverity>;

/**
 * One thing wrong with a skill. An `error` means the skill was skipped; a `warning` means it
 * loaded anyway. `line` is 1-based and points at the offending frontmatter key when there is one.
 */
export const SkillProblem = z.discriminatedUnion('severity', [
  z.object({ severity: z.literal('error'), file: z.string(), line: z.number().int().min(1), message: z.string() }),
  z.object({ severity: z.literal('warning'), file: z.string(), line: z.number().int().min(1), message: z.string() }),
]);
export type SkillProblem = z.infer<typeof SkillProblem>;

export function skillError(file: string, line: number, message: string): SkillProblem {
  return { severity: 'error', file, line, message };
}

export function skillWarning(file: string, line: number, message: string): SkillProblem {
  return { severity: 'warning', file, line, message };
}

/** `file:line: severity: message`, the shape editors and CI annotate from. */
export function formatProblem(problem: SkillProblem, displayFile: string = problem.file): string {
  return `${displayFile}:${problem.line}: ${problem.severity}: ${problem.message}`;
}

export function hasErrors(problems: readonly SkillProblem[]): boolean {
  return problems.some((p) => p.severity === 'error');
}
