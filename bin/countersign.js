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
// The operator's commands read .env and the embedded database from the working directory. Run from
// anywhere else they would start a new, empty database there; say where to run them instead.
const OPERATOR_COMMANDS = ['status', 'audit', 'usage', 'grants', 'schedules', 'connections', 'migrate'];
const { existsSync } = await import('node:fs');
const path = await import('node:path');
const installDir = path.resolve(import.meta.dirname, '..');
const command = process.argv[2];
const set = (name) => (process.env[name] ?? '').trim() !== '';
if (
  OPERATOR_COMMANDS.includes(command) &&
  !process.argv.includes('--help') &&
  !set('DATABASE_URL') &&
  !set('EMBEDDED_POSTGRES_DIR') &&
  path.resolve(process.cwd()) !== installDir &&
  !existsSync('.env') &&
  !existsSync('.data')
) {
  process.stderr.write(
    `countersign: ${process.cwd()} holds no Countersign setup (.env or .data/). ` +
      `Run it in the folder you start Countersign from, e.g. cd ${installDir} && npx countersign ${command}\n`,
  );
  process.exit(1);
}
await import('../src/cli.ts');
