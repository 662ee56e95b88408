// Layout of one group's contents. Shared by the web worker (normal path) and the main thread
// (fallback when workers are unavailable). A spec is {id, nodes:[{id,w,h,sizeFrom?}], edges:[[a,b]]};
// `sizes` maps an already laid-out group id to its expanded box size, so a batch can be laid out
// bottom-up (an expanded child's size feeds its parent's layout in the same batch).
var CG_HEADER = 26, CG_PAD = 14, CG_DAGRE_MAX = 400;
function cgLayoutSpec(spec, sizes) {
  var nodes = spec.nodes.map(function (n) {
    var s = n.sizeFrom != null ? sizes[n.sizeFrom] : null;
    return { id: n.id, w: s ? s.w : n.w, h: s ? s.h : n.h };
  });
  var r = spec.rel ? cgCached(spec, nodes) : cgLayout(nodes, spec.edges);
  if (spec.minW && r.w < spec.minW) r = { w: spec.minW, h: r.h, pos: r.pos, edges: r.edges };
  sizes[spec.id] = { w: r.w, h: r.h + CG_HEADER };
  return r;
}
function cgLayout(nodes, edges) {
  return (typeof dagre !== 'undefined' && nodes.length <= CG_DAGRE_MAX) ? cgDagre(nodes, edges) : cgLayered(nodes, edges);
}
// The 32 instances of a layer hold the same operations in the same shape: a spec may carry `rel`,
// each node's id relative to its group (a child group's last segment, an operation's static id),
// and a layout computed once for that shape (same relative ids, sizes and edges) is reused with
// the ids mapped back, so opening all 32 layers lays out one of each kind of box.
var CG_LAYOUT_CACHE = new Map();
function cgCached(spec, nodes) {
  var rel = spec.rel, toRel = {}, fromRel = {};
  nodes.forEach(function (n, i) { toRel[n.id] = rel[i]; fromRel[rel[i]] = n.id; });
  var key = nodes.map(function (n, i) { return rel[i] + ':' + n.w + 'x' + n.h; }).join('\u0001') + '|' +
    spec.edges.map(function (e) { return toRel[e[0]] + '>' + toRel[e[1]]; }).join('\u0001');
  var c = CG_LAYOUT_CACHE.get(key);
  if (!c) {
    var r = cgLayout(nodes, spec.edges), pos = {};
    Object.keys(r.pos).forEach(function (id) { pos[toRel[id]] = r.pos[id]; });
    c = { w: r.w, h: r.h, pos: pos, edges: r.edges.map(function (e) { return { f: toRel[e.f], t: toRel[e.t], pts: e.pts }; }) };
    if (CG_LAYOUT_CACHE.size > 4000) CG_LAYOUT_CACHE.clear();
    CG_LAYOUT_CACHE.set(key, c);
  }
  var out = {};
  Object.keys(c.pos).forEach(function (k) { out[fromRel[k]] = c.pos[k]; });
  return { w: c.w, h: c.h, pos: out, edges: c.edges.map(function (e) { return { f: fromRel[e.f], t: fromRel[e.t], pts: e.pts }; }) };
}
function cgDagre(nodes, edges) {
  var g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: 'TB', nodesep: 22, ranksep: 34, edgesep: 10, marginx: CG_PAD, marginy: CG_PAD,
               ranker: nodes.length > 150 ? 'longest-path' : 'network-simplex' });
  g.setDefaultEdgeLabel(function () { return {}; });
  nodes.forEach(function (n) { g.setNode(n.id, { width: n.w, height: n.h }); });
  edges.forEach(function (e) { if (e[0] !== e[1]) g.setEdge(e[0], e[1]); });
  dagre.layout(g);
  var pos = {}, out = [];
  nodes.forEach(function (n) { var v = g.node(n.id); pos[n.id] = [v.x - n.w / 2, v.y - n.h / 2, n.w, n.h]; });
  g.edges().forEach(function (e) {
    var pts = [];
    (g.edge(e).points || []).forEach(function (p) { pts.push(Math.round(p.x), Math.round(p.y)); });
    out.push({ f: e.v, t: e.w, pts: pts });
  });
  var gr = g.graph();
  return { w: Math.max(gr.width || 0, 120), h: Math.max(gr.height || 0, 40), pos: pos, edges: out };
}
// Linear-time layered layout for groups too wide for dagre: longest-path ranks, one barycentre
// sweep, straight edges. It keeps a 50k-op group responsive where dagre would take seconds.
function cgLayered(nodes, edges) {
  var idx = {}, n = nodes.length, i;
  nodes.forEach(function (v, k) { idx[v.id] = k; });
  var outs = [], indeg = new Int32Array(n), rank = new Int32Array(n);
  for (i = 0; i < n; i++) outs.push([]);
  edges.forEach(function (e) { var a = idx[e[0]], b = idx[e[1]]; if (a !== undefined && b !== undefined && a !== b) { outs[a].push(b); indeg[b]++; } });
  var queue = [], seen = new Uint8Array(n);
  for (i = 0; i < n; i++) if (!indeg[i]) queue.push(i);
  var done = 0, scan = 0;
  for (var qi = 0; done < n; qi++) {
    if (qi >= queue.length) { while (seen[scan]) scan++; queue.push(scan); } // a cycle: break it here
    var v = queue[qi]; if (seen[v]) continue; seen[v] = 1; done++;
    outs[v].forEach(function (w) { if (!seen[w]) { if (rank[w] < rank[v] + 1) rank[w] = rank[v] + 1; if (--indeg[w] === 0) queue.push(w); } });
  }
  var layers = [];
  for (i = 0; i < n; i++) { (layers[rank[i]] || (layers[rank[i]] = [])).push(i); }
  var xc = new Float64Array(n), ins = [];
  for (i = 0; i < n; i++) ins.push([]);
  for (i = 0; i < n; i++) outs[i].forEach(function (w) { ins[w].push(i); });
  var y = CG_PAD, W = 0, pos = {};
  var rows = layers.filter(Boolean);
  rows.forEach(function (row) {
    row.sort(function (a, b) {
      var ba = ins[a].length ? ins[a].reduce(function (s, p) { return s + xc[p]; }, 0) / ins[a].length : a;
      var bb = ins[b].length ? ins[b].reduce(function (s, p) { return s + xc[p]; }, 0) / ins[b].length : b;
      return ba - bb;
    });
    var x = CG_PAD, hmax = 0;
    row.forEach(function (v) { xc[v] = x + nodes[v].w / 2; x += nodes[v].w + 22; if (nodes[v].h > hmax) hmax = nodes[v].h; });
    row.forEach(function (v) { pos[nodes[v].id] = [xc[v] - nodes[v].w / 2, y + (hmax - nodes[v].h) / 2, nodes[v].w, nodes[v].h]; });
    y += hmax + 34; if (x > W) W = x;
  });
  var out = [];
  edges.forEach(function (e) {
    var a = pos[e[0]], b = pos[e[1]]; if (!a || !b || e[0] === e[1]) return;
    out.push({ f: e[0], t: e[1], pts: [a[0] + a[2] / 2, a[1] + a[3], b[0] + b[2] / 2, b[1]] });
  });
  return { w: Math.max(W - 22 + CG_PAD, 120), h: Math.max(y - 34 + CG_PAD, 40), pos: pos, edges: out };
}
