/** The policy engine's public face: who may ask, who must countersign. See README.md here. */
export {
  mayDecide,
  Policy,
  type Admission,
  type CallFacts,
  type Decision,
  type RuleRef,
  type ToolDescriptor,
  type Verdict,
  type Where,
} from './engine.ts';
export { builtinPolicy } from './defaults.ts';
export { formatPolicyProblem, loadPolicyFile, parsePolicy } from './parse.ts';
export { formatPattern, parsePerson, personMatches, samePerson, type Person, type PersonPattern } from './person.ts';
export type { PolicyPlatforms } from './platforms.ts';
export { PolicyFileError, PolicyFile } from './policy-file.ts';
export { policyCommand, type ToolKinds } from './cli.ts';
export { grantPatternMatches, narrowestGrantPattern } from './grant-patterns.ts';
export type { Outcome, Risk } from './schema.ts';
export type { Budget, BudgetUnit } from './budgets.ts';
