/**
 * Every number the skills code enforces, in one place. The first three come from the Agent Skills
 * specification (agentskills.io/specification); the rest are Countersign's own guard rails.
 */
/**
 * Length as the spec counts it: characters, i.e. Unicode code points (the reference validator's
 * Python `len`), not JavaScript's UTF-16 units, in which one emoji counts twice.
 */
export function charCount(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

export const LIMITS = {
  /** Spec: `name` is 1–64 characters. */
  nameChars: 64,
  /** Spec: `description` is 1–1024 characters. */
  descriptionChars: 1024,
  /** Spec: `compatibility` is at most 500 characters. */
  compatibilityChars: 500,
  /** The spec advises keeping SKILL.md under 500 lines and moving detail into referenced files. */
  bodyLinesAdvice: 500,
  /** A SKILL.md larger than this is refused outright: it would swamp the model's context. */
  skillFileBytes: 256 * 1024,
  /** Largest supporting file `read_skill_file` returns. */
  resourceFileBytes: 256 * 1024,
  /** Longest relative path `read_skill_file` accepts. */
  resourcePathChars: 512,
  /** Files listed (and hashed) per skill folder; deeper trees are cut off. */
  filesPerSkill: 200,
  /** Folder depth walked inside a skill. */
  skillTreeDepth: 6,
  /** Quiet period before a burst of file changes triggers one re-scan. */
  reloadDebounceMs: 150,
  /** Shortest a description is cut to when the prompt budget is tight. */
  promptDescriptionMinChars: 48,
} as const;
