#include "runtime/jsonl_importer.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace cg::runtime {
namespace {

namespace od = simdjson::ondemand;

[[noreturn]] void type_error(std::string_view field, const char* expected) {
  throw RecordError("field `" + std::string(field) + "`: expected " + expected);
}

[[noreturn]] void missing(std::string_view kind, const char* field, const char* expected) {
  throw RecordError(std::string(kind) + " record is missing field `" + field + "` (" + expected +
                    ")");
}

bool is_null(od::value& v) {
  bool null = false;
  return !v.is_null().get(null) && null;
}

std::string_view str(od::value& v, std::string_view field) {
  std::string_view s;
  if (v.get_string().get(s)) type_error(field, "a string");
  return s;
}

// The typed read is tried first: a failed type check leaves an On-Demand scalar unconsumed, so
// null is only tested on the rare miss.
std::optional<std::string_view> opt_str(od::value& v, std::string_view field) {
  std::string_view s;
  if (!v.get_string().get(s)) return s;
  if (is_null(v)) return std::nullopt;
  type_error(field, "a string");
}

// A scalar's text as written (simdjson's raw token, without the whitespace after it).
std::string_view token(od::value& v) {
  std::string_view t = v.raw_json_token();
  while (!t.empty() &&
         (t.back() == ' ' || t.back() == '\t' || t.back() == '\r' || t.back() == '\n'))
    t.remove_suffix(1);
  return t;
}

// An unsigned integer of at most 19 digits without a leading zero, read from its token (no
// overflow is possible); anything else is left to simdjson, which also words the errors. Most
// numbers in a trace are durations, steps and timestamps: this is most of their parsing cost.
bool small_uint(od::value& v, std::uint64_t& out) {
  std::string_view t = token(v);
  if (t.empty() || t.size() > 19 || (t[0] == '0' && t.size() > 1)) return false;
  std::uint64_t n = 0;
  for (char c : t) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  out = n;
  return true;
}

std::uint64_t u64(od::value& v, std::string_view field) {
  std::uint64_t n = 0;
  if (small_uint(v, n)) return n;
  if (v.get_uint64().get(n)) type_error(field, "an unsigned integer");
  return n;
}

std::optional<std::uint64_t> opt_u64(od::value& v, std::string_view field) {
  std::uint64_t n = 0;
  if (small_uint(v, n) || !v.get_uint64().get(n)) return n;
  if (is_null(v)) return std::nullopt;
  type_error(field, "an unsigned integer");
}

// simdjson decides whether it is a number; the value is read from its token by from_chars.
// simdjson 3.0.1's On-Demand parser misreads a number of more than 19 significant digits
// (0.518446744073709551616 as 0.00194; its DOM parser reads it right): found by the fuzzer, where
// the plain reader, which uses from_chars, disagreed with it.
double f64(od::value& v, std::string_view field) {
  std::string_view t = token(v);
  double d = 0;
  if (v.get_double().get(d)) type_error(field, "a number");
  double exact = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), exact);
  if (ec == std::errc() && end == t.data() + t.size()) d = exact;
  return d;
}

bool boolean(od::value& v, std::string_view field) {
  bool b = false;
  if (v.get_bool().get(b)) type_error(field, "true or false");
  return b;
}

template <typename F>
void each_in_array(od::value& v, std::string_view field, const char* expected, F&& f) {
  od::array a;
  if (v.get_array().get(a)) type_error(field, expected);
  for (auto element : a) {
    od::value e;
    if (element.get(e)) type_error(field, expected);
    f(e);
  }
}

// ---- The plain reader ----
// A line a profiler writes is "plain": ASCII, no escapes, objects only at the top, arrays only of
// scalars. Such a line is read here in one pass, strings in place. Anything else throws NotPlain
// and the line goes to simdjson, whose reading is the reference: this reader accepts a subset of
// JSON and gives the values simdjson gives for it.
struct NotPlain {};

struct PlainValue {
  enum class Type { string, uint, number, null, boolean, array };
  Type type = Type::null;
  std::string_view text;  // string: its content; uint, number: the token; array: inside brackets
  std::uint64_t uint = 0;
  bool boolean = false;
};

// The closing quote of a string whose content starts at `p`, or nullptr when a backslash, a control
// character or a non-ASCII byte comes first or the quote is not before `end`. Reads in 16-byte
// steps up to 15 bytes past `end` (the reader's buffers are padded by SIMDJSON_PADDING).
const char* plain_string_end(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);
  for (; p < end; p += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // Signed compare: bytes >= 0x80 are negative, so below 0x20 as well.
    auto quotes = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote)));
    auto others = static_cast<unsigned>(
        _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, backslash), _mm_cmplt_epi8(v, space))));
    if (quotes | others) {
      // The first quote must come before anything else, and before the end.
      unsigned first_quote = quotes & (0u - quotes);
      if (!first_quote || (others & (first_quote - 1))) return nullptr;
      const char* q = p + __builtin_ctz(quotes);
      return q < end ? q : nullptr;
    }
  }
  return nullptr;
#else
  for (; p < end; ++p) {
    auto c = static_cast<unsigned char>(*p);
    if (c == '"') return p;
    if (c == '\\' || c < 0x20 || c >= 0x80) return nullptr;
  }
  return nullptr;
#endif
}

class PlainCursor {
 public:
  PlainCursor(const char* p, const char* end) : p_(p), end_(end) {}

