/**
 * Content that is a credential whatever the file is called: private keys, cloud and chat tokens,
 * `NAME=value` lines of secrets. A card shows a file's first lines; it never shows these.
 */
const SECRET_CONTENT: ReadonlyArray<[string, RegExp]> = [
  ['a private key', /-----BEGIN [A-Z ]*PRIVATE KEY-----/],
  ['an AWS access key', /\b(AKIA|ASIA)[0-9A-Z]{16}\b/],
  ['a chat token', /\bxox[abposr]-[0-9A-Za-z-]{10,}/],
  ['an API key', /\b(sk-[A-Za-z0-9_-]{20,}|ghp_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})/],
  [
    'a secret setting',
    /^\s*(export\s+)?[A-Z0-9_]*(SECRET|TOKEN|PASSWORD|PASSWD|API_KEY|PRIVATE_KEY)[A-Z0-9_]*\s*=\s*\S/m,
  ],
];

/** What kind of secret `text` seems to hold, or undefined. */
export function secretIn(text: string): string | undefined {
  return SECRET_CONTENT.find(([, pattern]) => pattern.test(text))?.[0];
}
