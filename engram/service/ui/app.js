// The memory explorer: plain DOM code over the /v1 API. The key stays in sessionStorage so it
// is gone with the tab; every value from the API is inserted as text, never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
const KEY = "engram.apiKey";
let lastUser = "";

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
  } catch (err) {
    $("key-status").textContent = "key rejected";
    showError(err.message);
  }
}

function number(id) {
  const value = $(id).value;
  return value === "" ? undefined : Number(value);
}

async function search(event) {
  event.preventDefault();
  showError("");
  lastUser = $("user").value.trim();
  const body = {
    userId: lastUser,
    message: $("query").value,
    config: {
      topK: number("top-k"), minScore: number("min-score"), maxTokens: number("max-tokens"),
      clipSentences: number("clip"), searchType: $("search-type").value,
    },
  };
  if ($("as-of").value) body.now = new Date($("as-of").value).toISOString();
  try {
    render(await api("POST", "/v1/retrieve", body));
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
      `${meta.queryType || "-"} / ${meta.strategy || "-"} · ${meta.totalTokens} tokens · filters: ` }),
    ...(filters.length ? filters : [el("span", { text: "none" })]),
    meta.error ? el("span", { class: "chip", text: `error ${meta.error.code} (${meta.error.fallback})` }) : "",
  );
  const stages = Object.entries(meta.stageMs || {}).map(([name, ms]) => el("span", { class: "chip", text: `${name} ${ms} ms` }));
  $("timings").replaceChildren(el("span", { text: "timings: " }), ...stages);
  $("results").replaceChildren(...payload.memories.map(memoryItem));
  if (!payload.memories.length) $("results").append(el("li", { class: "empty", text: "No memories recalled." }));
}

function memoryItem(entry) {
  const item = el("li", { class: "memory", tabindex: "0", "data-id": entry.id });
  item.append(el("div", { class: "head" },
    el("span", { class: "score", text: entry.score.toFixed(3) }),
    el("span", { class: "kind", text: `${entry.type}${entry.role ? " · " + entry.role : ""} · ${entry.timestamp}` })));
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

function rows(records, columns) {
  if (!records.length) return el("p", { text: "none" });
  return el("table", {}, ...records.map((r) => el("tr", {}, ...columns.map((c) => el("td", { text: String(r[c] ?? "") })))));
}

async function openMemory(id) {
  showError("");
  try {
    const data = await api("GET", `/v1/memories/${encodeURIComponent(id)}/history?userId=${encodeURIComponent(lastUser)}`);
    const m = data.memory;
    $("detail-body").replaceChildren(
      el("h2", { text: `${m.kind} ${m.id}` }),
      el("pre", { text: m.content }),
      rows([m], ["createdAt", "status", "importance", "accessCount"]),
      el("h3", { text: "Links" }), rows(data.links, ["type", "fromId", "toId", "strength"]),
      el("h3", { text: "Versions" }), rows(data.versions, ["version", "ingested_at", "filename", "memory_id"]),
      el("h3", { text: "History" }), rows(data.history, ["recordedAt", "status", "object", "content"]),
    );
    $("detail").hidden = false;
  } catch (err) {
    showError(err.message);
  }
}

$("key-form").addEventListener("submit", useKey);
$("search-form").addEventListener("submit", search);
$("close-detail").addEventListener("click", () => { $("detail").hidden = true; });
loadKey();
