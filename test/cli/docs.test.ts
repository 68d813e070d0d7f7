import { readFileSync } from 'node:fs';
import { parse as parseDotenv } from 'dotenv';
import { describe, expect, it } from 'vitest';
import { ConfigSchema, loadConfig } from '../../src/config.ts';
import { builtinRules } from '../../src/policy/defaults.ts';
import { TOOL_KINDS } from '../../src/policy/schema.ts';

const variables = Object.keys(ConfigSchema.in.shape);

describe('configuration documentation', () => {
  it.each(variables)('documents %s in the README table and in .env.example', (variable) => {
    expect(readFileSync('README.md', 'utf8')).toMatch(new RegExp(`^\\|\\s*\`${variable}\`\\s*\\|`, 'm'));
    expect(readFileSync('.env.example', 'utf8')).toMatch(new RegExp(`^${variable}=`, 'm'));
  });

  it('.env.example copied to .env as it is is a valid configuration', () => {
    expect(() => loadConfig(parseDotenv(readFileSync('.env.example')))).not.toThrow();
  });
});

describe('the policy documentation', () => {
  const page = readFileSync('docs/policy.md', 'utf8');

  it('lists every built-in rule in its built-in table', () => {
    const { fallback, floors, taint } = builtinRules(true, { twoPersonRule: true });
    const names = [...floors, ...fallback, ...(taint ? [taint] : [])].map((rule) => rule.ref.name);
    const missing = names.filter((name) => !new RegExp(`^\\|\\s*\`${name}\`\\s*\\|`, 'm').test(page));
    expect(missing).toEqual([]);
  });

  it('names every tool kind a rule can match', () => {
    const kindRow = /^\|\s*`kind`\s*\|(.*)\|$/m.exec(page)?.[1] ?? '';
    expect(TOOL_KINDS.filter((kind) => !kindRow.includes(`\`${kind}\``))).toEqual([]);
  });
});
