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
    state.textContent = "ended";
  })();
})();
