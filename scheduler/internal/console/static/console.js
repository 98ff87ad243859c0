// jetjob console: the only script. Everything works without it except the
// live parts: a run's log that follows while the run is active (and its
// running time that counts on), a workflow run's summary read again while
// it runs, the job form's schedule preview and handler suggestions, the
// select-all box of a list's bulk form, and confirmations before
// destructive actions.
"use strict";

// Forms with data-confirm ask first (delete, kill, disable).
document.addEventListener("submit", (ev) => {
  const msg = ev.target.getAttribute("data-confirm");
  if (msg && !window.confirm(msg)) {
    ev.preventDefault();
  }
});

// A select-all box (data-select-all="<form id>") ticks or clears every
// row box of that form on the page; it shows mixed when some are ticked.
document.addEventListener("change", (ev) => {
  const t = ev.target;
  if (!(t instanceof HTMLInputElement) || t.type !== "checkbox") {
    return;
  }
  if (t.dataset.selectAll) {
    for (const box of document.querySelectorAll(`input[type=checkbox][name=id][form="${t.dataset.selectAll}"]`)) {
      box.checked = t.checked;
    }
    return;
  }
  const form = t.getAttribute("form");
  const all = form && document.querySelector(`input[data-select-all="${form}"]`);
  if (all) {
    const boxes = [...document.querySelectorAll(`input[type=checkbox][name=id][form="${form}"]`)];
    const n = boxes.filter((b) => b.checked).length;
    all.checked = n > 0 && n === boxes.length;
    all.indeterminate = n > 0 && n < boxes.length;
  }
});

// The job form's handler field suggests the handlers of the chosen
// group's live workers: one <datalist data-group> per group, rendered
// by the server; a change of group points the field at that group's.
(() => {
  const group = document.getElementById("f-group");
  const handler = document.getElementById("f-handler");
  if (!group || !handler) {
    return;
  }
  group.addEventListener("change", () => {
    const list = [...document.querySelectorAll("datalist[data-group]")].find((d) => d.dataset.group === group.value);
    if (list) {
      handler.setAttribute("list", list.id);
    } else {
      handler.removeAttribute("list");
    }
  });
})();

// runs
// A run page's log follows live while the run is active: its <pre
// id="run-log"> carries data-follow, the API's NDJSON stream from where
// the page's lines stopped. The stream ends when the run has ended; then
// the page's summary (status, timeline, buttons) is read again from the
// server and swapped in, so the status a user sees is the stored one. A
// stream broken early (network, restart) is resumed from the last line
// while the run is still active, backing off up to 30 s.
(() => {
  const log = document.getElementById("run-log");
  if (!log || !log.dataset.follow) {
    return;
  }
  const state = document.getElementById("log-state");
  const stream = new URL(log.dataset.follow, window.location.href);
  const summaryURL = log.dataset.summary;

  // Lines are written as the server renders them: "2026-11-22 10:00:00.123 INFO msg".
  const append = (line) => {
    const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 8;
    const span = document.createElement("span");
    const level = String(line.level || "info");
    span.className = "log-line lv-" + level.toLowerCase();
    span.dataset.cursor = String(line.cursor);
    const at = new Date(line.at).toISOString().replace("T", " ").replace("Z", "");
    span.textContent = at + " " + level.toUpperCase() + " " + line.msg + "\n";
    log.appendChild(span);
    stream.searchParams.set("from", String(line.cursor + 1));
    const empty = document.getElementById("log-empty");
    if (empty) {
      empty.remove();
    }
    if (atBottom) {
      log.scrollTop = log.scrollHeight;
    }
  };

  const follow = async () => {
    const resp = await fetch(stream, { credentials: "same-origin", headers: { Accept: "application/x-ndjson" } });
    if (!resp.ok || !resp.body) {
      throw new Error("log stream answered " + resp.status);
    }
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        return;
      }
      buf += decoder.decode(value, { stream: true });
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const text = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (text) {
          append(JSON.parse(text));
        }
      }
    }
  };

  // refresh swaps in the server's summary and reports whether the run is
  // still active (false when the page cannot be read, e.g. signed out).
  const refresh = async () => {
    const resp = await fetch(summaryURL, { credentials: "same-origin" });
    const doc = new DOMParser().parseFromString(await resp.text(), "text/html");
    const fresh = doc.getElementById("run-summary");
    const current = document.getElementById("run-summary");
    if (!resp.ok || !fresh || !current) {
      return false;
    }
    current.replaceWith(fresh);
    return fresh.dataset.active === "true";
  };

  const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

  (async () => {
    for (let delay = 1000; ; delay = Math.min(delay * 2, 30000)) {
      try {
        await follow();
      } catch (err) {
        console.warn("jetjob: following the run log:", err);
      }
      let stillActive = false;
      try {
        stillActive = await refresh();
      } catch (err) {
        stillActive = true; // the server is unreachable: try again
      }
      if (!stillActive) {
        break;
      }
      await sleep(delay);
    }
    log.removeAttribute("data-follow");
    state.textContent = state.dataset.ended || "ended";
    const empty = document.getElementById("log-empty");
    if (empty) {
      empty.textContent = empty.dataset.ended || "No log lines."; // none came: none will
    }
  })();
})();

