import sharp, { type Metadata } from 'sharp';

/**
 * What one image may be when a model is shown it, whichever provider it is. Anthropic refuses an
 * image over 5 MB or 8000 px a side and scales anything whose long edge passes 1568 px down itself
 * (slower, same result); OpenAI's vision scales to fit 2048 px and then 768 px on the short side.
 * So an image over 1568 px is scaled here to that long edge: it fits both, and the request is smaller.
 * `maxInputPixels` refuses a decompression bomb (a small file that decodes to gigabytes) before it is
 * decoded: 100 megapixels is a 10000 × 10000 screenshot.
 */
export const IMAGE_FIT = {
  longEdge: 1568,
  maxBytes: 5 * 1024 * 1024,
  maxInputPixels: 100_000_000,
  /** The JPEG quality tried when a resized PNG or WebP is still over maxBytes (a photo saved as PNG). */
  fallbackJpegQuality: 80,
  /**
   * One decode-and-resize (libvips, on its own threads, off the event loop) before libvips gives it up:
   * a 100-megapixel image takes about 2 s on one core.
   */
  timeoutSeconds: 20,
} as const;

/** An image as the model is shown it: unchanged, or resized (and from what), or why it cannot be. */
export type FittedImage =
  { bytes: Buffer; mediaType: string; resized?: { from: string; to: string } } | { refused: string };

const size = (width: number, height: number) => `${width}×${height}`;

/**
 * The image fitted to IMAGE_FIT: returned as it is when it already fits, else scaled down (never
 * up) keeping its proportions, in its own format (a GIF's first frame as PNG); a resized image still
 * over the byte limit is tried as JPEG. The saved file is never changed: this is only what the model sees.
 */
export async function fitImage(bytes: Buffer, mediaType: string): Promise<FittedImage> {
  let meta: Metadata;
  try {
    // The header only: no pixel is decoded before the count is checked.
    meta = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch (error) {
    return { refused: `it could not be read as an image (${(error as Error).message})` };
  }
  const { width, height } = meta;
  if (width * height > IMAGE_FIT.maxInputPixels)
    return { refused: `it is ${size(width, height)} pixels, too many to resize (at most ${IMAGE_FIT.maxInputPixels})` };
  if (Math.max(width, height) <= IMAGE_FIT.longEdge && bytes.length <= IMAGE_FIT.maxBytes) return { bytes, mediaType };
  try {
    return await scaled(bytes, mediaType, size(width, height));
  } catch (error) {
    return { refused: `it could not be resized (${(error as Error).message})` };
  }
}

async function scaled(bytes: Buffer, mediaType: string, from: string): Promise<FittedImage> {
  const resize = {
    width: IMAGE_FIT.longEdge,
    height: IMAGE_FIT.longEdge,
    fit: 'inside',
    withoutEnlargement: true,
  } as const;
  const base = () =>
    sharp(bytes, { limitInputPixels: IMAGE_FIT.maxInputPixels })
      .rotate()
      .resize(resize)
      .timeout({ seconds: IMAGE_FIT.timeoutSeconds });
  const own =
    mediaType === 'image/jpeg'
      ? { data: base().jpeg(), type: 'image/jpeg' }
      : mediaType === 'image/webp'
        ? { data: base().webp(), type: 'image/webp' }
        : { data: base().png({ compressionLevel: 9 }), type: 'image/png' };
  let out = await own.data.toBuffer({ resolveWithObject: true });
  let type = own.type;
  if (out.data.length > IMAGE_FIT.maxBytes && type !== 'image/jpeg') {
    out = await base().jpeg({ quality: IMAGE_FIT.fallbackJpegQuality }).toBuffer({ resolveWithObject: true });
    type = 'image/jpeg';
  }
  const to = size(out.info.width, out.info.height);
  if (out.data.length > IMAGE_FIT.maxBytes)
    return { refused: `even resized from ${from} to ${to} it is ${out.data.length} bytes, over ${IMAGE_FIT.maxBytes}` };
  return { bytes: out.data, mediaType: type, resized: { from, to } };
}
