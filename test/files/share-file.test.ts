import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import pino from 'pino';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import type { Script } from '../../src/agent/providers/scripted.ts';
import type { WorkItem } from '../../src/core/work-item.ts';
import { png } from './samples.ts';
import { shareFileTool } from '../../src/files/share-file.ts';
import { workspaceOf } from '../../src/agent/tools/workspace/access.ts';

const sha256 = (text: string | Buffer) => createHash('sha256').update(text).digest('hex');

const share = (args: Record<string, unknown>) => ({
  rounds: [{ text: 'Sharing it.', toolCalls: [{ name: 'share_file', args }] }, { text: 'Result: {{lastToolResult}}' }],
});

const script: Script = {
  rules: [
    { match: '^share the report', ...share({ path: 'report.csv', comment: 'Q3 numbers' }) },
    { match: '^share the env', ...share({ path: '.env' }) },
    { match: '^share the picture', ...share({ path: 'chart.png' }) },
    { match: '^share the notes', ...share({ path: 'notes.txt' }) },
    { match: '^share the draft', ...share({ path: 'draft.csv' }) },
    {
      // One round: a file written and shared on the same card, so the share's file is missing when it is judged.
      match: '^write and share',
      rounds: [
        {
          text: 'Writing and sharing it.',
          toolCalls: [
            {
              name: 'write_file',
              args: { path: 'leak.txt', content: 'OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz\n' },
            },
            { name: 'share_file', args: { path: 'leak.txt' } },
          ],
        },
        { text: 'Result: {{lastToolResult}}' },
      ],
    },
    { rounds: [{ text: 'ok' }] },
  ],
};

const alice = { platform: 'test', userId: 'U1' }; // the requester in every harness turn
const bob = { platform: 'test', userId: 'U2' }; // listed in APPROVERS

