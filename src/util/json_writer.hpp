#pragma once
// A small deterministic JSON writer: same calls, same bytes. Used for every document we emit (IR,
// queries, reports), so output is byte-stable across runs and machines.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cg {

class JsonWriter {
 public:
  // indent = 0 writes compact single-line JSON (JSONL); > 0 pretty-prints with that many spaces.
  explicit JsonWriter(int indent = 2) : indent_(indent) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  JsonWriter& value(std::int64_t n);
  JsonWriter& value(std::uint64_t n);
  JsonWriter& value(int n) { return value(static_cast<std::int64_t>(n)); }
  JsonWriter& value(unsigned n) { return value(static_cast<std::uint64_t>(n)); }
  // Shortest round-trip representation; NaN and infinities (not JSON) are written as null.
  JsonWriter& value(double d);
  JsonWriter& null();
  // Splices an already-serialized JSON value (trusted, produced by another JsonWriter).
  JsonWriter& raw(std::string_view json);

  // Convenience for `"k": v` pairs.
  template <typename T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

  // Appends `s` as a quoted JSON string with all control characters escaped. Also escapes U+2028
  // and U+2029 so the output can be embedded in a <script> block verbatim.
  static void append_quoted(std::string& out, std::string_view s);

 private:
  void before_value();
  void newline();

  struct Level {
    bool is_object;
    bool empty;
  };
  std::string out_;
  std::vector<Level> stack_;
  int indent_;
  bool after_key_ = false;
};

}  // namespace cg
