import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../src/agent/providers/anthropic.ts';
import { startFakeAnthropic } from '../fakes/anthropic-server.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';
import sharp from 'sharp';
import { CSV, encodedPng, png, windowsProgram } from './samples.ts';

type Fake = Awaited<ReturnType<typeof startFakeAnthropic>>;
type Block = { type: string; text?: string; source?: { type: string; media_type: string; data: string } };
type Body = { messages: Array<{ role: string; content: Block[] }> };

/** Files sent with a message, through the real worker and the real Anthropic SDK to the fake API. */
describe('files as model input', () => {
  let fake: Fake;
  let h: Harness;
  beforeAll(async () => {
    fake = await startFakeAnthropic({ script: { rules: [{ rounds: [{ text: 'I see it.' }] }] } });
    h = await startHarness({
      provider: new AnthropicProvider({ apiKey: 'k', model: 'claude-sonnet-5-5', baseURL: fake.url, maxRetries: 0 }),
    });
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  const lastRequest = () => fake.requests.at(-1)!.body as Body;

  it('shows a screenshot as an image block before the text, and names the CSV saved for read_file', async () => {
    h.outbound.files.set('F-shot', png());
    h.outbound.files.set('F-csv', Buffer.from(CSV));
    const item = await h.say('files-shot', 'why does this fail?', {
      input: {
        prompt: 'why does this fail?',
        files: [
          { id: 'F-shot', name: 'error.png', size: png().length, mimetype: 'image/png' },
          { id: 'F-csv', name: 'data.csv', size: CSV.length },
        ],
      },
    });
    expect((await h.settled(item.id)).result?.text).toBe('I see it.');
    const [first] = lastRequest().messages;
    const [image, text] = first!.content;
    expect(image).toEqual({
      type: 'image',
      source: { type: 'base64', media_type: 'image/png', data: png().toString('base64') },
    });
    expect(text?.text).toMatch(/^why does this fail\?\n\nFiles sent with this message:\n/);
    expect(text?.text).toMatch(
      /"data\.csv": saved as inbox\/[^ ]+\/data\.csv \(text, \d+ bytes\); read it with read_file/,
    );
  });

  it('resizes a photo over the API’s 5 MB so the request is one the API takes', async () => {
    const photo = await encodedPng(2000, 1600, true);
    expect(photo.length).toBeGreaterThan(5 * 1024 * 1024);
    h.outbound.files.set('F-photo', photo);
    const item = await h.say('files-photo', 'what is in it?', {
      input: { prompt: 'what is in it?', files: [{ id: 'F-photo', name: 'photo.png', size: photo.length }] },
    });
    expect((await h.settled(item.id)).result?.text).toBe('I see it.');
    const image = lastRequest().messages[0]!.content.find((b) => b.type === 'image')!;
    const meta = await sharp(Buffer.from(image.source!.data, 'base64')).metadata();
    expect([image.source!.media_type, meta.width, meta.height]).toEqual(['image/jpeg', 1568, 1254]);
  });

  it('answers the text with a note when a download fails or a file is refused', async () => {
    h.outbound.files.set('F-gone', new Error('connect ECONNREFUSED'));
    h.outbound.files.set('F-exe', windowsProgram());
    const item = await h.say('files-bad', 'look', {
      input: {
        prompt: 'look',
        files: [
          { id: 'F-gone', name: 'trace.log' },
          { id: 'F-exe', name: 'photo.png' },
        ],
      },
    });
    expect((await h.settled(item.id)).status).toBe('done');
    const text = lastRequest()
      .messages[0]!.content.map((b) => b.text ?? '')
      .join('');
    expect(text).toContain('"trace.log": not read — the download failed: connect ECONNREFUSED.');
    expect(text).toContain('"photo.png": not read — its content is a program');
    expect(lastRequest().messages[0]!.content.some((b) => b.type === 'image')).toBe(false);
  });

  it('does not send an earlier turn’s image again with later turns', async () => {
    h.outbound.files.set('F-again', png());
    const first = await h.say('files-later', 'see', {
      input: { prompt: 'see', files: [{ id: 'F-again', name: 'a.png' }] },
    });
    await h.settled(first.id);
    const second = await h.say('files-later', 'and now?');
    await h.settled(second.id);
    const blocks = lastRequest().messages.flatMap((m) => m.content);
    expect(blocks.some((b) => b.type === 'image')).toBe(false);
    expect(blocks.map((b) => b.text ?? '').join('\n')).toContain('"a.png": saved as inbox/');
  });
});