  // The next character after whitespace, '\0' at the end.
  char peek() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r' || *p_ == '\n'))
      ++p_;
    return p_ < end_ ? *p_ : '\0';
  }
  bool eat(char c) {
    if (peek() != c || p_ == end_) return false;
    ++p_;
    return true;
  }
  void expect(char c) {
    if (!eat(c)) throw NotPlain{};
  }
  bool at_end() {
    peek();
    return p_ == end_;
  }

  std::string_view string() {
    expect('"');
    const char* q = plain_string_end(p_, end_);
    if (!q) throw NotPlain{};
    std::string_view s(p_, static_cast<std::size_t>(q - p_));
    p_ = q + 1;
    return s;
  }

  // A field's value: a scalar, or an array of scalars.
  void value(PlainValue& v) {
    if (peek() != '[') return scalar(v);
    ++p_;
    const char* begin = p_;
    const char* last = p_;
    if (!eat(']')) {
      PlainValue element;
      do {
        scalar(element);
        last = p_;
      } while (eat(','));
      expect(']');
    }
    v.type = PlainValue::Type::array;
    v.text = std::string_view(begin, static_cast<std::size_t>(last - begin));
  }

  void scalar(PlainValue& v) {
    using T = PlainValue::Type;
    switch (peek()) {
      case '"':
        v.type = T::string;
        v.text = string();
        return;
      case 'n':
        word("null");
        v.type = T::null;
        return;
      case 't':
        word("true");
        v.type = T::boolean;
        v.boolean = true;
        return;
      case 'f':
        word("false");
        v.type = T::boolean;
        v.boolean = false;
        return;
      default:
        number(v);
    }
  }

 private:
  void word(std::string_view w) {
    if (static_cast<std::size_t>(end_ - p_) < w.size() || std::string_view(p_, w.size()) != w) {
      throw NotPlain{};
    }
    p_ += w.size();
  }

  bool digit() const { return p_ < end_ && *p_ >= '0' && *p_ <= '9'; }

  // JSON's number grammar; an integer in 0 … 2^64-1 is also read as an unsigned one.
  void number(PlainValue& v) {
    const char* begin = p_;
    bool integer = true;
    if (p_ < end_ && *p_ == '-') {
      ++p_;
      integer = false;
    }
    std::uint64_t n = 0;
    if (p_ < end_ && *p_ == '0') {
      ++p_;
    } else if (digit()) {
      for (; digit(); ++p_) {
        if (__builtin_mul_overflow(n, 10u, &n) ||
            __builtin_add_overflow(n, static_cast<unsigned>(*p_ - '0'), &n)) {
          integer = false;  // 2^64 or more: a number, as simdjson reads it
        }
      }
    } else {
      throw NotPlain{};
    }
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      integer = false;
      if (!digit()) throw NotPlain{};
      while (digit())
        ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      integer = false;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!digit()) throw NotPlain{};
      while (digit())
        ++p_;
    }
    v.text = std::string_view(begin, static_cast<std::size_t>(p_ - begin));
    v.type = integer ? PlainValue::Type::uint : PlainValue::Type::number;
    v.uint = n;
  }

  const char* p_;
  const char* end_;
};

// One line's object, field by field; `next` is false at its end, after which only whitespace
// may follow on the line.
class PlainObject {
 public:
  explicit PlainObject(std::string_view line) : at_(line.data(), line.data() + line.size()) {}

  bool next(std::string_view& key, PlainValue& v) {
    if (at_.eat(first_ ? '{' : ',')) {
      first_ = false;
    } else {
      if (!at_.eat('}') || !at_.at_end()) throw NotPlain{};
      return false;
    }
    key = at_.string();
    at_.expect(':');
    at_.value(v);
    return true;
  }

 private:
  PlainCursor at_;
  bool first_ = true;
};

bool is_null(PlainValue& v) {
  return v.type == PlainValue::Type::null;
}

std::string_view str(PlainValue& v, std::string_view field) {
  if (v.type != PlainValue::Type::string) type_error(field, "a string");
  return v.text;
}

std::optional<std::string_view> opt_str(PlainValue& v, std::string_view field) {
  if (is_null(v)) return std::nullopt;
  return str(v, field);
}

std::uint64_t u64(PlainValue& v, std::string_view field) {
  if (v.type != PlainValue::Type::uint) type_error(field, "an unsigned integer");
  return v.uint;
}

std::optional<std::uint64_t> opt_u64(PlainValue& v, std::string_view field) {
  if (is_null(v)) return std::nullopt;
  return u64(v, field);
}

double f64(PlainValue& v, std::string_view field) {
  if (v.type != PlainValue::Type::uint && v.type != PlainValue::Type::number) {
    type_error(field, "a number");
  }
  double d = 0;
  auto [end, ec] = std::from_chars(v.text.data(), v.text.data() + v.text.size(), d);
  if (ec != std::errc() || end != v.text.data() + v.text.size()) throw NotPlain{};
  return d;
}

bool boolean(PlainValue& v, std::string_view field) {
  if (v.type != PlainValue::Type::boolean) type_error(field, "true or false");
  return v.boolean;
}

template <typename F>
void each_in_array(PlainValue& v, std::string_view field, const char* expected, F&& f) {
  if (v.type != PlainValue::Type::array) type_error(field, expected);
  PlainCursor at(v.text.data(), v.text.data() + v.text.size());
  if (at.at_end()) return;
  PlainValue e;
  do {
    at.scalar(e);
    f(e);
  } while (at.eat(','));
}

template <typename Value>
std::vector<std::string> strings(Value& v, std::string_view field) {
  std::vector<std::string> out;
  each_in_array(v, field, "an array of strings", [&](auto& e) { out.emplace_back(str(e, field)); });
  return out;
}

template <typename Value>
void check_strings(Value& v, std::string_view field) {
  each_in_array(v, field, "an array of strings", [&](auto& e) { (void)str(e, field); });
}

// A key against a literal: lengths first, then a memcmp of a length known at compile time.
template <std::size_t N>
bool is(std::string_view name, const char (&literal)[N]) {
  return name.size() == N - 1 && std::memcmp(name.data(), literal, N - 1) == 0;
}

