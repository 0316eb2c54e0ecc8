// Weir UI: live lists by polling JSON, copy-to-clipboard, and checking event JSON before
// sending. Everything works without this file; it only adds liveness and earlier feedback.
"use strict";

const POLL_MS = 1500;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value !== null && value !== undefined) node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === "") continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

function badge(status) {
  const word = status.charAt(0) + status.slice(1).toLowerCase();
  return el("span", { class: "badge s-" + status.toLowerCase() }, word);
}

// Start mode's form token, from the page's <meta>; empty in weir dev.
function csrfToken() {
  const meta = document.querySelector('meta[name="csrf-token"]');
  return meta ? meta.getAttribute("content") : "";
}

async function getJSON(url) {
  const answer = await fetch(url, { headers: { accept: "application/json" } });
  if (!answer.ok) throw new Error("HTTP " + answer.status);
  return answer.json();
}

// Keep polling, slower while the tab is hidden; one failed poll never stops the loop.
function every(ms, job) {
  const tick = async () => {
    if (!document.hidden) {
      try { await job(); } catch (err) { /* the next tick retries */ }
    }
    setTimeout(tick, ms);
  };
  setTimeout(tick, ms);
}

// -- runs list ----------------------------------------------------------------------------------
function timeCell(ms, iso, absolute, ago) {
  if (!ms) return "";
  return el("time", { datetime: iso, title: absolute, "data-ms": String(ms) }, ago);
}

function runRow(run) {
  return el("tr", { "data-id": run.id },
    el("td", {}, badge(run.status)),
    el("td", {}, el("a", { class: "mono", href: "/runs/" + run.id }, run.id)),
    el("td", {}, run.function),
    el("td", { class: "wide" }, run.app),
    el("td", { class: "wide" }, run.trigger),
    el("td", { class: "why" }, run.why),
    el("td", {}, timeCell(run.queued_ms, run.queued_iso, run.queued_at, run.queued_ago)),
    el("td", { class: "wide" }, timeCell(run.started_ms, run.started_iso, run.started_at, run.started_ago)),
    el("td", { class: "wide" }, run.duration));
}

function liveRuns() {
  const table = document.getElementById("runs-table");
  if (!table || !table.dataset.live) return;
  const body = document.getElementById("runs-body");
  let last = "";
  every(POLL_MS, async () => {
    const page = await getJSON(table.dataset.live + window.location.search);
    const text = JSON.stringify(page.runs);
    if (text === last) return;
    last = text;
    if (!page.runs.length) return;
    // Rows are replaced in place; focus stays on the same run's link if it had it.
    const focused = document.activeElement && document.activeElement.closest("tr");
    const focusedId = focused && focused.dataset.id;
    const current = body.querySelector("tr.nav-current");
    const currentId = current && current.dataset.id;
    body.replaceChildren(...page.runs.map(runRow));
    if (currentId) {
      const row = body.querySelector(`tr[data-id="${currentId}"]`);
      if (row) row.classList.add("nav-current");
    }
    if (focusedId) {
      const again = body.querySelector(`tr[data-id="${focusedId}"] a`);
      if (again) again.focus();
    }
  });
}

// -- events stream ------------------------------------------------------------------------------
function eventRuns(event) {
  const parts = event.runs.map((r) => badge(r.status));
  for (const o of event.outcomes) parts.push(el("span", { class: "badge s-" + o.tone }, o.label), " ");
  if (!event.runs.length && !event.outcomes.length) parts.push(el("span", { class: "muted" }, "no function"));
  return parts;
}

