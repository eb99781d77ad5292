// The P&L chart, drawn as inline SVG from GET /api/v1/pnl (no library): the cumulative net P&L
// as a line over the period, and each day's net P&L as a bar below it.

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 600;
const LEFT = 92; // room for the value labels
const RIGHT = 8;
const LINE_TOP = 24;
const LINE_HEIGHT = 150;
const BARS_TOP = 212;
const BARS_HEIGHT = 70;
const HEIGHT = 308;
const LABEL_GAP = 15; // labels closer than this to one already drawn are left out

function element(parent, name, attributes, text) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) {
    node.setAttribute(key, String(value));
  }
  if (text !== undefined) node.textContent = text;
  parent.appendChild(node);
  return node;
}

// A linear scale from [low, high] (always including 0) onto [bottom, top] pixels.
function scale(values, top, height) {
  const low = Math.min(0, ...values);
  const high = Math.max(0, ...values);
  const span = high - low || 1;
  return { low, high, y: (value) => top + height - ((value - low) / span) * height };
}

// labels: [y, text] pairs, most important first.
function axisLabels(svg, labels) {
  const drawn = [];
  for (const [y, text] of labels) {
    if (drawn.some((other) => Math.abs(other - y) < LABEL_GAP)) continue;
    drawn.push(y);
    element(svg, "text", { x: LEFT - 8, y: y + 4, "text-anchor": "end", class: "axis-label" }, text);
  }
}

// days: rows of /api/v1/pnl, newest first. formatMoney: number -> text.
export function drawPnlChart(container, days, formatMoney) {
  container.replaceChildren();
  if (days.length === 0) {
    container.textContent = "No P&L recorded yet.";
    return;
  }
  const ordered = [...days].reverse();
  let running = 0;
  const cumulative = ordered.map((day) => (running += Number(day.net_pnl)));
  const daily = ordered.map((day) => Number(day.net_pnl));
  const first = ordered[0].date;
  const last = ordered[ordered.length - 1].date;
  const total = cumulative[cumulative.length - 1];

  const svg = element(container, "svg", {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    role: "img",
    "aria-labelledby": "pnl-chart-title",
    class: "pnl-chart",
  });
  element(svg, "title", { id: "pnl-chart-title" },
    `Net P&L from ${first} to ${last}: ${formatMoney(total)} over ${ordered.length} days`);

  const step = (WIDTH - LEFT - RIGHT) / ordered.length;
  const x = (index) => LEFT + step * (index + 0.5);

  // Cumulative line with a shaded area down to zero.
  const line = scale(cumulative, LINE_TOP, LINE_HEIGHT);
  element(svg, "line", { x1: LEFT, x2: WIDTH - RIGHT, y1: line.y(0), y2: line.y(0), class: "zero" });
  const points = cumulative.map((value, index) => `${x(index).toFixed(1)},${line.y(value).toFixed(1)}`);
  const zero = line.y(0).toFixed(1);
  element(svg, "polygon", {
    points: `${x(0).toFixed(1)},${zero} ${points.join(" ")} ${x(ordered.length - 1).toFixed(1)},${zero}`,
    class: "area",
  });
  element(svg, "polyline", { points: points.join(" "), class: total >= 0 ? "line gain" : "line loss" });
  axisLabels(svg, [
    [line.y(line.high), formatMoney(line.high)],
    [line.y(line.low), formatMoney(line.low)],
    [line.y(0), formatMoney(0)],
  ]);
  element(svg, "text", { x: LEFT, y: LINE_TOP - 8, class: "series-label" }, "Cumulative net P&L");

  // Daily bars around their own zero line.
  const bars = scale(daily, BARS_TOP, BARS_HEIGHT);
  element(svg, "text", { x: LEFT, y: BARS_TOP - 8, class: "series-label" }, "Daily net P&L");
  daily.forEach((value, index) => {
    const top = Math.min(bars.y(value), bars.y(0));
    const bar = element(svg, "rect", {
      x: (LEFT + step * index + step * 0.15).toFixed(1),
      y: top.toFixed(1),
      width: Math.max(1, step * 0.7).toFixed(1),
      height: Math.max(1, Math.abs(bars.y(value) - bars.y(0))).toFixed(1),
      class: value >= 0 ? "bar gain" : "bar loss",
    });
    element(bar, "title", {}, `${ordered[index].date}: ${formatMoney(value)}`);
  });
  element(svg, "line", { x1: LEFT, x2: WIDTH - RIGHT, y1: bars.y(0), y2: bars.y(0), class: "zero" });
  axisLabels(svg, [
    [bars.y(bars.high), formatMoney(bars.high)],
    [bars.y(bars.low), formatMoney(bars.low)],
  ]);

  // Dates at both ends.
  const dateY = BARS_TOP + BARS_HEIGHT + 18;
  element(svg, "text", { x: LEFT, y: dateY, class: "axis-label" }, first);
  element(svg, "text", { x: WIDTH - RIGHT, y: dateY, "text-anchor": "end", class: "axis-label" }, last);
}
