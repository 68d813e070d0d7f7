/**
 * What people read when a turn does not end with the model's own answer, in one place, so every
 * platform and every path says the same thing the same way.
 */

/** Appends a closing line to whatever the reply already showed. */
function after(shown: string, line: string): string {
  return `${shown ? `${shown}\n\n` : ''}${line}`;
}

export const TEXTS = {
  /** `who`: "you" where the platform has one person per conversation, else the person's id. */
  stopped: (shown: string, who: string) => after(shown, `_Stopped by ${who}._`),
  feedbackRecorded: (vote: 'up' | 'down') =>
    `Thanks — your ${vote === 'up' ? '👍' : '👎'} is recorded with this answer.`,
  grantRevoked: (grantId: string) => `Revoked grant ${grantId.slice(0, 8)}: from now on those calls ask again.`,
  superseded: (shown: string) => after(shown, '_⏭ Stopped here: your newer message takes over._'),
  failed: (shown: string, reason: string) => after(shown, `Sorry, I couldn't finish this: ${reason}`),
  approvalExpired:
    'The approval request expired before anyone decided, so nothing was run. Ask again if it is still needed.',
  unavailable: 'Countersign is temporarily unavailable (its database is unreachable). Please try again in a moment.',
} as const;

/** What each conversation mode does with a message sent while the bot works, for the help text. */
export const MODE_HELP: Record<'queue' | 'steer' | 'interrupt' | 'collect', string> = {
  queue: 'waits and becomes my next turn',
  steer: 'joins the work in progress at its next step (and replaces a pending approval card)',
  interrupt: 'stops the work in progress at its next step and starts over with it',
  collect: 'is gathered with other quick lines into one request',
};
