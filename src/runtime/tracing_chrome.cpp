#include "runtime/tracing_chrome.hpp"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <unordered_map>

#include "util/error.hpp"
#include "util/read_ledger.hpp"

namespace cg::runtime {
namespace {

constexpr std::size_t kSkippedExamples = 10;
// Nesting of objects and arrays an event may have (simdjson's own default limit).
constexpr int kMaxDepth = 1024;

struct Interval {
  std::string name;
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint64_t order = 0;  // begin order in the file, to keep equal intervals parent-first
};

struct ThreadKey {
  std::uint64_t pid = 0, tid = 0;
  bool operator<(const ThreadKey& o) const { return pid != o.pid ? pid < o.pid : tid < o.tid; }
};

struct Open {
  std::string name;
  std::uint64_t start_ns = 0, order = 0;
};

struct ThreadState {
  std::vector<Open> open;
  std::vector<Interval> closed;
};

// A bad event: strict mode fails on it, lenient mode skips it.
struct BadEvent {
  std::string reason;
};

std::vector<std::string> split_path(const std::string& p) {
  std::vector<std::string> out;
  if (p.empty()) return out;
  std::size_t at = 0;
  for (;;) {
    auto dot = p.find('.', at);
    out.push_back(p.substr(at, dot == std::string::npos ? std::string::npos : dot - at));
    if (dot == std::string::npos) break;
    at = dot + 1;
  }
  return out;
}

std::string join_path(const std::vector<std::string>& segs) {
  std::string out;
  for (const auto& s : segs)
    out += (out.empty() ? "" : ".") + s;
  return out;
}

// Paths with numeric segments compared as numbers (`layer.2` before `layer.10`).
bool natural_less(const std::string& a, const std::string& b) {
  std::vector<std::string> sa = split_path(a), sb = split_path(b);
  for (std::size_t i = 0; i < sa.size() && i < sb.size(); ++i) {
    if (sa[i] == sb[i]) continue;
    bool na = !sa[i].empty() && sa[i].find_first_not_of("0123456789") == std::string::npos;
    bool nb = !sb[i].empty() && sb[i].find_first_not_of("0123456789") == std::string::npos;
    if (na && nb && sa[i].size() != sb[i].size()) return sa[i].size() < sb[i].size();
    return sa[i] < sb[i];
  }
  return sa.size() < sb.size();
}

bool is_placeholder(const std::string& seg) {
  return seg.find('{') != std::string::npos;
}

// Per-trace resolution of spans to module instances (see the header).
class Resolver {
 public:
  Resolver(const SpanCatalog& c, RecordSink& sink, TracingChromeImport& out)
      : c_(c), sink_(sink), out_(out) {
    spanned_.assign(c_.modules.size(), false);
    for (const auto& [name, types] : c_.types_by_span) {
      for (std::size_t i = 0; i < c_.modules.size(); ++i) {
        if (types.count(c_.modules[i].type) || types.count(c_.modules[i].declared_type)) {
          spanned_[i] = true;
          by_span_[name].push_back(i);
        }
      }
    }
  }

  void thread(const ThreadKey& key, std::vector<Interval>& spans) {
    std::sort(spans.begin(), spans.end(), [](const Interval& a, const Interval& b) {
      if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
      if (a.end_ns != b.end_ns) return a.end_ns > b.end_ns;
      return a.order < b.order;
    });
    stack_.clear();
    top_ = Frame{};
    nest(spans);
    for (std::size_t i = 0; i < spans.size(); ++i) {
      const Interval& s = spans[i];
      while (!stack_.empty() && stack_.back().end_ns <= s.start_ns)
        close_top(key);
      // Partial overlap (X events that do not nest): the earlier one cannot enclose this one.
      while (!stack_.empty() && stack_.back().end_ns < s.end_ns) {
        ++overlaps_;
        close_top(key);
      }
      open(s, i);
    }
    while (!stack_.empty())
      close_top(key);
  }

