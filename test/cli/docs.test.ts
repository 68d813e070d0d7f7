import { readFileSync } from 'node:fs';
import { parse as parseDotenv } from 'dotenv';
import { describe, expect, it } from 'vitest';
import { ConfigSchema, loadConfig } from '../../src/config.ts';

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