function eventItem(event) {
  const runs = event.runs.map((r) => el("li", {}, badge(r.status), " ",
    el("a", { class: "mono", href: "/runs/" + r.id }, r.id), " · " + r.function));
  const outcomes = event.outcomes.map((o) => el("li", {},
    o.function + ": " + o.words + (o.detail ? " — " + o.detail : "")));
  const replay = event.replayable
    ? el("div", { class: "actions" },
        el("form", { method: "post", action: "/events/" + event.id + "/replay" },
          el("input", { type: "hidden", name: "csrf", value: csrfToken() }),
          el("button", { type: "submit" }, "Replay event")),
        el("a", { class: "button", href: "/events?replay=" + event.id + "#send-h" }, "Edit & replay"))
    : el("p", { class: "muted" }, "Weir's own events (inngest/…) cannot be replayed.");
  return el("li", { class: "event", "data-id": event.id },
    el("details", {},
      el("summary", {}, el("strong", { class: "event-name" }, event.name), " ",
        el("span", { class: "muted" }, event.received_at), " ",
        el("span", { class: "event-runs" }, eventRuns(event))),
      el("div", { class: "event-body" },
        el("p", { class: "mono muted" }, "id ", el("a", { href: "/events/" + event.id }, event.id)),
        el("h3", {}, "Runs"),
        runs.length ? el("ul", {}, runs) : null,
        outcomes.length ? el("ul", {}, outcomes) : null,
        el("h3", {}, "Payload"),
        el("pre", { class: "json" }, event.payload),
        replay)));
}

function liveEvents() {
  const list = document.getElementById("events-list");
  if (!list || !list.dataset.live) return;
  every(POLL_MS, async () => {
    const page = await getJSON(list.dataset.live);
    const fresh = [];
    for (const event of page.events) {
      const known = list.querySelector(`li.event[data-id="${event.id}"]`);
      if (known) {
        known.querySelector(".event-runs").replaceChildren(...eventRuns(event));
      } else {
        fresh.push(eventItem(event));
      }
    }
    if (fresh.length) {
      const empty = list.querySelector("li.empty");
      if (empty) empty.remove();
      list.prepend(...fresh);
    }
  });
}

// -- one run ------------------------------------------------------------------------------------
function liveRun() {
  const head = document.getElementById("run");
  if (!head || !head.dataset.live) return;
  every(POLL_MS, async () => {
    const progress = await getJSON(head.dataset.live);
    if (progress.progress !== head.dataset.progress) window.location.reload();
  });
}

// -- copy run id --------------------------------------------------------------------------------
function copyButtons() {
  for (const button of document.querySelectorAll("button[data-copy]")) {
    button.addEventListener("click", async () => {
      const field = document.querySelector(button.dataset.copy);
      const note = button.parentElement.querySelector(".copied");
      try {
        await navigator.clipboard.writeText(field.value);
      } catch (err) {
        field.select(); // no clipboard permission: leave it selected for Ctrl+C
        document.execCommand("copy");
      }
      if (note) note.textContent = "Copied";
    });
  }
}

// -- send-event form ----------------------------------------------------------------------------
function eventProblem(name, text) {
  if (!name.trim()) return "Give the event a name, like app/user.created.";
  if (name.trim().startsWith("inngest/")) return "Names starting with inngest/ are reserved.";
  let value;
  try {
    value = JSON.parse(text || "{}");
  } catch (err) {
    return "The data is not valid JSON: " + err.message;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return 'The data must be a JSON object, like {"id": 1}.';
  }
  return "";
}

function sendForm() {
  const form = document.getElementById("send-form");
  if (!form) return;
  const name = form.elements.name;
  const data = form.elements.payload;
  const error = document.getElementById("ev-error");
  const check = () => {
    const problem = eventProblem(name.value, data.value);
    error.textContent = problem;
    data.setAttribute("aria-invalid", problem && problem.includes("JSON") ? "true" : "false");
    name.setAttribute("aria-invalid", problem && !problem.includes("JSON") ? "true" : "false");
    return problem;
  };
  data.addEventListener("input", () => { if (error.textContent) check(); });
  // The last payload sent comes back on the next visit (not over an event being replayed).
  const saved = readSaved();
  if (saved && !form.hasAttribute("data-prefilled")) {
    name.value = saved.name || "";
    data.value = saved.payload || "{}";
  }
  form.addEventListener("submit", (event) => {
    const problem = check();
    if (problem) {
      event.preventDefault();
      (problem.includes("JSON") ? data : name).focus();
      return;
    }
    try {
      localStorage.setItem(SEND_KEY, JSON.stringify({ name: name.value, payload: data.value }));
    } catch (err) { /* storage off: nothing to keep */ }
  });
}

