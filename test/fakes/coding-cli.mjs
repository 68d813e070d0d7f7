/* global process, setTimeout, setInterval */
// A fake coding CLI for test/repos/coding-agent.test.ts: plain Node, no dependencies. Run it as
// `process.execPath test/fakes/coding-cli.mjs [options] [task]` (no shebang or exec bit needed).
//
// The task is the first argument that is not an option; without one it is read from stdin (to its
// end). A task "write NAME: TEXT" writes TEXT to the file NAME in the current directory.
//
// Options (or FAKE_CODING_MODE for the mode):
//   --mode=stream-json  Claude Code style `--output-format stream-json` lines (the default); one line
//                       arrives in two writes, so a reader must join lines across chunks
//   --mode=plain        plain text lines (one with colours), saying where the task came from
//   --mode=hang         starts a grandchild (in the CLI's process group) that writes its pid to
//                       --pid-file=PATH and sleeps; then sleeps itself, never ending
//   --mode=fail         one stdout line, two stderr lines, exit code 3
//   --mode=env          prints "NAME: set" or "NAME: unset" for the variables in ENV_NAMES below
//   --ignore-term       (hang) it and its grandchild ignore SIGTERM: only SIGKILL ends them
//   --git-commit        after the task, commits everything with the `git` on PATH, as a coding CLI
//                       does (the repository's hooks and fsmonitor must not run)
//   --cost=USD          (stream-json) the result reports `total_cost_usd` USD, as Claude Code does
//   --usage=I/O/R/W     (stream-json) the result's `usage`: input, output, cache read and cache
//                       creation tokens; --model-usage=I/O/R/W the same as one model's `modelUsage`
//   --started=PATH      appends the task's line to PATH as it starts: proof that it ran
// A task "hang" hangs as --mode=hang does, whatever the mode.
//   --sleep-ms=N        (stream-json) waits N ms before its result, so runs overlap
//   --max-budget-usd=N  (stream-json) the result's text names the spend cap it was given
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, writeFileSync } from 'node:fs';

const ENV_NAMES = [
  'SLACK_BOT_TOKEN',
  'DISCORD_TOKEN',
  'DATABASE_URL',
  'METRICS_TOKEN',
  'SLACK_SIGNING_SECRET',
  'ANTHROPIC_API_KEY',
  'FAKE_CODING_KEPT',
];

const options = process.argv.slice(2).filter((arg) => arg.startsWith('--'));
const positional = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
const option = (name) => options.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
const mode = option('mode') ?? process.env.FAKE_CODING_MODE ?? 'stream-json';
const ignoreTerm = options.includes('--ignore-term');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const line = (value) => process.stdout.write(`${typeof value === 'string' ? value : JSON.stringify(value)}\n`);

async function readTask() {
  if (positional.length) return { task: positional[0], source: 'argv' };
  let task = '';
  for await (const chunk of process.stdin) task += chunk;
  return { task, source: 'stdin' };
}

/** Does the task's "write NAME: TEXT"; returns NAME, or undefined for any other task. */
function doTask(task) {
  const match = /^write ([\w.-]+): ([\s\S]*)$/.exec(task.trim());
  if (!match) return undefined;
  writeFileSync(match[1], `${match[2]}\n`);
  return match[1];
}

/** The result's reported spend, from --cost, --usage and --model-usage. */
function spend() {
  const tokens = (value) => {
    const [input, output, read, write] = value.split('/').map(Number);
    return { input, output, read, write };
  };
  const reported = {};
  if (option('cost') !== undefined) reported.total_cost_usd = Number(option('cost'));
  if (option('usage') !== undefined) {
    const t = tokens(option('usage'));
    reported.usage = {
      input_tokens: t.input,
      output_tokens: t.output,
      cache_read_input_tokens: t.read,
      cache_creation_input_tokens: t.write,
    };
  }
  if (option('model-usage') !== undefined) {
    const t = tokens(option('model-usage'));
    reported.modelUsage = {
      'claude-fake': {
        inputTokens: t.input,
        outputTokens: t.output,
        cacheReadInputTokens: t.read,
        cacheCreationInputTokens: t.write,
        costUSD: reported.total_cost_usd ?? 0,
      },
    };
  }
  return reported;
}

