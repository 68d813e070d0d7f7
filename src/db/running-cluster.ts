import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { LEGACY_PASSWORD, dataDirForPostgresUser, readClusterPassword, runsAsRoot } from './embedded-data-dir.ts';
import { isPostmasterOf } from './postmaster.ts';

/**
 * What a running postmaster wrote in its data directory's postmaster.pid: line 1 its pid, line 4
 * its port, line 5 its socket directory, line 6 its first listen address (Postgres' own layout,
 * src/include/utils/pidfile.h).
 */
interface PostmasterPid {
  pid: number;
  port: number;
  socketDir: string;
  listenAddress: string;
}

async function readPostmasterPid(dir: string): Promise<PostmasterPid | undefined> {
  let text: string;
  try {
    text = await readFile(path.join(dir, 'postmaster.pid'), 'utf8');
  } catch {
    return undefined;
  }
  const lines = text.split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port) || port <= 0) return undefined;
  return { pid, port, socketDir: lines[4]?.trim() ?? '', listenAddress: lines[5]?.trim() ?? '' };
}

/** The host to reach a postmaster at: its listen address, a wildcard's loopback, or its socket directory. */
function hostOf(found: PostmasterPid): string | undefined {
  const address = found.listenAddress.split(',')[0]?.trim() ?? '';
  if (address === '*' || address === '0.0.0.0') return '127.0.0.1';
  if (address === '::') return '[::1]';
  if (address !== '') return address.includes(':') ? `[${address}]` : address;
  return found.socketDir || undefined;
}

/**
 * The connection string of the embedded cluster another Countersign process (`npm start`) is
 * running in `dir`, or undefined when none runs there. The operator's commands use it instead of
 * starting their own, which Postgres would refuse while the pid file names a live postmaster.
 * As root the cluster may live where the `postgres` user can reach it (dataDirForPostgresUser).
 */
export async function runningEmbeddedUrl(dir: string, database = 'countersign'): Promise<string | undefined> {
  const candidates = runsAsRoot() ? [dir, dataDirForPostgresUser(dir)] : [dir];
  for (const dataDir of candidates) {
    const found = await readPostmasterPid(dataDir);
    if (!found || (await isPostmasterOf(found.pid, dataDir)) !== true) continue;
    const host = hostOf(found);
    if (!host) continue;
    const password = (await readClusterPassword(dataDir)) ?? LEGACY_PASSWORD;
    const base = `postgres://countersign:${encodeURIComponent(password)}@`;
    if (host.startsWith('/')) {
      return `${base}/${database}?host=${encodeURIComponent(host)}&port=${found.port}`;
    }
    return `${base}${host}:${found.port}/${database}`;
  }
  return undefined;
}
