// The API client: one fetch wrapper that sends the stored token and turns non-2xx answers into
// ApiError, so views only handle data. A 401 also tells the shell to ask for a token.

const TOKEN_KEY = 'comb.token';

export class ApiError extends Error {
  constructor(status, message, path) {
    super(message);
    this.status = status;
    this.path = path;
  }
}

export function token() {
  try { return localStorage.getItem(TOKEN_KEY) || ''; } catch { return ''; }
}

export function setToken(t) {
  if (t) localStorage.setItem(TOKEN_KEY, t); else localStorage.removeItem(TOKEN_KEY);
}

let unauthorized = () => {};

// onUnauthorized registers what to do when the server answers 401 (show the token form).
export function onUnauthorized(fn) { unauthorized = fn; }

// request sends one call and returns {status, body}; body is parsed JSON (or text when asked),
// null for a 204. It throws ApiError for a status outside ok (default: 2xx).
async function request(path, { method = 'GET', body, text = false, ok = (s) => s >= 200 && s < 300 } = {}) {
  const headers = {};
  const t = token();
  if (t) headers.Authorization = 'Bearer ' + t;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    throw new ApiError(0, 'the server did not answer: ' + e.message, path);
  }
  if (!ok(res.status)) {
    let msg = res.statusText || 'HTTP ' + res.status;
    try { const j = await res.json(); if (j && j.error) msg = j.error; } catch { /* not JSON */ }
    if (res.status === 401) unauthorized(msg);
    throw new ApiError(res.status, msg, path);
  }
  if (res.status === 204) return { status: 204, body: null };
  return { status: res.status, body: text ? await res.text() : await res.json() };
}

// api returns the JSON body of a 2xx answer.
export async function api(path, opts) {
  return (await request(path, opts)).body;
}

// optional returns the body, or null when this server does not serve the route (404, or 501 for
// the routes comb answers "Not supported"): the view then says the data is unavailable.
export async function optional(path, opts) {
  try {
    return await api(path, opts);
  } catch (e) {
    if (e.status === 404 || e.status === 501) return null;
    throw e;
  }
}

// withStatus returns {status, body} for any status in ok (e.g. /health's 503 still has a body).
export function withStatus(path, ok) {
  return request(path, { ok });
}

// q builds a query string from an object, leaving out empty values.
export function q(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') u.set(k, v);
  }
  const s = u.toString();
  return s ? '?' + s : '';
}

export const enc = encodeURIComponent;
