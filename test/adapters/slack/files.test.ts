import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../../src/agent/providers/anthropic.ts';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import { startFakeAnthropic } from '../../fakes/anthropic-server.ts';
import {
  appMention,
  blockAction,
  buttonIn,
  eventCallback,
  eventsApiEnvelope,
  interactiveEnvelope,
  ts,
} from '../../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { CSV, png } from '../../files/samples.ts';
import { inboxFolderOf } from '../../../src/core/inbox.ts';
import { slackConversationId } from '../../../src/adapters/slack/conversation-ids.ts';

const CHANNEL = 'C0OPS00001';
const DM = 'D0ALICE001';
const ALICE = 'U0ALICE001';

type Block = { type: string; text?: string; source?: { media_type: string; data: string } };
type Body = { messages: Array<{ role: string; content: Block[] }> };

/** A `file_share` message event (docs.slack.dev/reference/events/message/file_share). */
function fileShare(fields: {
  channel: string;
  channel_type: string;
  text: string;
  files: unknown[];
  thread_ts?: string;
}) {
  const t = ts();
  return {
    type: 'message',
    subtype: 'file_share',
    text: fields.text,
    files: fields.files,
    upload: true,
    user: ALICE,
    display_as_bot: false,
    ts: t,
    channel: fields.channel,
    event_ts: t,
    channel_type: fields.channel_type,
    ...(fields.thread_ts ? { thread_ts: fields.thread_ts } : {}),
  };
}

