export const INVALID_FOR_CARD = 'These arguments are not valid for this tool; it will refuse them.';
const PREVIEW_UNAVAILABLE = 'The preview could not be prepared in time; check the file before approving.';

/**
 * An approval card's preview, or a note once the card's signal aborts (its deadline): a slow disk or
 * a huge file must not hold the card back.
 */
export async function previewWithin(signal: AbortSignal, prepare: () => Promise<string>): Promise<string> {
  if (signal.aborted) return PREVIEW_UNAVAILABLE;
  let onAbort: () => void = () => undefined;
  const aborted = new Promise<string>((resolve) => {
    onAbort = () => resolve(PREVIEW_UNAVAILABLE);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  const preparing = prepare();
  preparing.catch(() => undefined); // an abandoned preview may still fail later
  try {
    return await Promise.race([preparing, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
