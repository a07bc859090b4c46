// The memory explorer: plain DOM code over the /v1 API. The key stays in sessionStorage so it
// is gone with the tab; every value from the API is inserted as text, never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
const KEY = "engram.apiKey";
let lastUser = "";
// Every view works for one user; switching users closes what was open for the previous one.
const onUser = [];

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child);
  return node;
}

async function api(method, path, body) {
  const headers = { Authorization: "Bearer " + (sessionStorage.getItem(KEY) || "") };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = data.error || {};
    throw new Error(`${response.status} ${error.code || ""}: ${error.message || response.statusText}`);
  }
  return data;
}

function showError(message) {
  $("error").hidden = !message;
  $("error").textContent = message || "";
}

async function useKey(event) {
  event.preventDefault();
  sessionStorage.setItem(KEY, $("api-key").value.trim());
  $("api-key").value = "";
  await loadKey();
}

async function loadKey() {
  if (!sessionStorage.getItem(KEY)) { $("key-status").textContent = "no key"; return; }
  try {
    const me = await api("GET", "/v1/me");
    $("key-status").textContent = `key ${me.id}${me.admin ? " (admin)" : ""}`;
    const list = $("users");
    const users = me.scopes.filter((s) => s.startsWith("user:")).map((s) => s.slice("user:".length));
    list.replaceChildren(...users.map((u) => el("option", { value: u })));
    if (!$("user").value && list.options.length) $("user").value = list.options[0].value;
    showError("");
    userChanged();
    if (currentUser()) browse(); // browse.js: a user's memories are the first thing to see
  } catch (err) {
    $("key-status").textContent = "key rejected";
    showError(err.message);
  }
}

function number(id) {
  const value = $(id).value;
  return value === "" ? undefined : Number(value);
}

function currentUser() {
  return $("user").value.trim();
}

// "3 days ago" in the reader's language, with the exact local time on hover.
const RELATIVE = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
const UNITS = [["year", 31536e6], ["month", 2592e6], ["week", 6048e5], ["day", 864e5], ["hour", 36e5], ["minute", 6e4]];

function relative(iso) {
  const delta = new Date(iso).getTime() - Date.now();
  for (const [unit, ms] of UNITS) {
    if (Math.abs(delta) >= ms) return RELATIVE.format(Math.round(delta / ms), unit);
  }
  return RELATIVE.format(Math.round(delta / 1000), "second");
}

function timeEl(iso) {
  if (!iso) return el("span", { text: "-" });
  return el("time", { datetime: iso, title: new Date(iso).toLocaleString(), text: relative(iso) });
}

function showTab(name) {
  for (const tab of ["browse", "search", "add"]) {
    $(`${tab}-panel`).hidden = tab !== name;
    $(`tab-${tab}`).setAttribute("aria-pressed", String(tab === name));
  }
}

function userChanged() {
  const user = currentUser();
  if (user === lastUser) return;
  lastUser = user;
  for (const callback of onUser) callback(user);
}

async function search(event) {
  event.preventDefault();
  showError("");
  userChanged();
  const body = {
    message: $("query").value,
    config: {
      topK: number("top-k"), minScore: number("min-score"), maxTokens: number("max-tokens"),
      clipSentences: number("clip"), searchType: $("search-type").value,
    },
  };
  if ($("as-of").value) body.now = new Date($("as-of").value).toISOString();
  try {
    render(await api("POST", `/v1/retrieve?userId=${encodeURIComponent(lastUser)}`, body));
  } catch (err) {
    $("results").replaceChildren();
    showError(err.message);
  }
}

