import type http from 'node:http';

/**
 * Web API request bodies as Slack accepts them: `application/x-www-form-urlencoded` (what
 * @slack/web-api sends; nested values such as `blocks` arrive as JSON strings) or
 * `application/json` (where the token must come in the Authorization header, never the body).
 */
export interface ParsedCall {
  args: Record<string, unknown>;
  /** The bearer token, or the form's `token` field; undefined when neither was sent. */
  token: string | undefined;
  encoding: 'form' | 'json' | 'query';
}

const JSON_FIELDS = ['blocks', 'attachments', 'chunks', 'metadata', 'files'];

export async function readBody(req: http.IncomingMessage): Promise<string> {
  return (await readBytes(req)).toString('utf8');
}

/** A request body as bytes (an upload's content, which UTF-8 decoding would change). */
export async function readBytes(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * The file in an upload URL's body. Slack takes the bytes raw or as multipart/form-data (the file
 * in the first file part, whatever its field name); the content type says which.
 */
export async function uploadedBytes(headers: http.IncomingHttpHeaders, raw: Buffer): Promise<Buffer | undefined> {
  const type = String(headers['content-type'] ?? '');
  if (!type.startsWith('multipart/form-data')) return raw;
  let form: FormData;
  try {
    form = await new Response(new Uint8Array(raw), { headers: { 'content-type': type } }).formData();
  } catch {
    return undefined;
  }
  for (const value of form.values()) {
    if (typeof value !== 'string') return Buffer.from(await value.arrayBuffer());
  }
  return undefined;
}

export function parseCall(
  headers: http.IncomingHttpHeaders,
  rawUrl: string,
  raw: string,
): ParsedCall | { error: string } {
  const type = String(headers['content-type'] ?? '');
  const bearer = /^Bearer\s+(\S+)$/i.exec(String(headers.authorization ?? ''))?.[1];
  const query = Object.fromEntries(new URL(rawUrl, 'http://fake').searchParams);
  if (type.includes('application/json')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw || '{}');
    } catch {
      return { error: 'invalid_json' };
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return { error: 'invalid_json' };
    return { args: { ...query, ...(parsed as Record<string, unknown>) }, token: bearer, encoding: 'json' };
  }
  const args: Record<string, unknown> = { ...query, ...Object.fromEntries(new URLSearchParams(raw)) };
  for (const key of JSON_FIELDS) {
    const value = args[key];
    if (typeof value !== 'string') continue;
    try {
      args[key] = JSON.parse(value);
    } catch {
      return { error: key === 'blocks' ? 'invalid_blocks_format' : 'invalid_arguments' };
    }
  }
  const bodyToken = typeof args.token === 'string' ? args.token : undefined;
  delete args.token;
  return { args, token: bearer ?? bodyToken, encoding: raw ? 'form' : 'query' };
}
