// Browse: a user's memories newest first, filtered and paged by GET /v1/memories, and a timeline
// of the same memories by kind drawn as inline SVG (no chart library: every asset is served here).
"use strict";

const STATUSES = ["active", "archived", "superseded", "deleted"];
const KIND_COLORS = {
  message: "#3157d5", fact: "#b54708", episode: "#067647", procedure: "#7a2e98", summary: "#c11574",
  document: "#475467", chunk: "#98a2b3",
};
//: The timeline reads at most this many memories (pages of the list endpoint's largest size).
const TIMELINE_MAX = 20000;
let offset = 0;
// Answers can arrive out of order (the timeline of 3,000 memories takes longer than that of 2):
// only the latest request of each kind may draw.
let listRequest = 0, timelineRequest = 0;

// Local dates as the reader typed them: "since" from that day's local midnight, "until" to its end.
function dayStart(value) {
  return value ? new Date(`${value}T00:00:00`).toISOString() : null;
}

function dayEnd(value) {
  return value ? new Date(`${value}T23:59:59.999`).toISOString() : null;
}

function listParams() {
  const params = new URLSearchParams({ userId: currentUser() });
  if ($("f-kind").value) params.append("kind", $("f-kind").value);
  if ($("f-tag").value.trim()) params.append("tag", $("f-tag").value.trim());
  if ($("f-session").value.trim()) params.append("sessionId", $("f-session").value.trim());
  const status = $("f-status").value;
  for (const s of status === "all" ? STATUSES : [status]) params.append("status", s);
  const since = dayStart($("f-since").value), until = dayEnd($("f-until").value);
  if (since) params.append("createdAfter", since);
  if (until) params.append("createdBefore", until);
  return params;
}

function pageSize() {
  const size = Number($("f-limit").value) || 25;
  return Math.max(1, Math.min(500, size));
}

async function browse(event) {
  if (event) { event.preventDefault(); offset = 0; }
  showError("");
  userChanged();
  if (!currentUser()) return;
  const size = pageSize();
  const params = listParams();
  // One more than a page: whether an older page exists, without counting them all.
  params.set("limit", String(size + 1));
  params.set("offset", String(offset));
  const mine = ++listRequest;
  try {
    const data = await api("GET", `/v1/memories?${params}`);
    if (mine !== listRequest) return;
    const records = data.memories.slice(0, size);
    $("memory-rows").replaceChildren(...records.map(memoryRow));
    $("memory-table").hidden = !records.length;
    $("page-info").textContent = records.length
      ? `memories ${offset + 1}–${offset + records.length}, newest first`
      : "No memories match these filters.";
    $("prev-page").disabled = offset === 0;
    $("next-page").disabled = data.memories.length <= size;
    if (event !== undefined || offset === 0) timeline(listParams());
  } catch (err) {
    showError(err.message);
  }
}

function memoryRow(record) {
  const open = el("button", { type: "button", class: "link", text: preview(record.content, 140) });
  open.addEventListener("click", () => openMemory(record.id));
  const row = el("tr", { "data-id": record.id },
    el("td", {}, timeEl(record.createdAt)),
    el("td", {}, el("span", { class: `kind-dot kind-${record.kind}`, text: record.kind })),
    el("td", { text: record.status }),
    el("td", {}, open),
    el("td", { text: (record.tags || []).join(", ") }));
  return row;
}

function preview(text, length) {
  return text.length <= length ? text : text.slice(0, length - 1) + "…";
}

function turnPage(step) {
  offset = Math.max(0, offset + step * pageSize());
  browse();
}

async function timeline(params) {
  const records = [];
  const mine = ++timelineRequest;
  try {
    params.set("limit", "10000");
    while (records.length < TIMELINE_MAX) {
      params.set("offset", String(records.length));
      const page = (await api("GET", `/v1/memories?${params}`)).memories;
      if (mine !== timelineRequest) return;
      records.push(...page.map((r) => ({ at: new Date(r.createdAt), kind: r.kind })));
      if (page.length < 10000) break;
    }
  } catch (err) {
    showError(err.message);
    return;
  }
  if (mine === timelineRequest) drawTimeline(records);
}