// A running run's page counts its time since it started (#run-elapsed,
// data-since), in the form the server renders it; the count stops when the
// summary swapped in at the run's end no longer has it.
(() => {
  const two = (n) => String(n).padStart(2, "0");
  const text = (s) => {
    if (s >= 3600) {
      return `${Math.floor(s / 3600)}h ${two(Math.floor(s / 60) % 60)}m ${two(s % 60)}s`;
    }
    return s >= 60 ? `${Math.floor(s / 60)}m ${two(s % 60)}s` : `${s}s`;
  };
  if (!document.getElementById("run-elapsed")) {
    return;
  }
  const timer = setInterval(() => {
    const el = document.getElementById("run-elapsed");
    if (!el) {
      clearInterval(timer);
      return;
    }
    const since = Date.parse(el.dataset.since);
    el.textContent = text(Math.max(0, Math.floor((Date.now() - since) / 1000)));
  }, 1000);
})();

// workflows: a workflow run's page reads its summary again while the run
// can change (there is no stream of node ends to follow, as a run's log
// is followed): every second the server's #wfrun-summary is fetched and
// swapped in, so node colours, statuses and buttons are the stored ones.
// It stops when the run has ended, and waits while the user is typing in
// one of the summary's forms (a node's output) so nothing typed is lost.
(() => {
  const summary = document.getElementById("wfrun-summary");
  if (!summary || summary.dataset.active !== "true") {
    return;
  }
  const url = summary.dataset.refresh;
  const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
  const busy = () => {
    const cur = document.getElementById("wfrun-summary");
    const el = document.activeElement;
    return cur && el && cur.contains(el) && (el.tagName === "INPUT" || el.tagName === "TEXTAREA") && el.value !== "";
  };
  (async () => {
    for (let delay = 1000; ; ) {
      await sleep(delay);
      if (busy()) {
        continue;
      }
      try {
        const resp = await fetch(url, { credentials: "same-origin" });
        const doc = new DOMParser().parseFromString(await resp.text(), "text/html");
        const fresh = doc.getElementById("wfrun-summary");
        const current = document.getElementById("wfrun-summary");
        if ([401, 403, 404].includes(resp.status) || !current) {
          return; // signed out, or the run is gone: the page stays as it is
        }
        if (!resp.ok || !fresh) {
          throw new Error("workflow run page answered " + resp.status);
        }
        current.replaceWith(fresh);
        delay = 1000;
        if (fresh.dataset.active !== "true") {
          return;
        }
      } catch (err) {
        console.warn("jetjob: reading the workflow run again:", err);
        delay = Math.min(delay * 2, 30000); // the server is unreachable or failed: try again later
      }
    }
  })();
})();

