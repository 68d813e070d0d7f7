import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunCommandTool } from '../../src/agent/tools/run-command.ts';
import { INSTALL_DIR } from '../../src/config.ts';
import { saveToInbox } from '../../src/files/inbox.ts';
import { ProgramSandbox } from '../../src/sandbox/sandbox.ts';
import { unconfinedSandbox } from '../helpers/sandbox.ts';
import { testToolContext } from '../helpers/tools.ts';
import {
  BOT_SECRETS,
  fetchScript,
  leaked,
  loopbackServer,
  makeDeployment,
  startEnvironment,
  withBotSecrets,
  type Deployment,
} from './fixture.ts';

// Each run below is what run_command executes once a person has approved it (the tool's execute is
// called past the card), in the real bubblewrap.
let deployment: Deployment;
let restoreEnv: () => void;

beforeAll(() => {
  deployment = makeDeployment();
  restoreEnv = withBotSecrets();
});
afterAll(() => {
  restoreEnv();
  deployment.cleanup();
});

async function run(sandbox: ProgramSandbox, command: string[]) {
  const tool = createRunCommandTool(deployment.workspace, sandbox);
  const out = await tool.execute(tool.input.parse({ command }), testToolContext({ conversationId: deployment.own }));
  return typeof out === 'string' ? { content: out, isError: false } : { isError: false, ...out };
}

const sh = (script: string) => ['sh', '-c', script];