  void finish() {
    for (const auto& [name, n] : unknown_) {
      out_.findings.push_back(
          {"runtime-span-unknown", true,
           std::to_string(n) + " span(s) named `" + name +
               "`: no function of the crate creates a span of that name (span!, trace_span!, "
               "…); they are not attributed to a module",
           n});
    }
    for (const auto& [key, n] : type_level_) {
      out_.findings.push_back({"runtime-span-type-level", true,
                               std::to_string(n) + " `" + key.first + "` span(s) attributed to " +
                                   key.second +
                                   ": the enclosing spans do not decide which instance ran",
                               n});
    }
    for (const auto& [key, n] : unmatched_) {
      out_.findings.push_back({"runtime-span-unmatched", true,
                               std::to_string(n) + " `" + key.first +
                                   "` span(s) not attributed to a module: " + key.second,
                               n});
    }
    for (const auto& [name, n] : skipped_) {
      out_.findings.push_back(
          {"runtime-span-skipped", false,
           std::to_string(n) + " `" + name +
               "` span(s) ran fewer spans inside them than their module's longest run (a cache "
               "or a branch skipped some calls): the spans inside were placed by aligning them "
               "with that run",
           n});
    }
    for (const auto& [name, n] : guessed_) {
      out_.findings.push_back(
          {"runtime-span-skipped", true,
           std::to_string(n) + " `" + name +
               "` span(s) ran fewer spans inside them than they hold instances, and no run of "
               "theirs in the trace ran them all: the last of each name was put on the last "
               "instance (assuming the skipped calls lie between the first and the last)",
           n});
    }
    for (const auto& [key, n] : inner_) {
      out_.findings.push_back(
          {"runtime-span-inner", false,
           std::to_string(n) + " `" + key.first + "` span(s) opened inside a `" + key.second +
               "` span of the same module instance: counted as time inside it, not as a "
               "record of their own",
           n});
    }
    if (overlaps_ > 0) {
      out_.findings.push_back(
          {"runtime-span-unbalanced", true,
           std::to_string(overlaps_) +
               " span(s) overlap a span they do not nest in; nesting was cut there",
           overlaps_});
    }
  }

 private:
  struct Frame {
    std::uint64_t end_ns = 0, start_ns = 0;
    std::string name;
    std::optional<std::size_t> module;
    std::string path;  // concrete, or a template when attributed to the type
    std::string event_id;
    bool emitted = false;
    std::map<std::string, std::uint64_t> seen;  // span name → occurrences inside this one
    std::set<std::size_t> matched;              // modules matched inside this one
    std::size_t last = static_cast<std::size_t>(-1);
    std::size_t interval = static_cast<std::size_t>(-1);  // index in the thread's sorted spans
    // For an occurrence that ran fewer spans than its type's longest run: the position in that
    // run of each span directly inside it (empty when it ran them all, or does not align).
    std::optional<std::vector<std::size_t>> aligned;
    bool counted_skip = false;  // counted in a `runtime-span-skipped` finding
  };

  // The span each one nests in directly (by time, as `thread` opens them) and its rank there.
  void nest(const std::vector<Interval>& spans) {
    constexpr std::size_t kNone = static_cast<std::size_t>(-1);
    parent_.assign(spans.size(), kNone);
    rank_.assign(spans.size(), 0);
    kids_.assign(spans.size(), {});
    std::vector<std::size_t> st;
    for (std::size_t i = 0; i < spans.size(); ++i) {
      while (!st.empty() && spans[st.back()].end_ns <= spans[i].start_ns)
        st.pop_back();
      while (!st.empty() && spans[st.back()].end_ns < spans[i].end_ns)
        st.pop_back();
      if (!st.empty()) {
        parent_[i] = st.back();
        rank_[i] = kids_[st.back()].size();
        kids_[st.back()].push_back(spans[i].name);
      }
      st.push_back(i);
    }
    // The longest run of each span name, over the whole thread (and the threads before it), so
    // a trace that starts with cached runs is aligned with a full run that comes later.
    for (std::size_t i = 0; i < spans.size(); ++i) {
      std::vector<std::string>& longest = longest_[spans[i].name];
      if (kids_[i].size() > longest.size()) longest = kids_[i];
    }
  }

