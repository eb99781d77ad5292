// Small helpers shared by the dashboard's modules: element lookup and JSON calls to the API.
// Requests carry only the HttpOnly session cookie the browser holds; no script ever sees a token
// after the login form sent it.
export const $ = (id) => document.getElementById(id);

// One API call; resolves to { ok, status, data, error } and never throws for HTTP errors.
export async function call(method, path, body) {
  const init = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    return { ok: false, status: 0, data: null, error: `the service cannot be reached (${error.message})` };
  }
  const payload = await response.json().catch(() => null);
  const ok = response.ok && payload !== null && payload.ok === true;
  const error = payload && payload.error ? payload.error.message : `HTTP ${response.status}`;
  return { ok, status: response.status, data: ok ? payload.data : null, error: ok ? null : error };
}

// Shows `text` in the element (an error or a note), or hides it when text is empty.
export function say(id, text) {
  const element = $(id);
  element.textContent = text || "";
  element.hidden = !text;
}

// "2025-06-30T20:00:00Z" -> "2025-06-30 20:00 UTC"; anything else unchanged.
export const when = (text) =>
  typeof text === "string" ? text.replace(/^(\d{4}-\d\d-\d\d)T(\d\d:\d\d):\d\dZ$/, "$1 $2 UTC") : text;
