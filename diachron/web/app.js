// diachron's page: ask, show how the question's time was read, and show the time of every piece of evidence.
// No build step. Dates are shown the way people write them ("Feb 2011", "6 Dec 1921"); the API speaks ISO-8601
// UTC with half-open [start, end) intervals, and diachron/display.py has the same rules for the CLI.
"use strict";

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const $ = (id) => document.getElementById(id);
let last = null;        // the last request body, re-used by "edit" and the clarification buttons

function parseIso(s) { return s ? new Date(s) : null; }

function humanInstant(d, g = "day") {
  if (!d) return "—";
  const y = d.getUTCFullYear();
  if (g === "decade") return `${y - (y % 10)}s`;
  if (g === "year") return `${y}`;
  if (g === "quarter") return `Q${Math.floor(d.getUTCMonth() / 3) + 1} ${y}`;
  if (g === "month") return `${MONTHS[d.getUTCMonth()]} ${y}`;
  const day = `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${y}`;
  const hh = String(d.getUTCHours()).padStart(2, "0"), mm = String(d.getUTCMinutes()).padStart(2, "0");
  if (g === "day" && hh === "00" && mm === "00") return day;
  return `${day} ${hh}:${mm} UTC`;
}

// The start of the period of granularity g holding the last instant before the exclusive end.
function lastPeriod(end, g) {
  if (g === "instant") return end;
  const t = new Date(end.getTime() - 1);
  const y = t.getUTCFullYear(), m = t.getUTCMonth();
  if (g === "decade") return new Date(Date.UTC(y - (y % 10), 0, 1));
  if (g === "year") return new Date(Date.UTC(y, 0, 1));
  if (g === "quarter") return new Date(Date.UTC(y, m - (m % 3), 1));
  if (g === "month") return new Date(Date.UTC(y, m, 1));
  if (g === "hour") return new Date(Date.UTC(y, m, t.getUTCDate(), t.getUTCHours()));
  return new Date(Date.UTC(y, m, t.getUTCDate()));
}

// A half-open interval {start, end, granularity} as people write it: "Sep 2010 – Aug 2012", "before 1920".
function humanInterval(iv, g) {
  g = g || iv.granularity || "day";
  const s = parseIso(iv.start), e = parseIso(iv.end);
  if (!s && !e) return "any time";
  if (!s) return `before ${humanInstant(e, g)}`;
  if (!e) return `since ${humanInstant(s, g)}`;
  if (g === "instant" || e - s <= 1000) return humanInstant(s, s.getUTCHours() || s.getUTCMinutes() ? "instant" : "day");
  const lp = lastPeriod(e, g);
  if (lp < s) return `${humanInstant(s, "instant")} – ${humanInstant(e, "instant")}`;
  const a = humanInstant(s, g), b = humanInstant(lp, g);
  return a === b ? a : `${a} – ${b}`;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v; else if (k === "text") node.textContent = v; else node.setAttribute(k, v);
  }
  for (const c of children) if (c != null) node.append(c);
  return node;
}

function isoDay(d) { return d.toISOString().slice(0, 10); }

function isInferred(iv) {
  return Boolean(iv.inferred || (iv.provenance && String(iv.provenance).startsWith("inferred"))
    || (iv.bound_source && iv.bound_source !== "text"));
}

function timeUnknown(e) {
  return e.time_source === "unknown" || e.time_status === "time unknown" || e.time_status === "unknown";
}

