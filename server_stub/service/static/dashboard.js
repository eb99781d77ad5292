// The signed-in view: system state, P&L chart, positions, recent intel and events.
// Everything is written with textContent, so no value from the API is ever parsed as HTML.

import { $, call, when } from "./api.js";
import { drawPnlChart } from "./chart.js";

let currency = "USD";

const number = (value, digits = 2) =>
  value === null || value === undefined
    ? "–"
    : Number(value).toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

const money = (value) =>
  value === null || value === undefined
    ? "–"
    : Number(value).toLocaleString("en-US", { style: "currency", currency });

const signed = (value) => (Number(value) > 0 ? "gain" : Number(value) < 0 ? "loss" : "");

function renderSystem(system) {
  currency = system.base_currency || currency;
  const facts = [
    ["Mode", system.mode + (system.mode_reason ? ` (${system.mode_reason})` : "")],
    ["Trading", system.trading_enabled ? "enabled" : "disabled"],
    ["Account", `${system.account} (${system.base_currency})`],
    ["Equity", money(system.equity)],
    ["Cash", money(system.cash)],
    ["Gross exposure", money(system.gross_exposure)],
    ["Net exposure", money(system.net_exposure)],
    ["Unrealized P&L", money(system.unrealized_pnl), signed(system.unrealized_pnl)],
    ["Open positions", String(system.open_positions)],
    ["Open orders", String(system.open_orders)],
    ["Last heartbeat", when(system.last_heartbeat_at)],
  ];
  const list = $("system");
  list.replaceChildren();
  for (const [term, value, tone] of facts) {
    list.appendChild(document.createElement("dt")).textContent = term;
    const detail = list.appendChild(document.createElement("dd"));
    detail.textContent = value;
    detail.dataset.fact = term;
    if (tone) detail.className = tone;
  }
  list.querySelector('[data-fact="Mode"]').className = system.mode === "running" ? "gain" : "loss";
}

// columns: [title, row => text, optional row => class name]
function renderTable(id, rows, columns, empty) {
  const table = $(id);
  table.replaceChildren();
  if (rows.length === 0) {
    table.createCaption().textContent = empty;
    return;
  }
  const head = table.createTHead().insertRow();
  for (const [title] of columns) {
    head.appendChild(document.createElement("th")).textContent = title;
  }
  const body = table.createTBody();
  for (const row of rows) {
    const tr = body.insertRow();
    for (const [, text, tone] of columns) {
      const td = tr.insertCell();
      td.textContent = text(row);
      if (tone) td.className = tone(row);
    }
  }
}

function summary(body) {
  const text = JSON.stringify(body);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

function showError(id, message) {
  const target = $(id);
  target.replaceChildren();
  const note = document.createElement(target.tagName === "TABLE" ? "caption" : "p");
  note.className = "error";
  note.textContent = message;
  target.appendChild(note);
}

export async function loadDashboard() {
  const [system, positions, pnl, intel, events] = await Promise.all([
    call("GET", "/api/v1/system"),
    call("GET", "/api/v1/positions"),
    call("GET", "/api/v1/pnl?limit=90"),
    call("GET", "/api/v1/intel?limit=10"),
    call("GET", "/api/v1/events?limit=10"),
  ]);
  if (system.ok) renderSystem(system.data);
  else showError("system", system.error);

  if (pnl.ok) drawPnlChart($("pnl-chart"), pnl.data, money);
  else showError("pnl-chart", pnl.error);

  if (positions.ok) {
    renderTable("positions", positions.data, [
      ["Symbol", (p) => p.symbol],
      ["Side", (p) => p.side],
      ["Quantity", (p) => number(p.quantity, 0)],
      ["Avg price", (p) => number(p.avg_price)],
      ["Mark", (p) => number(p.mark_price)],
      ["Market value", (p) => money(p.market_value)],
      ["Unrealized P&L", (p) => money(p.unrealized_pnl), (p) => signed(p.unrealized_pnl)],
    ], "No open positions.");
  } else showError("positions", positions.error);

  if (intel.ok) {
    renderTable("intel", intel.data, [
      ["Received", (i) => when(i.received_at), () => "time"],
      ["Source", (i) => i.source],
      ["Kind", (i) => i.kind],
      ["Body", (i) => summary(i.body)],
    ], "No intel received yet.");
  } else showError("intel", intel.error);

  if (events.ok) {
    renderTable("events", events.data, [
      ["Time", (e) => when(e.ts), () => "time"],
      ["Level", (e) => e.level, (e) => `level-${e.level}`],
      ["Kind", (e) => e.kind],
      ["Symbol", (e) => e.symbol || ""],
      ["Message", (e) => e.message],
    ], "No events.");
  } else showError("events", events.error);
}
