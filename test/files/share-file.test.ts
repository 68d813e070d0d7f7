import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import type { Script } from '../../src/agent/providers/scripted.ts';
import type { WorkItem } from '../../src/core/work-item.ts';
import { png } from './samples.ts';

const share = (args: Record<string, unknown>) => ({
  rounds: [{ text: 'Sharing it.', toolCalls: [{ name: 'share_file', args }] }, { text: 'Result: {{lastToolResult}}' }],
});

const script: Script = {
  rules: [
    { match: '^share the report', ...share({ path: 'report.csv', comment: 'Q3 numbers' }) },
    { match: '^share the env', ...share({ path: '.env' }) },
    { match: '^share the picture', ...share({ path: 'chart.png' }) },
    { match: '^share the notes', ...share({ path: 'notes.txt' }) },
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
    expect(shown.text).toContain('Shares report.csv (25 bytes, text).');
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
    expect(picture).toContain(`Shares chart.png (${png().length} bytes, image/png).`);
    expect(picture).toContain('Binary content, not shown here.');
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
