/** P9's model: every turn calls `deploy` (which needs approval), then answers with its result. */
export const P9_SCRIPT = {
  rules: [
    {
      rounds: [
        { toolCalls: [{ name: 'deploy', args: { service: 'api' } }] },
        { text: 'Deployed: {{lastToolResult}}.' },
      ],
    },
  ],
};