  // Positional mapping by nesting. A module that skips calls on some runs (whisper's cross
  // attention computes its key/value on the first call only) runs fewer spans inside its span:
  // those spans are aligned, in order, with the longest run of the same span name — each on the
  // first position of its name from there, the last one on the last such position (a skipped
  // call lies between the first and the last: q_proj, [k_proj, v_proj], out_proj).
  void align(Frame& enc) {
    enc.aligned.emplace();
    const std::vector<std::string>& seq = kids_[enc.interval];
    const std::vector<std::string>& longest = longest_[enc.name];
    if (seq.size() >= longest.size()) return;
    std::vector<std::size_t> at;
    std::size_t from = 0;
    for (std::size_t i = 0; i < seq.size(); ++i) {
      std::size_t j = from;
      if (i + 1 == seq.size()) {
        for (std::size_t k = longest.size(); k-- > from;)
          if (longest[k] == seq[i]) {
            j = k;
            break;
          }
      } else {
        while (j < longest.size() && longest[j] != seq[i])
          ++j;
      }
      if (j >= longest.size() || longest[j] != seq[i]) return;  // not a run with calls skipped
      at.push_back(j);
      from = j + 1;
    }
    enc.aligned = std::move(at);
  }

  // Whether module `m` lies below module `e` (or is `e`'s descendant through unspanned modules
  // when `direct`: its nearest spanned ancestor is `e`).
  bool below(std::size_t m, std::size_t e, bool direct) const {
    for (auto p = c_.modules[m].parent; p; p = c_.modules[*p].parent) {
      if (*p == e) return true;
      if (direct && spanned_[*p]) return false;
    }
    return false;
  }
  std::size_t spanned_ancestors(std::size_t m) const {
    std::size_t n = 0;
    for (auto p = c_.modules[m].parent; p; p = c_.modules[*p].parent)
      if (spanned_[*p]) ++n;
    return n;
  }

  const Frame* enclosing() const {
    for (auto it = stack_.rbegin(); it != stack_.rend(); ++it)
      if (it->module) return &*it;
    return nullptr;
  }

  // Sibling instances in the order their constructors are called: by the call's file and line.
  std::pair<std::string, std::uint64_t> call_order(std::size_t m) const {
    const std::string& src = c_.modules[m].source;
    auto colon = src.rfind(':');
    if (colon == std::string::npos) return {src, 0};
    std::uint64_t line = 0;
    for (char ch : src.substr(colon + 1)) {
      if (ch < '0' || ch > '9') break;
      line = line * 10 + static_cast<std::uint64_t>(ch - '0');
    }
    return {src.substr(0, colon), line};
  }

  // The candidate's path below the enclosing instance: the enclosing instance's concrete
  // segments replace its template's.
  std::vector<std::string> concrete(std::size_t m, const Frame* enc) const {
    std::vector<std::string> segs = split_path(c_.modules[m].prefix);
    if (!enc || !enc->module) return segs;
    std::vector<std::string> et = split_path(c_.modules[*enc->module].prefix);
    std::vector<std::string> ec = split_path(enc->path);
    if (et.size() <= segs.size() && ec.size() == et.size() &&
        std::equal(et.begin(), et.end(), segs.begin())) {
      std::copy(ec.begin(), ec.end(), segs.begin());
    }
    return segs;
  }

  // The n-th span named `name` inside one occurrence of the enclosing instance (or at the top of
  // the thread) is the n-th slot of its candidates in constructor order: an instance is one slot,
  // a repeated template (`model.layers.{i}`, no config to expand it) takes every further span.
  struct Pick {
    std::size_t module = 0;
    std::string path;
    bool repeated = false;
  };
  std::optional<Pick> slot(const std::vector<std::size_t>& picked, const Frame* enc,
                           std::uint64_t n) const {
    for (std::size_t m : picked) {
      std::vector<std::string> segs = concrete(m, enc);
      auto holes = std::count_if(segs.begin(), segs.end(), is_placeholder);
      if (holes == 0) {
        if (n == 0) return Pick{m, join_path(segs), false};
        --n;
        continue;
      }
      if (holes == 1) {
        for (auto& seg : segs)
          if (is_placeholder(seg)) seg = std::to_string(n);
        return Pick{m, join_path(segs), true};
      }
      return Pick{m, join_path(segs), true};  // still a template: attributed to the type
    }
    return std::nullopt;
  }

