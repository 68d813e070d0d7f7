/**
 * Discord's JSON error bodies (API v10 "Error Messages" / "JSON Error Codes"). Handlers throw
 * `ApiError`; the server turns it into the status and body the real API would send.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly body: Record<string, unknown>;
  constructor(status: number, body: { message: string; code: number; errors?: unknown }) {
    super(body.message);
    this.status = status;
    this.body = body;
  }
}

export const unauthorized = () => new ApiError(401, { message: '401: Unauthorized', code: 0 });
export const notFound = () => new ApiError(404, { message: '404: Not Found', code: 0 });
export const methodNotAllowed = () => new ApiError(405, { message: '405: Method Not Allowed', code: 0 });
export const unknownApplication = () => new ApiError(404, { message: 'Unknown Application', code: 10002 });
export const unknownChannel = () => new ApiError(404, { message: 'Unknown Channel', code: 10003 });
export const unknownMessage = () => new ApiError(404, { message: 'Unknown Message', code: 10008 });
export const unknownWebhook = () => new ApiError(404, { message: 'Unknown Webhook', code: 10015 });
export const unknownUser = () => new ApiError(404, { message: 'Unknown User', code: 10013 });
export const unknownGuild = () => new ApiError(404, { message: 'Unknown Guild', code: 10004 });
export const unknownMember = () => new ApiError(404, { message: 'Unknown Member', code: 10007 });
export const unknownInteraction = () => new ApiError(404, { message: 'Unknown interaction', code: 10062 });
export const alreadyAcknowledged = () =>
  new ApiError(400, { message: 'Interaction has already been acknowledged.', code: 40060 });
export const cannotEditOthers = () =>
  new ApiError(403, { message: 'Cannot edit a message authored by another user', code: 50005 });
/** The bot cannot see the channel (no VIEW_CHANNEL, or not in that guild or thread). */
export const missingAccess = () => new ApiError(403, { message: 'Missing Access', code: 50001 });
/** A request (an attachment) over the upload limit. */
export const entityTooLarge = () => new ApiError(413, { message: 'Request entity too large', code: 40005 });
export const emptyMessage = () => new ApiError(400, { message: 'Cannot send an empty message', code: 50006 });
export const threadAlreadyExists = () =>
  new ApiError(400, { message: 'A thread has already been created for this message', code: 160004 });
export const unsupported = (what: string) =>
  new ApiError(400, { message: `The fake Discord does not implement ${what}; add it to test/fakes/discord`, code: 0 });

/** One field problem, at a path into the request body such as `['components', 0, 'components', 1, 'custom_id']`. */
export interface FieldProblem {
  path: Array<string | number>;
  code: string;
  message: string;
}

/** 400 Invalid Form Body (50035), with `errors` nested along each path the way Discord nests them. */
export function invalidFormBody(problems: FieldProblem[]): ApiError {
  const errors: Record<string, unknown> = {};
  for (const p of problems) {
    let node = errors;
    for (const key of p.path) {
      const k = String(key);
      node[k] ??= {};
      node = node[k] as Record<string, unknown>;
    }
    const list = (node._errors ??= []) as Array<{ code: string; message: string }>;
    list.push({ code: p.code, message: p.message });
  }
  return new ApiError(400, { message: 'Invalid Form Body', code: 50035, errors });
}

export const maxLength = (path: FieldProblem['path'], max: number): FieldProblem => ({
  path,
  code: 'BASE_TYPE_MAX_LENGTH',
  message: `Must be ${max} or fewer in length.`,
});

export const badLength = (path: FieldProblem['path'], min: number, max: number): FieldProblem => ({
  path,
  code: 'BASE_TYPE_BAD_LENGTH',
  message: `Must be between ${min} and ${max} in length.`,
});

export const required = (path: FieldProblem['path']): FieldProblem => ({
  path,
  code: 'BASE_TYPE_REQUIRED',
  message: 'This field is required',
});
