import { z } from 'zod';
import { defineBuiltinTool } from './tool.ts';

export const QUESTION_TOOL = 'request_human_approval';

/**
 * Lets the agent ask a person a question with fixed options. It always "needs approval": the turn
 * parks behind the same single-use envelope as a risky call, and the chosen option comes back as
 * the tool's result. It never executes on its own.
 */
export const requestHumanApprovalTool = defineBuiltinTool({
  name: QUESTION_TOOL,
  kind: 'question',
  description:
    'Ask a person to choose between options before you continue (e.g. "Proceed with step 3?" with options ["Yes", "No", "Skip"]). The turn pauses until someone answers; their choice comes back as the result.',
  version: '1',
  input: z.object({
    question: z.string().min(1).max(2000),
    options: z.array(z.string().min(1).max(75)).min(2).max(5),
  }),
  approval: 'always',
  risk: 'low',
  idempotent: true,
  async execute() {
    return { content: 'This question was not put to a person, so there is no answer.', isError: true };
  },
});
