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
