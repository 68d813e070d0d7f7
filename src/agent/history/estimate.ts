/**
 * A token estimate that needs no tokenizer: a quarter of the UTF-8 bytes of the JSON a provider
 * would send. Real tokenizers differ by model (and by language), so budgets built on it are
 * approximate; what matters is that it is deterministic and grows with what is sent.
 */
export function estimateTokens(value: unknown): number {
  const json = typeof value === 'string' ? value : JSON.stringify(value);
  return Math.ceil(Buffer.byteLength(json ?? '', 'utf8') / 4);
}
