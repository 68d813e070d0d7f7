import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { FileRef, WorkItem } from '../core/work-item.ts';
import type { Outbound, OutboundRegistry } from '../reply/outbound.ts';
import type { AnyBuiltinTool } from '../agent/tools/tool.ts';
import { workspaceOf, type WorkspaceRoots } from '../agent/tools/workspace/access.ts';
import { receiveFiles, unreadNotice, type Intake } from '../files/intake.ts';
import { shareFileTool, type FilePoster } from '../files/share-file.ts';
import { saveToInbox } from '../files/inbox.ts';
import { safeFileName } from '../files/names.ts';
import type { ToolCall } from '../agent/messages.ts';

type FileConfig = Pick<Config, 'AGENT_WORKSPACE_ROOT' | 'MAX_FILE_BYTES'>;

const workspaceRootOf = (config: FileConfig) => path.resolve(process.cwd(), config.AGENT_WORKSPACE_ROOT);

/** `share_file`, posting through the outbound of the turn's platform (docs/files.md). */
export function fileTools(
  config: FileConfig,
  outbounds: OutboundRegistry,
  codeWork?: { rootOf: WorkspaceRoots },
): AnyBuiltinTool[] {
  const post: FilePoster = async (target, file) => {
    const outbound = outbounds.for(target);
    if (!outbound.upload) return `Files cannot be shared on ${target.platform}; put the content in the answer instead.`;
    await outbound.upload(target, file);
    return undefined;
  };
  return [shareFileTool(workspaceOf(workspaceRootOf(config), codeWork?.rootOf), post, config.MAX_FILE_BYTES)];
}

/** The worker's hook for the files of a message: downloaded through its platform's outbound, saved in the conversation's workspace. */
export function fileReceiver(
  config: FileConfig,
  outbounds: OutboundRegistry,
  rootOf?: WorkspaceRoots,
): (item: WorkItem, log: Logger) => Promise<Intake> {
  return async (item, log) => {
    const outbound = outbounds.for(item.reply);
    const found = await filesOf(item, outbound, log);
    if (typeof found === 'string') return { note: found, attachments: [], unread: [] };
    if (found.length === 0) return { note: '', attachments: [], unread: [] };
    const download = outbound.download?.bind(outbound);
    const root = rootOf?.(item.conversationId) ?? workspaceRootOf(config);
    const intake = await receiveFiles(found, item.conversationId, download, {
      root,
      maxBytes: config.MAX_FILE_BYTES,
    });
    log.info({ files: found.length, shown: intake.attachments.length }, 'received the message’s files');
    // The model's answer may not mention a file it never saw: the person hears of it here, at once.
    const notice = unreadNotice(intake.unread);
    if (notice)
      await outbound
        .post(item.reply, notice)
        .catch((error: unknown) => log.warn({ err: error }, 'could not tell the person of the files not read'));
    return intake;
  };
}

/**
 * The message's files: those its event carried, or those read from the platform for an event that
 * carries none (Slack's app_mention). A read that fails is a line for the prompt, and the text is
 * answered all the same.
 */
async function filesOf(item: WorkItem, outbound: Outbound, log: Logger): Promise<FileRef[] | string> {
  const carried = item.input.files ?? [];
  const messageId = item.input.filesOfMessage;
  if (carried.length || !messageId || !outbound.messageFiles) return carried;
  try {
    return await outbound.messageFiles(item.reply, messageId);
  } catch (error) {
    log.warn({ err: error }, 'could not read the message for its files');
    return `Files sent with this message: they could not be looked up (${(error as Error).message}); if the person sent any, ask them to share them again in the thread.`;
  }
}

/**
 * The worker's hook for a tool result too long for the model: kept whole in the conversation's own
 * inbox folder (never readable from another conversation), as `<tool>-result-<call>.txt`, where
 * read_file reads parts of it and share_file posts it.
 */
export function toolOutputKeeper(
  config: FileConfig,
  rootOf?: WorkspaceRoots,
): (item: WorkItem, call: ToolCall, text: string) => Promise<string> {
  return async (item, call, text) => {
    const root = rootOf?.(item.conversationId) ?? workspaceRootOf(config);
    const { name } = safeFileName(`${call.name}-result-${call.id.slice(-12)}.txt`);
    return saveToInbox(root, item.conversationId, name, Buffer.from(text, 'utf8'));
  };
}
