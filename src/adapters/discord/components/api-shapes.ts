/**
 * The slice of Discord's API v10 message payload that Countersign builds by hand. Raw JSON (not
 * discord.js builders) so any worker process can send it with a plain REST call.
 */

/** Button styles: Primary 1 (blurple), Secondary 2 (grey), Success 3 (green), Danger 4 (red). */
export const ButtonStyle = { primary: 1, secondary: 2, success: 3, danger: 4, link: 5 } as const;
type ButtonStyleName = keyof typeof ButtonStyle;

export interface ApiButton {
  type: 2;
  style: (typeof ButtonStyle)[ButtonStyleName];
  label: string;
  /** Every style but link: what the click sends back. */
  custom_id?: string;
  /** Link style only: the page the click opens (no interaction is sent). */
  url?: string;
  disabled?: boolean;
}

export interface ApiActionRow {
  type: 1;
  components: ApiButton[];
}

export interface ApiEmbedField {
  name: string;
  value: string;
  inline?: boolean;
}

export interface ApiEmbed {
  title?: string;
  description?: string;
  color?: number;
  fields?: ApiEmbedField[];
  footer?: { text: string };
}

/** Who a message may ping. Countersign always sends `{ parse: [] }`: nobody. */
export interface ApiAllowedMentions {
  parse: Array<'users' | 'roles' | 'everyone'>;
}

/** Body of POST /channels/{id}/messages, PATCH of a message, and interaction responses' `data`. */
export interface ApiMessagePayload {
  content: string;
  embeds: ApiEmbed[];
  /** Always present: an edit must send `[]` to remove buttons, omitting the field keeps them. */
  components: ApiActionRow[];
  allowed_mentions: ApiAllowedMentions;
  /**
   * Message flags. Replies set SUPPRESS_EMBEDS: a link in model text is never fetched for a preview
   * (a prompt-injected answer could otherwise leak a secret in the preview request). Create accepts
   * SUPPRESS_EMBEDS and SUPPRESS_NOTIFICATIONS, edit only SUPPRESS_EMBEDS, and an edit replaces the
   * flags, so every edit sends it again.
   */
  flags?: number;
  /** Create only: a value of at most 25 characters; with `enforce_nonce`, a create is made once. */
  nonce?: string;
  enforce_nonce?: boolean;
}

/** Message flag bits (API v10, Message Resource › Message Flags). */
export const MessageFlag = {
  /** Do not include any embeds: hides link previews, and the message's own rich embeds too. */
  suppressEmbeds: 1 << 2,
  /** An interaction reply only its clicker sees. */
  ephemeral: 1 << 6,
} as const;

export const NO_MENTIONS: ApiAllowedMentions = { parse: [] };
