import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { ContentPin } from '../core/work-item.ts';
import type { ReplyTarget } from '../core/reply-target.ts';
import type { OutboundFile } from '../reply/outbound.ts';
import { defineBuiltinTool, type ToolContext, type ToolOutput } from '../agent/tools/tool.ts';
import { PathArg, type WorkspaceAccess, type WorkspaceOf } from '../agent/tools/workspace/access.ts';
import { describeFailure, openRegularFile } from '../agent/tools/workspace/files.ts';
import { INVALID_FOR_CARD, previewWithin } from '../agent/tools/workspace/preview.ts';
import { sniff } from './sniff.ts';
import { secretIn } from './secrets.ts';

const SHARE_FILE = 'share_file';

const ShareArgs = z.object({
  path: PathArg,
  comment: z.string().max(2000).optional().describe('A line posted with the file'),
});
type ShareArgs = z.infer<typeof ShareArgs>;

/**
 * Posts a file into a conversation (the platform's `Outbound.upload`); what it returns is why it
 * could not, when the platform takes no files.
 */
export type FilePoster = (target: ReplyTarget, file: OutboundFile) => Promise<string | undefined>;

/** How much of a text file the card shows. */
const PREVIEW = { lines: 10, chars: 1200 } as const;

/**
 * `share_file(path, comment?)`: a workspace file posted into the conversation as a file — a report,
 * a patch, a chart's data — instead of a wall of text. A disclosure, so the policy's kind `share`:
 * a person approves it on a card that shows the file's name, size, type and first lines.
 */
export function shareFileTool(ws: WorkspaceOf, post: FilePoster, maxBytes: number) {
  return defineBuiltinTool({
    name: SHARE_FILE,
    kind: 'share',
    description:
      'Posts a workspace file into this conversation as a file people can download (a report, a patch, data), instead of pasting it. A person approves it first.',
    version: '1',
    input: ShareArgs,
    approval: 'always',
    risk: 'medium',
    idempotent: false,
    describeForApproval: (raw, ctx) => describeShare(ws(ctx), raw, ctx, maxBytes),
    pinContent: (args, root) => pinSharedFile(args.path, root, maxBytes),
    execute: (args, ctx) => share(ws(ctx), args, ctx, { post, maxBytes }),
  });
}

/** The file's bytes, or why it will not be shared. */
async function readForSharing(ws: WorkspaceAccess, userPath: string, maxBytes: number): Promise<Buffer | ToolOutput> {
  try {
    const { handle, info } = await openRegularFile(await ws.resolve(userPath));
    try {
      if (info.size > maxBytes)
        return {
          content: `The file is ${info.size} bytes; files over ${maxBytes} bytes (MAX_FILE_BYTES) are not shared.`,
          isError: true,
        };
      return await handle.readFile();
    } finally {
      await handle.close();
    }
  } catch (error) {
    return describeFailure(error);
  }
}

async function share(
  ws: WorkspaceAccess,
  { path: userPath, comment }: ShareArgs,
  ctx: ToolContext,
  { post, maxBytes }: { post: FilePoster; maxBytes: number },
): Promise<ToolOutput | string> {
  if (!ctx.reply) return { content: 'This turn has no conversation to share a file into.', isError: true };
  const content = await readForSharing(ws, userPath, maxBytes);
  if (!Buffer.isBuffer(content)) return content;
  const changed = changedSinceCard(content, ctx.approvedContent);
  if (changed) return { content: changed, isError: true };
  const filename = path.basename(userPath);
  const sniffed = await sniff(content, filename);
  const contentType = 'mediaType' in sniffed ? sniffed.mediaType : undefined;
  try {
    const refused = await post(ctx.reply, {
      filename,
      content,
      ...(contentType ? { contentType } : {}),
      ...(comment ? { comment } : {}),
    });
    if (refused) return { content: refused, isError: true };
  } catch (error) {
    return { content: `The file was not shared: ${(error as Error).message}`, isError: true };
  }
  return `Shared ${filename} (${content.length} bytes) in the conversation.`;
}

/** The card: name, size, type, and the first lines of a text file (never of one that holds a secret). */
async function describeShare(ws: WorkspaceAccess, raw: unknown, ctx: ToolContext, maxBytes: number): Promise<string> {
  const parsed = ShareArgs.safeParse(raw);
  if (!parsed.success) return INVALID_FOR_CARD;
  return previewWithin(ctx.signal, async () => {
    const content = await readForSharing(ws, parsed.data.path, maxBytes);
    if (!Buffer.isBuffer(content)) return `Cannot be shared: ${content.content}`;
    const name = path.basename(parsed.data.path);
    const sniffed = await sniff(content, name);
    const type = sniffed.kind === 'text' ? 'text' : sniffed.kind === 'refused' ? 'binary' : sniffed.mediaType;
    const where = await ws.show(await ws.resolve(parsed.data.path));
    const head = `Shares ${where} (${content.length} bytes, ${type}, sha256 ${sha256(content).slice(0, 12)}).`;
    if (sniffed.kind !== 'text') return `${head}\nBinary content, not shown here.`;
    const text = content.toString('utf8');
    const secret = secretIn(text);
    if (secret) return `${head}\nContent not shown: it looks like it holds a secret (${secret}).`;
    const lines = text.split('\n');
    const shown = lines.slice(0, PREVIEW.lines).join('\n').slice(0, PREVIEW.chars);
    const more = lines.length > PREVIEW.lines || shown.length < text.length ? '\n…' : '';
    return `${head}\n\`\`\`\n${shown.replaceAll('```', '`\u200b``')}${more}\n\`\`\``;
  });
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/**
 * The bytes a share would post, read when the call is judged (before its card, and again when an
 * approval resumes): their sha256 and size, which the card's approval is bound to, and the secret
 * they seem to hold, which makes the policy want a countersignature whatever the file is called.
 * `relative` is the real path under the real workspace root; anything else (a path leading out, a
 * link, not a regular file, over MAX_FILE_BYTES) has nothing to pin, and the share itself says why.
 */
function pinSharedFile(
  relative: string,
  root: string,
  maxBytes: number,
): (ContentPin & { secret?: string }) | undefined {
  let fd: number | undefined;
  try {
    const realRoot = realpathSync(root);
    const file = path.resolve(realRoot, relative);
    if (path.isAbsolute(relative) || !file.startsWith(realRoot + path.sep)) return undefined;
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const info = fstatSync(fd);
    if (!info.isFile() || info.size > maxBytes) return undefined;
    const bytes = readFileSync(fd);
    // latin1: a key or token is ASCII, found in a text file or inside binary data alike.
    const secret = secretIn(bytes.toString('latin1'));
    return { sha256: sha256(bytes), size: bytes.length, ...(secret ? { secret } : {}) };
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Why the bytes about to be shared are not the ones an approved card showed, or undefined. */
function changedSinceCard(content: Buffer, shown: ContentPin | undefined): string | undefined {
  if (!shown || (content.length === shown.size && sha256(content) === shown.sha256)) return undefined;
  return `The file changed after its card was approved (the card showed ${shown.size} bytes, sha256 ${shown.sha256.slice(0, 12)}; it is now ${content.length} bytes, sha256 ${sha256(content).slice(0, 12)}). Nothing was shared; ask again to share it as it is now.`;
}
