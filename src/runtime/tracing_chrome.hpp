#pragma once
// Importer for the Chrome trace that `tracing-chrome` writes (candle-examples' `--tracing` flag):
// a JSON array of events — `{"ph":"B"|"E","pid":1,"tid":0,"ts":12.5,"name":"attn","cat":…}` with
// `ts` in µs (float), `"X"` complete events with `dur`, `"M"` thread names, `"i"` instants — or an
// object with `traceEvents`. A program that never dropped its FlushGuard leaves the array
// unterminated (tracing-chrome writes `[`, then `,\n`-separated events, then `\n]` at the end).
//
// Candle models create their spans in constructors (`span!(Level::TRACE, "block")` stored in a
// field, entered in `forward`), so a span stands for a module instance. The importer turns each
// closed span into a runtime/4 `ModuleScopeRecord` keyed by the instance's VarBuilder path:
//  - which module types a span name can be comes from the span calls the analyzer found in the
//    crate's source (`SpanCatalog::types_by_span`), never from the name;
//  - which instance comes from structure: a span's nearest enclosing span that resolved to a module
//    instance selects the candidate below that instance in the module tree, and the n-th
//    occurrence of a repeated candidate (`model.layers.{i}`) inside one enclosing occurrence is
//    element n (the n-th `block` inside one `model` span is `model.layers.n`).
//  - where structure does not decide (several candidates, no enclosing instance to count within),
//    the scope is attributed to the type — path `model.layers.{i}` (one candidate template) or
//    `<Type>` — and a finding says so with its count.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/reader.hpp"
#include "runtime/records.hpp"

namespace cg::runtime {

// The static side, from the model IR and the crate's span calls (built by the pipeline).
struct SpanCatalog {
  struct Module {
    std::string type;                   // qualified type (`model::Block`)
    std::string prefix;                 // VarBuilder path template, `model.layers.{layer_idx}`
    std::optional<std::size_t> parent;  // index into `modules`
    // The type its parent's field is declared with, when it differs from `type` (a with_tracing
    // wrapper the IR types by the layer it holds); empty otherwise.
    std::string declared_type;
    // Where its constructor is called ("src/models/llama.rs:368"): sibling instances of one
    // span name are called in this order (q_proj, k_proj, v_proj, o_proj).
    std::string source;
    // Where the parent's `forward` first names its field (smaller runs first), when it does:
    // the order siblings run in, ahead of `source` (bert builds query, value, key).
    std::optional<std::size_t> forward_rank;
  };
  std::vector<Module> modules;
  // span name → the qualified types whose code creates it, and where ("src/model.rs:42").
  std::map<std::string, std::map<std::string, std::string>> types_by_span;
};

struct ImportFinding {
  std::string rule;  // runtime-span-type-level, runtime-span-unknown, runtime-span-unbalanced, …
  bool warning = true;
  std::string message;
  std::uint64_t count = 0;
};

struct TracingChromeImport {
  TraceInfo info;
  std::uint64_t events = 0;         // events read (all phases)
  std::uint64_t spans = 0;          // closed spans (B/E pairs and X events)
  std::uint64_t module_scopes = 0;  // records handed to the sink
  std::uint64_t threads = 0;
  std::vector<ImportFinding> findings;
};

// Whether `path` holds a Chrome trace (its first non-blank byte is `[`, or it is an object with
// `traceEvents` near its start) rather than a candle-graph runtime trace.
bool is_chrome_trace(const std::filesystem::path& path);

// Reads the trace and hands one ModuleScopeRecord per attributed span to `sink` (children before
// their parent, as a profiler closes them). Throws cg::InputError naming the file (and the line of
// a bad event) on malformed input; with `options.lenient`, bad events are skipped and counted and
// a trace cut inside an event keeps what came before it (a finding says so).
TracingChromeImport import_tracing_chrome(const std::filesystem::path& path,
                                          const SpanCatalog& catalog, RecordSink& sink,
                                          const ReadOptions& options = {});

}  // namespace cg::runtime
