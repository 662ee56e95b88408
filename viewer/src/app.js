// candle-graph viewer: reads the candle-graph/viewer/1 payload and renders every view. Plain JS,
// no framework; the graph is drawn on a canvas (SVG/foreignObject does not scale past a few
// thousand nodes) and only expanded groups are laid out, in a web worker.
(function () {
  'use strict';
  var T0 = performance.now(), MARKS = { script: T0 };
  function mark(n) { MARKS[n] = performance.now(); }
  var INIT;
  var $ = function (id) { return document.getElementById(id); };
  function esc(s) { return String(s == null ? '' : s).replace(/[&<>"']/g, function (c) { return '&#' + c.charCodeAt(0) + ';'; }); }
  function el(tag, cls, text) { var e = document.createElement(tag); if (cls) e.className = cls; if (text != null) e.textContent = text; return e; }
  // Not toLocaleString: its first call initialises ICU (~50 ms on the first view).
  function fmtInt(n) { if (n == null) return '?'; var s = String(Math.round(n)), neg = s[0] === '-'; if (neg) s = s.slice(1); var o = ''; while (s.length > 3) { o = ',' + s.slice(-3) + o; s = s.slice(0, -3); } return (neg ? '-' : '') + s + o; }
  function fmtNs(ns) { if (ns == null) return '—'; if (ns >= 1e9) return (ns / 1e9).toFixed(2) + ' s'; if (ns >= 1e6) return (ns / 1e6).toFixed(2) + ' ms'; if (ns >= 1e3) return (ns / 1e3).toFixed(1) + ' µs'; return Math.round(ns) + ' ns'; }
  function fmtMB(b) { return (b / 1048576).toFixed(2) + ' MB'; }  // MiB, as `summary` states sizes
  // `memory`'s binary units, labelled; a bound says so, an unknown is '?'.
  function fmtBytes(b) { if (b == null) return '?'; var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0; while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; } return (i ? b.toFixed(2) : String(b)) + ' ' + u[i]; }
  function fmtBound(bytes, bound) { if (bytes == null || bound === 'unknown') return '?'; return (bound === 'lower_bound' ? 'at least ' : bound === 'upper_bound' ? 'at most ' : '') + fmtBytes(bytes); }
  // Inspector fields holding figures: they wrap at spaces (`b*t*4,096 + b*t*t*32`), never inside
  // a number.
  var FIG_KEYS = { output_shape: 1, mult_adds: 1, parameters: 1, weights: 1, instances: 1, operations: 1, numel: 1, shape: 1, symbolic_shape: 1, checkpoint_shape: 1, expected: 1, actual: 1, total_time: 1 };
  var FIG_FIELDS = ['output_shape', 'mult_adds', 'mult_adds_lower_bound', 'parameter_count', 'weights_bytes', 'weights_dtype', 'shared_weights', 'order'];
  function shapeStr(s) { if (s == null) return '?'; if (Array.isArray(s)) return '[' + s.map(function (d) { return d == null ? '?' : d; }).join(', ') + ']'; return String(s); }
  // The payload comes in two parts: #cg-payload (what the first view needs: operations, tensors,
  // functions, findings) and #cg-payload-tree (modules, parameters, checkpoint), which is parsed
  // only after the dataflow graph is on screen, or at once when a view needs it. Either part may
  // come gzip-compressed (base64 in #…-gz): the HTML parser then scans a few MB instead of tens,
  // and the browser inflates it natively. A page with one part simply has no tree part.
  function partText(id) { var e = document.getElementById(id); return e ? e.textContent.trim() : ''; }
  function readPart(id, cb) {
    var b64 = partText(id + '-gz');
    mark('read:' + id);
    if (!b64) { cb(partText(id)); return; }
    var bin = atob(b64), bytes = new Uint8Array(bin.length);
    for (var bi = 0; bi < bin.length; bi++) bytes[bi] = bin.charCodeAt(bi);
    mark('unbase64:' + id);
    // One write and a read loop, then one decode: 2-4x faster than Response(...).text() on the
    // 28 MB main part of the 67k-op report, which went through the streams machinery chunk by
    // chunk (1.0-2.8 s against 0.5-0.7 s under load).
    var ds = new DecompressionStream('gzip'), w = ds.writable.getWriter(), rd = ds.readable.getReader(), chunks = [], n = 0;
    w.write(bytes); w.close();
    (function pump() {
      rd.read().then(function (r) {
        if (!r.done) { chunks.push(r.value); n += r.value.length; pump(); return; }
        var all = new Uint8Array(n), off = 0;
        for (var ci = 0; ci < chunks.length; ci++) { all.set(chunks[ci], off); off += chunks[ci].length; }
        chunks = null; mark('inflated:' + id); cb(new TextDecoder().decode(all));
      });
    })();
  }
  readPart('cg-payload', start);
  function start(text) {
  var P = JSON.parse(text);
  mark('parsed');
  if (P.schema !== 'candle-graph/viewer/1') throw new Error('unsupported payload schema ' + P.schema);
  // Large tables may come column-compressed ({columns:[…], rows:[[…]]}): keys are not repeated
  // 300k times, which halves the page and its parse time. Missing trailing cells are absent fields.
  // Rows of a compressed table inherit their kind from a shared prototype instead of carrying
  // their own `_kind` field (one less property write on 300k objects).
  var KIND = { modules: 'module', parameters: 'parameter', operations: 'operation', tensors: 'tensor', functions: 'function', findings: 'finding', components: 'component' };
  function tables(doc) {
    Object.keys(KIND).forEach(function (k) {
      var t = doc[k];
      if (t && !Array.isArray(t) && t.columns) {
        var cols = t.columns, nc = cols.length, proto = { _kind: KIND[k] };
        P[k] = t.rows.map(function (r) { var o = Object.create(proto); for (var i = 0; i < nc && i < r.length; i++) if (r[i] !== null) o[cols[i]] = r[i]; return o; });
      } else P[k] = t || P[k] || [];
    });
  }
  tables(P);
  mark('tables');

  // ---------- indexes ----------
  var byId = new Map();
  function put(kind, o) { if (o._kind !== kind) o._kind = kind; byId.set(o.id, o); }
  P.components.forEach(function (c) { put('component', c); });
  P.operations.forEach(function (o) { put('operation', o); });
  P.tensors.forEach(function (t) { put('tensor', t); });
  P.functions.forEach(function (f) { put('function', f); });
  P.findings.forEach(function (f) { put('finding', f); });
  P.operations.forEach(function (o) {
    var outs = o.outputs, ins = o.inputs, i, t;
    if (outs) for (i = 0; i < outs.length; i++) { t = byId.get(outs[i]); if (t && t._kind === 'tensor') t._producer = o.id; }
    if (ins) for (i = 0; i < ins.length; i++) { t = byId.get(ins[i]); if (t && t._kind === 'tensor') (t._consumers || (t._consumers = [])).push(o.id); }
  });
  function numel(p) { if (p.numel != null) return p.numel; if (!Array.isArray(p.shape)) return null; var n = 1; for (var i = 0; i < p.shape.length; i++) { if (p.shape[i] == null) return null; n *= p.shape[i]; } return n; }
  var roots = [], TOTAL = 0;
  function indexTree() {
    P.modules.forEach(function (m) { put('module', m); m._kids = []; m._params = []; });
    P.parameters.forEach(function (p) { put('parameter', p); });
    P.modules.forEach(function (m) { var par = m.parent != null && byId.get(m.parent); if (par && par._kids) par._kids.push(m); else roots.push(m); });
    P.parameters.forEach(function (p) { var m = byId.get(p.module); if (m && m._params) m._params.push(p); });
    function sumParams(m) {
      var s = 0, unk = false;
      m._params.forEach(function (p) { var n = numel(p); if (n == null) unk = true; else s += n; });
      m._kids.forEach(function (k) { sumParams(k); s += k._n; unk = unk || k._unk; });
      m._n = s; m._unk = unk;
    }
    roots.forEach(sumParams);
    roots.forEach(function (m) { TOTAL += m._n; });
  }
  // Tree part: loaded once; callbacks queued meanwhile run in order once it is indexed.
  // A one-part payload (modules in the main part) has nothing deferred.
  var started = false, treeReady = P.modules.length > 0, treeWaiters = [], treeLoading = false;
  if (treeReady) indexTree();
  function whenTree(cb) { if (treeReady) { cb(); return; } treeWaiters.push(cb); loadTree(); }
  function loadTree() {
    if (treeReady || treeLoading) return;
    treeLoading = true;
    // The tree part follows the script in the page: wait until the parser has read it.
    if (document.readyState === 'loading') { document.addEventListener('DOMContentLoaded', function () { treeLoading = false; loadTree(); }); return; }
    // Parse, tables and index run as separate tasks, so the page answers input in between.
    readPart('cg-payload-tree', function (t) {
      var doc = JSON.parse(t || '{}');
      setTimeout(function () {
        tables(doc); if (doc.checkpoint !== undefined) P.checkpoint = doc.checkpoint;
        setTimeout(treeLoaded, 0);
      }, 0);
    });
  }
  function treeLoaded() {
    indexTree(); treeReady = true; mark('tree');
    inspect(st.sel ? lookup(st.sel) || null : null);
    treeWaiters.splice(0).forEach(function (cb) { cb(); });
    publish();
  }
  mark('indexed');

  // ---------- state, hash ----------
  var VIEWS = [['architecture', 'Architecture'], ['dataflow', 'Dataflow'], ['findings', 'Findings'], ['checkpoint', 'Checkpoint'], ['profile', 'Profile']];
  var hasProfile = P.operations.some(function (o) { return o.timing; }) || !!(P.runtime && P.runtime.module_timings && P.runtime.module_timings.length);
  var st = { view: null, sel: null };
  function available(v) { return v === 'checkpoint' ? !!(P.checkpoint || P.summary && P.summary.checkpoint) : v === 'profile' ? hasProfile : true; }
  var hashLock = false;
  function writeHash() {
    if (hashLock) return;
    var h = 'view=' + st.view + (st.sel ? '&sel=' + encodeURIComponent(st.sel) : '') + ($('q').value ? '&q=' + encodeURIComponent($('q').value) : '');
    history.replaceState(null, '', '#' + h);
  }
  // Deep links are input: only `view` (a known view), `sel` and `q` are read, a part that does not
  // decode (`%E0%A4%A`) is ignored, and `__proto__` is a key like any other (null-prototype map).
  function isView(v) { return VIEWS.some(function (x) { return x[0] === v; }); }
  function readHash() {
    var o = Object.create(null);
    location.hash.replace(/^#/, '').split('&').forEach(function (kv) {
      var i = kv.indexOf('='); if (i <= 0) return;
      var k = kv.slice(0, i), v;
      if (k !== 'view' && k !== 'sel' && k !== 'q') return;
      try { v = decodeURIComponent(kv.slice(i + 1)); } catch (e) { return; }
      if (k === 'view' && !isView(v)) return;
      o[k] = v;
    });
    return o;
  }

  // ---------- theme ----------
  var theme = null;
  try { theme = localStorage.getItem('cg-theme'); } catch (e) { /* file:// storage may be off */ }
  if (!theme) theme = matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
  document.documentElement.dataset.theme = theme;
  $('theme').onclick = function () {
    theme = theme === 'dark' ? 'light' : 'dark'; document.documentElement.dataset.theme = theme;
    try { localStorage.setItem('cg-theme', theme); } catch (e) { /* ignore */ }
    readColors(); draw();
  };

  // "X is not on disk" and the like (rule dependency-source, information) say where the analysis
  // looked for dependency sources: notes beside the findings, not counted in the Findings badge.
  function isDepNote(f) { return f.rule === 'dependency-source' && (f.severity === 'information' || f.severity === 'info' || f.severity === 'note'); }
  function realFindings() { return P.findings.filter(function (f) { return !isDepNote(f); }); }
  function depNotes() { return P.findings.filter(isDepNote); }
  // Ids embed other ids percent-encoded (`module:component%3Amodels%253A%253Allama…`): shown
  // decoded, the exact id kept in the title.
  function shownId(v) {
    if (typeof v !== 'string' || !/%[0-9A-Fa-f]{2}/.test(v) || !/^[a-z][a-z_-]*:/.test(v)) return v;
    for (var i = 0; i < 4 && /%[0-9A-Fa-f]{2}/.test(v); i++) { try { v = decodeURIComponent(v); } catch (e) { break; } }
    return v;
  }

  // ---------- tabs ----------
  var tabs = $('tabs');
  VIEWS.forEach(function (v) {
    var b = el('button', null, v[1]); b.setAttribute('role', 'tab'); b.id = 'tab-' + v[0]; b.dataset.view = v[0];
    var cnt = v[0] === 'findings' ? realFindings().length : null;
    if (cnt) { var s = el('span', 'badge', String(cnt)); s.title = cnt + ' findings' + (depNotes().length ? ' (and ' + depNotes().length + ' notes on where dependency sources are, not counted)' : ''); b.appendChild(s); }
    if (!available(v[0])) { b.disabled = true; b.title = v[0] === 'checkpoint' ? 'No checkpoint was verified for this report' : 'No runtime trace was merged into this report'; b.style.opacity = '0.45'; }
    b.onclick = function () { showView(v[0]); };
    tabs.appendChild(b);
  });
  tabs.addEventListener('keydown', function (e) {
    if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') return;
    var list = VIEWS.map(function (v) { return v[0]; }).filter(available), i = list.indexOf(st.view);
    showView(list[(i + (e.key === 'ArrowRight' ? 1 : list.length - 1)) % list.length]); $('tab-' + st.view).focus();
  });
  var inited = {};
  function showView(v) {
    if (!isView(v) || !available(v)) v = 'architecture';
    if ((v === 'architecture' || v === 'checkpoint') && !treeReady) { whenTree(function () { showView(v); }); return; }
    st.view = v;
    $('center').style.flexBasis = '';  // a table view sets it again to what its columns need
    VIEWS.forEach(function (x) { $('view-' + x[0]).hidden = x[0] !== v; $('tab-' + x[0]).setAttribute('aria-selected', String(x[0] === v)); $('tab-' + x[0]).tabIndex = x[0] === v ? 0 : -1; });
    if (!inited[v]) { inited[v] = true; INIT[v](); }
    if (v === 'dataflow') { resize(); }
    // A table view re-fits its columns (and the width it asks of the inspector) when shown again.
    var vt = $('view-' + v).querySelector('.vtable'); if (vt && vt._vt) vt._vt.paint();
    writeHash();
  }
  // The model this report is about: its root (one component), then the crate it is in.
  (function () {
    var m = P.model || {}, crate = (m.name || '') + (m.version ? ' ' + m.version : ''), root = m.root || (P.components.length === 1 ? P.components[0].qualified_name || P.components[0].name : '');
    $('model-name').textContent = root ? root + (crate ? '  ·  ' + crate : '') : crate;
    $('model-name').title = $('model-name').textContent;
    if (root) document.title = root + ' · ' + (m.name || '') + ' · candle-graph';
  })();

  // ---------- virtual table ----------
  // Columns size to their content: every row's cell is measured (canvas text metrics, the widest
  // few checked against the real DOM), the flexible column takes what is left, and where the
  // columns do not fit, numeric columns that can (`compact`) switch to compact units (6.74 B) with
  // the exact figure in the cell's tooltip. If they still do not fit, the table scrolls sideways:
  // a cell is never cut.
  var measureCtx = document.createElement('canvas').getContext('2d'), CELL_PAD = 12;  // .vrow div / .vhead div padding
  // A `wrap` column (free text: a finding's message) is given at least WRAP_MIN px and wraps; its
  // rows grow by LINE_H per line (counted with the same canvas metrics, word by word).
  var WRAP_MIN = 240, LINE_H = 17;
  function VTable(host, cols, opts) {
    this.host = host; this.cols = cols; this.rows = []; this.opts = opts || {}; this.sortKey = null; this.sortDir = 1; this.selKey = null; this.hitKey = null;
    var head = el('div', 'vhead'), self = this; host.innerHTML = '';
    cols.forEach(function (c) {
      var h = el('div', c.num ? 'num' : '', c.label); h.style.flex = '0 0 ' + (c.w || 220) + 'px'; h.setAttribute('role', 'columnheader');
      if (c.sort && !self.opts.noSort) h.onclick = function () { self.sortBy(c.key); };
      c._h = h; head.appendChild(h);
    });
    this.head = head; this.body = el('div', 'vbody'); host.appendChild(head); host.appendChild(this.body); host._vt = this;
    this.fonts = Object.create(null); this.need = null; this.widths = null; this.compact = false; this.fitW = -1;
    host.addEventListener('scroll', function () { self.paint(); });
    window.addEventListener('resize', function () { self.paint(); });
  }
  VTable.prototype.RH = 26;
  // The CSS font of a cell with these classes (read once from a hidden probe row).
  VTable.prototype.font = function (cls) {
    var f = this.fonts[cls];
    if (f == null) {
      var row = el('div', 'vrow'), d = el('div', cls), s = el('span', cls); row.style.visibility = 'hidden'; row.appendChild(d); d.appendChild(s); this.body.appendChild(row);
      f = this.fonts[cls] = getComputedStyle(s).font; row.remove();
    }
    return f;
  };
  // Text width as the sum of its characters' advances (each measured once per font): as wide as
  // the browser lays it out or a little wider (kerning only narrows), and cheap enough for 100k
  // rows; the widest rows of each column are then measured in the page itself.
  var charW = Object.create(null);
  VTable.prototype.textW = function (text, cls) {
    var font = this.font(cls || ''), cw = charW[font] || (charW[font] = new Map()), t = String(text), w = 0;
    for (var i = 0; i < t.length; i++) {
      var ch = t[i], x = cw.get(ch);
      if (x === undefined) { measureCtx.font = font; x = measureCtx.measureText(ch).width; cw.set(ch, x); }
      w += x;
    }
    return w;
  };
  function cellCls(c) { return (c.num ? 'num ' : '') + (c.cls || ''); }
  // Width of one cell's content (padding included) by canvas metrics.
  VTable.prototype.cellW = function (c, r, compact) {
    var self = this, M = function (t, cls) { return self.textW(t, cls == null ? cellCls(c) : cls); };
    if (c.measure) return c.measure(r, M, compact) + CELL_PAD;
    if (c.render.text) { var v = c.render.text(r, compact); return v == null || v === '' ? 0 : M(v) + CELL_PAD; }
    return c.w || 0;
  };
  // The rendered width of one cell, laid out in a hidden probe row.
  VTable.prototype.domW = function (c, r, compact) {
    var row = el('div', 'vrow'), d = el('div', cellCls(c));
    row.style.cssText = 'visibility:hidden;width:auto;right:auto'; d.style.cssText = 'flex:none;overflow:visible';
    c.render(r, d, compact); row.appendChild(d); this.body.appendChild(row);
    var w = d.getBoundingClientRect().width; row.remove(); return w;
  };
  VTable.prototype.measure = function () {
    var self = this, rows = this.rows;
    function pass(compact) {
      return self.cols.map(function (c) {
        var best = [];  // the widest rows by canvas metrics, re-measured in the DOM
        var w = self.textW(c.label, 'vhead-label') + CELL_PAD + (c.sort && !self.opts.noSort ? 16 : 0);
        for (var i = 0; i < rows.length; i++) {
          var cw = self.cellW(c, rows[i], compact);
          if (best.length < 3 || cw > best[best.length - 1][0]) { best.push([cw, rows[i]]); best.sort(function (a, b) { return b[0] - a[0]; }); if (best.length > 3) best.pop(); }
          if (cw > w) w = cw;
        }
        if (c.wrap) return Math.ceil(Math.min(w, WRAP_MIN));  // wraps onto more lines instead
        best.forEach(function (b) { w = Math.max(w, self.domW(c, b[1], compact)); });
        return Math.ceil(w) + 2;
      });
    }
    this.need = { full: pass(false), compact: this.cols.some(function (c) { return c.compact; }) ? pass(true) : null };
    this.fitW = -1;
  };
  // Pick full or compact figures for the width on screen; the flexible column takes the rest.
  VTable.prototype.fit = function () {
    var avail = this.host.clientWidth, sum = function (a) { return a.reduce(function (s, x) { return s + x; }, 0); };
    if (!this.need) this.measure();
    // The inspector gives up width (down to its CSS min-width) to a table that needs it.
    var insp = $('inspector'), room = Math.max(0, insp.offsetWidth - parseFloat(getComputedStyle(insp).minWidth || '0'));
    var ws = this.need.full, compact = false;
    if (sum(ws) > avail + room && this.need.compact) { ws = this.need.compact; compact = true; }
    ws = ws.slice();
    // Only where that makes the whole table fit: otherwise the inspector keeps its width and the
    // table scrolls sideways (its long free-text column comes last).
    $('center').style.flexBasis = sum(ws) <= avail + room ? (sum(ws) + this.host.offsetWidth - this.host.clientWidth) + 'px' : '';
    avail = this.host.clientWidth;
    var spare = avail - sum(ws), fi = -1;
    this.cols.forEach(function (c, i) { if (c.flex && fi < 0) fi = i; });
    if (spare > 0) ws[fi >= 0 ? fi : ws.length - 1] += spare;
    this.widths = ws; this.compact = compact; this.fitW = avail; this.total = sum(ws);
    this.head.style.width = this.body.style.width = this.total + 'px';
    this.cols.forEach(function (c, i) { c._h.style.flex = '0 0 ' + ws[i] + 'px'; });
    this.layoutRows();
  };
  // Row offsets: fixed height, except where a wrap column's text needs more lines.
  VTable.prototype.layoutRows = function () {
    var wi = -1, self = this; this.cols.forEach(function (c, i) { if (c.wrap) wi = i; });
    this.tops = null;
    if (wi < 0 || !this.widths) return;
    var c = this.cols[wi], width = this.widths[wi] - CELL_PAD - 2, n = this.rows.length, tops = new Float64Array(n + 1);
    var font = cellCls(c) + ' wrap', space = this.textW(' ', font);
    for (var i = 0; i < n; i++) {
      var text = String(c.render.text(this.rows[i]) || ''), lines = 1, x = 0;
      text.split(/\s+/).forEach(function (word) {
        if (!word) return;
        var w = self.textW(word, font);
        if (x > 0 && x + space + w <= width) { x += space + w; return; }
        if (x > 0) lines++;
        if (w > width) { lines += Math.ceil(w / width) - 1; x = w - (Math.ceil(w / width) - 1) * width; } else x = w;
      });
      tops[i + 1] = tops[i] + Math.max(self.RH, lines * LINE_H + 9);
    }
    this.tops = tops;
  };
  VTable.prototype.top = function (i) { return this.tops ? this.tops[i] : i * this.RH; };
  // First row whose bottom is below y.
  VTable.prototype.rowAt = function (y) {
    if (!this.tops) return Math.max(0, Math.floor(y / this.RH));
    var lo = 0, hi = this.rows.length; while (lo < hi) { var mid = (lo + hi) >> 1; if (this.tops[mid + 1] <= y) lo = mid + 1; else hi = mid; } return lo;
  };
  VTable.prototype.setRows = function (rows) { this.rows = rows; this.need = null; this.tops = null; if (this.sortKey) this.sort(); this.paint(); };
  VTable.prototype.sortBy = function (key) {
    if (this.sortKey === key) this.sortDir = -this.sortDir; else { this.sortKey = key; var c = this.cols.filter(function (x) { return x.key === key; })[0]; this.sortDir = c.num ? -1 : 1; }
    this.sort(); this.layoutRows(); this.paint();
  };
  VTable.prototype.sort = function () {
    var c = this.cols.filter(function (x) { return x.key === this.sortKey; }, this)[0], d = this.sortDir;
    this.cols.forEach(function (x) { x._h.removeAttribute('aria-sort'); }); c._h.setAttribute('aria-sort', d > 0 ? 'ascending' : 'descending');
    this.rows.sort(function (a, b) { var x = c.sort(a), y = c.sort(b); if (x == null) return 1; if (y == null) return -1; return (x < y ? -1 : x > y ? 1 : 0) * d; });
  };
  VTable.prototype.refresh = function () { this.paint(); };
  VTable.prototype.paint = function () {
    if (!this.host.clientWidth) return;  // hidden: measured and drawn when shown
    if (!this.need || this.host.clientWidth !== this.fitW) this.fit();
    var top = this.host.scrollTop, hgt = this.host.clientHeight || 600, n = this.rows.length;
    var a = Math.max(0, this.rowAt(top) - 10), b = Math.min(n, this.rowAt(top + hgt) + 11), self = this;
    this.body.style.height = this.top(n) + 'px';
    var frag = document.createDocumentFragment(), ws = this.widths, cp = this.compact;
    for (var i = a; i < b; i++) {
      var r = this.rows[i], row = el('div', 'vrow'), key = this.opts.key(r);
      row.style.top = this.top(i) + 'px'; if (this.tops) row.style.height = (this.tops[i + 1] - this.tops[i]) + 'px'; row.style.width = this.total + 'px'; row.setAttribute('role', this.opts.role || 'row'); row.dataset.key = key;
      if (key === this.selKey) row.classList.add('sel'); if (key === this.hitKey) row.classList.add('hit');
      this.cols.forEach(function (c, ci) { var d = el('div', cellCls(c) + (c.wrap ? ' wrap' : '')); d.style.flex = '0 0 ' + ws[ci] + 'px'; c.render(r, d, cp); row.appendChild(d); });
      row.onclick = (function (rr) { return function (ev) { self.opts.click(rr, ev); }; })(r);
      frag.appendChild(row);
    }
    this.body.replaceChildren(frag);
  };
  VTable.prototype.reveal = function (key, asHit) {
    var i = -1; for (var k = 0; k < this.rows.length; k++) if (this.opts.key(this.rows[k]) === key) { i = k; break; }
    if (asHit) this.hitKey = key; else this.selKey = key;
    if (i >= 0) { var top = this.top(i), h = this.host.clientHeight; if (top < this.host.scrollTop + 26 || top > this.host.scrollTop + h - 52) this.host.scrollTop = top - h / 2; }
    this.paint();
  };
  // A text cell; `full` (optional) gives the exact text for the tooltip when the cell is compact.
  function txt(f, full) {
    var r = function (row, d, compact) { var v = f(row, compact); d.textContent = v == null ? '' : v; d.title = compact && full ? full(row) : d.textContent; };
    r.text = f; return r;
  }
  // Compact figures for narrow tables: 3 significant digits with K/M/B/T (6.74 B, 45.1 M);
  // below 100,000 the exact figure is as short.
  function fmtCompact(n) {
    if (n == null) return '?'; var a = Math.abs(n);
    if (a < 1e5) return fmtInt(n);
    var u = [[1e12, 'T'], [1e9, 'B'], [1e6, 'M'], [1e3, 'K']].filter(function (x) { return a >= x[0]; })[0], v = n / u[0];
    var s = Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2);
    if (Math.abs(Number(s)) >= 1000 && u[1] !== 'T') return fmtCompact(Number(s) * u[0]);  // 999.7 K rounds to 1.00 M
    return s + ' ' + u[1];
  }

  // ---------- architecture (module tree with folded families) ----------
  var open = Object.create(null), archTable, famMap = Object.create(null);
  // Families: siblings named by an index with one type are folded as `name.{i} × N`; the module's
  // own `repeat` (from the analyzer) takes precedence over this naming heuristic.
  // Siblings read like the model runs, as in `summary` (the row order the CLI sends as `order`):
  // a module without one (an instance of a folded family) goes where its family's first does.
  function execOrder(kids) {
    var byType = Object.create(null);
    kids.forEach(function (k) { if (k.order != null && /^\d+$/.test(String(k.name))) { var t = k.type || ''; byType[t] = Math.min(byType[t] == null ? 1e15 : byType[t], k.order); } });
    var key = function (k) { return k.order != null ? k.order : /^\d+$/.test(String(k.name)) && byType[k.type || ''] != null ? byType[k.type || ''] : 1e15; };
    return kids.map(function (k, i) { return [key(k), i, k]; }).sort(function (a, b) { return a[0] - b[0] || a[1] - b[1]; }).map(function (x) { return x[2]; });
  }
  function childrenOf(m) {
    var out = [], groups = Object.create(null);
    execOrder(m._kids).forEach(function (k) {
      var nm = String(k.name != null ? k.name : k.id), key = /^\d+$/.test(nm) ? (k.type || '') : null;
      // A family stands where its first member is.
      if (key != null) { if (!groups[key]) { groups[key] = []; out.push({ group: key }); } groups[key].push(k); } else out.push({ mod: k });
    });
    out = out.map(function (c) {
      if (!c.group) return c;
      var t = c.group, list = groups[t];
      if (list.length < 2) return { mod: list[0] };
      list.sort(function (a, b) { return Number(a.name) - Number(b.name); });
      var fid = 'family:' + m.id + ':' + t, n = 0, unk = false; list.forEach(function (x) { n += x._n; unk = unk || x._unk; });
      var fam = { id: fid, _kind: 'family', members: list, type: t, prefix: (list[0].prefix || '').replace(/\.?\d+$/, '') + '.{i}', count: list.length, _n: n, _unk: unk };
      famMap[fid] = fam; list.forEach(function (x) { x._family = fid; });
      return { fam: fam };
    });
    return out;
  }
  function flatten() {
    var rows = [];
    function walkMod(m, depth) {
      var id = m.id, kids = m._kidsCache || (m._kidsCache = childrenOf(m));
      rows.push({ kind: 'module', o: m, depth: depth, has: kids.length + m._params.length > 0 });
      if (!open[id]) return;
      kids.forEach(function (c) {
        if (c.mod) walkMod(c.mod, depth + 1);
        else { rows.push({ kind: 'family', o: c.fam, depth: depth + 1, has: true }); if (open[c.fam.id]) walkMod(c.fam.members[open['inst:' + c.fam.id] || 0], depth + 2); }
      });
      m._params.forEach(function (p) { rows.push({ kind: 'parameter', o: p, depth: depth + 1, has: false }); });
    }
    var comps = P.components.length ? P.components : [{ id: '(model)', name: (P.model && P.model.name) || 'model', _virtual: true }];
    comps.forEach(function (c) {
      var mods = roots.filter(function (m) { return c._virtual || m.component === c.id || m.id === c.root; });
      var n = 0; mods.forEach(function (m) { n += m._n; }); c._n = n;
      rows.push({ kind: 'component', o: c, depth: 0, has: mods.length > 0 });
      if (open[c.id] !== false) mods.forEach(function (m) { walkMod(m, 1); });
    });
    return rows;
  }
  function nameOf(r) {
    var o = r.o;
    if (r.kind === 'family') return String(o.prefix).split('.').slice(-2).join('.') + ' × ' + o.count;
    if (r.kind === 'parameter') return String(o.key || o.id).split('.').pop();
    if (r.kind === 'component') return o.name || o.id;
    return o.name != null ? String(o.name) : String(o.prefix || o.id);
  }
  function flagsOf(r) {
    var out = [];
    if (r.kind === 'module' && r.o._family) out.push('instance ' + r.o.name + ' of ' + famMap[r.o._family].count);
    // Descendants of a repeated module inherit its repeat: flag only where it starts.
    var par = r.kind === 'module' && r.o.parent != null ? byId.get(r.o.parent) : null;
    if (r.o.repeat && !(par && par.repeat === r.o.repeat) && !r.o._family) out.push('repeated: ' + r.o.repeat);
    if (r.o.conditional) out.push('conditional');
    if (r.o.confidence && r.o.confidence !== 'exact' && r.o.confidence !== 'proven' && !(r.o.conditional && r.o.confidence === 'conditional')) out.push(String(r.o.confidence));
    if (r.kind === 'parameter' && numel(r.o) == null) out.push('shape unknown');
    return out;
  }
  function rowParams(r) { return r.kind === 'parameter' ? numel(r.o) : r.o._n; }
  var SHARE_BAR = 36;
  // Module scope timings (profile --runtime-trace with runtime/4 `module` records): an instance
  // row shows its own scopes, a family (the analyzer's `{i}` row or a folded group here) the sum
  // over its instances; the bar is the row's total against the slowest row's.
  var MT = (P.runtime && P.runtime.module_timings) || [], modTime = Object.create(null), famTime = Object.create(null), maxTime = 0;
  MT.forEach(function (t) {
    var into = t.family ? famTime : modTime, cur = into[t.module] || (into[t.module] = { total_ns: 0, self_ns: 0, calls: 0 });
    cur.total_ns += t.total_ns; cur.self_ns += t.self_ns; cur.calls += t.calls;
  });
  function timeOf(r) {
    if (!MT.length) return null;
    // A folded family's row sums its instances, so it may be the slowest row: the bars' scale
    // takes it in (the table measures every row before it paints one).
    if (r.kind === 'family') { var s = { total_ns: 0, self_ns: 0, calls: 0 }, any = false; r.o.members.forEach(function (m) { var t = famTime[m.id] || modTime[m.id]; if (t) { any = true; s.total_ns += t.total_ns; s.self_ns += t.self_ns; s.calls += t.calls; } }); if (s.total_ns > maxTime) maxTime = s.total_ns; return any ? s : null; }
    if (r.kind !== 'module') return null;
    return famTime[r.o.id] || modTime[r.o.id] || null;
  }
  Object.keys(modTime).forEach(function (k) { maxTime = Math.max(maxTime, modTime[k].total_ns); });
  Object.keys(famTime).forEach(function (k) { maxTime = Math.max(maxTime, famTime[k].total_ns); });
  function timeTitle(t) { var w = P.runtime.wall_ns; return fmtNs(t.total_ns) + ' total, ' + fmtNs(t.self_ns) + ' self over ' + fmtInt(t.calls) + ' calls' + (w ? ' · self ' + (100 * t.self_ns / w).toFixed(1) + '% of wall time ' + fmtNs(w) : '') + (P.runtime.host_side ? ' · host-side timing' : ''); }
  // Numeric health (runtime/4 `stats` records merged by path, like the timings): an instance row
  // shows its own outputs' worst figures, a family the worst over its members. Red: a NaN or Inf
  // was recorded (the first module to go non-finite is flagged); amber: named by a runtime
  // finding on activation growth; green: finite on every sample.
  var MS = (P.runtime && P.runtime.module_stats) || [], modHealth = Object.create(null);
  var firstNF = (P.runtime && P.runtime.first_non_finite) || null, growth = Object.create(null);
  ((P.runtime && P.runtime.activation_growth) || []).forEach(function (m) { growth[m] = true; });
  MS.forEach(function (h) {
    if (h.family) return;
    var cur = modHealth[h.module] || (modHealth[h.module] = { samples: 0, non_finite: 0, abs_max: null, rms: null, first: null });
    cur.samples += h.samples; cur.non_finite += h.non_finite;
    if (h.max_abs_max != null) cur.abs_max = Math.max(cur.abs_max == null ? 0 : cur.abs_max, h.max_abs_max);
    if (h.max_rms != null) cur.rms = Math.max(cur.rms == null ? 0 : cur.rms, h.max_rms);
    if (h.first_non_finite_step != null && (cur.first == null || h.first_non_finite_step < cur.first)) cur.first = h.first_non_finite_step;
  });
  function healthOf(r) {
    if (!MS.length) return null;
    var ids = r.kind === 'family' ? r.o.members.map(function (m) { return m.id; }) : r.kind === 'module' ? [r.o.id] : [];
    var out = null;
    ids.forEach(function (id) {
      var h = modHealth[id]; if (!h) return;
      if (!out) out = { samples: 0, non_finite: 0, abs_max: null, rms: null, first: null, growth: false, firstNF: false };
      out.samples += h.samples; out.non_finite += h.non_finite;
      if (h.abs_max != null) out.abs_max = Math.max(out.abs_max == null ? 0 : out.abs_max, h.abs_max);
      if (h.rms != null) out.rms = Math.max(out.rms == null ? 0 : out.rms, h.rms);
      if (h.first != null && (out.first == null || h.first < out.first)) out.first = h.first;
      if (growth[id]) out.growth = true;
      if (firstNF && firstNF.module === id) out.firstNF = true;
    });
    return out;
  }
  function fmtNum(v) { if (v == null) return '?'; var a = Math.abs(v); return a !== 0 && (a >= 1e5 || a < 1e-3) ? v.toExponential(2) : String(+v.toPrecision(4)); }
  function healthText(h) { return h.non_finite ? 'NaN/Inf @' + h.first : '|x|≤' + fmtNum(h.abs_max); }
  function healthClass(h) { return h.non_finite ? 'bad' : h.growth ? 'warn' : 'ok'; }
  function healthTitle(h) {
    return (h.firstNF ? 'the first module whose output went non-finite (step ' + firstNF.step + ') · ' : '') +
      (h.non_finite ? fmtInt(h.non_finite) + ' non-finite values recorded, first at step ' + h.first + ' · ' : 'finite on every sample · ') +
      'abs-max ' + fmtNum(h.abs_max) + ', RMS ' + fmtNum(h.rms) + ' (worst over ' + fmtInt(h.samples) + ' samples)' +
      (h.growth ? ' · named by an activation-growth finding' : '');
  }
  function shareText(r) { var n = rowParams(r); if (n == null || !TOTAL) return ''; var f = n / TOTAL; return f >= 0.9995 ? '100%' : (f * 100).toFixed(f < 0.01 ? 2 : 1) + '%'; }
  function INIT_ARCH() {
    archTable = new VTable($('arch-tree'), [
      { key: 'name', label: 'Name', flex: true, measure: function (r, M) {
          var w = r.depth * 18 + 14 + M(r.kind === 'parameter' ? 'param' : r.kind, 'kind') + 18 + M(nameOf(r));
          flagsOf(r).forEach(function (f) { w += M(f, 'flag') + 16; });
          return w;
        }, render: function (r, d) {
          d.style.paddingLeft = (6 + r.depth * 18) + 'px';
          var tw = el('span', 'tw', r.has ? (isOpen(r) ? '▾' : '▸') : ''); d.appendChild(tw);
          var kl = { component: 'component', family: 'family', parameter: 'param', module: 'module' }[r.kind];
          d.appendChild(el('span', 'kind ' + kl, r.kind === 'parameter' ? 'param' : r.kind));
          d.appendChild(document.createTextNode(nameOf(r)));
          flagsOf(r).forEach(function (f) { d.appendChild(el('span', 'flag', f)); });
          d.title = r.o.prefix || r.o.key || '';
        } },
      // A long symbolic shape wraps (its row grows) rather than push the figures and keys off screen.
      { key: 'shape', label: 'Shape', w: 150, cls: 'mono', wrap: true, render: txt(function (r) { return r.kind === 'parameter' ? (r.o.shape ? shapeStr(r.o.shape) : (r.o.symbolic_shape ? shapeStr(r.o.symbolic_shape) : '?')) : ''; }) },
      { key: 'n', label: '#Params', w: 110, num: true, compact: true, render: txt(function (r, compact) { var n = rowParams(r); return n == null ? '?' : (compact ? fmtCompact(n) : fmtInt(n)) + (r.o._unk ? '+?' : ''); },
          function (r) { var n = rowParams(r); return n == null ? 'unknown' : fmtInt(n) + (r.o._unk ? ' + unknown' : '') + ' parameters'; }) },
      { key: 'share', label: 'Share', w: 110, measure: function (r, M) { var t = shareText(r); return t ? SHARE_BAR + 6 + M(t) : 0; },
        render: function (r, d) { var t = shareText(r); if (!t) return; var b = el('span', 'bar'); b.style.width = Math.max(1, Math.round(rowParams(r) / TOTAL * SHARE_BAR)) + 'px'; d.appendChild(b); d.appendChild(document.createTextNode(t)); d.title = t + ' of ' + fmtInt(TOTAL) + ' parameters'; } },
      MT.length ? { key: 'time', label: 'Time', w: 130, measure: function (r, M) { var t = timeOf(r); return t ? SHARE_BAR + 6 + M(fmtNs(t.total_ns)) : 0; },
        render: function (r, d) { var t = timeOf(r); if (!t) return; var b = el('span', 'bar heat'); b.style.width = Math.max(1, Math.min(SHARE_BAR, Math.round(t.total_ns / (maxTime || 1) * SHARE_BAR))) + 'px'; d.appendChild(b); d.appendChild(document.createTextNode(fmtNs(t.total_ns))); d.title = timeTitle(t); } } : null,
      MS.length ? { key: 'health', label: 'Health', w: 130, measure: function (r, M) { var h = healthOf(r); return h ? 14 + M(healthText(h)) + (h.firstNF ? M('first non-finite', 'flag') + 16 : 0) : 0; },
        render: function (r, d) { var h = healthOf(r); if (!h) return; d.appendChild(el('span', 'dot ' + healthClass(h))); d.appendChild(document.createTextNode(healthText(h))); if (h.firstNF) d.appendChild(el('span', 'flag', 'first non-finite')); d.title = healthTitle(h); } } : null,
      { key: 'type', label: 'Type', w: 160, render: txt(function (r) { return r.kind === 'parameter' ? (r.o.dtype || '') : r.o.type || ''; }) , cls: 'mono' },
      { key: 'prefix', label: 'Prefix / key', w: 220, cls: 'mono', render: txt(function (r) { return r.kind === 'parameter' ? r.o.key : r.o.prefix || ''; }) }
    ].filter(Boolean), { key: function (r) { return r.o.id; }, noSort: true, role: 'treeitem', click: function (r, ev) {
      if (r.has && (ev.target.classList.contains('tw') || ev.detail === 2 || r.kind === 'family' || !isOpen(r) && st.sel === r.o.id)) toggle(r);
      select(r.o.id, { from: 'tree' });
    } });
    function isOpen(r) { return r.kind === 'component' ? open[r.o.id] !== false : !!open[r.o.id]; }
    function toggle(r) { if (r.kind === 'component') open[r.o.id] = open[r.o.id] === false; else open[r.o.id] = !open[r.o.id]; rebuildTree(); }
    archTable.isOpen = isOpen;
    // Open the roots and the containers of repeated families, so the folded family is on screen.
    roots.forEach(function (m) { open[m.id] = true; });
    P.modules.forEach(function (m) { if (m._kids.length > 1 && m._kids.every(function (k) { return /^\d+$/.test(String(k.name)); })) for (var a = m; a; a = a.parent != null ? byId.get(a.parent) : null) open[a.id] = true; });
    $('arch-expand').onclick = function () { P.modules.forEach(function (m) { open[m.id] = true; }); Object.keys(famMap).forEach(function (f) { open[f] = true; }); rebuildTree(); };
    $('arch-collapse').onclick = function () { open = Object.create(null); rebuildTree(); };
    $('arch-tree').addEventListener('keydown', function (e) {
      var rows = archTable.rows, i = -1; for (var k = 0; k < rows.length; k++) if (rows[k].o.id === st.sel) i = k;
      if (e.key === 'ArrowDown' && i + 1 < rows.length) select(rows[i + 1].o.id, { from: 'tree' });
      else if (e.key === 'ArrowUp' && i > 0) select(rows[i - 1].o.id, { from: 'tree' });
      else if ((e.key === 'ArrowRight' || e.key === 'Enter') && i >= 0 && rows[i].has && !isOpen(rows[i])) toggle(rows[i]);
      else if (e.key === 'ArrowLeft' && i >= 0 && isOpen(rows[i])) toggle(rows[i]);
      else return;
      e.preventDefault();
    });
    rebuildTree();
  }
  function rebuildTree() {
    archTable.setRows(flatten());
    $('arch-stat').textContent = fmtInt(P.modules.length) + ' modules · ' + fmtInt(P.parameters.length) + ' parameters · ' + fmtInt(TOTAL) + ' weights' + (roots.some(function (m) { return m._unk; }) ? ' + unknown' : '');
  }
  function revealInTree(id) {
    var o = byId.get(id) || famMap[id]; if (!o) return;
    var m = o._kind === 'parameter' ? byId.get(o.module) : o;
    var chain = [];
    while (m) {
      if (m._family) { open[m._family] = true; open['inst:' + m._family] = famMap[m._family].members.indexOf(m); }
      chain.push(m); m = m.parent != null ? byId.get(m.parent) : null;
    }
    chain.forEach(function (x) { if (x.id !== id) open[x.id] = true; });
    if (o.component) open[o.component] = true;
    if (!archTable) return;
    rebuildTree(); archTable.reveal(id);
  }

  // ---------- dataflow: group tree ----------
  var G = null, lay = Object.create(null), expanded = Object.create(null), heat = false;
  var fnSel = $('df-fn'), phSel = $('df-phase');
  function opGroupPath(o) { return o.module || ''; }
  // Groups are built lazily: a group knows the ops beneath it (`all`) and is split into child
  // groups, direct ops and aggregated edges only when something needs its contents (it is
  // expanded, inspected or on the way to a selected op). The first view of a 60k-op graph thus
  // partitions a handful of groups instead of building every one of them up front.
  var passN = 0;
  function mkGroup(path, parent) {
    var i = path.lastIndexOf('.'), seg = path.slice(i + 1);
    var base = !parent ? ((P.model && P.model.name) || 'model') : /^\d+$/.test(seg) && parent.path ? (parent.base || parent.name) + '.' + seg : seg;
    var g = { id: 'g:' + path, path: path, name: base, base: base,
      parent: parent, all: [], kids: null, ops: null, kidMap: null, edges: null, nOps: 0, ns: 0, depth: parent ? parent.depth + 1 : 0, _kind: 'group' };
    // A family of module instances (`model.layers` holding `layers.0 … layers.31`) reads folded.
    var fam = G.fams && G.fams[path];
    if (fam) { g.fam = fam; g.name = base + '.{i} × ' + fam; }
    // A module instance with a scope of its own shows that scope's time, as the Architecture tree
    // and the Profile view do; its operations' times are not added to it (they are keyed by the
    // static op, summed over every instance, and lie inside the scope anyway).
    if (G.moduleNs && G.moduleNs[path] != null) { g.ns = G.moduleNs[path]; g.scoped = true; }
    G.groups.set(path, g); byId.set(g.id, g);
    return g;
  }
  function opNs(o) { return o.timing ? o.timing.total_ns || 0 : 0; }
  // Splits g into child groups (by the next segment of the op's module path) and direct ops.
  // groupEdges(g) aggregates the op→op edges whose ends lie in different children of g (edges
  // inside one child belong to that child; edges leaving g belong to an ancestor).
  function partition(g) {
    if (g.kids) return g;
    var pre = g.path ? g.path + '.' : '', L = pre.length, km = new Map(), kids = [], direct = [];
    g.all.forEach(function (o) {
      var m = o.module || '', c;
      if (m === g.path) { direct.push(o); return; }
      var j = m.indexOf('.', L), seg = j < 0 ? m.slice(L) : m.slice(L, j);
      c = km.get(seg);
      if (!c) { c = mkGroup(pre + seg, g); km.set(seg, c); kids.push(c); }
      c.all.push(o); c.nOps++; if (!c.scoped) c.ns += opNs(o);
    });
    g.kids = kids; g.ops = direct; g.kidMap = km; g.edges = null;
    return g;
  }
  // g's aggregated edges, computed the first time they are needed (g is laid out or inspected):
  // a group that is split only to count its children (the first view's budget, a path on the
  // way to a selection) never walks its operations' inputs; on the 67k-op report that spared
  // pass over every operation was 10-15 % of the first view.
  // Once the first view has painted and the tree part is in, the biggest closed groups on screen
  // get their edges ready, so the likely first double-click does not walk 67k operations, and
  // their children's box sizes (measuring the figures of 4,200 layers' boxes took 30 ms of it).
  function prewarmEdges() {
    vis.filter(function (v) { return !v.open && v.n._kind === 'group' && v.n.nOps > 1; })
      .sort(function (a, b) { return b.n.nOps - a.n.nOps; }).slice(0, 3).forEach(function (v) { groupEdges(v.n); v.n.kids.forEach(nodeSize); });
    mark('edges-prewarmed');
  }
  function groupEdges(g) {
    partition(g);
    if (g.edges) return g.edges;
    var pass = ++passN, L = g.path ? g.path.length + 1 : 0, km = g.kidMap;
    g.all.forEach(function (o) {
      var m = o.module || ''; o._pass = pass;
      if (m === g.path) { o._c = o; return; }
      var j = m.indexOf('.', L); o._c = km.get(j < 0 ? m.slice(L) : m.slice(L, j));
    });
    var agg = new Map(), edges = new Map();
    g.all.forEach(function (o) {
      var ss = srcsOf(o);
      for (var k = 0; k < ss.length; k++) {
        var src = ss[k][0], tid = ss[k][1], t = byId.get(tid);
        if (!src || src === o || src._pass !== pass || src._c === o._c) continue;
        var a = src._c, b = o._c, row = agg.get(a) || (agg.set(a, new Map()), agg.get(a)), e = row.get(b);
        if (!e) { e = { f: a.id, t: b.id, n: 0, tensor: tid, sev: false, dtc: false }; row.set(b, e); edges.set(e.f + '\u0000' + e.t, e); }
        e.n++; if (t && (t.grad === 'severed' || t.severed)) e.sev = true; if (t && t.dtype_conflict) e.dtc = true;
      }
    });
    return (g.edges = edges);
  }
  // The group holding op `o` (undefined when the op is not in the current graph), or the group
  // at `path`; both split the groups on the way down.
  function groupAt(path) {
    var g = G.groups.get(path); if (g) return g;
    var i = path.lastIndexOf('.'), parent = path ? groupAt(i < 0 ? '' : path.slice(0, i)) : null;
    return parent ? partition(parent).kidMap.get(path.slice(i + 1)) : undefined;
  }
  function lookup(id) { id = graphId(id); return byId.get(id) || famMap[id] || (G && /^g:/.test(id) ? groupAt(id.slice(2)) : undefined); }
  function groupOfOp(o) { return o && o._graph === G.stamp ? groupAt(o.module || '') : undefined; }
  // ---------- dataflow: module instances ----------
  // `instance_calls` is the entrypoint's run along the module tree: one record per call of a
  // module instance, a family's (32 layers) once with its `count`, each listing the static
  // operations run in its own frame. The payload sends that template once; here it is unrolled
  // into one frame per concrete instance (`model.layers.3.self_attn`) and one node per operation
  // and frame. A node keeps the static op as its prototype (so its rules, shape, timing read as
  // the op's), `static` = the op id and `instance` = the instance path; its id is
  // `<static id>@<instance path>`. Grouping by instance path gives the module boxes.
  var IC = P.instance_calls || [], IC_BY = Object.create(null), UNROLL_MAX = 4096;
  IC.forEach(function (c, i) { (IC_BY[c.entrypoint] || (IC_BY[c.entrypoint] = [])).push(i); });
  function srcsOf(o) {
    if (o.hasOwnProperty('_srcs')) return o._srcs;
    var out = [], ins = o.inputs;
    if (ins) for (var k = 0; k < ins.length; k++) { var t = byId.get(ins[k]), src = t && t._producer && byId.get(t._producer); if (src) out.push([src, ins[k]]); }
    o._srcs = out; return out;
  }
  function unroll(fn) {
    var idx = IC_BY[fn]; if (!idx || !idx.length) return null;
    var kidsOf = new Map(), tops = [];
    idx.forEach(function (i) { var c = IC[i], p = c.parent; if (p != null && IC[p] && IC[p].entrypoint === fn) { if (!kidsOf.has(p)) kidsOf.set(p, []); kidsOf.get(p).push(i); } else tops.push(i); });
    var frames = [], fams = Object.create(null), virt = new Map(), ops = [], listed = new Set(), ids = Object.create(null);
    function mkFrame(ci, path, k, n, pf) {
      var c = IC[ci], F = { ci: ci, call: c, path: path, tpl: c.path, k: k, n: n, parent: pf, kids: [], own: new Map(), sub: null };
      frames.push(F); if (pf) pf.kids.push(F);
      (c.ops || []).forEach(function (oi) { var s = P.operations[oi]; if (!s) return; listed.add(s); addNode(s, F, c.op_shapes && c.op_shapes[oi]); });
      (kidsOf.get(ci) || []).forEach(function (ch) { walk(ch, F); });
      return F;
    }
    // `shape`: the operation's output shape in this call where the payload says it differs from
    // its tensor's own (the root's dimension names and sizes, not the helper's).
    function addNode(s, F, shape) {
      var id = s.id + '@' + F.path, n = ids[id] = (ids[id] || 0) + 1; if (n > 1) id += '#' + (n - 1);
      var v = Object.create(s); v.id = id; v.module = F.path; v.static = s.id; v.instance = F.path; v._frame = F; v._kind = 'operation';
      if (shape !== undefined) v.callShape = shape;
      byId.set(id, v); F.own.set(s.id, v); ops.push(v);
      if (!virt.has(s.id)) virt.set(s.id, []); virt.get(s.id).push(v);
    }
    function walk(ci, pf) {
      var c = IC[ci], base = c.path;
      // The parent's indices carry into its children: `model.layers.{i}.mlp` under layers.3.
      if (pf && pf.tpl && base.indexOf(pf.tpl) === 0 && (base.length === pf.tpl.length || base[pf.tpl.length] === '.')) base = pf.path + base.slice(pf.tpl.length);
      var m = /\{[^}.]*\}/.exec(base), n = c.count;
      if (m && n != null && n >= 1 && n <= UNROLL_MAX) {
        var fp = base.slice(0, m.index).replace(/\.$/, '');
        fams[fp] = n;
        for (var k = 0; k < n; k++) mkFrame(ci, base.slice(0, m.index) + k + base.slice(m.index + m[0].length), k, n, pf);
      } else mkFrame(ci, base, 0, 1, pf);
    }
    tops.forEach(function (i) { walk(i, null); });
    if (!frames.length) return null;
    // Operations of the function that no call lists stay in the run's own frame.
    var root = frames[0];
    P.operations.forEach(function (s) { if (s.function === fn && !listed.has(s)) addNode(s, root); });
    // Every static op beneath a frame (the last instance of a family wins: a loop's result).
    for (var fi = frames.length - 1; fi >= 0; fi--) {
      var F = frames[fi], sub = new Map(F.own);
      F.kids.forEach(function (ch) { ch.sub.forEach(function (v, key) { if (!F.own.has(key)) sub.set(key, v); }); });
      F.sub = sub;
    }
    function helperOf(F, fnId) {
      if (!F.fns) { F.fns = Object.create(null); F.own.forEach(function (v) { if (v.function) F.fns[v.function] = true; }); }
      return !!F.fns[fnId];
    }
    function under(v, F) { for (var a = v._frame; a; a = a.parent) if (a === F) return true; return false; }
    function resolve(F, opId) { for (var a = F; a; a = a.parent) { var v = a.sub.get(opId); if (v) return v; } return null; }
    // A call's own call-site op: the op in the parent's frame that the call's result flows into.
    function callOp(F) { var cs = F.call.call_site; return cs && F.parent ? F.parent.own.get(cs) : null; }
    // What a call of an inlined method returns (its call-site input produced inside the call).
    function retOf(F) {
      if (F.ret !== undefined) return F.ret;
      return (F.ret = retOf0(F));
    }
    function retOf0(F) {
      var c = callOp(F); if (!c) return null;
      var ins = c.inputs || [];
      for (var i = 0; i < ins.length; i++) { var t = byId.get(ins[i]), v = t && t._producer && F.sub.get(t._producer); if (v) return [v, ins[i]]; }
      // A call site that does not list its callee's result: the one operation of the call's own
      // frame whose output nothing else in the call reads.
      var used = new Set(), sinks = [];
      F.sub.forEach(function (v) { (v.inputs || []).forEach(function (tid) { used.add(tid); }); });
      F.own.forEach(function (v) { var o = (v.outputs || [])[0]; if (o && !used.has(o)) sinks.push([v, o]); });
      return sinks.length === 1 ? sinks[0] : null;
    }
    // What enters a call from outside: in a family after the first instance, the previous
    // instance's result (the loop's order); else the tensors its call site passes (call-site inputs
    // not produced inside the call; one that no operation produces enters the caller in turn).
    function inlinedFrame(F, fnId) {
      for (var a = F; a; a = a.parent) if (fnId && a.call.function === fnId) return a;
      for (var b = F; b; b = b.parent) if (b.call.function) return b;
      return null;
    }
    function entryOf(F, depth) {
      if (!F || depth > 64) return [];
      if (F.entry) return F.entry;
      var out = [];
      if (F.k > 0 && F.sibs) { var r = retOf(F.sibs[F.k - 1]); if (r) out.push(r); }
      else {
        var c = callOp(F);
        if (c) (c.inputs || []).forEach(function (tid) {
          var t = byId.get(tid);
          if (t && t._producer) { if (F.sub.has(t._producer)) return; var v = resolve(c._frame, t._producer); if (v) out.push([v, tid]); }
          else if (!t || t.role === 'input') entryOf(inlinedFrame(c._frame, t && t.function), depth + 1).forEach(function (x) { out.push(x); });
        });
      }
      F.entry = out; return out;
    }
    var sibs = new Map();
    frames.forEach(function (F) { if (F.n > 1 && F.parent) { var key = F.parent.path + '\u0000' + F.ci; if (!sibs.has(key)) sibs.set(key, []); sibs.get(key).push(F); F.sibs = sibs.get(key); } });
    ops.forEach(function (v) {
      var F = v._frame, ins = v.inputs || [], out = [];
      // The call-site op of an unrolled inlined call receives only the call's result.
      var child = null;
      F.kids.forEach(function (ch) { if (ch.call.function && ch.call.call_site === v.static) child = ch; });
      for (var i = 0; i < ins.length; i++) {
        var t = byId.get(ins[i]);
        if (t && t._producer) {
          var src = child && child.sub.get(t._producer) || resolve(F, t._producer);
          if (src && child && !under(src, child) && !(child.sibs && child.sibs.some(function (s) { return under(src, s); }))) continue;
          if (src) out.push([src, ins[i]]);
        } else if (!t || t.role === 'input') {
          // No operation produces it: a tensor parameter of the inlined method (of this call or
          // of a wrapper around it), i.e. what enters the call; drawn when that is one tensor. A
          // parameter of a helper run inside this frame (`apply_rotary_emb(q)`) is left unlinked.
          var A = inlinedFrame(F, t && t.function);
          if (!A || t && A.call.function !== t.function && helperOf(F, t.function)) continue;
          var a = entryOf(A, 0); if (a.length === 1) out.push(a[0]);
        }
      }
      if (child && !out.some(function (x) { return under(x[0], child); })) { var r = retOf(child); if (r) out.push(r); }
      v._srcs = out;
    });
    // A call site reads as the instance it calls, by its field (`embed_tokens.forward`,
    // `layers.{i}.forward`; the whole path is in the inspector), not as a bare `forward`.
    frames.forEach(function (F) {
      F.kids.forEach(function (ch) {
        var cs = ch.call.call_site, v = cs && F.own.get(cs); if (!v || v.callee) return;
        var segs = String(ch.call.path || '').split('.').filter(Boolean), n = segs.length && /^(\{[^}]*\}|\d+)$/.test(segs[segs.length - 1]) ? 2 : 1;
        if (segs.length) v.callee = segs.slice(-n).join('.') + '.' + (ch.call.method || 'forward');
      });
    });
    var byPath = Object.create(null); frames.forEach(function (F) { if (!byPath[F.path]) byPath[F.path] = F; });
    return { ops: ops, fams: fams, virt: virt, frames: byPath, nStatic: listed.size, nFrames: frames.length };
  }
  // In an unrolled graph a static op id stands for its instances: the first one drawn.
  function graphId(id) {
    if (!G || !G.virt || !id) return id;
    var o = byId.get(id);
    if (o && o._kind === 'operation' && o._graph !== G.stamp && G.virt.has(id)) { var vs = G.virt.get(id); for (var i = 0; i < vs.length; i++) if (vs[i]._graph === G.stamp) return vs[i].id; }
    if (!o && G.unrolled && id.indexOf(':') < 0 && groupAt(id)) return 'g:' + id;  // an instance path
    return id;
  }
  var EXPAND_ALL_MAX = 3000;
  function buildGraph() {
    var fn = fnSel.value, ph = phSel.value, stamp = (G ? G.stamp : 0) + 1;
    function inPhase(o) { if (!ph) return true; var phs = o.phases || (o.phase ? [o.phase] : []); return !phs.length || phs.indexOf(ph) >= 0; }
    var U = fn ? unroll(fn) : null;
    var ops = U ? U.ops.filter(function (o) { if (!inPhase(o)) return false; o._graph = stamp; return true; }) : P.operations.filter(function (o) {
      if (fn && o.function !== fn) return false;
      if (!inPhase(o)) return false;
      o._graph = stamp;
      return true;
    });
    G = { groups: new Map(), ops: ops, stamp: stamp, unrolled: !!U, fams: U ? U.fams : null, virt: U ? U.virt : null, frames: U ? U.frames : null };
    mark('graph-ops');
    var root = G.root = mkGroup('', null), maxNs = 0, nEdges = 0;
    root.all = ops; root.nOps = ops.length;
    ops.forEach(function (o) {
      var ns = opNs(o); root.ns += ns; if (ns > maxNs) maxNs = ns;
      var ss = srcsOf(o); for (var k = 0; k < ss.length; k++) if (ss[k][0] && ss[k][0] !== o) nEdges++;
    });
    // Every group's time is at most that of its top-level ancestor: those bound the heat scale.
    partition(root).kids.forEach(function (g) { if (g.ns > maxNs) maxNs = g.ns; });
    // A group whose module instance has a scope (runtime/4 `module` records) shows that scope's
    // inclusive time, as the Architecture tree and the Profile view do, also when operations were
    // timed (their sum misses a layer's untimed work and time outside operations); the heat
    // overlay colours by it.
    if (MT.length) {
      // The slowest scope bounds the heat scale too: instance groups are made when first opened.
      var byPath = G.moduleNs = Object.create(null); MT.forEach(function (t) { if (!t.family) { byPath[t.path] = t.total_ns; if (t.total_ns > maxNs) maxNs = t.total_ns; } });
      G.groups.forEach(function (g) { if (byPath[g.path] != null) { g.ns = byPath[g.path]; if (g.ns > maxNs) maxNs = g.ns; } });
    }
    G.maxNs = maxNs; G.totalNs = root.ns;
    mark('graph-built');
    // A chain of single-child groups (model → model.layers…) opens straight away so the first
    // view shows something meaningful instead of one box.
    expanded = Object.create(null); lay = Object.create(null);
    expanded[root.id] = true;
    var shown = root.kids.length + root.ops.length, frontier = root.kids.slice();
    for (;;) {
      frontier.sort(function (a, b) { return b.nOps - a.nOps; });
      // The open box stays on screen, so it counts too; one-op wrappers are not worth opening.
      // A wrapper around a single group costs nothing to open; so does everything in a tiny graph.
      var g0 = frontier.find(function (g) { if (g.fam) return false; partition(g); var n = g.kids.length + g.ops.length; return (n > 1 || g.kids.length === 1 || root.nOps <= 24) && shown + n <= 24; });
      if (!g0) break;
      expanded[g0.id] = true; shown += g0.kids.length + g0.ops.length;
      frontier.splice(frontier.indexOf(g0), 1); frontier = frontier.concat(g0.kids);
    }
    mark('graph-opened');
    $('df-empty').hidden = ops.length > 0;
    $('df-expand').disabled = ops.length > EXPAND_ALL_MAX;
    $('df-expand').title = ops.length > EXPAND_ALL_MAX ? fmtInt(ops.length) + ' operations are too many to draw at once: expand groups one by one (double-click)' : 'Open every group';
    $('df-stat').textContent = fmtInt(ops.length) + ' ops' + (U ? ' (' + fmtInt(U.nStatic) + ' call sites in ' + fmtInt(U.nFrames) + ' module instance calls)' : '') + ' · ' + fmtInt(nEdges) + ' dataflow edges';
  }
  // An operation reads as its callee when the analysis named one ("Embedding::forward"), else as
  // the op ("matmul").
  function label(n) { return n._kind === 'group' ? n.name : (n.callee || n.name || n.op || n.id); }
  // Kept on the node while its figures stay the same: expanding one more layer re-lays out the
  // 4,200 boxes beside it, whose figures' text would otherwise be formatted again each time.
  function nodeSize(n) {
    if (n._sz && n._szOps === n.nOps && n._szNs === n.ns) return n._sz;
    n._szOps = n.nOps; n._szNs = n.ns;
    // A group's name may be clipped past 280 px, its figures (`10,029 ops · 1.20 ms`) never are.
    if (n._kind === 'group') { var l = Math.max(n.name.length, 10); return (n._sz = [Math.max(Math.min(280, 48 + l * 7.2), Math.ceil(canvasW('11px system-ui,sans-serif', groupFigures(n))) + 26), 44]); }
    var s = String(label(n)); return (n._sz = [Math.min(220, Math.max(70, 22 + s.length * 6.8)), 30]);
  }
  // Memoised: every relayout of a 4,200-child group sizes each child box by its figures' text.
  var canvasWs = new Map();
  function canvasW(font, t) {
    var key = font + '\u0000' + t, w = canvasWs.get(key);
    if (w === undefined) { if (canvasWs.size > 50000) canvasWs.clear(); measureCtx.font = font; w = measureCtx.measureText(t).width; canvasWs.set(key, w); }
    return w;
  }
  function groupFigures(n) { return fmtInt(n.nOps) + ' ops' + (n.ns ? ' · ' + fmtNs(n.ns) : ''); }
  function specFor(g) {
    partition(g);
    var nodes = [], edges = [];
    g.kids.forEach(function (k) { var s = nodeSize(k); nodes.push(expanded[k.id] ? { id: k.id, sizeFrom: k.id } : { id: k.id, w: s[0], h: s[1] }); });
    g.ops.forEach(function (o) { var s = nodeSize(o); nodes.push({ id: o.id, w: s[0], h: s[1] }); });
    groupEdges(g).forEach(function (e) { edges.push([e.f, e.t]); });
    // Instances of one call share a shape: ids relative to the group let the layout be reused.
    var rel = null;
    if (G.unrolled) {
      var L = g.path ? g.path.length + 1 : 0, seen = Object.create(null);
      rel = nodes.map(function (n) { var o = byId.get(n.id), r = o && o._kind === 'group' ? 'g:' + o.path.slice(L) : o && o.static ? o.static : n.id; if (seen[r]) r += '#' + seen[r]++; else seen[r] = 1; return r; });
    }
    return { id: g.id, rel: rel, nodes: nodes, edges: edges, minW: Math.ceil(canvasW('600 12px system-ui,sans-serif', '▾ ' + g.name + '  ·  ' + fmtInt(g.nOps) + ' ops')) + 26 };
  }
  // ---------- worker ----------
  // A batch of a few hundred boxes (the first view, one more layer) is laid out at once on the
  // page's own thread: a few ms of dagre, where the round trip to a worker (and, the first time,
  // starting it and compiling dagre there) costs hundreds on a loaded machine. Bigger batches go
  // to the worker, which is started the first time one does, so the page stays responsive.
  var worker, jobs = {}, jobN = 0, SYNC_LAYOUT_MAX = 300, SYNC_LAYERED_MAX = 20000;
  function layoutWorker() {
    if (worker !== undefined) return worker;
    try {
      var wsrc = $('cg-worker').textContent;
      worker = new Worker(URL.createObjectURL(new Blob([wsrc], { type: 'text/javascript' })));
      worker.onmessage = function (ev) { var cb = jobs[ev.data.job]; delete jobs[ev.data.job]; if (cb) cb(ev.data.layouts); };
      worker.onerror = function () { worker = null; };
    } catch (e) { worker = null; }
    return worker;
  }
  function runLayout(specs, sizes, cb) {
    // Only dagre's boxes weigh: the linear-time layered layout of a group above CG_DAGRE_MAX
    // (the 4,200 layers of a 67k-op report) takes a few ms here, where sending it to the worker
    // and back (cloning every box and edge both ways) cost 100-200 ms under load.
    var n = 0, nl = 0; specs.forEach(function (s) { if (s.nodes.length > CG_DAGRE_MAX) nl += s.nodes.length; else n += s.nodes.length; });
    var w = n > SYNC_LAYOUT_MAX || nl > SYNC_LAYERED_MAX ? layoutWorker() : null;
    if (w) { var j = ++jobN; jobs[j] = cb; w.postMessage({ job: j, specs: specs, sizes: sizes }); return; }
    var out = {}; specs.forEach(function (s) { out[s.id] = cgLayoutSpec(s, sizes); }); cb(out);
  }
  // Lays out `from` (if it is not laid out yet) and every expanded ancestor, bottom-up; all other
  // expanded groups keep their cached layouts and sizes.
  var pending = 0;
  function relayout(groupsToDo, cb) {
    var todo = [], seen = Object.create(null);
    function add(g) { if (seen[g.id]) return; seen[g.id] = true; partition(g).kids.forEach(function (k) { if (expanded[k.id] && !lay[k.id]) add(k); }); todo.push(g); }
    groupsToDo.forEach(function (g) { add(g); for (var p = g.parent; p; p = p.parent) { /* ancestors after */ } });
    var anc = []; groupsToDo.forEach(function (g) { for (var p = g.parent; p; p = p.parent) anc.push(p); });
    anc.sort(function (a, b) { return b.depth - a.depth; }).forEach(function (p) { if (!seen[p.id]) { seen[p.id] = true; todo.push(p); } else { todo.splice(todo.indexOf(p), 1); todo.push(p); } });
    todo.sort(function (a, b) { return b.depth - a.depth; });
    var sizes = {}; Object.keys(lay).forEach(function (k) { sizes[k] = { w: lay[k].w, h: lay[k].h + CG_HEADER }; });
    var tl0 = performance.now(); pending++; $('busy').hidden = false;
    runLayout(todo.map(specFor), sizes, function (out) {
      MARKS.lastLayoutRoundTrip = performance.now() - tl0; Object.keys(out).forEach(function (k) { lay[k] = out[k]; });
      if (--pending === 0) $('busy').hidden = true;
      var tp = performance.now(); place(); draw(); MARKS.lastPlaceDraw = performance.now() - tp; if (cb) cb();
    });
  }
  // Absolute positions of everything visible (expanded groups recursively).
  var vis = [], visEdges = [], absPos = Object.create(null), placeN = 0;
  function place() {
    vis = []; visEdges = []; absPos = Object.create(null); placeN++;
    var rl = lay[G.root.id]; if (!rl) return;
    function walk(g, ox, oy) {
      var L = lay[g.id]; if (!L) return;
      // Each edge keeps its bounds (graph units), so a frame skips the ones off screen: with the
      // 4,200 layers open nearly all of them are.
      L.edges.forEach(function (e) {
        var a = g.edges && g.edges.get(e.f + '\u0000' + e.t), p = e.pts, bx0 = Infinity, by0 = Infinity, bx1 = -Infinity, by1 = -Infinity;
        for (var j = 0; j + 1 < p.length; j += 2) { if (p[j] < bx0) bx0 = p[j]; if (p[j] > bx1) bx1 = p[j]; if (p[j + 1] < by0) by0 = p[j + 1]; if (p[j + 1] > by1) by1 = p[j + 1]; }
        visEdges.push({ ox: ox, oy: oy, pts: p, agg: a, bx0: ox + bx0, by0: oy + by0, bx1: ox + bx1, by1: oy + by1 });
      });
      Object.keys(L.pos).forEach(function (id) {
        var p = L.pos[id], n = byId.get(id), x = ox + p[0], y = oy + p[1];
        var ex = n._kind === 'group' && expanded[n.id] && lay[n.id];
        var v = { n: n, x: x, y: y, w: p[2], h: p[3], open: !!ex };
        vis.push(v); absPos[id] = v;
        if (ex) walk(n, x, y + CG_HEADER);
      });
    }
    walk(G.root, 0, 0);
    G.W = rl.w; G.H = rl.h;
  }
  // ---------- canvas rendering ----------
  var cv = $('graph'), ctx = cv.getContext('2d'), wrap = $('canvas-wrap'), view = { x: 0, y: 0, k: 1 }, C = {};
  function readColors() { var cs = getComputedStyle(document.documentElement); ['bg', 'panel', 'panel2', 'fg', 'muted', 'line', 'accent', 'op', 'opfill', 'grp', 'grpfill', 'edge', 'sev', 'dtype', 'sel', 'hit'].forEach(function (k) { C[k] = cs.getPropertyValue('--' + k).trim(); }); }
  readColors();
  var dpr = window.devicePixelRatio || 1;
  function resize() { var r = wrap.getBoundingClientRect(), cw = Math.max(1, Math.floor(r.width * dpr)), ch = Math.max(1, Math.floor(r.height * dpr)); if (cv.width !== cw) cv.width = cw; if (cv.height !== ch) cv.height = ch;  /* assigning a canvas' size reallocates it, even when unchanged */ cv.style.width = r.width + 'px'; cv.style.height = r.height + 'px'; draw(); }
  window.addEventListener('resize', function () { if (st.view === 'dataflow') resize(); });
  // What the heat overlay colours a box by: a group's time (its module scope's when it has one), an
  // operation's own; null when untimed (drawn grey).
  function heatNs(n) { var ns = n._kind === 'group' ? n.ns : n.timing ? n.timing.total_ns : 0; return ns || null; }
  function heatFill(n) { var ns = heatNs(n); return ns ? heatColor(Math.sqrt(ns / (G.maxNs || 1))) : null; }
  function heatColor(f) { f = Math.max(0, Math.min(1, f)); var h = 220 - 220 * f, l = document.documentElement.dataset.theme === 'dark' ? 38 : 62; return 'hsl(' + h + ',85%,' + l + '%)'; }
  var hover = null, matchSet = Object.create(null);
  function roundRect(x, y, w, h, r) { ctx.beginPath(); ctx.moveTo(x + r, y); ctx.arcTo(x + w, y, x + w, y + h, r); ctx.arcTo(x + w, y + h, x, y + h, r); ctx.arcTo(x, y + h, x, y, r); ctx.arcTo(x, y, x + w, y, r); ctx.closePath(); }
  // ---------- edge labels ----------
  // Each edge's label (the tensor's shape and dtype, `×n` for parallel tensors) is placed where it
  // overlaps no other label, no operation or closed group, no open group's header and no group
  // border: the first free spot among points along the edge (its middle first, then out towards
  // both ends), beside the line (right, then left, of a vertical stretch; above, then below, a
  // horizontal one). A label with no free spot is left out (the inspector lists every input and
  // output). The selected node's edges are placed first, then severed-gradient and dtype-conflict
  // edges, then the rest in drawing order. Placement is in graph units, so it holds at any zoom;
  // it is redone when the layout or the selection changes.
  var LABEL_FONT = '10px ui-monospace,monospace', LABEL_H = 13, LABEL_PAD = 2, LABEL_GAP = 3, GRID = 64;
  var labelWs = Object.create(null), placedLabels = [], placedKey = '', obstacles = null, obstaclesN = -1, drawnLabels = [];
  var LABEL_AT = [0.5, 0.38, 0.62, 0.26, 0.74, 0.14, 0.86];
  function edgeLabel(e) {
    if (e.lbl !== undefined) return e.lbl;
    var a = e.agg, t = a && byId.get(a.tensor), s = t && outShape(a.f && byId.get(a.f), a.tensor), l = t ? [s ? shapeStr(s) : '', t.dtype || ''].join(' ').trim() : '';
    if (a && a.n > 1) l += (l ? ' ' : '') + '×' + a.n;
    return (e.lbl = l);
  }
  // Tensor `tid`'s shape as operation node `v` (an instance of a module) produced it: the call's
  // own shape where the payload gives one, else the tensor's.
  function outShape(v, tid) {
    if (v && v.callShape !== undefined && (v.outputs || [])[0] === tid) return v.callShape;
    var t = byId.get(tid); return t ? t.shape : null;
  }
  function labelW(t) { var w = labelWs[t]; return w != null ? w : (labelWs[t] = Math.ceil(canvasW(LABEL_FONT, t)) + 2 * LABEL_PAD); }
  function gridAdd(grid, r, item) {
    for (var cx = Math.floor(r[0] / GRID), cx1 = Math.floor((r[0] + r[2]) / GRID); cx <= cx1; cx++)
      for (var cy = Math.floor(r[1] / GRID), cy1 = Math.floor((r[1] + r[3]) / GRID); cy <= cy1; cy++) {
        var key = cx * 4194304 + cy, b = grid.get(key); if (b) b.push(item); else grid.set(key, [item]);
      }
  }
  function gridHits(grid, r) {
    for (var cx = Math.floor(r[0] / GRID), cx1 = Math.floor((r[0] + r[2]) / GRID); cx <= cx1; cx++)
      for (var cy = Math.floor(r[1] / GRID), cy1 = Math.floor((r[1] + r[3]) / GRID); cy <= cy1; cy++) {
        var b = grid.get(cx * 4194304 + cy); if (!b) continue;
        for (var i = 0; i < b.length; i++) { var o = b[i]; if (r[0] < o[0] + o[2] && o[0] < r[0] + r[2] && r[1] < o[1] + o[3] && o[1] < r[1] + r[3]) return true; }
      }
    return false;
  }
  function labelObstacles() {
    if (obstaclesN === placeN) return obstacles;
    var g = new Map();
    vis.forEach(function (v) {
      if (!v.open) { gridAdd(g, [v.x, v.y, v.w, v.h], [v.x, v.y, v.w, v.h]); return; }
      var parts = [[v.x, v.y, v.w, CG_HEADER], [v.x - 1, v.y, 2, v.h], [v.x + v.w - 1, v.y, 2, v.h], [v.x, v.y + v.h - 1, v.w, 2]];
      parts.forEach(function (r) { gridAdd(g, r, r); });
    });
    obstaclesN = placeN; return (obstacles = g);
  }
  // On a graph with more than LABEL_ALL_MAX edges drawn (a 4200-child group open), labels are
  // placed only around the viewport (the view and one view's size on each side), and again
  // when the view leaves that area: placing 4,200 labels took 230 ms under load.
  var LABEL_ALL_MAX = 2000, placedArea = null;
  function labelArea(vx0, vy0, vx1, vy1) {
    if (visEdges.length <= LABEL_ALL_MAX) return null;
    var a = placedArea;
    if (a && placedKey.indexOf(placeN + '\u0000') === 0 && vx0 >= a[0] && vy0 >= a[1] && vx1 <= a[2] && vy1 <= a[3]) return a;
    var w = vx1 - vx0, h = vy1 - vy0;
    return [vx0 - w, vy0 - h, vx1 + w, vy1 + h];
  }
  function placeLabels(area) {
    var key = placeN + '\u0000' + (st.sel || '') + '\u0000' + (area ? area.join(',') : '');
    if (placedKey === key) return placedLabels;
    var tl = performance.now(), obs = labelObstacles(), mine = new Map(), out = [], order = [];
    visEdges.forEach(function (e, i) {
      if (!e.agg || e.pts.length < 4 || !edgeLabel(e)) return;
      if (area) {
        var p = e.pts, ex0 = Infinity, ey0 = Infinity, ex1 = -Infinity, ey1 = -Infinity;
        for (var j = 0; j < p.length; j += 2) { ex0 = Math.min(ex0, p[j]); ex1 = Math.max(ex1, p[j]); ey0 = Math.min(ey0, p[j + 1]); ey1 = Math.max(ey1, p[j + 1]); }
        if (e.ox + ex1 < area[0] || e.ox + ex0 > area[2] || e.oy + ey1 < area[1] || e.oy + ey0 > area[3]) return;
      }
      var on = !!(st.sel && (e.agg.f === st.sel || e.agg.t === st.sel || e.agg.tensor === st.sel));
      order.push([on ? 0 : e.agg.sev || e.agg.dtc ? 1 : 2, i, e, on]);
    });
    order.sort(function (a, b) { return a[0] - b[0] || a[1] - b[1]; });
    order.forEach(function (o) {
      var e = o[2], r = labelSpot(e, edgeLabel(e), obs, mine);
      if (!r) return;
      var L = { text: e.lbl, r: r, on: o[3], e: e }; gridAdd(mine, r, r); out.push(L);
    });
    placedKey = key; placedLabels = out; placedArea = area; MARKS.lastLabels = performance.now() - tl;
    return out;
  }
  // A frame whose labels are not placed yet is drawn without them, and the placement follows in
  // its own task (then a redraw): an expand or a zoom step never waits for it, and a frame that
  // is drawn over at once (the expand's own, before it is brought into view) costs nothing.
  var labelTimer = 0;
  function labelsFor(area) {
    var key = placeN + '\u0000' + (st.sel || '') + '\u0000' + (area ? area.join(',') : '');
    if (placedKey === key) return placedLabels;
    if (!labelTimer) labelTimer = setTimeout(function () { labelTimer = 0; placeLabelsNow = true; try { draw(); } finally { placeLabelsNow = false; } }, 0);
    return placeLabelsNow ? placeLabels(area) : null;
  }
  var placeLabelsNow = false;
  function labelSpot(e, text, obs, mine) {
    var p = e.pts, n = p.length / 2, len = [0], tot = 0, i, w = labelW(text), h = LABEL_H;
    for (i = 1; i < n; i++) { tot += Math.hypot(p[2 * i] - p[2 * i - 2], p[2 * i + 1] - p[2 * i - 1]); len.push(tot); }
    for (var c = 0; c < LABEL_AT.length; c++) {
      var d = tot * LABEL_AT[c], s = 1; while (s < n - 1 && len[s] < d) s++;
      var ax = p[2 * s - 2], ay = p[2 * s - 1], bx = p[2 * s], by = p[2 * s + 1], f = len[s] > len[s - 1] ? (d - len[s - 1]) / (len[s] - len[s - 1]) : 0;
      var x = e.ox + ax + (bx - ax) * f, y = e.oy + ay + (by - ay) * f;
      var cands = Math.abs(by - ay) >= Math.abs(bx - ax)
        ? [[x + LABEL_GAP, y - h / 2, w, h], [x - LABEL_GAP - w, y - h / 2, w, h]]
        : [[x - w / 2, y - LABEL_GAP - h, w, h], [x - w / 2, y + LABEL_GAP, w, h]];
      for (var k = 0; k < cands.length; k++) if (!gridHits(mine, cands[k]) && !gridHits(obs, cands[k])) return cands[k];
    }
    return null;
  }
  // An open group bigger than the view (the 4,200 layers open: 330,000 units tall) is filled and
  // bordered only where the view (with a margin) sees it: dashing its whole border cost more than
  // the rest of the frame. The fill is the box cut to that area (its cut corners fall outside the
  // view); the dashed border is drawn side by side and corner by corner, each piece starting at
  // the dash phase it has along the whole border, so the dashes do not slide as the view pans.
  function openBorderClipped(v, ax0, ay0, ax1, ay1) {
    var r = 10, x = v.x, y = v.y, w = v.w, h = v.h, cx0 = Math.max(x, ax0), cy0 = Math.max(y, ay0), cx1 = Math.min(x + w, ax1), cy1 = Math.min(y + h, ay1);
    if (cx1 <= cx0 || cy1 <= cy0) return;
    roundRect(cx0, cy0, cx1 - cx0, cy1 - cy0, r); ctx.fillStyle = C.grpfill; ctx.globalAlpha = 0.55; ctx.fill(); ctx.globalAlpha = 1;
    var q = Math.PI * r / 2, sw = w - 2 * r, sh = h - 2 * r, P = 9;  // P: the dash pattern's length
    ctx.setLineDash([5, 4]);
    // A straight side from (ax, ay) to (bx, by), `at` units along the border, cut to the area.
    function side(ax, ay, bx, by, at) {
      var len = Math.abs(bx - ax) + Math.abs(by - ay); if (len <= 0) return;
      var dx = (bx - ax) / len, dy = (by - ay) / len, t0 = 0, t1 = len;
      if (dx) { var u0 = (ax0 - ax) / dx, u1 = (ax1 - ax) / dx; t0 = Math.max(t0, Math.min(u0, u1)); t1 = Math.min(t1, Math.max(u0, u1)); if (ay < ay0 || ay > ay1) return; }
      else { var w0 = (ay0 - ay) / dy, w1 = (ay1 - ay) / dy; t0 = Math.max(t0, Math.min(w0, w1)); t1 = Math.min(t1, Math.max(w0, w1)); if (ax < ax0 || ax > ax1) return; }
      if (t1 <= t0) return;
      ctx.lineDashOffset = (at + t0) % P; ctx.beginPath(); ctx.moveTo(ax + dx * t0, ay + dy * t0); ctx.lineTo(ax + dx * t1, ay + dy * t1); ctx.stroke();
    }
    function corner(cx, cy, a0, at) {
      if (cx + r < ax0 || cx - r > ax1 || cy + r < ay0 || cy - r > ay1) return;
      ctx.lineDashOffset = at % P; ctx.beginPath(); ctx.arc(cx, cy, r, a0, a0 + Math.PI / 2); ctx.stroke();
    }
    side(x + r, y, x + w - r, y, 0); corner(x + w - r, y + r, -Math.PI / 2, sw);
    side(x + w, y + r, x + w, y + h - r, sw + q); corner(x + w - r, y + h - r, 0, sw + q + sh);
    side(x + w - r, y + h, x + r, y + h, sw + sh + 2 * q); corner(x + r, y + h - r, Math.PI / 2, 2 * sw + sh + 2 * q);
    side(x, y + h - r, x, y + r, 2 * sw + sh + 3 * q); corner(x + r, y + r, Math.PI, 2 * sw + 2 * sh + 3 * q);
    ctx.setLineDash([]); ctx.lineDashOffset = 0;
  }
  function draw() {
    if (!G || st.view !== 'dataflow') return;
    var W = cv.width, H = cv.height;
    ctx.setTransform(1, 0, 0, 1, 0, 0); ctx.clearRect(0, 0, W, H);
    ctx.setTransform(view.k * dpr, 0, 0, view.k * dpr, view.x * dpr, view.y * dpr);
    var x0 = -view.x / view.k, y0 = -view.y / view.k, x1 = x0 + W / dpr / view.k, y1 = y0 + H / dpr / view.k, k = view.k;
    function inView(v) { return v.x + v.w >= x0 && v.x <= x1 && v.y + v.h >= y0 && v.y <= y1; }
    // open group containers first (outer before inner: vis is pre-order)
    var bm = 16 + 8 / Math.min(k, 1);  // past the corner's radius and the border's width
    vis.forEach(function (v) {
      if (!v.open || !inView(v)) return;
      ctx.lineWidth = (st.sel === v.n.id ? 2.5 : 1.2) / Math.min(k, 1); ctx.strokeStyle = st.sel === v.n.id ? C.sel : C.grp;
      if (v.x >= x0 - bm && v.y >= y0 - bm && v.x + v.w <= x1 + bm && v.y + v.h <= y1 + bm) {
        roundRect(v.x, v.y, v.w, v.h, 10); ctx.fillStyle = C.grpfill; ctx.globalAlpha = 0.55; ctx.fill(); ctx.globalAlpha = 1;
        ctx.setLineDash([5, 4]); ctx.stroke(); ctx.setLineDash([]);
      } else openBorderClipped(v, x0 - bm, y0 - bm, x1 + bm, y1 + bm);
      if (k > 0.25) { ctx.fillStyle = C.grp; ctx.font = '600 12px system-ui,sans-serif'; ctx.textBaseline = 'middle'; var tail = '  ·  ' + fmtInt(v.n.nOps) + ' ops'; ctx.fillText(clip('▾ ' + v.n.name, v.w - 16 - ctx.measureText(tail).width) + tail, v.x + 10, v.y + 13); }
    });
    // edges
    ctx.lineWidth = 1.2 / Math.min(k, 1);
    var em = 8 / Math.min(k, 1);  // the arrowhead and the line's width reach this far past its points
    visEdges.forEach(function (e) {
      var p = e.pts; if (p.length < 4 || e.bx1 + em < x0 || e.bx0 - em > x1 || e.by1 + em < y0 || e.by0 - em > y1) return;
      var sev = e.agg && e.agg.sev, dtc = e.agg && e.agg.dtc;
      // The selected node's (or tensor's) edges stand out: its inputs and outputs at a glance.
      var on = !!(st.sel && e.agg && (e.agg.f === st.sel || e.agg.t === st.sel || e.agg.tensor === st.sel));
      ctx.strokeStyle = sev ? C.sev : dtc ? C.dtype : on ? C.sel : C.edge; ctx.setLineDash(sev ? [6, 4] : dtc ? [2, 3] : []);
      ctx.lineWidth = (sev || dtc || on ? 2.2 : 1.2) / Math.min(k, 1);
      ctx.beginPath(); ctx.moveTo(e.ox + p[0], e.oy + p[1]);
      for (var i = 2; i < p.length; i += 2) ctx.lineTo(e.ox + p[i], e.oy + p[i + 1]);
      ctx.stroke(); ctx.setLineDash([]);
      var n = p.length, tx = e.ox + p[n - 2], ty = e.oy + p[n - 1], a = Math.atan2(p[n - 1] - p[n - 3], p[n - 2] - p[n - 4]), s = 6 / Math.min(k, 1);
      ctx.fillStyle = ctx.strokeStyle; ctx.beginPath(); ctx.moveTo(tx, ty); ctx.lineTo(tx - s * Math.cos(a - 0.4), ty - s * Math.sin(a - 0.4)); ctx.lineTo(tx - s * Math.cos(a + 0.4), ty - s * Math.sin(a + 0.4)); ctx.fill();
    });
    // Edge labels, after every edge so no line runs over a label; each sits where placeLabels
    // found room for it, and one that found none is not drawn.
    drawnLabels = [];
    var LP = k > 0.9 || k > 0.4 && st.sel ? labelsFor(labelArea(x0, y0, x1, y1)) : null;
    if (LP) {
      ctx.font = LABEL_FONT; ctx.textBaseline = 'middle';
      for (var li = 0; li < LP.length; li++) {
        var L = LP[li], r = L.r;
        if (!(k > 0.9 || L.on) || r[0] + r[2] < x0 || r[0] > x1 || r[1] + r[3] < y0 || r[1] > y1) continue;
        ctx.globalAlpha = 0.85; ctx.fillStyle = C.bg; ctx.fillRect(r[0], r[1], r[2], r[3]); ctx.globalAlpha = 1;
        ctx.fillStyle = L.on ? C.sel : C.muted; ctx.fillText(L.text, r[0] + LABEL_PAD, r[1] + r[3] / 2);
        drawnLabels.push(L);
      }
    }
    // closed nodes
    vis.forEach(function (v) {
      if (v.open || !inView(v)) return;
      var n = v.n, isG = n._kind === 'group', selected = st.sel === n.id;
      roundRect(v.x, v.y, v.w, v.h, isG ? 8 : 6);
      var fill = isG ? C.grpfill : C.opfill;
      if (heat) fill = heatFill(n) || C.panel2;
      ctx.fillStyle = fill; ctx.fill();
      if (matchSet[n.id] || n.static && matchSet[n.static]) { ctx.lineWidth = 4 / Math.min(k, 1); ctx.strokeStyle = C.hit; ctx.stroke(); }
      ctx.lineWidth = (selected ? 3 : hover === v ? 2 : 1.3) / Math.min(k, 1); ctx.strokeStyle = selected ? C.sel : isG ? C.grp : C.op; ctx.stroke();
      if (isG && k > 0.3) { ctx.strokeStyle = C.grp; ctx.globalAlpha = 0.35; roundRect(v.x + 3, v.y + 3, v.w, v.h, 8); ctx.stroke(); ctx.globalAlpha = 1; }
      if (k < 0.3) return;
      ctx.fillStyle = C.fg; ctx.textBaseline = 'middle';
      if (isG) {
        ctx.font = '600 12.5px system-ui,sans-serif'; ctx.fillText(clip('▸ ' + n.name, v.w - 16), v.x + 9, v.y + 15);
        ctx.font = '11px system-ui,sans-serif'; ctx.fillStyle = C.muted; ctx.fillText(groupFigures(n), v.x + 9, v.y + 32);
      } else { ctx.font = '12px ui-monospace,monospace'; ctx.fillText(clip(String(label(n)), v.w - 14), v.x + 8, v.y + v.h / 2); }
    });
    $('z-pct').textContent = Math.round(k * 100) + '%';
    drawMini(W / dpr, H / dpr);
  }
  // Overview in the corner, shown only when the graph does not fit the view: every drawn box at
  // a scale that fits, and the viewport as a rectangle; click or drag on it to move there.
  // The boxes are drawn once per layout (and heat or theme change) into an offscreen canvas; a
  // frame copies it and draws the viewport over it (redrawing every box of the 4,200 layers on
  // each frame of a pan cost more than the frame's graph).
  var mini = $('minimap'), mctx = mini.getContext('2d'), MW = 200, MH = 130, mScale = 1, mOff = [0, 0], miniBase = null, miniKey = '';
  function drawMini(vw, vh) {
    var gw = G.W || 1, gh = G.H || 1, fits = gw * view.k <= vw + 1 && gh * view.k <= vh + 1 && view.x >= -1 && view.y >= -1 && view.x + gw * view.k <= vw + 1 && view.y + gh * view.k <= vh + 1;
    mini.hidden = fits || !vis.length; if (mini.hidden) return;
    if (mini.width !== MW * dpr) { mini.width = MW * dpr; mini.height = MH * dpr; }
    mScale = Math.min((MW - 12) / gw, (MH - 12) / gh); mOff = [(MW - gw * mScale) / 2, (MH - gh * mScale) / 2];
    var key = [placeN, G.stamp, heat, dpr, G.maxNs, C.grp, C.op, document.documentElement.dataset.theme].join('\u0000');
    if (miniKey !== key) { miniKey = key; miniBoxes(); }
    mctx.setTransform(1, 0, 0, 1, 0, 0); mctx.clearRect(0, 0, mini.width, mini.height); mctx.drawImage(miniBase, 0, 0);
    mctx.setTransform(mScale * dpr, 0, 0, mScale * dpr, mOff[0] * dpr, mOff[1] * dpr);
    mctx.strokeStyle = C.sel; mctx.lineWidth = 2 / mScale;
    mctx.strokeRect(-view.x / view.k, -view.y / view.k, vw / view.k, vh / view.k);
  }
  function miniBoxes() {
    if (!miniBase) miniBase = document.createElement('canvas');
    if (miniBase.width !== MW * dpr) { miniBase.width = MW * dpr; miniBase.height = MH * dpr; }
    var bctx = miniBase.getContext('2d');
    bctx.setTransform(1, 0, 0, 1, 0, 0); bctx.clearRect(0, 0, miniBase.width, miniBase.height);
    bctx.setTransform(mScale * dpr, 0, 0, mScale * dpr, mOff[0] * dpr, mOff[1] * dpr);
    vis.forEach(function (v) {
      if (v.open) { bctx.strokeStyle = C.grp; bctx.lineWidth = 1 / mScale; bctx.strokeRect(v.x, v.y, v.w, v.h); return; }
      bctx.fillStyle = (heat && heatFill(v.n)) || (v.n._kind === 'group' ? C.grp : C.op);
      bctx.fillRect(v.x, v.y, Math.max(v.w, 2 / mScale), Math.max(v.h, 2 / mScale));
    });
  }
  function miniMove(e) {
    var r = mini.getBoundingClientRect(), wr = wrap.getBoundingClientRect();
    var gx = (e.clientX - r.left - mOff[0]) / mScale, gy = (e.clientY - r.top - mOff[1]) / mScale;
    view.x = wr.width / 2 - gx * view.k; view.y = wr.height / 2 - gy * view.k; draw();
  }
  mini.addEventListener('pointerdown', function (e) { e.stopPropagation(); mini.setPointerCapture(e.pointerId); miniMove(e); });
  mini.addEventListener('pointermove', function (e) { e.stopPropagation(); if (mini.hasPointerCapture(e.pointerId)) miniMove(e); });
  mini.addEventListener('pointerup', function (e) { e.stopPropagation(); });
  mini.addEventListener('dblclick', function (e) { e.stopPropagation(); });
  mini.addEventListener('wheel', function (e) { e.stopPropagation(); }, { passive: true });
  function clip(s, w) { if (ctx.measureText(s).width <= w) return s; while (s.length > 2 && ctx.measureText(s + '…').width > w) s = s.slice(0, -1); return s + '…'; }
  function legend() {
    var L = $('legend'); L.replaceChildren();
    function row(sw, t) { var r = el('div', 'row'); r.appendChild(sw); r.appendChild(document.createTextNode(t)); L.appendChild(r); }
    function sw(cls, col, fill) { var s = el('span', 'sw ' + (cls || '')); s.style.borderColor = col; if (fill) s.style.background = fill; return s; }
    if (heat) {
      var b = el('span', 'heatbar'); b.style.background = 'linear-gradient(90deg,' + [0, 0.25, 0.5, 0.75, 1].map(heatColor).join(',') + ')';
      row(b, ''); var r = el('div', 'row muted'); r.textContent = '0 → ' + fmtNs(G && G.maxNs) + ' (share of time)'; L.appendChild(r);
    } else { row(sw('', C.grp, C.grpfill), 'module group (double-click)'); row(sw('', C.op, C.opfill), 'operation'); }
    row(sw('line', C.edge), 'tensor'); row(sw('line dash', C.sev), 'severed gradient'); row(sw('line dash', C.dtype), 'dtype conflict');
  }
  // ---------- view transform ----------
  function fit() {
    if (!G || !lay[G.root.id]) return;
    var r = wrap.getBoundingClientRect(), w = G.W || 1, h = G.H || 1;
    view.k = Math.max(0.02, Math.min(1, Math.min((r.width - 40) / w, (r.height - 40) / h)));
    view.x = (r.width - w * view.k) / 2; view.y = Math.max(20, (r.height - h * view.k) / 2); draw();
  }
  // A tall graph (everything expanded) reads from the top at a legible zoom rather than shrunk
  // to fit its height; F still fits the whole graph.
  function fitTop() {
    if (!G || !lay[G.root.id]) return;
    var r = wrap.getBoundingClientRect(), w = G.W || 1, h = G.H || 1;
    view.k = Math.max(0.02, Math.min(1, (r.width - 40) / w, Math.max((r.height - 40) / h, 0.6)));
    view.x = (r.width - w * view.k) / 2; view.y = 20; draw();
  }
  function zoomAt(f, cx, cy) { var k = Math.max(0.02, Math.min(4, view.k * f)); view.x = cx - (cx - view.x) * k / view.k; view.y = cy - (cy - view.y) * k / view.k; view.k = k; draw(); }
  function center(id, zoomIn) {
    var v = absPos[id]; if (!v) return; var r = wrap.getBoundingClientRect();
    if (zoomIn) view.k = Math.max(view.k, 1);
    view.x = r.width / 2 - (v.x + v.w / 2) * view.k; view.y = r.height / 2 - (v.y + v.h / 2) * view.k; draw();
  }
  // After an expand: if the opened box leaves the viewport, zoom out for it to fit, but not below
  // a readable 50 % (labels vanish under 30 %); a box too big for that shows its top-left corner.
  // A box already in view does not move.
  function keepInView(id) {
    var v = absPos[id]; if (!v) return; var r = wrap.getBoundingClientRect(), m = 20;
    var x0 = view.x + v.x * view.k, y0 = view.y + v.y * view.k, x1 = x0 + v.w * view.k, y1 = y0 + v.h * view.k;
    if (x0 >= 0 && y0 >= 0 && x1 <= r.width && y1 <= r.height) return;
    var fitK = Math.min((r.width - 2 * m) / v.w, (r.height - 2 * m) / v.h);
    var k = Math.min(view.k, Math.max(fitK, Math.min(view.k, 0.5)));
    view.k = k;
    view.x = Math.min(Math.max(view.x, m - v.x * k), r.width - m - (v.x + v.w) * k);
    view.y = Math.min(Math.max(view.y, m - v.y * k), r.height - m - (v.y + v.h) * k);
    if (v.w * k > r.width - 2 * m) view.x = m - v.x * k;
    if (v.h * k > r.height - 2 * m) view.y = m - v.y * k;
    draw();
  }
  function hit(px, py) {
    var x = (px - view.x) / view.k, y = (py - view.y) / view.k, best = null;
    for (var i = 0; i < vis.length; i++) { var v = vis[i]; if (x >= v.x && x <= v.x + v.w && y >= v.y && y <= v.y + v.h) best = v; }
    return best; // pre-order: the last hit is the innermost
  }
  // Nearest drawn edge within 6 screen px (only when no node is under the pointer).
  function hitEdge(px, py) {
    var x = (px - view.x) / view.k, y = (py - view.y) / view.k, tol = 6 / view.k, best = null, bd = tol * tol;
    visEdges.forEach(function (e) {
      var p = e.pts;
      for (var i = 0; i + 3 < p.length; i += 2) {
        var ax = e.ox + p[i], ay = e.oy + p[i + 1], bx = e.ox + p[i + 2], by = e.oy + p[i + 3], dx = bx - ax, dy = by - ay;
        var t = dx || dy ? Math.max(0, Math.min(1, ((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy))) : 0;
        var qx = ax + t * dx - x, qy = ay + t * dy - y, d = qx * qx + qy * qy;
        if (d < bd) { bd = d; best = e; }
      }
    });
    return best;
  }
  function toggleGroup(g, cb) {
    if (expanded[g.id]) { delete expanded[g.id]; var p = g.parent; delete lay[p.id]; for (var a = p; a; a = a.parent) delete lay[a.id]; relayout([p], cb); }
    else { expanded[g.id] = true; for (var b = g.parent; b; b = b.parent) delete lay[b.id]; relayout([g], cb); }
  }
  // Opening a folded family shows its instances in order with the first one open; the inspector
  // opens another one or all of them.
  function openGroup(g, cb) {
    if (g.fam && !expanded[g.id]) { var k0 = partition(g).kids[0]; if (k0) expanded[k0.id] = true; }
    toggleGroup(g, function () { keepInView(g.id); if (cb) cb(); });
  }
  function openInstances(g, which, cb) {
    partition(g); expanded[g.id] = true;
    // A group opened now is laid out again with whatever it holds open.
    g.kids.forEach(function (k, i) { if (which === 'all') (function open(x) { expanded[x.id] = true; delete lay[x.id]; partition(x).kids.forEach(open); })(k); else if (i === which) { expanded[k.id] = true; delete lay[k.id]; } });
    for (var a = g; a; a = a.parent) { delete lay[a.id]; expanded[a.id] = true; }
    relayout([g], function () { keepInView(g.id); if (cb) cb(); });
  }
  function expandTo(id, cb) {
    var n = byId.get(id) || (/^g:/.test(id) ? groupAt(id.slice(2)) : null), g = n && (n._kind === 'group' ? n.parent : groupOfOp(n));
    if (!g) { if (cb) cb(false); return; }
    var changed = [];
    for (var a = g; a; a = a.parent) if (!expanded[a.id]) { expanded[a.id] = true; changed.push(a); }
    if (!changed.length) { if (cb) cb(true); return; }
    for (var c = g; c; c = c.parent) delete lay[c.id];
    relayout([changed[0]], function () { if (cb) cb(true); });
  }
  INIT = {
    architecture: function () { INIT_ARCH(); },
    dataflow: function () {
      var fns = {}; P.operations.forEach(function (o) { if (o.function) fns[o.function] = (fns[o.function] || 0) + 1; });
      fnSel.appendChild(new Option('all functions (' + fmtInt(P.operations.length) + ' ops)', ''));
      P.functions.filter(function (f) { return fns[f.id]; }).sort(function (a, b) { return (b.entrypoint ? 1 : 0) - (a.entrypoint ? 1 : 0) || fns[b.id] - fns[a.id]; })
        .forEach(function (f) { fnSel.appendChild(new Option((f.name || f.id) + ' (' + fmtInt(fns[f.id]) + ' ops)' + (f.entrypoint ? ' *' : ''), f.id)); });
      var phs = {}; P.operations.forEach(function (o) { (o.phases || (o.phase ? [o.phase] : [])).forEach(function (p) { phs[p] = 1; }); });
      phSel.appendChild(new Option('all phases', '')); Object.keys(phs).sort().forEach(function (p) { phSel.appendChild(new Option(p, p)); });
      // One model: open on its main forward (the crate-wide view stays one choice away).
      if (P.model.main_function && fns[P.model.main_function]) fnSel.value = P.model.main_function;
      // The chosen function's whole name is in the select's tooltip, whatever the width.
      function fnTitle() { var o = fnSel.options[fnSel.selectedIndex]; fnSel.title = o ? o.text : ''; }
      fnTitle();
      fnSel.onchange = phSel.onchange = function () { fnTitle(); buildGraph(); relayout([G.root], fit); };
      $('df-heat').disabled = !hasProfile; if (!hasProfile) $('df-heat').title = 'No runtime trace was merged: nothing to colour by';
      $('df-heat').onclick = function () { heat = !heat; this.setAttribute('aria-pressed', String(heat)); legend(); draw(); };
      // The view as drawn, on the theme's background, downloaded from a blob: URL (nothing leaves
      // the machine).
      $('df-png').onclick = function () {
        var c = document.createElement('canvas'); c.width = cv.width; c.height = cv.height;
        var x = c.getContext('2d'); x.fillStyle = C.bg; x.fillRect(0, 0, c.width, c.height); x.drawImage(cv, 0, 0);
        c.toBlob(function (b) {
          var a = document.createElement('a'); a.href = URL.createObjectURL(b);
          a.download = String((P.model && P.model.name) || 'model').replace(/[^A-Za-z0-9_.-]+/g, '_') + '-dataflow.png';
          document.body.appendChild(a); a.click(); a.remove(); setTimeout(function () { URL.revokeObjectURL(a.href); }, 1000);
        }, 'image/png');
      };
      $('df-collapse').onclick = function () { expanded = Object.create(null); expanded[G.root.id] = true; lay = Object.create(null); relayout([G.root], fit); };
      // Every group open at once, as Netron draws a graph: only for graphs small enough to lay out
      // and read in one go; a bigger one is opened group by group.
      $('df-expand').onclick = function () {
        if (G.ops.length > EXPAND_ALL_MAX) return;
        (function open(g) { expanded[g.id] = true; partition(g).kids.forEach(open); })(G.root);
        lay = Object.create(null); relayout([G.root], fitTop);
      };
      $('z-in').onclick = function () { var r = wrap.getBoundingClientRect(); zoomAt(1.25, r.width / 2, r.height / 2); };
      $('z-out').onclick = function () { var r = wrap.getBoundingClientRect(); zoomAt(0.8, r.width / 2, r.height / 2); };
      $('z-fit').onclick = fit;
      var drag = null;
      wrap.addEventListener('wheel', function (e) { e.preventDefault(); var r = wrap.getBoundingClientRect(); if (e.ctrlKey || !e.shiftKey) zoomAt(e.deltaY < 0 ? 1.12 : 0.89, e.clientX - r.left, e.clientY - r.top); }, { passive: false });
      wrap.addEventListener('pointerdown', function (e) { drag = { x: e.clientX, y: e.clientY, vx: view.x, vy: view.y, moved: false }; wrap.setPointerCapture(e.pointerId); });
      wrap.addEventListener('pointermove', function (e) {
        var r = wrap.getBoundingClientRect();
        if (drag) { var dx = e.clientX - drag.x, dy = e.clientY - drag.y; if (Math.abs(dx) + Math.abs(dy) > 4) { drag.moved = true; wrap.classList.add('dragging'); } if (drag.moved) { view.x = drag.vx + dx; view.y = drag.vy + dy; draw(); } return; }
        var h = hit(e.clientX - r.left, e.clientY - r.top); if (h !== hover) { hover = h; draw(); }
        var tip = $('tooltip');
        if (h && !h.open) { tip.hidden = false; tip.replaceChildren(el('div', 't', h.n._kind === 'group' ? h.n.path : label(h.n)), el('div', 's', h.n._kind === 'group' ? fmtInt(h.n.nOps) + ' ops · double-click to expand' : [h.n.module, h.n.timing ? fmtNs(h.n.timing.mean_ns) + ' mean' : ''].filter(Boolean).join(' · '))); tip.style.left = Math.min(e.clientX - r.left + 14, r.width - 300) + 'px'; tip.style.top = (e.clientY - r.top + 14) + 'px'; }
        else tip.hidden = true;
      });
      wrap.addEventListener('pointerleave', function () { $('tooltip').hidden = true; if (hover) { hover = null; draw(); } });
      wrap.addEventListener('pointerup', function (e) {
        var d = drag; drag = null; wrap.classList.remove('dragging'); if (!d || d.moved) return;
        var r = wrap.getBoundingClientRect(), h = hit(e.clientX - r.left, e.clientY - r.top);
        if (!h || h.open && e.clientY - r.top > (h.y + CG_HEADER) * view.k + view.y) {
          var he = hitEdge(e.clientX - r.left, e.clientY - r.top);
          if (he && he.agg && byId.get(he.agg.tensor)) { select(he.agg.tensor, { from: 'graph' }); return; }
        }
        if (!h) { select(null); return; }
        if (h.open && e.clientY - r.top > (h.y + CG_HEADER) * view.k + view.y) { select(null); return; }
        // A click on an open group's header collapses it: in the `click` event, whose `detail`
        // counts clicks (a pointerup's is 0 in Chromium, so it cannot tell a double-click apart).
        if (h.open) { headerHit = h; return; }
        select(h.n.id, { from: 'graph' });
      });
      var headerHit = null;
      wrap.addEventListener('click', function (e) { var h = headerHit; headerHit = null; if (h && e.detail === 1 && expanded[h.n.id]) toggleGroup(h.n); });
      wrap.addEventListener('dblclick', function (e) { var r = wrap.getBoundingClientRect(), h = hit(e.clientX - r.left, e.clientY - r.top); if (h && h.n._kind === 'group' && !h.open) openGroup(h.n); });
      wrap.addEventListener('keydown', function (e) {
        var r = wrap.getBoundingClientRect();
        if (e.key === '+' || e.key === '=') zoomAt(1.25, r.width / 2, r.height / 2);
        else if (e.key === '-') zoomAt(0.8, r.width / 2, r.height / 2);
        else if (e.key === 'f' || e.key === 'F') fit();
        else if (e.key === '0') { view.k = 1; draw(); }
        else if (e.key === 'ArrowLeft') { view.x += 60; draw(); } else if (e.key === 'ArrowRight') { view.x -= 60; draw(); }
        else if (e.key === 'ArrowUp') { view.y += 60; draw(); } else if (e.key === 'ArrowDown') { view.y -= 60; draw(); }
        else if (e.key === 'Enter' && st.sel && byId.get(st.sel) && byId.get(st.sel)._kind === 'group') { var sg = byId.get(st.sel); if (expanded[sg.id]) toggleGroup(sg); else openGroup(sg); }
        else return;
        e.preventDefault();
      });
      mark('df-init'); legend(); resize(); buildGraph(); relayout([G.root], function () { fit(); mark('dataflow-drawn'); window.__cgDataflowReady = performance.now(); requestAnimationFrame(function () { mark('dataflow-painted'); }); afterPaint(function () { whenTree(function () { setTimeout(prewarmEdges, 0); }); }); });
    },
    findings: function () {
      var sevRank = { error: 0, warning: 1, information: 2, info: 2, note: 3 };
      var t = new VTable($('fi-table'), [
        { key: 'sev', label: 'Severity', w: 100, sort: function (f) { return sevRank[String(f.severity).toLowerCase()]; }, measure: function (f, M) { return M(f.severity || '', 'sev'); }, render: function (f, d) { d.className += ' sev ' + String(f.severity || '').toLowerCase().replace(/[^a-z0-9_-]/g, ''); d.textContent = f.severity || ''; } },
        { key: 'rule', label: 'Rule', w: 200, cls: 'mono', sort: function (f) { return f.rule; }, render: txt(function (f) { return f.rule; }) },
        { key: 'src', label: 'Source', w: 220, cls: 'mono', sort: function (f) { return srcStr(f.source); }, render: txt(function (f) { return srcStr(f.source); }) },
        { key: 'conf', label: 'Confidence', w: 100, sort: function (f) { return f.confidence; }, render: txt(function (f) { return f.confidence; }) },
        { key: 'msg', label: 'Message', flex: true, wrap: true, sort: function (f) { return f.message; }, render: txt(function (f) { return f.message; }) }
      ], { key: function (f) { return f.id; }, click: function (f) { select(f.id, { from: 'findings' }); focusFinding(f); } });
      t.setRows(P.findings.slice()); t.sortBy('sev'); T.findings = t;
      var c = {}, real = realFindings(), notes = depNotes(); real.forEach(function (f) { c[f.severity] = (c[f.severity] || 0) + 1; });
      $('fi-stat').textContent = (real.length ? Object.keys(c).map(function (k) { return c[k] + ' ' + k; }).join(' · ') + ' — select a finding to focus its node' : 'No findings.') +
        (notes.length ? ' · ' + notes.length + ' dependency-source note' + (notes.length === 1 ? '' : 's') + ' (where dependency sources were looked for; not counted as findings)' : '');
    },
    checkpoint: function () {
      var ck = P.checkpoint || { entries: [] }, filter = null, counts = {};
      ck.entries.forEach(function (e) { counts[e.status] = (counts[e.status] || 0) + 1; });
      var chips = $('ck-chips');
      chips.appendChild(el('span', 'stat', (ck.path ? ck.path + ' — ' : '') + fmtInt(ck.entries.length) + ' entries' + (ck.verdict ? ' — ' + ck.verdict : '')));
      ['matched', 'missing', 'unclaimed', 'shape_mismatch'].forEach(function (s) {
        var b = el('button', 'chip st-' + s, s.replace('_', ' ') + ' ' + (counts[s] || 0)); b.setAttribute('aria-pressed', 'false');
        b.onclick = function () { filter = filter === s ? null : s; Array.prototype.forEach.call(chips.querySelectorAll('button'), function (x) { x.setAttribute('aria-pressed', 'false'); }); if (filter) b.setAttribute('aria-pressed', 'true'); t.setRows(ck.entries.filter(function (e) { return !filter || e.status === filter; })); };
        chips.appendChild(b);
      });
      var t = new VTable($('ck-table'), [
        { key: 'status', label: 'Status', w: 130, sort: function (e) { return { shape_mismatch: 0, missing: 1, unclaimed: 2, matched: 3 }[e.status]; }, measure: function (e, M) { return M(String(e.status).replace('_', ' '), 'st-shape_mismatch'); }, render: function (e, d) { d.className += ' st-' + String(e.status).replace(/[^a-z0-9_-]/g, ''); d.textContent = String(e.status).replace('_', ' '); } },
        { key: 'key', label: 'Key', flex: true, cls: 'mono', sort: function (e) { return e.key; }, render: txt(function (e) { return e.key; }) },
        { key: 'exp', label: 'Expected (model)', w: 200, cls: 'mono', render: txt(function (e) { return e.expected ? shapeStr(e.expected) : ''; }) },
        { key: 'act', label: 'Checkpoint', w: 200, cls: 'mono', render: txt(function (e) { return e.actual ? shapeStr(e.actual) + (e.dtype ? ' ' + e.dtype : '') : ''; }) },
        { key: 'note', label: 'Note', w: 260, wrap: true, sort: function (e) { return e.reason || ''; }, render: txt(function (e) { return e.reason || ''; }) }
      ], { key: function (e) { return 'ck:' + e.status + ':' + e.key; }, click: function (e) { t.selKey = 'ck:' + e.status + ':' + e.key; t.paint(); inspect(e, 'checkpoint entry'); } });
      t.setRows(ck.entries.slice()); t.sortBy('status'); // problems first (by rank)
    },
    profile: function () {
      var total = 0; P.operations.forEach(function (o) { if (o.timing) total += o.timing.total_ns || 0; });
      function share(ns) { return total ? (100 * ns / total).toFixed(1) + '%' : ''; }
      var opCols = [
        { key: 'name', label: 'Operation', flex: true, cls: 'mono', sort: function (o) { return label(o); }, render: txt(function (o) { return label(o) + '  ' + (o.module || ''); }) },
        { key: 'total', label: 'Total', w: 100, num: true, sort: function (o) { return o.timing.total_ns; }, render: txt(function (o) { return fmtNs(o.timing.total_ns); }) },
        { key: 'share', label: 'Share', w: 70, num: true, sort: function (o) { return o.timing.total_ns; }, render: txt(function (o) { return share(o.timing.total_ns); }) },
        { key: 'mean', label: 'Mean', w: 90, num: true, sort: function (o) { return o.timing.mean_ns; }, render: txt(function (o) { return fmtNs(o.timing.mean_ns); }) },
        { key: 'p95', label: 'p95', w: 90, num: true, sort: function (o) { return o.timing.p95_ns; }, render: txt(function (o) { return fmtNs(o.timing.p95_ns); }) },
        { key: 'samples', label: 'Samples', w: 80, num: true, sort: function (o) { return o.timing.samples; }, render: txt(function (o) { return fmtInt(o.timing.samples); }) }
      ];
      var opsT = P.operations.filter(function (o) { return o.timing; });
      var mods = {}; opsT.forEach(function (o) { var parts = (o.module || '').split('.'); for (var i = 1; i <= parts.length; i++) { var k = parts.slice(0, i).join('.'); var m = mods[k] || (mods[k] = { id: 'g:' + k, path: k, ns: 0, n: 0, samples: 0 }); m.ns += o.timing.total_ns || 0; m.n++; m.samples += o.timing.samples || 0; } });
      var modCols = [
        { key: 'path', label: 'Module', flex: true, cls: 'mono', sort: function (m) { return m.path; }, render: txt(function (m) { return m.path; }) },
        { key: 'total', label: 'Total', w: 100, num: true, sort: function (m) { return m.ns; }, render: txt(function (m) { return fmtNs(m.ns); }) },
        { key: 'share', label: 'Share', w: 70, num: true, sort: function (m) { return m.ns; }, render: txt(function (m) { return share(m.ns); }) },
        { key: 'ops', label: 'Ops', w: 80, num: true, sort: function (m) { return m.n; }, render: txt(function (m) { return fmtInt(m.n); }) },
        { key: 'samples', label: 'Samples', w: 90, num: true, sort: function (m) { return m.samples; }, render: txt(function (m) { return fmtInt(m.samples); }) }
      ];
      // Module scopes (runtime/4 `module` records): one row per traced path, indented as a tree,
      // with self (exclusive) and total (inclusive) time; self % is of the wall time.
      var scopes = MT.filter(function (m) { return !m.family; }), wall = P.runtime && P.runtime.wall_ns;
      // The hierarchy: an ancestor path with no scope of its own (`model.layers` of
      // `model.layers.0`) gets an untimed row, so every row sits under its parent.
      var have = Object.create(null), hasRoot = false;
      scopes.forEach(function (m) { have[m.path] = true; if (m.path === '') hasRoot = true; });
      var tree = scopes.slice();
      scopes.forEach(function (m) {
        var parts = m.path ? m.path.split('.') : [];
        for (var i = parts.length - 1; i >= 1; i--) {
          var a = parts.slice(0, i).join('.'); if (have[a]) break;
          have[a] = true; tree.push({ path: a, module: '', untimed: true });
        }
      });
      function depthOf(m) { return m.path ? m.path.split('.').length - (hasRoot ? 0 : 1) : 0; }
      // Tree order: by path segment, numbers as numbers (layers.2 before layers.10), a parent
      // before its children.
      function treeLess(a, b) {
        var x = a.path ? a.path.split('.') : [], y = b.path ? b.path.split('.') : [];
        for (var i = 0; i < Math.min(x.length, y.length); i++) {
          if (x[i] === y[i]) continue;
          var nx = /^\d+$/.test(x[i]), ny = /^\d+$/.test(y[i]);
          if (nx && ny) return Number(x[i]) - Number(y[i]);
          return x[i] < y[i] ? -1 : 1;
        }
        return x.length - y.length;
      }
      tree.sort(treeLess);
      function selfShare(ns) { return wall && ns != null ? (100 * ns / wall).toFixed(1) + '%' : ''; }
      var scopeCols = [
        { key: 'path', label: 'Module scope', flex: true, cls: 'mono', sort: function (m) { return tree.indexOf(m); }, render: function (m, d) { d.style.paddingLeft = (6 + depthOf(m) * 12) + 'px'; d.textContent = m.path.split('.').pop() || '(root)'; d.title = m.path + (m.untimed ? ' (no scope of its own)' : ''); } },
        { key: 'self', label: 'Self', w: 90, num: true, sort: function (m) { return m.self_ns; }, render: txt(function (m) { return fmtNs(m.self_ns); }) },
        { key: 'selfshare', label: 'Self %', w: 70, num: true, sort: function (m) { return m.self_ns; }, render: txt(function (m) { return selfShare(m.self_ns); }) },
        { key: 'total', label: 'Total', w: 90, num: true, sort: function (m) { return m.total_ns; }, render: txt(function (m) { return fmtNs(m.total_ns); }) },
        { key: 'calls', label: 'Calls', w: 70, num: true, sort: function (m) { return m.calls; }, render: txt(function (m) { return m.untimed ? '—' : fmtInt(m.calls); }) },
        { key: 'p95', label: 'p95', w: 90, num: true, sort: function (m) { return m.p95_ns; }, render: txt(function (m) { return fmtNs(m.p95_ns); }) }
      ];
      // With module scopes, the view opens on them: per module instance, in its hierarchy.
      if (scopes.length && !$('pr-mode').querySelector('option[value=scopes]')) {
        var opt = document.createElement('option'); opt.value = 'scopes'; opt.textContent = 'module scopes (self / total)';
        $('pr-mode').insertBefore(opt, $('pr-mode').firstChild); $('pr-mode').value = 'scopes';
      }
      function show() {
        var modes = $('pr-mode').value, t;
        if (modes === 'scopes') {
          t = new VTable($('pr-table'), scopeCols, { key: function (m) { return m.path; }, click: function (m) { var mm = byId.get(m.module); if (mm) select(mm.id, { from: 'profile' }); } });
          t.setRows(tree.slice());
          $('pr-stat').textContent = fmtInt(scopes.length) + ' module scopes · wall ' + fmtNs(wall) + (P.runtime.host_side ? ' · host-side timing' : '');
          return;
        }
        if (modes === 'ops') { t = new VTable($('pr-table'), opCols, { key: function (o) { return o.id; }, click: function (o) { select(o.id, { from: 'profile' }); } }); t.setRows(opsT.slice()); t.sortBy('total'); }
        else { t = new VTable($('pr-table'), modCols, { key: function (m) { return m.id; }, click: function (m) { goGraph(m.id); } }); t.setRows(Object.keys(mods).map(function (k) { return mods[k]; })); t.sortBy('total'); }
        $('pr-stat').textContent = fmtInt(opsT.length) + ' timed ops · ' + fmtNs(total) + ' total';
      }
      $('pr-mode').onchange = show; show();
    }
  };
  var T = {};
  function srcStr(s) { if (!s) return ''; if (typeof s === 'string') return s; return (s.file || '') + (s.line ? ':' + s.line : '') + (s.column ? ':' + s.column : ''); }

  // ---------- selection, inspector, navigation ----------
  function goGraph(id, cb) {
    showView('dataflow');
    if (G) id = graphId(id);
    var go = function () { expandTo(id, function () { select(id, { from: 'graph' }); center(id, true); if (cb) cb(); }); };
    if (!G || !lay[G.root.id]) { var iv = setInterval(function () { if (G && lay[G.root.id]) { clearInterval(iv); go(); } }, 20); } else go();
  }
  function focusFinding(f) {
    if (!treeReady && (f.related || []).some(function (r) { return !byId.get(r); })) { whenTree(function () { focusFinding(f); }); return; }
    var rel = (f.related || []).filter(function (r) { return byId.get(r); }), first = rel[0];
    if (!first) return;
    var o = byId.get(first);
    if (o._kind === 'operation' || o._kind === 'group') goGraph(first, function () { select(f.id, { from: 'graph', keepFocus: first }); });
    else if (o._kind === 'tensor' && o._producer) goGraph(o._producer);
    else { showView('architecture'); revealInTree(first); }
  }
  function select(id, how) {
    if (id && !treeReady && !byId.get(id)) { whenTree(function () { select(id, how); }); return; }
    if (st.view === 'dataflow') id = graphId(id);
    st.sel = id; how = how || {};
    if (how.keepFocus) st.sel = graphId(how.keepFocus);
    var o = id ? lookup(id) : null;
    inspect(o);
    if (st.view === 'dataflow') draw();
    if (st.view === 'architecture' && how.from !== 'tree' && o) revealInTree(id); else if (archTable) { archTable.selKey = id; archTable.paint(); }
    writeHash();
  }
  // Nothing selected: the model's properties, as Netron shows them (what was analyzed, under
  // which features, how much of it, and what evidence was merged).
  function overview(body) {
    $('insp-title').textContent = 'Model · ' + ((P.model && P.model.name) || 'model');
    var m = P.model || {}, sm = P.summary || {}, props = {};
    if (m.version) props.version = m.version;
    if (m.target) props.target = m.target;
    if (m.features) props.features = m.features.length ? m.features.join(', ') : '(none)';
    if (m.cfg && m.cfg.length) props.cfg = m.cfg;  // folded below: mostly the target's defaults
    if (m.candle) Object.keys(m.candle).forEach(function (k) { props[k] = m.candle[k]; });
    props.operations = fmtInt(P.operations.length); props.functions = fmtInt(P.functions.length);
    props.modules = fmtInt(treeReady ? P.modules.length : sm.modules); props.parameters = fmtInt(treeReady ? P.parameters.length : sm.parameters);
    if (treeReady && TOTAL) props.weights = fmtInt(TOTAL) + (roots.some(function (r) { return r._unk; }) ? ' + unknown' : '');
    props.findings = fmtInt(realFindings().length) + (depNotes().length ? ' (+ ' + fmtInt(depNotes().length) + ' dependency-source notes)' : '');
    if (P.runtime) { props.trace = P.runtime.trace_schema || 'merged'; props.timed_operations = fmtInt(P.runtime.operation_observations); if (P.runtime.entrypoint) props.traced_entrypoint = P.runtime.entrypoint; }
    props.checkpoint = available('checkpoint') ? ((P.checkpoint && P.checkpoint.verdict) || 'verified') : 'none verified';
    if (m.analysis_id) props.analysis_id = m.analysis_id;
    var d = el('dl');
    Object.keys(props).forEach(function (k) {
      d.appendChild(el('dt', null, k.replace(/_/g, ' ')));
      var v = props[k], dd = el('dd');
      if (Array.isArray(v)) { var det = el('details'); det.appendChild(el('summary', null, v.length + ' predicates')); det.appendChild(document.createTextNode(v.join(', '))); dd.appendChild(det); } else dd.textContent = String(v);
      d.appendChild(dd);
    });
    body.appendChild(d);
    var mem = P.memory;
    if (mem) {
      body.appendChild(el('h3', null, 'Memory'));
      body.appendChild(el('p', 'muted', mem.dtype + ', batch ' + fmtInt(mem.batch) + ', context ' + fmtInt(mem.context) + ' (' + mem.context_source + '); `candle-graph memory` sizes others'));
      var md = el('dl'), names = { weights: 'weights', kv_cache: 'KV cache', state: 'other state', buffers: 'buffers (constructor)', activations: 'activations (peak)', inference_total: 'inference total', training_total: 'training (AdamW)' };
      mem.figures.forEach(function (f) {
        md.appendChild(el('dt', null, names[f.name] || f.name));
        var dd = el('dd', 'fig', fmtBound(f.bytes, f.bound)); if (f.note) dd.title = f.note; md.appendChild(dd);
      });
      body.appendChild(md);
      (mem.notes || []).forEach(function (n) { body.appendChild(el('p', 'muted', n)); });
    }
    body.appendChild(el('p', 'muted', 'Select an item to see every field.'));
  }
  // The state a module keeps across calls (`memory`'s per-layer list, with the buffers its
  // constructor made: kind `buffer`): a family's record
  // (`model.layers.{i}.self_attn`) stands for each of its members.
  function memoryStates(prefix) {
    if (!P.memory || prefix == null) return [];
    var have = prefix.split('.');
    return P.memory.states.filter(function (s) {
      var want = s.instance.split('.');
      return want.length === have.length && want.every(function (w, i) { return w === have[i] || /^\{[^}]*\}$/.test(w) && /^(\d+|\{[^}]*\})$/.test(have[i]); });
    });
  }
  function inspect(o, kindName) {
    var body = $('insp-body'); body.replaceChildren();
    if (!o) { overview(body); return; }
    var kind = kindName || o._kind;
    $('insp-title').textContent = (kind ? kind + ' · ' : '') + (o.key || o.path || o.name || o.op || o.rule || o.id);
    if (o.source) body.appendChild(el('code', 'src', srcStr(o.source)));
    function dl(obj, skip) {
      var d = el('dl');
      Object.keys(obj).forEach(function (k) {
        if (k[0] === '_' || (skip && skip.indexOf(k) >= 0)) return;
        var v = obj[k], raw = null; if (v == null) v = '—';
        else if (Array.isArray(v) && (k === 'shape' || k === 'checkpoint_shape' || k === 'symbolic_shape' || k === 'expected' || k === 'actual')) v = shapeStr(v);
        else if (Array.isArray(v)) v = JSON.stringify(v.map(shownId), null, 1);
        else if (typeof v === 'object') v = JSON.stringify(v, null, 1);
        else if (typeof v === 'string' && shownId(v) !== v) { raw = v; v = shownId(v); }
        d.appendChild(el('dt', null, k)); var dd = el('dd', FIG_KEYS[k] ? 'fig' : null, String(v)); if (raw) dd.title = raw; d.appendChild(dd);
      });
      return d;
    }
    // The summary's figures of a module (the fields `query module` gives), when the CLI sent them.
    function figures(m) {
      if (!m || m.parameter_count == null && m.output_shape == null && m.mult_adds == null) return null;
      body.appendChild(el('h3', null, 'Summary'));
      body.appendChild(dl({ output_shape: m.output_shape || '?', mult_adds: m.mult_adds ? (m.mult_adds_lower_bound ? '≥ ' : '') + m.mult_adds : '?',
        parameters: m.parameter_count != null ? fmtInt(m.parameter_count) : '?', weights: m.weights_bytes != null ? fmtMB(m.weights_bytes) + ' at ' + m.weights_dtype : '?',
        shared_weights: m.shared_weights ? 'yes: counted once' : null }));
      return true;
    }
    // The module's recorded output statistics (runtime/4 `stats`), worst over its samples.
    function healthSection(id) {
      var h = modHealth[id]; if (!h) return;
      body.appendChild(el('h3', null, 'Numeric health'));
      body.appendChild(dl({ samples: fmtInt(h.samples), abs_max: fmtNum(h.abs_max), rms: fmtNum(h.rms), non_finite_values: fmtInt(h.non_finite),
        first_non_finite_step: h.first, first_in_run: firstNF && firstNF.module === id ? 'yes: the first module whose output went non-finite (step ' + firstNF.step + ')' : null }));
    }
    // The state this module keeps across calls (a KV cache, a recurrent state), per instance.
    function stateSection(prefix) {
      memoryStates(prefix).forEach(function (s) {
        body.appendChild(el('h3', null, s.kind === 'kv_cache' ? 'KV cache kept across calls' : s.kind === 'buffer' ? 'Buffer kept from the constructor' : 'State kept across calls'));
        body.appendChild(dl({ place: s.place, stored: s.shapes.join(' + '), per_instance: fmtBound(s.per_instance_bytes, s.bound), instances: s.instances != null ? fmtInt(s.instances) : '?',
          all_instances: fmtBound(s.total_bytes, s.bound), at: P.memory.dtype + ', batch ' + fmtInt(P.memory.batch) + ', context ' + fmtInt(P.memory.context), source: s.source }));
      });
    }
    var fr = kind === 'group' && G && G.frames && G.frames[o.path];
    if (kind === 'group') {
      partition(o); body.appendChild(dl({ path: o.path, operations: o.nOps, child_groups: o.kids.length, direct_ops: o.ops.length, total_time: o.ns ? fmtNs(o.ns) : null }));
      if (o.fam) body.appendChild(el('p', 'muted', fmtInt(o.fam) + ' instances of one call (' + o.base + '.{i}), each drawn with its own operations.'));
      var m = P.modules.filter(function (x) { return x.prefix === o.path; })[0], hasFig = m && figures(m);
      if (fr) { var c = fr.call, ci = { instance: fr.path || '(root)', template: c.path || '(root)', method: c.method, function: c.function ? (byId.get(c.function) || {}).name || c.function : 'candle-nn layer', instance_of: fr.n > 1 ? (fr.k + ' of ' + fr.n) : null, repeat: c.repeat || null };
        if (!hasFig) { ci.output_shape = c.shape != null ? shapeStr(c.shape) : '?'; ci.mult_adds = c.mult_adds || null; }
        ci.output_dtype = c.dtype || null; body.appendChild(el('h3', null, 'Instance call')); body.appendChild(dl(ci)); }
      if (m) { body.appendChild(el('h3', null, 'Module')); body.appendChild(dl(m, ['source'].concat(FIG_FIELDS))); healthSection(m.id); }
      stateSection(o.path); }
    else if (kind === 'family') body.appendChild(dl({ prefix: o.prefix, type: o.type, instances: o.count, parameters: fmtInt(o._n) + (o._unk ? ' + unknown' : ''), members: o.members.map(function (x) { return x.prefix || x.id; }).join(', ') }));
    else if (kind === 'operation' && o.static) { var so = byId.get(o.static), mo = {}; Object.keys(so).forEach(function (k) { mo[k] = so[k]; }); mo.id = o.id; mo.static_id = o.static; mo.instance = o.instance || '(root)'; mo.module = o.module; body.appendChild(dl(mo, ['source', 'timing'])); if (o.timing) body.appendChild(el('p', 'muted', 'Timing keyed by the static id: the sum over every instance of this call site.')); }
    else if (kind === 'module') { figures(o); body.appendChild(el('h3', null, 'Module')); body.appendChild(dl(o, ['source', 'timing'].concat(FIG_FIELDS))); healthSection(o.id); stateSection(o.prefix); }
    else body.appendChild(dl(o, ['source', 'timing']));
    if (o.timing) { body.appendChild(el('h3', null, 'Timing')); var t = o.timing, tt = {}; Object.keys(t).forEach(function (k) { tt[k] = /_ns$/.test(k) ? fmtNs(t[k]) : t[k]; }); body.appendChild(dl(tt)); }
    if (kind === 'module' || kind === 'parameter' || (kind === 'component' && o._n != null)) body.appendChild(el('p', 'muted', '#params: ' + fmtInt(kind === 'parameter' ? numel(o) : o._n) + (TOTAL ? ' (' + (100 * (kind === 'parameter' ? numel(o) || 0 : o._n) / TOTAL).toFixed(2) + '% of total)' : '')));
    var links = el('div', 'links');
    function link(t, fn) { var b = el('button', null, t); b.onclick = fn; b.title = t; links.appendChild(b); return b; }
    if (kind === 'operation') {
      (o.inputs || []).concat(o.outputs || []).forEach(function (tid) { var tn = byId.get(tid); if (tn) link(((o.outputs || []).indexOf(tid) >= 0 ? 'out: ' : 'in: ') + (tn.name || tid) + ' ' + (function (sh) { return sh ? shapeStr(sh) : ''; })(outShape((o.outputs || []).indexOf(tid) >= 0 ? o : null, tid)) + ' ' + (tn.dtype || ''), function () { select(tid); }); });
      if (st.view !== 'dataflow') link('Show in graph', function () { goGraph(o.id); });
    }
    if (kind === 'tensor') { if (o._producer) link('producer: ' + label(byId.get(o._producer)), function () { goGraph(o._producer); }); (o._consumers || []).slice(0, 20).forEach(function (c) { link('consumer: ' + label(byId.get(c)), function () { goGraph(c); }); }); }
    if (kind === 'checkpoint entry') {
      var cp = (o.parameter && byId.get(o.parameter)) || P.parameters.filter(function (x) { return x.key === o.key; })[0];
      if (cp) link('parameter ' + (cp.key || cp.id) + ' in the tree', function () { showView('architecture'); revealInTree(cp.id); select(cp.id, { from: 'tree' }); });
    }
    if (kind === 'finding') (o.related || []).forEach(function (r) { var ro = byId.get(r); if (ro) { var b = link('focus ' + ro._kind + ' ' + (ro._kind === 'operation' ? label(ro) + (ro.module ? ' · ' + ro.module : '') : ro.key || ro.prefix || ro.name || r), function () { focusFinding({ related: [r] }); }); b.title = r; } });
    if (kind === 'module' || kind === 'parameter') { if (st.view !== 'architecture') link('Show in tree', function () { showView('architecture'); revealInTree(o.id); }); if (kind === 'module' && o.prefix && G && groupAt(o.prefix)) link('Show in graph', function () { goGraph('g:' + o.prefix); }); }
    if (kind === 'group') { var mm = P.modules.filter(function (x) { return x.prefix === o.path; })[0]; if (mm) link('Show in tree', function () { showView('architecture'); revealInTree(mm.id); }); }
    if (kind === 'group' && o.fam) {
      link('Open all ' + fmtInt(o.fam) + ' instances', function () { openInstances(o, 'all'); }).id = 'fam-all';
      var ni = el('input'); ni.type = 'number'; ni.min = 0; ni.max = o.fam - 1; ni.value = 0; ni.id = 'fam-k'; ni.setAttribute('aria-label', 'instance index'); ni.style.width = '5em';
      link('Open instance', function () { var k = Math.max(0, Math.min(o.fam - 1, parseInt(ni.value, 10) || 0)); openInstances(o, k, function () { var kid = o.kids[k]; if (kid) { select(kid.id, { from: 'graph' }); center(kid.id); } }); }).id = 'fam-one';
      links.appendChild(ni);
    }
    if (links.childNodes.length) body.appendChild(links);
  }

  // ---------- search ----------
  var matches = [], mi = -1, qTimer = null;
  function doSearch() {
    if (!treeReady) { whenTree(doSearch); return; }
    var q = $('q').value.trim().toLowerCase(); matches = []; mi = -1; matchSet = Object.create(null);
    if (q) {
      var push = function (o, s) { if (String(s).toLowerCase().indexOf(q) >= 0) { matches.push(o.id); matchSet[o.id] = true; return true; } return false; };
      P.modules.forEach(function (m) { push(m, (m.prefix || '') + ' ' + (m.type || '') + ' ' + (m.name || '')); });
      P.parameters.forEach(function (p) { push(p, p.key || p.id); });
      P.operations.forEach(function (o) { push(o, (o.op || '') + ' ' + (o.name || '') + ' ' + (o.module || '') + ' ' + o.id); });
      P.findings.forEach(function (f) { push(f, (f.rule || '') + ' ' + (f.message || '')); });
      // Groups are marked by id whether or not they have been built yet (drawing looks ids up).
      if (G) { var seen = new Set(); G.ops.forEach(function (o) { for (var m = o.module || ''; m && !seen.has(m); m = m.slice(0, Math.max(0, m.lastIndexOf('.')))) { seen.add(m); if (m.toLowerCase().indexOf(q) >= 0) matchSet['g:' + m] = true; } }); }
    }
    $('q-count').textContent = q ? (matches.length ? '0 / ' + fmtInt(matches.length) : 'no match') : '';
    draw(); writeHash();
  }
  function step(d) {
    if (!matches.length) return;
    mi = (mi + d + matches.length) % matches.length;
    $('q-count').textContent = (mi + 1) + ' / ' + fmtInt(matches.length);
    var id = matches[mi], o = byId.get(id);
    if (o._kind === 'operation') goGraph(id);
    else if (o._kind === 'finding') { showView('findings'); T.findings.reveal(id); select(id, { from: 'findings' }); }
    else { if (st.view !== 'architecture') showView('architecture'); revealInTree(id); select(id, { from: 'tree' }); }
  }
  $('q').addEventListener('input', function () { clearTimeout(qTimer); qTimer = setTimeout(doSearch, 150); });
  $('q').addEventListener('keydown', function (e) { if (e.key === 'Enter') { clearTimeout(qTimer); if (!matches.length || mi < 0 && $('q-count').textContent === '') doSearch(); step(e.shiftKey ? -1 : 1); e.preventDefault(); } else if (e.key === 'Escape') { $('q').value = ''; doSearch(); $('q').blur(); } });
  $('q-next').onclick = function () { step(1); }; $('q-prev').onclick = function () { step(-1); };
  document.addEventListener('keydown', function (e) {
    if (/INPUT|SELECT|TEXTAREA/.test(document.activeElement.tagName)) return;
    if (e.key === '/') { $('q').focus(); e.preventDefault(); }
    else if (e.key === 'Escape') select(null);
    else if (st.view === 'dataflow' && document.activeElement !== wrap && /^[+=\-fF0]$|^Arrow/.test(e.key)) { wrap.focus(); wrap.dispatchEvent(new KeyboardEvent('keydown', { key: e.key })); }
  });

  // ---------- start ----------
  inspect(null);
  var h0 = readHash();
  hashLock = true;
  if (h0.q) { $('q').value = h0.q; doSearch(); }
  var first = h0.view || (P.operations.length ? 'dataflow' : 'architecture');
  showView(first);
  if (h0.sel) (lookup(h0.sel) ? function (f) { f(); } : whenTree)(function () { var o0 = lookup(h0.sel); if (o0 && (o0._kind === 'operation' || o0._kind === 'group')) goGraph(o0.id); else if (o0) select(h0.sel); });
  hashLock = false; writeHash();
  window.addEventListener('hashchange', function () { var h = readHash(); if (h.view && h.view !== st.view) showView(h.view); if (h.sel && h.sel !== st.sel && lookup(h.sel)) { var o1 = lookup(h.sel), k = o1._kind; if (k === 'operation' || k === 'group') goGraph(o1.id); else select(h.sel); } });
  // Test/bench hooks (read-only introspection; no behaviour depends on them).
  // Whatever the first view, the tree part loads once that view has painted.
  if (st.view !== 'dataflow') afterPaint(loadTree);
  function afterPaint(f) { requestAnimationFrame(function () { setTimeout(f, 0); }); }
  mark('started'); started = true; publish();
  function publish() {
  if (!started || !treeReady) return;
  window.cg = { marks: MARKS, ready: true, firstViewMs: performance.now() - T0, state: st, screenPos: function (id) { var v = absPos[id], r = wrap.getBoundingClientRect(); return v ? { x: r.left + view.x + (v.x + v.w / 2) * view.k, y: r.top + view.y + (v.y + 10) * view.k } : null; },
    box: function (id) { var v = absPos[id], r = wrap.getBoundingClientRect(); return v ? { x: r.left + view.x + v.x * view.k, y: r.top + view.y + v.y * view.k, w: v.w * view.k, h: v.h * view.k, open: v.open } : null; },
    edgeScreenPos: function (tid) { var r = wrap.getBoundingClientRect(); for (var i = 0; i < visEdges.length; i++) { var e = visEdges[i]; if (e.agg && e.agg.tensor === tid && e.pts.length >= 4) { var p = e.pts, m = Math.floor(p.length / 4) * 2; var x = (p[m - 2 >= 0 ? m - 2 : 0] + p[m]) / 2, y = (p[m - 1 >= 0 ? m - 1 : 1] + p[m + 1]) / 2; return { x: r.left + view.x + (e.ox + x) * view.k, y: r.top + view.y + (e.oy + y) * view.k }; } } return null; },
    node: function (id) { var n = lookup(id); return n ? { id: n.id, kind: n._kind, name: n._kind === 'group' ? n.name : label(n), static: n.static || null, instance: n.instance != null ? n.instance : null, ns: n.ns || 0, drawn: !!absPos[n.id] } : null; },
    unrolled: function () { return G && G.unrolled ? G.ops.map(function (o) { return { id: o.id, instance: o.instance, srcs: srcsOf(o).map(function (x) { return x[0].id; }) }; }) : []; },
    opsOf: function (id) { var g = lookup(id); return g && g._kind === 'group' ? partition(g).ops.map(function (o) { return { id: o.id, static: o.static || null, instance: o.instance != null ? o.instance : null }; }) : []; },
    edgesOf: function (id) { var g = lookup(id); return g && g._kind === 'group' ? Array.from(groupEdges(g).values(), function (e) { return [e.f, e.t]; }) : []; },
    // Where the last frame drew each edge label (all: where every label of the graph is placed,
    // drawn or not) and each closed box, in page pixels; a label's box is its text's, pad excluded.
    labels: function (all) {
      var r = wrap.getBoundingClientRect(), k = view.k, sx = function (x) { return r.left + view.x + x * k; }, sy = function (y) { return r.top + view.y + y * k; };
      var list = all ? placeLabels(placedArea) : drawnLabels, labelled = visEdges.filter(function (e) { return e.agg && e.pts.length >= 4 && edgeLabel(e); }).length;
      measureCtx.font = LABEL_FONT;
      return { zoom: k, labelled: labelled, placed: list.length, area: placedArea,
        labels: list.map(function (L) { var b = L.r, tw = measureCtx.measureText(L.text).width; return { text: L.text, x: sx(b[0] + LABEL_PAD), y: sy(b[1] + 1), w: tw * k, h: (b[3] - 2) * k }; }),
        boxes: vis.filter(function (v) { return !v.open; }).map(function (v) { return { id: v.n.id, x: sx(v.x), y: sy(v.y), w: v.w * k, h: v.h * k }; }) };
    },
    // The Architecture tree's rows as listed (all of them, not only those on screen): kind and name.
    treeRows: function () { return archTable ? archTable.rows.map(function (r) { return r.kind + ' ' + nameOf(r); }) : []; },
    // The heat overlay's view of a box: the time it colours by and the colour (null: grey).
    heat: function (id) { var n = lookup(id); return n ? { on: heat, ns: heatNs(n), fill: heatFill(n) } : null; },
    isExpanded: function (id) { return !!expanded[id] && !!lay[id]; }, pending: function () { return pending; }, groups: function () { return G ? Array.from(G.groups.values(), function (g) { return g.id; }) : []; }, visible: function () { return vis.length; } };
  }
  }
})();
