/**
 * Every Discord limit Countersign depends on, in one table. Sources: the API v10 reference
 * (Message Resource, Message Components, Embed Limits, Interactions) and the rate-limit topic.
 * Tests iterate this table, so a limit added here is checked against the builders that use it.
 */
export const LIMITS = {
  /** Characters in a message's `content`; longer content is rejected with error 50035. */
  messageContent: 2000,
  /** Characters of a message's `nonce` (Create Message). */
  nonceLength: 25,
  /** Characters in a component's `custom_id`. */
  customId: 100,
  /** Characters in a button's label. */
  buttonLabel: 80,
  /** Characters in a link button's `url` (Button Object): a longer link goes as text only. */
  linkButtonUrl: 512,
  /** Buttons in one action row. */
  buttonsPerRow: 5,
  /** Action rows on one message. */
  actionRows: 5,
  /** Embeds on one message. */
  embedsPerMessage: 10,
  /** Characters in an embed title. */
  embedTitle: 256,
  /** Characters in an embed description. */
  embedDescription: 4096,
  /** Fields on one embed. */
  embedFields: 25,
  /** Characters in an embed field's name. */
  embedFieldName: 256,
  /** Characters in an embed field's value. */
  embedFieldValue: 1024,
  /** Characters in an embed footer's text. */
  embedFooter: 2048,
  /** Characters across title, description, fields, footer and author of all embeds on a message. */
  embedTotal: 6000,
  /** Choices in one autocomplete response. */
  autocompleteChoices: 25,
  /** Characters in a thread (channel) name. */
  threadName: 100,
  /** Seconds an interaction token accepts an initial response. */
  interactionAckSeconds: 3,
  /** Minutes an interaction token accepts follow-ups and edits. */
  interactionTokenMinutes: 15,
  /** Message edits per channel per window, the bucket Discord applies to PATCH on one channel's messages. */
  channelEditsPerWindow: 5,
  /** Length of that window in seconds. */
  channelEditWindowSeconds: 5,
  /** Requests per second a bot may make across all routes (interaction responses excluded). */
  globalRequestsPerSecond: 50,
  /** Milliseconds between two edits of one reply (Countersign's pacing under the per-channel edit bucket). */
  editIntervalMs: 1000,
  /**
   * Edits a channel's bucket allows at once (Countersign's). A token bucket allows its burst plus a
   * window's refill inside one window, so the refill is what is left of channelEditsPerWindow: never
   * a 429 from a full burst followed by steady refills.
   */
  channelEditBurst: 2,
  /**
   * Requests the global bucket allows at once (Countersign's). Its 1-second window is split the same
   * way, with headroom: a token is taken before the request leaves, and under load (a burst of
   * approvals, P9) a request can reach Discord up to ~100 ms later, inside the next window, beside
   * that window's own full share. 10 at once, then 35 a second, keeps any window under 50 even then.
   */
  globalBurst: 10,
  /** The global bucket's refill per second, with globalBurst above (Countersign's). */
  globalRefillPerSecond: 35,
  /**
   * Arguments longer than this may not show whole in a card's embed field (embedFieldValue, shared
   * with detail), so a "Full arguments" button offers them (Countersign's).
   */
  fieldSafeArgs: 900,
  /** Grants `/countersign grants` lists: two action rows of `buttonsPerRow` Revoke buttons (Countersign's). */
  listedGrants: 10,
  /** Private messages a call's whole arguments may take (Countersign's: past it, the rest is counted, not shown). */
  fullArgumentMessages: 10,
  /** Characters kept free in each of those messages for the code fence and the header line (Countersign's). */
  fullArgumentMargin: 200,
} as const;

export type DiscordLimit = keyof typeof LIMITS;