describe('files on Slack', () => {
  let fake: FakeSlack;
  let model: Awaited<ReturnType<typeof startFakeAnthropic>>;
  let h: Harness;
  let elsewhere: http.Server;
  const stolen: Array<string | undefined> = [];
  beforeAll(async () => {
    fake = await FakeSlack.start();
    model = await startFakeAnthropic({
      script: {
        rules: [
          {
            match: 'share the report',
            rounds: [
              { toolCalls: [{ name: 'share_file', args: { path: 'report.csv', comment: 'the numbers' } }] },
              { text: 'Shared.' },
            ],
          },
          { rounds: [{ text: 'Got it.' }] },
        ],
      },
    });
    h = await startHarness({
      provider: new AnthropicProvider({ apiKey: 'k', model: 'claude-sonnet-5-5', baseURL: model.url, maxRetries: 0 }),
      env: fake.env({ SLACK_STREAMING: 'off' }),
    });
    writeFileSync(path.join(h.config.AGENT_WORKSPACE_ROOT, 'report.csv'), CSV);
    // A host that is not Slack's: whatever reaches it, and with which Authorization header.
    elsewhere = http.createServer((req, res) => {
      stolen.push(req.headers.authorization);
      res.end('gotcha');
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
    await model.close();
    elsewhere.close();
  });

  const lastText = (channel: string, thread?: string) => fake.textIn(channel, thread).at(-1);
  const answered = (channel: string, text: string, thread?: string) =>
    waitFor(async () => (lastText(channel, thread) === text ? true : undefined), 20_000, `"${text}" in ${channel}`);
  const lastRequest = () => model.requests.at(-1)!.body as Body;

  it('shows a screenshot shared in a thread to the model as an image, downloaded with the token through the redirect', async () => {
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'hi' });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, mention)));
    await answered(CHANNEL, 'Got it.', mention.ts);
    const before = fake.files.fetches.length;
    const shot = fake.files.host('error.png', png(), 'image/png');
    const share = fileShare({
      channel: CHANNEL,
      channel_type: 'channel',
      text: 'why this error?',
      files: [shot],
      thread_ts: mention.ts,
    });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, share)));
    // The image may join the mention's turn (steering) or start its own: either way it reaches the model.
    const withImage = await waitFor(
      async () => model.requests.map((r) => r.body as Body).find((b) => JSON.stringify(b).includes('"type":"image"')),
      20_000,
      'a request with the image',
    );
    const image = withImage.messages.flatMap((m) => m.content).find((b) => b.type === 'image');
    expect(image?.source).toEqual({ type: 'base64', media_type: 'image/png', data: png().toString('base64') });
    // url_private_download, then the files-origin host it redirects to: the token re-added by hand on both.
    expect(fake.files.fetches.slice(before).map((f) => [f.path.split('/')[1], f.authorized])).toEqual([
      ['files-pri', true],
      ['files-origin', true],
    ]);
  });

  /**
   * A mention whose own message shares files. Slack keeps the message with its files (a `file_share`
   * message event, which the app ignores because it mentions the app), but the `app_mention` event
   * the app answers carries none.
   */
  async function mentionWithFiles(text: string, files: unknown[], thread_ts?: string) {
    const mention = appMention({ user: ALICE, channel: CHANNEL, text, ...(thread_ts ? { thread_ts } : {}) });
    expect(mention).not.toHaveProperty('files');
    fake.seed(eventCallback(fake.team, { ...mention, type: 'message', subtype: 'file_share', files, upload: true }));
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, mention)));
    return mention;
  }
  const readCalls = () =>
    fake.calls.filter((c) => c.method.startsWith('conversations.') && c.method !== 'conversations.info');

  it('reads a CSV attached to the mention itself, where read_file reads it', async () => {
    const csv = fake.files.host('sales.csv', Buffer.from(CSV), 'text/csv');
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'sum the north column' });
    const saved = `inbox/${inboxFolderOf(slackConversationId(fake.team, CHANNEL, mention.ts))}/sales.csv`;
    model.enqueue(
      { kind: 'stream', toolCalls: [{ name: 'read_file', json: [JSON.stringify({ path: saved })] }] },
      { kind: 'stream', text: ['North sums to 120.'] },
    );
    fake.seed(eventCallback(fake.team, { ...mention, type: 'message', subtype: 'file_share', files: [csv] }));
    const calls = fake.calls.length;
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, mention)));
    await answered(CHANNEL, 'North sums to 120.', mention.ts);
    // The tool result the model got back is the CSV, read from where the note said it was saved.
    const [note, result] = model.requests.slice(-2).map((r) => JSON.stringify(r.body));
    expect(note).toContain(`saved as ${saved} (text, ${CSV.length} bytes)`);
    expect(result).toContain('north,120');
    // A top-level mention is read with conversations.history at its own ts, by the worker.
    const read = fake.calls.slice(calls).find((c) => c.method === 'conversations.history');
    expect(read?.args).toMatchObject({ channel: CHANNEL, latest: mention.ts, inclusive: 'true', limit: '1' });
  });

  it('shows a screenshot attached to a mention in a thread to the model as an image block', async () => {
    const parent = appMention({ user: ALICE, channel: CHANNEL, text: 'hello' });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, parent)));
    await answered(CHANNEL, 'Got it.', parent.ts);
    const shot = fake.files.host('error.png', png(), 'image/png');
    const calls = fake.calls.length;
    const mention = await mentionWithFiles('what is this error?', [shot], parent.ts);
    expect(mention.thread_ts).toBe(parent.ts);
    const withImage = await waitFor(
      async () =>
        model.requests.map((r) => r.body as Body).find((b) => JSON.stringify(b).includes('what is this error')),
      20_000,
      'the request',
    );
    const blocks = withImage.messages.at(-1)!.content;
    expect(blocks.find((b) => b.type === 'image')?.source).toEqual({
      type: 'base64',
      media_type: 'image/png',
      data: png().toString('base64'),
    });
    // A reply in a thread is found among its thread's replies, by its own ts.
    const read = fake.calls.slice(calls).find((c) => c.method === 'conversations.replies');
    expect(read?.args).toMatchObject({ channel: CHANNEL, ts: parent.ts, oldest: mention.ts, latest: mention.ts });
  });

  it('answers a mention without files with no note, and one whose message cannot be read with a note', async () => {
    const plain = appMention({ user: ALICE, channel: CHANNEL, text: 'plain question' });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, plain)));
    await answered(CHANNEL, 'Got it.', plain.ts);
    expect(JSON.stringify(lastRequest())).not.toContain('Files sent with this message');
    fake.failNext('conversations.history', { error: 'missing_scope' });
    const csv = fake.files.host('lost.csv', Buffer.from(CSV), 'text/csv');
    const before = fake.files.fetches.length;
    const unread = await mentionWithFiles('and this one?', [csv]);
    await answered(CHANNEL, 'Got it.', unread.ts);
    const text = JSON.stringify(lastRequest());
    expect(text).toContain('and this one?');
    expect(text).toContain('they could not be looked up (');
    expect(text).toContain('missing_scope');
    expect(fake.files.fetches.length).toBe(before);
    expect(readCalls().length).toBeGreaterThan(0);
  });

  it('saves a CSV sent in a DM where read_file reads it', async () => {
    const csv = fake.files.host('sales.csv', Buffer.from(CSV), 'text/csv');
    await fake.deliver(
      eventsApiEnvelope(
        eventCallback(fake.team, fileShare({ channel: DM, channel_type: 'im', text: '', files: [csv] })),
      ),
    );
    await answered(DM, 'Got it.');
    const text = lastRequest()
      .messages.at(-1)!
      .content.map((b) => b.text ?? '')
      .join('');
    const saved = /saved as (inbox\/\S+\/sales\.csv)/.exec(text)?.[1];
    expect(saved).toBeDefined();
    expect(readFileSync(path.join(h.config.AGENT_WORKSPACE_ROOT, saved!), 'utf8')).toBe(CSV);
  });

  it('refuses a file whose URL is off Slack’s hosts and sends it no token; the text is still answered', async () => {
    const { port } = elsewhere.address() as AddressInfo;
    const hostile = {
      id: 'F0EVIL0001',
      name: 'notes.txt',
      size: 6,
      mode: 'hosted',
      url_private_download: `http://127.0.0.1:${port}/steal`,
    };
    await fake.deliver(
      eventsApiEnvelope(
        eventCallback(fake.team, fileShare({ channel: DM, channel_type: 'im', text: 'read this', files: [hostile] })),
      ),
    );
    await waitFor(
      async () => (model.requests.some((r) => JSON.stringify(r.body).includes('not one of Slack')) ? true : undefined),
      20_000,
      'the note',
    );
    const note = lastRequest()
      .messages.at(-1)!
      .content.map((b) => b.text ?? '')
      .join('');
    expect(note).toContain(
      `"notes.txt": not read — the download failed: its URL is on 127.0.0.1:${port}, not one of Slack's file hosts.`,
    );
    expect(stolen).toEqual([]);
    const inbox = path.join(h.config.AGENT_WORKSPACE_ROOT, 'inbox');
    const saved = readdirSync(inbox, { recursive: true }).map(String);
    expect(saved.some((f) => f.endsWith('notes.txt'))).toBe(false);
  });

  it('shares a file into the thread it was asked in, with files v2’s two calls, after Approve', async () => {
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'share the report' });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, mention)));
    const card = await waitFor(
      async () => fake.botMessages(CHANNEL, mention.ts).find((m) => JSON.stringify(m.blocks).includes('"Approve"')),
      20_000,
      'the card',
    );
    expect(JSON.stringify(card.blocks)).toContain('north,120');
    expect(fake.uploads).toHaveLength(0);
    const approve = buttonIn(card.blocks, 'Approve');
    await fake.deliver(
      interactiveEnvelope(
        blockAction(fake.team, {
          user: ALICE,
          channel: CHANNEL,
          messageTs: card.ts,
          threadTs: mention.ts,
          value: approve.value,
          actionId: approve.action_id,
        }),
      ),
    );
    await waitFor(async () => (fake.uploads.length === 1 ? true : undefined), 20_000, 'the upload');
    expect(fake.uploads[0]).toMatchObject({ filename: 'report.csv', channel: CHANNEL, thread_ts: mention.ts });
    expect(fake.uploads[0]!.bytes.toString()).toBe(CSV);
    const methods = fake.calls.map((c) => c.method).filter((m) => m.startsWith('files.'));
    expect(methods).toEqual(['files.getUploadURLExternal', 'files.completeUploadExternal']);
  });
});
