import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord } from '../../fakes/discord/index.ts';
import { buttonInteraction, dmMessage, guildMessageMentioningBot } from '../../fixtures/discord/payloads.ts';
import { startHarness, type Harness } from '../../helpers/harness.ts';
import { CSV, png, windowsProgram } from '../../files/samples.ts';

type Json = Record<string, unknown>;
type Button = { label: string; custom_id: string };
const buttonsOf = (message: Json) =>
  ((message.components as Json[] | undefined) ?? []).flatMap((row) => (row.components as Button[] | undefined) ?? []);

/** Attachments on Discord, through the fake's gateway, CDN and multipart uploads. */
describe('files on Discord', () => {
  let fake: FakeDiscord;
  let h: Harness;
  let elsewhere: http.Server;
  const stolen: string[] = [];
  beforeAll(async () => {
    fake = await FakeDiscord.start();
    h = await startHarness({
      script: {
        rules: [
          {
            match: 'share the report',
            rounds: [{ toolCalls: [{ name: 'share_file', args: { path: 'report.csv' } }] }, { text: 'Shared.' }],
          },
          { rounds: [{ text: 'answer to: {{lastUser}}' }] },
        ],
      },
      env: {
        DISCORD_TOKEN: fake.token,
        DISCORD_APPLICATION_ID: fake.scene.applicationId,
        DISCORD_GUILD_ID: fake.scene.guildId,
        DISCORD_API_URL: fake.restUrl,
      },
    });
    writeFileSync(path.join(h.config.AGENT_WORKSPACE_ROOT, 'report.csv'), CSV);
    elsewhere = http.createServer((req, res) => {
      stolen.push(req.url ?? '');
      res.end('gotcha');
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
    elsewhere.close();
  });

  // Includes, not starts with: a DM message sent while the previous turn is still settling may join
  // that turn (steering takes a message's files with it), and is then answered in the same reply.
  const answerIn = (channel: string, start: string) =>
    fake.until(() => fake.botTextIn(channel).find((t) => t.includes(start)), `an answer with ${start}`, 30_000);

  it('reads a DM’s attachments from the CDN without a token: a CSV saved for read_file, a screenshot shown, a fake .png refused', async () => {
    const dm = fake.scene.dmChannelId;
    const message = dmMessage(fake.scene, { text: 'look at these' });
    message.attachments = [
      fake.cdn.attachment(dm, 'sales.csv', Buffer.from(CSV), 'text/csv'),
      fake.cdn.attachment(dm, 'screen.png', png(), 'image/png'),
      fake.cdn.attachment(dm, 'cat.png', windowsProgram(), 'image/png'),
    ];
    fake.userSays(message);
    const answer = await answerIn(dm, 'answer to: look at these');
    const saved = /saved as (inbox\/\S+\/sales\.csv)/.exec(answer)?.[1];
    expect(readFileSync(path.join(h.config.AGENT_WORKSPACE_ROOT, saved!), 'utf8')).toBe(CSV);
    expect(answer).toMatch(/"screen\.png": saved as .*; shown to you as an image\./);
    expect(answer).toContain('"cat.png": not read — its content is a program');
    expect(fake.cdn.fetches.map((f) => f.authorization)).toEqual([undefined, undefined, undefined]);
  });

  it('refuses an attachment whose URL is off Discord’s CDN, and answers the text', async () => {
    const dm = fake.scene.dmChannelId;
    const { port } = elsewhere.address() as AddressInfo;
    const message = dmMessage(fake.scene, { text: 'and this one' });
    message.attachments = [
      { id: '1100000000000000099', filename: 'x.txt', size: 3, url: `http://127.0.0.1:${port}/x.txt` },
    ];
    fake.userSays(message);
    const answer = await answerIn(dm, 'answer to: and this one').catch((e: Error) => {
      throw new Error(`${e.message}: ${JSON.stringify(fake.botTextIn(dm))}`);
    });
    expect(answer).toContain(
      `"x.txt": not read — the download failed: its URL is on 127.0.0.1:${port}, not Discord's CDN.`,
    );
    expect(stolen).toEqual([]);
  });

  it('shares a file into the thread as a multipart attachment after Approve, and nothing before', async () => {
    const mention = guildMessageMentioningBot(fake.scene, { text: 'share the report' });
    fake.userSays(mention);
    // A mention continues in a thread started on it, whose id is the message's.
    const thread = mention.id as string;
    const card = await fake.until(
      () => fake.messagesIn(thread).find((m) => buttonsOf(m.message).some((b) => b.label === 'Approve')),
      'the card',
      30_000,
    );
    expect(fake.uploads).toEqual([]);
    const approve = buttonsOf(card.message).find((b) => b.label === 'Approve')!;
    fake.interact(buttonInteraction(fake.scene, { customId: approve.custom_id, message: card.message }));
    const upload = await fake.until(() => fake.uploads.find((u) => u.filename === 'report.csv'), 'the upload', 30_000);
    expect(upload.bytes.toString()).toBe(CSV);
    expect(upload.channelId).toBe(thread);
  });
});
