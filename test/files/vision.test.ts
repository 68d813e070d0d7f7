import { readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProvider } from '../../src/agent/providers/index.ts';
import { loadConfig } from '../../src/config.ts';
import { startFakeOpenAI } from '../fakes/openai-server.ts';
import type { StartedFakeModel } from '../fakes/model-http.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { png } from './samples.ts';

type Body = { messages: Array<{ role: string; content: unknown }> };

const openai = (url: string, vision?: 'true' | 'false') =>
  createProvider(
    loadConfig({
      AI_PROVIDER: 'openai',
      OPENAI_BASE_URL: `${url}/v1`,
      OPENAI_MODEL: 'local-model',
      MODEL_MAX_RETRIES: '0',
      ...(vision ? { OPENAI_VISION: vision } : {}),
    }),
  );

/**
 * Images and a model without vision (OPENAI_VISION=false), through the real worker and the real
 * OpenAI SDK to a fake text-only server that refuses image parts the way OpenAI does.
 */
describe('an OpenAI-compatible model without vision', () => {
  let textOnly: StartedFakeModel;
  let seeing: StartedFakeModel;
  let blind: Harness;
  let sighted: Harness;
  beforeAll(async () => {
    textOnly = await startFakeOpenAI({ textOnly: true, script: { rules: [{ rounds: [{ text: 'Noted.' }] }] } });
    seeing = await startFakeOpenAI({ script: { rules: [{ rounds: [{ text: 'I see it.' }] }] } });
    blind = await startHarness({ provider: openai(textOnly.url, 'false') });
    sighted = await startHarness({ provider: openai(seeing.url) });
  });
  afterAll(async () => {
    await blind.stop();
    await sighted.stop();
    await textOnly.close();
    await seeing.close();
  });

  const send = async (h: Harness, conversation: string) => {
    h.outbound.files.set(`F-${conversation}`, png());
    const item = await h.say(conversation, 'what does this show?', {
      input: { prompt: 'what does this show?', files: [{ id: `F-${conversation}`, name: 'error.png' }] },
    });
    return h.settled(item.id);
  };

  it('saves the image and says so in text, sending no image part, and the turn answers', async () => {
    expect((await send(blind, 'blind-1')).result?.text).toBe('Noted.');
    const [, user] = (textOnly.requests.at(-1)!.body as Body).messages;
    expect(typeof user!.content).toBe('string');
    expect(user!.content).toContain('"error.png": saved as inbox/');
    expect(user!.content).toContain('(The image "error.png" is not shown: this model takes no images.');
    const saved = readdirSync(path.join(blind.config.AGENT_WORKSPACE_ROOT, 'inbox'), { recursive: true }).map(String);
    expect(saved.some((f) => f.endsWith('error.png'))).toBe(true);
  });

  it('sends the image as an image part by default, which a text-only server would refuse', async () => {
    expect((await send(sighted, 'sighted-1')).result?.text).toBe('I see it.');
    const [, user] = (seeing.requests.at(-1)!.body as Body).messages;
    expect(user!.content).toContainEqual({
      type: 'image_url',
      image_url: { url: `data:image/png;base64,${png().toString('base64')}` },
    });
    // The same request to the text-only server: its 400, so the setting is what keeps a turn alive.
    const refused = await fetch(`${textOnly.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer k' },
      body: JSON.stringify(seeing.requests.at(-1)!.body),
    });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('image_url is only supported by certain models');
  });

  it('takes OPENAI_VISION and OPENROUTER_VISION as booleans and refuses anything else by name', () => {
    expect(loadConfig({ AI_PROVIDER: 'scripted' })).toMatchObject({ OPENAI_VISION: true, OPENROUTER_VISION: true });
    expect(loadConfig({ AI_PROVIDER: 'scripted', OPENROUTER_VISION: 'false' }).OPENROUTER_VISION).toBe(false);
    expect(() => loadConfig({ AI_PROVIDER: 'scripted', OPENAI_VISION: 'maybe' })).toThrow(/OPENAI_VISION/);
  });
});