  void open(const Interval& s, std::size_t index) {
    Frame f;
    f.interval = index;
    f.start_ns = s.start_ns;
    f.end_ns = s.end_ns;
    f.name = s.name;
    auto cands = by_span_.find(s.name);
    if (cands == by_span_.end()) {
      if (c_.types_by_span.count(s.name)) {
        // Created by a type of the crate that is no module of the IR (a HiddenActLayer).
        std::string types;
        for (const auto& [type, where] : c_.types_by_span.at(s.name))
          types += (types.empty() ? "`" : ", `") + type + "` (" + where + ")";
        ++unmatched_[{s.name, "created by " + types + ", which is no module of the model"}];
      } else {
        ++unknown_[s.name];
      }
      stack_.push_back(std::move(f));
      return;
    }
    Frame* enc = nullptr;
    for (auto it = stack_.rbegin(); it != stack_.rend(); ++it)
      if (it->module) {
        enc = &*it;
        break;
      }
    std::vector<std::size_t> picked;
    if (enc) {
      for (std::size_t m : cands->second)
        if (below(m, *enc->module, true)) picked.push_back(m);
      if (picked.empty())
        for (std::size_t m : cands->second)
          if (below(m, *enc->module, false)) picked.push_back(m);
      // A span of the enclosing instance's own type with no instance below it (`attn-rot`,
      // entered inside `attn` by a helper of the same module): time inside that instance.
      if (picked.empty() && std::find(cands->second.begin(), cands->second.end(), *enc->module) !=
                                cands->second.end()) {
        ++inner_[{s.name, enc->name}];
        stack_.push_back(std::move(f));
        return;
      }
    } else {
      // The candidates with the fewest spanned ancestors: those outside every spanned module, or
      // the outermost ones when the root's span is missing from the trace.
      std::size_t fewest = static_cast<std::size_t>(-1);
      for (std::size_t m : cands->second)
        fewest = std::min(fewest, spanned_ancestors(m));
      for (std::size_t m : cands->second)
        if (spanned_ancestors(m) == fewest) picked.push_back(m);
    }
    // Siblings in the order the parent's forward calls them, else in the order they are built.
    std::stable_sort(picked.begin(), picked.end(), [&](std::size_t a, std::size_t b) {
      const auto &ma = c_.modules[a], &mb = c_.modules[b];
      if (ma.parent == mb.parent && ma.forward_rank && mb.forward_rank &&
          *ma.forward_rank != *mb.forward_rank)
        return *ma.forward_rank < *mb.forward_rank;
      auto oa = call_order(a), ob = call_order(b);
      if (oa != ob) return oa < ob;
      return natural_less(ma.prefix, mb.prefix);  // one call in a loop: layer 2 before 10
    });
    if (picked.empty()) {
      ++unmatched_[{s.name, enc ? "no instance of its types lies below `" + enc->path + "`"
                                : "no instance of its types"}];
      stack_.push_back(std::move(f));
      return;
    }
    Frame& level = enc ? *enc : top_;
    std::uint64_t n = level.seen[s.name];
    if (enc && parent_[index] == enc->interval) {
      if (!enc->aligned) align(*enc);
      // Only where this run has fewer spans of the name than instances to put them on: a module
      // type whose instances hold different numbers of children (stages of 3 and 2 blocks) runs
      // them all.
      const auto& kids = kids_[enc->interval];
      auto here = static_cast<std::size_t>(std::count(kids.begin(), kids.end(), s.name));
      bool concrete_slots = std::none_of(picked.begin(), picked.end(), [&](std::size_t m) {
        auto segs = concrete(m, enc);
        return std::any_of(segs.begin(), segs.end(), is_placeholder);
      });
      if (!enc->aligned->empty() && concrete_slots && here < picked.size()) {
        const auto& longest = longest_[enc->name];
        std::size_t j = (*enc->aligned)[rank_[index]];
        std::uint64_t at = 0;
        for (std::size_t k = 0; k < j; ++k)
          if (longest[k] == s.name) ++at;
        if (at < picked.size()) {
          n = at;
          if (!enc->counted_skip) ++skipped_[enc->name];
          enc->counted_skip = true;
        }
      } else if (concrete_slots && here < picked.size() && here > 1) {
        // No full run in the trace to align with (tracing began after the cache was filled):
        // the last span of the name goes on the last instance, as the alignment would put it.
        auto before = static_cast<std::size_t>(std::count(
            kids.begin(), kids.begin() + static_cast<std::ptrdiff_t>(rank_[index]), s.name));
        if (before + 1 == here) {
          n = picked.size() - 1;
          if (!enc->counted_skip) ++guessed_[enc->name];
          enc->counted_skip = true;
        }
      }
    }
    auto pick = slot(picked, enc, n);
    // At the top of a thread, a new decoding step starts the count again: the slots ran out, or a
    // repeated instance comes back after other top-level spans (`block`s after `lm_head`).
    if (!enc && (!pick || (level.matched.count(pick->module) &&
                           !(pick->repeated && level.last == pick->module)))) {
      level.seen.clear();
      level.matched.clear();
      n = 0;
      pick = slot(picked, enc, n);
    }
    if (!pick) {
      ++unmatched_[{s.name, "more of them inside one `" + enc->name + "` span (" + enc->path +
                                ") than instances of their types below it"}];
      stack_.push_back(std::move(f));
      return;
    }
    level.seen[s.name] = n + 1;
    level.matched.insert(pick->module);
    level.last = pick->module;
    f.module = pick->module;
    f.path = pick->path;
    if (std::any_of(f.path.begin(), f.path.end(), [](char ch) { return ch == '{'; }))
      ++type_level_[{s.name, "`" + f.path + "` (the type's template)"}];
    f.event_id = "tc-" + std::to_string(next_id_++);
    stack_.push_back(std::move(f));
  }

