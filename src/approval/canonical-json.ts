import canonicalize from 'canonicalize';

/**
 * Canonical JSON as RFC 8785 (JCS) defines it: object keys sorted by UTF-16 code units, no
 * whitespace, numbers as ECMAScript prints them, `undefined` members dropped. The same value always
 * yields the same text, so its sha256 identifies a plan exactly.
 *
 * `canonicalize` is the implementation by the RFC's authors. It writes the same bytes as the
 * encoder it replaced for every value an envelope can hold (test/approval/canonical-json.test.ts
 * keeps the old one as the reference), so stored plan and scope hashes stay valid. It refuses
 * strings with lone surrogates, which RFC 8785 excludes and Postgres' jsonb cannot store anyway.
 */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  // A top-level undefined, function or symbol has no JSON text at all.
  if (text === undefined) throw new TypeError(`Canonical JSON cannot encode a ${typeof value}`);
  return text;
}
