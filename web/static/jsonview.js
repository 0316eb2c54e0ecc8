// Weir UI: JSON viewers and copy buttons. A <pre data-json> becomes a tree of <details>
// (objects and arrays fold; keys, strings, numbers, booleans and null are coloured); its
// data-copy-json button copies the JSON text, and a data-copy-value button copies its value.
// No library: the page works without this file.
"use strict";

const OPEN_DEPTH = 2; // levels shown unfolded at first

function jvNode(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function jvLeaf(value) {
  if (value === null) return jvNode("span", "j-null", "null");
  if (typeof value === "string") return jvNode("span", "j-str", JSON.stringify(value));
  if (typeof value === "number") return jvNode("span", "j-num", String(value));
  if (typeof value === "boolean") return jvNode("span", "j-bool", String(value));
  return jvNode("span", "", String(value));
}

// `trailing` (a comma or nothing) goes inside a box, after its closing bracket, so that it
// stays on the bracket's line; a folded box shows it after its summary.
function jvTree(value, depth, trailing) {
  if (value === null || typeof value !== "object") {
    const leaf = jvLeaf(value);
    if (!trailing) return leaf;
    const both = jvNode("span");
    both.append(leaf, jvNode("span", "j-punct", trailing));
    return both;
  }
  const isArray = Array.isArray(value);
  const entries = isArray ? value.map((v, i) => [i, v]) : Object.entries(value);
  const [open, close] = isArray ? ["[", "]"] : ["{", "}"];
  if (!entries.length) return jvNode("span", "j-punct", open + close + trailing);
  const box = jvNode("details", "j-box");
  if (depth < OPEN_DEPTH) box.open = true;
  const noun = isArray ? "item" : "key";
  const count = entries.length + " " + noun + (entries.length === 1 ? "" : "s");
  const summary = jvNode("summary", "j-sum");
  summary.dataset.close = close + trailing;
  summary.append(jvNode("span", "j-punct", open), jvNode("span", "j-count", " " + count + " "));
  box.append(summary);
  const list = jvNode("ul", "j-list");
  entries.forEach(([key, child], index) => {
    const row = jvNode("li");
    if (!isArray) row.append(jvNode("span", "j-key", JSON.stringify(key)), jvNode("span", "j-punct", ": "));
    row.append(jvTree(child, depth + 1, index < entries.length - 1 ? "," : ""));
    list.append(row);
  });
  box.append(list, jvNode("span", "j-punct", close + trailing));
  return box;
}

const RAW = new WeakMap(); // each viewer's text as the server sent it, for its copy button

function jsonViewers() {
  for (const pre of document.querySelectorAll("pre[data-json]")) {
    RAW.set(pre, pre.textContent);
    let value;
    try {
      value = JSON.parse(pre.textContent);
    } catch (err) {
      continue; // not JSON after all: leave the text as it is
    }
    if (value === null || typeof value !== "object") continue; // a scalar reads fine as text
    pre.replaceChildren(jvTree(value, 0, ""));
    pre.classList.add("j-tree");
  }
}

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch (err) {
    // No clipboard permission (plain http on another host): copy through a hidden field.
    const field = document.createElement("textarea");
    field.value = text;
    field.setAttribute("readonly", "");
    field.className = "sr-only";
    document.body.append(field);
    field.select();
    const done = document.execCommand("copy");
    field.remove();
    return done;
  }
}

function copyValueButtons() {
  for (const button of document.querySelectorAll("button[data-copy-value], button[data-copy-json]")) {
    button.addEventListener("click", async () => {
      const pre = button.closest(".jv") && button.closest(".jv").querySelector("pre[data-json]");
      const text = pre ? RAW.get(pre) : button.dataset.copyValue;
      const done = await copyText(text || "");
      const note = button.parentElement.querySelector(".copied");
      if (note) note.textContent = done ? "Copied" : "Select the text and copy it";
    });
  }
}

document.addEventListener("DOMContentLoaded", () => {
  jsonViewers();
  copyValueButtons();
});
