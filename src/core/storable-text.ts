/**
 * Text Postgres will store, whatever bytes it came from (issue #47 §6). Postgres refuses NUL in
 * `text` ("invalid byte sequence") and `\u0000` in `jsonb` ("unsupported Unicode escape
 * sequence"), and jsonb refuses an unpaired surrogate escape too; a command's output, a file or an
 * MCP server's answer can hold either, and one such string used to fail the whole turn. Each is
 * replaced with U+FFFD, as a decoder replaces bytes that are not UTF-8, so the text stays readable
 * and the replacement is visible where it happened.
 */

/** A NUL, or a surrogate half without its other half. */
const UNSTORABLE = /\0|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const UNSTORABLE_TEST = /[\0\ud800-\udfff]/;

const REPLACEMENT_CHARACTER = '\ufffd';

export interface StorableText {
  text: string;
  /** NUL characters replaced. */
  nuls: number;
  /** Unpaired surrogates (JavaScript strings holding no valid Unicode) replaced. */
  unpaired: number;
}

/** `text` with every NUL and unpaired surrogate replaced with U+FFFD, and how many of each. */
export function storableText(text: string): StorableText {
  // Most text holds neither; a surrogate pair (an emoji) passes the quick test and is then kept.
  if (!UNSTORABLE_TEST.test(text)) return { text, nuls: 0, unpaired: 0 };
  let nuls = 0;
  let unpaired = 0;
  const replaced = text.replace(UNSTORABLE, (found) => {
    if (found === '\0') nuls++;
    else unpaired++;
    return REPLACEMENT_CHARACTER;
  });
  return { text: replaced, nuls, unpaired };
}

/**
 * `text` made storable, with a line saying what was replaced when anything was: "[2 NUL bytes
 * replaced with U+FFFD]". For what a reader (the model, a person) should know was altered: a tool's
 * result, so the model does not take U+FFFD for what the program printed.
 */
export function storableTextMarked(text: string): string {
  const clean = storableText(text);
  const parts = [
    ...(clean.nuls ? [`${clean.nuls} NUL ${clean.nuls === 1 ? 'byte' : 'bytes'}`] : []),
    ...(clean.unpaired ? [`${clean.unpaired} unpaired ${clean.unpaired === 1 ? 'surrogate' : 'surrogates'}`] : []),
  ];
  if (parts.length === 0) return clean.text;
  const separator = clean.text.endsWith('\n') ? '' : '\n';
  return `${clean.text}${separator}[${parts.join(' and ')} replaced with U+FFFD]`;
}

/**
 * The JSON text of `value` for a `jsonb` (or `json`) parameter, with every string in it — keys too
 * — made storable. Use it instead of `JSON.stringify` wherever a value that may hold outside text
 * goes to Postgres.
 */
export function toJsonb(value: unknown): string {
  const json = JSON.stringify(value);
  // Of what JSON.stringify writes, Postgres refuses only the escapes of NUL (\u0000) and unpaired
  // surrogates (\udXXX): JSON without either is stored as it is, for one scan (a replacer doubles
  // the cost of a large checkpoint).
  return json === undefined || !ESCAPED_UNSTORABLE.test(json) ? json : JSON.stringify(value, storableJsonValue);
}

/** What JSON.stringify writes for a NUL or an unpaired surrogate (also matched after `\\`: only slower). */
const ESCAPED_UNSTORABLE = /\\u(?:0000|d[89a-f])/;

function storableJsonValue(this: unknown, _key: string, value: unknown): unknown {
  if (typeof value === 'string') return storableText(value).text;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const keys = Object.keys(value);
  if (!keys.some((key) => UNSTORABLE_TEST.test(key))) return value;
  // Two keys that differ only in what is replaced collapse into one: the later wins, as in JSON.parse.
  return Object.fromEntries(
    keys.map((key) => [storableText(key).text, (value as Record<string, unknown>)[key]] as const),
  );
}

/**
 * A query parameter made storable: a string loses its NULs (Postgres refuses them in any text,
 * and a raw NUL is never valid JSON either, so no other meaning is changed); anything else is
 * passed on as is. Unpaired surrogates in plain text need nothing: the driver's UTF-8 encoding
 * already turns them into U+FFFD.
 */
export function storableParameter(value: unknown): unknown {
  return typeof value === 'string' && value.includes('\0') ? value.replaceAll('\0', REPLACEMENT_CHARACTER) : value;
}