  void close_top(const ThreadKey& key) {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    if (f.event_id.empty()) return;  // unknown span name
    const Frame* parent = nullptr;
    for (auto it = stack_.rbegin(); it != stack_.rend(); ++it)
      if (!it->event_id.empty()) {
        parent = &*it;
        break;
      }
    ModuleScopeRecord r;
    r.event_id = f.event_id;
    r.path = f.path;
    r.duration_ns = f.end_ns - f.start_ns;
    r.start_ns = f.start_ns;
    r.thread = key.tid;
    if (parent) r.parent = parent->event_id;
    sink_.module_scope(r);
    ++out_.module_scopes;
  }

  const SpanCatalog& c_;
  RecordSink& sink_;
  TracingChromeImport& out_;
  std::vector<bool> spanned_;
  std::map<std::string, std::vector<std::size_t>> by_span_;
  std::vector<Frame> stack_;
  Frame top_;  // the thread's top level: counts spans outside every spanned instance
  std::map<std::string, std::uint64_t> unknown_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> unmatched_, inner_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> type_level_;
  std::uint64_t overlaps_ = 0;
  std::uint64_t next_id_ = 0;
  // Per sorted span of the current thread: the span it nests in directly, its rank there, and
  // the names of the spans directly inside it.
  std::vector<std::size_t> parent_, rank_;
  std::vector<std::vector<std::string>> kids_;
  std::map<std::string, std::vector<std::string>> longest_;  // span name → its longest run's
  std::map<std::string, std::uint64_t> skipped_;             // span name → runs aligned
  std::map<std::string, std::uint64_t> guessed_;  // span name → runs with no full run to align
};

// Reads the events: the array form object by object (so a cut trace keeps its complete events),
// the object form whole.
class EventReader {
 public:
  EventReader(const std::filesystem::path& path, const ReadOptions& options,
              TracingChromeImport& out)
      : path_(path), options_(options), out_(out) {}

  void read() {
    std::error_code ec;
    auto size = std::filesystem::file_size(path_, ec);
    if (ec) throw InputError(path_.string(), "cannot read trace: " + ec.message());
    if (size > options_.max_document_bytes) {
      throw InputError(path_.string(), "Chrome trace is larger than " +
                                           std::to_string(options_.max_document_bytes) +
                                           " bytes (the reader's limit)");
    }
    if (auto e = simdjson::padded_string::load(path_.string()).get(text_)) {
      throw InputError(path_.string(),
                       std::string("cannot read trace: ") + simdjson::error_message(e));
    }
    out_.info.bytes = text_.size();
    out_.info.lines =
        static_cast<std::uint64_t>(std::count(text_.data(), text_.data() + text_.size(), '\n'));
    const char* p = text_.data();
    const char* end = p + text_.size();
    while (p < end && std::isspace(static_cast<unsigned char>(*p)))
      ++p;
    if (p < end && *p == '{') {
      read_object_form();
    } else if (p < end && *p == '[') {
      read_array_form(p + 1, end);
    } else {
      throw InputError(path_.string(), "not a Chrome trace (expected a JSON array of events)");
    }
  }

  std::map<ThreadKey, ThreadState>& threads() { return threads_; }
  std::uint64_t unbalanced_ends() const { return stray_ends_; }
  std::uint64_t mismatched() const { return mismatched_; }
  std::uint64_t async_events() const { return async_; }
  bool truncated_inside_event() const { return cut_inside_; }
  bool unterminated() const { return unterminated_; }

