import type { AnyBuiltinTool } from '../tool.ts';
import { workspaceAccess } from './access.ts';
import { deleteFileTool } from './delete-file.ts';
import { listFilesTool, readFileTool } from './read-tools.ts';
import { searchFilesTool } from './search-files.ts';
import { editFileTool, writeFileTool } from './write-tools.ts';

/**
 * The workspace tools, confined to `root`: listing, reading and searching run at once; writing,
 * editing and deleting ask a person first, showing a unified diff (or the file) on the card.
 */
export function createWorkspaceTools(root: string): AnyBuiltinTool[] {
  const ws = workspaceAccess(root);
  return [
    listFilesTool(ws),
    readFileTool(ws),
    searchFilesTool(ws),
    writeFileTool(ws),
    editFileTool(ws),
    deleteFileTool(ws),
  ];
}
