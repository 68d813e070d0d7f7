import type { Attachment } from '../agent/messages.ts';
import type { FileRef } from '../core/work-item.ts';
import { saveToInbox } from './inbox.ts';
import { safeFileName } from './names.ts';
import { fitImage } from './fit-image.ts';
import { parsePool } from './parse-pool.ts';
import { sniff, type Sniffed } from './sniff.ts';

/** Fetches a received file's bytes (the platform's `Outbound.download`). */
export type Downloader = (file: FileRef, options: { maxBytes: number; signal: AbortSignal }) => Promise<Buffer>;

/**
 * What providers take, and what one message may bring. Images: fitted by fit-image.ts (IMAGE_FIT).
 * PDFs: Anthropic's 100 pages. The total keeps one request under the APIs' 32 MB once base64 has
 * grown it by a third.
 */
export const FILE_LIMITS = {
  filesPerMessage: 10,
  pdfPages: 100,
  attachedBytes: 20 * 1024 * 1024,
  downloadMs: 30_000,
} as const;

export interface IntakeSettings {
  /** The workspace root (AGENT_WORKSPACE_ROOT): files are saved under its `inbox/`. */
  root: string;
  /** MAX_FILE_BYTES. */
  maxBytes: number;
  /** How long one download may take; default FILE_LIMITS.downloadMs. */
  downloadMs?: number;
}

/** The files of one message, turned into model input: a note for the prompt, and images or documents. */
export interface Intake {
  note: string;
  attachments: Attachment[];
  /**
   * The files that were not read, each with why (`"big.zip": it is … bytes; …`): the person is told
   * too, not only the model, which may not mention it (fileReceiver in src/wiring/files.ts).
   */
  unread: string[];
}

/** One file's fate: a line of the note, and what the model is shown. */
interface Received {
  line: string;
  attachment?: Attachment;
  /** Why the file was not read or saved, for the person. */
  unread?: string;
}

/**
 * Downloads, checks and saves the files of a message. Every file gets a line in the note — saved,
 * shown, or why not — and a bad one never stops the others or the turn.
 */
export async function receiveFiles(
  files: readonly FileRef[],
  conversationId: string,
  download: Downloader | undefined,
  settings: IntakeSettings,
): Promise<Intake> {
  const lines: string[] = [];
  const attachments: Attachment[] = [];
  const unread: string[] = [];
  let attached = 0;
  for (const [i, file] of files.entries()) {
    if (i >= FILE_LIMITS.filesPerMessage) {
      const limit = `at most ${FILE_LIMITS.filesPerMessage} per message`;
      lines.push(`- ${files.length - i} more file(s) not read: ${limit}.`);
      unread.push(`${files.length - i} more file(s): ${limit}`);
      break;
    }
    const received = await receiveOne(file, conversationId, download, settings, attached);
    lines.push(received.line);
    if (received.unread) unread.push(received.unread);
    if (received.attachment) {
      attachments.push(received.attachment);
      attached += Buffer.byteLength(received.attachment.data, 'base64');
    }
  }
  return { note: `Files sent with this message:\n${lines.join('\n')}`, attachments, unread };
}

async function receiveOne(
  file: FileRef,
  conversationId: string,
  download: Downloader | undefined,
  settings: IntakeSettings,
  attached: number,
): Promise<Received> {
  const { name, changed } = safeFileName(file.name);
  const shown = `"${name}"${changed ? ' (name made safe)' : ''}`;
  const fetched = await fetchChecked(file, download, settings);
  const notRead = (why: string, what = 'not read'): Received => ({
    line: `- ${shown}: ${what} — ${why}.`,
    unread: `${shown}: ${why}`,
  });
  if (typeof fetched === 'string') return notRead(fetched);
  const sniffed = await sniff(fetched, name);
  if (sniffed.kind === 'refused') return notRead(sniffed.why);
  const saved = await saveToInbox(settings.root, conversationId, name, fetched).catch((e: Error) => e);
  if (saved instanceof Error) return notRead(saved.message, 'not saved');
  const where = `saved as ${saved} (${describe(sniffed)}, ${fetched.length} bytes)`;
  const input = await asModelInput(sniffed, fetched, name, attached);
  if (typeof input === 'string') return { line: `- ${shown}: ${where}; ${input}.` };
  const as = input.attachment.kind === 'image' ? 'an image' : 'a document';
  return { line: `- ${shown}: ${where}; shown to you as ${as}${input.how ?? ''}.`, attachment: input.attachment };
}

