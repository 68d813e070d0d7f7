import { loadConfig } from '../src/config.ts';
import { startCountersign } from '../src/app.ts';
import { ScriptedProvider } from '../src/agent/providers/scripted.ts';
import { countingTool } from '../test/helpers/tools.ts';
import { P9_SCRIPT } from './p9-script.ts';

/**
 * One Countersign process of P9, as deployed: `P9_ROLE=ingress` (answers the clicks) or `worker`
 * (runs the continuations), configured from the environment like `countersign start`, with the
 * scripted model and a `deploy` tool that always needs approval.
 */
const role = process.env.P9_ROLE;
if (role !== 'ingress' && role !== 'worker') throw new Error('P9_ROLE must be ingress or worker');
const app = await startCountersign(loadConfig(), {
  role,
  console: false,
  provider: new ScriptedProvider(P9_SCRIPT),
  tools: [countingTool('deploy', [], { risk: 'medium', result: 'done' })],
});
process.on('unhandledRejection', (reason) => app.log.error({ err: reason }, 'unhandled promise rejection'));
const stop = () => void app.stop().then(() => process.exit(0));
void app.failed.then(() => app.stop().then(() => process.exit(1)));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
