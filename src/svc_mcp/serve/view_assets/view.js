// The view of one tool's result, hosted in an MCP Apps iframe. It speaks the MCP Apps JSON-RPC
// protocol over postMessage with its host: ui/initialize, then it draws what the host sends in
// ui/notifications/tool-result, and it pages or refreshes with tools/call through the host (the
// same read tool, never another). It opens no connection of its own. Values are written with
// textContent, so nothing from a result is ever parsed as HTML. drawPnlChart comes from the data
// service dashboard's chart.js, placed before this script when the document is built.

const APPS_PROTOCOL = "2026-01-26";
const TOOL = document.body.dataset.tool;
const VIEW = document.body.dataset.view;
const $ = (id) => document.getElementById(id);

const state = { rows: null, cursor: null, args: {}, currency: null, locale: undefined, timeZone: undefined };

// --- the host bridge -------------------------------------------------------------------------
let nextId = 1;
const pending = new Map();
const post = (message) => window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*");

function request(method, params) {
  const id = nextId++;
  post({ id, method, params });
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}

window.addEventListener("message", (event) => {
  if (event.source !== window.parent) return;
  const message = event.data;
  if (!message || message.jsonrpc !== "2.0") return;
  if (message.method === undefined) {
    const waiting = pending.get(message.id);
    if (!waiting) return;
    pending.delete(message.id);
    if (message.error) waiting.reject(new Error(message.error.message));
    else waiting.resolve(message.result);
    return;
  }
  const params = message.params || {};
  switch (message.method) {
    case "ui/notifications/tool-input":
      state.args = withoutCursor(params.arguments || {});
      break;
    case "ui/notifications/tool-result":
      show(params);
      break;
    case "ui/notifications/host-context-changed":
      applyContext(params);
      break;
    case "ui/resource-teardown":
    case "ping":
      post({ id: message.id, result: {} });
      break;
    default:
      if (message.id !== undefined) post({ id: message.id, error: { code: -32601, message: "Method not found" } });
  }
});

function applyContext(context) {
  if (!context) return;
  if (context.theme === "light" || context.theme === "dark") document.documentElement.dataset.theme = context.theme;
  if (context.locale) state.locale = context.locale;
  if (context.timeZone) state.timeZone = context.timeZone;
  if (state.rows !== null) render();
}

function withoutCursor(args) {
  const { cursor, ...rest } = args;
  return rest;
}

// --- numbers with their units, times in the viewer's zone ------------------------------------
const MONEY = /(^|_)(pnl|value|fees?|notional|price|equity_close)$/
const TIME = /(_at|^ts)$/;
const NUMBER = (value, digits) =>
  Number(value).toLocaleString(state.locale, { minimumFractionDigits: digits, maximumFractionDigits: digits });

function kind(field, value) {
  if (value === null || value === undefined) return "empty";
  if (typeof value === "boolean") return "bool";
  if (Array.isArray(value)) return "list";
  if (typeof value === "object") return "object";
  if (typeof value === "number") {
    if (field === "utilization") return "percent";
    if (field === "limit" || field === "current") return "measure";
    if (MONEY.test(field)) return "money";
    return Number.isInteger(value) ? "integer" : "quantity";
  }
  if (TIME.test(field)) return "time";
  return "text";
}

function money(value) {
  if (state.currency) {
    return Number(value).toLocaleString(state.locale, { style: "currency", currency: state.currency });
  }
  return `${NUMBER(value, 2)} (base currency)`;
}

function time(text) {
  const date = new Date(text);
  if (Number.isNaN(date.getTime())) return String(text);
  return date.toLocaleString(state.locale, {
    timeZone: state.timeZone, year: "numeric", month: "short", day: "numeric",
    hour: "2-digit", minute: "2-digit", timeZoneName: "short",
  });
}

function format(field, value, record) {
  switch (kind(field, value)) {
    case "empty": return "–";
    case "bool": return value ? "yes" : "no";
    case "list": return value.join(", ");
    case "object": return JSON.stringify(value);
    case "percent": return `${NUMBER(value * 100, 1)} %`;
    case "measure": return `${NUMBER(value, 2)} ${record.unit || ""}`.trim();
    case "money": return money(value);
    case "integer": return NUMBER(value, 0);
    case "quantity": return NUMBER(value, 4);
    case "time": return time(value);
    default: return String(value);
  }
}

function tone(field, value) {
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (field === "status") return String(value);
  if (typeof value === "number" && /pnl$/.test(field)) return value > 0 ? "gain" : value < 0 ? "loss" : "";
  return "";
}

const label = (field) => field.charAt(0).toUpperCase() + field.slice(1).replaceAll("_", " ");

