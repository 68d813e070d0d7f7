import { execFile } from 'node:child_process';

/**
 * Git, run so that nothing in a repository can make it run a program. A repository the bot works
 * on is data a person may not trust: its `.git/config` can name an fsmonitor, a hooks directory, a
 * pager, a diff or merge driver, a filter or a credential helper, each a program git would start.
 * So git runs through `execFile` (never a shell) with:
 * - no system or global configuration (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`), no
 *   terminal prompts, no pager, no editor;
 * - the settings that run programs fixed on the command line (`-c`, which wins over every file);
 * - every key of the repository's own configuration that names a filter, merge driver or remote
 *   helper emptied (the drivers a `.gitattributes` selects are config keys), and diffs made with
 *   `--no-ext-diff --no-textconv`, so no diff driver runs.
 */

/** Settings that run a program, fixed for every git call. `core.hooksPath` at /dev/null: no hooks. */
const FIXED = [
  'core.hooksPath=/dev/null',
  'core.fsmonitor=false',
  'core.pager=cat',
  'core.editor=true',
  'core.sshCommand=false',
  'core.askPass=',
  'core.gitProxy=',
  'credential.helper=',
  'gpg.program=false',
  'gpg.ssh.program=false',
  'gpg.x509.program=false',
  'gpg.openpgp.program=false',
  'gpg.ssh.defaultKeyCommand=',
  'commit.gpgSign=false',
  'tag.gpgSign=false',
  'core.alternateRefsCommand=',
  'uploadpack.packObjectsHook=',
  'protocol.ext.allow=never',
  'safe.bareRepository=explicit',
  // A file rewritten at the same size with its old mtime restored still changes its ctime: a
  // repository that says not to trust ctime would hide that content from `diff` and `add`.
  'core.trustctime=true',
  'core.checkStat=default',
] as const;

/** Keys of a repository's own configuration that name a program (for the drivers it declares). */
const PROGRAM_KEYS =
  /^(filter\.[^.]+\.(clean|smudge|process)|remote\.[^.]+\.(uploadpack|receivepack|vcs)|trailer\.[^.]+\.(command|cmd))$/i;

/**
 * A merge driver the repository declares becomes `false`, not empty: git runs the command `false`,
 * which fails, so the file counts as a conflict (an empty driver fails the whole merge instead).
 */
const MERGE_DRIVER_KEY = /^merge\.[^.]+\.driver$/i;

const ENV: NodeJS.ProcessEnv = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_TERMINAL_PROMPT: '0',
  GIT_PAGER: 'cat',
  GIT_EDITOR: 'true',
  GIT_OPTIONAL_LOCKS: '0',
  LC_ALL: 'C',
  // Commits the bot makes name it; the requester goes in a trailer.
  GIT_AUTHOR_NAME: 'Countersign',
  GIT_AUTHOR_EMAIL: 'countersign@localhost',
  GIT_COMMITTER_NAME: 'Countersign',
  GIT_COMMITTER_EMAIL: 'countersign@localhost',
};

export class GitError extends Error {
  readonly args: readonly string[];
  readonly stderr: string;
  /** What git printed before it failed (merge-tree lists conflicts there). */
  readonly stdout: string;
  /** git's exit code; null when it did not exit on its own (a timeout, a signal). */
  readonly exitCode: number | null;
  constructor(
    args: readonly string[],
    output: { stdout: string; stderr: string; exitCode: number | null },
    cause?: unknown,
  ) {
    const { stderr } = output;
    super(`git ${args.join(' ')} failed: ${stderr.trim().split('\n').slice(-3).join(' ') || String(cause)}`);
    this.name = 'GitError';
    this.args = args;
    this.stderr = stderr;
    this.stdout = output.stdout;
    this.exitCode = output.exitCode;
  }
}

/** Output of one git call. */
export interface GitOutput {
  stdout: string;
  stderr: string;
}

const TIMEOUT_MS = 60_000;
const MAX_BUFFER = 64 * 1024 * 1024;

function spawnGit(
  cwd: string,
  settings: readonly string[],
  args: readonly string[],
  env: NodeJS.ProcessEnv = ENV,
): Promise<GitOutput> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      [...settings, ...args],
      { cwd, env, timeout: TIMEOUT_MS, maxBuffer: MAX_BUFFER, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (error) {
          const exitCode = typeof error.code === 'number' ? error.code : null;
          reject(
            new GitError(
              args.filter((a) => !a.includes('=')),
              { stdout, stderr, exitCode },
              error,
            ),
          );
        } else resolve({ stdout, stderr });
      },
    );
  });
}

const fixedArgs = FIXED.flatMap((setting) => ['-c', setting]);

/**
 * The program-naming keys of the repository's own configuration (includes followed), each as an
 * override that empties it. Reading configuration runs nothing.
 */
async function neutralised(cwd: string): Promise<string[]> {
  return (await repositoryOverrides(cwd)).flatMap(([key, value]) => ['-c', `${key}=${value}`]);
}

/** The overrides of the repository's own program-naming keys, as key/value pairs. */
async function repositoryOverrides(cwd: string): Promise<Array<[string, string]>> {
  const { stdout } = await spawnGit(cwd, fixedArgs, ['config', '--includes', '--null', '--list']).catch(() => ({
    stdout: '',
  }));
  const keys = new Set<string>();
  for (const entry of stdout.split('\0')) {
    const key = entry.split('\n', 1)[0] ?? '';
    if (PROGRAM_KEYS.test(key) || MERGE_DRIVER_KEY.test(key)) keys.add(key);
  }
  return [...keys].map((key) => [key, MERGE_DRIVER_KEY.test(key) ? 'false' : '']);
}

/**
 * The same settings as environment variables (`GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_n`, …), for a
 * program that runs git itself in the repository (an external coding agent): git reads them as if
 * given with `-c`, above the repository's own configuration.
 */
export async function safeGitEnvironment(cwd: string): Promise<NodeJS.ProcessEnv> {
  const pairs: Array<[string, string]> = [
    ...FIXED.map((setting): [string, string] => {
      const at = setting.indexOf('=');
      return [setting.slice(0, at), setting.slice(at + 1)];
    }),
    ...(await repositoryOverrides(cwd)),
  ];
  const env: NodeJS.ProcessEnv = { GIT_CONFIG_COUNT: String(pairs.length) };
  pairs.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return env;
}

/**
 * Commands that can hand a diff to a program (`diff.external`, a driver's `command` or `textconv`):
 * given flags that keep git's own diff. An empty override would not do: git tries to run "".
 */
const DIFFS = new Set(['diff', 'log', 'show', 'format-patch']);

/**
 * Runs git in `cwd` with nothing in the repository able to start a program. `operatorEnv`: variables
 * the operator set for this call (a push's GIT_SSH_COMMAND) — the operator's, never the repository's.
 */
export async function git(
  cwd: string,
  args: readonly string[],
  operatorEnv: NodeJS.ProcessEnv = {},
): Promise<GitOutput> {
  const [command, ...rest] = args;
  const safeArgs = command && DIFFS.has(command) ? [command, '--no-ext-diff', '--no-textconv', ...rest] : args;
  return spawnGit(cwd, [...fixedArgs, ...(await neutralised(cwd))], safeArgs, { ...ENV, ...operatorEnv });
}
