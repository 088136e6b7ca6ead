// swiss-runner dashboard: live updates by Server-Sent Events, clocks, score graphs and
// stepping through finished games. Plain JavaScript, no build step, no library. Every
// value from the event is set with textContent or as an SVG attribute, never as HTML.
// Every URL is relative, so the dashboard works under a reverse proxy's path prefix.
(function () {
  "use strict";

  var live = null;        // the latest live document
  var clockOffset = 0;    // server time - browser time (ms)
  var refetching = false;
  var refetchAgain = false;
  var refetchRetry = null;  // timer: a failed fetch of the page's content is tried again
  var stepAt = null;        // {path, ply}: where the reader stepped to in a finished game

  function $(sel, root) { return (root || document).querySelector(sel); }
  function $all(sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); }
  function setText(el, text) { if (el && el.textContent !== text) el.textContent = text; }

  // ------------------------------------------------------------------ formatting

  function num(v) { return typeof v === "number" && isFinite(v); }  // what a record may hold instead
  function fmtClock(ms) {
    if (!num(ms)) return "-";
    if (ms < 0) ms = 0;
    var tenths = Math.floor(ms / 100);
    var s = Math.floor(tenths / 10), t = tenths % 10;
    var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    var mm = h ? String(m).padStart(2, "0") : String(m);
    var out = (h ? h + ":" : "") + mm + ":" + String(sec).padStart(2, "0");
    return (h || m >= 10) ? out : out + "." + t;
  }
  function fmtScore(cp, mate) {
    if (num(mate)) return (mate > 0 ? "+M" : "-M") + Math.abs(mate);
    if (!num(cp)) return "";
    return (cp > 0 ? "+" : cp < 0 ? "-" : "") + (Math.abs(cp) / 100).toFixed(2);
  }
  function fmtCount(n) {
    if (!num(n)) return "";
    if (n >= 1e9) return (n / 1e9).toFixed(1) + "G";
    if (n >= 1e6) return (n / 1e6).toFixed(1) + "M";
    if (n >= 1e4) return Math.round(n / 1e3) + "k";
    return String(n);
  }
  function fmtSeconds(ms) { return num(ms) ? (ms / 1000).toFixed(1) + "s" : ""; }
  function fmtWhen(iso) { return iso ? iso.replace("T", " ").slice(0, 19) + " UTC" : "?"; }
  function fmtDuration(s) {
    if (s === null || s === undefined) return "";
    s = Math.round(s);
    var d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
    if (d) return d + "d " + h + "h " + String(m).padStart(2, "0") + "m";
    if (h) return h + "h " + String(m).padStart(2, "0") + "m";
    return m ? m + "m " + String(s % 60).padStart(2, "0") + "s" : (s % 60) + "s";
  }
  function boardUrl(fen, last) {
    var q = "fen=" + encodeURIComponent(fen || "");
    if (last) q += "&last=" + encodeURIComponent(last);
    return "board.svg?" + q;
  }

  // ------------------------------------------------------------------ score graph

  var SVGNS = "http://www.w3.org/2000/svg";
  function svgEl(name, attrs) {
    var el = document.createElementNS(SVGNS, name);
    for (var k in attrs) el.setAttribute(k, String(attrs[k]));
    return el;
  }
  function clampScore(cp, mate, range) {
    if (mate !== null && mate !== undefined) return mate > 0 ? range : -range;
    if (cp === null || cp === undefined) return null;
    return Math.max(-range, Math.min(range, cp));
  }
  // points: [[ply, cp, mate, "w"|"b" (who moved)]] (scores from White's view); maxPly: width; marker: ply to mark or null
  function drawGraph(svg, points, maxPly, marker) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var W = 400, H = 120, mid = H / 2;
    maxPly = Math.max(maxPly || 0, 20);
    // the vertical range follows the scores: +-1 pawn at least, +-5 pawns at most
    var range = 100;
    points.forEach(function (p) {
      if (p[2] !== null && p[2] !== undefined) range = 500;
      else if (p[1] !== null && p[1] !== undefined) range = Math.max(range, Math.min(500, Math.abs(p[1]) * 1.15));
    });
    svg.appendChild(svgEl("rect", { x: 0, y: 0, width: W, height: H, "class": "g-bg" }));
    var step = range > 300 ? 200 : range > 150 ? 100 : 50;
    for (var v = step; v < range; v += step) {
      [v, -v].forEach(function (g) {
        var y = mid - g / range * mid;
        svg.appendChild(svgEl("line", { x1: 0, x2: W, y1: y, y2: y, "class": "g-grid" }));
      });
    }
    svg.appendChild(svgEl("line", { x1: 0, x2: W, y1: mid, y2: mid, "class": "g-axis" }));
    var white = [], black = [];
    points.forEach(function (p) {
      var v = clampScore(p[1], p[2], range);
      if (v === null) return;
      var xy = (p[0] / maxPly * W).toFixed(1) + "," + (mid - v / range * mid).toFixed(1);
      (p[3] === "b" ? black : white).push(xy);
    });
    [[white, "g-white"], [black, "g-black"]].forEach(function (line) {
      if (!line[0].length) return;
      svg.appendChild(svgEl("polyline", { points: line[0].join(" "), "class": line[1] }));
      var last = line[0][line[0].length - 1].split(",");  // the latest score as a dot
      svg.appendChild(svgEl("ellipse", { cx: last[0], cy: last[1], rx: 3, ry: 4, "class": line[1] + "-dot" }));
    });
    if (marker !== null && marker !== undefined) {
      var x = (marker / maxPly * W).toFixed(1);
      svg.appendChild(svgEl("line", { x1: x, x2: x, y1: 0, y2: H, "class": "g-marker" }));
    }
  }

  // ------------------------------------------------------------------ live boards

  function renderMoves(ol, g) {
    var count = g.san.length;
    if (ol.dataset.count === String(count) && ol.dataset.game === String(g.game_id)) return;
    ol.dataset.count = String(count);
    ol.dataset.game = String(g.game_id);
    while (ol.firstChild) ol.removeChild(ol.firstChild);
    var number = g.first_move_number || 1, whiteToMove = g.white_first !== false, li = null;
    for (var i = 0; i < count; i++) {
      if (whiteToMove || li === null) {
        li = document.createElement("li");
        var mn = document.createElement("span");
        mn.className = "mn";
        mn.textContent = number + (whiteToMove ? "." : "…");
        li.appendChild(mn);
        ol.appendChild(li);
      }
      var mv = document.createElement("span");
      mv.className = "mv" + (i < (g.book_plies || 0) ? " book" : "") + (i === count - 1 ? " current" : "");
      mv.textContent = g.san[i];
      li.appendChild(mv);
      if (!whiteToMove) { number += 1; li = null; }
      whiteToMove = !whiteToMove;
    }
    ol.scrollTop = ol.scrollHeight;
  }

  function renderSearch(root, side, s, pvSan) {
    var panel = $('[data-search="' + side + '"]', root);
    if (!panel) return;
    s = s || {};
    setText($('[data-s="score"]', panel), fmtScore(s.score_cp, s.mate));
    var stats = [];
    if (num(s.depth) && s.depth) stats.push("depth " + s.depth + (num(s.seldepth) && s.seldepth ? "/" + s.seldepth : ""));
    if (num(s.nodes) && s.nodes) stats.push(fmtCount(s.nodes) + " nodes");
    if (num(s.nps) && s.nps) stats.push(fmtCount(s.nps) + " nps");
    if (num(s.time_ms)) stats.push(fmtSeconds(s.time_ms));
    if (num(s.tbhits) && s.tbhits) stats.push(fmtCount(s.tbhits) + " TB hits");
    setText($('[data-s="stats"]', panel), stats.join(" · "));
    setText($('[data-pv="' + side + '"]', panel), pvSan || (Array.isArray(s.pv) ? s.pv.join(" ") : ""));
  }

  function renderLiveGame(root, g, rules) {
    setText($('[data-f="ply"]', root), g.ply ? "ply " + g.ply + (g.san.length ? ": " + g.san[g.san.length - 1] : "") : "starting");
    var img = $('[data-f="board"]', root);
    var url = boardUrl(g.fen, g.lastmove);
    if (img && img.getAttribute("src") !== url) img.setAttribute("src", url);
    renderSearch(root, "white", g.last && g.last.white, g.pv_san && g.pv_san.white);
    renderSearch(root, "black", g.last && g.last.black, g.pv_san && g.pv_san.black);
    var parts = [];
    if (rules && rules.draw_plies) parts.push("TCEC draw rule " + (g.draw_plies || 0) + "/" + rules.draw_plies);
    if (rules && rules.win_plies) parts.push("win rule " + (g.win_plies || 0) + "/" + rules.win_plies);
    parts.push("50-move rule " + (g.halfmove_clock || 0) + "/100");
    setText($('[data-f="rules"]', root), parts.join(" · "));
    var graph = $('[data-f="graph"]', root);
    if (graph) drawGraph(graph, g.scores || [], g.ply + 10, null);
    var ol = $('[data-f="moves"]', root);
    if (ol) renderMoves(ol, g);
    root.dataset.turn = (g.clocks && g.clocks.turn) || "";
  }

  function renderLive() {
    if (!live) return;
    var byId = {};
    (live.games || []).forEach(function (g) { byId[g.game_id] = g; });
    $all("[data-live-game]").forEach(function (root) {
      var g = byId[root.getAttribute("data-live-game")];
      if (g) renderLiveGame(root, g, live.rules);
      root.classList.toggle("stale", !g);
    });
    tickClocks();
  }

  function tickClocks() {
    if (!live) return;
    var running = live.runner && live.runner.running;
    var byId = {};
    (live.games || []).forEach(function (g) { byId[g.game_id] = g; });
    $all("[data-live-game]").forEach(function (root) {
      var g = byId[root.getAttribute("data-live-game")];
      if (!g || !g.clocks) return;
      ["white", "black"].forEach(function (side) {
        var el = $('[data-clock="' + side + '"]', root);
        if (!el) return;
        var ms = g.clocks[side + "_ms"];
        var ticking = running && g.clocks.turn === side && g.clocks.at_ms;
        if (ticking && ms !== null && ms !== undefined) ms -= (Date.now() + clockOffset) - g.clocks.at_ms;
        setText(el, fmtClock(ms));
        el.classList.toggle("ticking", !!ticking);
        el.classList.toggle("low", ms !== null && ms !== undefined && ms < 10000);
      });
    });
  }

  // ------------------------------------------------------------------ header, page refresh

  function renderHeader() {
    if (!live) return;
    var r = $("#runner-state"), p = $("#progress-text");
    if (live.event) { setText($("#event-name"), live.event); $("#event-name").title = live.event; }
    if (live.site) setText($("#event-site"), live.site);
    if (live.error) { setText(r, "state unreadable"); r.className = "runner warn"; return; }
    if (!live.runner) { setText(r, "no event yet"); r.className = "runner"; setText(p, ""); return; }
    var state = live.runner.running === true ? "running" : live.runner.running === false ? "not running" : "runner unknown";
    setText(r, state + (live.runner.since ? " since " + fmtWhen(live.runner.since) : ""));
    r.className = "runner " + (live.runner.running ? "ok" : "warn");
    var pr = live.progress;
    if (pr) {
      var text = "games " + pr.finished + "/" + pr.total;
      if (pr.current_round) text += " · round " + pr.current_round + "/" + pr.rounds_total;
      if (pr.complete) text += " · complete";
      else if (pr.halted) text += " · " + pr.halted + (pr.eta_s !== null && pr.eta_s !== undefined ? ": " + fmtDuration(pr.eta_s) + " of play left" : "");
      else if (pr.eta_s !== null && pr.eta_s !== undefined) text += " · ETA " + fmtDuration(pr.eta_s);
      setText(p, text);
    }
  }

  // The parts of a page that change when a game starts or ends are fetched again whole
  // (the same URL, header X-Fragment: 1) and swapped in; moves only touch the live boards.
  function refetch() {
    if (refetching) { refetchAgain = true; return; }
    refetching = true;
    if (refetchRetry !== null) { clearTimeout(refetchRetry); refetchRetry = null; }
    var main = $("#main");
    fetch(location.pathname + location.search, { headers: { "X-Fragment": "1" }, credentials: "same-origin" })
      .then(function (resp) { return resp.text(); })
      .then(function (html) {
        var keepScroll = window.scrollY;
        // what the reader opened stays open
        var open = $all("details[id]", main).filter(function (d) { return d.open; }).map(function (d) { return d.id; });
        var tpl = document.createElement("template");
        tpl.innerHTML = html;
        // only our own server-rendered, escaped fragment (whatever its status: a game that
        // is not there or cannot be read says so), never a proxy's error or login page
        var marker = tpl.content.querySelector("#fragment-digest");
        if (!marker) throw new Error("not the dashboard's page");
        main.textContent = "";
        main.appendChild(tpl.content);
        main.dataset.digest = marker.dataset.digest;
        open.forEach(function (id) { var d = document.getElementById(id); if (d) d.open = true; });
        window.scrollTo(0, keepScroll);
        initPage();
        renderLive();
      })
      .catch(function () {
        // tried again with the next message, or in a few seconds if none comes (an event
        // that has ended sends none)
        main.dataset.digest = "";
        refetchRetry = setTimeout(function () { refetchRetry = null; refetch(); }, 3000);
      })
      .then(function () {
        refetching = false;
        if (refetchAgain) { refetchAgain = false; refetch(); }
      });
  }

  function apply(doc) {
    if (!doc || typeof doc !== "object") return;
    live = doc;
    renderHeader();
    var main = $("#main");
    // the TD's form is never swapped under the hands of the one filling it in
    if (main && doc.digest && main.dataset.digest !== doc.digest &&
        document.body.dataset.page !== "admin") refetch();
    else renderLive();
  }

  var retryMs = 1000;
  function connect() {
    if (!window.EventSource) return;
    var conn = $("#conn-state");
    var es = new EventSource("events");
    es.onmessage = function (e) {
      var msg;
      try { msg = JSON.parse(e.data); } catch (err) { return; }
      if (!msg || typeof msg !== "object") return;
      retryMs = 1000;
      if (typeof msg.now_ms === "number") clockOffset = msg.now_ms - Date.now();
      if (conn) conn.hidden = true;
      document.body.classList.remove("disconnected");
      apply(msg.live);
    };
    es.onerror = function () {
      if (conn) conn.hidden = false;
      document.body.classList.add("disconnected");
      // The browser reconnects by itself after a network error, but gives up for good
      // when an answer is not the stream (a proxy's 502 while the dashboard restarts, a
      // 503): then a new connection is opened here, less and less often.
      if (es.readyState === EventSource.CLOSED) {
        es.close();
        setTimeout(connect, retryMs);
        retryMs = Math.min(retryMs * 2, 30000);
      }
    };
  }

  // ------------------------------------------------------------------ finished games

  // the current move into view within its move list, never by scrolling the page (which
  // scrollIntoView does: on a phone the page opened scrolled down to the list)
  function scrollIntoList(el) {
    var list = el.closest("ol");
    if (!list) return;
    var r = el.getBoundingClientRect(), box = list.getBoundingClientRect();
    if (r.top < box.top) list.scrollTop -= box.top - r.top;
    else if (r.bottom > box.bottom) list.scrollTop += r.bottom - box.bottom;
  }

  function initStepper() {
    var view = $("#game-view"), dataEl = $("#game-data");
    if (!view || !dataEl || view.dataset.ready) return;
    view.dataset.ready = "1";
    var data = JSON.parse(dataEl.textContent);
    var plies = data.plies, board = $("#step-board"), label = $("#step-label");
    var info = $("#step-info"), graph = $("#step-graph");
    var links = $all("#step-moves [data-ply]");
    var scores = plies.filter(function (p) { return !p.book; }).map(function (p) { return [p.ply, p.score_cp, p.mate, p.white ? "w" : "b"]; });
    var current = plies.length;
    var path = location.pathname;

    function clockOf(side, upto) {
      for (var i = upto - 1; i >= 0; i--) {
        if (plies[i].white === (side === "white") && plies[i].clock_ms !== null) return plies[i].clock_ms;
      }
      return null;
    }
    function show(n) {
      current = Math.max(0, Math.min(plies.length, n));
      stepAt = { path: path, ply: current };
      var p = current ? plies[current - 1] : null;
      board.setAttribute("src", boardUrl(p ? p.fen : data.start_fen, p ? p.uci : null));
      setText(label, current ? (p.move_number + (p.white ? ". " : "… ") + p.san) : "start");
      links.forEach(function (a) { a.classList.toggle("current", Number(a.dataset.ply) === current); });
      var parts = [];
      if (p) {
        if (p.book) parts.push("book move");
        var sc = fmtScore(p.score_cp, p.mate);
        if (sc) parts.push("score " + sc + " (White's view)");
        if (p.depth) parts.push("depth " + p.depth);
        if (p.nodes) parts.push(fmtCount(p.nodes) + " nodes");
        if (p.time_ms !== null && p.time_ms !== undefined) parts.push(fmtSeconds(p.time_ms));
        if (!parts.length && p.comment) parts.push(p.comment);
      }
      setText(info, parts.join(" · "));
      setText($('[data-step="white-clock"]'), fmtClock(clockOf("white", current)));
      setText($('[data-step="black-clock"]'), fmtClock(clockOf("black", current)));
      drawGraph(graph, scores, plies.length, current);
      var a = links[current - 1];
      if (a) scrollIntoList(a);
    }
    view.addEventListener("click", function (e) {
      var t = e.target;
      if (t.dataset && t.dataset.go) {
        show({ first: 0, prev: current - 1, next: current + 1, last: plies.length }[t.dataset.go]);
      } else if (t.dataset && t.dataset.ply) {
        e.preventDefault();
        show(Number(t.dataset.ply));
      }
    });
    document.addEventListener("keydown", function (e) {
      if (!document.body.contains(view)) return;
      var go = { ArrowLeft: current - 1, ArrowRight: current + 1, Home: 0, End: plies.length }[e.key];
      if (go !== undefined) { e.preventDefault(); show(go); }
    });
    // where the reader was when the page's content was fetched again, else #ply-N, else the end
    var hash = /^#ply-(\d+)$/.exec(location.hash);
    show(stepAt && stepAt.path === path ? stepAt.ply : hash ? Number(hash[1]) : plies.length);
  }

  // ------------------------------------------------------------------ Swiss chart

  function initChart() {
    var chart = $(".chart");
    if (!chart || chart.dataset.ready) return;
    chart.dataset.ready = "1";
    function mark(name, on) {
      $all("[data-engine]", chart).forEach(function (li) {
        if (li.getAttribute("data-engine") === name) li.classList.toggle("hl", on);
      });
    }
    chart.addEventListener("mouseover", function (e) {
      var li = e.target.closest && e.target.closest("[data-engine]");
      if (li) mark(li.getAttribute("data-engine"), true);
    });
    chart.addEventListener("mouseout", function (e) {
      var li = e.target.closest && e.target.closest("[data-engine]");
      if (li) mark(li.getAttribute("data-engine"), false);
    });
  }

  function initPage() {
    var initial = $("#live-data");
    if (initial && !live) {
      try { live = JSON.parse(initial.textContent); } catch (err) { live = null; }
      renderHeader();
    }
    initStepper();
    initChart();
  }

  document.addEventListener("DOMContentLoaded", function () {
    initPage();
    renderLive();
    connect();
    setInterval(tickClocks, 200);
  });
})();