enum class Kind {
  meta,
  tensor,
  operation,
  gradient,
  value,
  edge_timing,
  module_scope,
  end,
  compact_def,
  compact_op,
  compact_edge,
  compact_module,
  stats,
  compact_stats
};

constexpr std::string_view kCompactSchema = "candle-graph/runtime/4-compact/1";
// The writer's bound on distinct operations and edges per session (HandleTable::kMaxHandles).
constexpr std::uint64_t kMaxCompactHandles = std::uint64_t{1} << 22;

Kind parse_kind(std::string_view k, bool compact) {
  if (compact) {
    if (k == "o") return Kind::compact_op;
    if (k == "def") return Kind::compact_def;
    if (k == "e") return Kind::compact_edge;
    if (k == "m") return Kind::compact_module;
    if (k == "st") return Kind::compact_stats;
  }
  if (k == "operation") return Kind::operation;
  if (k == "edge_timing") return Kind::edge_timing;
  if (k == "meta") return Kind::meta;
  if (k == "tensor") return Kind::tensor;
  if (k == "gradient") return Kind::gradient;
  if (k == "value") return Kind::value;
  if (k == "end") return Kind::end;
  if (k == "module") return Kind::module_scope;
  if (k == "stats") return Kind::stats;
  if (compact) {
    throw UnknownKindError(
        "unknown record kind `" + std::string(k) +
        "` (expected def, o, e, m, st, meta, operation, edge_timing, module, stats or end)");
  }
  throw UnknownKindError(
      "unknown record kind `" + std::string(k) +
      "` (expected meta, tensor, operation, gradient, value, edge_timing, module, stats or end)");
}

std::string json_error(simdjson::error_code e) {
  return std::string("invalid JSON (") + simdjson::error_message(e) + ")";
}

// The fields of one record, `kind` excepted (it was read first); `event_id` is common to all.
template <typename Value, typename F>
void one_field(std::string_view name, Value& val, std::optional<std::string_view>& event_id, F& f) {
  if (is(name, "kind")) return;
  if (is(name, "event_id")) {
    event_id = str(val, name);
    return;
  }
  f(name, val);
}

template <typename F>
void each_field(od::object& obj, std::optional<std::string_view>& event_id, F&& f) {
  for (auto result : obj) {
    od::field field;
    if (auto e = std::move(result).get(field)) throw RecordError(json_error(e));
    od::value& val = field.value();
    std::string_view name;
    if (field.unescaped_key().get(name)) throw RecordError("invalid JSON (bad key)");
    one_field(name, val, event_id, f);
  }
}

template <typename F>
void each_field(PlainObject& obj, std::optional<std::string_view>& event_id, F&& f) {
  std::string_view name;
  PlainValue val;
  while (obj.next(name, val))
    one_field(name, val, event_id, f);
}

std::string_view need_id(const std::optional<std::string_view>& event_id, std::string_view kind) {
  if (!event_id) missing(kind, "event_id", "string");
  return *event_id;
}

}  // namespace

// Each kind has its own reader so a line pays only for its own record's fields. `done` checks
// that nothing follows the object on its line; it runs before the record is handed on, and
// `committing_` marks that hand-over (an error after it is the validator's, not the JSON's).
template <typename Obj, typename Done>
void JsonlImporter::meta(Obj& obj, TraceValidator& validator, bool first_record, Done&& done) {
  RunMeta meta;
  bool have_schema = false, have_entrypoint = false, have_profile = false;
  std::string schema_text;
  std::optional<std::string_view> event_id;
  each_field(obj, event_id, [&](std::string_view name, auto& val) {
    if (is(name, "schema")) {
      schema_text = std::string(str(val, name));
      have_schema = true;
    } else if (is(name, "entrypoint")) {
      meta.entrypoint = std::string(str(val, name));
      have_entrypoint = true;
    } else if (is(name, "profile")) {
      meta.profile = std::string(str(val, name));
      have_profile = true;
    } else if (is(name, "cargo_features")) {
      if (!is_null(val)) meta.cargo_features = strings(val, name);
    } else if (is(name, "cfg")) {
      if (!is_null(val)) meta.cfg = strings(val, name);
    } else if (is(name, "analysis_id")) {
      if (auto s = opt_str(val, name)) meta.analysis_id = std::string(*s);
    } else if (is(name, "build_id")) {
      if (auto s = opt_str(val, name)) meta.build_id = std::string(*s);
    } else if (is(name, "phase")) {
      if (auto s = opt_str(val, name)) meta.phase = std::string(*s);
    } else if (is(name, "device_sync")) {
      if (!is_null(val)) meta.device_sync = boolean(val, name);
    } else if (is(name, "pid")) {
      meta.pid = opt_u64(val, name);
    } else if (is(name, "start_unix_ns")) {
      meta.start_unix_ns = opt_u64(val, name);
    }
  });
  done();
  if (!have_schema) missing("meta", "schema", "string");
  // The compact encoding carries runtime/4's records; everything past the importer sees /4.
  const bool compact = schema_text == kCompactSchema;
  auto schema = compact ? std::optional<Schema>(Schema::v4) : parse_schema(schema_text);
  if (!schema) {
    throw RecordError("unsupported schema `" + schema_text +
                      "` (expected candle-graph/runtime/1, /2, /3, /4 or /4-compact/1)");
  }
  if (compact && !meta.phase) missing("meta", "phase", "string");
  if (!have_entrypoint) missing("meta", "entrypoint", "string");
  if (!have_profile) missing("meta", "profile", "string");
  meta.schema = *schema;
  if (compact) {
    compact_ = true;
    phase_ = *meta.phase;
  }
  committing_ = true;
  validator.meta(std::move(meta), first_record);
}

