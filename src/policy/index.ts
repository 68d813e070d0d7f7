/** The policy engine's public face: who may ask, who must countersign. See README.md here. */
export {
  DEFAULT_REFUSAL,
  mayDecide,
  Policy,
  type Admission,
  type CallFacts,
  type Decision,
  type DecideInput,
  type RuleRef,
  type ToolDescriptor,
  type Verdict,
  type Where,
} from './engine.ts';
export { AGENT_CHANGING_PATHS, builtinPolicy, changedFilesNote, type PolicyOptions } from './defaults.ts';
export { formatPolicyProblem, loadPolicyFile, parsePolicy, type PolicyParse, type PolicyProblem } from './parse.ts';
export {
  formatPattern,
  parsePerson,
  personFromId,
  personKey,
  personMatches,
  samePerson,
  type ParsedPerson,
  type Person,
  type PersonPattern,
} from './person.ts';
export { PolicyFileError, PolicyFile, type PolicyChange, type PolicyFileOptions } from './policy-file.ts';
export { policyCheck, policyCommand, policyLint, POLICY_USAGE, type CommandResult, type ToolKinds } from './cli.ts';
export { grantPatternMatches, narrowestGrantPattern } from './grant-patterns.ts';
export type { Outcome, Risk, ToolKind } from './schema.ts';
