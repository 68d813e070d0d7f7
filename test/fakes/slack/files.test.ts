/**
 * The fake Slack's external file upload (files.getUploadURLExternal → POST the bytes → files.
 * completeUploadExternal) refuses what Slack would: a wrong length, an id used twice or never
 * uploaded, a channel the app is not in, a token without files:write. The real SDK's own uploader
 * (files.uploadV2, a multipart POST) goes through it unchanged.
 */
import { WebClient } from '@slack/web-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from './fake-slack.ts';

describe('the fake Slack’s external file uploads', () => {
  let fake: FakeSlack;
  let api: (method: string, args: Record<string, unknown>) => Promise<Record<string, unknown>>;

  beforeAll(async () => {
    fake = await FakeSlack.start({ scopes: ['chat:write', 'files:write'] });
    api = async (method, args) => {
      const answer = await fetch(`${fake.apiUrl}${method}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${fake.botToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(args),
      });
      return (await answer.json()) as Record<string, unknown>;
    };
  });
  afterAll(async () => {
    await fake.close();
  });

  async function ticket(filename: string, length: number): Promise<{ upload_url: string; file_id: string }> {
    const got = await api('files.getUploadURLExternal', { filename, length });
    expect(got.ok).toBe(true);
    return got as unknown as { upload_url: string; file_id: string };
  }
  const put = (url: string, bytes: Buffer) => fetch(url, { method: 'POST', body: new Uint8Array(bytes) });

  it('needs a filename and a length', async () => {
    expect(await api('files.getUploadURLExternal', { filename: 'a.txt' })).toMatchObject({
      ok: false,
      error: 'invalid_arguments',
    });
    expect(await api('files.getUploadURLExternal', { length: 3 })).toMatchObject({ ok: false });
  });

  it('takes exactly the declared bytes once, and shares the file once', async () => {
    const { upload_url, file_id } = await ticket('a.txt', 3);
    const short = await put(upload_url, Buffer.from('ab'));
    expect(short.status).toBe(400);
    expect(await short.text()).toMatch(/length_mismatch/);
    const done = await put(upload_url, Buffer.from('abc'));
    expect(done.status).toBe(200);
    expect(await done.text()).toBe('OK - 3');
    expect((await put(upload_url, Buffer.from('abc'))).status).toBe(400);
    const shared = await api('files.completeUploadExternal', {
      files: [{ id: file_id, title: 'A' }],
      channel_id: 'C0FILES001',
      initial_comment: 'here',
    });
    expect(shared).toMatchObject({ ok: true, files: [{ id: file_id, title: 'A', size: 3 }] });
    expect(fake.uploads.at(-1)).toMatchObject({ id: file_id, channel: 'C0FILES001', initial_comment: 'here' });
    expect(fake.textIn('C0FILES001')).toContain('here');
    expect(await api('files.completeUploadExternal', { files: [{ id: file_id }], channel_id: 'C0FILES001' })).toEqual({
      ok: false,
      error: 'file_not_found',
    });
    // The URL is spent once the file is shared.
    expect((await put(upload_url, Buffer.from('abc'))).status).toBe(404);
  });

  it('refuses to complete a file whose bytes never came, or an id it never gave', async () => {
    const { file_id } = await ticket('b.txt', 1);
    for (const id of [file_id, 'F0NOSUCH001']) {
      expect(await api('files.completeUploadExternal', { files: [{ id }], channel_id: 'C0FILES001' })).toMatchObject({
        ok: false,
        error: 'file_not_found',
      });
    }
  });

  it('shares only where the app is a member of an existing channel', async () => {
    const { upload_url, file_id } = await ticket('c.txt', 1);
    await put(upload_url, Buffer.from('c'));
    fake.world.botNotIn.add('C0NOTMINE1');
    const complete = (channel: string) =>
      api('files.completeUploadExternal', { files: [{ id: file_id }], channel_id: channel });
    expect(await complete('C0NOTMINE1')).toMatchObject({ ok: false, error: 'not_in_channel' });
    expect(await complete('not-a-channel')).toMatchObject({ ok: false, error: 'channel_not_found' });
    // Refusals spend nothing: the file can still be shared where the app is.
    expect(await complete('C0FILES001')).toMatchObject({ ok: true });
  });

  it('answers missing_scope to a token without files:write', async () => {
    const narrow = await FakeSlack.start({ scopes: ['chat:write'] });
    try {
      const answer = await fetch(`${narrow.apiUrl}files.getUploadURLExternal`, {
        method: 'POST',
        headers: { authorization: `Bearer ${narrow.botToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ filename: 'a.txt', length: 1 }),
      });
      expect(await answer.json()).toEqual({
        ok: false,
        error: 'missing_scope',
        needed: 'files:write',
        provided: 'chat:write',
      });
    } finally {
      await narrow.close();
    }
  });

  it('serves the SDK’s own files.uploadV2 (form arguments, a multipart upload) into a thread', async () => {
    const client = new WebClient(fake.botToken, { slackApiUrl: fake.apiUrl, retryConfig: { retries: 0 } });
    const content = Buffer.from('diff --git a/x b/x\n+hello\n');
    await client.files.uploadV2({
      channel_id: 'C0FILES001',
      thread_ts: '1700000000.000100',
      file: content,
      filename: 'x.diff',
      initial_comment: 'the diff',
    });
    const shared = fake.uploads.at(-1)!;
    expect(shared).toMatchObject({ filename: 'x.diff', thread_ts: '1700000000.000100', initial_comment: 'the diff' });
    expect(shared.bytes.equals(content)).toBe(true);
  });
});