template <typename Obj, typename Done>
void JsonlImporter::compact_def(Obj& obj, Done&& done) {
  std::optional<std::uint64_t> h;
  std::optional<std::string_view> op, static_id, from, to, path, event_id;
  each_field(obj, event_id, [&](std::string_view name, auto& val) {
    if (is(name, "path")) {
      path = str(val, name);
    } else if (is(name, "h")) {
      h = u64(val, name);
    } else if (is(name, "op")) {
      op = str(val, name);
    } else if (is(name, "static_id")) {
      static_id = str(val, name);
    } else if (is(name, "inputs")) {
      check_strings(val, name);
    } else if (is(name, "from_static_id")) {
      from = str(val, name);
    } else if (is(name, "to_static_id")) {
      to = str(val, name);
    }
  });
  done();
  if (!h) missing("def", "h", "unsigned integer");
  if (*h >= kMaxCompactHandles) {
    throw RecordError("def `h` " + std::to_string(*h) + " is past the writer's bound of " +
                      std::to_string(kMaxCompactHandles) + " distinct operations and edges");
  }
  CompactDef def;
  if (path) {
    if (static_id || op || from || to) {
      throw RecordError("def has both a module path and an operation's or an edge's fields");
    }
    def.kind = CompactKind::module;
    def.path = std::string(*path);
  } else if (static_id || op) {
    if (!op) missing("def", "op", "string");
    if (!static_id) missing("def", "static_id", "string");
    if (from || to) throw RecordError("def has both an operation's and an edge's fields");
    def.op = std::string(*op);
    def.static_id = std::string(*static_id);
  } else {
    if (!from) missing("def", "from_static_id (or static_id and op)", "string");
    if (!to) missing("def", "to_static_id", "string");
    def.kind = CompactKind::edge;
    def.from = std::string(*from);
    def.to = std::string(*to);
  }
  if (defs_.contains(*h)) throw RecordError("def `h` " + std::to_string(*h) + " is defined twice");
  committing_ = true;
  defs_.emplace(*h, std::move(def));
}

template <typename Obj, typename Done>
void JsonlImporter::compact_event(Obj& obj, TraceValidator& validator, CompactKind what,
                                  Done&& done) {
  const bool edge = what == CompactKind::edge;
  const char* kind = edge ? "e" : what == CompactKind::module ? "m" : "o";
  std::optional<std::uint64_t> h, th, c, s, e, d, t, p, ps;
  std::optional<std::string_view> output, event_id;
  each_field(obj, event_id, [&](std::string_view name, auto& val) {
    if (name.size() > 2) return;  // fields of a later version
    if (is(name, "h")) {
      h = u64(val, name);
    } else if (is(name, "th")) {
      th = u64(val, name);
    } else if (is(name, "c")) {
      c = u64(val, name);
    } else if (is(name, "s")) {
      s = u64(val, name);
    } else if (is(name, "e")) {
      e = u64(val, name);
    } else if (is(name, "d")) {
      d = u64(val, name);
    } else if (is(name, "t")) {
      t = u64(val, name);
    } else if (is(name, "p") && !edge) {
      p = u64(val, name);
    } else if (is(name, "ps") && !edge) {
      ps = u64(val, name);
    } else if (is(name, "o") && what == CompactKind::operation) {
      output = str(val, name);
    }
  });
  done();
  if (!h) missing(kind, "h", "unsigned integer");
  if (!d) missing(kind, "d", "unsigned integer");
  if (!t) missing(kind, "t", "unsigned integer");
  auto def = defs_.find(*h);
  if (def == defs_.end()) {
    throw RecordError(std::string("`") + kind + "` record refers to `h` " + std::to_string(*h) +
                      ", which no earlier def record defines");
  }
  if (def->second.kind != what) {
    const char* defined = def->second.kind == CompactKind::edge     ? "an edge"
                          : def->second.kind == CompactKind::module ? "a module path"
                                                                    : "an operation";
    throw RecordError(std::string("`") + kind + "` record refers to `h` " + std::to_string(*h) +
                      ", which is defined as " + defined);
  }
  // Fields left out repeat (or, for the counter, continue) the thread's previous record.
  const std::uint64_t thread = th.value_or(compact_last_thread_);
  if (thread > kMaxTraceThread) {
    throw RecordError(std::string("`") + kind + "` record's `th` " + std::to_string(thread) +
                      " is past " + std::to_string(kMaxTraceThread) +
                      ", the last thread number the profiler writes");
  }
  const CompactThread previous = compact_threads_[thread];
  const std::uint64_t counter = c.value_or(previous.counter + 1);
  const std::uint64_t id_step = s.value_or(previous.id_step);
  if (counter == 0) throw RecordError(std::string("`") + kind + "` record has counter 0");
  auto put_id = [&](std::string& out, const char* infix, std::uint64_t step_of,
                    std::uint64_t counter_of) {
    out.assign(phase_);
    out += infix;
    out += std::to_string(step_of);
    out.push_back('-');
    out += std::to_string(counter_of);
  };
  const char* infix = edge ? "-edge-" : what == CompactKind::module ? "-mod-" : "-op-";
  put_id(compact_id_, infix, id_step, counter);
  if (p && (*p == 0 || *p >= counter)) {
    throw RecordError(std::string("`") + kind + "` record's parent offset `p` " +
                      std::to_string(*p) + " must be between 1 and the counter minus 1 (" +
                      std::to_string(counter - 1) + ")");
  }
  if (p) put_id(compact_parent_, infix, ps.value_or(id_step), counter - *p);
  committing_ = true;
  compact_last_thread_ = thread;
  compact_threads_[thread] = {counter, id_step};
  if (edge) {
    EdgeTimingRecord et;
    et.event_id = compact_id_;
    et.from_static_id = def->second.from;
    et.to_static_id = def->second.to;
    et.duration_ns = *d;
    et.step = e.value_or(id_step);
    et.at_ns = *t;
    et.thread = thread;
    validator.edge_timing(et);
    return;
  }
  if (what == CompactKind::module) {
    ModuleScopeRecord m;
    m.event_id = compact_id_;
    m.path = def->second.path;
    m.step = e.value_or(id_step);
    m.duration_ns = *d;
    m.start_ns = *t;
    m.thread = thread;
    if (p) m.parent = std::string_view(compact_parent_);
    validator.module_scope(m);
    return;
  }
  OperationRecord o;
  o.event_id = compact_id_;
  o.op = def->second.op;
  o.static_id = std::string_view(def->second.static_id);
  o.output = output;
  o.step = e.value_or(id_step);
  o.duration_ns = *d;
  o.start_ns = *t;
  o.thread = thread;
  if (p) o.parent = std::string_view(compact_parent_);
  validator.operation(o);
}

