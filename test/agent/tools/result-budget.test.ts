import { describe, expect, it } from 'vitest';
import { CHARS_PER_TOKEN, findIdentifiers, fitToBudget } from '../../../src/agent/tools/result-budget.ts';

/** A 200k-token log (about 800k characters) with identifiers of every kind buried in its middle. */
function hugeLog(): { text: string; buried: string[] } {
  const buried = [
    'https://grafana.example.com/d/abc123/api-latency?from=now-1h',
    '3f2a9c1e-77b4-4c2e-9d0a-1b2c3d4e5f60',
    '9fceb02d0ae598e95dc970b74767f19372d61af8',
    'oncall+db@example.org',
    'payments-api-7d9f8c6b5-x2k4p',
    'OPS-4821',
    '/var/log/payments/error.log',
  ];
  const rows = Array.from(
    { length: 10_000 },
    (_, i) =>
      `2024-06-01T12:${String(i % 60).padStart(2, '0')}:00Z INFO request served in ${i % 97} ms ${'.'.repeat(40)}`,
  );
  rows[4_000] = `ERROR upstream failed, dashboard ${buried[0]} request ${buried[1]}`;
  rows[5_000] = `WARN rollback to ${buried[2]} notified ${buried[3]}`;
  rows[6_000] = `ERROR pod ${buried[4]} crashed, see ${buried[5]} and ${buried[6]}`;
  const body = rows.join('\n');
  return { text: `BEGIN REPORT\n${body}\n${body}\nEND REPORT`, buried };
}

describe('large tool results', () => {
  it('pass through unchanged when they fit', () => {
    const text = 'x'.repeat(25_000 * CHARS_PER_TOKEN);
    expect(fitToBudget(text)).toBe(text);
  });

  it('fit a 200k-token result into the budget, keeping its start, its end and the identifiers from the middle', () => {
    const { text, buried } = hugeLog();
    expect(text.length).toBeGreaterThan(800_000);
    const fitted = fitToBudget(text, { maxTokens: 25_000 });
    expect(fitted.length).toBeLessThanOrEqual(25_000 * CHARS_PER_TOKEN);
    expect(fitted.startsWith('BEGIN REPORT\n')).toBe(true);
    expect(fitted.endsWith('\nEND REPORT')).toBe(true);
    expect(fitted).toMatch(
      new RegExp(`\\[cut \\d+ of ${text.length} characters to fit the budget; identifiers from the cut part: `),
    );
    const middle = fitted.slice(fitted.indexOf('[cut '));
    for (const id of buried) expect(middle).toContain(id);
  });

  it('lists each identifier once', () => {
    const { text, buried } = hugeLog();
    const fitted = fitToBudget(text, 25_000);
    const note = fitted.slice(fitted.indexOf('[cut '), fitted.indexOf(']\n', fitted.indexOf('[cut ')));
    for (const id of buried) expect(note.split(id).length - 1).toBe(1);
  });

  it('cuts at line boundaries so the kept lines are whole', () => {
    const { text } = hugeLog();
    const fitted = fitToBudget(text, 25_000);
    const before = fitted.slice(0, fitted.indexOf('[cut '));
    const after = fitted.slice(fitted.indexOf(']\n', fitted.indexOf('[cut ')) + 2);
    expect(before.endsWith('\n')).toBe(true);
    expect(text.startsWith(before)).toBe(true);
    expect(text.endsWith(`\n${after}`)).toBe(true);
  });

  it('cuts a megabyte of adversarial text in linear time, still listing the identifiers buried in it', () => {
    // Runs that made the identifier scan quadratic (200 KB of `a-a-…` took 24 s; this megabyte
    // would take ten minutes): each kind started again from every word boundary in the run.
    const run = (unit: string) => unit.repeat(100_000);
    const text = [
      'BEGIN',
      run('a-'),
      'pod payments-api-7d9f8c6b5-x2k4p died',
      run('a.'),
      'mail oncall+db@example.org now',
      run('a+'),
      'see /var/log/payments/error.log',
      `${run('ab.c-')}@`,
      'END',
    ].join('\n');
    expect(text.length).toBeGreaterThan(1_000_000);
    const fitted = fitToBudget(text, { maxTokens: 1_000 });
    expect(fitted.length).toBeLessThanOrEqual(1_000 * CHARS_PER_TOKEN);
    expect(fitted.startsWith('BEGIN\n')).toBe(true);
    expect(fitted.endsWith(']\nEND')).toBe(true);
    expect(fitted).toContain(
      'identifiers from the cut part: oncall+db@example.org, /var/log/payments/error.log, payments-api-7d9f8c6b5-x2k4p]',
    );
  });

  it('honours a smaller budget', () => {
    const { text } = hugeLog();
    expect(fitToBudget(text, { maxTokens: 1_000 }).length).toBeLessThanOrEqual(4_000);
  });
});

describe('identifier extraction', () => {
  it('finds URLs, e-mails, UUIDs, ticket keys, hex ids, paths and Kubernetes-style names', () => {
    expect(
      findIdentifiers(
        'see https://logs.example.com/q?id=991. commit 3f2a9c1 on node ip-10-0-3-17.ec2.internal, pod api-7d9f8c6b5-x2k4p, ' +
          'file src/agent/loop.ts and /etc/nginx/nginx.conf, ticket INC-42, a.b@example.org, 0b7e2a4c-1d2e-4f3a-8b9c-0d1e2f3a4b5c',
      ),
    ).toEqual([
      'https://logs.example.com/q?id=991',
      'a.b@example.org',
      '0b7e2a4c-1d2e-4f3a-8b9c-0d1e2f3a4b5c',
      'INC-42',
      '3f2a9c1',
      'src/agent/loop.ts',
      '/etc/nginx/nginx.conf',
      'ip-10-0-3-17.ec2.internal',
      'api-7d9f8c6b5-x2k4p',
    ]);
  });

  it('ignores plain numbers, ordinary words and hyphenated prose', () => {
    expect(findIdentifiers('at 1717243200 the facade defaced a well-known long-standing issue')).toEqual([]);
  });
});