 private:
  std::uint64_t line_at(const char* at) const {
    return 1 + static_cast<std::uint64_t>(std::count(text_.data(), at, '\n'));
  }
  std::string where(const char* at) const {
    return path_.string() + ":" + std::to_string(line_at(at));
  }

  void bad(const char* at, const std::string& reason) {
    if (!options_.lenient) throw InputError(where(at), reason);
    ++out_.info.skipped_lines;
    if (out_.info.skipped_examples.size() < kSkippedExamples)
      out_.info.skipped_examples.push_back({line_at(at), reason});
  }

  void read_object_form() {
    simdjson::dom::element root;
    if (auto e = parser_.parse(text_).get(root)) {
      const char* begin = text_.data();
      if (e == simdjson::DEPTH_ERROR) {
        const char* deep = nullptr;
        (void)match_brace(begin + text_.size() - trimmed_size(), begin + text_.size(), &deep);
        too_deep(deep != nullptr ? deep : begin);
      }
      throw InputError(path_.string(),
                       std::string("invalid JSON (") + simdjson::error_message(e) + ")");
    }
    // Parsers differ on a repeated key (simdjson keeps the first, others the last): say so.
    std::size_t seen = 0;
    simdjson::dom::object top;
    if (!root.get_object().get(top)) {
      for (auto field : top)
        if (field.key == "traceEvents") ++seen;
    }
    if (seen > 1) {
      const char* second =
          top_level_key(text_.data(), text_.data() + text_.size(), "traceEvents", 2);
      throw InputError(second != nullptr ? where(second) : path_.string(),
                       "the trace object has the key `traceEvents` " + std::to_string(seen) +
                           " times; expected one array of events (which one is meant is "
                           "ambiguous: JSON parsers keep the first or the last)");
    }
    simdjson::dom::array events;
    if (root["traceEvents"].get_array().get(events)) {
      throw InputError(path_.string(), "Chrome trace object has no `traceEvents` array of events");
    }
    for (simdjson::dom::element ev : events)
      event(ev, text_.data());
  }

  std::size_t trimmed_size() const {
    std::size_t i = 0;
    while (i < text_.size() && std::isspace(static_cast<unsigned char>(text_.data()[i])))
      ++i;
    return text_.size() - i;
  }

  [[noreturn]] void too_deep(const char* at) const {
    throw InputError(where(at), "objects and arrays nest deeper than " + std::to_string(kMaxDepth) +
                                    " levels here (byte offset " +
                                    std::to_string(at - text_.data()) +
                                    "; the reader's limit): expected an event of ordinary depth");
  }

  // Where the `nth` top-level key `key` of the object starting at `p` is written (its opening
  // quote), or null; keys spelled with escapes are not recognised.
  static const char* top_level_key(const char* p, const char* end, std::string_view key,
                                   std::size_t nth) {
    int depth = 0;
    char before = 0;  // the last character outside strings that is not white space
    for (; p < end; ++p) {
      const char ch = *p;
      if (ch == '"') {
        const char* open = p;
        for (++p; p < end && *p != '"'; ++p)
          if (*p == '\\') ++p;
        const std::string_view text(open + 1, static_cast<std::size_t>(p - open - 1));
        if (depth == 1 && (before == '{' || before == ',') && text == key && --nth == 0)
          return open;
        before = '"';
        continue;
      }
      if (std::isspace(static_cast<unsigned char>(ch))) continue;
      if (ch == '{' || ch == '[') ++depth;
      if (ch == '}' || ch == ']') --depth;
      before = ch;
    }
    return nullptr;
  }

  void read_array_form(const char* p, const char* end) {
    for (;;) {
      while (p < end && (std::isspace(static_cast<unsigned char>(*p)) || *p == ','))
        ++p;
      if (p >= end) {
        unterminated_ = true;  // a program that did not drop tracing-chrome's FlushGuard
        return;
      }
      if (*p == ']') {
        ++p;
        while (p < end && std::isspace(static_cast<unsigned char>(*p)))
          ++p;
        if (p < end) throw InputError(where(p), "unexpected text after the event array");
        return;
      }
      if (*p != '{') {
        throw InputError(where(p),
                         std::string("expected an event object `{…}`, found `") + *p + "`");
      }
      const char* start = p;
      const char* deep = nullptr;
      const char* close = match_brace(p, end, &deep);
      if (deep != nullptr) too_deep(deep);
      if (!close) {
        if (!options_.lenient) {
          throw InputError(where(start),
                           "trace ends inside an event (the file was cut while it was written)");
        }
        cut_inside_ = true;
        return;
      }
      simdjson::dom::element ev;
      if (auto e = parser_.parse(start, static_cast<std::size_t>(close + 1 - start)).get(ev)) {
        bad(start, std::string("invalid event JSON (") + simdjson::error_message(e) + ")");
      } else {
        event(ev, start);
      }
      p = close + 1;
    }
  }

