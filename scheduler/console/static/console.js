// jetjob console: the only script. Everything works without it except the
// live parts: a run's log that follows while the run is active, the job
// form's schedule preview, and confirmations before destructive actions.
"use strict";

// Forms with data-confirm ask first (delete, kill, disable).
document.addEventListener("submit", (ev) => {
  const msg = ev.target.getAttribute("data-confirm");
  if (msg && !window.confirm(msg)) {
    ev.preventDefault();
  }
});

// jobs: the job form's schedule preview. As the schedule type, expression
// or zone is typed, it asks GET /api/v1/schedule/preview (with the
// session cookie, debounced) and redraws #schedule-preview, which the
// server rendered on load; an invalid schedule shows the API's words.
(() => {
  const box = document.getElementById("schedule-preview");
  const form = document.getElementById("job-form");
  if (!box || !form) {
    return;
  }
  const field = (name) => document.getElementById("f-" + name);
  const two = (n) => String(n).padStart(2, "0");
  const inZone = (d, zone) => {
    try {
      const parts = {};
      new Intl.DateTimeFormat("en-US", {
        timeZone: zone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit",
        hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short",
      }).formatToParts(d).forEach((p) => { parts[p.type] = p.value; });
      return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second} ${parts.timeZoneName}`;
    } catch (e) {
      return d.toISOString();
    }
  };
  const utc = (d) => `${d.getUTCFullYear()}-${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())} ` +
    `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`;
  const el = (tag, attrs, text) => {
    const e = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => e.setAttribute(k, v));
    if (text !== undefined) {
      e.textContent = text;
    }
    return e;
  };
  const show = (nodes) => box.replaceChildren(...nodes);
  let timer = 0;
  let inflight = null;
  const refresh = async () => {
    const zone = field("timezone").value.trim() || "UTC";
    const q = new URLSearchParams({
      type: field("schedule_type").value, expr: field("schedule_expr").value, timezone: zone, n: "10",
    });
    if (inflight) {
      inflight.abort();
    }
    inflight = new AbortController();
    try {
      const resp = await fetch("/api/v1/schedule/preview?" + q, { credentials: "same-origin", signal: inflight.signal });
      const doc = await resp.json();
      if (!resp.ok) {
        show([el("p", { class: "field-error", id: "preview-error" }, doc.error || resp.statusText)]);
        return;
      }
      const times = doc.times || [];
      if (times.length === 0) {
        show([el("p", { class: "muted", id: "preview-none" }, "No upcoming fire.")]);
        return;
      }
      const table = el("table", { id: "preview-table" });
      const head = el("tr");
      head.append(el("th", {}, "In " + (doc.timezone || zone)), el("th", {}, "UTC"));
      table.append(el("thead"), el("tbody"));
      table.tHead.append(head);
      times.forEach((t) => {
        const d = new Date(t);
        const row = el("tr");
        row.append(el("td", {}, inZone(d, doc.timezone || zone)), el("td", {}, utc(d)));
        table.tBodies[0].append(row);
      });
      const wrap = el("div", { class: "table-wrap" });
      wrap.append(table);
      show([wrap]);
    } catch (e) {
      if (e.name !== "AbortError") {
        show([el("p", { class: "field-error", id: "preview-error" }, "Preview unavailable: " + e.message)]);
      }
    }
  };
  ["schedule_type", "schedule_expr", "timezone"].forEach((name) => {
    const f = field(name);
    if (f) {
      const later = () => { clearTimeout(timer); timer = setTimeout(refresh, 350); };
      f.addEventListener("input", later);
      f.addEventListener("change", later);
    }
  });
})();
