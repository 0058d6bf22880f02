// Garden Bloom Memory review console: keeps a page's live part (#live:
// the inbox, a History tab, a proposal) current without a reload. The page
// says where to ask for the version of what it shows (data-live) and which
// version it shows (data-version); when the answer differs, the page is
// fetched again and its #live part swapped in. Without this script the
// pages still work: they are plain links and forms.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live || !live.dataset.live || !window.fetch || !window.DOMParser) {
    return;
  }
  var every = parseInt(document.body.dataset.poll, 10) || 2000;
  var busy = false;

  function schedule() {
    window.setTimeout(tick, every);
  }

  function refresh() {
    return fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) {
          return;
        }
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("live");
        if (!fresh) {
          return;
        }
        live.replaceWith(document.adoptNode(fresh));
        live = fresh;
      });
  }

  function tick() {
    if (busy || document.hidden) {
      schedule();
      return;
    }
    busy = true;
    fetch(live.dataset.live, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (answer) {
        if (answer && answer.version && answer.version !== live.dataset.version) {
          return refresh();
        }
      })
      .catch(function () { /* the server is away: ask again later */ })
      .then(function () {
        busy = false;
        schedule();
      });
  }

  schedule();
}());
