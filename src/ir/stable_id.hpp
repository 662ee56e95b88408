#pragma once
// Edit-stable ids (spec §2.1 escaping, our own part lists). An id is `kind` followed by
// ":" + escape(part) for every part; escape percent-encodes `%`, `:`, `/`, `\` and space as
// uppercase %XX, so an id used as a part of another id is escaped again (`%3A` -> `%253A`).
// Ids never contain arena or node indexes: modules and operations use an *occurrence* (0-based
// count of earlier items with the same other parts, in source order), so adding an unrelated item
// elsewhere leaves every other id unchanged.
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace cg::ir {

std::string escape_id_part(std::string_view part);
std::string make_stable_id(std::string_view kind, std::initializer_list<std::string_view> parts);

// `cfg_predicates` are joined with " && " (the spec's function-id rule).
std::string function_id(std::string_view qualified_name,
                        const std::vector<std::string>& cfg_predicates);
std::string component_id(std::string_view struct_qualified_name);
std::string parameter_id(std::string_view component_id, std::string_view builder_root,
                         std::string_view key);
std::string module_id(std::string_view component_id, std::string_view builder_root,
                      std::string_view prefix, std::string_view type_name,
                      const std::vector<std::string>& cfg_predicates, std::uint64_t occurrence);
// Named tensors of a function contract: `input`, `output`, `return`, `return.1`, a param name.
std::string contract_tensor_id(std::string_view function_id, std::string_view local_name);
// The tensor produced by the `occurrence`-th `op_name` operation of the function.
std::string dataflow_tensor_id(std::string_view function_id, std::string_view op_name,
                               std::uint64_t occurrence);
std::string operation_id(std::string_view function_id, std::string_view op_name,
                         std::uint64_t occurrence);
// A module method's call on an instance (`path`, `{i}` for a family) in one entrypoint's run; the
// occurrence counts earlier calls of the same path and method in that run, in run order.
std::string instance_call_id(std::string_view entrypoint_id, std::string_view path,
                             std::string_view method, std::uint64_t occurrence);
// `source` is "" when the finding has no location.
std::string finding_id(std::string_view rule, std::string_view source, std::string_view message);
std::string composition_edge_id(std::string_view from_component, std::string_view to_component,
                                std::string_view field);

// Hands out occurrences: next(key) returns 0, 1, 2, ... for repeated keys. Feed items in source
// order; build the key from every other id part (e.g. function id + "\0" + op name).
class OccurrenceCounter {
 public:
  std::uint64_t next(const std::string& key) { return counts_[key]++; }

 private:
  std::map<std::string, std::uint64_t> counts_;
};

}  // namespace cg::ir
