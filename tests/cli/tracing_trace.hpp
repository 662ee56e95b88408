#pragma once
// Helpers of the tracing import tests: hand-written traces in candle-examples' tracing-chrome
// format (`--tracing`), each span with the module instance it must be attributed to, and the
// check that imports such a trace against a crate's IR and compares every span.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/pipeline.hpp"
#include "runtime/tracing_chrome.hpp"
#include "rust/crate.hpp"
#include "scratch.hpp"

namespace cg::tracing_test {

namespace fs = std::filesystem;

// A span as the model enters it: its name, the instance it must be attributed to ("" for a span
// that is time inside its enclosing instance or cannot be placed: no record of its own), and the
// spans inside it.
struct Span {
  std::string name;
  std::string path;
  std::vector<Span> kids;
};

class Records : public runtime::RecordSink {
 public:
  void module_scope(const runtime::ModuleScopeRecord& r) override {
    path_at[r.start_ns] = std::string(r.path);
    total[std::string(r.path)] += r.duration_ns;
  }
  std::map<std::uint64_t, std::string> path_at;  // start (ns) → instance
  std::map<std::string, std::uint64_t> total;    // instance → summed duration (ns)
};

// Writes the spans as B/E events (1 µs apart) and remembers the instance expected at each start.
class TraceWriter {
 public:
  void add(const Span& s) {
    std::uint64_t start = ts_++;
    event("B", s.name, start);
    expected_[start * 1000] = s.path;
    for (const Span& k : s.kids)
      add(k);
    event("E", s.name, ts_++);
  }
  fs::path write(const std::string& file) const {
    fs::path p = cg_test::scratch_path(file);
    std::ofstream out(p);
    out << "[\n" << text_ << "\n]\n";
    return p;
  }
  // Instances expected: start (ns) → path, "" for a span with no record of its own.
  const std::map<std::uint64_t, std::string>& expected() const { return expected_; }

 private:
  void event(const char* ph, const std::string& name, std::uint64_t ts) {
    if (!text_.empty()) text_ += ",\n";
    text_ += std::string(R"({"ph":")") + ph + R"(","pid":1,"tid":0,"ts":)" + std::to_string(ts) +
             R"(.0,"name":")" + name + R"(","cat":"candle",".file":"m.rs",".line":1})";
  }
  std::string text_;
  std::uint64_t ts_ = 1;
  std::map<std::uint64_t, std::string> expected_;
};

inline std::string write_json(const std::string& file, const std::string& text) {
  fs::path p = cg_test::scratch_path(file);
  std::ofstream(p) << text;
  return p.string();
}

// Imports the trace (written to `file`) against the IR of the crate at `crate` rooted at `root`;
// every span must land on its expected instance. `expected_findings`: substrings of the warnings
// the import must give, one warning each (spans it cannot place); any other warning fails.
// Returns the import (its notes too) and the records.
inline std::pair<runtime::TracingChromeImport, Records> check(
    const std::string& crate, const std::string& root, const std::string& config,
    const TraceWriter& w, const std::string& file,
    const std::vector<std::string>& expected_findings = {}) {
  pipeline::Options o;
  o.path = crate;
  o.root = root;
  o.config = config;
  auto a = pipeline::analyze(o);
  auto loaded = rust::load_crate(o.path, {});
  auto catalog = pipeline::span_catalog(loaded.crate, a.ir);
  Records r;
  auto imp = runtime::import_tracing_chrome(w.write(file), catalog, r);
  std::vector<std::size_t> said(expected_findings.size(), 0);
  for (const auto& f : imp.findings) {
    if (!f.warning) continue;
    bool expected = false;
    for (std::size_t i = 0; i < expected_findings.size(); ++i)
      if (f.message.find(expected_findings[i]) != std::string::npos) {
        ++said[i];
        expected = true;
      }
    if (!expected) ADD_FAILURE() << f.rule << ": " << f.message;
  }
  for (std::size_t i = 0; i < expected_findings.size(); ++i)
    EXPECT_EQ(said[i], 1u) << "warnings saying: " << expected_findings[i];
  std::size_t wrong = 0;
  for (const auto& [start, path] : w.expected()) {
    auto it = r.path_at.find(start);
    std::string got = it == r.path_at.end() ? "" : it->second;
    if (got != path && ++wrong <= 20)
      ADD_FAILURE() << "span at " << start / 1000 << " µs: expected `" << path << "`, got `" << got
                    << "`";
  }
  EXPECT_EQ(wrong, 0u) << "of " << w.expected().size() << " spans";
  return {std::move(imp), std::move(r)};
}

}  // namespace cg::tracing_test
