import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import type { Outbound, PostedMessage, ReplyOptions } from '../../../src/reply/outbound.ts';
import type { ReplyTarget } from '../../../src/core/reply-target.ts';

/**
 * The smallest chat platform that works across processes: messages posted and edited over HTTP.
 * Chaos runs and benchmarks use it when worker processes must reply somewhere the test can read.
 */
export interface StoredMessage {
  id: string;
  channel: string;
  text: string;
  edits: number;
  buttons: string[];
}

const Body = z.object({ channel: z.string().optional(), text: z.string(), buttons: z.array(z.string()).default([]) });

export class HttpChatPlatform {
  readonly messages = new Map<string, StoredMessage>();
  calls = 0;
  #server: http.Server | undefined;
  #next = 1;
  url = '';

  async start(): Promise<this> {
    this.#server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (d: Buffer) => (raw += d.toString()));
      req.on('end', () => {
        this.calls += 1;
        const parsed = Body.safeParse(raw ? JSON.parse(raw) : {});
        if (!parsed.success) return reply(res, 400, { error: 'bad body' });
        const { channel, text, buttons } = parsed.data;
        if (req.method === 'POST' && req.url === '/messages' && channel) {
          const id = `msg-${this.#next++}`;
          this.messages.set(id, { id, channel, text, edits: 0, buttons });
          return reply(res, 200, { id });
        }
        const edit = /^\/messages\/([\w-]+)$/.exec(req.url ?? '');
        const message = edit ? this.messages.get(edit[1]!) : undefined;
        if (req.method === 'PATCH' && message) {
          message.text = text;
          message.buttons = buttons;
          message.edits += 1;
          return reply(res, 200, { id: message.id });
        }
        return reply(res, 404, { error: 'not found' });
      });
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server!.address() as AddressInfo).port}`;
    return this;
  }

  channelText(channel: string): string[] {
    return [...this.messages.values()].filter((m) => m.channel === channel).map((m) => m.text);
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()) ?? resolve());
  }
}

function reply(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** The outbound client for HttpChatPlatform, usable from any process. */
export class HttpChatOutbound implements Outbound {
  readonly platform: string;
  readonly limits = { maxMessageLength: 4000, minEditIntervalMs: 50 };
  readonly #url: string;

  constructor(url: string, platform = 'chat') {
    this.#url = url;
    this.platform = platform;
  }

  async #send(method: string, path: string, body: unknown): Promise<{ id: string }> {
    const res = await fetch(`${this.#url}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`chat platform answered ${res.status}`);
    return (await res.json()) as { id: string };
  }

  async post(target: ReplyTarget, text: string, options?: ReplyOptions): Promise<PostedMessage> {
    const { id } = await this.#send('POST', '/messages', {
      channel: target.channel,
      text,
      buttons: options?.buttons?.map((b) => b.value) ?? [],
    });
    return { messageId: id };
  }

  async edit(_target: ReplyTarget, messageId: string, text: string, options?: ReplyOptions): Promise<void> {
    await this.#send('PATCH', `/messages/${messageId}`, { text, buttons: options?.buttons?.map((b) => b.value) ?? [] });
  }
}