template <typename Obj, typename Done>
void JsonlImporter::module_scope(Obj& obj, TraceValidator& validator, Done&& done) {
  ModuleScopeRecord m;
  std::optional<std::string_view> event_id, path;
  std::optional<std::uint64_t> duration, start, thread;
  each_field(obj, event_id, [&](std::string_view name, auto& val) {
    if (is(name, "path")) {
      path = str(val, name);
    } else if (is(name, "step")) {
      m.step = u64(val, name);
    } else if (is(name, "duration_ns")) {
      duration = u64(val, name);
    } else if (is(name, "start_ns")) {
      start = u64(val, name);
    } else if (is(name, "thread")) {
      thread = u64(val, name);
    } else if (is(name, "parent")) {
      m.parent = opt_str(val, name);
    }
  });
  done();
  m.event_id = need_id(event_id, "module");
  if (!path) missing("module", "path", "string");
  if (!m.step) missing("module", "step", "unsigned integer");
  if (!duration) missing("module", "duration_ns", "unsigned integer");
  if (!start) missing("module", "start_ns", "unsigned integer");
  if (!thread) missing("module", "thread", "unsigned integer");
  m.path = *path;
  m.duration_ns = *duration;
  m.start_ns = *start;
  m.thread = *thread;
  committing_ = true;
  validator.module_scope(m);
}

template <typename Obj, typename Done>
void JsonlImporter::stats(Obj& obj, TraceValidator& validator, bool compact, Done&& done) {
  const char* kind = compact ? "st" : "stats";
  StatsRecord r;
  std::optional<std::string_view> event_id, path, of, reason, dtype;
  std::optional<std::uint64_t> h, step, at, thread, counter, elements, nan, pos_inf, neg_inf, zeros;
  std::optional<double> numbers[5];
  static constexpr const char* kNumbers[5] = {"min", "max", "mean", "rms", "abs_max"};
  bool have_shape = false;
  shape_.clear();
  each_field(obj, event_id, [&](std::string_view name, auto& val) {
    if (compact && is(name, "h")) {
      h = u64(val, name);
    } else if (compact && is(name, "th")) {
      thread = u64(val, name);
    } else if (compact && is(name, "c")) {
      counter = u64(val, name);
    } else if (compact && is(name, "s")) {
      step = u64(val, name);
    } else if (compact && is(name, "t")) {
      at = u64(val, name);
    } else if (!compact && is(name, "path")) {
      path = str(val, name);
    } else if (!compact && is(name, "step")) {
      step = u64(val, name);
    } else if (!compact && is(name, "at_ns")) {
      at = u64(val, name);
    } else if (!compact && is(name, "thread")) {
      thread = u64(val, name);
    } else if (is(name, "of")) {
      of = str(val, name);
    } else if (is(name, "index")) {
      r.index = u64(val, name);
    } else if (is(name, "reason")) {
      reason = str(val, name);
    } else if (is(name, "dtype")) {
      dtype = str(val, name);
    } else if (is(name, "shape")) {
      shape_.clear();  // a repeated key: the last one counts
      each_in_array(val, name, "an array of unsigned integers",
                    [&](auto& e) { shape_.push_back(u64(e, name)); });
      have_shape = true;
    } else if (is(name, "elements")) {
      elements = u64(val, name);
    } else if (is(name, "nan")) {
      nan = u64(val, name);
    } else if (is(name, "pos_inf")) {
      pos_inf = u64(val, name);
    } else if (is(name, "neg_inf")) {
      neg_inf = u64(val, name);
    } else if (is(name, "zeros")) {
      zeros = u64(val, name);
    } else {
      for (int i = 0; i < 5; ++i) {
        if (name == kNumbers[i]) numbers[i] = f64(val, name);
      }
    }
  });
  done();
  if (compact) {
    if (!h) missing(kind, "h", "unsigned integer");
    if (!thread) missing(kind, "th", "unsigned integer");
    if (!counter) missing(kind, "c", "unsigned integer");
    if (!step) missing(kind, "s", "unsigned integer");
    if (!at) missing(kind, "t", "unsigned integer");
  } else {
    r.event_id = need_id(event_id, kind);
    if (!path) missing(kind, "path", "string");
    if (!step) missing(kind, "step", "unsigned integer");
    if (!at) missing(kind, "at_ns", "unsigned integer");
    if (!thread) missing(kind, "thread", "unsigned integer");
  }
  if (!of) missing(kind, "of", "\"output\" or \"grad\"");
  if (!reason) missing(kind, "reason", "\"sampled\" or \"non_finite\"");
  if (!dtype) missing(kind, "dtype", "string");
  if (!have_shape) missing(kind, "shape", "array of unsigned integers");
  if (!elements) missing(kind, "elements", "unsigned integer");
  if (!nan) missing(kind, "nan", "unsigned integer");
  if (!pos_inf) missing(kind, "pos_inf", "unsigned integer");
  if (!neg_inf) missing(kind, "neg_inf", "unsigned integer");
  if (!zeros) missing(kind, "zeros", "unsigned integer");
  if (*of == "output") {
    r.of = StatsOf::output;
  } else if (*of == "grad") {
    r.of = StatsOf::grad;
  } else {
    throw RecordError(std::string(kind) + " `of` is `" + std::string(*of) +
                      "` (expected \"output\" or \"grad\")");
  }
  if (*reason == "sampled") {
    r.reason = StatsReason::sampled;
  } else if (*reason == "non_finite") {
    r.reason = StatsReason::non_finite;
  } else {
    throw RecordError(std::string(kind) + " `reason` is `" + std::string(*reason) +
                      "` (expected \"sampled\" or \"non_finite\")");
  }
  int present = 0;
  for (const auto& n : numbers)
    present += n ? 1 : 0;
  if (present != 0 && present != 5) {
    for (int i = 0; i < 5; ++i) {
      if (!numbers[i]) {
        throw RecordError(std::string(kind) + " record is missing field `" + kNumbers[i] +
                          "` (number): min, max, mean, rms and abs_max come together");
      }
    }
  }
  if (present == 5) {
    r.finite = FiniteStats{*numbers[0], *numbers[1], *numbers[2], *numbers[3], *numbers[4]};
  }
  if (compact) {
    auto def = defs_.find(*h);
    if (def == defs_.end()) {
      throw RecordError("`st` record refers to `h` " + std::to_string(*h) +
                        ", which no earlier def record defines");
    }
    if (def->second.kind != CompactKind::module) {
      throw RecordError("`st` record refers to `h` " + std::to_string(*h) +
                        ", which is defined as " +
                        (def->second.kind == CompactKind::edge ? "an edge" : "an operation") +
                        " (expected a path)");
    }
    if (*counter == 0) throw RecordError("`st` record has counter 0");
    // Everything explicit: a stats line changes no thread's implied counter or step.
    compact_id_.assign(phase_);
    compact_id_ += "-stats-";
    compact_id_ += std::to_string(*step);
    compact_id_.push_back('-');
    compact_id_ += std::to_string(*counter);
    r.event_id = compact_id_;
    r.path = def->second.path;
  } else {
    r.path = *path;
  }
  r.step = *step;
  r.at_ns = *at;
  r.thread = *thread;
  r.dtype = *dtype;
  r.shape = shape_;
  r.elements = *elements;
  r.nan = *nan;
  r.pos_inf = *pos_inf;
  r.neg_inf = *neg_inf;
  r.zeros = *zeros;
  committing_ = true;
  validator.stats(r);
}

