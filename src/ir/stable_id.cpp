#include "ir/stable_id.hpp"

namespace cg::ir {
namespace {

std::string join_cfg(const std::vector<std::string>& predicates) {
  std::string out;
  for (std::size_t i = 0; i < predicates.size(); ++i) {
    if (i != 0) out += " && ";
    out += predicates[i];
  }
  return out;
}

}  // namespace

std::string escape_id_part(std::string_view part) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(part.size());
  for (char c : part) {
    if (c == '%' || c == ':' || c == '/' || c == '\\' || c == ' ') {
      const auto b = static_cast<unsigned char>(c);
      out += '%';
      out += kHex[b >> 4];
      out += kHex[b & 0xF];
    } else {
      out += c;
    }
  }
  return out;
}

std::string make_stable_id(std::string_view kind, std::initializer_list<std::string_view> parts) {
  std::string out(kind);
  for (std::string_view p : parts) {
    out += ':';
    out += escape_id_part(p);
  }
  return out;
}

std::string function_id(std::string_view qualified_name,
                        const std::vector<std::string>& cfg_predicates) {
  const std::string cfg = join_cfg(cfg_predicates);
  return make_stable_id("function", {qualified_name, cfg});
}

std::string component_id(std::string_view struct_qualified_name) {
  return make_stable_id("component", {struct_qualified_name});
}

std::string parameter_id(std::string_view component_id, std::string_view builder_root,
                         std::string_view key) {
  return make_stable_id("parameter", {component_id, builder_root, key});
}

std::string module_id(std::string_view component_id, std::string_view builder_root,
                      std::string_view prefix, std::string_view type_name,
                      const std::vector<std::string>& cfg_predicates, std::uint64_t occurrence) {
  const std::string cfg = join_cfg(cfg_predicates);
  const std::string occ = std::to_string(occurrence);
  return make_stable_id("module", {component_id, builder_root, prefix, type_name, cfg, occ});
}

std::string contract_tensor_id(std::string_view function_id, std::string_view local_name) {
  return make_stable_id("tensor", {function_id, local_name});
}

std::string dataflow_tensor_id(std::string_view function_id, std::string_view op_name,
                               std::uint64_t occurrence) {
  const std::string part = std::string(op_name) + "#" + std::to_string(occurrence);
  return make_stable_id("tensor", {function_id, part});
}

std::string operation_id(std::string_view function_id, std::string_view op_name,
                         std::uint64_t occurrence) {
  const std::string occ = std::to_string(occurrence);
  return make_stable_id("operation", {function_id, op_name, occ});
}

std::string instance_call_id(std::string_view entrypoint_id, std::string_view path,
                             std::string_view method, std::uint64_t occurrence) {
  const std::string occ = std::to_string(occurrence);
  return make_stable_id("instance-call", {entrypoint_id, path, method, occ});
}

std::string finding_id(std::string_view rule, std::string_view source, std::string_view message) {
  return make_stable_id("finding", {rule, source, message});
}

std::string composition_edge_id(std::string_view from_component, std::string_view to_component,
                                std::string_view field) {
  return make_stable_id("composition-edge", {from_component, to_component, field});
}

}  // namespace cg::ir