async function run(body) {
  body = { ...body, answer: true };  // the answer panel: the service writes the cited answer beside the cards
  last = body;
  $("status").textContent = "Searching…";
  $("go").disabled = true;
  try {
    const response = await fetch("/search", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const payload = await response.json();
    if (!response.ok) {
      $("status").textContent = `Cannot answer: ${payload.detail}`;
      $("status").className = "error";
      return;
    }
    $("status").className = "";
    render(payload);
  } catch (err) {
    $("status").textContent = `The service did not answer: ${err}`;
    $("status").className = "error";
  } finally {
    $("go").disabled = false;
  }
}

function render(r) {
  const t = r.trace, intent = r.intent;
  const n = r.evidence.length;
  $("status").textContent = n ? `${n} pieces of evidence from ${t.candidates_after_filter} candidates in the window ` +
    `(${Math.round((t.seconds.total || 0) * 1000)} ms).` : "";
  renderReading(intent);
  renderAnswer(r.answer);
  renderSignals(r.signals, intent, n);
  renderTimeline(r);
  renderThenNow(r.evidence);
  renderCards(r.evidence, intent);
  renderTrace(t);
  if (r.evidence.some((e) => e.superseded_by)) fetchNow(r);
}

// A superseded card's series, as it stands now: the same question read as "current" (valid at the clock).
async function fetchNow(r) {
  const series = new Set(r.evidence.filter((e) => e.superseded_by).map((e) => e.series_id));
  const response = await fetch("/search", { method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ ...last, answer: false, window: { relation: "current" } }) });
  if (!response.ok) return;
  const current = (await response.json()).evidence.filter((e) => series.has(e.series_id) && !e.superseded_by);
  renderThenNow([...r.evidence, ...current]);
}

function renderReading(intent) {
  $("reading").hidden = false;
  const windows = intent.intervals || [];
  $("window-chip").textContent = windows.length ? windows.map((w) => humanInterval(w, "day")).join(" and ")
    : (intent.relation === "current" ? "now" : "no time in the question");
  $("relation").textContent = `(${intent.relation})`;
  const first = windows[0];
  if (first && first.start) $("w-start").value = isoDay(parseIso(first.start)); else $("w-start").value = "";
  if (first && first.end) $("w-end").value = isoDay(new Date(parseIso(first.end).getTime() - 86400000));
  else $("w-end").value = "";
  $("w-relation").value = intent.relation;
  const list = $("assumptions");
  list.replaceChildren(...(intent.assumptions || []).map((a) => el("li", { text: `Assumed: ${a}` })));
}

function renderSignals(signals, intent, count) {
  const box = $("signals");
  box.replaceChildren();
  for (const s of signals) {
    if (s.type === "gap") {
      const why = s.reason ? ` (${s.reason})` : "";
      box.append(el("div", { class: "signal gap" }, `Gap: no evidence for ${humanInterval(s.interval)}${why}.`));
    } else if (s.type === "conflict") {
      const when = s.interval ? ` during ${humanInterval(s.interval)}` : "";
      box.append(el("div", { class: "signal conflict" },
        `Conflict (${s.kind}) in ${s.series_id}: ${s.doc_ids.join(" vs ")}${when} — read them apart, not blended.`));
    } else if (s.type === "clarification") {
      const div = el("div", { class: "signal clarification" }, `Which one do you mean? ${s.reason}: `);
      for (const c of s.candidates) {
        const label = `${c.version || c.doc_id} (${c.interval ? humanInterval(c.interval, "day") : "replaced"})`;
        const button = el("button", { type: "button", class: "choice", text: label });
        button.addEventListener("click", () => chooseVersion(c));
        div.append(button);
      }
      box.append(div);
    }
  }
  if (!count) {
    const windows = (intent.intervals || []).map((w) => humanInterval(w, "day")).join(" and ");
    box.append(el("div", { class: "signal empty" },
      `No evidence ${windows ? `in ${windows}` : "for this question"}. Try a wider window (edit above), ` +
      "another wording, or drop as of."));
  }
  box.hidden = !box.childElementCount;
}

function chooseVersion(candidate) {
  const iv = candidate.interval || {};
  const startIso = iv.start || iv.end;
  if (!startIso) return;
  const start = parseIso(iv.start) || new Date(parseIso(iv.end).getTime() - 86400000);
  const end = new Date(start.getTime() + 86400000);
  run({ ...last, window: { start: start.toISOString(), end: end.toISOString(), relation: "at", granularity: "day" } });
}