template <typename Obj, typename Done>
void JsonlImporter::operation(Obj& obj, TraceValidator& validator, Done&& done) {
  OperationRecord o;
  std::optional<std::string_view> event_id, op;
  each_field(obj, event_id, [&](std::string_view name, auto& val) {
    if (is(name, "op")) {
      op = str(val, name);
    } else if (is(name, "static_id")) {
      o.static_id = opt_str(val, name);
    } else if (is(name, "duration_ns")) {
      o.duration_ns = opt_u64(val, name);
    } else if (is(name, "step")) {
      o.step = opt_u64(val, name);
    } else if (is(name, "inputs")) {
      if (!is_null(val)) check_strings(val, name);
    } else if (is(name, "start_ns")) {
      o.start_ns = opt_u64(val, name);
    } else if (is(name, "thread")) {
      o.thread = opt_u64(val, name);
    } else if (is(name, "parent")) {
      o.parent = opt_str(val, name);
    } else if (is(name, "output")) {
      o.output = opt_str(val, name);
    } else if (is(name, "source")) {
      o.source = opt_str(val, name);
    }
  });
  done();
  o.event_id = need_id(event_id, "operation");
  if (!op) missing("operation", "op", "string");
  o.op = *op;
  committing_ = true;
  validator.operation(o);
}

template <typename Obj, typename Done>
void JsonlImporter::edge_timing(Obj& obj, TraceValidator& validator, Done&& done) {
  EdgeTimingRecord et;
  std::optional<std::string_view> event_id, from, to;
  std::optional<std::uint64_t> duration;
  each_field(obj, event_id, [&](std::string_view name, auto& val) {
    if (is(name, "from_static_id")) {
      from = str(val, name);
    } else if (is(name, "to_static_id")) {
      to = str(val, name);
    } else if (is(name, "duration_ns")) {
      duration = u64(val, name);
    } else if (is(name, "step")) {
      et.step = opt_u64(val, name);
    } else if (is(name, "at_ns")) {
      et.at_ns = opt_u64(val, name);
    } else if (is(name, "thread")) {
      et.thread = opt_u64(val, name);
    }
  });
  done();
  et.event_id = need_id(event_id, "edge_timing");
  if (!from) missing("edge_timing", "from_static_id", "string");
  if (!to) missing("edge_timing", "to_static_id", "string");
  if (!duration) missing("edge_timing", "duration_ns", "unsigned integer");
  et.from_static_id = *from;
  et.to_static_id = *to;
  et.duration_ns = *duration;
  committing_ = true;
  validator.edge_timing(et);
}

