#pragma once
// The values of a model's config.json, flattened for binding: top-level fields by name, nested
// objects as dotted paths (`rope_scaling.factor`), JSON null as None. Arrays stay symbolic (their
// length is kept) because no shape expression indexes them by constant.
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "analysis/symbolic.hpp"

namespace cg::analysis {

struct ConfigValues {
  std::string origin;  // the file name used in diagnostics
  std::map<std::string, SymValue, std::less<>> fields;

  const SymValue* find(std::string_view dotted) const;
};

// Throws cg::InputError naming the file (and the byte offset simdjson stopped at) when the file
// is not a JSON object; files over 16 MiB are refused.
ConfigValues read_config_values(const std::filesystem::path& path);
ConfigValues parse_config_values(std::string_view json, std::string origin);

}  // namespace cg::analysis