  // The `}` that closes the object opening at `p`, skipping strings; null when the text ends
  // first, or when it nests deeper than kMaxDepth (then `too_deep` is where).
  static const char* match_brace(const char* p, const char* end, const char** too_deep) {
    int depth = 0;
    bool in_string = false;
    for (; p < end; ++p) {
      char ch = *p;
      if (in_string) {
        if (ch == '\\') {
          ++p;
        } else if (ch == '"') {
          in_string = false;
        }
        continue;
      }
      if (ch == '"') {
        in_string = true;
      } else if (ch == '{' || ch == '[') {
        if (++depth > kMaxDepth) {
          *too_deep = p;
          return nullptr;
        }
      } else if (ch == '}' || ch == ']') {
        if (--depth == 0) return p;
      }
    }
    return nullptr;
  }

  static std::optional<std::uint64_t> micros_to_ns(simdjson::dom::element v) {
    double d = 0;
    if (v.get_double().get(d)) return std::nullopt;
    if (!std::isfinite(d) || d < 0 || d > 1.8e13) return std::nullopt;  // < ~200 days
    return static_cast<std::uint64_t>(std::llround(d * 1000.0));
  }

  static std::uint64_t id_of(simdjson::dom::element ev, const char* key) {
    simdjson::dom::element v;
    if (ev[key].get(v)) return 0;
    std::uint64_t u = 0;
    if (!v.get_uint64().get(u)) return u;
    std::int64_t i = 0;
    if (!v.get_int64().get(i)) return static_cast<std::uint64_t>(i);
    return 0;
  }

  void event(simdjson::dom::element ev, const char* at) {
    ++out_.events;
    if (out_.events > options_.max_records) {
      throw InputError(where(at), "trace has more than " + std::to_string(options_.max_records) +
                                      " events (the reader's limit)");
    }
    simdjson::dom::object obj;
    if (ev.get_object().get(obj)) return bad(at, "an event must be a JSON object");
    std::string_view ph;
    if (ev["ph"].get_string().get(ph)) return bad(at, "event has no `ph` string");
    if (ph == "b" || ph == "e" || ph == "n") {
      ++async_;
      return;
    }
    if (ph != "B" && ph != "E" && ph != "X") return;  // metadata, instants, counters, …
    ThreadKey key{id_of(ev, "pid"), id_of(ev, "tid")};
    simdjson::dom::element tsv;
    std::optional<std::uint64_t> ts;
    if (!ev["ts"].get(tsv)) ts = micros_to_ns(tsv);
    if (!ts) return bad(at, "`" + std::string(ph) + "` event has no `ts` (µs, a number ≥ 0)");
    std::string_view name;
    bool has_name = !ev["name"].get_string().get(name);
    if ((ph == "B" || ph == "X") && !has_name)
      return bad(at, "`" + std::string(ph) + "` event has no `name` string");
    ThreadState& t = threads_[key];
    if (ph == "B") {
      t.open.push_back({std::string(name), *ts, order_++});
      return;
    }
    if (ph == "X") {
      simdjson::dom::element dv;
      std::optional<std::uint64_t> dur;
      if (!ev["dur"].get(dv)) dur = micros_to_ns(dv);
      if (!dur) return bad(at, "`X` event has no `dur` (µs, a number ≥ 0)");
      t.closed.push_back({std::string(name), *ts, *ts + *dur, order_++});
      ++out_.spans;
      return;
    }
    // "E": closes the innermost open span of its thread with that name.
    if (t.open.empty()) {
      ++stray_ends_;
      return;
    }
    std::size_t at_depth = t.open.size() - 1;
    if (has_name && t.open.back().name != name) {
      std::size_t i = t.open.size();
      while (i > 0 && t.open[i - 1].name != name)
        --i;
      if (i == 0) {
        ++stray_ends_;
        return;
      }
      at_depth = i - 1;
      mismatched_ += t.open.size() - 1 - at_depth;  // spans left open inside it
    }
    const Open& o = t.open[at_depth];
    if (*ts >= o.start_ns) {
      t.closed.push_back({o.name, o.start_ns, *ts, o.order});
      ++out_.spans;
    } else {
      bad(at, "`E` event ends before its `B` began");
    }
    t.open.resize(at_depth);
  }