template <typename Obj, typename Done>
void JsonlImporter::tensor(Obj& obj, TraceValidator& validator, Done&& done) {
  TensorRecord t;
  std::optional<std::string_view> event_id, dtype, device;
  std::optional<bool> contiguous, requires_grad;
  bool have_shape = false;
  shape_.clear();
  each_field(obj, event_id, [&](std::string_view name, auto& val) {
    if (is(name, "static_id")) {
      t.static_id = opt_str(val, name);
    } else if (is(name, "source")) {
      t.source = opt_str(val, name);
    } else if (is(name, "step")) {
      t.step = opt_u64(val, name);
    } else if (is(name, "shape")) {
      shape_.clear();  // a repeated key: the last one counts, as for every other field
      each_in_array(val, name, "an array of unsigned integers",
                    [&](auto& e) { shape_.push_back(u64(e, name)); });
      have_shape = true;
    } else if (is(name, "dtype")) {
      dtype = str(val, name);
    } else if (is(name, "device")) {
      device = str(val, name);
    } else if (is(name, "contiguous")) {
      contiguous = boolean(val, name);
    } else if (is(name, "requires_grad")) {
      requires_grad = boolean(val, name);
    } else if (is(name, "storage_id")) {
      (void)opt_str(val, name);
    }
  });
  done();
  t.event_id = need_id(event_id, "tensor");
  if (!have_shape) missing("tensor", "shape", "array of unsigned integers");
  if (!dtype) missing("tensor", "dtype", "string");
  if (!device) missing("tensor", "device", "string");
  if (!contiguous) missing("tensor", "contiguous", "bool");
  if (!requires_grad) missing("tensor", "requires_grad", "bool");
  t.shape = shape_;
  t.dtype = *dtype;
  t.device = *device;
  t.contiguous = *contiguous;
  t.requires_grad = *requires_grad;
  committing_ = true;
  validator.tensor(t);
}

template <typename Obj, typename Done>
void JsonlImporter::gradient(Obj& obj, TraceValidator& validator, Done&& done) {
  GradientRecord g;
  std::optional<std::string_view> event_id, root, key, state;
  each_field(obj, event_id, [&](std::string_view name, auto& val) {
    if (is(name, "root")) {
      root = str(val, name);
    } else if (is(name, "key")) {
      key = str(val, name);
    } else if (is(name, "state")) {
      state = str(val, name);
    } else if (is(name, "step")) {
      g.step = opt_u64(val, name);
    } else if (is(name, "norm")) {
      if (!is_null(val)) g.norm = f64(val, name);
    }
  });
  done();
  g.event_id = need_id(event_id, "gradient");
  if (!root) missing("gradient", "root", "string");
  if (!key) missing("gradient", "key", "string");
  if (!state) missing("gradient", "state", "present, missing, zero or non_finite");
  auto s = parse_gradient_state(*state);
  if (!s) {
    throw RecordError("gradient state `" + std::string(*state) +
                      "` is not one of present, missing, zero, non_finite");
  }
  g.root = *root;
  g.key = *key;
  g.state = *s;
  committing_ = true;
  validator.gradient(g);
}

template <typename Obj, typename Done>
void JsonlImporter::value(Obj& obj, TraceValidator& validator, Done&& done) {
  ValueRecord v;
  std::optional<std::string_view> event_id;
  std::optional<double> vmin, vmax, vabs;
  each_field(obj, event_id, [&](std::string_view name, auto& val) {
    if (is(name, "static_id")) {
      v.static_id = opt_str(val, name);
    } else if (is(name, "source")) {
      v.source = opt_str(val, name);
    } else if (is(name, "step")) {
      v.step = opt_u64(val, name);
    } else if (is(name, "min")) {
      vmin = f64(val, name);
    } else if (is(name, "max")) {
      vmax = f64(val, name);
    } else if (is(name, "abs_max")) {
      vabs = f64(val, name);
    } else if (is(name, "nonfinite_count")) {
      v.nonfinite_count = opt_u64(val, name).value_or(0);
    } else if (is(name, "saturated_count")) {
      v.saturated_count = opt_u64(val, name).value_or(0);
    }
  });
  done();
  v.event_id = need_id(event_id, "value");
  if (!vmin) missing("value", "min", "number");
  if (!vmax) missing("value", "max", "number");
  if (!vabs) missing("value", "abs_max", "number");
  v.min = *vmin;
  v.max = *vmax;
  v.abs_max = *vabs;
  committing_ = true;
  validator.value(v);
}

template <typename Obj, typename Done>
void JsonlImporter::end(Obj& obj, TraceValidator& validator, Done&& done) {
  static constexpr std::pair<std::string_view, std::uint64_t EndRecord::*> kEnd[] = {
      {"operations", &EndRecord::operations},
      {"edge_timings", &EndRecord::edge_timings},
      {"dropped", &EndRecord::dropped},
      {"errors", &EndRecord::errors},
      {"open_operations", &EndRecord::open_operations},
      {"threads", &EndRecord::threads},
      {"duration_ns", &EndRecord::duration_ns},
      {"modules", &EndRecord::modules},
      {"open_modules", &EndRecord::open_modules},
      {"stats", &EndRecord::stats}};
  EndRecord end;
  unsigned end_fields = 0;
  std::optional<std::string_view> event_id;
  each_field(obj, event_id, [&](std::string_view name, auto& val) {
    for (unsigned i = 0; i < std::size(kEnd); ++i) {
      if (name == kEnd[i].first) {
        end.*kEnd[i].second = u64(val, name);
        end_fields |= 1u << i;
      }
    }
  });
  done();
  // operations and edge_timings are what the check needs; the rest is informational.
  if (!(end_fields & 1u)) missing("end", "operations", "unsigned integer");
  if (!(end_fields & 2u)) missing("end", "edge_timings", "unsigned integer");
  committing_ = true;
  validator.end(end);
}

// One object per line. `line_end` is where the line's text ends; the next token must not come
// before it, and up to that token (or `limit`, the end of the text parsed, when there is none)
// only whitespace may follow, so an object that runs on into the next line is refused too.
template <typename Doc>
void JsonlImporter::record(Doc& doc, const char* line_end, const char* limit,
                           TraceValidator& validator, bool first_record) {
  committing_ = false;
  od::object obj;
  if (auto e = doc.get_object().get(obj)) {
    throw RecordError("invalid JSON: expected one object per line (" +
                      std::string(simdjson::error_message(e)) + ")");
  }
  std::string_view kind_text;
  {
    // Writers put `kind` first, so this lookup is one comparison; readers must not rely on it.
    od::value k;
    if (auto e = obj.find_field_unordered("kind").get(k)) {
      if (e == simdjson::NO_SUCH_FIELD) throw RecordError("record has no `kind` field");
      throw RecordError(json_error(e));
    }
    kind_text = str(k, "kind");
    if (obj.reset().error()) throw RecordError("invalid JSON");
  }
  auto done = [&] {
    const char* next = limit;
    const char* at = nullptr;
    bool token_follows = !doc.current_location().get(at);
    if (token_follows) next = at;
    // With no token after the object, what the structural index does not hold (bytes that are not
    // valid UTF-8, found by the fuzzer) may still stand between it and the line's end.
    if (next < line_end || (!token_follows && line_end[-1] != '}')) {
      throw RecordError("trailing content after the JSON object (one record per line)");
    }
    for (const char* p = line_end; p < next; ++p) {
      if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
        throw RecordError("the JSON object does not end on its line (one record per line)");
      }
    }
  };
  dispatch(obj, kind_text, validator, first_record, done);
}

