import { rm, stat } from 'node:fs/promises';
import { z } from 'zod';
import { defineBuiltinTool, type ToolContext, type ToolOutput } from '../tool.ts';
import { PathArg, type WorkspaceAccess, type WorkspaceOf } from './access.ts';
import { describeFailure, readText, requireRegularFile } from './files.ts';
import { INVALID_FOR_CARD, previewWithin } from './preview.ts';

const DeleteArgs = z.object({ path: PathArg });
type DeleteArgs = z.infer<typeof DeleteArgs>;

const DELETE_PREVIEW_LINES = 10;

export function deleteFileTool(ws: WorkspaceOf) {
  return defineBuiltinTool({
    name: 'delete_file',
    kind: 'delete',
    description: 'Deletes a file from the workspace (not a folder). A person approves it first.',
    version: '2',
    input: DeleteArgs,
    approval: 'always',
    risk: 'high',
    idempotent: false,
    describeForApproval: (raw, ctx) => describeDelete(ws(ctx), raw, ctx),
    execute: (args, ctx) => deleteFile(ws(ctx), args),
  });
}

/** The card's preview of a delete: the file's size and its first lines. */
async function describeDelete(ws: WorkspaceAccess, raw: unknown, ctx: ToolContext): Promise<string> {
  const parsed = DeleteArgs.safeParse(raw);
  if (!parsed.success) return INVALID_FOR_CARD;
  const { path: p } = parsed.data;
  return previewWithin(ctx.signal, async () => {
    try {
      const file = await ws.resolve(p);
      const shown = await ws.show(file);
      const info = await stat(file);
      if (info.isDirectory()) return `${shown} is a folder; only files can be deleted.`;
      requireRegularFile(info);
      const text = await readText(file);
      if (typeof text !== 'string') return `Deletes ${shown} (${info.size} bytes, not text).`;
      const lines = text.split('\n');
      if (text.endsWith('\n')) lines.pop();
      const head = lines.slice(0, DELETE_PREVIEW_LINES).join('\n');
      const more = lines.length > DELETE_PREVIEW_LINES ? `\n… (${lines.length - DELETE_PREVIEW_LINES} more lines)` : '';
      return `Deletes ${shown} (${info.size} bytes, ${lines.length} lines). It begins:\n${head}${more}`;
    } catch (error) {
      return describeFailure(error).content;
    }
  });
}

async function deleteFile(ws: WorkspaceAccess, { path: p }: DeleteArgs): Promise<ToolOutput | string> {
  try {
    const file = await ws.resolve(p);
    const info = await stat(file);
    if (info.isDirectory()) return { content: 'That is a folder; only files can be deleted.', isError: true };
    requireRegularFile(info);
    await rm(file);
    return `Deleted ${await ws.show(file)}.`;
  } catch (error) {
    return describeFailure(error);
  }
}
