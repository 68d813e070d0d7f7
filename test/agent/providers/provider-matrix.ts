import type { Logger } from 'pino';
import type { ModelProvider, ModelRequest, ModelRound } from '../../../src/agent/model.ts';
import { AnthropicProvider } from '../../../src/agent/providers/anthropic.ts';
import { OpenAIProvider } from '../../../src/agent/providers/openai.ts';
import type { RetryTuning } from '../../../src/agent/providers/retry.ts';
import type { Script } from '../../../src/agent/providers/scripted.ts';
import { startFakeAnthropic } from '../../fakes/anthropic-server.ts';
import { startFakeOpenAI } from '../../fakes/openai-server.ts';
import { pieces, type FakeStream, type StartedFakeModel } from '../../fakes/model-http.ts';

/**
 * Runs one suite against both real SDKs, each talking to its fake API over loopback.
 *
 * A neutral script is a list of rounds (what the model streams for each request, in order) or a
 * scripted-model `Script` (rounds decided from the conversation, for multi-turn suites), or both:
 * queued rounds answer first, then the script.
 *
 *   import { PROVIDER_FAKES, startProviderFake, type ProviderFake } from './provider-matrix.ts';
 *
 *   describe.each(PROVIDER_FAKES)('the agent loop on %s', (name) => {
 *     let model: ProviderFake;
 *     beforeAll(async () => {
 *       model = await startProviderFake(name, {
 *         rounds: [
 *           { text: ['Checking ', 'the clock.'], toolCalls: [{ name: 'current_time', args: {} }] },
 *           { text: ['It is noon.'] },
 *         ],
 *       });
 *     });
 *     afterAll(() => model.close());
 *
 *     it('answers after one tool call', async () => {
 *       // hand model.provider to the loop; model.fake.requests holds what the SDK sent,
 *       // model.fake.enqueue(...) scripts more rounds (or errors) for later requests.
 *     });
 *   });
 *
 * `providerMatrix(script)` starts both at once when a test wants them side by side.
 */
export const PROVIDER_FAKES = ['anthropic-fake', 'openai-fake'] as const;
export type ProviderFakeName = (typeof PROVIDER_FAKES)[number];

interface ScriptedToolCall {
  /** Default: `call_<round>_<index>`, valid for both APIs. */
  id?: string;
  name: string;
  args?: Record<string, unknown>;
  /** Sent verbatim instead of `args`: malformed JSON from a model. */
  rawArgs?: string;
}

export interface ScriptedRound {
  /** Text chunks, one delta each. */
  text?: string[];
  toolCalls?: ScriptedToolCall[];
  stop?: FakeStream['stop'];
  usage?: FakeStream['usage'];
}

export interface NeutralScript {
  rounds?: ScriptedRound[];
  script?: Script;
}

export interface ProviderFake {
  name: ProviderFakeName;
  fake: StartedFakeModel;
  provider: ModelProvider;
  close(): Promise<void>;
}

export interface MatrixOptions {
  /** MODEL_MAX_RETRIES for the provider (default 2). */
  maxRetries?: number;
  /** Default: no waiting between retries, so suites stay fast. */
  retry?: RetryTuning;
  log?: Logger;
  /** Anthropic prompt caching (PROMPT_CACHE), default on. */
  promptCache?: boolean;
}

/** How big each argument fragment is: small, so every tool call spans many deltas. */
const ARGUMENT_PIECE = 5;

/** One neutral round as the fake's stream, its tool JSON split across many deltas. */
export function streamOf(round: ScriptedRound, roundIndex = 0): FakeStream {
  return {
    kind: 'stream',
    text: round.text ?? [],
    toolCalls: (round.toolCalls ?? []).map((call, i) => ({
      id: call.id ?? `call_${roundIndex}_${i}`,
      name: call.name,
      json: pieces(call.rawArgs ?? JSON.stringify(call.args ?? {}), ARGUMENT_PIECE),
    })),
    ...(round.stop ? { stop: round.stop } : {}),
    ...(round.usage ? { usage: round.usage } : {}),
  };
}

const instantRetries: RetryTuning = { sleep: async () => {}, baseDelayMs: 1 };

/** Starts one fake API and a real provider configured against it, with the script's rounds queued. */
export async function startProviderFake(
  name: ProviderFakeName,
  script: NeutralScript = {},
  options: MatrixOptions = {},
): Promise<ProviderFake> {
  const common = {
    maxRetries: options.maxRetries ?? 2,
    retry: options.retry ?? instantRetries,
    ...(options.log ? { log: options.log } : {}),
  };
  const fakeOptions = script.script ? { script: script.script } : {};
  const fake = name === 'anthropic-fake' ? await startFakeAnthropic(fakeOptions) : await startFakeOpenAI(fakeOptions);
  fake.enqueue(...(script.rounds ?? []).map((round, i) => streamOf(round, i)));
  const provider =
    name === 'anthropic-fake'
      ? new AnthropicProvider({
          apiKey: 'sk-ant-fake',
          model: 'claude-fake',
          baseURL: fake.url,
          ...common,
          ...(options.promptCache === undefined ? {} : { promptCache: options.promptCache }),
        })
      : new OpenAIProvider({
          name: 'openai',
          apiKey: 'sk-fake',
          model: 'gpt-fake',
          baseURL: `${fake.url}/v1`,
          ...common,
        });
  return { name, fake, provider, close: () => fake.close() };
}

/** Both fakes, each with a provider and the same script queued. */
export function providerMatrix(script: NeutralScript = {}, options: MatrixOptions = {}): Promise<ProviderFake[]> {
  return Promise.all(PROVIDER_FAKES.map((name) => startProviderFake(name, script, options)));
}

/** What a round showed: the sink's visible text (withdrawn on restart), every delta, and how often it restarted. */
export interface WatchedRound {
  result: ModelRound;
  shown: string;
  deltas: string[];
  restarts: number;
}

/** Streams one round into a sink that behaves like the reply stream: a restart forgets the round's text. */
export async function watchRound(
  provider: ModelProvider,
  request: ModelRequest,
  signal: AbortSignal = new AbortController().signal,
): Promise<WatchedRound> {
  let shown = '';
  let restarts = 0;
  const deltas: string[] = [];
  const result = await provider.streamRound(
    request,
    {
      onText: (delta) => {
        deltas.push(delta);
        shown += delta;
      },
      onRoundRestart: () => {
        restarts += 1;
        shown = '';
      },
    },
    signal,
  );
  return { result, shown, deltas, restarts };
}
