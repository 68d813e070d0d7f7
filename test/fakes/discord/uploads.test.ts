/**
 * The fake Discord's file uploads (API v10 "Uploading Files"): POST /channels/{id}/messages as
 * multipart/form-data with `payload_json` and `files[n]`, refused as Discord would — over 10 MiB
 * (413, 40005), an attachment naming no part, a name that is no file name, a channel the bot
 * cannot see (403, 50001) — and files sent to a route the fake does not read them on, said so.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord } from './index.ts';

describe('the fake Discord’s file uploads', () => {
  let fake: FakeDiscord;

  beforeAll(async () => {
    fake = await FakeDiscord.start();
  });
  afterAll(async () => {
    await fake.close();
  });

  function send(
    channel: string,
    payload: Record<string, unknown>,
    files: Array<{ field?: string; name: string; bytes: Buffer }>,
    method = 'POST',
    path = `/channels/${channel}/messages`,
  ): Promise<Response> {
    const form = new FormData();
    form.append('payload_json', JSON.stringify(payload));
    files.forEach((f, i) => form.append(f.field ?? `files[${i}]`, new Blob([new Uint8Array(f.bytes)]), f.name));
    return fetch(`${fake.restUrl}/v10${path}`, { method, headers: { authorization: `Bot ${fake.token}` }, body: form });
  }

  it('stores a message with its attachment and every byte of it', async () => {
    const bytes = Buffer.from([0, 1, 2, 255, 254, 10, 13]);
    const answer = await send(
      fake.scene.channelId,
      { content: 'a file', attachments: [{ id: 0, filename: 'shown.bin' }] },
      [{ name: 'sent.bin', bytes }],
    );
    expect(answer.status).toBe(200);
    const message = (await answer.json()) as { id: string; attachments: Array<Record<string, unknown>> };
    expect(message.attachments).toEqual([expect.objectContaining({ filename: 'shown.bin', size: bytes.length })]);
    const upload = fake.uploads.at(-1)!;
    expect(upload).toMatchObject({ messageId: message.id, channelId: fake.scene.channelId, filename: 'shown.bin' });
    expect(upload.bytes.equals(bytes)).toBe(true);
  });

  it('takes a file with no text as a message', async () => {
    const answer = await send(fake.scene.channelId, {}, [{ name: 'only.txt', bytes: Buffer.from('x') }]);
    expect(answer.status).toBe(200);
  });

  it('answers 413 Request entity too large (40005) past 10 MiB', async () => {
    const answer = await send(fake.scene.channelId, { content: 'big' }, [
      { name: 'big.bin', bytes: Buffer.alloc(10 * 1024 * 1024 + 1) },
    ]);
    expect(answer.status).toBe(413);
    expect(await answer.json()).toEqual({ message: 'Request entity too large', code: 40005 });
  });

  it('refuses an attachment that names no part, and a name that is a path', async () => {
    const orphan = await send(fake.scene.channelId, { attachments: [{ id: 3 }] }, [
      { name: 'a.txt', bytes: Buffer.from('a') },
    ]);
    expect(orphan.status).toBe(400);
    expect(await orphan.json()).toMatchObject({ code: 50035 });
    const path = await send(fake.scene.channelId, { attachments: [{ id: 0, filename: '../../etc/passwd' }] }, [
      { name: 'a.txt', bytes: Buffer.from('a') },
    ]);
    expect(path.status).toBe(400);
    expect(await path.json()).toMatchObject({ code: 50035 });
  });

  it('answers 403 Missing Access (50001) in a channel the bot cannot see, with or without files', async () => {
    const hidden = fake.world.opsChannelId;
    fake.world.botLacksAccess.add(hidden);
    try {
      const withFile = await send(hidden, { content: 'x' }, [{ name: 'a.txt', bytes: Buffer.from('a') }]);
      expect(withFile.status).toBe(403);
      expect(await withFile.json()).toEqual({ message: 'Missing Access', code: 50001 });
      const plain = await fetch(`${fake.restUrl}/v10/channels/${hidden}/messages`, {
        method: 'POST',
        headers: { authorization: `Bot ${fake.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ content: 'x' }),
      });
      expect(plain.status).toBe(403);
    } finally {
      fake.world.botLacksAccess.delete(hidden);
    }
  });

  it('says it does not read files sent to other routes', async () => {
    const posted = await send(fake.scene.channelId, { content: 'x' }, []);
    const { id } = (await posted.json()) as { id: string };
    const answer = await send(
      fake.scene.channelId,
      { content: 'y' },
      [{ name: 'a.txt', bytes: Buffer.from('a') }],
      'PATCH',
      `/channels/${fake.scene.channelId}/messages/${id}`,
    );
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as { message: string }).message).toMatch(/does not implement file uploads/);
  });
});
