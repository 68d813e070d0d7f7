/**
 * Content that is a credential whatever the file is called: private keys, cloud and chat tokens,
 * `NAME=value` lines of secrets. A card shows a file's first lines; it never shows these.
 */
const SECRET_CONTENT: ReadonlyArray<[string, RegExp]> = [
  ['a private key', /-----BEGIN [A-Z ]*PRIVATE KEY-----/],
  ['an AWS access key', /\b(AKIA|ASIA)[0-9A-Z]{16}\b/],
  ['a chat token', /\bxox[abposr]-[0-9A-Za-z-]{10,}/],
  ['an API key', /\b(sk-[A-Za-z0-9_-]{20,}|ghp_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})/],
];

/**
 * A `NAME=value` line (dotenv, shell) whose name holds a secret's word. Written as
 * `^\s*…[A-Z0-9_]*(SECRET|…)[A-Z0-9_]*\s*=` it backtracked without bound, since `\s` crosses lines:
 * 40 KB of blank lines took 22 s on the event loop, and a file someone sent can be asked to be
 * shared. Here leading space never crosses a line, and the name is one run, looked into once: linear.
 * Space is only ` ` and `\t`: `^` also starts a line after `\r`, U+2028 and U+2029, which `[^\S\n]`
 * would take in again, quadratic on a file of them.
 */
const SECRET_SETTING =
  /^[ \t]*(?:export[ \t]+)?(?=[A-Z0-9_]*?(?:SECRET|TOKEN|PASSWORD|PASSWD|API_KEY|PRIVATE_KEY))[A-Z0-9_]+[ \t]*=[ \t]*\S/m;

/** What kind of secret `text` seems to hold, or undefined. */
export function secretIn(text: string): string | undefined {
  return [...SECRET_CONTENT, ['a secret setting', SECRET_SETTING] as const].find(([, pattern]) =>
    pattern.test(text),
  )?.[0];
}
