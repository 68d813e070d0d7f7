import { mkdtempSync, realpathSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import type { AnyTool, ToolOutput } from '../../../../src/agent/tools/tool.ts';
import { createWorkspaceTools } from '../../../../src/agent/tools/workspace/tools.ts';
import { saveToInbox } from '../../../../src/files/inbox.ts';
import { testToolContext } from '../../../helpers/tools.ts';

const DM = 'slack:T1:D0ALICE01';
const GENERAL = 'slack:T1:C0GENERAL';

let root: string;
let tools: Map<string, AnyTool>;

async function run(conversationId: string, name: string, args: Record<string, unknown>): Promise<string> {
  const tool = tools.get(name)!;
  const out: string | ToolOutput = await tool.execute(tool.input.parse(args), testToolContext({ conversationId }));
  return typeof out === 'string' ? out : out.content;
}

beforeEach(() => {
  root = realpathSync(mkdtempSync(path.join(tmpdir(), 'cs-inbox-')));
  tools = new Map(createWorkspaceTools(root).map((t) => [t.name, t]));
});

/** Files people send are saved in the shared workspace: each conversation reaches only its own. */
describe('another conversation’s inbox', () => {
  it('is never read, listed or searched from another conversation, and is from its own', async () => {
    const saved = await saveToInbox(root, DM, 'secrets.log', Buffer.from('db password: hunter2\n'));
    expect(saved).toMatch(/^inbox\/slack_T1_D0ALICE01-[0-9a-f]{8}\/secrets\.log$/);

    expect(await run(DM, 'read_file', { path: saved })).toContain('hunter2');
    expect(await run(GENERAL, 'read_file', { path: saved })).toContain('another conversation');
    expect(await run(GENERAL, 'read_file', { path: `./inbox/../${saved}` })).not.toContain('hunter2');

    const listed = await run(GENERAL, 'list_files', { path: '.', recursive: true });
    expect(listed).not.toContain('secrets.log');
    expect(listed).not.toContain('D0ALICE01');
    expect(await run(DM, 'list_files', { path: '.', recursive: true })).toContain('secrets.log');

    expect(await run(GENERAL, 'search_files', { path: '.', query: 'hunter2' })).not.toContain('hunter2');
    expect(await run(DM, 'search_files', { path: '.', query: 'hunter2' })).toContain('hunter2');
  });

  it('cannot be written into from another conversation', async () => {
    const saved = await saveToInbox(root, DM, 'report.csv', Buffer.from('a,b\n'));
    const answer = await run(GENERAL, 'write_file', { path: saved, content: 'x' });
    expect(answer).toContain('another conversation');
    expect(await run(DM, 'read_file', { path: saved })).toContain('a,b');
  });

  it('is not reached through a link planted elsewhere in the workspace', async () => {
    const saved = await saveToInbox(root, DM, 'secrets.log', Buffer.from('db password: hunter2\n'));
    // A program the general channel ran (its sandbox shows it no inbox but its own) can still make a
    // link whose target names the other inbox: a link is only a path.
    symlinkSync(path.dirname(saved), path.join(root, 'peek'));
    symlinkSync(saved, path.join(root, 'peek.log'));
    for (const p of ['peek/secrets.log', 'peek.log']) {
      const answer = await run(GENERAL, 'read_file', { path: p });
      expect(answer).not.toContain('hunter2');
      expect(answer).toContain('another conversation');
    }
    expect(await run(GENERAL, 'search_files', { path: 'peek', query: 'hunter2' })).not.toContain('hunter2');
    expect(await run(GENERAL, 'write_file', { path: 'peek.log', content: 'x' })).toContain('another conversation');
    expect(await run(DM, 'read_file', { path: saved })).toContain('hunter2');
  });
});
