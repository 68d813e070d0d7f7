/** P9's model: every turn calls `deploy` (which needs approval), then answers with its result; P10's status mentions get a plain answer. */
export const P9_SCRIPT = {
  rules: [
    // P10's mentions in the other workspace and on Discord: a plain answer, no tool.
    { match: String.raw`\bstatus\b`, rounds: [{ text: 'All systems normal: nothing is deploying right now.' }] },
    {
      rounds: [
        { toolCalls: [{ name: 'deploy', args: { service: 'api' } }] },
        { text: 'Deployed: {{lastToolResult}}.' },
      ],
    },
  ],
};
