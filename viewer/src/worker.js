// Web worker: lays out a batch of group specs bottom-up, so the page stays responsive while a
// large group is being placed.
onmessage = function (ev) {
  var sizes = ev.data.sizes || {}, out = {};
  ev.data.specs.forEach(function (s) { out[s.id] = cgLayoutSpec(s, sizes); });
  postMessage({ job: ev.data.job, layouts: out });
};