// jobs: the job form's schedule preview. As the schedule type, expression
// or zone (or a line of more schedules) is typed, it asks GET /api/v1/schedule/preview (with the
// session cookie, debounced) and redraws #schedule-preview, which the
// server rendered on load; an invalid schedule shows the API's words.
(() => {
  const box = document.getElementById("schedule-preview");
  const form = document.getElementById("job-form");
  if (!box || !form) {
    return;
  }
  const field = (name) => document.getElementById("f-" + name);
  // say is a message in the page's language: the server puts the
  // catalogue's text in the box's data-t-* attributes (English if absent),
  // its one %s or %d filled with arg.
  const say = (key, english, arg) => {
    const text = box.dataset["t" + key] || english;
    return arg === undefined ? text : text.replace(/%[sd]/, String(arg));
  };
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
    const more = field("more_schedules");
    if (more) {
      more.value.split("\n").map((l) => l.trim()).filter((l) => l !== "").forEach((l) => q.append("also", l));
    }
    // The calendars: their excluded fires come back apart, shown struck
    // through among the others.
    ["exclude", "include"].forEach((k) => {
      const f = field(k + "_calendars");
      const names = f ? f.value.split(",").map((n) => n.trim()).filter((n) => n !== "") : [];
      if (names.length > 0) {
        q.set(k, names.join(","));
      }
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
        show([el("p", { class: "muted", id: "preview-none" }, say("None", "No upcoming fire."))]);
        return;
      }
      const table = el("table", { id: "preview-table" });
      const head = el("tr");
      const tz = doc.timezone || zone;
      const inUTC = tz === "UTC"; // one column, not the same one twice
      if (!inUTC) {
        head.append(el("th", {}, say("In", "In %s", tz)));
      }
      head.append(el("th", {}, "UTC"));
      table.append(el("thead"), el("tbody"));
      table.tHead.append(head);
      const excluded = doc.excluded || [];
      const rows = times.map((t) => ({ at: new Date(t), calendar: "" }))
        .concat(excluded.map((x) => ({ at: new Date(x.at), calendar: x.calendar })))
        .sort((a, b) => a.at - b.at);
      const struck = (text) => { const s = el("s"); s.textContent = text; return s; };
      rows.forEach((r) => {
        const row = el("tr");
        if (r.calendar) {
          row.setAttribute("class", "excluded");
          row.setAttribute("data-calendar", r.calendar);
        }
        if (!inUTC) {
          const td = el("td");
          td.append(r.calendar ? struck(inZone(r.at, tz)) : inZone(r.at, tz));
          row.append(td);
        }
        const td = el("td");
        if (r.calendar) {
          td.append(struck(utc(r.at)), " ", el("span", { class: "muted" }, say("ExcludedBy", "excluded by calendar %s", r.calendar)));
        } else {
          td.append(utc(r.at));
        }
        row.append(td);
        table.tBodies[0].append(row);
      });
      const wrap = el("div", { class: "table-wrap" });
      wrap.append(table);
      const nodes = [wrap];
      if (excluded.length > 0) {
        nodes.push(el("p", { class: "muted small", id: "preview-excluded" },
          say("Struck", "Struck through: the fires a calendar excludes (%d), recorded as SKIPPED runs.", excluded.length)));
      }
      show(nodes);
    } catch (e) {
      if (e.name !== "AbortError") {
        show([el("p", { class: "field-error", id: "preview-error" }, say("Unavailable", "Preview unavailable: %s", e.message))]);
      }
    }
  };
  ["schedule_type", "schedule_expr", "timezone", "more_schedules", "exclude_calendars", "include_calendars"].forEach((name) => {
    const f = field(name);
    if (f) {
      const later = () => { clearTimeout(timer); timer = setTimeout(refresh, 350); };
      f.addEventListener("input", later);
      f.addEventListener("change", later);
    }
  });
})();

