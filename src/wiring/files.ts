import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { WorkItem } from '../core/work-item.ts';
import type { OutboundRegistry } from '../reply/outbound.ts';
import type { AnyTool } from '../agent/tools/tool.ts';
import { workspaceOf, type WorkspaceRoots } from '../agent/tools/workspace/access.ts';
import { receiveFiles, type Intake } from '../files/intake.ts';
import { shareFileTool, type FilePoster } from '../files/share-file.ts';

type FileConfig = Pick<Config, 'AGENT_WORKSPACE_ROOT' | 'MAX_FILE_BYTES'>;

const workspaceRootOf = (config: FileConfig) => path.resolve(process.cwd(), config.AGENT_WORKSPACE_ROOT);

/** `share_file`, posting through the outbound of the turn's platform (docs/files.md). */
export function fileTools(
  config: FileConfig,
  outbounds: OutboundRegistry,
  codeWork?: { rootOf: WorkspaceRoots },
): AnyTool[] {
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
    const download = outbound.download?.bind(outbound);
    const root = rootOf?.(item.conversationId) ?? workspaceRootOf(config);
    const intake = await receiveFiles(item.input.files ?? [], item.conversationId, download, {
      root,
      maxBytes: config.MAX_FILE_BYTES,
    });
    log.info({ files: item.input.files?.length, shown: intake.attachments.length }, 'received the message’s files');
    return intake;
  };
}
