#include "analysis/config_values.hpp"

#include <simdjson.h>

#include <set>
#include <string_view>

#include "util/atomic_file.hpp"
#include "util/error.hpp"

namespace cg::analysis {

namespace {

constexpr std::size_t kMaxConfigBytes = 16u << 20;
constexpr int kMaxNesting = 16;

void flatten(simdjson::dom::element el, const std::string& prefix, int depth, ConfigValues& out) {
  using T = simdjson::dom::element_type;
  switch (el.type()) {
    case T::OBJECT: {
      if (depth >= kMaxNesting) {
        out.fields[prefix] = SymValue::symbolic(prefix, "nested deeper than 16 levels");
        return;
      }
      simdjson::dom::object obj = el.get_object().value_unsafe();
      std::set<std::string_view> seen;
      for (auto field : obj) {
        std::string key =
            prefix.empty() ? std::string(field.key) : prefix + "." + std::string(field.key);
        if (!seen.insert(field.key).second) out.duplicates.insert(key);
        flatten(field.value, key, depth + 1, out);
      }
      return;
    }
    case T::ARRAY: {
      auto arr = el.get_array().value_unsafe();
      auto n = arr.size();
      SymValue v = SymValue::symbolic(prefix, "array of " + std::to_string(n) + " elements");
      v.array_len = static_cast<std::int64_t>(n);
      // An array of scalars keeps its elements (an index known statically reads one).
      auto elements = std::make_shared<std::vector<SymValue>>();
      for (auto e : arr) {
        if (e.type() == T::ARRAY || e.type() == T::OBJECT) {
          elements.reset();
          break;
        }
        ConfigValues one;
        const std::string key = prefix + "[" + std::to_string(elements->size()) + "]";
        flatten(e, key, depth + 1, one);
        auto it = one.fields.find(key);
        if (it == one.fields.end()) {
          elements.reset();
          break;
        }
        elements->push_back(std::move(it->second));
      }
      v.elements = std::move(elements);
      out.fields[prefix] = std::move(v);
      return;
    }
    case T::INT64:
      out.fields[prefix] = SymValue::of_int(el.get_int64().value_unsafe());
      return;
    case T::UINT64: {
      std::uint64_t v = el.get_uint64().value_unsafe();
      out.fields[prefix] = SymValue::symbolic(prefix, std::to_string(v) + " exceeds i64");
      return;
    }
    case T::DOUBLE:
      out.fields[prefix] = SymValue::of_real(el.get_double().value_unsafe());
      return;
    case T::STRING:
      out.fields[prefix] = SymValue::of_string(std::string(el.get_string().value_unsafe()));
      return;
    case T::BOOL:
      out.fields[prefix] = SymValue::of_bool(el.get_bool().value_unsafe());
      return;
    case T::NULL_VALUE:
      out.fields[prefix] = SymValue::none();
      return;
  }
}

}  // namespace

const SymValue* ConfigValues::find(std::string_view dotted) const {
  auto it = fields.find(dotted);
  return it == fields.end() ? nullptr : &it->second;
}

ConfigValues parse_config_values(std::string_view json, std::string origin) {
  ConfigValues out;
  out.origin = std::move(origin);
  if (json.size() > kMaxConfigBytes)
    throw InputError(out.origin, "config is larger than 16 MiB; expected a model config.json");
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  simdjson::dom::element root;
  auto err = parser.parse(padded).get(root);
  if (err != simdjson::SUCCESS)
    throw InputError(out.origin, std::string("invalid JSON: ") + simdjson::error_message(err));
  if (root.type() != simdjson::dom::element_type::OBJECT)
    throw InputError(out.origin, "expected a JSON object of config fields");
  flatten(root, "", 0, out);
  return out;
}

namespace {

// The dotted paths of the objects in a flattened config: "a.b.c" gives "a" and "a.b".
std::set<std::string, std::less<>> object_paths(const ConfigValues& c) {
  std::set<std::string, std::less<>> out;
  for (const auto& [key, value] : c.fields)
    for (auto dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1))
      out.insert(key.substr(0, dot));
  return out;
}

}  // namespace

ConfigValues select_config_object(const ConfigValues& all, std::string_view key) {
  ConfigValues out;
  out.origin = all.origin + " (object `" + std::string(key) + "`)";
  const std::string prefix = std::string(key) + ".";
  for (auto it = all.fields.lower_bound(prefix);
       it != all.fields.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it)
    out.fields.emplace(it->first.substr(prefix.size()), it->second);
  if (out.fields.empty()) {
    std::string objects;
    for (const auto& o : object_paths(all))
      if (o.find('.') == std::string::npos) objects += (objects.empty() ? "`" : ", `") + o + "`";
    throw InputError(all.origin, "--config-key " + std::string(key) +
                                     ": expected the path of a non-empty JSON object; the file's "
                                     "top-level objects are " +
                                     (objects.empty() ? std::string("none") : objects));
  }
  return out;
}

std::optional<NestedHome> nested_home(const ConfigValues& config,
                                      const std::set<std::string, std::less<>>& missing) {
  std::optional<NestedHome> best;
  if (missing.size() < 2) return best;
  for (const auto& object : object_paths(config)) {
    std::size_t found = 0;
    for (const auto& field : missing)
      if (config.fields.count(object + "." + field) != 0) ++found;
    if (found >= 2 && 2 * found >= missing.size() && (!best || found > best->found))
      best = NestedHome{object, found, missing.size()};
  }
  return best;
}

ConfigValues read_config_values(const std::filesystem::path& path) {
  return parse_config_values(read_file(path, kMaxConfigBytes), path.string());
}

}  // namespace cg::analysis
