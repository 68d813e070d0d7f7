/**
 * A download's body, stopping once it passes `maxBytes` (at most `maxBytes + 1` bytes are kept, so
 * the caller can tell it was too large): an oversized file is never read whole.
 */
export async function readCapped(answer: Response, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of answer.body ?? []) {
    chunks.push(Buffer.from(chunk));
    length += chunk.length;
    if (length > maxBytes) {
      await answer.body?.cancel().catch(() => undefined);
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, maxBytes + 1);
}
