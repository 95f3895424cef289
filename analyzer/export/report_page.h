// The fixed text of `cuprobe report`'s page (report.cpp): markup, style and the script that
// draws the job's data. The data goes between kPageHead and kPageTail, inside a
// <script type="application/json" id="cuprobe-data"> element, already escaped for that place.
//
// The script writes every string from the data with textContent or SVG attributes, never as
// markup, so trace text (problem descriptions, command lines, host names) cannot inject any.
// Every error it meets (window.onerror, console.error, an exception while drawing) is listed in
// #errors, which the tests require to be empty; body[data-rendered="ok"] says drawing finished.
// Sections carry stable ids (summary, findings, memory, searches, divergence, faults, aggregated)
// and the charts' SVG elements stable classes (mem-area, oom-marker, search-bar, step-ticks).
#pragma once

namespace cuprobe::exporter {

inline constexpr const char* kPageHead = R"PAGE(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="cuprobe report">
<title>cuprobe report</title>
<style>
:root {
  --fg: #1d2330; --muted: #5d6677; --line: #dde1e8; --bg: #f5f6f8; --card: #fff;
  --error: #c62828; --warning: #b26a00; --info: #1565c0; --ok: #2e7d32; --mono: ui-monospace, "SF Mono", Menlo, Consolas, "DejaVu Sans Mono", monospace;
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
header.top { background: #1d2330; color: #fff; padding: 14px 28px; display: flex; align-items: baseline; gap: 24px; flex-wrap: wrap; }
header.top h1 { font-size: 18px; margin: 0; font-weight: 600; letter-spacing: .2px; }
header.top .sub { color: #b8c0cf; font-size: 13px; }
nav.toc { display: flex; gap: 16px; font-size: 13px; margin-left: auto; }
nav.toc a { color: #cfd6e4; text-decoration: none; }
nav.toc a:hover { color: #fff; text-decoration: underline; }
main { max-width: 1400px; margin: 0 auto; padding: 18px 28px 60px; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 16px 20px 18px; margin: 0 0 18px; }
section > h2 { font-size: 16px; margin: 0 0 10px; font-weight: 600; }
h3 { font-size: 14px; margin: 14px 0 6px; font-weight: 600; }
p.note, .muted { color: var(--muted); }
p.note { margin: 4px 0 10px; font-size: 13px; }
.errors { background: #fdecea; color: var(--error); border: 1px solid #f5c2c0; border-radius: 6px; padding: 8px 24px; margin: 0 0 14px; font-family: var(--mono); font-size: 12px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: 10px; margin-bottom: 12px; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; background: #fafbfc; }
.card .v { font-size: 18px; font-weight: 600; }
.card .k { color: var(--muted); font-size: 12px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; vertical-align: top; padding: 4px 8px; border-bottom: 1px solid var(--line); }
th { background: #f0f2f5; font-weight: 600; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
code, .mono { font-family: var(--mono); font-size: 12px; }
.table-wrap { overflow-x: auto; max-height: 560px; overflow-y: auto; border: 1px solid var(--line); border-radius: 6px; }
.table-wrap table th { position: sticky; top: 0; }
.finding { border: 1px solid var(--line); border-left: 5px solid var(--muted); border-radius: 6px; padding: 10px 14px; margin: 0 0 12px; }
.finding.sev-error { border-left-color: var(--error); }
.finding.sev-warning { border-left-color: var(--warning); }
.finding.sev-info { border-left-color: var(--info); }
.finding h3 { margin: 0 0 4px; font-size: 15px; }
.badge { display: inline-block; font-size: 11px; font-weight: 700; text-transform: uppercase; letter-spacing: .5px; padding: 1px 7px; border-radius: 10px; color: #fff; margin-right: 8px; vertical-align: 1px; }
.badge.error { background: var(--error); } .badge.warning { background: var(--warning); } .badge.info { background: var(--info); }
.rule { font-family: var(--mono); font-size: 12px; color: var(--muted); margin-left: 6px; }
.finding .meta { color: var(--muted); font-size: 12px; margin: 2px 0 6px; }
.finding .fix { background: #eef7ee; border-radius: 4px; padding: 6px 10px; margin: 8px 0 4px; }
.finding .fix b { color: var(--ok); }
.finding ul { margin: 4px 0; padding-left: 20px; }
details { margin-top: 6px; }
details > summary { cursor: pointer; color: var(--info); font-size: 13px; }
table.kv { width: auto; min-width: 40%; }
table.kv > tbody > tr > th { background: transparent; color: var(--muted); font-weight: 500; width: 1%; }
table.kv table { margin: 2px 0; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 18px; font-size: 12px; margin: 6px 0 10px; align-items: center; }
.legend .sw { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 5px; vertical-align: -2px; }
.legend .ln { display: inline-block; width: 18px; height: 0; margin-right: 5px; vertical-align: 3px; border-top: 2px solid; }
.chart { margin: 0 0 14px; }
.chart h3 { margin: 8px 0 2px; }
.chart svg { display: block; width: 100%; height: auto; background: #fff; }
svg text { font: 11px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; fill: #5d6677; }
svg .axis line, svg .axis path { stroke: #9aa3b2; shape-rendering: crispEdges; }
svg .grid line { stroke: #eceff3; shape-rendering: crispEdges; }
svg .axis-label { fill: #1d2330; font-size: 12px; }
svg .mem-total { fill: none; stroke: #1d2330; stroke-width: 1; stroke-opacity: .6; }
svg .oom-marker { stroke: var(--error); stroke-width: 2; }
svg .oom-head { fill: var(--error); }
svg .finding-marker { stroke: #6a1b9a; stroke-width: 1.5; stroke-dasharray: 5 3; }
svg .capacity { stroke: #37474f; stroke-width: 1; stroke-dasharray: 6 4; }
svg .step-ticks { stroke: #90a4ae; stroke-width: 1; }
svg .lane-bg { fill: #fafbfc; }
svg .hover-line { stroke: #1d2330; stroke-width: 1; stroke-dasharray: 2 2; pointer-events: none; }
#tooltip { position: fixed; pointer-events: none; background: rgba(29, 35, 48, .95); color: #fff; font-size: 12px; padding: 6px 9px; border-radius: 5px; max-width: 420px; z-index: 10; line-height: 1.4; }
#tooltip .t { color: #b8c0cf; }
.plans div { margin: 1px 0; }
.empty { color: var(--muted); font-style: italic; }
footer { color: var(--muted); font-size: 12px; text-align: center; margin-top: 10px; }
</style>
</head>
<body>
<header class="top"><h1>cuprobe report</h1><span class="sub" id="subtitle"></span>
<nav class="toc"><a href="#summary">Summary</a><a href="#findings">Findings</a><a href="#memory">Memory</a><a href="#searches">Searches</a><a href="#divergence">Divergence</a><a href="#faults">Faults</a><a href="#comparison">Comparison</a><a href="#aggregated">Aggregation</a></nav></header>
<main>
<ul id="errors" class="errors" hidden></ul>
<section id="summary"><h2>Job summary</h2></section>
<section id="findings"><h2>Findings</h2></section>
<section id="memory"><h2>Device memory over time</h2></section>
<section id="searches"><h2>Plan searches over time, against training steps</h2></section>
<section id="divergence"><h2>Problems that got different plans on different processes</h2></section>
<section id="faults"><h2>Fault injection</h2></section>
<section id="comparison"><h2>Compared with another run</h2></section>
<section id="aggregated"><h2>What this page aggregated</h2></section>
<footer>Written by cuprobe report. Times are seconds from the job's first work (its earliest process's); everything on this page is in this file.</footer>
</main>
<div id="tooltip" hidden></div>
<script type="application/json" id="cuprobe-data">)PAGE";

inline constexpr const char* kPageTail = R"PAGE(</script>
<script>
(function () {
  'use strict';
  var errorList = document.getElementById('errors');
  function reportError(text) {
    errorList.hidden = false;
    var li = document.createElement('li');
    li.textContent = text;
    errorList.appendChild(li);
  }
  window.onerror = function (message, source, line, column) {
    reportError('error: ' + message + ' (line ' + line + ':' + column + ')');
  };
  window.addEventListener('unhandledrejection', function (e) { reportError('unhandled rejection: ' + e.reason); });
  var consoleError = console.error;
  console.error = function () {
    reportError('console.error: ' + Array.prototype.map.call(arguments, String).join(' '));
    consoleError.apply(console, arguments);
  };

  var SVG = 'http://www.w3.org/2000/svg';
  var PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#b07aa1', '#76b7b2', '#edc948', '#9c755f', '#ff9da7', '#bab0ac', '#e15759'];
  var BENCH = '#e15759', HEUR = '#4e79a7';

  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) {
      if (k === 'text') e.textContent = attrs[k];
      else if (k === 'cls') e.className = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    (kids || []).forEach(function (c) { if (c != null) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return e;
  }
  function sv(tag, attrs, parent) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs || {}) {
      if (k === 'text') e.textContent = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    if (parent) parent.appendChild(e);
    return e;
  }
  function tip(node, text) { sv('title', { text: text }, node); return node; }
  function num(n) { return n == null ? '—' : Number(n).toLocaleString('en-US'); }
  function bytes(b) {
    if (b == null) return '—';
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0, v = Number(b);
    while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return (i === 0 ? String(v) : v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : 2)) + ' ' + u[i];
  }
  function secs(t) {
    if (t == null) return '—';
    var a = Math.abs(t);
    return (a >= 100 ? t.toFixed(1) : a >= 1 ? t.toFixed(3) : t.toFixed(6).replace(/0+$/, '').replace(/\.$/, '.0')) + ' s';
  }
  function span(s) {  // a short length of time: a bucket's width
    if (s < 1e-3) return Number((s * 1e6).toPrecision(3)) + ' µs';
    if (s < 1) return Number((s * 1e3).toPrecision(3)) + ' ms';
    return Number(s.toPrecision(3)) + ' s';
  }
  function duration(s) {
    if (s >= 3600) return (s / 3600).toFixed(2) + ' h';
    if (s >= 60) return (s / 60).toFixed(1) + ' min';
    return secs(s);
  }
  function ticks(lo, hi, n) {
    var span = hi - lo;
    if (!(span > 0)) return [lo];
    var step = Math.pow(10, Math.floor(Math.log10(span / n)));
    var err = span / n / step;
    if (err >= 7.5) step *= 10; else if (err >= 3.5) step *= 5; else if (err >= 1.5) step *= 2;
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    return out;
  }
  function tickText(v) { return String(Number(v.toPrecision(6))); }
  function table(headers, rows, numeric) {
    var t = el('table');
    var tr = el('tr');
    headers.forEach(function (h, i) { tr.appendChild(el('th', { text: h, cls: numeric && numeric[i] ? 'num' : '' })); });
    t.appendChild(el('thead', {}, [tr]));
    var body = el('tbody');
    rows.forEach(function (r) {
      var row = el('tr');
      r.forEach(function (c, i) {
        var td = el('td', { cls: numeric && numeric[i] ? 'num' : '' });
        if (c instanceof Node) td.appendChild(c); else td.textContent = c == null ? '—' : String(c);
        row.appendChild(td);
      });
      body.appendChild(row);
    });
    t.appendChild(body);
    return t;
  }
  function wrap(t) { return el('div', { cls: 'table-wrap' }, [t]); }

  var tooltip = document.getElementById('tooltip');
  function showTip(ev, lines) {
    tooltip.textContent = '';
    lines.forEach(function (l, i) { tooltip.appendChild(el('div', { text: l, cls: i === 0 ? 't' : '' })); });
    tooltip.hidden = false;
    var x = ev.clientX + 14, y = ev.clientY + 14;
    if (x + 320 > window.innerWidth) x = ev.clientX - 330;
    tooltip.style.left = x + 'px';
    tooltip.style.top = y + 'px';
  }
  function hideTip() { tooltip.hidden = true; }

  function render(d) {
    var S = d.summary || {};
    var procs = d.processes || [];
    function procName(i) {
      var p = procs[i];
      return p ? p.label : 'process ' + i;
    }
    function shortName(i) {
      var p = procs[i];
      if (!p) return 'process ' + i;
      return p.rank >= 0 ? 'rank ' + p.rank : 'pid ' + p.pid;
    }
    var labelOfPid = {};
    procs.forEach(function (p) { labelOfPid[p.pid] = p.label; });
    (S.per_process || []).forEach(function (p) { if (!(p.pid in labelOfPid)) labelOfPid[p.pid] = p.label; });

    document.getElementById('subtitle').textContent =
      num(S.processes) + ' process' + (S.processes === 1 ? '' : 'es') + ' on ' + (S.hosts || []).join(', ') +
      ' · ' + duration(S.duration_s || 0) + ' · ' + (d.findings || []).length + ' finding' + ((d.findings || []).length === 1 ? '' : 's');

    // The x axis every timeline shares: seconds from the job's first work.
    var x0 = 0, x1 = 0;
    procs.forEach(function (p) { if (p.events) { x0 = Math.min(x0, p.first_s); x1 = Math.max(x1, p.last_s); } });
    (d.memory || []).forEach(function (c) {
      if (c.k.length) x1 = Math.max(x1, (c.k[c.k.length - 1] + 1) * d.bucket_s);
      c.ooms.forEach(function (o) { x1 = Math.max(x1, o.t); x0 = Math.min(x0, o.t); });
    });
    if (!(x1 > x0)) x1 = x0 + 1;

    renderSummary(d, S);
    renderFindings(d, labelOfPid);
    renderMemory(d, S, x0, x1, procName);
    renderSearches(d, x0, x1, procName);
    renderDivergence(d, shortName, procName);
    renderFaults(d, S);
    renderComparison(d);
    renderAggregated(d);
  }

  // cuprobe report --compare-with A: this job as B against A (docs/diff-json.md), as `cuprobe diff A B` says it.
  function renderComparison(d) {
    var sec = document.getElementById('comparison');
    var D = d.diff;
    if (!D) { sec.appendChild(el('p', { cls: 'empty', text: 'No run to compare with (cuprobe report --compare-with RUN).' })); return; }
    var ms = function (s) { return (s * 1e3).toFixed(2) + ' ms'; };
    var signed = function (s) { return (s >= 0 ? '+' : '') + (s * 1e3).toFixed(2) + ' ms'; };
    var st = D.step_time || {}, pm = D.peak_memory || {};
    var count = function (n, one, many) { return n + ' ' + (n === 1 ? one : many); };
    sec.appendChild(el('p', { cls: 'note', text: 'A: ' + (D.a.paths || []).join(', ') + ' (' + count(D.a.processes, 'process', 'processes') +
      '); B (this job): ' + (D.b.paths || []).join(', ') + ' (' + count(D.b.processes, 'process', 'processes') + '); ' +
      count((D.pairs || []).length, 'pair', 'pairs') + ' matched by ' + D.matched_by + '.' }));
    sec.appendChild(wrap(table(['', 'A', 'B (this job)', 'B minus A'], [
      ['step', ms(st.a_s || 0), ms(st.b_s || 0), signed(st.delta_s || 0)],
      ['warm-up', duration(D.warmup.a_s || 0), duration(D.warmup.b_s || 0), signed(D.warmup.delta_s || 0)],
      ['peak memory', bytes(pm.a), bytes(pm.b), (pm.delta < 0 ? '-' : '+') + bytes(Math.abs(pm.delta || 0))]
    ].concat(D.syncs ? [['synchronizations per step', D.syncs.a_calls_per_step.toFixed(1) + ' calls, ' + ms(D.syncs.a_s_per_step),
      D.syncs.b_calls_per_step.toFixed(1) + ' calls, ' + ms(D.syncs.b_s_per_step), signed(D.syncs.b_s_per_step - D.syncs.a_s_per_step)]] : [])
     .concat(D.allocations ? [['steady-state allocations and frees per step',
      D.allocations.a_calls_per_step.toFixed(1) + ' (' + bytes(D.allocations.a_bytes_per_step) + ', ' + ms(D.allocations.a_s_per_step) + ')',
      D.allocations.b_calls_per_step.toFixed(1) + ' (' + bytes(D.allocations.b_bytes_per_step) + ', ' + ms(D.allocations.b_s_per_step) + ')',
      signed(D.allocations.b_s_per_step - D.allocations.a_s_per_step)]] : []), [0, 1, 1, 1])));
    if (!(D.causes || []).length) {
      sec.appendChild(el('p', { cls: 'empty', text: 'No difference above the noise (' + ms(D.noise_s_per_step) + ' per step).' }));
    } else {
      var t = table(['#', 'kind', 'what differs', 'per step', 'also'], D.causes.map(function (c, i) {
        var also = [];
        if (c.peak_memory_delta != null) also.push('peak memory ' + (c.peak_memory_delta < 0 ? '-' : '+') + bytes(Math.abs(c.peak_memory_delta)));
        if (c.warmup_searches_s != null) also.push('warm-up searches ' + signed(c.warmup_searches_s));
        return [String(i + 1), c.kind, c.what, c.contribution_s_per_step == null ? '—' : signed(c.contribution_s_per_step), also.join('; ') || '—'];
      }), [1, 0, 0, 1, 0]);
      t.classList.add('causes-table');
      sec.appendChild(wrap(t));
      // What the text prints under a cause: the plans that changed, where allocations and synchronizations came from.
      D.causes.forEach(function (c, i) {
        var lines = [];
        if (c.kind === 'plans') {
          var tm = function (v) { return v == null ? 'not measured' : v.toFixed(3) + ' ms'; };
          (c.details.changed || []).forEach(function (p) { lines.push(p.problem + ': ' + p.a + ' (' + tm(p.a_ms) + ') in A, ' + p.b + ' (' + tm(p.b_ms) + ') in B'); });
        }
        if (c.kind === 'allocations' || c.kind === 'syncs') {
          (c.details.a_sites || []).forEach(function (x) { lines.push('A: ' + x); });
          (c.details.b_sites || []).forEach(function (x) { lines.push('B: ' + x); });
          if (c.details.sites_note) lines.push(c.details.sites_note);
        }
        if (lines.length) {
          sec.appendChild(el('p', { cls: 'note', text: 'Cause ' + (i + 1) + ':' }));
          sec.appendChild(el('ul', {}, lines.map(function (x) { return el('li', { text: x }); })));
        }
      });
    }
    ['a', 'b'].forEach(function (side) {
      ((D.coverage || {})[side] || []).forEach(function (c) {
        sec.appendChild(el('p', { cls: 'note', text: 'Note (' + side.toUpperCase() + '): ' + c.process + ': ' + c.text + '; its synchronizations per step are of the part kept.' }));
      });
    });
    sec.appendChild(el('p', { cls: 'note', text: 'Unattributed: ' + signed(D.unattributed_s_per_step || 0) + ' per step (noise: ' + ms(D.noise_s_per_step || 0) + ').' }));
  }

  function renderSummary(d, S) {
    var sec = document.getElementById('summary');
    var cards = el('div', { cls: 'cards' });
    function card(k, v) { cards.appendChild(el('div', { cls: 'card' }, [el('div', { cls: 'v', text: v }), el('div', { cls: 'k', text: k })])); }
    card('processes', num(S.processes));
    card('hosts', num((S.hosts || []).length));
    card('ranks', (S.ranks || []).length ? num(S.ranks.length) : 'none');
    card('devices', num((S.devices || []).length));
    card('job time', duration(S.duration_s || 0));
    card('calls recorded', num(S.events));
    card('plan searches', num(S.searches));
    card('findings', num((d.findings || []).length));
    sec.appendChild(cards);
    if ((S.ranks || []).length) {
      sec.appendChild(el('p', { cls: 'note', text: 'Ranks ' + S.ranks.join(', ') + (S.rank_sources && S.rank_sources.length ? ' (from ' + S.rank_sources.join(' and ') + ')' : '') +
        (S.unranked_processes ? '; ' + S.unranked_processes + ' process(es) without a rank' : '') }));
    }
    if ((S.devices || []).length) {
      sec.appendChild(el('h3', { text: 'Devices' }));
      sec.appendChild(wrap(table(['host', 'index', 'name', 'memory', 'uuid', 'PCI bus'],
        S.devices.map(function (v) { return [v.host, v.index, v.name, bytes(v.total_mem), v.uuid, v.pci_bus_id]; }), [0, 1, 0, 1, 0, 0])));
    }
    // A job of many processes (16 and more): the groups alike and the outliers first, every
    // process below them, folded (docs/analyze-json.md, rank_groups).
    var RG = S.rank_groups;
    if (RG && (RG.groups || []).length) {
      sec.appendChild(el('h3', { text: 'Processes alike, and the outliers' }));
      sec.appendChild(wrap(table(['processes', 'ranks', 'hosts', 'program', 'state', 'searches', 'problems', 'events', 'time', 'device memory (peak)'],
        RG.groups.filter(function (g) { return g.count > 0; }).map(function (g) {
          var span = function (v, f) { return !v ? '—' : v.min === v.max ? f(v.min) : f(v.min) + ' to ' + f(v.max); };
          var mem = (g.memory || []).map(function (m) { return 'cuda:' + m.device + ' ' + span({ min: m.peak_min, max: m.peak_max }, bytes); }).join(', ');
          return [num(g.count) + ' of ' + num(RG.processes), g.ranks || (g.unranked ? g.unranked + ' without a rank' : '—'), num(g.hosts),
            g.program, g.state, num(g.searches), num(g.problems), span(g.events, num), span(g.duration_s, duration), mem || '—'];
        }), [1, 0, 1, 0, 0, 1, 1, 1, 1, 0])));
      if ((RG.outliers || []).length) {
        sec.appendChild(wrap(table(['outlier', 'what differs from the processes alike'], RG.outliers.map(function (o) {
          return [o.label, (o.differs || []).join('; ')];
        }), [0, 0])));
      } else {
        sec.appendChild(el('p', { text: 'No outlier: every process looks like the others.' }));
      }
    }
    if ((S.per_process || []).length) {
      var holder = sec;
      if (RG && (RG.groups || []).length) {
        holder = el('details', {}, [el('summary', { text: 'Every process (' + S.per_process.length + ')' })]);
        sec.appendChild(holder);
      } else {
        sec.appendChild(el('h3', { text: 'Processes' }));
      }
      holder.appendChild(wrap(table(['process', 'command', 'calls', 'time', 'state', 'searches', 'device memory (peak)', 'dropped', 'trace holds'],
        S.per_process.map(function (p) {
          var mem = (p.memory || []).map(function (m) { return 'cuda:' + m.device + ' ' + bytes(m.peak); }).join(', ');
          // A flight recorder's or a capture window's trace says which part of the run it holds.
          var holds = (p.coverage && p.coverage.text) || 'every call';
          // Plan pinning (docs/plan-pinning.md): how many of the selections ended on the plan file's plans.
          var searches = num(p.searches) + (p.pinning ? ' (' + num(p.pinning.pinned) + ' pinned)' : '');
          return [p.label, el('code', { text: p.command || '' }), num(p.events), duration(p.duration_s || 0), p.state, searches, mem || '—', num(p.dropped_events), holds];
        }), [0, 0, 1, 1, 0, 1, 0, 1, 0])));
    }
    if (S.calls_by_api && Object.keys(S.calls_by_api).length) {
      sec.appendChild(el('h3', { text: 'Most frequent calls' }));
      var keys = Object.keys(S.calls_by_api).sort(function (a, b) { return S.calls_by_api[b] - S.calls_by_api[a]; });
      sec.appendChild(wrap(table(['API', 'calls'], keys.map(function (k) { return [el('code', { text: k }), num(S.calls_by_api[k])]; }), [0, 1])));
    }
    var known = ['processes', 'hosts', 'ranks', 'rank_sources', 'unranked_processes', 'devices', 'duration_s', 'events', 'searches',
      'unfinished_processes', 'launcher_processes', 'calls_by_api', 'faults', 'per_process', 'rank_groups'];
    var other = {};
    Object.keys(S).forEach(function (k) { if (known.indexOf(k) < 0) other[k] = S[k]; });
    if (S.unfinished_processes) other.unfinished_processes = S.unfinished_processes;
    if (S.launcher_processes) other.launcher_processes = S.launcher_processes;
    if (Object.keys(other).length) {
      sec.appendChild(el('h3', { text: 'More' }));
      sec.appendChild(evidence(other, 0, ''));
    }
    if ((d.warnings || []).length) {
      sec.appendChild(el('h3', { text: 'Notes' }));
      sec.appendChild(el('ul', {}, d.warnings.map(function (w) { return el('li', { text: w }); })));
    }
  }

  // Evidence as tables: objects as key/value rows, lists of objects as one table, lists of values
  // as text; deeper levels as compact JSON.
  var BYTES_KEY = /bytes|size|workspace|peak|allocated|memory|mem$|capacity|free|reserved|total/i;
  function scalar(v, key) {
    if (v === null) return '—';
    if (typeof v === 'number') {
      if (Number.isInteger(v) && Math.abs(v) >= 1024 && BYTES_KEY.test(key || '')) return num(v) + ' (' + bytes(v) + ')';
      return Number.isInteger(v) ? num(v) : String(Number(v.toPrecision(6)));
    }
    return String(v);
  }
  function isObj(v) { return v !== null && typeof v === 'object' && !Array.isArray(v); }
  function evidence(v, depth, key) {
    if (Array.isArray(v)) {
      if (!v.length) return document.createTextNode('none');
      if (depth < 2 && v.every(function (x) { return isObj(x) || typeof x === 'string'; }) && v.some(isObj)) {
        var cols = [];
        v.forEach(function (r) { if (isObj(r)) Object.keys(r).forEach(function (k) { if (cols.indexOf(k) < 0 && cols.length < 14) cols.push(k); }); });
        var rows = v.map(function (r) {
          if (!isObj(r)) return [r].concat(cols.slice(1).map(function () { return ''; }));
          return cols.map(function (c) { return c in r ? (isObj(r[c]) || Array.isArray(r[c]) ? compact(r[c]) : scalar(r[c], c)) : ''; });
        });
        return table(cols, rows);
      }
      if (v.every(function (x) { return !isObj(x) && !Array.isArray(x); })) return document.createTextNode(v.map(function (x) { return scalar(x, key); }).join(', '));
      return el('ul', {}, v.map(function (x) { return el('li', {}, [evidence(x, depth + 1, key)]); }));
    }
    if (isObj(v)) {
      if (depth >= 2) return compact(v);
      var t = el('table', { cls: 'kv' });
      var body = el('tbody');
      Object.keys(v).forEach(function (k) {
        var td = el('td');
        var c = evidence(v[k], depth + 1, k);
        td.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
        body.appendChild(el('tr', {}, [el('th', { text: k }), td]));
      });
      t.appendChild(body);
      return t;
    }
    return document.createTextNode(scalar(v, key));
  }
  function compact(v) { return el('code', { text: JSON.stringify(v) }); }

  function renderFindings(d, labelOfPid) {
    var sec = document.getElementById('findings');
    var fs = d.findings || [];
    if (!fs.length) { sec.appendChild(el('p', { cls: 'empty', text: 'No findings.' })); return; }
    sec.appendChild(el('p', { cls: 'note', text: fs.length + ' finding' + (fs.length === 1 ? '' : 's') + ', in the order the analysis ranks them (what ended the run first, then failures the job went on after, then by severity and estimated time lost).' }));
    fs.forEach(function (f, i) {
      var a = el('article', { cls: 'finding sev-' + f.severity, id: 'finding-' + (i + 1), 'data-rule': f.rule });
      a.appendChild(el('h3', { cls: 'finding-title' }, [el('span', { cls: 'badge ' + f.severity, text: f.severity }), el('span', { text: f.title }), el('span', { cls: 'rule', text: f.rule })]));
      var meta = [];
      if (f.at_s != null) meta.push('at ' + secs(f.at_s) + ' from job start');
      if (f.impact_s > 0) meta.push('estimated time lost ' + (f.impact_s < 1 ? span(f.impact_s) : duration(f.impact_s)));
      if ((f.pids || []).length) meta.push('processes: ' + f.pids.slice(0, 12).map(function (p) { return labelOfPid[p] || 'pid ' + p; }).join('; ') + (f.pids.length > 12 ? '; and ' + (f.pids.length - 12) + ' more' : ''));
      if (meta.length) a.appendChild(el('div', { cls: 'meta', text: meta.join(' · ') }));
      a.appendChild(el('p', { cls: 'message', text: f.message }));
      if ((f.problems || []).length) {
        a.appendChild(el('div', { cls: 'muted', text: 'Problems' }));
        a.appendChild(el('ul', {}, f.problems.map(function (p) { return el('li', {}, [el('code', { text: p })]); })));
      }
      if ((f.call_sites || []).length) {
        a.appendChild(el('div', { cls: 'muted', text: 'Call sites' }));
        a.appendChild(el('ul', { cls: 'call-sites' }, f.call_sites.map(function (p) { return el('li', {}, [el('code', { text: p })]); })));
      }
      if (f.fix) a.appendChild(el('div', { cls: 'fix' }, [el('b', { text: 'Fix: ' }), f.fix]));
      if (f.evidence && Object.keys(f.evidence).length) {
        var det = el('details', { cls: 'evidence' }, [el('summary', { text: 'Evidence' })]);
        det.appendChild(evidence(f.evidence, 0, ''));
        a.appendChild(det);
      }
      sec.appendChild(a);
    });
  }

  var ownerColor = {};
  function colorOf(owner) {
    if (!(owner in ownerColor)) ownerColor[owner] = PALETTE[Object.keys(ownerColor).length % PALETTE.length];
    return ownerColor[owner];
  }

  function xAxis(g, x, x0, x1, top, bottom, left, right) {
    var grid = sv('g', { 'class': 'grid' }, g), axis = sv('g', { 'class': 'axis' }, g);
    sv('line', { x1: left, x2: right, y1: bottom, y2: bottom }, axis);
    ticks(x0, x1, 10).forEach(function (v) {
      var px = x(v);
      sv('line', { x1: px, x2: px, y1: top, y2: bottom }, grid);
      sv('line', { x1: px, x2: px, y1: bottom, y2: bottom + 4 }, axis);
      sv('text', { x: px, y: bottom + 16, 'text-anchor': 'middle', text: tickText(v) }, axis);
    });
    sv('text', { 'class': 'axis-label', x: (left + right) / 2, y: bottom + 32, 'text-anchor': 'middle', text: 'seconds from job start' }, g);
  }

  function renderMemory(d, S, x0, x1, procName) {
    var sec = document.getElementById('memory');
    var charts = d.memory || [];
    if (!charts.length) { sec.appendChild(el('p', { cls: 'empty', text: 'No device memory was allocated through the calls cuprobe records.' })); return; }
    sec.appendChild(el('p', { cls: 'note', text: 'Live device memory of each process on each device, stacked by owner. ' +
      'Each time bucket (' + span(d.bucket_s) + ') shows its peak with the owners at that moment; between changes the value holds. Hover for values.' }));
    charts.forEach(function (c) { c.owners.forEach(colorOf); });
    var legend = el('div', { cls: 'legend' });
    Object.keys(ownerColor).forEach(function (o) { legend.appendChild(el('span', {}, [el('span', { cls: 'sw', style: 'background:' + ownerColor[o] }), o])); });
    legend.appendChild(el('span', {}, [el('span', { cls: 'ln', style: 'border-color:#c62828' }), 'failed allocation (out of memory)']));
    legend.appendChild(el('span', {}, [el('span', { cls: 'ln', style: 'border-color:#6a1b9a;border-top-style:dashed' }), 'oom-postmortem finding']));
    legend.appendChild(el('span', {}, [el('span', { cls: 'ln', style: 'border-color:#37474f;border-top-style:dashed' }), 'device capacity']));
    sec.appendChild(legend);
    var pidOf = (d.processes || []).map(function (p) { return p.pid; });
    var oomFindings = (d.findings || []).filter(function (f) { return f.rule === 'oom-postmortem' && f.at_s != null; });

    charts.forEach(function (c, ci) {
      var p = (d.processes || [])[c.process] || {};
      var cap = 0;
      (S.devices || []).forEach(function (v) { if (v.host === c.host && v.index === c.device) cap = v.total_mem; });
      var W = 1340, H = 250, ml = 70, mr = 24, mt = 14, mb = 44;
      var box = el('div', { cls: 'chart mem-chart', id: 'memory-chart-' + ci, 'data-device': c.device, 'data-pid': p.pid });
      box.appendChild(el('h3', { text: (c.device >= 0 ? 'cuda:' + c.device : 'device unknown') + ' · ' + procName(c.process) +
        ' — peak ' + bytes(c.max) + (c.max ? ' at ' + secs(c.max_t) : '') + (cap ? ' of ' + bytes(cap) : '') +
        (c.ooms_total ? ' · ' + c.ooms_total + ' failed allocation' + (c.ooms_total === 1 ? '' : 's') : '') }));
      var svg = sv('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': 'device memory over time' });
      box.appendChild(svg);
      sec.appendChild(box);
      var ymax = c.max;
      c.ooms.forEach(function (o) { ymax = Math.max(ymax, o.live + o.size); });
      var showCap = cap > 0 && (c.ooms.length > 0 || c.max > 0.6 * cap);
      if (showCap) ymax = Math.max(ymax, cap);
      if (!(ymax > 0)) ymax = 1024 * 1024 * 1024;
      ymax *= 1.05;
      var unit = ymax >= Math.pow(1024, 3) ? ['GiB', Math.pow(1024, 3)] : ymax >= 1024 * 1024 ? ['MiB', 1024 * 1024] : ['KiB', 1024];
      var x = function (t) { return ml + (t - x0) / (x1 - x0) * (W - ml - mr); };
      var y = function (b) { return H - mb - b / ymax * (H - mt - mb); };
      var g = sv('g', {}, svg);
      xAxis(g, x, x0, x1, mt, H - mb, ml, W - mr);
      var yaxis = sv('g', { 'class': 'axis' }, g), ygrid = sv('g', { 'class': 'grid' }, g);
      sv('line', { x1: ml, x2: ml, y1: mt, y2: H - mb }, yaxis);
      ticks(0, ymax / unit[1], 5).forEach(function (v) {
        var py = y(v * unit[1]);
        sv('line', { x1: ml, x2: W - mr, y1: py, y2: py }, ygrid);
        sv('text', { x: ml - 6, y: py + 4, 'text-anchor': 'end', text: tickText(v) }, yaxis);
      });
      sv('text', { 'class': 'axis-label', transform: 'translate(16,' + ((mt + H - mb) / 2) + ') rotate(-90)', 'text-anchor': 'middle', text: 'live memory (' + unit[0] + ')' }, g);

      // Steps of the memory held: each bucket at its peak, then its last value until the next.
      var bs = d.bucket_s, segs = [];
      var end = p.events ? p.last_s : x1;
      for (var i = 0; i < c.k.length; i++) {
        var a = c.k[i] * bs, b = (c.k[i] + 1) * bs;
        segs.push([a, b, c.at_peak[i], c.peak[i], c.last[i]]);
        var next = i + 1 < c.k.length ? c.k[i + 1] * bs : Math.max(end, b);
        if (next > b) segs.push([b, next, c.at_last[i], c.last[i], c.last[i]]);
      }
      var areas = sv('g', { 'class': 'mem-areas' }, g);
      c.owners.forEach(function (owner, o) {
        if (!segs.length) return;
        var top = [], bottom = [];
        segs.forEach(function (s) {
          var lo = 0;
          for (var j = 0; j < o; j++) lo += s[2][j] || 0;
          var hi = lo + (s[2][o] || 0);
          top.push(x(s[0]).toFixed(1) + ',' + y(hi).toFixed(1), x(s[1]).toFixed(1) + ',' + y(hi).toFixed(1));
          bottom.push(x(s[0]).toFixed(1) + ',' + y(lo).toFixed(1), x(s[1]).toFixed(1) + ',' + y(lo).toFixed(1));
        });
        bottom.reverse();
        tip(sv('path', { 'class': 'mem-area', 'data-owner': owner, fill: colorOf(owner), 'fill-opacity': 0.85,
          d: 'M' + top.join('L') + 'L' + bottom.join('L') + 'Z' }, areas), owner);
      });
      if (showCap) {
        tip(sv('line', { 'class': 'capacity', x1: ml, x2: W - mr, y1: y(cap), y2: y(cap) }, g), 'device capacity ' + bytes(cap));
      }
      oomFindings.forEach(function (f) {
        if ((f.pids || []).length && f.pids.indexOf(pidOf[c.process]) < 0) return;
        tip(sv('line', { 'class': 'finding-marker', x1: x(f.at_s), x2: x(f.at_s), y1: mt, y2: H - mb }, g), f.title + ' (' + secs(f.at_s) + ')');
      });
      c.ooms.forEach(function (o) {
        var mg = sv('g', { 'class': 'oom' }, g);
        var text = 'failed allocation at ' + secs(o.t) + ': ' + o.api + ' of ' + bytes(o.size) + ' returned ' + o.status +
          (o.injected ? ' (injected by cuprobe)' : '') + ' with ' + bytes(o.live) + ' live; owner ' + o.owner;
        tip(sv('line', { 'class': 'oom-marker', x1: x(o.t), x2: x(o.t), y1: mt, y2: H - mb }, mg), text);
        tip(sv('path', { 'class': 'oom-head', d: 'M' + (x(o.t) - 5) + ',' + mt + 'L' + (x(o.t) + 5) + ',' + mt + 'L' + x(o.t) + ',' + (mt + 8) + 'Z' }, mg), text);
      });
      // Hover: the bucket under the pointer.
      var hover = sv('line', { 'class': 'hover-line', x1: 0, x2: 0, y1: mt, y2: H - mb, visibility: 'hidden' }, g);
      var overlay = sv('rect', { x: ml, y: mt, width: W - ml - mr, height: H - mt - mb, fill: 'transparent' }, svg);
      overlay.addEventListener('mousemove', function (ev) {
        var r = svg.getBoundingClientRect();
        var px = (ev.clientX - r.left) / r.width * W;
        var t = x0 + (px - ml) / (W - ml - mr) * (x1 - x0);
        hover.setAttribute('x1', px); hover.setAttribute('x2', px); hover.setAttribute('visibility', 'visible');
        var s = null;
        for (var lo = 0, hi = segs.length - 1; lo <= hi;) {
          var mid = (lo + hi) >> 1;
          if (segs[mid][1] <= t) lo = mid + 1; else if (segs[mid][0] > t) hi = mid - 1; else { s = segs[mid]; break; }
        }
        var lines = [secs(t) + ' from job start'];
        if (!s) lines.push('no device memory recorded here');
        else {
          lines.push('peak ' + bytes(s[3]) + ' in ' + secs(s[0]) + ' – ' + secs(s[1]) + (s[4] !== s[3] ? ', ' + bytes(s[4]) + ' at its end' : ''));
          c.owners.forEach(function (owner, o) { if (s[2][o]) lines.push(owner + ': ' + bytes(s[2][o])); });
        }
        showTip(ev, lines);
      });
      overlay.addEventListener('mouseleave', function () { hover.setAttribute('visibility', 'hidden'); hideTip(); });
      if (c.ooms_total > c.ooms.length) box.appendChild(el('p', { cls: 'note', text: 'The first ' + c.ooms.length + ' of ' + c.ooms_total + ' failed allocations are marked.' }));
    });
  }

  function renderSearches(d, x0, x1, procName) {
    var sec = document.getElementById('searches');
    var lanes = d.searches || [];
    if (!lanes.length) { sec.appendChild(el('p', { cls: 'empty', text: 'No cuDNN plan selection was recorded.' })); return; }
    sec.appendChild(el('p', { cls: 'note', text: 'cuDNN plan selections of each process, counted per time bucket of ' + span(d.bucket_s) +
      ' (bar height: searches in the bucket), over the starts of its training steps. Searches that go on after the first steps are a re-search storm.' }));
    sec.appendChild(el('div', { cls: 'legend' }, [
      el('span', {}, [el('span', { cls: 'sw', style: 'background:' + BENCH }), 'benchmark searches (every candidate timed)']),
      el('span', {}, [el('span', { cls: 'sw', style: 'background:' + HEUR }), 'heuristic selections']),
      el('span', {}, [el('span', { cls: 'ln', style: 'border-color:#90a4ae;width:2px;height:12px;border-top:0;border-left:2px solid #90a4ae;vertical-align:-2px' }), 'training step start'])]));
    var W = 1340, ml = 70, mr = 24, mt = 8, laneH = 58, mb = 44;
    var H = mt + lanes.length * laneH + mb;
    var svg = sv('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': 'plan searches over time', id: 'searches-chart' });
    var box = el('div', { cls: 'chart' }, [svg]);
    sec.appendChild(box);
    var x = function (t) { return ml + (t - x0) / (x1 - x0) * (W - ml - mr); };
    var g = sv('g', {}, svg);
    xAxis(g, x, x0, x1, mt, H - mb, ml, W - mr);
    var maxCount = 1;
    lanes.forEach(function (l) { for (var i = 0; i < l.k.length; i++) maxCount = Math.max(maxCount, l.benchmark[i] + l.heuristic[i]); });
    var bw = Math.max(1.2, x(d.bucket_s) - x(0));
    lanes.forEach(function (l, li) {
      var top = mt + li * laneH, base = top + laneH - 6, h = laneH - 22;
      var lg = sv('g', { 'class': 'lane', 'data-process': l.process }, g);
      sv('rect', { 'class': 'lane-bg', x: ml, y: top + 16, width: W - ml - mr, height: laneH - 22 }, lg);
      sv('text', { x: ml + 4, y: top + 12, text: procName(l.process) + ' — ' + num(l.searches_benchmark + l.searches_heuristic) + ' searches, ' + num(l.steps_total) + ' steps' }, lg);
      sv('text', { x: ml - 6, y: top + 22, 'text-anchor': 'end', text: String(maxCount) }, lg);
      sv('text', { x: ml - 6, y: base, 'text-anchor': 'end', text: '0' }, lg);
      if (l.steps.length) {
        var dd = l.steps.map(function (t) { return 'M' + x(t).toFixed(1) + ',' + (top + 16) + 'V' + base; }).join('');
        tip(sv('path', { 'class': 'step-ticks', d: dd }, lg), l.steps_every > 1 ? 'step starts (every ' + l.steps_every + 'th drawn)' : 'step starts');
      }
      function stepAt(t) {
        var n = 0;
        while (n < l.steps.length && l.steps[n] <= t) n++;
        return n === 0 ? 'before the first step' : 'step ' + ((n - 1) * l.steps_every + 1);
      }
      for (var i = 0; i < l.k.length; i++) {
        var t = l.k[i] * d.bucket_s, b = l.benchmark[i], hh = l.heuristic[i];
        var text = secs(t) + ' – ' + secs(t + d.bucket_s) + ' (' + stepAt(t) + '): ' + b + ' benchmark, ' + hh + ' heuristic';
        var hb = h * b / maxCount, hhh = h * hh / maxCount;
        if (b) tip(sv('rect', { 'class': 'search-bar benchmark', x: x(t).toFixed(1), y: (base - hb).toFixed(1), width: bw.toFixed(2), height: Math.max(hb, 1).toFixed(1), fill: BENCH }, lg), text);
        if (hh) tip(sv('rect', { 'class': 'search-bar heuristic', x: x(t).toFixed(1), y: (base - hb - hhh).toFixed(1), width: bw.toFixed(2), height: Math.max(hhh, 1).toFixed(1), fill: HEUR }, lg), text);
      }
    });
    sec.appendChild(el('h3', { text: 'Searches by step' }));
    sec.appendChild(wrap(table(['process', 'benchmark', 'heuristic', 'unfinished', 'before step 1', 'in step 1', 'in later steps', 'later steps that searched', 'last step that searched', 'steps'],
      lanes.map(function (l) {
        return [procName(l.process), num(l.searches_benchmark), num(l.searches_heuristic), num(l.incomplete), num(l.before_first_step), num(l.in_first_step),
          num(l.in_later_steps), num(l.later_steps_with_searches), l.last_step_with_search >= 0 ? num(l.last_step_with_search) : '—', num(l.steps_total)];
      }), [0, 1, 1, 1, 1, 1, 1, 1, 1, 1])));
  }

  function renderDivergence(d, shortName, procName) {
    var sec = document.getElementById('divergence');
    var v = d.divergence || { compared: 0, diverging: 0, rows: [] };
    sec.appendChild(el('p', { cls: 'note', text: v.compared + ' problem' + (v.compared === 1 ? '' : 's') + ' ran on more than one process; ' +
      v.diverging + ' of them got different plans (the plan a process ran most outside searches, else its search\'s winner).' +
      (v.rows.length < v.diverging ? ' The first ' + v.rows.length + ' are listed.' : '') }));
    if (!v.rows.length) { sec.appendChild(el('p', { cls: 'empty', text: 'No problem got different plans on different processes.' })); return; }
    var t = table(['problem', 'plans, and the processes that chose each', 'processes'], v.rows.map(function (r) {
      var plans = el('div', { cls: 'plans' }, r.plans.map(function (p) {
        var names = p.processes.slice(0, 16).map(shortName).join(', ') + (p.processes.length > 16 ? ', and ' + (p.processes.length - 16) + ' more' : '');
        var row = el('div', {}, [el('code', { text: p.plan }), ': ' + names]);
        row.title = p.processes.map(procName).join('\n');
        return row;
      }));
      return [el('code', { text: r.problem || '(problem not described)' }), plans, num(r.processes)];
    }), [0, 0, 1]);
    t.classList.add('divergence-table');
    Array.prototype.forEach.call(t.tBodies[0].rows, function (row) { row.className = 'div-row'; });
    sec.appendChild(wrap(t));
  }

  function renderFaults(d, S) {
    var sec = document.getElementById('faults');
    var cfg = S.faults || [], fs = d.faults || [];
    if (!cfg.length && !fs.length) { sec.appendChild(el('p', { cls: 'empty', text: 'No faults were injected (the run had no fault plan).' })); return; }
    if (cfg.length) {
      sec.appendChild(el('h3', { text: 'Fault plan' }));
      sec.appendChild(wrap(table(['rule', 'what', 'processes', 'calls matched', 'injected', 'then the application'], cfg.map(function (f) {
        var next = Object.keys(f.outcomes || {}).map(function (k) { return k + ' ×' + f.outcomes[k]; }).join(', ');
        return [f.rule, (f.memory_cap ? 'memory cap ' : '') + (f.text || ''), num(f.processes), num(f.matched), num(f.injected), next || '—'];
      }), [0, 0, 1, 1, 1, 0])));
    }
    sec.appendChild(el('h3', { text: 'Injected failures' }));
    if (!fs.length) { sec.appendChild(el('p', { cls: 'empty', text: 'None were injected.' })); return; }
    var t = table(['rule', 'API', 'returned', 'count', 'first', 'last'], fs.map(function (f) {
      return [f.rule, el('code', { text: f.api }), f.status, num(f.count), secs(f.first_s), secs(f.last_s)];
    }), [0, 0, 0, 1, 1, 1]);
    t.classList.add('faults-table');
    sec.appendChild(wrap(t));
    // How the job went on (summary.chaos): the first injection, and how each process ended after it.
    var C = S.chaos;
    if (C && C.first_injection) {
      var f0 = C.first_injection;
      sec.appendChild(el('h3', { text: 'How the processes ended' }));
      sec.appendChild(el('p', { cls: 'note', text: 'After the first injection: ' + f0.api + ' on ' + f0.process + ', rule ' + f0.rule + ', returned ' + f0.ret + '.' }));
      var ends = table(['process', 'ended', 'when', 'injected here', 'NCCL communicator aborted'], (C.ends || []).map(function (e) {
        var rel = function (v) { return v >= 0 ? v.toFixed(1) + ' s after it' : (-v).toFixed(1) + ' s before it'; };
        var when = e.started_after_s != null ? 'started ' + e.started_after_s.toFixed(1) + ' s after it, ended ' + e.after_s.toFixed(1) + ' s after it'
          : rel(e.after_s);
        return [e.process, e.ended + (e.meaning ? ': ' + e.meaning : ''), when, num(e.injected), e.nccl_abort_after_s != null ? rel(e.nccl_abort_after_s) : '-'];
      }), [0, 0, 0, 1, 0]);
      ends.classList.add('chaos-table');
      sec.appendChild(wrap(ends));
    }
  }

  function renderAggregated(d) {
    var sec = document.getElementById('aggregated');
    var a = d.aggregated || [];
    if (!a.length) { sec.appendChild(el('p', { cls: 'note', text: 'Nothing: every memory change, search and table row of the job is shown as recorded.' })); return; }
    sec.appendChild(el('ul', {}, a.map(function (t) { return el('li', { text: t }); })));
  }

  try {
    render(JSON.parse(document.getElementById('cuprobe-data').textContent));
    document.body.setAttribute('data-rendered', 'ok');
  } catch (e) {
    reportError('while drawing the report: ' + (e && e.stack ? e.stack : e));
  }
})();
</script>
</body>
</html>
)PAGE";

}  // namespace cuprobe::exporter