function render(payload) {
  const meta = payload.metadata;
  const filters = meta.appliedFilters.map((f) => el("span", { class: "chip", text: f }));
  $("summary").replaceChildren(
    el("span", { text: `${meta.includedResults} of ${meta.totalResults} candidates in ${meta.queryTime} ms · ` +
      `${meta.totalTokens} tokens${meta.cached ? " · cached" : ""} · stages: ` }),
    ...(filters.length ? filters : [el("span", { text: "none" })]),
    meta.error ? el("span", { class: "chip", text: `error ${meta.error.code} (${meta.error.fallback})` }) : "",
  );
  $("understood").replaceChildren(...understood(payload));
  $("dropped").replaceChildren(...dropped(meta));
  const stages = Object.entries(meta.stageMs || {}).map(([name, ms]) => el("span", { class: "chip", text: `${name} ${ms} ms` }));
  $("timings").replaceChildren(el("span", { text: "timings: " }), ...stages);
  $("compare").replaceChildren(...compare(payload.memories.slice(0, COMPARED)));
  $("results").replaceChildren(...payload.memories.map(memoryItem));
  if (!payload.memories.length) $("results").append(el("li", { class: "empty", text: "No memories recalled." }));
}

// How the query was read, as the retrieval metadata states it: the query type, the weights'
// strategy and the time range the query was understood to mean (shown in UTC, the range's own
// zone, with the local times on hover).
function understood(payload) {
  const meta = payload.metadata;
  return [
    el("span", { text: "understood as " }),
    el("span", { class: "chip", id: "query-type", text: `type: ${meta.queryType || "-"}` }),
    el("span", { class: "chip", id: "strategy", text: `strategy: ${meta.strategy || "-"}` }),
    timeRangeChip(meta.timeRange),
    el("span", { class: "chip", text: `weights: ${meta.config.weightsSource || "default"}` }),
  ];
}

function utc(iso) {
  return new Date(iso).toISOString().slice(0, 16).replace("T", " ");
}

function timeRangeChip(range) {
  if (!range) return el("span", { class: "chip", id: "time-range", text: "time range: none" });
  const local = `${new Date(range.start).toLocaleString()} – ${new Date(range.end).toLocaleString()} (local)`;
  const said = range.expression ? `'${range.expression}' = ` : "";
  return el("span", { class: "chip", id: "time-range", title: local,
    text: `time range: ${said}${utc(range.start)} – ${utc(range.end)} UTC${range.vague ? " (vague: favoured, not required)" : range.about ? " (what it is for: favoured, not required)" : ""}` });
}

// What happened to the candidates, stage by stage, as the metadata counts them: each candidate is
// either returned or dropped at exactly one stage, so the "left" column ends at the returned count.
function dropped(meta) {
  const cfg = meta.config || {};
  const stages = [
    ["drop-below", `below minScore ${cfg.minScore}`, meta.belowMinScore],
    ["drop-dedup", "duplicates (dedup)", meta.dedupRemoved],
    ["drop-mmr", "replaced for diversity (MMR)", meta.mmrRemoved],
    ["drop-topk", `past topK ${cfg.topK}`, meta.beyondTopK],
    ["drop-budget", `over the ${cfg.maxTokens}-token budget`, meta.budgetRemoved],
  ];
  let left = meta.totalResults;
  const row = (id, stage, gone, remaining) => el("tr", { id },
    el("th", { scope: "row", text: stage }), el("td", { text: gone }), el("td", { text: String(remaining) }));
  const rows = [row("drop-found", "candidates found", "", left)];
  for (const [id, stage, count] of stages) {
    left -= count || 0;
    rows.push(row(id, stage, count ? `−${count}` : "0", left));
  }
  const table = el("table", { id: "funnel" },
    el("caption", { text: `What happened to the ${meta.totalResults} candidates` }),
    el("thead", {}, el("tr", {}, el("th", { scope: "col", text: "Stage" }), el("th", { scope: "col", text: "Dropped" }),
      el("th", { scope: "col", text: "Left" }))),
    el("tbody", {}, ...rows));
  const parts = [table];
  if (meta.suppressedSuperseded) {
    parts.push(el("span", { class: "chip drop", text: `${meta.suppressedSuperseded} superseded versions held back` }));
  }
  return parts;
}

