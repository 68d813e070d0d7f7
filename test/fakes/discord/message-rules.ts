/**
 * What Discord checks on a message body before accepting it. The numbers are Discord's
 * documented limits, written out here on purpose rather than imported from the adapter's LIMITS
 * table: the fake is the independent witness that the adapter's table is right.
 */
import { z } from 'zod';
import { badLength, emptyMessage, invalidFormBody, maxLength, required, type FieldProblem } from './api-errors.ts';

const CONTENT_MAX = 2000;
const ROWS_MAX = 5;
const ROW_COMPONENTS_MAX = 5;
const CUSTOM_ID_MAX = 100;
const LABEL_MAX = 80;
/** Button Object: a link button's `url`, which only link buttons (style 5) have, and they must. */
const LINK_URL_MAX = 512;
const EMBEDS_MAX = 10;
const EMBED_TITLE_MAX = 256;
const EMBED_DESCRIPTION_MAX = 4096;
const EMBED_FIELDS_MAX = 25;
const FIELD_NAME_MAX = 256;
const FIELD_VALUE_MAX = 1024;
const FOOTER_MAX = 2048;
const EMBED_TOTAL_MAX = 6000;

/** Message flag bits a request may set, per endpoint (API v10: Create Message, Edit Message, interaction responses). */
const SUPPRESS_EMBEDS = 1 << 2;
const EPHEMERAL = 1 << 6;
const SUPPRESS_NOTIFICATIONS = 1 << 12;
const IS_VOICE_MESSAGE = 1 << 13;
const IS_COMPONENTS_V2 = 1 << 15;
export const SETTABLE_FLAGS = {
  /** POST /channels/{id}/messages. */
  create: SUPPRESS_EMBEDS | SUPPRESS_NOTIFICATIONS | IS_VOICE_MESSAGE | IS_COMPONENTS_V2,
  /** PATCH of a message (channel or webhook): only SUPPRESS_EMBEDS can be set or unset. */
  edit: SUPPRESS_EMBEDS | IS_COMPONENTS_V2,
  /** Interaction responses and follow-ups. */
  interaction: EPHEMERAL | SUPPRESS_EMBEDS | SUPPRESS_NOTIFICATIONS | IS_VOICE_MESSAGE | IS_COMPONENTS_V2,
} as const;

const Component = z.looseObject({
  type: z.number().int(),
  custom_id: z.string().optional(),
  label: z.string().optional(),
  style: z.number().int().optional(),
  url: z.string().optional(),
  disabled: z.boolean().optional(),
});
const ActionRow = z.looseObject({ type: z.number().int(), components: z.array(Component).optional() });
const EmbedField = z.looseObject({ name: z.string(), value: z.string(), inline: z.boolean().optional() });
const Embed = z.looseObject({
  title: z.string().optional(),
  description: z.string().optional(),
  fields: z.array(EmbedField).optional(),
  footer: z.looseObject({ text: z.string() }).optional(),
  author: z.looseObject({ name: z.string() }).optional(),
});

export const AllowedMentions = z.looseObject({
  parse: z.array(z.enum(['users', 'roles', 'everyone'])).optional(),
  users: z.array(z.string()).optional(),
  roles: z.array(z.string()).optional(),
  replied_user: z.boolean().optional(),
});
export type AllowedMentions = z.infer<typeof AllowedMentions>;

/** The message fields of POST/PATCH message bodies, interaction responses and webhook executes. */
export const MessageBody = z.looseObject({
  content: z.string().nullish(),
  embeds: z.array(Embed).nullish(),
  components: z.array(ActionRow).nullish(),
  allowed_mentions: AllowedMentions.nullish(),
  flags: z.number().int().nullish(),
  tts: z.boolean().optional(),
  // "Can be used to verify a message was sent (up to 25 characters)" (Create Message).
  nonce: z.union([z.string().max(25), z.number().int()]).optional(),
  enforce_nonce: z.boolean().optional(),
  message_reference: z
    .looseObject({
      message_id: z.string(),
      channel_id: z.string().optional(),
      fail_if_not_exists: z.boolean().optional(),
    })
    .optional(),
  attachments: z.array(z.unknown()).optional(),
  sticker_ids: z.array(z.string()).optional(),
});
export type MessageBody = z.infer<typeof MessageBody>;