// script editor
// The gutter of line numbers follows the textarea: it scrolls with it and
// counts the lines as they are typed (without this script it shows the
// numbers of the page as served, with room for twenty more).
(() => {
  const src = document.getElementById("script-source");
  const gutter = document.getElementById("script-gutter");
  if (!src || !gutter) {
    return;
  }
  const renumber = () => {
    const n = src.value.split("\n").length;
    let text = "";
    for (let i = 1; i <= n; i++) {
      text += i + "\n";
    }
    gutter.textContent = text;
    gutter.scrollTop = src.scrollTop;
  };
  src.addEventListener("input", renumber);
  src.addEventListener("scroll", () => { gutter.scrollTop = src.scrollTop; });
  renumber();
})();

// live pages: a page an operator keeps open (the dashboard, runs, a job,
// workers, backfills, the cluster) carries <main data-live="N"> and reads
// itself again every N seconds, swapping the new <main> in. It does not
// while the user has paused it (#live-toggle, remembered for the browser),
// while a form on the page holds something typed or chosen (nothing typed
// is lost), or while the tab is hidden (no load from a forgotten tab).
// Open <details> stay open across a swap.
(() => {
  const main = document.querySelector("main[data-live]");
  const toggle = document.getElementById("live-toggle");
  if (!main || !toggle) {
    return;
  }
  const every = Math.max(Number(main.dataset.live) || 10, 2) * 1000;
  const key = "jetjob-live";
  const paused = () => localStorage.getItem(key) === "paused";
  const show = () => {
    toggle.textContent = paused() ? (toggle.dataset.labelPaused || "Paused") : (toggle.dataset.labelLive || "Live");
    toggle.setAttribute("aria-pressed", paused() ? "false" : "true");
    toggle.title = paused()
      ? toggle.dataset.titlePaused || "Click to read this page again every " + every / 1000 + " s"
      : toggle.dataset.titleLive || "Reads itself again every " + every / 1000 + " s; click to pause";
  };
  toggle.hidden = false;
  show();
  toggle.addEventListener("click", () => {
    localStorage.setItem(key, paused() ? "live" : "paused");
    show();
  });
  const dirty = (root) => [...root.querySelectorAll("input, textarea, select")].some((el) => {
    if (el.type === "hidden" || el.type === "submit") {
      return false;
    }
    if (el.type === "checkbox" || el.type === "radio") {
      return el.checked !== el.defaultChecked;
    }
    if (el.tagName === "SELECT") {
      // Without a selected attribute a single select shows its first option.
      const opts = [...el.options];
      if (el.multiple) {
        return opts.some((o) => o.selected !== o.defaultSelected);
      }
      return el.selectedIndex !== Math.max(opts.findIndex((o) => o.defaultSelected), 0);
    }
    return el.value !== el.defaultValue;
  });
  const tick = async () => {
    const cur = document.querySelector("main[data-live]");
    if (!cur || paused() || document.hidden || dirty(cur)) {
      return;
    }
    try {
      const resp = await fetch(location.href, { credentials: "same-origin" });
      if (!resp.ok) {
        return; // signed out or gone: the page stays as it is until the user moves
      }
      const fresh = new DOMParser().parseFromString(await resp.text(), "text/html").querySelector("main");
      if (!fresh || paused() || dirty(cur)) {
        return;
      }
      const open = [...cur.querySelectorAll("details[open][id]")].map((d) => d.id);
      fresh.querySelectorAll(".flash").forEach((f) => f.remove()); // a notice is said once
      cur.replaceChildren(...fresh.childNodes);
      open.forEach((id) => document.getElementById(id)?.setAttribute("open", ""));
    } catch (err) {
      console.warn("jetjob: reading the page again:", err);
    }
  };
  setInterval(tick, every);
})();