template <typename Obj, typename Done>
void JsonlImporter::dispatch(Obj& obj, std::string_view kind, TraceValidator& validator,
                             bool first_record, Done&& done) {
  switch (parse_kind(kind, compact_)) {
    case Kind::meta:
      return meta(obj, validator, first_record, done);
    case Kind::operation:
      return operation(obj, validator, done);
    case Kind::edge_timing:
      return edge_timing(obj, validator, done);
    case Kind::tensor:
      return tensor(obj, validator, done);
    case Kind::gradient:
      return gradient(obj, validator, done);
    case Kind::value:
      return value(obj, validator, done);
    case Kind::module_scope:
      return module_scope(obj, validator, done);
    case Kind::end:
      return end(obj, validator, done);
    case Kind::compact_def:
      return compact_def(obj, done);
    case Kind::compact_op:
      return compact_event(obj, validator, CompactKind::operation, done);
    case Kind::compact_edge:
      return compact_event(obj, validator, CompactKind::edge, done);
    case Kind::compact_module:
      return compact_event(obj, validator, CompactKind::module, done);
    case Kind::stats:
      return stats(obj, validator, false, done);
    case Kind::compact_stats:
      return stats(obj, validator, true, done);
  }
}

// False, with nothing handed on, when the line is not plain or has an error before the hand-over:
// simdjson then reads it and words the error. `kind` must come first (writers put it there).
bool JsonlImporter::parse_plain(std::string_view line, TraceValidator& validator,
                                bool first_record) {
  committing_ = false;
  try {
    PlainObject obj(line);
    std::string_view key;
    PlainValue kind;
    if (!obj.next(key, kind) || !is(key, "kind") || kind.type != PlainValue::Type::string) {
      return false;
    }
    dispatch(obj, kind.text, validator, first_record, [] {});
    return true;
  } catch (const NotPlain&) {
    return false;
  } catch (const RecordError&) {
    if (committing_) throw;
    return false;
  }
}

void JsonlImporter::parse_line(std::string_view line, std::size_t capacity,
                               TraceValidator& validator, bool first_record) {
  od::document doc;
  if (auto e = parser_.iterate(line.data(), line.size(), capacity).get(doc)) {
    throw RecordError(json_error(e));
  }
  const char* end = line.data() + line.size();
  record(doc, end, end, validator, first_record);
}

void JsonlImporter::begin_block(std::string_view text, std::size_t capacity) {
  block_end_ = text.data() + text.size();
  block_capacity_ = capacity;
  mode_ = Mode::plain;
}

// The rest of the block, from `from`, as one document stream.
void JsonlImporter::start_stream(const char* from) {
  mode_ = Mode::none;
  block_ = std::string_view(from, static_cast<std::size_t>(block_end_ - from));
  // One batch for the whole block: every document's end is then known (the last one ends at the
  // block's end), and the parser is sized once, by the reader's largest block.
  std::size_t batch = std::max(block_capacity_, block_.size());
  if (batch > stream_batch_) {
    stream_parser_ = od::parser(batch);
    stream_batch_ = batch;
  }
  if (stream_parser_.iterate_many(block_.data(), block_.size(), stream_batch_).get(stream_)) {
    return;
  }
  it_ = stream_.begin();
  if (!(it_ != stream_.end()) || (*it_).error()) return;  // nothing whole, or bad (UTF-8…)
  // An unfinished object at the end is cut off the stream: the last whole one ends before it.
  std::size_t cut = std::min(stream_.truncated_bytes(), block_.size());
  block_limit_ = block_.data() + (block_.size() - cut);
  mode_ = Mode::stream;
}

bool JsonlImporter::parse_in_block(std::string_view line, TraceValidator& validator,
                                   bool first_record) {
  if (mode_ == Mode::plain) {
    if (parse_plain(line, validator, first_record)) return true;
    start_stream(line.data());
  }
  if (!at_line(line)) return false;
  od::document_reference doc;
  if ((*it_).get(doc)) return leave_block();
  try {
    record(doc, line.data() + line.size(), block_limit_, validator, first_record);
  } catch (const RecordError&) {
    // A JSON or shape error: the caller parses the line alone for the authoritative message.
    // After the hand-over the record was whole and the error is the validator's.
    if (!committing_) return leave_block();
    advance();
    throw;
  }
  advance();
  return true;
}

bool JsonlImporter::skip_in_block(std::string_view line) {
  if (mode_ == Mode::plain) return true;
  if (!at_line(line)) return false;
  advance();
  return true;
}

bool JsonlImporter::at_line(std::string_view line) {
  if (mode_ != Mode::stream) return false;
  if (it_.current_index() != static_cast<std::size_t>(line.data() - block_.data())) {
    return leave_block();
  }
  return true;
}

void JsonlImporter::advance() {
  ++it_;
  if (!(it_ != stream_.end())) mode_ = Mode::none;
}

bool JsonlImporter::leave_block() {
  mode_ = Mode::none;
  return false;
}

}  // namespace cg::runtime