const COMPARED = 5;
const SIGNAL_COLORS = ["#3157d5", "#b54708", "#067647", "#7a2e98", "#c11574", "#475467", "#0e7090", "#854a0e", "#98a2b3"];

// The top results side by side: one bar each, split into what every signal contributed (value x
// weight). The score beside it is the ranking's own (fusion adds more than this sum), so both show.
function compare(entries) {
  if (!entries.length) return [];
  const names = Object.keys(entries[0].signals || {});
  const widest = Math.max(...entries.map((e) => names.reduce((sum, n) => sum + e.signals[n].value * e.signals[n].weight, 0)), 1e-9);
  const rows = entries.map((entry, i) => {
    const bar = el("div", { class: "stack", role: "img",
      "aria-label": `#${i + 1}: ` + names.map((n) => `${n} ${(entry.signals[n].value * entry.signals[n].weight).toFixed(3)}`).join(", ") });
    names.forEach((name, j) => {
      const part = entry.signals[name].value * entry.signals[name].weight;
      if (part <= 0) return;
      const piece = el("span", { title: `${name} ${part.toFixed(3)}` });
      piece.style.width = `${(part / widest) * 100}%`;
      piece.style.background = SIGNAL_COLORS[j % SIGNAL_COLORS.length];
      bar.append(piece);
    });
    return el("div", { class: "compare-row" }, el("span", { class: "rank", text: `#${i + 1}` }),
      el("span", { class: "score", text: entry.score.toFixed(3) }), bar,
      el("span", { class: "compare-text", text: preview(entry.content, 60) }));
  });
  const legend = el("div", {}, ...names.map((name, j) => {
    const swatch = el("span", { class: "swatch" });
    swatch.style.background = SIGNAL_COLORS[j % SIGNAL_COLORS.length];
    return el("span", { class: "legend" }, swatch, el("span", { text: name }));
  }));
  return [el("h2", { class: "compare-title", text: `Top ${entries.length} by signal` }), ...rows, legend];
}

function memoryItem(entry, index) {
  const item = el("li", { class: "memory", tabindex: "0", "data-id": entry.id });
  item.append(el("div", { class: "head" },
    el("span", { class: "rank", text: `#${index + 1}` }),
    el("span", { class: "score", text: entry.score.toFixed(3) }),
    el("span", { class: "kind", text: `${entry.type}${entry.role ? " · " + entry.role : ""} · ` }),
    timeEl(entry.timestamp)));
  item.append(el("div", { class: "content", text: entry.content }));
  const grid = el("div", { class: "signals" });
  for (const [name, signal] of Object.entries(entry.signals || {})) {
    const contribution = signal.value * signal.weight;
    // Set through the CSSOM: the page's Content-Security-Policy refuses style attributes.
    const fill = el("span");
    fill.style.width = `${Math.max(0, Math.min(1, contribution)) * 100}%`;
    const bar = el("div", { class: "bar", title: `${name}: ${signal.value} x ${signal.weight}` }, fill);
    grid.append(el("span", { text: name }), bar,
      el("span", { text: `${signal.value.toFixed(2)} x ${signal.weight.toFixed(2)} = ${contribution.toFixed(3)}` }));
  }
  item.append(grid);
  item.append(el("ul", { class: "reasons" }, ...(entry.reasons || []).map((r) => el("li", { text: r }))));
  item.addEventListener("click", () => openMemory(entry.id));
  item.addEventListener("keydown", (e) => { if (e.key === "Enter") openMemory(entry.id); });
  return item;
}

$("key-form").addEventListener("submit", useKey);
$("search-form").addEventListener("submit", search);
$("user").addEventListener("change", userChanged);
for (const tab of ["browse", "search", "add"]) $(`tab-${tab}`).addEventListener("click", () => showTab(tab));
onUser.push(() => { $("results").replaceChildren(); $("compare").replaceChildren(); $("summary").replaceChildren(); $("understood").replaceChildren();
  $("dropped").replaceChildren(); $("timings").replaceChildren(); });
