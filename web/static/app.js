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
function runRow(run) {
  return el("tr", { "data-id": run.id },
    el("td", {}, badge(run.status), run.waiting ? el("div", { class: "why muted" }, run.waiting) : null),
    el("td", {}, el("a", { class: "mono", href: "/runs/" + run.id }, run.id)),
    el("td", {}, run.function),
    el("td", {}, run.trigger),
    el("td", {}, run.queued_at),
    el("td", {}, run.started_at),
    el("td", {}, run.duration));
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
    body.replaceChildren(...page.runs.map(runRow));
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
    ? el("form", { method: "post", action: "/events/" + event.id + "/replay" },
        el("input", { type: "hidden", name: "csrf", value: csrfToken() }),
        el("button", { type: "submit" }, "Replay event"))
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
  form.addEventListener("submit", (event) => {
    const problem = check();
    if (problem) {
      event.preventDefault();
      (problem.includes("JSON") ? data : name).focus();
    }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  liveRuns();
  liveEvents();
  liveRun();
  copyButtons();
  sendForm();
});