// Buckets of a day, a week or a month: whichever keeps the chart to a few dozen bars.
function bucketing(first, last) {
  const days = (last - first) / 864e5;
  if (days <= 45) return { name: "day", key: (d) => d.toISOString().slice(0, 10) };
  if (days <= 300) {
    return { name: "week", key: (d) => {
      const monday = new Date(d.getTime() - ((d.getUTCDay() + 6) % 7) * 864e5);
      return monday.toISOString().slice(0, 10);
    } };
  }
  return { name: "month", key: (d) => d.toISOString().slice(0, 7) };
}

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

function drawTimeline(records) {
  const figure = $("timeline");
  figure.hidden = !records.length;
  if (!records.length) return;
  const times = records.map((r) => r.at.getTime());
  const bucket = bucketing(Math.min(...times), Math.max(...times));
  const counts = new Map();
  const kinds = new Set();
  for (const r of records) {
    const key = bucket.key(r.at);
    if (!counts.has(key)) counts.set(key, {});
    const row = counts.get(key);
    row[r.kind] = (row[r.kind] || 0) + 1;
    kinds.add(r.kind);
  }
  const keys = [...counts.keys()].sort();
  const totals = keys.map((k) => Object.values(counts.get(k)).reduce((a, b) => a + b, 0));
  const peak = Math.max(...totals);
  // Bars only, stretched to the panel's width (preserveAspectRatio none); the labels are HTML
  // below it, so the text never stretches with them.
  const width = keys.length * 10, height = 100;
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: "none", role: "img",
    id: "timeline-svg",
    "aria-label": `${records.length} memories by ${bucket.name}, ${keys[0]} to ${keys[keys.length - 1]}` });
  keys.forEach((key, i) => {
    let y = height;
    const group = svg("g", { class: "bucket", "data-key": key });
    const row = counts.get(key);
    const detail = Object.entries(row).map(([kind, n]) => `${kind} ${n}`).join(", ");
    group.append(svg("title", {}, `${key}: ${totals[i]} (${detail})`));
    for (const kind of [...kinds].sort()) {
      const n = row[kind] || 0;
      if (!n) continue;
      const h = (n / peak) * height;
      y -= h;
      group.append(svg("rect", { x: i * 10 + 1, y, width: 8, height: h, fill: KIND_COLORS[kind] || "#667085" }));
    }
    chart.append(group);
  });
  const ticks = [...new Set([0, Math.floor((keys.length - 1) / 2), keys.length - 1])].map((i) => el("span", { text: keys[i] }));
  $("timeline-chart").replaceChildren(chart, el("div", { class: "axis" }, ...ticks));
  $("timeline-caption").textContent = `${records.length} memories by ${bucket.name} and kind`;
  $("timeline-peak").textContent = `tallest bar: ${peak} in a ${bucket.name}; hover a bar for its counts`;
  $("timeline-legend").replaceChildren(...[...kinds].sort().map((kind) => {
    const swatch = svg("svg", { width: 10, height: 10, "aria-hidden": "true" });
    swatch.append(svg("rect", { width: 10, height: 10, fill: KIND_COLORS[kind] || "#667085" }));
    const n = records.filter((r) => r.kind === kind).length;
    return el("span", { class: "legend" }, swatch, el("span", { text: `${kind} ${n}` }));
  }));
}

$("browse-form").addEventListener("submit", browse);
$("prev-page").addEventListener("click", () => turnPage(-1));
$("next-page").addEventListener("click", () => turnPage(1));
onUser.push(() => {
  offset = 0;
  $("memory-rows").replaceChildren();
  $("memory-table").hidden = true;
  $("timeline").hidden = true;
  $("page-info").textContent = "";
});
