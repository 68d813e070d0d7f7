import { afterEach, describe, expect, it } from 'vitest';
import type { Message } from '../../../src/agent/messages.ts';
import type { ModelRequest } from '../../../src/agent/model.ts';
import type { Script } from '../../../src/agent/providers/scripted.ts';
import { createFakeAnthropic } from '../../fakes/anthropic-server.ts';
import { PROVIDER_FAKES, providerMatrix, startProviderFake, watchRound, type ProviderFake } from './provider-matrix.ts';

const script: Script = {
  rules: [
    {
      match: '^status',
      rounds: [
        { text: 'Checking.', toolCalls: [{ name: 'status', args: { service: 'api' } }] },
        { text: 'It said: {{lastToolResult}}' },
      ],
    },
  ],
};

const tools: ModelRequest['tools'] = [
  { name: 'status', description: 'service status', inputSchema: { type: 'object', properties: {} } },
];

let started: ProviderFake[] = [];
afterEach(async () => {
  await Promise.all(started.map((m) => m.close()));
  started = [];
});

describe.each(PROVIDER_FAKES)('the %s fake playing a script', (name) => {
  it('decides each round from the conversation, so a tool round trip reads back its result', async () => {
    const model = await startProviderFake(name, { script });
    started.push(model);
    const messages: Message[] = [{ role: 'user', text: 'status please' }];
    const first = await watchRound(model.provider, { system: 's', messages, tools, maxTokens: 64 });
    expect(first.result.toolCalls).toMatchObject([{ name: 'status', args: { service: 'api' } }]);
    messages.push(
      { role: 'assistant', text: first.result.text, toolCalls: first.result.toolCalls },
      {
        role: 'tool',
        results: [{ toolCallId: first.result.toolCalls[0]!.id, name: 'status', content: 'down', isError: true }],
      },
    );
    const second = await watchRound(model.provider, { system: 's', messages, tools, maxTokens: 64 });
    expect(second.result.text).toBe('It said: down');
  });

  it('answers queued rounds before the script', async () => {
    const model = await startProviderFake(name, { rounds: [{ text: ['queued'] }], script });
    started.push(model);
    const request = { system: 's', messages: [{ role: 'user' as const, text: 'status' }], tools, maxTokens: 64 };
    expect((await watchRound(model.provider, request)).result.text).toBe('queued');
    expect((await watchRound(model.provider, request)).result.text).toBe('Checking.');
  });
});

describe('the provider matrix', () => {
  it('starts one fake and one real provider per API, each with the rounds queued', async () => {
    started = await providerMatrix({ rounds: [{ text: ['same ', 'answer'] }] });
    expect(started.map((m) => [m.name, m.provider.name])).toEqual([
      ['anthropic-fake', 'anthropic'],
      ['openai-fake', 'openai'],
    ]);
    for (const m of started) {
      const { result } = await watchRound(m.provider, {
        system: 's',
        messages: [{ role: 'user', text: 'hi' }],
        tools: [],
        maxTokens: 8,
      });
      expect(result.text).toBe('same answer');
    }
  });
});

describe('a fake that is not started yet', () => {
  it('listens on loopback once started and records what it was sent', async () => {
    const fake = createFakeAnthropic();
    fake.enqueue({ kind: 'error', status: 401, body: 'invalid x-api-key' });
    const { url, close } = await fake.start();
    try {
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const response = await fetch(`${url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', max_tokens: 1, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(response.status).toBe(401);
      expect(response.headers.get('request-id')).toBe('req_fake_1');
      expect(await response.json()).toEqual({
        type: 'error',
        error: { type: 'authentication_error', message: 'invalid x-api-key' },
        request_id: 'req_fake_1',
      });
      expect(fake.requests[0]!.body.model).toBe('m');
    } finally {
      await close();
    }
  });
});
