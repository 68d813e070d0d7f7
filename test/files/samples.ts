import { deflateSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import sharp from 'sharp';

/** A small valid PNG (red pixels), built as the format says: signature, IHDR, IDAT, IEND. */
export function png(width = 2, height = 2): Buffer {
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(width * 3, 0xff)]);
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.concat(Array.from({ length: height }, () => row)))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([Buffer.from(type, 'latin1'), data])));
  return Buffer.concat([length, Buffer.from(type, 'latin1'), data, crc]);
}

function crc32(bytes: Buffer): number {
  let c = ~0;
  for (const b of bytes) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return ~c >>> 0;
}

/** The start of a Windows program (MZ header, PE signature): what `file-type` reads as an executable. */
export function windowsProgram(): Buffer {
  const bytes = Buffer.alloc(512);
  bytes.write('MZ', 0, 'latin1');
  bytes.writeUInt32LE(0x80, 0x3c);
  bytes.write('PE\0\0', 0x80, 'latin1');
  return bytes;
}

/** A PDF of `pages` empty pages: enough structure for its type and page count to be read. */
export function pdf(pages: number): Buffer {
  const kids = Array.from({ length: pages }, (_, i) => `${i + 3} 0 obj << /Type /Page /Parent 2 0 R >> endobj`);
  return Buffer.from(
    `%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Count ${pages} >> endobj\n${kids.join('\n')}\ntrailer << /Root 1 0 R >>\n%%EOF\n`,
    'latin1',
  );
}

export const CSV = 'region,revenue\nnorth,120\nsouth,95\n';

/**
 * A real PNG of `width` × `height`, encoded by sharp (libvips): flat colour, or random noise that
 * does not compress (a photo-like image whose PNG is about 3 bytes a pixel).
 */
export async function encodedPng(width: number, height: number, noise = false): Promise<Buffer> {
  const pixels = noise ? randomBytes(width * height * 3) : Buffer.alloc(width * height * 3, 0x40);
  return sharp(pixels, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
}

/**
 * A PNG whose header claims `width` × `height` but whose pixel data is a single row: tiny on the wire,
 * billions of bytes if a decoder believed it (a decompression bomb).
 */
export function claimedPng(width: number, height: number): Buffer {
  const real = png(1, 1);
  real.writeUInt32BE(width, 16);
  real.writeUInt32BE(height, 20);
  // The IHDR's CRC covers the new size, so only the size gives it away.
  real.writeUInt32BE(crc32(real.subarray(12, 29)), 29);
  return real;
}

/**
 * A PDF with one page per entry of `pages`, each drawing its text in Helvetica (up to 50 lines of 80
 * characters): a real text layer, with the cross-reference table at the byte offsets the format asks for.
 */
export function textPdf(pages: string[]): Buffer {
  const escape = (text: string) => text.replace(/[\\()]/g, (c) => `\\${c}`);
  const objects: string[] = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Count ${pages.length} /Kids [${pages.map((_, i) => `${4 + i * 2} 0 R`).join(' ')}] >>`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  for (const [i, text] of pages.entries()) {
    // Lines of at most 80 characters: glyphs past the page's edge are not text a reader extracts.
    const lines = text.match(/.{1,80}/g) ?? [''];
    const stream = `BT /F1 12 Tf 14 TL 72 720 Td ${lines.map((line) => `(${escape(line)}) Tj T*`).join(' ')} ET`;
    objects.push(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${5 + i * 2} 0 R >>`,
      `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    );
  }
  let body = '%PDF-1.4\n';
  const offsets = objects.map((object, i) => {
    const at = body.length;
    body += `${i + 1} 0 obj\n${object}\nendobj\n`;
    return at;
  });
  const xref = body.length;
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, 'latin1');
}

/**
 * Issue 47's event-loop blocker: `%PDF-1.4`, 2,001 `stream` markers, padding and one `endstream`
 * (then `%%EOF`, so it is taken for a whole PDF): `size` bytes. A counter that looks for each
 * marker's end from the marker reads the file 2,001 times.
 */
export function markerPdf(size: number, markers = 2001): Buffer {
  const head = `%PDF-1.4\n${'stream\n'.repeat(markers)}`;
  const tail = 'endstream\n%%EOF\n';
  return Buffer.from(head + ' '.repeat(size - head.length - tail.length) + tail, 'latin1');
}

/**
 * A one-page PDF whose page's content stream inflates to `mb` MB of spaces: about 1 KB a megabyte on
 * the wire. pdf.js decodes it into ArrayBuffers, which a thread's heap limit does not count.
 */
export function inflatingPdf(mb: number): Buffer {
  const data = deflateSync(Buffer.alloc(mb * 1024 * 1024, 0x20), { level: 9 });
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Count 1 /Kids [3 0 R] >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>',
    `<< /Length ${data.length} /Filter /FlateDecode >>\nstream\n${data.toString('latin1')}\nendstream`,
  ];
  let body = '%PDF-1.4\n';
  const offsets = objects.map((object, i) => {
    const at = body.length;
    body += `${i + 1} 0 obj\n${object}\nendobj\n`;
    return at;
  });
  const xref = body.length;
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, 'latin1');
}
