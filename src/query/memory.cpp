// `candle-graph memory`: weights, the state a forward keeps, activations and training memory, as
// the model's code allocates them (issue #38). See docs/memory.md for the rules and the hand
// arithmetic each is held to.
#include "query/memory.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "analysis/config_values.hpp"
#include "checkpoint/safetensors_header.hpp"
#include "query/memory_liveness.hpp"
#include "query/summary_rows.hpp"
#include "util/error.hpp"
#include "util/json_writer.hpp"

namespace cg::query {
namespace {

std::optional<std::uint64_t> mul(std::optional<std::uint64_t> a, std::optional<std::uint64_t> b) {
  if (!a || !b) return std::nullopt;
  if (*a != 0 && *b > UINT64_MAX / *a) return std::nullopt;
  return *a * *b;
}

std::optional<std::uint64_t> add(std::optional<std::uint64_t> a, std::optional<std::uint64_t> b) {
  if (!a || !b || *b > UINT64_MAX - *a) return std::nullopt;
  return *a + *b;
}

std::optional<std::uint64_t> digits(const std::string& s) {
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoull(s);
}

// The weaker of two bounds when figures are added: exact + lower = lower; lower + upper =
// unknown (neither side holds).
Bound combine(Bound a, Bound b) {
  if (a == b) return a;
  if (a == Bound::unknown || b == Bound::unknown) return Bound::unknown;
  if (a == Bound::exact) return b;
  if (b == Bound::exact) return a;
  return Bound::unknown;
}

MemoryFigure sum(const MemoryFigure& a, const MemoryFigure& b) {
  MemoryFigure out;
  out.bound = combine(a.bound, b.bound);
  out.bytes = add(a.bytes, b.bytes);
  if (!out.bytes) out.bound = Bound::unknown;
  return out;
}

// What a figure says for certain: the least and the most it can be (nullopt: no limit).
std::uint64_t lo(const MemoryFigure& f) {
  return f.bytes && (f.bound == Bound::exact || f.bound == Bound::lower) ? *f.bytes : 0;
}
std::optional<std::uint64_t> hi(const MemoryFigure& f) {
  if (f.bytes && (f.bound == Bound::exact || f.bound == Bound::upper)) return f.bytes;
  return std::nullopt;
}

// A total of parts, each exact or bounded: exact when every part is; else its upper bound when
// every part has one, else its lower bound when it is above 0; else unknown.
MemoryFigure total_of(const std::vector<MemoryFigure>& parts, std::string note) {
  std::optional<std::uint64_t> l = 0, h = 0;
  bool exact = true;
  for (const auto& p : parts) {
    l = add(l, lo(p));
    h = add(h, hi(p));
    exact = exact && p.bound == Bound::exact && p.bytes;
  }
  MemoryFigure f;
  if (exact && l) return {l, Bound::exact, ""};
  if (h) return {h, Bound::upper, std::move(note)};
  if (l && *l > 0) return {l, Bound::lower, std::move(note)};
  return {std::nullopt, Bound::unknown, std::move(note)};
}

std::string group(std::uint64_t n) {
  std::string s = std::to_string(n), out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

// 1536 -> "1.50 KiB"; binary units, labelled as such.
std::string human(std::uint64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 6) {
    v /= 1024.0;
    ++u;
  }
  if (u == 0) return std::to_string(bytes) + " B";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}

std::string figure_text(const MemoryFigure& f) {
  if (!f.bytes) return "?";
  switch (f.bound) {
    case Bound::exact:
      return human(*f.bytes);
    case Bound::lower:
      return "at least " + human(*f.bytes);
    case Bound::upper:
      return "at most " + human(*f.bytes);
    case Bound::unknown:
      return "?";
  }
  return "?";
}

// A stored tensor's bytes with the batch and context bound: every dimension a number, a bound
// name, or (along the dimension a cache appends on) the positions held.
struct Sized {
  std::optional<std::uint64_t> bytes;
  std::string shape;  // "[1, 8, 4096, 128]", unknown sizes as written
};

// `held`: the dimension a cache keeps its positions along and how many it holds (a `cat` cache:
// the context; a candle-nn `KvCache`: its allocation), in place of what one call stored there.
Sized size_of(const ir::StateStore::Stored& t, const std::map<std::string, std::uint64_t>& bind,
              std::optional<std::pair<std::uint64_t, std::uint64_t>> held, std::uint64_t elem_bytes,
              std::optional<std::uint64_t> batch_first) {
  Sized s;
  std::optional<std::uint64_t> n = t.shape.rank ? std::optional<std::uint64_t>(1) : std::nullopt;
  s.shape = "[";
  for (std::size_t i = 0; i < t.shape.dimensions.size(); ++i) {
    const std::string& e = t.shape.dimensions[i].expr;
    std::optional<std::uint64_t> d = digits(e);
    if (held && held->first == i) {
      d = held->second;
    } else if (!d) {
      auto b = bind.find(e);
      if (b != bind.end()) d = b->second;
      // A name the root's input does not give (its batch is `_`): Candle's tensors are batch
      // first, so a state tensor's dimension 0 is the batch.
      if (!d && i == 0 && batch_first && e != "?" &&
          e.find_first_of(" +-*/()") == std::string::npos)
        d = batch_first;
    }
    s.shape += (i ? ", " : "") + (d ? std::to_string(*d) : e);
    n = mul(n, d);
  }
  s.shape += "]";
  if (!t.shape.rank) s.shape = "?";
  s.bytes = mul(n, elem_bytes);
  return s;
}

const ir::InstanceCall* main_call(const ir::ModelIr& ir, const InputDims& dims) {
  InstanceIndex idx(ir, dims);
  return idx.main_roots().empty() ? nullptr : idx.main_roots().front();
}

// Quantized weights (--gguf, --quant, or a root loading through the quantized VarBuilder) replace
// the figure at the dtype.
void quantized_weights(MemoryReport& r, const ir::ModelIr& ir, const MemoryOptions& opts,
                       const std::map<std::string, std::uint64_t>& bind) {
  if (opts.gguf) {
    QuantWeights q = weights_from_gguf(*opts.gguf, &ir, opts.dequantized);
    r.weights = {q.bytes, q.bytes ? Bound::exact : Bound::unknown,
                 "the file's tensors at their GGML block formats"};
    if (q.bytes && q.file_bytes && *q.bytes != *q.file_bytes)
      r.weights.note += "; those the code dequantizes at load at F32 (the file's tensors: " +
                        group(*q.file_bytes) + " bytes)";
    r.weights_format = q.source;
    r.quant = std::move(q);
    return;
  }
  if (opts.quant) {
    // Each part counted by summary (shared weights once, families multiplied).
    auto count = [&](QuantPart part, QuantCounts& c) -> std::optional<std::uint64_t> {
      const ir::ModelIr sub = with_parameters(ir, *opts.quant, part, opts.dequantized);
      if (sub.parameters.empty()) return 0;
      SummaryModel m;
      try {
        m = build_summary(sub, "F32", -1, InputDims(bind.begin(), bind.end()));
      } catch (const InputError&) {
        m = build_summary(sub, "F32", -1, opts.dims);
      }
      if (!m.totals.lower_bound.empty() || m.totals.unknown_leaves > 0 ||
          (m.totals.total_max && m.totals.total_max != m.totals.total)) {
        c.lower = true;
        c.lower_note =
            !m.totals.lower_bound.empty() ? m.totals.lower_bound
            : m.totals.unknown_leaves > 0
                ? std::to_string(m.totals.unknown_leaves) + " parameters of unknown shape"
                : "alternatives the checkpoint decides: the smallest counted";
      }
      return m.totals.total;
    };
    QuantCounts c;
    c.quantized = count(QuantPart::quantized, c);
    c.f32 = count(QuantPart::f32, c);
    c.dequantized = count(QuantPart::dequantized, c);
    std::set<std::string> seen;
    for (const auto& p : ir.parameters)
      if (quant_part(p, *opts.quant, opts.dequantized) == QuantPart::refused &&
          seen.insert(p.key).second)
        c.refused.push_back(p.key + " " + checkpoint::shape_text(*p.shape));
    QuantWeights q = weights_at_quant(*opts.quant, c);
    r.weights.bytes = q.bytes;
    r.weights.bound = !q.bytes ? Bound::unknown : q.exact ? Bound::exact : Bound::lower;
    r.weights.note = q.note.empty() ? "rank >= 2 at " + std::string(opts.quant->name) +
                                          ", rank-1 tensors (norms, biases) at F32" +
                                          (c.dequantized.value_or(0) > 0
                                               ? ", those the code dequantizes at load at F32"
                                               : "")
                                    : q.note;
    r.weights_format = q.source;
    r.quant = std::move(q);
    return;
  }
  if (opts.quantized_builder) {
    r.weights = {std::nullopt, Bound::unknown,
                 "loaded through candle-transformers' quantized VarBuilder: each tensor has the "
                 "GGUF file's type; give --gguf FILE (exact) or --quant TYPE (e.g. --quant q4_k)"};
    r.weights_format = "quantized";
  }
}

}  // namespace

checkpoint::GgmlType parse_quant_type(const std::string& text) {
  auto t = checkpoint::ggml_type_named(text);
  if (!t)
    throw InputError("--quant " + text, "not a GGML type candle reads (expected one of " +
                                            checkpoint::ggml_type_names() +
                                            "; case and the _ before K are free)");
  return *t;
}

const char* to_string(Bound b) {
  switch (b) {
    case Bound::exact:
      return "exact";
    case Bound::lower:
      return "lower_bound";
    case Bound::upper:
      return "upper_bound";
    case Bound::unknown:
      return "unknown";
  }
  return "unknown";
}

std::uint64_t parse_memory_size(const std::string& text) {
  auto bad = [&]() {
    return InputError("--device-memory " + text,
                      "not a size (expected a number of bytes or a number with a unit: "
                      "24GiB, 80GB, 16000MiB, 1.5TiB)");
  };
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  if (i == 0 || i > 24 || std::count(text.begin(), text.begin() + static_cast<long>(i), '.') > 1)
    throw bad();
  const double v = std::strtod(text.substr(0, i).c_str(), nullptr);
  std::string unit = text.substr(i);
  while (!unit.empty() && unit.front() == ' ')
    unit.erase(unit.begin());
  std::string u;
  for (char c : unit)
    u += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::map<std::string, double> units = {{"", 1.0},
                                                      {"b", 1.0},
                                                      {"k", 1024.0},
                                                      {"kib", 1024.0},
                                                      {"kb", 1e3},
                                                      {"m", 1048576.0},
                                                      {"mib", 1048576.0},
                                                      {"mb", 1e6},
                                                      {"g", 1073741824.0},
                                                      {"gib", 1073741824.0},
                                                      {"gb", 1e9},
                                                      {"t", 1099511627776.0},
                                                      {"tib", 1099511627776.0},
                                                      {"tb", 1e12}};
  auto f = units.find(u);
  if (f == units.end()) throw bad();
  const double bytes = v * f->second;
  if (!(bytes >= 1.0) || bytes >= 1.8e19) throw bad();
  return static_cast<std::uint64_t>(bytes);
}

MemoryReport build_memory(const pipeline::Analysis& a, const std::string& config_path,
                          const MemoryOptions& opts) {
  const ir::ModelIr& ir = a.ir;
  MemoryReport r;
  // A quantized model computes in F32 (candle's QMatMul and dequantized tensors are F32): its
  // state is at F32 unless --dtype says otherwise, not at config.json's torch_dtype.
  const bool quantized = opts.quantized_builder || opts.gguf || opts.quant;
  r.dtype = quantized && opts.dtype.empty() ? "F32" : summary_dtype(opts.dtype, config_path);
  r.batch = opts.batch;
  for (const auto& c : ir.components)
    r.model += (r.model.empty() ? "" : ", ") + c.qualified_name;
  if (ir.components.size() != 1)
    throw InputError("", "memory: the analysis found " + std::to_string(ir.components.size()) +
                             " models; name one with --root (e.g. --root " +
                             (ir.components.empty() ? std::string("my_crate::Model")
                                                    : ir.components.front().qualified_name) +
                             ")");
  const std::uint64_t elem = dtype_bytes(r.dtype);
  if (elem == 0) throw InputError("--dtype " + r.dtype, "not a dtype (F32, F16, BF16, ...)");

  // The root forward's token input: its dimension 0 is the batch, 1 the sequence.
  const ir::InstanceCall* root = main_call(ir, opts.dims);
  if (!root)
    throw InputError("", "memory: `" + r.model +
                             "` has no forward the analysis runs (no `forward` on its root type)");
  const ir::Function* fn = nullptr;
  for (const auto& f : ir.functions)
    if (f.id == root->entrypoint) fn = &f;
  const ir::Tensor* input = nullptr;
  if (fn && !fn->tensor_inputs.empty())
    for (const auto& t : ir.tensors)
      if (t.id == fn->tensor_inputs.front()) input = &t;
  auto name_of = [&](std::size_t i) -> std::string {
    if (!input || input->shape.dimensions.size() <= i) return {};
    const std::string& e = input->shape.dimensions[i].expr;
    return e == "?" || digits(e) ? std::string() : e;
  };
  r.batch_name = name_of(0);
  r.context_name = name_of(1);

  if (opts.context) {
    r.context = *opts.context;
    r.context_source = "--context";
  } else if (!config_path.empty()) {
    auto values = analysis::read_config_values(config_path);
    for (const char* key : {"max_position_embeddings", "text_config.max_position_embeddings",
                            "n_positions", "max_seq_len"})
      if (const auto* v = values.find(key);
          v && v->kind == analysis::SymValue::Kind::integer && v->integer > 0) {
        r.context = static_cast<std::uint64_t>(v->integer);
        r.context_source = key;
        break;
      }
  }
  if (r.context == 0)
    throw InputError("",
                     "memory: give the context length with --context N (the config names no "
                     "max_position_embeddings)");
  if (r.context_name.empty())
    r.notes.push_back(
        "The root forward's input names no sequence dimension: --context binds "
        "nothing there (name dimensions with --input-shape).");

  std::map<std::string, std::uint64_t> bind(opts.dims.begin(), opts.dims.end());
  if (!r.batch_name.empty()) bind[r.batch_name] = r.batch;
  if (!r.context_name.empty()) bind[r.context_name] = r.context;

  // Weights: the summary's count at the dtype (shared weights once).
  // (The summary refuses a dimension its figures are not written in: then the activations stay
  // symbolic, and unknown here.)
  SummaryModel sm;
  try {
    sm = build_summary(ir, r.dtype, -1, InputDims(bind.begin(), bind.end()));
  } catch (const InputError&) {
    sm = build_summary(ir, r.dtype, -1, opts.dims);
  }
  r.parameters = sm.totals.total;
  r.weights.bytes = sm.totals.bytes;
  r.weights.bound = Bound::exact;
  if (!sm.totals.lower_bound.empty() || sm.totals.unknown_leaves > 0) {
    r.weights.bound = Bound::lower;
    r.weights.note = sm.totals.lower_bound.empty()
                         ? std::to_string(sm.totals.unknown_leaves) + " parameters of unknown shape"
                         : sm.totals.lower_bound;
  } else if (sm.totals.total_max && sm.totals.total_max != sm.totals.total) {
    r.weights.bound = Bound::lower;
    r.weights.note = "alternatives the checkpoint decides: up to " +
                     (sm.totals.bytes_max ? human(*sm.totals.bytes_max) : std::string("?"));
  }
  if (!r.weights.bytes) r.weights.bound = Bound::unknown;
  quantized_weights(r, ir, opts, bind);
  if (quantized && opts.dtype.empty())
    r.notes.push_back(
        "Quantized weights: the KV cache and state are counted at F32, the dtype candle's "
        "quantized layers compute in (--dtype to change).");

  // State: the main forward's stores.
  r.kv_cache = {0, Bound::exact, ""};
  r.state = {0, Bound::exact, ""};
  for (const auto& s : ir.state_stores) {
    if (s.entrypoint != root->entrypoint) continue;
    MemoryState m;
    m.instance = s.instance.value_or("");
    m.place = s.place;
    m.source = s.source;
    m.library = s.library;
    m.instances = s.instances;
    MemoryFigure per{0, Bound::exact, ""};
    // candle-nn's caches (candle-nn/src/kv_cache.rs) with their constructor's arguments read:
    // `Cache` allocates `max_seq_len` positions at the first append and grows by as many, so
    // it holds the context rounded up to a multiple of them; `RotatingCache` allocates its
    // window at the first append and writes over it, whatever the context.
    const bool stepped = s.library == "KvCache" || s.library == "Cache";
    const bool rotating = s.library == "RotatingKvCache" || s.library == "RotatingCache";
    const bool ctor_read = s.cache_dim && s.cache_max_seq_len && *s.cache_max_seq_len > 0;
    std::optional<std::uint64_t> positions;
    if (ctor_read && stepped)
      positions =
          mul((r.context + *s.cache_max_seq_len - 1) / *s.cache_max_seq_len, s.cache_max_seq_len);
    if (ctor_read && rotating) positions = s.cache_max_seq_len;
    if (positions) m.linear = false;
    for (const auto& t : s.tensors) {
      const std::uint64_t eb =
          t.dtype != "Unknown" && dtype_bytes(t.dtype) ? dtype_bytes(t.dtype) : elem;
      std::optional<std::pair<std::uint64_t, std::uint64_t>> held;
      if (t.appends_along) held = std::make_pair(*t.appends_along, r.context);
      if (positions) held = std::make_pair(*s.cache_dim, *positions);
      Sized z =
          size_of(t, bind, held, eb,
                  r.batch_name.empty() ? std::optional<std::uint64_t>(r.batch) : std::nullopt);
      // A cache dimension past the stored tensor's rank: the positions are not placed.
      if (positions && *s.cache_dim >= t.shape.dimensions.size()) z.bytes.reset();
      m.shapes.push_back(z.shape);
      per.bytes = add(per.bytes, z.bytes);
      if (!z.bytes) per.bound = Bound::unknown;
      if (t.appends_along) m.grows = true;
      for (const auto& d : t.shape.dimensions)
        if (d.expr == r.context_name && !r.context_name.empty()) m.grows = true;
      if (t.narrowed_at && per.bound == Bound::exact) {
        per.bound = Bound::upper;
        per.note = "the code narrows it at " + *t.narrowed_at +
                   " under a condition not evaluated: every position counted";
      }
    }
    if (!s.library.empty()) m.grows = true;
    if (s.slots && *s.slots > 1) {
      m.slots = *s.slots;
      per.bytes = mul(per.bytes, *s.slots);
      per.note = "the store's index moves over the " + group(*s.slots) +
                 " slots of a fixed-size array from call to call: " + group(*s.slots) +
                 " such tensors held at once";
    }
    if (stepped && positions) {
      per.note = "candle-nn's " + s.library + " allocates its constructor's max_seq_len (" +
                 group(*s.cache_max_seq_len) + ") positions at the first append and grows by " +
                 "as many: " + group(*positions) + " positions held at a context of " +
                 group(r.context);
    } else if (stepped) {
      if (per.bound == Bound::exact) per.bound = Bound::lower;
      per.note = "candle-nn's " + s.library +
                 " allocates its constructor's max_seq_len positions at the first append and "
                 "grows by as many (that argument is not known here): at least the positions "
                 "held";
    } else if (rotating && positions) {
      per.note = "candle-nn's " + s.library + " allocates its window of " + group(*positions) +
                 " positions (its constructor's max_seq_len) at the first append and writes "
                 "over it: the same at any context";
    } else if (rotating) {
      per.bound = Bound::unknown;
      per.bytes.reset();
      per.note = "candle-nn's " + s.library +
                 " keeps its constructor's max_seq_len positions (the window), not known here";
    } else if (s.library.find('|') != std::string::npos) {
      per.bound = Bound::unknown;
      per.bytes.reset();
      per.note = "a crate enum holds one of candle-nn's " + s.library +
                 " per instance; which one each instance holds (and its constructor's "
                 "arguments) is not followed";
    }
    if (!per.bytes) per.bound = Bound::unknown;
    m.per_instance = per;
    m.total = per;
    m.total.bytes = mul(per.bytes, s.instances);
    if (!m.total.bytes) m.total.bound = Bound::unknown;
    MemoryFigure& into = m.grows ? r.kv_cache : r.state;
    into = sum(into, m.total);
    if (!m.total.note.empty() && into.note.empty()) into.note = m.total.note;
    r.states.push_back(std::move(m));
  }
  // Two stores of one line (a layer's `k` and `v`) are listed once each; stores in other
  // entrypoints (a `forward_embeds`) are another run of the same state.

  // Buffers: the tensors the constructor computes and keeps (ir.buffers), each creation once
  // (an `Arc` shared by every layer is one), times the constructions that run it.
  r.buffers = {0, Bound::exact, ""};
  {
    std::vector<std::string> unknown;
    struct Alternatives {
      std::vector<std::uint64_t> sums;  // known bytes per arm
      bool unknown = false;
    };
    std::map<std::string, Alternatives> alternatives;
    std::vector<std::string> branches;
    bool caller_dtype = false;
    // The fields the root's forward stores into (`state.per_layer[i].linear_attention = ..`):
    // a caller-built argument's tensor there is state the forward replaces, counted above as
    // state, not a buffer as well.
    std::set<std::string> stored_fields;
    for (const auto& st : ir.state_stores) {
      if (st.entrypoint != root->entrypoint) continue;
      std::string place = st.place;
      while (!place.empty() && place.back() == ']')
        if (auto open = place.rfind('['); open != std::string::npos)
          place.resize(open);
        else
          break;
      stored_fields.insert(
          place.substr(place.rfind('.') == std::string::npos ? 0 : place.rfind('.') + 1));
    }
    for (const auto& b : ir.buffers) {
      if (b.reached.rfind("forward argument", 0) == 0 && stored_fields.count(b.field)) continue;
      MemoryBuffer m;
      m.instance = b.instance;
      m.owner = b.owner_type + "." + b.field;
      m.source = b.source;
      m.reached = b.reached;
      m.instances = b.instances;
      // A run-time dtype: `vb.dtype()` is the model's (--dtype); a constructor's `dtype`
      // parameter its caller gives, taken as the model's too.
      std::string dt = b.dtype != "Unknown" ? b.dtype : b.dtype_param.empty() ? "" : r.dtype;
      if (!b.dtype_param.empty() && b.dtype_param != "vb.dtype()") caller_dtype = true;
      const std::uint64_t eb = dt.empty() ? 0 : dtype_bytes(dt);
      m.dtype = eb ? dt : "?";
      ir::StateStore::Stored t;
      t.shape = b.shape;
      Sized z = size_of(t, bind, std::nullopt, eb ? eb : 1, std::nullopt);
      m.shape = z.shape;
      if (!eb) z.bytes.reset();
      m.per_instance = {z.bytes, z.bytes ? Bound::exact : Bound::unknown, ""};
      m.total = m.per_instance;
      m.total.bytes = mul(z.bytes, b.instances);
      if (!m.total.bytes) {
        m.total.bound = Bound::unknown;
        const bool sized =
            z.bytes || (!eb && size_of(t, bind, std::nullopt, 1, std::nullopt).bytes);
        std::string why = !b.shape.rank ? "its shape is not followed"
                          : !sized      ? "its shape " + z.shape + " is not all numbers"
                          : !eb         ? "its dtype is not known"
                                        : "how many times the constructor runs is not known";
        unknown.push_back(m.owner + " (" + b.source + ": " + why + ")");
        m.per_instance.note = why;
      }
      if (b.alternative.empty()) {
        r.buffers.bytes = add(r.buffers.bytes, m.total.bytes.value_or(0));
      } else {
        // One arm of a branch the analysis did not decide: "file:line#arm/arms".
        const auto hash = b.alternative.rfind('#'), slash = b.alternative.rfind('/');
        const std::string branch = b.alternative.substr(0, hash);
        auto arm = digits(b.alternative.substr(hash + 1, slash - hash - 1));
        auto arms = digits(b.alternative.substr(slash + 1));
        Alternatives& alt = alternatives[branch];
        if (arms && *arms > 0 && *arms < 4096) alt.sums.resize(*arms, 0);
        if (arm && *arm < alt.sums.size()) alt.sums[*arm] += m.total.bytes.value_or(0);
        if (!m.total.bytes) alt.unknown = true;
        const std::string why = "made in one of " + std::to_string(alt.sums.size()) +
                                " arms of a branch at " + branch + " the analysis does not decide";
        m.per_instance.note += (m.per_instance.note.empty() ? "" : "; ") + why;
      }
      r.buffer_rows.push_back(std::move(m));
    }
    // Only one arm of each undecided branch runs: its smallest arm is certain, its largest the
    // most it can be.
    for (const auto& [branch, alt] : alternatives) {
      if (alt.sums.empty()) continue;
      const std::uint64_t least = *std::min_element(alt.sums.begin(), alt.sums.end());
      const std::uint64_t most = *std::max_element(alt.sums.begin(), alt.sums.end());
      r.buffers.bytes = add(r.buffers.bytes, least);
      if (least != most || alt.unknown)
        branches.push_back("a branch at " + branch + " the analysis does not decide builds " +
                           (alt.unknown ? std::string("buffers of unknown size in one arm")
                                        : "between " + group(least) + " and " + group(most) +
                                              " bytes: the least counted"));
    }
    if (!unknown.empty() || !branches.empty()) {
      std::string l;
      if (!unknown.empty()) {
        l = std::to_string(unknown.size()) + " buffer" + (unknown.size() == 1 ? "" : "s") +
            " of unknown size: ";
        for (std::size_t i = 0; i < unknown.size() && i < 3; ++i)
          l += (i ? "; " : "") + unknown[i];
        if (unknown.size() > 3) l += "; ...";
      }
      for (const auto& br : branches)
        l += (l.empty() ? "" : "; ") + br;
      r.buffers.bound = r.buffers.bytes && *r.buffers.bytes > 0 ? Bound::lower : Bound::unknown;
      if (r.buffers.bound == Bound::unknown) r.buffers.bytes.reset();
      r.buffers.note = std::string(r.buffers.bound == Bound::lower ? "at least: " : "") + l;
    } else if (caller_dtype) {
      r.buffers.note = "a buffer built at its constructor's dtype parameter is counted at " +
                       r.dtype + " (the caller is taken to pass the model's dtype)";
    }
  }

  // Activations: the peak of live tensors over one forward at the batch and context
  // (memory_liveness.hpp); every allocation of the forward is the most it can be.
  {
    const InputDims live_dims(bind.begin(), bind.end());
    const InstanceIndex live_idx(ir, live_dims);
    LivenessOptions lo;
    lo.elem_bytes = elem;
    lo.dtype = r.dtype;
    lo.positions_held = r.context;
    const LivenessPeak lp = activation_peak(ir, live_idx, *root, live_dims, lo);
    r.activations_at = lp.peak_at;
    r.activations_sum = lp.sum_bytes;
    r.activations_kept = lp.kept_bytes;
    r.activations_kept_exact = lp.unknown_allocations == 0;
    const std::string sum_note =
        "every allocation of the forward, none freed: " + group(lp.sum_bytes) + " bytes" +
        (lp.unknown_allocations ? " (at least)" : "");
    if (lp.exact()) {
      r.activations = {lp.peak_bytes, Bound::exact,
                       "live tensors at their peak (each freed after its last use); " + sum_note};
    } else if (lp.peak_bytes > 0) {
      std::string why;
      if (lp.unknown_allocations) {
        why = std::to_string(lp.unknown_allocations) + " allocation" +
              (lp.unknown_allocations == 1 ? "" : "s") + " of unknown size counted as 0 (";
        std::size_t k = 0;
        for (const auto& name : lp.unknown_names) {
          if (k == 3) {
            why += ", ...";
            break;
          }
          why += (k++ ? ", " : "") + name;
        }
        why += ")";
      }
      if (!lp.merged_helpers.empty()) {
        why += std::string(why.empty() ? "" : "; ") + "a helper called more than once in one " +
               "frame is counted once (";
        std::size_t k = 0;
        for (const auto& h : lp.merged_helpers)
          why += (k++ ? ", " : "") + h;
        why += ")";
      }
      r.activations = {lp.peak_bytes, Bound::lower, "at least: " + why + "; " + sum_note};
    } else {
      r.activations = {std::nullopt, Bound::unknown,
                       "not computed: " + std::to_string(lp.unknown_allocations) +
                           " allocations of one forward have a size not known"};
      r.activations_at.clear();  // no peak known: no place to name
    }
  }
  // Inference: weights + state + activations; the least it can be decides "does not fit", the
  // most "fits".
  const std::vector<MemoryFigure> parts = {r.weights, r.kv_cache, r.state, r.buffers,
                                           r.activations};
  r.inference = total_of(parts, r.activations.bound == Bound::unknown
                                    ? "activations not known: at least weights, state and buffers"
                                : r.activations.bound == Bound::lower
                                    ? "the activations' peak is a lower bound"
                                    : "");
  std::optional<std::uint64_t> least = 0, most = 0;
  for (const auto& p : parts) {
    least = add(least, lo(p));
    most = add(most, hi(p));
  }
  // Training with AdamW: weights, their gradients and two moments (each at the weights' dtype),
  // an fp32 master copy of 16-bit weights when asked, and the activations autograd keeps for
  // backward (each tracked operation's output, until backward frees it).
  const bool master = opts.master_fp32 && elem < 4 && r.parameters;
  r.training.bytes = mul(r.weights.bytes, 4);
  if (master) r.training.bytes = add(r.training.bytes, mul(r.parameters, 4));
  r.training.bytes = add(r.training.bytes, r.activations_kept);
  r.training.bytes = add(r.training.bytes, lo(r.buffers));
  r.training.bound = r.weights.bound == Bound::unknown ? Bound::unknown : Bound::lower;
  r.training.note = "weights, gradients and AdamW's two moments (4 x weights)" +
                    std::string(master ? ", an fp32 master copy of the weights" : "") +
                    ", and the activations backward keeps (" +
                    (r.activations_kept_exact ? "" : "at least ") + group(r.activations_kept) +
                    " bytes: every output of an operation downstream of a parameter)" +
                    (lo(r.buffers) ? ", and the buffers the constructor keeps" : "") +
                    "; backward's own transient gradients are left out";
  if (opts.master_fp32 && !master && elem >= 4)
    r.notes.push_back("--master-fp32: the weights are already 32-bit; no master copy added.");
  if (!r.training.bytes) r.training.bound = Bound::unknown;

  // Fit.
  r.device_bytes = opts.device_bytes;
  if (opts.device_bytes) {
    const std::uint64_t dev = *opts.device_bytes;
    if (least && *least > dev) {
      r.fits = "no";
    } else if (most && *most <= dev) {
      r.fits = "yes";
    } else {
      r.fits = "unknown";
    }
    // The state grows linearly in the context and in the batch (append caches): the largest
    // that leaves the weights and constant state room, activations not counted (upper bounds).
    if (r.weights.bytes && r.weights.bound == Bound::exact && r.kv_cache.bytes &&
        r.kv_cache.bound == Bound::exact && r.state.bytes && r.state.bound == Bound::exact &&
        *r.kv_cache.bytes > 0) {
      const std::uint64_t base = *r.weights.bytes + *r.state.bytes + lo(r.buffers);
      if (base < dev) {
        const std::uint64_t room = dev - base;
        const std::uint64_t per_pos = *r.kv_cache.bytes / r.context;  // cat caches: linear
        const bool linear = std::all_of(r.states.begin(), r.states.end(),
                                        [](const MemoryState& s) { return s.linear; });
        if (per_pos > 0 && *r.kv_cache.bytes % r.context == 0 && linear)
          r.max_context = room / per_pos;
        const std::uint64_t per_seq = *r.kv_cache.bytes / r.batch;
        if (per_seq > 0 && *r.kv_cache.bytes % r.batch == 0) r.max_batch = room / per_seq;
      } else {
        r.max_context = 0;
        r.max_batch = 0;
      }
    }
  }
  // A config that names a window the code does not apply: said, since the paper's formula (and
  // other estimators) would count the window.
  if (!config_path.empty()) {
    auto values = analysis::read_config_values(config_path);
    const auto* w = values.find("sliding_window");
    const bool trims = std::any_of(r.states.begin(), r.states.end(), [](const MemoryState& s) {
      return !s.library.empty() && s.library.find("Rotating") != std::string::npos;
    });
    if (w && w->kind == analysis::SymValue::Kind::integer && w->integer > 0 && !trims &&
        r.kv_cache.bound == Bound::exact && static_cast<std::uint64_t>(w->integer) < r.context)
      r.notes.push_back("config.json names a sliding_window of " +
                        group(static_cast<std::uint64_t>(w->integer)) +
                        ", but the code's cache keeps every position (" +
                        (std::all_of(r.states.begin(), r.states.end(),
                                     [](const MemoryState& s) { return s.linear; })
                             ? "it concatenates and never trims): the KV cache is counted at the "
                               "full context."
                             : "it never trims to the window): the KV cache is counted at what "
                               "it allocates for the full context."));
    else if (w && w->kind == analysis::SymValue::Kind::integer && w->integer > 0 && !trims &&
             r.kv_cache.bound == Bound::exact)
      r.notes.push_back("config.json names a sliding_window of " +
                        group(static_cast<std::uint64_t>(w->integer)) +
                        "; the code's cache does not trim to it (it concatenates every position).");
  }
  if (r.states.empty())
    r.notes.push_back(
        "The main forward stores no tensor into the model's state: no KV cache or recurrent "
        "state was found (a cache held by a type the analysis does not follow is not seen).");
  return r;
}

namespace {

// Each GGML type's share of the weights, and what --gguf found against the model.
void quant_lines(std::string& o, const QuantWeights& q) {
  const std::string pad(26, ' ');
  for (const auto& t : q.by_type)
    o += pad + t.type + (t.dequantized ? " (dequantized at load)" : "") + ": " +
         (t.tensors && q.source.rfind("--gguf", 0) == 0
              ? group(t.tensors) + (t.tensors == 1 ? " tensor, " : " tensors, ")
              : std::string()) +
         group(t.elements) + " elements, " + human(t.bytes) + " (" + group(t.bytes) + " bytes)\n";
  if (!q.checked) return;
  o += pad + "Against the model's parameters: " + group(q.matched) + " tensors match, " +
       group(q.missing_count) + " missing, " + group(q.unclaimed_count) + " not asked for, " +
       group(q.mismatch_count) + " of another shape\n";
  auto list = [&](const char* what, std::size_t n, const std::vector<std::string>& names) {
    if (n == 0) return;
    std::string l;
    for (const auto& x : names)
      l += (l.empty() ? "" : ", ") + x;
    o += pad + "  " + what + ": " + l + (n > names.size() ? ", ..." : "") + "\n";
  };
  list("missing from the file", q.missing_count, q.missing);
  list("in the file, not asked for", q.unclaimed_count, q.unclaimed);
  list("another shape", q.mismatch_count, q.mismatches);
}

}  // namespace

MemoryReport memory_from_gguf(const std::string& root, const MemoryOptions& opts,
                              const std::string& why) {
  MemoryReport r;
  const checkpoint::GgufHeader& h = *opts.gguf;
  r.model = root.empty() ? h.origin : root;
  r.dtype = opts.dtype.empty() ? "F32" : opts.dtype;
  r.batch = opts.batch;
  const std::string arch = h.architecture();
  if (opts.context) {
    r.context = *opts.context;
    r.context_source = "--context";
  } else if (auto c = h.metadata_integer(arch + ".context_length"); c && *c > 0) {
    r.context = *c;
    r.context_source = arch + ".context_length";
  }
  QuantWeights q = weights_from_gguf(h, nullptr);
  r.parameters = q.elements;
  r.weights = {q.bytes, q.bytes ? Bound::exact : Bound::unknown,
               "the file's tensors at their GGML block formats"};
  r.weights_format = q.source;
  r.quant = std::move(q);
  r.file_only = true;
  const std::string unread = "not read from the code (below)";
  r.kv_cache = {std::nullopt, Bound::unknown, unread};
  r.state = {std::nullopt, Bound::unknown, unread};
  r.buffers = {std::nullopt, Bound::unknown, unread};
  r.activations = {std::nullopt, Bound::unknown, unread};
  r.inference = total_of({r.weights, r.kv_cache, r.state, r.activations},
                         "KV cache, state and activations not known: at least the weights");
  r.training = {std::nullopt, Bound::unknown, "quantized weights are not trained"};
  r.device_bytes = opts.device_bytes;
  if (opts.device_bytes)
    r.fits = r.weights.bytes && *r.weights.bytes > *opts.device_bytes ? "no" : "unknown";
  r.notes.push_back("Weights from " + h.origin + " alone (" +
                    (arch.empty() ? std::string("no general.architecture") : arch) + ", " +
                    group(h.tensors.size()) +
                    (h.tensors.size() == 1 ? " tensor): " : " tensors): ") + why + ".");
  return r;
}

std::string render_memory_text(const MemoryReport& r) {
  std::string o;
  o += "Memory of " + r.model + " at " + r.dtype + ", batch " + group(r.batch) + ", context " +
       group(r.context) + (r.context_source == "--context" ? "" : " (" + r.context_source + ")") +
       "\n";
  if (!r.batch_name.empty() || !r.context_name.empty())
    o += "  (the root forward's dimensions: batch `" + (r.batch_name.empty() ? "?" : r.batch_name) +
         "`, sequence `" + (r.context_name.empty() ? "?" : r.context_name) + "`)\n";
  auto line = [&](const std::string& label, const MemoryFigure& f, const std::string& extra) {
    std::string l = "  " + label;
    l.resize(24, ' ');
    std::string v = figure_text(f);
    if (f.bytes && f.bound != Bound::unknown) v += " (" + group(*f.bytes) + " bytes)";
    o += l + v + (extra.empty() ? "" : "  " + extra) + "\n";
    if (!f.note.empty()) o += std::string(26, ' ') + f.note + "\n";
  };
  line("Weights", r.weights,
       r.file_only && r.parameters
           ? group(*r.parameters) + " elements in the file (" + r.weights_format + ")"
       : r.parameters ? group(*r.parameters) + " parameters, shared weights once" +
                            (r.weights_format.empty() || r.weights_format == "quantized"
                                 ? ""
                                 : " (" + r.weights_format + ")")
                      : r.weights_format);
  if (r.quant) quant_lines(o, *r.quant);
  line("KV cache", r.kv_cache, "");
  line("Other state", r.state, "");
  if (!r.file_only) line("Buffers (constructor)", r.buffers, "");
  line("Activations (peak)", r.activations,
       r.activations_at.empty() ? "" : "at " + r.activations_at);
  line("Inference total", r.inference, "");
  line("Training (AdamW)", r.training, "");
  if (!r.states.empty()) {
    o += "\nState a forward keeps across calls (per instance x instances):\n";
    for (const auto& s : r.states) {
      std::string shapes;
      for (const auto& sh : s.shapes)
        shapes += (shapes.empty() ? "" : " + ") + sh;
      o += "  " + (s.instance.empty() ? std::string("(root)") : s.instance) + "  " + s.place +
           (s.library.empty() ? "" : " (" + s.library + ")") + "  " + s.source + "\n";
      o += "    " + shapes + "  " + figure_text(s.per_instance) + " x " +
           (s.instances ? group(*s.instances) : std::string("?")) + " = " + figure_text(s.total) +
           (s.grows ? "" : "  (constant in the context)") + "\n";
      if (!s.per_instance.note.empty()) o += "    " + s.per_instance.note + "\n";
    }
  }
  if (!r.buffer_rows.empty()) {
    o += "\nBuffers the constructor computes and keeps (per instance x instances):\n";
    for (const auto& b : r.buffer_rows) {
      o += "  " + (b.instance.empty() ? std::string("(root)") : b.instance) + "  " + b.owner +
           "  " + b.source +
           (b.reached == "constructor" ? "" : "  (" + b.reached + ", built by its caller)") + "\n";
      o += "    " + b.shape + " " + b.dtype + "  " + figure_text(b.per_instance) + " x " +
           (b.instances ? group(*b.instances) : std::string("?")) + " = " + figure_text(b.total) +
           "\n";
      if (!b.per_instance.note.empty()) o += "    " + b.per_instance.note + "\n";
    }
  }
  if (r.device_bytes) {
    o += "\nOn a device of " + human(*r.device_bytes) + ": ";
    if (r.fits == "no")
      o += "does not fit (what is certain already exceeds it).\n";
    else if (r.fits == "yes")
      o += "fits (every figure at its upper bound).\n";
    else
      o += "may fit: what is certain leaves room; what is not known decides.\n";
    if (r.max_context)
      o += "  Largest context at batch " + group(r.batch) + ": at most " + group(*r.max_context) +
           " positions (activations not counted)\n";
    if (r.max_batch)
      o += "  Largest batch at context " + group(r.context) + ": at most " + group(*r.max_batch) +
           " (activations not counted)\n";
  }
  for (const auto& n : r.notes)
    o += n + "\n";
  o += "Sizes in binary units (1 GiB = 1024^3 bytes).\n";
  return o;
}

std::string render_memory_json(const MemoryReport& r) {
  JsonWriter w(2);
  auto fig = [&](const std::string& k, const MemoryFigure& f) {
    w.key(k).begin_object();
    w.key("bytes");
    if (f.bytes && f.bound != Bound::unknown)
      w.value(*f.bytes);
    else
      w.null();
    w.field("bound", to_string(f.bound));
    if (!f.note.empty()) w.field("note", f.note);
    w.end_object();
  };
  w.begin_object();
  w.field("schema", "candle-graph/memory/1");
  w.field("model", r.model);
  w.field("dtype", r.dtype);
  w.field("batch", r.batch);
  w.field("context", r.context);
  w.field("context_source", r.context_source);
  w.field("batch_dimension", r.batch_name);
  w.field("context_dimension", r.context_name);
  w.key("parameters");
  if (r.parameters)
    w.value(*r.parameters);
  else
    w.null();
  fig("weights_bytes", r.weights);
  if (!r.weights_format.empty()) w.field("weights_format", r.weights_format);
  if (r.quant) {
    w.key("weights_by_type").begin_array();
    for (const auto& t : r.quant->by_type) {
      w.begin_object();
      w.field("type", t.type);
      if (t.tensors && r.quant->source.rfind("--gguf", 0) == 0) w.field("tensors", t.tensors);
      w.field("elements", t.elements);
      w.field("bytes", t.bytes);
      if (t.dequantized) w.field("dequantized_at_load", true);
      w.end_object();
    }
    w.end_array();
    if (r.quant->checked) {
      w.key("weights_check").begin_object();
      w.field("matched", static_cast<std::uint64_t>(r.quant->matched));
      w.field("missing", static_cast<std::uint64_t>(r.quant->missing_count));
      w.field("not_asked_for", static_cast<std::uint64_t>(r.quant->unclaimed_count));
      w.field("shape_mismatches", static_cast<std::uint64_t>(r.quant->mismatch_count));
      auto names = [&](const char* k, const std::vector<std::string>& v) {
        w.key(k).begin_array();
        for (const auto& x : v)
          w.value(x);
        w.end_array();
      };
      names("missing_examples", r.quant->missing);
      names("not_asked_for_examples", r.quant->unclaimed);
      names("shape_mismatch_examples", r.quant->mismatches);
      w.end_object();
    }
  }
  fig("kv_cache_bytes", r.kv_cache);
  fig("state_bytes", r.state);
  fig("buffers_bytes", r.buffers);
  fig("activations_peak_bytes", r.activations);
  w.field("activations_peak_at", r.activations_at);
  fig("inference_total_bytes", r.inference);
  fig("training_total_bytes", r.training);
  w.key("layers").begin_array();
  for (const auto& s : r.states) {
    w.begin_object();
    w.field("instance", s.instance);
    w.field("place", s.place);
    w.field("source", s.source);
    if (!s.library.empty()) w.field("library", s.library);
    w.key("instances");
    if (s.instances)
      w.value(*s.instances);
    else
      w.null();
    w.key("shapes").begin_array();
    for (const auto& sh : s.shapes)
      w.value(sh);
    w.end_array();
    w.field("grows_with_context", s.grows);
    if (s.slots > 1) w.field("slots", s.slots);
    fig("bytes_per_instance", s.per_instance);
    fig("bytes", s.total);
    w.end_object();
  }
  w.end_array();
  w.key("buffers").begin_array();
  for (const auto& b : r.buffer_rows) {
    w.begin_object();
    w.field("instance", b.instance);
    w.field("owner", b.owner);
    w.field("source", b.source);
    w.field("reached", b.reached);
    w.key("instances");
    if (b.instances)
      w.value(*b.instances);
    else
      w.null();
    w.field("shape", b.shape);
    w.field("dtype", b.dtype);
    fig("bytes_per_instance", b.per_instance);
    fig("bytes", b.total);
    w.end_object();
  }
  w.end_array();
  if (r.device_bytes) {
    w.key("fit").begin_object();
    w.field("device_bytes", *r.device_bytes);
    w.field("fits", r.fits);
    w.key("max_context");
    if (r.max_context)
      w.value(*r.max_context);
    else
      w.null();
    w.key("max_batch");
    if (r.max_batch)
      w.value(*r.max_batch);
    else
      w.null();
    w.field("bound", "upper_bound");
    w.end_object();
  }
  w.key("notes").begin_array();
  for (const auto& n : r.notes)
    w.value(n);
  w.end_array();
  w.end_object();
  std::string out = w.take();
  out += '\n';
  return out;
}

}  // namespace cg::query
