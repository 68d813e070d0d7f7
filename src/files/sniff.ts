import path from 'node:path';
import { looksBinary } from '../agent/tools/workspace/confine.ts';
import { parsePool } from './parse-pool.ts';

/** The image types every provider with vision takes as image input. */
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** Formats that run as programs: refused whatever the name says, never written into the workspace. */
const EXECUTABLE_EXTS = new Set([
  'exe',
  'elf',
  'macho',
  'dll',
  'class',
  'wasm',
  'msi',
  'deb',
  'rpm',
  'apk',
  'dmg',
  'lnk',
  'cab',
  'dex',
  'xpi',
  'crx',
]);

/** Names that claim a type the bytes must then have. */
const CLAIMED_BY_EXT: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  pdf: 'application/pdf',
};

/** What a received file is, read from its bytes (`file-type`'s magic numbers), never from its name. */
export type Sniffed =
  | { kind: 'image'; mediaType: string }
  | { kind: 'pdf'; mediaType: 'application/pdf' }
  | { kind: 'text' }
  /** A known format that is neither (an archive, a spreadsheet, another image type): saved, not read. */
  | { kind: 'binary'; mediaType: string }
  | { kind: 'refused'; why: string };

export async function sniff(bytes: Buffer, name: string): Promise<Sniffed> {
  // `file-type` walks some formats' structure (a ZIP's entries), so a stranger's bytes are read in a thread.
  const read = await parsePool().type(bytes);
  if (!read.ok) return { kind: 'refused', why: `it ${read.why}` };
  const detected = read.value;
  const claimed = CLAIMED_BY_EXT[path.extname(name).slice(1).toLowerCase()];
  if (detected && EXECUTABLE_EXTS.has(detected.ext))
    return {
      kind: 'refused',
      why: `its content is a program (${detected.mime})${claimed ? ', not what its name says' : ''}`,
    };
  const actual = detected?.mime ?? (looksBinary(bytes) ? undefined : 'text/plain');
  if (claimed && actual !== claimed)
    return {
      kind: 'refused',
      why: `its name says ${claimed} but its content is ${actual ?? 'unrecognised binary data'}`,
    };
  if (!detected) return actual ? { kind: 'text' } : { kind: 'refused', why: 'its content is unrecognised binary data' };
  if (IMAGE_TYPES.has(detected.mime)) {
    if (!looksComplete(bytes, detected.mime))
      return { kind: 'refused', why: `the ${detected.mime} image is truncated` };
    return { kind: 'image', mediaType: detected.mime };
  }
  if (detected.mime === 'application/pdf') {
    if (!bytes.subarray(-1024).includes('%%EOF')) return { kind: 'refused', why: 'the PDF is truncated' };
    return { kind: 'pdf', mediaType: 'application/pdf' };
  }
  return { kind: 'binary', mediaType: detected.mime };
}

/** PNG ends with its IEND chunk, JPEG with its EOI marker: a file cut short shows at its end. */
function looksComplete(bytes: Buffer, mediaType: string): boolean {
  if (mediaType === 'image/png') return bytes.subarray(-12).includes('IEND');
  if (mediaType === 'image/jpeg') return bytes.subarray(-16).includes(Buffer.from([0xff, 0xd9]));
  return true;
}