// ---- answer -------------------------------------------------------------------------------------------------
// The answer's text: paragraphs split on blank lines; each [n] becomes a link to card n. Built with DOM nodes
// and textContent only, so nothing in it is ever read as HTML.
function renderAnswer(a) {
  const box = $("answer-box");
  if (!a) { box.hidden = true; return; }
  $("answer-scope").textContent = a.scope;
  $("answer-source").textContent = a.source === "llm" ? "written by the LLM, checked against the evidence"
    : "written from the evidence, no model";
  const paragraphs = a.text.split(/\n\s*\n/).map((p) => el("p", {}, ...withCitations(p)));
  $("answer-text").replaceChildren(...paragraphs);
  $("answer-reason").textContent = a.reason ? `Why not the LLM's answer: ${a.reason}` : "";
  $("answer-reason").hidden = !a.reason;
  box.classList.toggle("clarify", Boolean(a.needs_clarification));
  box.hidden = false;
}

function withCitations(text) {
  const out = [];
  let at = 0;
  for (const m of text.matchAll(/\[(\d+)\]/g)) {
    if (m.index > at) out.push(text.slice(at, m.index));
    out.push(el("a", { class: "cite", href: `#card-${m[1]}`, text: `[${m[1]}]` }));
    at = m.index + m[0].length;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

// ---- markdown, safely -----------------------------------------------------------------------------------------
// A document's text as markdown (paragraphs, #-headings, - / 1. lists, **bold**, *italic*, `code`,
// [links](http…)), built from DOM nodes with textContent: HTML in a document is shown as text, never parsed.
function markdown(text) {
  const root = el("div", { class: "md" });
  let list = null;
  for (const block of text.split(/\n\s*\n/)) {
    for (const line of block.split("\n")) {
      const item = line.match(/^\s*(?:[-*+]|(\d+)[.)])\s+(.*)$/);
      const heading = line.match(/^(#{1,6})\s+(.*)$/);
      if (item) {
        const tag = item[1] ? "ol" : "ul";
        if (!list || list.tagName.toLowerCase() !== tag) { list = el(tag); root.append(list); }
        list.append(el("li", {}, ...inline(item[2])));
        continue;
      }
      list = null;
      if (heading) { root.append(el("h4", { class: "md-h" }, ...inline(heading[2]))); continue; }
      if (!line.trim()) continue;
      const last = root.lastElementChild;
      if (last && last.tagName === "P" && !last.dataset.closed) last.append(" ", ...inline(line));
      else root.append(el("p", {}, ...inline(line)));
    }
    const last = root.lastElementChild;
    if (last) last.dataset.closed = "1";
    list = null;
  }
  return root;
}

// a link target may hold one level of parentheses ("(javascript:alert(1))" is read whole, then refused)
const INLINE = /(\*\*[^*]+\*\*|`[^`]+`|\*[^*\s][^*]*\*|\[[^\]]+\]\((?:[^()\s]|\([^()\s]*\))+\))/g;
function inline(text) {
  const out = [];
  let at = 0;
  for (const m of text.matchAll(INLINE)) {
    if (m.index > at) out.push(text.slice(at, m.index));
    const t = m[0];
    if (t.startsWith("**")) out.push(el("strong", { text: t.slice(2, -2) }));
    else if (t.startsWith("`")) out.push(el("code", { text: t.slice(1, -1) }));
    else if (t.startsWith("*")) out.push(el("em", { text: t.slice(1, -1) }));
    else {
      const link = t.match(/^\[([^\]]+)\]\((.+)\)$/);
      const safe = /^https?:\/\//i.test(link[2]);  // no javascript:, data: or relative targets
      out.push(safe ? el("a", { href: link[2], rel: "noopener noreferrer nofollow", target: "_blank", text: link[1] })
        : link[1]);
    }
    at = m.index + t.length;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

// ---- timeline ---------------------------------------------------------------------------------------------
// A point question: "current on D" / "at D" over a window of at most two days, or "current" (now).
function isPoint(intent, windows) {
  if (!["current", "at"].includes(intent.relation)) return false;
  return windows.every((w) => parseIso(w.end) - parseIso(w.start) <= 2 * 86400000);
}

function renderTimeline(r) {
  const svg = $("timeline"), box = $("timeline-box");
  svg.replaceChildren();
  const windows = (r.intent.intervals || []).filter((w) => w.start && w.end);
  const point = isPoint(r.intent, windows);
  const spans = [];
  r.evidence.forEach((e, i) => (e.intervals || []).forEach((iv) => spans.push({ i, iv, e })));
  if (point) {  // "current on D": each card's version valid interval too (open ends drawn up to the axis end)
    r.evidence.forEach((e, i) => {
      if (e.valid_from || e.valid_until) spans.push({ i, iv: { start: e.valid_from, end: e.valid_until }, e, valid: true });
    });
  }
  const bounded = spans.filter((s) => s.iv.start && s.iv.end);
  if (!windows.length && !bounded.length) { box.hidden = true; return; }
  box.hidden = false;
  const times = [...windows, ...bounded.map((s) => s.iv)].flatMap((w) => [parseIso(w.start), parseIso(w.end)]);
  for (const s of spans) if (!s.valid || s.iv.start) times.push(parseIso(s.iv.start || s.iv.end));
  let lo = Math.min(...times.filter(Boolean)), hi = Math.max(...times.filter(Boolean));
  if (point) {  // a day's window: the axis holds every card's spans, with a little room either side
    const pad = Math.max((hi - lo) * 0.05, 86400000);
    lo -= pad; hi += pad;
  } else if (windows.length) {  // keep the window in view, and no more than a window's width of context either side
    const ws = Math.min(...windows.map((w) => parseIso(w.start))), we = Math.max(...windows.map((w) => parseIso(w.end)));
    lo = Math.max(lo, ws - (we - ws)); hi = Math.min(hi, we + (we - ws)); lo = Math.min(lo, ws); hi = Math.max(hi, we);
  }
  const W = 900, left = 40, right = 10, row = 14, top = 24, rows = r.evidence.length;
  const H = top + rows * row + 30;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const x = (t) => left + ((t - lo) / (hi - lo || 1)) * (W - left - right);
  const NS = "http://www.w3.org/2000/svg";
  const add = (tag, attrs, text) => {
    const n = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
    if (text) n.textContent = text;
    svg.append(n);
    return n;
  };
  for (const w of windows) {
    add("rect", { class: "window", x: x(parseIso(w.start)), y: top - 6, height: rows * row + 10,
      width: Math.max(2, x(parseIso(w.end)) - x(parseIso(w.start))) });
  }
  for (const s of r.signals.filter((s) => s.type === "gap")) {
    const a = Math.max(lo, parseIso(s.interval.start)), b = Math.min(hi, parseIso(s.interval.end));
    if (b > a) {
      add("rect", { class: "gap", x: x(a), y: top - 6, height: rows * row + 10, width: Math.max(2, x(b) - x(a)) })
        .append(Object.assign(document.createElementNS(NS, "title"), { textContent: `gap: ${humanInterval(s.interval)}` }));
    }
  }
  const conflicted = new Set(r.signals.filter((s) => s.type === "conflict").flatMap((s) => s.doc_ids));
  for (const s of spans) {
    if (!s.valid && !(s.iv.start && s.iv.end)) continue;
    const a = Math.max(lo, s.iv.start ? parseIso(s.iv.start) : lo), b = Math.min(hi, s.iv.end ? parseIso(s.iv.end) : hi);
    if (b <= a) continue;
    const cls = [conflicted.has(s.e.doc_id) ? "conflict" : "", s.e.superseded_by ? "superseded" : "",
      isInferred(s.iv) ? "inferred" : "", s.valid ? "valid" : ""].join(" ").trim();
    const title = Object.assign(document.createElementNS(NS, "title"), { textContent:
      `[${s.i + 1}] ${s.e.title || s.e.doc_id}: ${s.valid ? `valid ${humanInterval({ ...s.iv, granularity: "day" })}` : humanInterval(s.iv)}` });
    const y = top + s.i * row;
    if (x(b) - x(a) < 3 && !point) {  // a day on a long axis (a prior close, a year-to-date base): a faint dot, not a bar
      add("circle", { class: `point ${cls}`.trim(), cx: (x(a) + x(b)) / 2, cy: y + (row - 4) / 2, r: 2 }).append(title);
    } else {
      add("rect", { class: `bar ${cls}`.trim(), x: x(a), y: s.valid ? y + (row - 4) / 2 : y,
        height: s.valid ? (row - 4) / 2 : row - 4, width: Math.max(3, x(b) - x(a)) }).append(title);
    }
  }
  r.evidence.forEach((e, i) => {
    add("text", { class: "row-label", x: 4, y: top + i * row + row - 5 }, `[${i + 1}]`);
    if (conflicted.has(e.doc_id)) add("text", { class: "conflict-mark", x: W - right - 6, y: top + i * row + row - 5 }, "!");
  });
  for (const [t, g] of axisTicks(lo, hi)) {
    const at = x(t.getTime());
    const anchor = at < left + 30 ? "start" : at > W - right - 30 ? "end" : "middle";  // edge labels stay in view
    add("line", { class: "tick-mark", x1: at, x2: at, y1: H - 22, y2: H - 18 });
    add("text", { class: "tick", x: at, y: H - 6, "text-anchor": anchor }, humanInstant(t, g));
  }
}

// Axis ticks on period boundaries (1 Jan, the 1st of a month, midnight UTC) so each label names the
// instant under it: [[Date, granularity], …], about 9 at most, from the finest step that fits between lo and hi (ms).
const STEPS = [["day", 1], ["day", 2], ["day", 7], ["day", 14], ["month", 1], ["month", 2], ["month", 3],
  ["month", 6], ["year", 1], ["year", 2], ["year", 5], ["year", 10], ["year", 20], ["year", 50], ["year", 100],
  ["year", 250], ["year", 500], ["year", 1000]];
const UNIT_MS = { day: 86400000, month: 30.44 * 86400000, year: 365.25 * 86400000 };
function axisTicks(lo, hi) {
  const [g, n] = STEPS.find(([u, k]) => (hi - lo) / (UNIT_MS[u] * k) <= 9) || STEPS[STEPS.length - 1];
  const d = new Date(lo);
  let t = g === "year" ? Date.UTC(d.getUTCFullYear() - (d.getUTCFullYear() % n), 0, 1)
    : g === "month" ? Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - (d.getUTCMonth() % n), 1)
      : Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const out = [];
  while (t <= hi && out.length < 40) {
    if (t >= lo) out.push([new Date(t), g]);
    const c = new Date(t);
    const day = c.getUTCDate() + n;  // days: the 1st, 1st + n, … of each month (1, 8, 15, 22 for weeks)
    t = g === "year" ? Date.UTC(c.getUTCFullYear() + n, 0, 1)
      : g === "month" ? Date.UTC(c.getUTCFullYear(), c.getUTCMonth() + n, 1)
        : day + n - 1 > 29 && n > 1 ? Date.UTC(c.getUTCFullYear(), c.getUTCMonth() + 1, 1)
          : Date.UTC(c.getUTCFullYear(), c.getUTCMonth(), day);
  }
  return out;
}

// ---- then / now ---------------------------------------------------------------------------------------------
function renderThenNow(evidence) {
  const bySeries = new Map();
  for (const e of evidence) {
    const versioned = e.valid_from || e.valid_until || e.superseded_by;
    if (!versioned) continue;
    if (!bySeries.has(e.series_id)) bySeries.set(e.series_id, []);
    bySeries.get(e.series_id).push(e);
  }
  const pairs = $("thennow-pairs");
  pairs.replaceChildren();
  for (const [series, cards] of bySeries) {
    const docs = [...new Map(cards.map((c) => [c.doc_id, c])).values()];
    if (docs.length < 2) continue;
    docs.sort((a, b) => (a.valid_from || "").localeCompare(b.valid_from || ""));
    const then = docs[0], now = docs[docs.length - 1];
    const side = (label, c) => el("div", { class: "side" }, el("h3", { text: `${label}: ${c.title || c.doc_id}` }),
      el("p", { class: "meta", text: `valid ${validText(c)}` }), el("p", { text: snippet(c.text, 300) }));
    pairs.append(el("div", { class: "pair", "data-series": series }, side("Then", then), side("Now", now)));
  }
  $("thennow").hidden = !pairs.childElementCount;
}

// ---- cards --------------------------------------------------------------------------------------------------
function validText(e) {
  if (!e.valid_from && !e.valid_until) return "not versioned";
  return humanInterval({ start: e.valid_from, end: e.valid_until, granularity: "day" }, "day");
}

function snippet(text, n) { return text.length > n ? `${text.slice(0, n)}…` : text; }

function renderCards(evidence, intent) {
  const box = $("cards");
  box.replaceChildren();
  evidence.forEach((e, i) => {
    const unknown = timeUnknown(e);
    const answerFor = unknown ? el("span", { class: "unknown", text: "time unknown" })
      : el("span", {}, ...(e.intervals || []).slice(0, 4).flatMap((iv, j) => [
        j ? ", " : "", el("span", { class: isInferred(iv) ? "inferred" : "", title: isInferred(iv)
          ? "an inferred bound: an assumption, not written in the text" : "" },
        humanInterval(iv) + (isInferred(iv) ? " (inferred)" : ""))]),
      (e.intervals || []).length > 4 ? " …" : "");
    let status = "current";
    if (e.superseded_by) {
      status = `superseded by ${e.superseded_by}` + (e.valid_until ? ` on ${humanInstant(parseIso(e.valid_until))}` : "");
    }
    if (e.corrected_by) status += ` · corrected by ${e.corrected_by}`;
    const source = e.time_source === "published" ? "publication day (no date in the text)"
      : String(e.time_source).startsWith("inherited") ? `${e.time_source.replace(":", " from the ")} (assumed)`
        : e.time_source;
    const row = (k, v) => el("div", { class: "row" }, el("dt", { text: k }), el("dd", {}, v));
    box.append(el("article", { class: `card${e.superseded_by ? " superseded" : ""}${unknown ? " time-unknown" : ""}`,
      "data-doc": e.doc_id, id: `card-${i + 1}` },
      el("header", {}, el("span", { class: "num", text: `[${i + 1}]` }),
        el("strong", { text: e.title || e.doc_id }),
        el("span", { class: "published", text: `published ${humanInstant(parseIso(e.published_at))}` })),
      el("dl", {},
        row("Answer for", answerFor),
        row("Evidence", el("div", { class: "text" }, markdown(snippet(e.text, 500)))),
        row("Valid", validText(e)),
        row("Recorded", humanInstant(parseIso(e.recorded_at), "instant")),
        row("Status", el("span", { class: `status${e.superseded_by ? " old" : ""}`, text: status })),
        row("Time source", source),
        row("Score", `${e.score.toFixed(3)} (rank ${e.rank})`))));
  });
  $("cards-box").hidden = !evidence.length;
}

function renderTrace(t) {
  $("trace-box").hidden = false;
  const seconds = Object.entries(t.seconds || {}).map(([k, v]) => `${k} ${Math.round(v * 1000)} ms`).join(" · ");
  const rejected = (t.rejected_examples || []).map((r) => el("li", { text: `${r.chunk_id || ""} — ${r.why || r.reason || JSON.stringify(r)}` }));
  $("trace").replaceChildren(
    el("p", { text: `candidates after the time filter: ${t.candidates_after_filter} · anchors: ${t.anchors}` +
      (t.anchor_granularity ? ` (${t.anchor_granularity})` : "") }),
    el("p", { text: `timings: ${seconds}` }),
    el("p", { text: "similar but outside the time filter:" }), el("ul", {}, ...rejected));
}

// ---- wiring -------------------------------------------------------------------------------------------------
function body() {
  const b = { question: $("question").value, k: Number($("k").value) || 10 };
  if ($("now").value.trim()) b.now = $("now").value.trim();
  if ($("as_of").value.trim()) b.as_of = $("as_of").value.trim();
  return b;
}

$("ask").addEventListener("submit", (ev) => { ev.preventDefault(); run(body()); });
$("edit-window").addEventListener("click", (ev) => { ev.preventDefault(); $("window-edit").hidden = !$("window-edit").hidden; });
$("window-edit").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const s = $("w-start").value, e = $("w-end").value;
  const end = e ? new Date(Date.parse(`${e}T00:00:00Z`) + 86400000).toISOString() : null;
  run({ ...(last || body()), window: { start: s ? `${s}T00:00:00Z` : null, end, relation: $("w-relation").value,
    granularity: "day" } });
});
const params = new URLSearchParams(window.location.search);
if (params.get("q")) {
  $("question").value = params.get("q");
  if (params.get("now")) $("now").value = params.get("now");
  run(body());
}
