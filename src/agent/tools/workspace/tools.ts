import type { AnyBuiltinTool } from '../tool.ts';
import { workspaceOf, type WorkspaceRoots } from './access.ts';
import { deleteFileTool } from './delete-file.ts';
import { listFilesTool, readFileTool } from './read-tools.ts';
import { searchFilesTool } from './search-files.ts';
import { editFileTool, writeFileTool } from './write-tools.ts';

/**
 * The workspace tools, confined to `root` (or the conversation's own root, `rootOf`): listing, reading and searching run at once; writing,
 * editing and deleting ask a person first, showing a unified diff (or the file) on the card.
 */
export function createWorkspaceTools(root: string, rootOf?: WorkspaceRoots): AnyBuiltinTool[] {
  const ws = workspaceOf(root, rootOf);
  return [
    listFilesTool(ws),
    readFileTool(ws),
    searchFilesTool(ws),
    writeFileTool(ws),
    editFileTool(ws),
    deleteFileTool(ws),
  ];
}