describe('share_file', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ script, env: { APPROVERS: 'test:U2' } });
    const root = h.config.AGENT_WORKSPACE_ROOT;
    writeFileSync(path.join(root, 'report.csv'), 'region,revenue\nnorth,120\n');
    writeFileSync(path.join(root, '.env'), 'API_TOKEN=hunter2\n');
    writeFileSync(path.join(root, 'chart.png'), png());
    writeFileSync(path.join(root, 'notes.txt'), 'line one\nOPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz\n');
  });
  afterAll(() => h.stop());

  async function card(item: WorkItem) {
    expect((await h.settled(item.id)).status).toBe('awaiting_approval');
    const envelope = await waitFor(
      async () =>
        (
          await h.app.pool.query(
            `SELECT card_message_id FROM countersign.approval_envelopes WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
            [item.id],
          )
        ).rows[0] as { card_message_id: string } | undefined,
      10_000,
      'the approval card',
    );
    return h.outbound.messages.get(envelope.card_message_id)!;
  }

  const press = async (item: WorkItem, label: string, by = alice) => {
    const shown = await card(item);
    const button = shown.buttons!.find((b) => b.label === label)!;
    return h.app.approvals.click(button.value, by);
  };

  it('asks first, showing the file’s name, size, type and first lines, then posts it into the thread', async () => {
    const item = await h.say('share-ok', 'share the report', {
      reply: { platform: 'test', channel: 'C1', thread: 'T9' },
    });
    const shown = await card(item);
    const report = 'region,revenue\nnorth,120\n';
    expect(shown.text).toContain(`Shares report.csv (25 bytes, text, sha256 ${sha256(report).slice(0, 12)}).`);
    expect(shown.text).toContain('north,120');
    const result = await press(item, 'Approve');
    if (!result.ok || !('continuation' in result)) throw new Error('expected a continuation');
    expect((await h.settled(result.continuation.id)).result?.text).toBe(
      'Result: Shared report.csv (25 bytes) in the conversation.',
    );
    expect(h.outbound.uploads).toHaveLength(1);
    expect(h.outbound.uploads[0]).toMatchObject({
      filename: 'report.csv',
      comment: 'Q3 numbers',
      channel: 'C1',
      thread: 'T9',
    });
    expect(h.outbound.uploads[0]!.content.toString()).toBe('region,revenue\nnorth,120\n');
  });

  it('uploads nothing when the share is denied', async () => {
    const before = h.outbound.uploads.length;
    const item = await h.say('share-denied', 'share the report');
    const result = await press(item, 'Deny');
    if (!result.ok || !('continuation' in result)) throw new Error('expected a continuation');
    await h.settled(result.continuation.id);
    expect(h.outbound.uploads).toHaveLength(before);
  });

  it('needs a second person for a file that looks like a secret, and never shows its content', async () => {
    const before = h.outbound.uploads.length;
    const item = await h.say('share-secret', 'share the env');
    const shown = await card(item);
    expect(shown.text).not.toContain('hunter2');
    expect(shown.buttons?.map((b) => b.label)).not.toContain('Always allow here');
    const own = await press(item, 'Approve', alice);
    expect(own.ok).toBe(false);
    expect(h.outbound.uploads).toHaveLength(before);
    const signed = await press(item, 'Approve', bob);
    if (!signed.ok || !('continuation' in signed)) throw new Error('expected a continuation');
    await h.settled(signed.continuation.id);
    expect(h.outbound.uploads.at(-1)?.filename).toBe('.env');
  });

  it('shows no lines of a file whose content holds a key, and says binary for a picture', async () => {
    expect((await card(await h.say('share-notes', 'share the notes'))).text).toContain(
      'Content not shown: it looks like it holds a secret (an API key).',
    );
    const picture = (await card(await h.say('share-png', 'share the picture'))).text;
    expect(picture).toContain(
      `Shares chart.png (${png().length} bytes, image/png, sha256 ${sha256(png()).slice(0, 12)}).`,
    );
    expect(picture).toContain('Binary content, not shown here.');
  });

  it('binds the card to the bytes it showed: a file changed before the click is refused, nothing uploaded', async () => {
    const draft = path.join(h.config.AGENT_WORKSPACE_ROOT, 'draft.csv');
    writeFileSync(draft, 'total,10\n');
    const before = h.outbound.uploads.length;
    const item = await h.say('share-changed', 'share the draft');
    expect((await card(item)).text).toContain(`sha256 ${sha256('total,10\n').slice(0, 12)}`);
    const stored = await h.app.pool.query<{ calls: string }>(
      `SELECT calls FROM countersign.approval_envelopes WHERE work_item_id = $1`,
      [item.id],
    );
    expect(JSON.parse(stored.rows[0]!.calls)[0].policy.content).toEqual({ sha256: sha256('total,10\n'), size: 9 });
    // Someone (or the model, in another turn) swaps the content once the card is up.
    writeFileSync(draft, 'AWS_SECRET_ACCESS_KEY=abc\n');
    const result = await press(item, 'Approve');
    if (!result.ok || !('continuation' in result)) throw new Error('expected a continuation');
    const text = (await h.settled(result.continuation.id)).result?.text ?? '';
    expect(text).toContain('the file changed after the card was shown (the card showed 9 bytes, sha256');
    expect(h.outbound.uploads).toHaveLength(before);
  });

  it('asks a second person for a file whose content holds a key, whatever its name; its requester cannot approve it', async () => {
    const before = h.outbound.uploads.length;
    const item = await h.say('share-key-content', 'share the notes');
    const shown = await card(item);
    expect(shown.text).toContain('its content looks like it holds an API key');
    expect(shown.buttons?.map((b) => b.label)).not.toContain('Always allow here');
    expect((await press(item, 'Approve', alice)).ok).toBe(false);
    expect(h.outbound.uploads).toHaveLength(before);
    const signed = await press(item, 'Approve', bob);
    if (!signed.ok || !('continuation' in signed)) throw new Error('expected a continuation');
    await h.settled(signed.continuation.id);
    expect(h.outbound.uploads.at(-1)?.filename).toBe('notes.txt');
  });

  it('shares nothing on an approval whose card found no file to show: bytes written later are not what was approved', async () => {
    const before = h.outbound.uploads.length;
    const item = await h.say('share-unpinned', 'write and share');
    const shown = await card(item);
    expect(shown.text).toContain('Cannot be shared');
    // The requester approves their own card (write and share are both theirs to approve)...
    const result = await press(item, 'Approve all');
    if (!result.ok || !('continuation' in result)) throw new Error('expected a continuation');
    const text = (await h.settled(result.continuation.id)).result?.text ?? '';
    // ...but the file the write created holds a key: sharing it would have needed a second person.
    expect(h.outbound.uploads.slice(before).map((u) => u.content.toString())).toEqual([]);
    expect(text).toContain('no file to show');
  });

  it('refuses at run time bytes other than those approved, posting nothing', async () => {
    const posted: string[] = [];
    const tool = shareFileTool(
      workspaceOf(h.config.AGENT_WORKSPACE_ROOT),
      async (_target, file) => {
        posted.push(file.filename);
        return undefined;
      },
      1024 * 1024,
    );
    const run = (sha: string) =>
      tool.execute(
        { path: 'report.csv' },
        {
          workItemId: 'w',
          conversationId: 'c',
          requester: alice,
          reply: { platform: 'test', channel: 'C1' },
          approvedContent: { sha256: sha, size: 25 },
          signal: new AbortController().signal,
          log: pino({ level: 'silent' }),
        },
      );
    expect(await run('0'.repeat(64))).toMatchObject({
      isError: true,
      content: expect.stringContaining('The file changed after its card was approved') as string,
    });
    expect(posted).toEqual([]);
    expect(await run(sha256('region,revenue\nnorth,120\n'))).toBe('Shared report.csv (25 bytes) in the conversation.');
    expect(posted).toEqual(['report.csv']);
  });

  it('says a shared image’s type, read from its bytes, so the platform shows it as one', async () => {
    const item = await h.say('share-png-type', 'share the picture');
    await card(item);
    const result = await press(item, 'Approve');
    if (!result.ok || !('continuation' in result)) throw new Error('expected a continuation');
    await h.settled(result.continuation.id);
    expect(h.outbound.uploads.at(-1)).toMatchObject({ filename: 'chart.png', contentType: 'image/png' });
    expect(h.outbound.uploads.find((u) => u.filename === 'report.csv')?.contentType).toBeUndefined();
  });
});
