// One memory: every field, its links (with the linked memory's text), versions and history; edit
// (PATCH), delete (after a confirmation) and add.
"use strict";

//: Linked memories whose text is fetched; past this many a link shows its id.
const LINK_TEXTS = 25;
const FIELDS = ["id", "kind", "status", "role", "sessionId", "agentId", "projectId", "subject", "predicate", "object",
  "trigger", "action", "tags", "entities", "importance", "createdAt", "recordedAt", "validFrom", "validTo",
  "lastAccessedAt", "accessCount", "docKey", "version", "contentHash", "metadata"];
const TIMES = new Set(["createdAt", "recordedAt", "validFrom", "validTo", "lastAccessedAt"]);

function userQuery() {
  return `userId=${encodeURIComponent(currentUser())}`;
}

function fieldValue(name, value) {
  if (TIMES.has(name)) return timeEl(value);
  if (Array.isArray(value)) return el("span", { text: value.join(", ") });
  if (typeof value === "object") return el("code", { text: JSON.stringify(value) });
  return el("span", { text: String(value) });
}

function fieldTable(m) {
  const rows = FIELDS.filter((f) => m[f] !== undefined && m[f] !== null && !(Array.isArray(m[f]) && !m[f].length)
    && !(typeof m[f] === "object" && !Array.isArray(m[f]) && !Object.keys(m[f]).length));
  return el("table", { class: "fields" }, ...rows.map((f) => el("tr", {}, el("th", { scope: "row", text: f }),
    el("td", {}, fieldValue(f, m[f])))));
}

async function linkList(m, links) {
  if (!links.length) return el("p", { text: "none" });
  const others = [...new Set(links.map((l) => (l.fromId === m.id ? l.toId : l.fromId)))].slice(0, LINK_TEXTS);
  const texts = new Map(await Promise.all(others.map(async (id) => {
    try {
      const other = await api("GET", `/v1/memories/${encodeURIComponent(id)}?${userQuery()}`);
      return [id, `${other.kind}: ${preview(other.content, 160)}`];
    } catch (err) {
      return [id, `(${id}: ${err.message.startsWith("404") ? "deleted" : "unavailable"})`];
    }
  })));
  return el("ul", { class: "links" }, ...links.map((l) => {
    const outgoing = l.fromId === m.id;
    const other = outgoing ? l.toId : l.fromId;
    const open = el("button", { type: "button", class: "link", text: texts.get(other) || other });
    open.addEventListener("click", () => openMemory(other));
    return el("li", {}, el("span", { class: "chip", text: outgoing ? `${l.type} →` : `← ${l.type}` }), open);
  }));
}

function rows(id, records, columns) {
  if (!records.length) return el("p", { id, text: "none" });
  return el("table", { id }, ...records.map((r) => el("tr", {}, ...columns.map((c) =>
    el("td", {}, c.endsWith("At") || c === "ingested_at" ? timeEl(r[c]) : el("span", { text: String(r[c] ?? "") }))))));
}

async function openMemory(id) {
  showError("");
  const user = currentUser();
  try {
    const data = await api("GET", `/v1/memories/${encodeURIComponent(id)}/history?${userQuery()}`);
    const links = await linkList(data.memory, data.links);
    if (currentUser() !== user) return; // the user changed while this was loading
    const m = data.memory;
    const edit = el("button", { type: "button", id: "edit-memory", text: "Edit" });
    const remove = el("button", { type: "button", id: "delete-memory", class: "danger", text: "Delete" });
    edit.addEventListener("click", () => editForm(m));
    remove.addEventListener("click", () => confirmDelete(m));
    $("detail-body").replaceChildren(
      el("h2", { text: `${m.kind} memory` }),
      el("pre", { id: "detail-content", text: m.content }),
      el("div", { class: "actions" }, edit, remove),
      el("div", { id: "edit-area" }),
      fieldTable(m),
      el("h3", { text: "Links" }), links,
      el("h3", { text: "Versions" }), rows("detail-versions", data.versions, ["version", "ingested_at", "filename", "memory_id"]),
      el("h3", { text: "History" }), rows("detail-history", data.history, ["recordedAt", "status", "object", "content"]),
    );
    $("detail").hidden = false;
  } catch (err) {
    showError(err.message);
  }
}

function input(id, label, value, attrs = {}) {
  return el("label", {}, label, el("input", { id, value: value ?? "", ...attrs }));
}

function editForm(m) {
  const form = el("form", { id: "edit-form" },
    el("label", { class: "wide" }, "Content", el("textarea", { id: "edit-content", rows: "4", text: m.content })),
    input("edit-kind", "Kind", m.kind),
    input("edit-tags", "Tags (comma separated)", (m.tags || []).join(", ")),
    input("edit-importance", "Importance", m.importance, { type: "number", min: "0", max: "1", step: "0.05" }),
    el("label", {}, "Status", el("select", { id: "edit-status" },
      ...STATUSES.map((s) => { const o = el("option", { text: s }); o.selected = s === m.status; return o; }))),
    el("button", { type: "submit", id: "edit-save", text: "Save" }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = {
      content: $("edit-content").value, kind: $("edit-kind").value.trim(),
      tags: splitTags($("edit-tags").value), status: $("edit-status").value,
    };
    if ($("edit-importance").value !== "") body.importance = Number($("edit-importance").value);
    try {
      await api("PATCH", `/v1/memories/${encodeURIComponent(m.id)}?${userQuery()}`, body);
      await openMemory(m.id);
      browse();
    } catch (err) {
      showError(err.message);
    }
  });
  $("edit-area").replaceChildren(form);
  $("edit-content").focus();
}

function splitTags(text) {
  return text.split(",").map((t) => t.trim()).filter(Boolean);
}

function confirmDelete(m) {
  const dialog = $("confirm-delete");
  $("confirm-text").textContent = `Delete this ${m.kind} memory? "${preview(m.content, 120)}" This cannot be undone.`;
  dialog.returnValue = "";
  dialog.onclose = async () => {
    if (dialog.returnValue !== "delete") return;
    try {
      await api("DELETE", `/v1/memories/${encodeURIComponent(m.id)}?${userQuery()}`);
      closeDetail();
      $("page-info").textContent = `Deleted "${preview(m.content, 60)}".`;
      browse();
    } catch (err) {
      showError(err.message);
    }
  };
  dialog.showModal();
  $("confirm-cancel").focus();
}

function closeDetail() {
  $("detail").hidden = true;
  $("detail-body").replaceChildren();
}

async function addMemory(event) {
  event.preventDefault();
  showError("");
  userChanged();
  const body = { content: $("add-content").value, kind: $("add-kind").value };
  const tags = splitTags($("add-tags").value);
  if (tags.length) body.tags = tags;
  if ($("add-session").value.trim()) body.sessionId = $("add-session").value.trim();
  try {
    const record = await api("POST", `/v1/memories?${userQuery()}`, body);
    $("add-status").textContent = `Added ${record.kind} memory ${record.id}.`;
    $("add-form").reset();
    await openMemory(record.id);
  } catch (err) {
    showError(err.message);
  }
}

$("add-form").addEventListener("submit", addMemory);
$("close-detail").addEventListener("click", closeDetail);
document.addEventListener("keydown", (e) => { if (e.key === "Escape" && !$("detail").hidden && !$("confirm-delete").open) closeDetail(); });
onUser.push(closeDetail);
$("user").addEventListener("change", () => browse());
loadKey();