const SEND_KEY = "weir.send-form";

function readSaved() {
  try {
    const text = localStorage.getItem(SEND_KEY);
    return text ? JSON.parse(text) : null;
  } catch (err) {
    return null;
  }
}

// -- confirm before destructive actions ---------------------------------------------------------
// Without JavaScript the server answers such a post with a confirmation page; with it, the
// browser asks here and the post goes out already confirmed.
function confirmForms() {
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) {
        event.preventDefault();
        return;
      }
      if (!form.querySelector('input[name="confirmed"]')) {
        form.append(el("input", { type: "hidden", name: "confirmed", value: "1" }));
      }
    });
  }
}

// -- relative times -----------------------------------------------------------------------------
function agoText(ms) {
  const delta = Date.now() - ms;
  const size = Math.abs(delta);
  if (size < 1000) return "just now";
  const units = [[86400000, "d"], [3600000, "h"], [60000, "min"], [1000, "s"]];
  for (const [unit, word] of units) {
    if (size >= unit) {
      const text = Math.floor(size / unit) + " " + word;
      return delta > 0 ? text + " ago" : "in " + text;
    }
  }
  return "just now";
}

function relativeTimes() {
  const refresh = () => {
    for (const node of document.querySelectorAll("time[data-ms]")) {
      const ms = Number(node.dataset.ms);
      if (ms) node.textContent = agoText(ms);
    }
  };
  setInterval(refresh, 10000);
}

// -- keyboard: "/" to search, j/k through lists, Enter opens ------------------------------------
function typing(target) {
  return target.closest("input, textarea, select, [contenteditable]") !== null;
}

function navRows(list) {
  return Array.from(list.querySelectorAll("tbody tr[data-id], li.event")).filter((row) => !row.hidden);
}

function keyboard() {
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    if (event.key === "/") {
      const search = document.querySelector("[data-search]");
      if (search) {
        event.preventDefault();
        search.focus();
        search.select();
      }
      return;
    }
    if (event.key !== "j" && event.key !== "k") return;
    const list = document.querySelector("[data-nav-list]");
    if (!list) return;
    const rows = navRows(list);
    if (!rows.length) return;
    const current = list.querySelector(".nav-current");
    let index = rows.indexOf(current);
    index = event.key === "j" ? Math.min(index + 1, rows.length - 1) : Math.max(index - 1, 0);
    if (current) current.classList.remove("nav-current");
    const row = rows[index];
    row.classList.add("nav-current");
    const link = row.querySelector("a, summary");
    if (link) link.focus();
    row.scrollIntoView({ block: "nearest" });
  });
}

// -- functions page: filter as you type ---------------------------------------------------------
function filterTables() {
  for (const input of document.querySelectorAll("input[data-filter]")) {
    const body = document.querySelector(input.dataset.filter);
    if (!body) continue;
    const none = document.getElementById("fn-none");
    input.addEventListener("input", () => {
      const wanted = input.value.trim().toLowerCase();
      let shown = 0;
      for (const row of body.querySelectorAll("tr[data-text]")) {
        row.hidden = wanted !== "" && !row.dataset.text.includes(wanted);
        if (!row.hidden) shown += 1;
      }
      if (none) none.hidden = shown > 0;
    });
  }
}

document.addEventListener("DOMContentLoaded", () => {
  liveRuns();
  liveEvents();
  liveRun();
  copyButtons();
  sendForm();
  confirmForms();
  relativeTimes();
  keyboard();
  filterTables();
});
