// The node's page for people: recent invocations, and one invocation's timeline of shard runs.
// It reads the journal through /admin/invocations with the admin token, kept in this tab's sessionStorage.
"use strict";

const REFRESH_LIST_MS = 2000;
const REFRESH_RUNNING_MS = 1000;
const PHASES = ["dispatch", "read", "guest", "publish", "reduce"];
let timer = null;

function token() {
  const m = location.hash.match(/(?:^#|&)token=([^&]+)/);
  if (m) {
    sessionStorage.setItem("thresher.token", decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + location.hash.replace(/(^#|&)token=[^&]+/, "$1").replace(/^#&/, "#"));
  }
  return sessionStorage.getItem("thresher.token");
}

function route() {
  const m = location.hash.match(/(?:^#|&)call=([0-9a-fA-F-]{36})/);
  return m ? { call: m[1] } : { list: true };
}

async function admin(path) {
  const res = await fetch(path, { headers: { Authorization: "Bearer " + token() }, cache: "no-store" });
  const body = await res.json().catch(() => ({}));
  if (res.status === 401) {
    sessionStorage.removeItem("thresher.token");
    throw Object.assign(new Error("the admin token was refused"), { login: true });
  }
  if (!res.ok) {
    throw new Error(body.error ? body.error.name + ": " + body.error.message : "HTTP " + res.status);
  }
  return body;
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else if (k === "style") e.style.cssText = v; else e.setAttribute(k, v);
  }
  for (const c of children.flat()) e.append(c instanceof Node ? c : document.createTextNode(c == null ? "" : String(c)));
  return e;
}

function show(id) {
  for (const s of ["login", "list", "detail"]) document.getElementById(s).hidden = s !== id;
}

function status(text, bad) {
  const s = document.getElementById("status");
  s.textContent = text;
  s.className = bad ? "error" : "";
}

const ms = (a, b) => (a && b ? new Date(b) - new Date(a) : null);
const time = t => (t ? new Date(t).toISOString().replace("T", " ").replace("Z", "") : "");
const failure = r => (r && r.error_name ? r.error_name + (r.error_message ? ": " + r.error_message : "") : "");

async function renderList() {
  const page = await admin("/admin/invocations?limit=50");
  const rows = document.getElementById("rows");
  rows.replaceChildren(...(page.invocations || []).map(i => el("tr", {},
    el("td", { class: "mono" }, time(i.created_at)),
    el("td", { class: "mono" }, el("a", { href: "#call=" + i.call_id }, i.call_id)),
    el("td", {}, i.binding),
    el("td", { class: "state " + i.state }, i.state),
    el("td", { class: "num" }, i.duration_ms != null ? i.duration_ms : ms(i.created_at, i.finished_at) ?? ""),
    el("td", { class: "failure" }, failure(i)))));
  show("list");
}

// A shard run's bars, each [phase, start, end] in ms since the call was recorded, all on the control database's clock:
// the leader's read ends where its guest starts (guest_started_at), the guest runs guest_micros, publication ends at
// published_at (or journaled_at), and dispatch is everything from the call's start to the read.
function bars(inv, slot) {
  const t0 = new Date(inv.created_at).getTime();
  const at = t => (t ? new Date(t).getTime() - t0 : null);
  const out = [];
  const guestStart = at(slot.guest_started_at);
  if (guestStart == null) return out;
  const guestEnd = guestStart + (slot.guest_micros || 0) / 1000;
  const readStart = guestStart - (slot.read_micros || 0) / 1000;
  const end = at(slot.published_at) ?? at(slot.journaled_at) ?? guestEnd;
  if (readStart > 0) out.push(["dispatch", 0, readStart]);
  if (slot.read_micros != null) out.push(["read", Math.max(0, readStart), guestStart]);
  out.push(["guest", guestStart, guestEnd]);
  if (end > guestEnd) out.push(["publish", guestEnd, end]);
  return out;
}

function lane(label, parts, total, failed, error, right) {
  const track = el("div", { class: "track" }, parts.map(([phase, a, b]) => el("div", {
    class: "bar " + phase + (failed ? " failed" : ""), title: phase + " " + Math.max(0, b - a).toFixed(1) + " ms",
    style: `left:${(100 * Math.max(0, a) / total).toFixed(3)}%;width:${(100 * Math.max(0, b - a) / total).toFixed(3)}%`,
    "data-phase": phase })));
  return el("div", { class: "lane" + (failed ? " failed" : "") },
    el("div", { class: "label" }, label), track, el("div", { class: "num" }, right),
    error ? el("div", { class: "err" }, error) : "");
}

async function renderDetail(callId) {
  const doc = await admin("/admin/invocations/" + encodeURIComponent(callId));
  const inv = doc.invocation || doc;
  const slots = doc.shard_runs || doc.slots || inv.slots || [];
  document.getElementById("call-title").textContent = "Call " + inv.call_id;
  const facts = [["binding", inv.binding + (inv.binding_version ? " v" + inv.binding_version : "")],
    ["state", inv.state], ["started", time(inv.created_at)], ["finished", time(inv.finished_at)],
    ["duration", inv.duration_ms != null ? inv.duration_ms + " ms" : ""], ["deadline", time(inv.deadline_at)],
    ["coordinator", inv.coordinator_host || ""], ["slots", (inv.slots_published ?? "?") + " of " + inv.slot_count + " published"],
    ["failure", failure(inv)]];
  document.getElementById("call-facts").replaceChildren(...facts.filter(f => f[1]).flatMap(([k, v]) =>
    [el("dt", {}, k), el("dd", { class: k === "state" ? "state " + v : "" }, v)]));
  document.getElementById("legend").replaceChildren(...PHASES.map(p => el("span", { style: `--c:var(--${p})` }, p)));
  const t0 = new Date(inv.created_at).getTime();
  const endOf = inv.finished_at ? new Date(inv.finished_at).getTime() - t0 : Date.now() - t0;
  const lanes = slots.map(s => ({ s, parts: bars(inv, s) }));
  const total = Math.max(1, endOf, ...lanes.flatMap(l => l.parts.map(p => p[2])));
  const lastPublish = Math.max(0, ...lanes.flatMap(l => l.parts.filter(p => p[0] === "publish").map(p => p[2])));
  const timeline = document.getElementById("timeline");
  timeline.replaceChildren(
    ...lanes.map(({ s, parts }) => lane(`shard run ${s.run_index ?? s.slot_index} · partition ${s.partition_id} · ${s.host_id || "?"}`,
      parts, total, !!s.error_name, failure(s),
      parts.length ? (parts[parts.length - 1][2] - parts[0][1]).toFixed(1) + " ms" : "")),
    inv.state !== "running" && inv.finished_at
      ? lane("reduce and publish" + (inv.reduce_host ? " · " + inv.reduce_host : ""), [["reduce", lastPublish, endOf]],
        total, inv.state === "failed" && !slots.some(s => s.error_name),
        "", (endOf - lastPublish).toFixed(1) + " ms") : "",
    el("div", { class: "axis" }, el("span", {}, "0 ms"), el("span", {}, total.toFixed(1) + " ms")));
  show("detail");
  return inv.state === "running";
}

async function render() {
  clearTimeout(timer);
  if (!token()) {
    show("login");
    return;
  }
  const r = route();
  try {
    const again = r.call ? await renderDetail(r.call) : (await renderList(), true);
    status("updated " + new Date().toLocaleTimeString());
    if (again) timer = setTimeout(render, r.call ? REFRESH_RUNNING_MS : REFRESH_LIST_MS);
  } catch (e) {
    status(e.message, true);
    if (e.login) show("login"); else timer = setTimeout(render, REFRESH_LIST_MS);
  }
}

document.getElementById("login-form").addEventListener("submit", ev => {
  ev.preventDefault();
  sessionStorage.setItem("thresher.token", document.getElementById("token").value.trim());
  render();
});
window.addEventListener("hashchange", render);
document.getElementById("node").textContent = location.host;
render();
