import { ProgramSandbox } from '../../src/sandbox/sandbox.ts';

/**
 * SANDBOX=off, for tests of what a spawn site does besides confining (timeouts, process groups,
 * output): their programs run unconfined, as with SANDBOX=off. test/sandbox/ tests the confinement.
 */
export function unconfinedSandbox(): ProgramSandbox {
  return new ProgramSandbox({ kind: 'off' }, { granted: [], protected: [] });
}
