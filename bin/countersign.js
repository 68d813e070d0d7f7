#!/usr/bin/env node
/* global process */
// Node >= 22.18 runs the TypeScript sources directly (type stripping), so there is no build step.
// This file stays plain JavaScript that any Node can parse, so an older Node gets one clear line
// instead of ERR_UNKNOWN_FILE_EXTENSION and a stack trace.
const NEEDED = [22, 18];
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < NEEDED[0] || (major === NEEDED[0] && minor < NEEDED[1])) {
  process.stderr.write(
    `countersign: Node ${process.versions.node} is too old; it needs Node ${NEEDED.join('.')} or newer. ` +
      'Run it through npm (`npm start`, `npx countersign …`), which uses the Node 24 that `npm install` put in node_modules, or install Node 24 LTS.\n',
  );
  process.exit(1);
}
await import('../src/cli.ts');
