#pragma once
// The values of a model's config.json, flattened for binding: top-level fields by name, nested
// objects as dotted paths (`rope_scaling.factor`), JSON null as None. Arrays stay symbolic (their
// length is kept) because no shape expression indexes them by constant.
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "analysis/symbolic.hpp"

namespace cg::analysis {

// A value the binding refused (issue #18): serde would not deserialize it into the field's Rust
// type (`-5` or `2.5` for a `usize`), or no tensor dimension can be that large.
struct ConfigProblem {
  std::string key;           // dotted JSON path: "hidden_size", "text_config.hidden_size"
  std::string value;         // as the file gives it: "-5", "2.5"
  std::string rust_type;     // the field's declared type: "usize"
  std::string field;         // "Config.hidden_size"
  std::string field_source;  // "src/model.rs:12"
  std::string why;           // "a negative value", "a number with a fraction", ...
  // Found in the struct the root constructor is given: serde refuses the whole file, whatever
  // the value feeds (`hidden_act: "gelu_fast"`, a field no constructor reads).
  bool whole_file = false;
};

struct ConfigValues {
  std::string origin;  // the file name used in diagnostics
  std::map<std::string, SymValue, std::less<>> fields;

  const SymValue* find(std::string_view dotted) const;

  // Records of binding (analysis::ConfigBinding), read by the post-inventory check
  // (pipeline/config_check.hpp). Mutable: the binding reads the values through a const pointer.
  mutable std::map<std::string, ConfigProblem, std::less<>> problems;  // by key
  mutable std::set<std::string, std::less<>> read;  // keys a constructor read from the file
  // Top-level keys a constructor looked for that the file lacks and serde cannot default, with
  // the field's source ("src/model.rs:12").
  mutable std::map<std::string, std::string, std::less<>> missing;
  // Keys written twice in one object (the last value is kept in `fields`): serde's derived
  // Deserialize refuses a duplicate field, so one a constructor reads is an input error.
  std::set<std::string, std::less<>> duplicates;
};

// Throws cg::InputError naming the file (and the byte offset simdjson stopped at) when the file
// is not a JSON object; files over 16 MiB are refused.
ConfigValues read_config_values(const std::filesystem::path& path);
ConfigValues parse_config_values(std::string_view json, std::string origin);

// The object at dotted path `key` (`text_config`) as a config of its own, for a model whose
// fields a multimodal config.json nests (`--config-key`). Throws cg::InputError naming the file
// and the objects it does have when `key` is not an object there.
ConfigValues select_config_object(const ConfigValues& all, std::string_view key);

// Where the fields a binding missed are: the nested object holding most of `missing` (top-level
// keys), when it holds at least two and at least half of them, else empty.
struct NestedHome {
  std::string key;  // "text_config"
  std::size_t found = 0, missing = 0;
};
std::optional<NestedHome> nested_home(const ConfigValues& config,
                                      const std::set<std::string, std::less<>>& missing);

}  // namespace cg::analysis
