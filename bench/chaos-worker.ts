import { loadConfig } from '../src/config.ts';
import { startCountersign } from '../src/app.ts';
import { ScriptedProvider } from '../src/agent/providers/scripted.ts';
import { HttpChatOutbound } from '../test/fakes/chat/http-chat-platform.ts';
import { CHAOS_SCRIPT, chaosTools } from './chaos-tools.ts';

/** One chaos worker process: a real Countersign worker with the chaos tools and the HTTP chat platform. */
const effectsFile = process.env.CHAOS_EFFECTS_FILE;
const chatUrl = process.env.CHAOS_CHAT_URL;
if (!effectsFile || !chatUrl) throw new Error('CHAOS_EFFECTS_FILE and CHAOS_CHAT_URL are required');
const app = await startCountersign(loadConfig(), {
  role: 'worker',
  console: false,
  provider: new ScriptedProvider(CHAOS_SCRIPT),
  tools: chaosTools(effectsFile),
  outbounds: [new HttpChatOutbound(chatUrl)],
});
process.on('unhandledRejection', (reason) => app.log.error({ err: reason }, 'unhandled promise rejection'));
const stop = () => void app.stop().then(() => process.exit(0));
// As `countersign start` does (src/cli.ts): a stop that hangs after a pool failed would keep the
// heartbeat going while nothing runs the jobs this process holds, so leave by a deadline and let
// the stale heartbeat hand them to a live worker.
void app.failed.then(async () => {
  const deadlineMs = (app.config.SHUTDOWN_GRACE_SECONDS + 15) * 1000;
  await Promise.race([app.stop(), new Promise((resolve) => setTimeout(resolve, deadlineMs).unref())]);
  process.exit(1);
});
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
