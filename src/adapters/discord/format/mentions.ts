/**
 * Makes model-written text unable to ping anyone. Countersign also sends `allowed_mentions:
 * {parse: []}` with every message; this is the second lock, for a payload that forgets it and for
 * text that is later quoted by someone else's bot. A zero-width space after `@` / `<@` keeps the
 * text readable while Discord no longer parses it as a mention.
 */

const ZWSP = '\u200b';

/** Matched anywhere, even inside a word: over-neutralizing costs an invisible character, missing one pings a server. */
const MASS_MENTION = /@(everyone|here)/g;
/** `<@123>`, `<@!123>` (user, nickname form) and `<@&123>` (role). */
const ID_MENTION = /<@([!&]?\d+)>/g;

export function neutralizeMentions(text: string): string {
  return text.replace(MASS_MENTION, `@${ZWSP}$1`).replace(ID_MENTION, `<@${ZWSP}$1>`);
}
