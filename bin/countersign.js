#!/usr/bin/env node
// Node >= 22.18 runs the TypeScript sources directly (type stripping), so there is no build step.
await import('../src/cli.ts');
