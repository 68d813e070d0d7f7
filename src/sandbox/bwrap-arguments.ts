import { existsSync, lstatSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * The filesystem a sandboxed program sees, as bubblewrap arguments. It is built from an allowlist:
 * a fresh empty root, the system folders read-only, and only the paths a run names. Anything not
 * named — the bot's data, `.env`, $HOME, the Countersign checkout, /var, /run, /home, a path added
 * to the host later — is simply not there, so no new path needs a new rule to stay hidden.
 */

/** System folders every program needs (binaries, libraries, /etc for users, DNS and certificates). */
const SYSTEM_FOLDERS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc'] as const;

/** Files of /etc that hold secrets of the host (password hashes, TLS keys): never shown. */
const HOST_SECRETS = ['/etc/shadow', '/etc/gshadow', '/etc/shadow-', '/etc/gshadow-', '/etc/ssl/private'];

/** The private home every sandboxed program gets (inside its private /tmp): empty at each start. */
export const SANDBOX_HOME = '/tmp/.home';

/** What a deployment shows every sandboxed program, and what it never shows. */
export interface SandboxLayout {
  /** Read-only paths every program sees besides the system folders (SANDBOX_READ_PATHS, Node's folder). */
  granted: string[];
  /** The bot's own paths (data, .env, $HOME, its checkout): hidden wherever a visible path holds them. */
  protected: string[];
}

/** What one run may reach. Paths are absolute; each is mounted at the same path inside. */
export interface Confinement {
  /** The program's working directory: inside `writable` or `readable`, or the private home. */
  cwd?: string;
  /** Mounted read-write: the workspace or worktree (and nothing else of the host). */
  writable: string[];
  /** Mounted read-only: a worktree's git folders, an MCP server's own files. */
  readable: string[];
  /** Folders inside a writable one shown empty (other conversations' inboxes), but for `except`. */
  hidden: Array<{ path: string; except?: string }>;
  network: boolean;
  /** Files shown read-only in place of what a mounted folder holds there (a git folder's config, git-config.ts). */
  overlays?: Array<{ source: string; target: string }>;
}

/** A run the layout cannot confine as asked: it would show the bot's own files. */
export class ConfinementError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfinementError';
  }
}

/** The real path of `p` when it exists (bind mounts follow symlinks), else `p` resolved. */
export function realPath(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/**
 * Where `p` is mounted: at its path as given and, when a symlink leads there, at its real path too
 * (Node resolves a script's imports from its real path; a person names the path they know).
 */
function mountPoints(p: string): string[] {
  return [...new Set([path.resolve(p), realPath(p)])];
}

/** `flag real target` for each of `p`'s mount points. */
const bind = (flag: '--bind' | '--ro-bind', p: string) =>
  mountPoints(p).flatMap((target) => [flag, realPath(p), target]);

/** Whether `inner` is `outer` or lies inside it. */
export const within = (inner: string, outer: string) =>
  inner === outer || inner.startsWith(outer.endsWith('/') ? outer : `${outer}/`);

/** Paths a visible path must not contain (it would show them), naming the first it does. */
function shownSecret(visible: string, secrets: readonly string[]): string | undefined {
  return secrets.find((secret) => within(secret, visible));
}

/** `--ro-bind` for a folder, `--symlink` for a merged-/usr link such as /bin → usr/bin. */
function systemMount(folder: string): string[] {
  let stat;
  try {
    stat = lstatSync(folder);
  } catch {
    return [];
  }
  return stat.isSymbolicLink() ? ['--symlink', readlinkSync(folder), folder] : ['--ro-bind', folder, folder];
}

/** Hides `secret` in place: an empty folder over a folder, an empty file over a file. */
function mask(secret: string): string[] {
  try {
    return statSync(secret).isDirectory() ? ['--tmpfs', secret] : ['--ro-bind', '/dev/null', secret];
  } catch {
    return [];
  }
}

/**
 * bubblewrap's arguments for `argv` under `confinement`. Throws ConfinementError when a path to be
 * shown holds one of the bot's own (AGENT_WORKSPACE_ROOT set to the checkout would show `.env`).
 */
export function bwrapArguments(layout: SandboxLayout, confinement: Confinement, argv: readonly string[]): string[] {
  const own = layout.protected.flatMap(mountPoints);
  const secrets = [...own, ...HOST_SECRETS];
  const granted = layout.granted.filter((p) => existsSync(p));
  const writable = confinement.writable;
  const readable = confinement.readable.filter((p) => existsSync(p));
  for (const visible of [...granted, ...writable, ...readable].flatMap(mountPoints)) {
    const secret = shownSecret(visible, own);
    if (secret)
      throw new ConfinementError(
        `${visible} holds ${secret}, which is Countersign's own: a sandboxed program may not see it. Give the workspace (or the path) a folder of its own.`,
      );
  }
  const shownReadOnly: string[] = [...SYSTEM_FOLDERS, ...granted.flatMap(mountPoints)];
  const args = [
    '--die-with-parent',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    ...(confinement.network ? [] : ['--unshare-net']),
    // Run as root, bwrap would keep every capability: root in the sandbox could mknod a disk and mount it.
    '--cap-drop',
    'ALL',
    ...SYSTEM_FOLDERS.flatMap(systemMount),
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--tmpfs',
    '/tmp',
    '--dir',
    SANDBOX_HOME,
    // The bot's paths where a shown folder holds them (an install under /usr/src, a key in /etc).
    ...secrets.filter((s) => shownReadOnly.some((shown) => within(s, shown))).flatMap(mask),
    ...granted.flatMap((p) => bind('--ro-bind', p)),
    ...writable.flatMap((p) => bind('--bind', p)),
    ...readable.flatMap((p) => bind('--ro-bind', p)),
    ...(confinement.overlays ?? []).flatMap(({ source, target }) =>
      mountPoints(target).flatMap((at) => ['--ro-bind', source, at]),
    ),
    ...confinement.hidden.flatMap(({ path: folder, except }) => {
      if (!existsSync(folder)) return [];
      // A link planted in the workspace (inbox → /root) would aim these mounts at the host.
      for (const p of [folder, ...(except && existsSync(except) ? [except] : [])])
        if (lstatSync(p).isSymbolicLink() || !writable.some((w) => within(realPath(p), realPath(w))))
          throw new ConfinementError(`${p} is a symbolic link or leaves the workspace: remove it, then run again.`);
      const kept = except && existsSync(except) && within(realPath(except), realPath(folder)) ? except : undefined;
      return [...mountPoints(folder).flatMap((p) => ['--tmpfs', p]), ...(kept ? bind('--bind', kept) : [])];
    }),
    '--chdir',
    confinement.cwd ? path.resolve(confinement.cwd) : SANDBOX_HOME,
    '--',
    ...argv,
  ];
  return args;
}