/** The file's bytes, or why there are none to read: too large, empty, truncated, unreachable. */
async function fetchChecked(
  file: FileRef,
  download: Downloader | undefined,
  settings: IntakeSettings,
): Promise<Buffer | string> {
  const limit = `the limit is ${settings.maxBytes} bytes (MAX_FILE_BYTES)`;
  if (file.size !== undefined && file.size > settings.maxBytes) return `it is ${file.size} bytes; ${limit}`;
  if (file.size === 0) return 'it is empty';
  if (!download) return 'files sent here cannot be downloaded';
  let bytes: Buffer;
  try {
    const signal = AbortSignal.timeout(settings.downloadMs ?? FILE_LIMITS.downloadMs);
    bytes = await download(file, { maxBytes: settings.maxBytes, signal });
  } catch (error) {
    return `the download failed: ${(error as Error).message}`;
  }
  // The download stops at the limit, so the real size is not known here: say only that it is over.
  if (bytes.length > settings.maxBytes) return `it is over the limit of ${settings.maxBytes} bytes (MAX_FILE_BYTES)`;
  if (bytes.length === 0) return 'it is empty';
  if (file.size !== undefined && bytes.length < file.size)
    return `it is truncated: ${bytes.length} of its ${file.size} bytes arrived`;
  return bytes;
}

function describe(sniffed: Exclude<Sniffed, { kind: 'refused' }>): string {
  return sniffed.kind === 'text' ? 'text' : sniffed.mediaType;
}

/** The attachment the model is shown (with how it was fitted), or what the note says instead. */
async function asModelInput(
  sniffed: Exclude<Sniffed, { kind: 'refused' }>,
  bytes: Buffer,
  name: string,
  attached: number,
): Promise<{ attachment: Attachment; how?: string } | string> {
  if (sniffed.kind === 'text') return 'read it with read_file';
  if (sniffed.kind === 'binary') return 'its content cannot be read as text or shown';
  if (sniffed.kind === 'image') {
    const fitted = await fitImage(bytes, sniffed.mediaType);
    if ('refused' in fitted) return `not shown: ${fitted.refused}`;
    if (attached + fitted.bytes.length > FILE_LIMITS.attachedBytes) return TOO_MUCH;
    const how = fitted.resized && ` (resized from ${fitted.resized.from} to ${fitted.resized.to} pixels)`;
    const data = fitted.bytes.toString('base64');
    return { attachment: { kind: 'image', mediaType: fitted.mediaType, data, name }, ...(how ? { how } : {}) };
  }
  if (attached + bytes.length > FILE_LIMITS.attachedBytes) return TOO_MUCH;
  const parsers = parsePool();
  const counted = await parsers.pages(bytes);
  if (!counted.ok) return `not shown: this PDF ${counted.why}`;
  // Enough pages found to refuse it, whether or not every stream was read.
  if (counted.value.pages > FILE_LIMITS.pdfPages)
    return `not shown: it has ${counted.value.pages} pages, over the ${FILE_LIMITS.pdfPages} a model reads`;
  // Kept for the budgets; a count that is unknown (none found, or a bound reached) is the most a request carries.
  const pages = counted.value.complete && counted.value.pages > 0 ? counted.value.pages : FILE_LIMITS.pdfPages;
  const read = await parsers.text(bytes);
  const text = read.ok ? read.value : undefined;
  const data = await base64InSlices(bytes);
  const attachment: Attachment = { kind: 'document', mediaType: sniffed.mediaType, data, name, pages };
  if (text) attachment.text = text;
  return { attachment, ...(read.ok ? {} : { how: ` without its text, which ${read.why}` }) };
}

/**
 * Base64 of up to MAX_FILE_BYTES, a slice at a time with the event loop let through between
 * slices: 20 MB in one call held the loop for tens of milliseconds, hundreds on a busy machine.
 */
async function base64InSlices(bytes: Buffer): Promise<string> {
  const SLICE = 3 * 1024 * 1024; // a multiple of 3, so the slices' base64 joins without padding between
  const parts: string[] = [];
  for (let at = 0; at < bytes.length; at += SLICE) {
    if (at > 0) await new Promise((resolve) => setImmediate(resolve));
    parts.push(bytes.subarray(at, at + SLICE).toString('base64'));
  }
  return parts.join('');
}

const TOO_MUCH = 'not shown: the message’s other files fill what one request may carry';

/** What the person is told of the files not read (`Intake.unread`), or nothing when all were. */
export function unreadNotice(unread: readonly string[]): string | undefined {
  if (unread.length === 0) return undefined;
  if (unread.length === 1) return `I could not read ${unread[0]}.`;
  return `I could not read these files:\n${unread.map((why) => `- ${why}`).join('\n')}`;
}