/** Parses a body and applies Discord's limits; throws the ApiError Discord would answer with. */
export function checkMessageBody(
  raw: unknown,
  options: { requireSomething: boolean; settableFlags?: number },
): MessageBody {
  const parsed = MessageBody.safeParse(raw ?? {});
  if (!parsed.success) {
    throw invalidFormBody(
      parsed.error.issues.map((i) => ({
        path: i.path.map((p) => (typeof p === 'symbol' ? String(p) : p)),
        code: 'MODEL_TYPE_CONVERT',
        message: i.message,
      })),
    );
  }
  const body = parsed.data;
  const problems: FieldProblem[] = [];
  if (body.content != null && body.content.length > CONTENT_MAX) problems.push(maxLength(['content'], CONTENT_MAX));
  if (body.flags != null && options.settableFlags !== undefined && (body.flags & ~options.settableFlags) !== 0) {
    problems.push({ path: ['flags'], code: 'MESSAGE_FLAGS_INVALID', message: 'Invalid message flags' });
  }
  if (body.components) checkComponents(body.components, problems);
  if (body.embeds) checkEmbeds(body.embeds, problems);
  if (problems.length) throw invalidFormBody(problems);
  const hasSomething =
    !!body.content ||
    !!body.embeds?.length ||
    !!body.components?.length ||
    !!body.attachments?.length ||
    !!body.sticker_ids?.length;
  if (options.requireSomething && !hasSomething) throw emptyMessage();
  return body;
}

function checkComponents(rows: Array<z.infer<typeof ActionRow>>, problems: FieldProblem[]): void {
  if (rows.length > ROWS_MAX) problems.push(badLength(['components'], 0, ROWS_MAX));
  rows.forEach((row, r) => {
    const children = row.components ?? [];
    if (row.type === 1 && (children.length < 1 || children.length > ROW_COMPONENTS_MAX)) {
      problems.push(badLength(['components', r, 'components'], 1, ROW_COMPONENTS_MAX));
    }
    children.forEach((c, i) => {
      const at = ['components', r, 'components', i];
      if (c.type === 2 && c.style !== 5 && !c.custom_id) problems.push(required([...at, 'custom_id']));
      if (c.custom_id && c.custom_id.length > CUSTOM_ID_MAX)
        problems.push(maxLength([...at, 'custom_id'], CUSTOM_ID_MAX));
      if (c.label && c.label.length > LABEL_MAX) problems.push(maxLength([...at, 'label'], LABEL_MAX));
      if (c.type === 2 && c.style === 5 && (!c.url || c.custom_id)) problems.push(required([...at, 'url']));
      if (c.url && c.url.length > LINK_URL_MAX) problems.push(maxLength([...at, 'url'], LINK_URL_MAX));
    });
  });
}

function checkEmbeds(embeds: Array<z.infer<typeof Embed>>, problems: FieldProblem[]): void {
  if (embeds.length > EMBEDS_MAX) problems.push(maxLength(['embeds'], EMBEDS_MAX));
  let total = 0;
  embeds.forEach((e, n) => {
    const at = ['embeds', n];
    if (e.title && e.title.length > EMBED_TITLE_MAX) problems.push(maxLength([...at, 'title'], EMBED_TITLE_MAX));
    if (e.description && e.description.length > EMBED_DESCRIPTION_MAX)
      problems.push(maxLength([...at, 'description'], EMBED_DESCRIPTION_MAX));
    if (e.footer && e.footer.text.length > FOOTER_MAX) problems.push(maxLength([...at, 'footer', 'text'], FOOTER_MAX));
    const fields = e.fields ?? [];
    if (fields.length > EMBED_FIELDS_MAX) problems.push(maxLength([...at, 'fields'], EMBED_FIELDS_MAX));
    fields.forEach((f, i) => {
      if (f.name.length > FIELD_NAME_MAX) problems.push(maxLength([...at, 'fields', i, 'name'], FIELD_NAME_MAX));
      if (f.value.length > FIELD_VALUE_MAX) problems.push(maxLength([...at, 'fields', i, 'value'], FIELD_VALUE_MAX));
      total += f.name.length + f.value.length;
    });
    total +=
      (e.title?.length ?? 0) +
      (e.description?.length ?? 0) +
      (e.footer?.text.length ?? 0) +
      (e.author?.name.length ?? 0);
  });
  if (total > EMBED_TOTAL_MAX) {
    problems.push({
      path: ['embeds'],
      code: 'MAX_EMBED_SIZE_EXCEEDED',
      message: `Embed size exceeds maximum size of ${EMBED_TOTAL_MAX}`,
    });
  }
}
