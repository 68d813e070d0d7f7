import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Each file gets its own database, a copy of one migrated once per run (test/helpers/global-setup.ts);
    // files run in parallel on the two cores CI has.
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
  },
});
