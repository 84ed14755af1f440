/**
 * Redaction of text and values on their way out of the process: configuration errors, error
 * messages printed by the CLI, dead letters and log lines.
 *
 * Two nets, because neither alone is enough. Patterns catch credentials by their shape wherever
 * they come from, including a server that echoes the request it was sent: a URL's password
 * (`scheme://user:password@`), `Basic`/`Bearer` credentials, and `client_secret=`, `password=`,
 * `access_token=` and similar fields of a form or JSON body. The known values catch the rest: every
 * secret setting of the loaded configuration is remembered (`rememberSecrets`), and each occurrence
 * of it, raw or as a server would echo it (URL-, form- or JSON-encoded, base64), is replaced.
 */

export const REDACTED = '[redacted]';

/** Shorter values are not remembered: replacing them would garble ordinary text. */
const MIN_SECRET_LENGTH = 6;

/** Every form of every remembered secret, longest first (a longer form may contain a shorter). */
let knownForms: string[] = [];
const remembered = new Set<string>();

/** Remembers secret values so that any later output is scrubbed of them. */
export function rememberSecrets(values: Iterable<string>): void {
  let added = false;
  for (const value of values) {
    if (value.length < MIN_SECRET_LENGTH || remembered.has(value)) continue;
    remembered.add(value);
    added = true;
  }
  if (!added) return;
  const forms = new Set<string>();
  for (const value of remembered) {
    forms.add(value);
    forms.add(encodeURIComponent(value));
    forms.add(encodeURIComponent(value).replace(/%20/g, '+'));
    forms.add(JSON.stringify(value).slice(1, -1));
    // base64 (and base64url) of the value on its own; a Basic credential is caught by its pattern.
    const base64 = Buffer.from(value).toString('base64');
    forms.add(base64);
    forms.add(base64.replace(/=+$/, ''));
    forms.add(Buffer.from(value).toString('base64url'));
  }
  knownForms = [...forms].filter((f) => f.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length);
}

const URL_PASSWORD = /\b([a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^\s/?#@:"']*):[^\s/?#@"']*@/g;
const AUTH_SCHEME = /\b(Basic|Bearer|Digest|Negotiate)(\s+)[A-Za-z0-9._~+/=-]{6,}/gi;
const CREDENTIAL_NAMES =
  'client_secret|client_assertion|assertion|password|passwd|access_token|refresh_token|id_token|api_key|apikey|secret|authorization';
/** `name=value` of a form (an echoed token request), and `"name": "value"` of a JSON body. */
const FORM_FIELD = new RegExp(`\\b(${CREDENTIAL_NAMES})=[^&\\s"']+`, 'gi');
const JSON_FIELD = new RegExp(`("(?:${CREDENTIAL_NAMES})"\\s*:\\s*")(?:[^"\\\\]|\\\\.)*"`, 'gi');

/** The text with credentials replaced by `[redacted]`. */
export function redactText(text: string): string {
  let out = text
    // Found by pattern rather than `new URL`, so that no normalisation alters what is shown.
    .replace(URL_PASSWORD, (_m, head: string) => `${head}:${REDACTED}@`)
    .replace(AUTH_SCHEME, (_m, scheme: string, space: string) => `${scheme}${space}${REDACTED}`)
    .replace(FORM_FIELD, (_m, name: string) => `${name}=${REDACTED}`)
    .replace(JSON_FIELD, (_m, head: string) => `${head}${REDACTED}"`);
  for (const form of knownForms) {
    if (out.includes(form)) out = out.split(form).join(REDACTED);
  }
  return out;
}

/** A thrown value's message, redacted: what the CLI prints for an error. */
export function errorText(err: unknown): string {
  return redactText(err instanceof Error ? err.message : String(err));
}

/** Deepest level of a logged value that is scrubbed; below it values are replaced whole. */
const MAX_VALUE_DEPTH = 8;

/**
 * A copy of a value with every string redacted (log lines): objects and arrays are copied, errors
 * become `{ type, message, stack }` plus their own fields, as pino's serializer shows them.
 */
export function redactValue(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return redactText(value);
  if (typeof value !== 'object' || value === null || Buffer.isBuffer(value)) return value;
  if (depth >= MAX_VALUE_DEPTH) return REDACTED;
  if (Array.isArray(value)) return value.map((v) => redactValue(v, depth + 1));
  const source: Record<string, unknown> =
    value instanceof Error
      ? { ...value, type: value.name, message: value.message, stack: value.stack }
      : (value as Record<string, unknown>);
  const copy: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(source)) copy[k] = redactValue(v, depth + 1);
  return copy;
}
