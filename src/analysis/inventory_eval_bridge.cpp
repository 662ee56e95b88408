// TEMPORARY (issue #19): the symbolic evaluator's lowered entry point
// (`evaluate(const rust::Body&, NodeId, BodyEvalContext&)`) is still being written, so the walker
// evaluates a lowered node by handing the syntax node it was lowered from (same span and syntax
// kind) to the tree-sitter evaluator, and maps the nodes that evaluator asks about back into the
// body. Delete this file and call the lowered `evaluate` in Walker::eval once it exists; this is
// the only inventory file that sees tree-sitter.
#include <tree_sitter/api.h>

#include <unordered_map>

#include "analysis/inventory_walker.hpp"

namespace cg::analysis::inventory {

struct SyntaxBridge {
  // Per body: (start << 32 | end) -> nodes with that span.
  std::unordered_map<const rust::Body*, std::unordered_map<std::uint64_t, std::vector<NodeId>>>
      spans;

  const std::unordered_map<std::uint64_t, std::vector<NodeId>>& index(const rust::Body& body) {
    auto [it, fresh] = spans.try_emplace(&body);
    if (fresh)
      for (NodeId i = 0; i < body.size(); ++i)
        it->second[(std::uint64_t{body[i].start} << 32) | body[i].end].push_back(i);
    return it->second;
  }

  NodeId lowered(const rust::Body& body, TSNode n) {
    const auto& idx = index(body);
    auto it =
        idx.find((std::uint64_t{ts_node_start_byte(n)} << 32) | std::uint64_t{ts_node_end_byte(n)});
    if (it == idx.end()) return rust::kNone;
    std::string_view type = ts_node_type(n);
    for (NodeId id : it->second)
      if (body[id].syntax == type) return id;
    return rust::kNone;
  }
};

namespace {

TSNode syntax_node(const rust::Crate& crate, const rust::Body& body, NodeId id) {
  const rust::Node& n = body[id];
  TSNode root = ts_tree_root_node(crate.files()[body.file]->tree());
  TSNode d = ts_node_named_descendant_for_byte_range(root, n.start, n.end);
  while (!ts_node_is_null(d) && ts_node_start_byte(d) == n.start && ts_node_end_byte(d) == n.end) {
    if (n.syntax.empty() || n.syntax == ts_node_type(d)) return d;
    d = ts_node_parent(d);
  }
  return TSNode{};
}

class Adapter : public EvalContext {
 public:
  Adapter(SyntaxBridge& bridge, const rust::Body& body, BodyEvalContext& ctx)
      : bridge_(bridge), body_(body), ctx_(ctx) {}
  std::optional<SymValue> lookup(std::string_view name) override { return ctx_.lookup(name); }
  std::optional<SymValue> field(TSNode base, std::string_view name) override {
    NodeId id = bridge_.lowered(body_, base);
    if (id == rust::kNone) return std::nullopt;
    return ctx_.field(body_, id, name);
  }
  std::optional<SymValue> method(TSNode recv, std::string_view name,
                                 const std::vector<SymValue>& args) override {
    NodeId id = bridge_.lowered(body_, recv);
    if (id == rust::kNone) return std::nullopt;
    return ctx_.method(body_, id, name, args);
  }

 private:
  SyntaxBridge& bridge_;
  const rust::Body& body_;
  BodyEvalContext& ctx_;
};

}  // namespace

SymValue Walker::eval(NodeId n) {
  const rust::Body& b = body();
  if (n == rust::kNone) return SymValue::symbolic("", "missing expression");
  TSNode s = syntax_node(crate_, b, n);
  if (ts_node_is_null(s))
    return SymValue::symbolic(std::string(b.source(n)), "expression not evaluated");
  if (!bridge_) bridge_ = std::make_shared<SyntaxBridge>();
  Adapter a(*bridge_, b, *this);
  return evaluate(s, b.file_text(), a);
}

}  // namespace cg::analysis::inventory