describe('run_command in the sandbox', () => {
  it("shows nothing of the bot's environment: not through /proc, not in its own", async () => {
    const sandbox = await deployment.sandbox();
    const result = await run(
      sandbox,
      sh(`cat /proc/$PPID/environ; echo; cat /proc/1/environ; echo; cat /proc/${process.pid}/environ; echo; env`),
    );
    expect(leaked(result.content)).toEqual([]);
    expect(startEnvironment().filter((entry) => result.content.includes(entry))).toEqual([]);
    // It ran, and saw only the allowlist: a private home, no variable of the bot's.
    expect(result.content).toContain('HOME=/tmp/.home');
    for (const name of Object.keys(BOT_SECRETS)) expect(result.content).not.toContain(`${name}=`);
  });

  it("cannot see the bot's processes: its PID namespace holds only the program's own", async () => {
    const result = await run(await deployment.sandbox(), sh('ls /proc | grep -E "^[0-9]+$" | sort -n | tr "\\n" " "'));
    const pids = result.content.split('\n')[2]!.trim().split(' ').map(Number);
    expect(pids.length).toBeLessThan(10);
    expect(pids).not.toContain(process.pid);
  });

  it("cannot read the checkout's .env, its data, the bot's home or Countersign's own files", async () => {
    const result = await run(
      await deployment.sandbox(),
      sh(
        `cat ../../.env; cat ${deployment.app}/.env; ls ${deployment.app}/.data; cat ${deployment.home}/.pgpass; ls ${INSTALL_DIR}/src; echo done`,
      ),
    );
    expect(leaked(result.content)).toEqual([]);
    expect(result.content).not.toContain('PG_VERSION');
    expect(result.content).not.toContain('config.ts');
    expect(result.content).toContain('done');
  });

  it("reads its own conversation's inbox and never another's", async () => {
    const result = await run(
      await deployment.sandbox(),
      sh(
        `cat inbox/${path.basename(deployment.ownInbox)}/mine.txt; cat inbox/${path.basename(deployment.otherInbox)}/theirs.txt; ls -A inbox`,
      ),
    );
    expect(result.content).toContain('sent here');
    const printed = result.content.slice(result.content.indexOf('stdout:'), result.content.indexOf('stderr:'));
    expect(printed).not.toContain('sent elsewhere');
    expect(printed).not.toContain(path.basename(deployment.otherInbox));
  });

  it('writes in the workspace and nowhere else', async () => {
    const result = await run(
      await deployment.sandbox(),
      sh(
        `echo in > made-here.txt; echo out > ../../outside.txt; echo out > ${deployment.dir}/outside.txt; echo out > /tmp/cs-sandbox-escape.txt; echo out > /usr/cs-sandbox-escape.txt; echo end`,
      ),
    );
    expect(result.content).toContain('end');
    expect(readFileSync(path.join(deployment.workspace, 'made-here.txt'), 'utf8')).toBe('in\n');
    expect(existsSync(path.join(deployment.app, 'outside.txt'))).toBe(false);
    expect(existsSync(path.join(deployment.dir, 'outside.txt'))).toBe(false);
    expect(existsSync('/tmp/cs-sandbox-escape.txt')).toBe(false);
    expect(existsSync('/usr/cs-sandbox-escape.txt')).toBe(false);
  });

  it('reaches no loopback server while the network is off, and reaches it when SANDBOX_NETWORK allows run_command', async () => {
    const server = await loopbackServer();
    try {
      const off = await run(await deployment.sandbox(), [process.execPath, '-e', fetchScript(server.url)]);
      expect(off.content).toContain('FAILED');
      expect(server.hits()).toBe(0);
      const on = await run(await deployment.sandbox(['run_command']), [
        process.execPath,
        '-e',
        fetchScript(server.url),
      ]);
      expect(on.content).toContain('BODY reached the loopback server');
      expect(server.hits()).toBe(1);
    } finally {
      await server.close();
    }
  });

  it('tells the approver on the card where the program runs and whether it has the network', async () => {
    const card = async (sandbox: ProgramSandbox) =>
      createRunCommandTool(deployment.workspace, sandbox).describeForApproval!(
        { command: ['make'], cwd: '.', timeoutSeconds: 60 },
        testToolContext(),
      );
    expect(await card(await deployment.sandbox())).toContain('sandbox: the workspace only · network off');
    expect(await card(await deployment.sandbox(['run_command']))).toContain('sandbox: the workspace only · network on');
    expect(await card(unconfinedSandbox())).toContain('sandbox: OFF (SANDBOX=off)');
  });

  it('refuses to start anything where no sandbox can run, naming SANDBOX=off as the way out', async () => {
    const none = new ProgramSandbox(
      { kind: 'unavailable', reason: 'bubblewrap (bwrap) is not installed' },
      {
        granted: [],
        protected: [],
      },
    );
    const result = await run(none, sh('echo should-not-run > ran.txt'));
    expect(result.isError).toBe(true);
    expect(result.content).toContain('bubblewrap (bwrap) is not installed');
    expect(result.content).toContain('SANDBOX=off');
    expect(existsSync(path.join(deployment.workspace, 'ran.txt'))).toBe(false);
  });

  it('refuses a workspace that holds the bot’s own files (AGENT_WORKSPACE_ROOT set to the checkout)', async () => {
    const tool = createRunCommandTool(deployment.app, await deployment.sandbox());
    const out = await tool.execute(tool.input.parse({ command: ['cat', '.env'] }), testToolContext());
    const result = typeof out === 'string' ? { content: out } : out;
    expect(result.isError).toBe(true);
    expect(leaked(result.content)).toEqual([]);
    expect(result.content).toContain("which is Countersign's own");
  });

  it('mounts nothing a .git file planted in the workspace names', async () => {
    const privateDir = path.join(deployment.dir, 'private');
    mkdirSync(privateDir, { recursive: true });
    writeFileSync(path.join(privateDir, 'secret.txt'), 'private to the host\n');
    // A fake git folder in the workspace whose commondir points at the host folder.
    const fake = path.join(deployment.workspace, 'fakegit');
    mkdirSync(fake, { recursive: true });
    writeFileSync(path.join(fake, 'commondir'), privateDir);
    writeFileSync(path.join(fake, 'gitdir'), path.join(deployment.workspace, '.git'));
    writeFileSync(path.join(deployment.workspace, '.git'), `gitdir: ${fake}\n`);
    try {
      const result = await run(await deployment.sandbox(), ['cat', path.join(privateDir, 'secret.txt')]);
      expect(result.content).not.toContain('private to the host');
    } finally {
      rmSync(path.join(deployment.workspace, '.git'));
    }
  });

  it('refuses to run when the inbox folder is a link out of the workspace', async () => {
    const privateDir = path.join(deployment.dir, 'linked-inbox');
    mkdirSync(path.join(privateDir, path.basename(deployment.ownInbox)), { recursive: true });
    writeFileSync(path.join(privateDir, path.basename(deployment.ownInbox), 'host.txt'), 'a host file\n');
    const workspace = path.join(deployment.dir, 'linked-workspace');
    mkdirSync(workspace);
    symlinkSync(privateDir, path.join(workspace, 'inbox'));
    const tool = createRunCommandTool(workspace, await deployment.sandbox());
    const out = await tool.execute(
      tool.input.parse({ command: ['sh', '-c', `cat inbox/*/host.txt ${privateDir}/*/host.txt`] }),
      testToolContext({ conversationId: deployment.own }),
    );
    const content = typeof out === 'string' ? out : out.content;
    expect(content).not.toContain('a host file');
    expect(content).toContain('symbolic link');
  });

  it("plants no link in a fresh workspace's inbox/ that would carry another conversation's received files to it", async () => {
    // A fresh deployment: nobody has sent a file yet, so the shared workspace has no inbox/ folder.
    const workspace = path.join(deployment.dir, 'fresh-workspace');
    mkdirSync(path.join(workspace, 'public'), { recursive: true });
    const otherFolder = path.basename(deployment.otherInbox);
    const tool = createRunCommandTool(workspace, await deployment.sandbox());
    await tool.execute(
      tool.input.parse({
        command: sh(`mkdir -p inbox; ln -s ../public inbox/${otherFolder}; ln -s public inbox-all; echo planted`),
      }),
      testToolContext({ conversationId: deployment.own }),
    );
    // Later someone sends a private file in the other conversation (a DM): it is saved in its own
    // inbox folder, or not at all — never where the first conversation's tools and programs read.
    const saved = await saveToInbox(workspace, deployment.other, 'payslip.txt', Buffer.from('private\n')).catch(
      (error: Error) => error,
    );
    expect(readdirSync(path.join(workspace, 'public'))).toEqual([]);
    if (!(saved instanceof Error)) {
      expect(saved).toBe(`inbox/${otherFolder}/payslip.txt`);
      expect(lstatSync(path.join(workspace, 'inbox', otherFolder)).isDirectory()).toBe(true);
    }
  });

  it('saves no received file through a link in inbox/, wherever it leads in the workspace', async () => {
    const workspace = path.join(deployment.dir, 'linked-inbox-workspace');
    mkdirSync(path.join(workspace, 'public'), { recursive: true });
    symlinkSync('public', path.join(workspace, 'inbox'));
    const saved = await saveToInbox(workspace, deployment.other, 'payslip.txt', Buffer.from('private\n')).catch(
      (error: Error) => error,
    );
    expect(saved).toBeInstanceOf(Error);
    expect(String(saved)).toContain('link');
    expect(readdirSync(path.join(workspace, 'public'))).toEqual([]);
  });

  it("shows a repository's own inbox/ folder in its worktree (received files live in the shared workspace)", async () => {
    const worktree = path.join(deployment.dir, 'worktree-with-inbox');
    mkdirSync(path.join(worktree, 'inbox'), { recursive: true });
    writeFileSync(path.join(worktree, 'inbox', 'fixture.txt'), 'part of the repository\n');
    const tool = createRunCommandTool(deployment.workspace, await deployment.sandbox(), () => worktree);
    const out = await tool.execute(
      tool.input.parse({ command: ['cat', 'inbox/fixture.txt'] }),
      testToolContext({ conversationId: deployment.own }),
    );
    expect(typeof out === 'string' ? out : out.content).toContain('part of the repository');
  });

  it('with SANDBOX=off, is exactly what it trusts: the program reads the bot’s environment through /proc', async () => {
    // What every run did before the sandbox, and what SANDBOX=off still does (docs/sandbox.md).
    const result = await run(unconfinedSandbox(), sh('cat /proc/$PPID/environ'));
    expect(startEnvironment().filter((entry) => result.content.includes(entry))).not.toEqual([]);
  });
});
