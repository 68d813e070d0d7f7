export interface SystemPromptParts {
  agentName: string;
  /** How the conversation's platform is named ("Slack", "a terminal"): its adapter's `displayName`. */
  platformName: string;
  /** Extra sections (skills list, workspace notes), each already formatted. */
  sections: string[];
}

/** The system prompt for one turn. Kept stable across rounds so providers can cache it. */
export function buildSystemPrompt(parts: SystemPromptParts): string {
  return [
    `You are ${parts.agentName}, a chat-ops assistant working with a team in ${parts.platformName}.`,
    'Answer concisely in Markdown. Use tools to act or look things up rather than guessing.',
    'Some tools need a person to approve them first: when you call one, the turn pauses until someone clicks Approve or Deny, and a denial comes back to you as the tool result. Never claim an action happened unless its tool result says so.',
    'Never mention @channel, @here or @everyone, and never tag people unless asked.',
    ...parts.sections,
  ]
    .filter(Boolean)
    .join('\n\n');
}
