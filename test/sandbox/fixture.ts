import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inboxFolderOf } from '../../src/core/inbox.ts';
import { realPath } from '../../src/sandbox/bwrap-arguments.ts';
import { openProgramSandbox, type ProgramSandbox } from '../../src/sandbox/sandbox.ts';
import type { NetworkUser } from '../../src/sandbox/settings.ts';

/** Values the bot holds that no sandboxed program may print: set in this process's environment and `.env`. */
export const BOT_SECRETS = {
  DATABASE_URL: 'postgres://bot:sandbox-test-db-password@127.0.0.1/bot',
  SLACK_BOT_TOKEN: 'xoxb-sandbox-test-token',
  TOKEN_ENCRYPTION_KEY: 'sandbox-test-encryption-key',
} as const;

const DOTENV_SECRET = 'sandbox-test-dotenv-secret';

/** Whether `text` holds any of the bot's secrets. */
export function leaked(text: string): string[] {
  return [...Object.values(BOT_SECRETS), DOTENV_SECRET].filter((secret) => text.includes(secret));
}

/**
 * A deployment laid out as the bot's is, in a temporary folder of the test's own: its checkout
 * (`app/`, with `.env` and `.data/`), the shared workspace `app/data/workspace` with two
 * conversations' inboxes, and a home folder of the bot's.
 */
export interface Deployment {
  dir: string;
  app: string;
  workspace: string;
  home: string;
  /** The conversation the runs belong to, and another one. */
  own: string;
  other: string;
  ownInbox: string;
  otherInbox: string;
  /** A sandbox over this layout: the real bubblewrap, network for `network`. */
  sandbox(network?: NetworkUser[], granted?: string[]): Promise<ProgramSandbox>;
  cleanup(): void;
}

export function makeDeployment(): Deployment {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'cs-sandbox-')));
  const app = path.join(dir, 'app');
  const workspace = path.join(app, 'data', 'workspace');
  const home = path.join(dir, 'home');
  const own = 'C-own';
  const other = 'C-other';
  const ownInbox = path.join(workspace, 'inbox', inboxFolderOf(own));
  const otherInbox = path.join(workspace, 'inbox', inboxFolderOf(other));
  for (const folder of [ownInbox, otherInbox, path.join(app, '.data', 'postgres'), home])
    mkdirSync(folder, { recursive: true });
  writeFileSync(path.join(app, '.env'), `SECRET_IN_DOTENV=${DOTENV_SECRET}\n`);
  writeFileSync(path.join(app, '.data', 'postgres', 'PG_VERSION'), '17\n');
  writeFileSync(path.join(home, '.pgpass'), `*:*:*:*:${BOT_SECRETS.DATABASE_URL}\n`);
  writeFileSync(path.join(ownInbox, 'mine.txt'), 'sent here\n');
  writeFileSync(path.join(otherInbox, 'theirs.txt'), 'sent elsewhere\n');
  return {
    dir,
    app,
    workspace,
    home,
    own,
    other,
    ownInbox,
    otherInbox,
    sandbox: (network = [], granted = []) =>
      openProgramSandbox(
        'on',
        {
          // Node's own folder, as openSandbox grants it: `node` programs run on the bot's Node.
          granted: [path.dirname(realPath(process.execPath)), ...granted],
          protected: [app, path.join(app, '.env'), path.join(app, '.data'), home],
        },
        network,
      ),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * The environment this process was started with, as /proc shows it (what `process.env` changes
 * never reach): every entry but the allowlisted names a sandboxed program may share with it.
 */
export function startEnvironment(): string[] {
  return readFileSync(`/proc/${process.pid}/environ`, 'utf8')
    .split('\0')
    .filter((entry) => entry.includes('=') && !/^(PATH|LANG|TERM|HOME)=/.test(entry));
}

/** Sets the bot's secrets in this process's environment for the duration of a test file. */
export function withBotSecrets(): () => void {
  const saved = Object.fromEntries(Object.keys(BOT_SECRETS).map((name) => [name, process.env[name]]));
  Object.assign(process.env, BOT_SECRETS);
  return () => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
}

/** A loopback HTTP server that counts the requests that reach it. */
export async function loopbackServer(): Promise<{ url: string; hits: () => number; close: () => Promise<void> }> {
  let hits = 0;
  const server: Server = createServer((_req, res) => {
    hits += 1;
    res.end('reached the loopback server');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    hits: () => hits,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A Node one-liner that fetches `url` and prints the body, or the error's cause. */
export function fetchScript(url: string): string {
  return `fetch(${JSON.stringify(url)}).then((r) => r.text()).then((t) => console.log('BODY', t), (e) => { console.log('FAILED', String(e.cause ?? e)); process.exit(1); })`;
}