async function streamJson(task) {
  line({ type: 'system', subtype: 'init', cwd: process.cwd(), tools: ['Read', 'Write', 'Bash'] });
  line({ type: 'assistant', message: { role: 'assistant', content: [{ type: 'text', text: 'Reading the task.' }] } });
  const file = doTask(task) ?? 'nothing.txt';
  const toolUse = {
    type: 'assistant',
    message: {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Writing the file.' },
        { type: 'tool_use', id: 'toolu_1', name: 'Write', input: { file_path: file, content: 'x' } },
        { type: 'tool_use', id: 'toolu_2', name: 'Bash', input: { command: 'echo `date`' } },
      ],
    },
  };
  const text = `${JSON.stringify(toolUse)}\n`;
  process.stdout.write(text.slice(0, 40));
  await sleep(30);
  process.stdout.write(text.slice(40));
  line({
    type: 'user',
    message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'ok' }] },
  });
  line({ type: 'stream_event', event: { type: 'message_stop' } });
  if (option('sleep-ms')) await sleep(Number(option('sleep-ms')));
  const cap = option('max-budget-usd') === undefined ? '' : ` (spend cap $${option('max-budget-usd')})`;
  line({ type: 'result', subtype: 'success', is_error: false, result: `Wrote ${file} as asked${cap}.`, ...spend() });
}

function plain(task, source) {
  line(`task from ${source}: ${task.trim()}`);
  const file = doTask(task);
  line(`\u001b[32mwrote ${file ?? 'nothing'}\u001b[0m`);
  line('');
  line('done');
}

async function hang() {
  const code = `
    require('node:fs').writeFileSync(${JSON.stringify(option('pid-file') ?? 'grandchild.pid')}, String(process.pid));
    ${ignoreTerm ? "process.on('SIGTERM', () => {});" : ''}
    setInterval(() => {}, 1000);`;
  // Not detached: the grandchild stays in the agent's process group, as a CLI's subprocesses do.
  spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (ignoreTerm) process.on('SIGTERM', () => {});
  line('working on it');
  await new Promise(() => setInterval(() => {}, 1000));
}

function fail() {
  line('starting');
  process.stderr.write('warning: nothing serious\nerror: something broke\n');
  process.exit(3);
}

function env() {
  for (const name of ENV_NAMES) line(`${name}: ${process.env[name] === undefined ? 'unset' : 'set'}`);
}

function gitCommit() {
  const identity = {
    GIT_AUTHOR_NAME: 'cli',
    GIT_AUTHOR_EMAIL: 'cli@localhost',
    GIT_COMMITTER_NAME: 'cli',
    GIT_COMMITTER_EMAIL: 'cli@localhost',
  };
  for (const args of [
    ['add', '-A'],
    ['commit', '-q', '-m', 'by the cli'],
  ]) {
    const run = spawnSync('git', args, { env: { ...process.env, ...identity }, encoding: 'utf8' });
    if (run.status !== 0) process.stderr.write(`git ${args[0]} failed: ${run.stderr}\n`);
  }
}

const { task, source } = await readTask();
if (option('started')) appendFileSync(option('started'), `${task.trim()}\n`);
if (mode === 'hang' || task.trim() === 'hang') await hang();
else if (mode === 'stream-json') await streamJson(task);
else if (mode === 'plain') plain(task, source);
else if (mode === 'fail') fail();
else if (mode === 'env') env();
else {
  process.stderr.write(`unknown mode ${mode}\n`);
  process.exit(2);
}
if (options.includes('--git-commit')) gitCommit();