function cell(parent, tag, field, value, record) {
  const node = parent.appendChild(document.createElement(tag));
  node.textContent = format(field, value, record);
  node.dataset.field = field;
  node.dataset.value = typeof value === "string" ? value : JSON.stringify(value ?? null);
  const sort = kind(field, value);
  node.className = [tone(field, value), ["money", "integer", "quantity", "percent", "measure"].includes(sort) ? "number" : "", sort === "time" ? "time" : ""].filter(Boolean).join(" ");
  return node;
}

// --- drawing ---------------------------------------------------------------------------------
function show(result) {
  if (result.isError) {
    const text = (result.content || []).map((block) => block.text || "").join(" ");
    $("summary").textContent = "";
    const note = document.createElement("p");
    note.className = "error";
    note.textContent = text || "The tool failed.";
    $("content").replaceChildren(note);
    return;
  }
  const data = result.structuredContent || {};
  state.rows = Array.isArray(data.result) ? data.result : [];
  state.cursor = data.next_cursor ?? null;
  render();
  if (!state.currency) learnCurrency();
}

// Money is shown in the account's base currency, which only get_system states.
async function learnCurrency() {
  try {
    const system = await request("tools/call", { name: "get_system", arguments: {} });
    const currency = system && !system.isError && system.structuredContent?.base_currency;
    if (typeof currency === "string" && currency !== state.currency) {
      state.currency = currency;
      render();
    }
  } catch {
    // The host may refuse: amounts stay labelled "base currency".
  }
}

function render() {
  const content = $("content");
  content.replaceChildren();
  renderTable(content, state.rows);
  const chart = $("chart");
  chart.hidden = VIEW !== "pnl";
  if (!chart.hidden) drawPnlChart(chart, state.rows, money);
  $("more").hidden = !state.cursor;
  $("refresh").hidden = false;
  const count = state.rows.length;
  $("summary").textContent = `${count} record${count === 1 ? "" : "s"}${state.cursor ? ", more available" : ""}`;
  document.body.dataset.rendered = String(count);
}

function units() {
  const zone = state.timeZone || Intl.DateTimeFormat().resolvedOptions().timeZone;
  return `Amounts in ${state.currency || "the account's base currency"}; times in ${zone}.`;
}

function renderTable(parent, rows) {
  const table = parent.appendChild(document.createElement("table"));
  table.createCaption().textContent = rows.length ? units() : "No records.";
  if (!rows.length) return;
  const fields = [...new Set(rows.flatMap((row) => Object.keys(row)))].filter((field) => field !== "unit");
  const head = table.createTHead().insertRow();
  for (const field of fields) {
    const th = head.appendChild(document.createElement("th"));
    th.scope = "col";
    th.textContent = label(field);
    const sample = rows.find((row) => row[field] !== null && row[field] !== undefined);
    if (sample && ["money", "integer", "quantity", "percent", "measure"].includes(kind(field, sample[field]))) th.className = "number";
  }
  const body = table.createTBody();
  for (const row of rows) {
    const tr = body.insertRow();
    for (const field of fields) cell(tr, "td", field, row[field], row);
  }
}

// --- paging and refreshing through the host --------------------------------------------------
async function fetchPage(cursor) {
  const args = cursor ? { ...state.args, cursor } : state.args;
  return request("tools/call", { name: TOOL, arguments: args });
}

async function busy(button, work) {
  button.disabled = true;
  try {
    await work();
  } catch (error) {
    $("summary").textContent = `The host refused: ${error.message}`;
  } finally {
    button.disabled = false;
  }
}

$("more").addEventListener("click", () =>
  busy($("more"), async () => {
    const result = await fetchPage(state.cursor);
    if (result.isError || !Array.isArray(result.structuredContent?.result)) return show(result);
    state.rows = [...state.rows, ...result.structuredContent.result];
    state.cursor = result.structuredContent.next_cursor ?? null;
    render();
    if (state.cursor) $("more").focus();
  }),
);
$("refresh").addEventListener("click", () => busy($("refresh"), async () => show(await fetchPage(null))));

const initialized = await request("ui/initialize", {
  protocolVersion: APPS_PROTOCOL,
  appInfo: { name: `svc-mcp ${VIEW} view`, version: "1" },
  appCapabilities: {},
});
applyContext(initialized?.hostContext);
post({ method: "ui/notifications/initialized", params: {} });

// Tell the host how big the view is, so it needs no scrollbar of its own.
new ResizeObserver(() => {
  const { scrollWidth: width, scrollHeight: height } = document.documentElement;
  post({ method: "ui/notifications/size-changed", params: { width, height } });
}).observe(document.body);
