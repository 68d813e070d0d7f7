/**
 * Every Slack limit Countersign depends on, in one table. Sources: the Block Kit reference
 * (blocks, section, actions, context, button element, plain_text object), chat.postMessage
 * (`text` truncation, `msg_too_long`), the streaming methods (`markdown_text`), and the Web API
 * rate-limit tiers. Tests iterate this table, so a limit added here is checked against the
 * builders that use it.
 */
export const LIMITS = {
  /** Blocks in one message. */
  blocks: 50,
  /** Characters in a section block's text. */
  sectionText: 3000,
  /** Fields in one section block. */
  sectionFields: 10,
  /** Characters in one section field. */
  sectionFieldText: 2000,
  /** Characters in a header block's text. */
  headerText: 150,
  /** Characters of a mrkdwn text element in a context block. */
  contextText: 3000,
  /** Elements in one context block. */
  contextElements: 10,
  /** Elements (buttons) in one actions block. */
  actionsElements: 25,
  /** Characters in a button's label. */
  buttonText: 75,
  /** Characters in a button's value. */
  buttonValue: 2000,
  /** Characters in an action_id. */
  actionId: 255,
  /** Characters in a block_id. */
  blockId: 255,
  /**
   * Characters Countersign puts in a button's value and action_id: Discord's custom_id allows 100,
   * and one token format serves both platforms.
   */
  buttonToken: 100,
  /** Characters of a message's top-level `text`; Slack truncates past 40,000 (and rejects with msg_too_long). */
  messageText: 40_000,
  /** Characters of `markdown_text` per chat.startStream / appendStream / stopStream call. */
  streamMarkdownText: 12_000,
  /** Characters of each text (id, title, details) in a stream's `task_update` and `plan_update` chunks. */
  streamChunkText: 256,
  /** Blocks in a modal view. */
  modalBlocks: 100,
  /** Suggested prompts shown in an assistant thread (assistant.threads.setSuggestedPrompts). */
  suggestedPrompts: 4,
  /** Characters of a suggested prompt's title, as shown in the assistant panel (Countersign's cut). */
  suggestedPromptTitle: 75,
  /** Characters of the message a suggested prompt sends (Countersign's cut). */
  suggestedPromptMessage: 500,
  /** Characters of an assistant thread's title (assistant.threads.setTitle). */
  sessionTitle: 200,
  /** Members per conversations.members page (`limit`). */
  membersPage: 1000,
  /**
   * Characters of a reply message before it continues in a new one: a section block holds 3000, less
   * room for what mrkdwn escaping adds (Countersign's choice, not Slack's).
   */
  replyMessageText: 2800,
  /** Milliseconds between two edits of one reply (Countersign's pacing under the Tier 3 budget). */
  editIntervalMs: 1000,
  /** How long a response_url post may take before the card is edited with chat.update instead (Countersign's). */
  responseUrlTimeoutMs: 2500,
  /** Characters a native stream keeps free below streamMarkdownText before rolling over (Countersign's). */
  streamRolloverMargin: 1000,
  /** chat.update per minute per workspace (Tier 3). */
  chatUpdatePerMinute: 50,
  /** chat.appendStream per minute per workspace (Tier 4). */
  appendStreamPerMinute: 100,
  /** chat.appendStream calls a workspace's replies take per minute, under appendStreamPerMinute (Countersign's). */
  appendStreamBudgetPerMinute: 90,
  /** A stream method's burst: 1/6 of its per-minute budget at once, the rest refilled in the minute (Countersign's). */
  streamBurstDivisor: 6,
  /** chat.update's burst: 1/10 of SLACK_UPDATES_PER_MINUTE at once, the rest refilled in the minute (Countersign's). */
  chatUpdateBurstDivisor: 10,
  /** How long a workspace without native streaming gets edited replies before it is tried again (Countersign's). */
  streamUnsupportedRecheckMs: 600_000,
  /** Grants one `/countersign grants` answer lists, a section each, so it stays under `blocks` (Countersign's). */
  listedGrants: 20,
  /** Approval card calls per message: up to 3 blocks each, plus header and footer, within `blocks` (Countersign's). */
  cardCallsPerMessage: 12,
  /** Times Slack retries an Events API delivery it saw fail: at once, after 1 minute, after 5 minutes. */
  eventRetries: 3,
  /** Minutes from an event's first delivery to Slack's last retry of it, at most (the delays above, back to back). */
  eventLastRetryMinutes: 6,
  /** How long the start-up probe of Slack's Web API waits for any answer (Countersign's). */
  probeTimeoutMs: 10_000,
  /** First wait before probing an unreachable Slack again; it doubles up to the next (Countersign's). */
  reconnectFirstDelayMs: 1000,
  reconnectMaxDelayMs: 60_000,
} as const;