  const std::filesystem::path& path_;
  const ReadOptions& options_;
  TracingChromeImport& out_;
  simdjson::padded_string text_;
  simdjson::dom::parser parser_;
  std::map<ThreadKey, ThreadState> threads_;
  std::uint64_t order_ = 0, stray_ends_ = 0, mismatched_ = 0, async_ = 0;
  bool cut_inside_ = false, unterminated_ = false;
};

}  // namespace

bool is_chrome_trace(const std::filesystem::path& path) {
  note_input(path);
  std::ifstream in(path, std::ios::binary);
  char buf[4096];
  in.read(buf, sizeof buf);
  std::string_view head(buf, static_cast<std::size_t>(in.gcount()));
  std::size_t i = head.find_first_not_of(" \t\r\n");
  if (i == std::string_view::npos) return false;
  if (head[i] == '[') return true;
  if (head[i] != '{') return false;
  // `{"traceEvents":[…` (the object form); runtime JSONL/documents start with other keys.
  std::size_t j = head.find_first_not_of(" \t\r\n", i + 1);
  return j != std::string_view::npos && head.substr(j).rfind("\"traceEvents\"", 0) == 0;
}

TracingChromeImport import_tracing_chrome(const std::filesystem::path& path,
                                          const SpanCatalog& catalog, RecordSink& sink,
                                          const ReadOptions& options) {
  TracingChromeImport out;
  out.info.path = path.string();
  out.info.form = TraceForm::document;
  out.info.meta.schema = Schema::v4;
  out.info.meta.entrypoint = "tracing-chrome";
  EventReader reader(path, options, out);
  reader.read();

  RunMeta meta = out.info.meta;
  sink.meta(meta);
  Resolver resolver(catalog, sink, out);
  std::uint64_t open_at_end = 0;
  for (auto& [key, t] : reader.threads()) {
    open_at_end += t.open.size();
    resolver.thread(key, t.closed);
  }
  out.threads = reader.threads().size();
  resolver.finish();

  auto add = [&](std::string rule, std::string message, std::uint64_t n) {
    out.findings.push_back({std::move(rule), true, std::move(message), n});
  };
  if (reader.unbalanced_ends() > 0) {
    add("runtime-span-unbalanced",
        path.string() + ": " + std::to_string(reader.unbalanced_ends()) +
            " `E` event(s) close no open span of their thread; ignored",
        reader.unbalanced_ends());
  }
  if (reader.mismatched() > 0) {
    add("runtime-span-unbalanced",
        path.string() + ": " + std::to_string(reader.mismatched()) +
            " span(s) were never ended before an enclosing span ended; not timed",
        reader.mismatched());
  }
  if (open_at_end > 0) {
    add("runtime-span-open",
        path.string() + ": " + std::to_string(open_at_end) +
            " span(s) were still open at the end of the trace; not timed",
        open_at_end);
  }
  if (reader.async_events() > 0) {
    add("runtime-span-async",
        path.string() + ": " + std::to_string(reader.async_events()) +
            " async-style events (`b`/`e`, TraceStyle::Async) have no thread nesting; not "
            "attributed",
        reader.async_events());
  }
  if (reader.truncated_inside_event()) {
    out.info.truncated = true;
    add("runtime-truncated",
        path.string() +
            ": trace ends inside an event (cut while written, --lenient); timings "
            "cover the complete events before it",
        1);
  } else if (reader.unterminated()) {
    out.info.truncated = true;
    add("runtime-truncated",
        path.string() +
            ": the event array is not closed (the program did not drop "
            "tracing-chrome's FlushGuard); timings cover what was written",
        1);
  }
  if (out.info.skipped_lines > 0) {
    add("runtime-skipped-lines",
        path.string() + ": " + std::to_string(out.info.skipped_lines) +
            " bad events were skipped (--lenient)",
        out.info.skipped_lines);
  }
  return out;
}

}  // namespace cg::runtime
