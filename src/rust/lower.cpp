// Lowering: tree-sitter-rust's syntax tree of one function body (or const value) into the typed
// arena of rust/body.hpp. This is the one place that knows tree-sitter's expression, statement
// and pattern node kinds and field names; teaching the analysis a construct starts here.

#include <tree_sitter/api.h>

#include <cctype>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "rust/body.hpp"
#include "rust/crate.hpp"
#include "rust/grammar.hpp"
#include "rust/literal.hpp"
#include "util/deep_stack.hpp"

namespace cg::rust {

struct LoweredCache {
  std::mutex mu;
  std::vector<std::unique_ptr<Body>> bodies;  // by item index
  std::vector<std::unique_ptr<Body>> extra;   // empty bodies handed out for bad indices
};

std::shared_ptr<LoweredCache> Crate::make_lowered_cache() {
  return std::make_shared<LoweredCache>();
}

namespace {

// Bodies nest shallowly in practice; one nesting deeper than kShallowDepth is lowered again on
// a thread with a large stack (util/deep_stack.hpp), so no build's stack frames decide. Deeper
// than kMaxDepth (only generated or hostile input: above the interpreters' own bounds) lowers to
// Unsupported leaves.
constexpr int kShallowDepth = 96;
constexpr int kMaxDepth = 4000;

std::string_view type_of(TSNode n) {
  return ts_node_type(n);
}
TSNode field_of(TSNode n, const char* f) {
  return ts_node_child_by_field_name(n, f, static_cast<std::uint32_t>(std::strlen(f)));
}
bool is_comment(std::string_view k) {
  return k == "line_comment" || k == "block_comment";
}

// Every child of `n` (named and anonymous) with its field name.
struct Child {
  TSNode node;
  const char* field;
};
std::vector<Child> children(TSNode n) {
  std::vector<Child> out;
  if (ts_node_is_null(n) || ts_node_child_count(n) == 0) return out;
  TSTreeCursor c = ts_tree_cursor_new(n);
  if (ts_tree_cursor_goto_first_child(&c)) {
    do {
      out.push_back({ts_tree_cursor_current_node(&c), ts_tree_cursor_current_field_name(&c)});
    } while (ts_tree_cursor_goto_next_sibling(&c));
  }
  ts_tree_cursor_delete(&c);
  return out;
}
// Named children, comments and attribute items skipped.
std::vector<TSNode> named_kids(TSNode n) {
  std::vector<TSNode> out;
  for (const Child& c : children(n)) {
    if (!ts_node_is_named(c.node)) continue;
    std::string_view k = type_of(c.node);
    if (is_comment(k) || k == "attribute_item" || k == "inner_attribute_item") continue;
    out.push_back(c.node);
  }
  return out;
}
// Pattern elements: named children plus the anonymous `_` token (`Some(_)`).
std::vector<TSNode> pattern_kids(TSNode n, const char* skip_field = nullptr) {
  std::vector<TSNode> out;
  for (const Child& c : children(n)) {
    if (skip_field && c.field && std::strcmp(c.field, skip_field) == 0) continue;
    std::string_view k = type_of(c.node);
    if (!ts_node_is_named(c.node) && k != "_") continue;
    if (is_comment(k) || k == "attribute_item") continue;
    out.push_back(c.node);
  }
  return out;
}
bool has_token(TSNode n, std::string_view token) {
  for (const Child& c : children(n))
    if (!ts_node_is_named(c.node) && type_of(c.node) == token) return true;
  return false;
}
TSNode first_named(TSNode parent) {
  auto kids = named_kids(parent);
  return kids.empty() ? TSNode{} : kids[0];
}

TSNode child_of_kind(TSNode n, std::string_view kind) {
  for (const Child& c : children(n))
    if (type_of(c.node) == kind) return c.node;
  return TSNode{};
}

const std::unordered_set<std::string_view>& expression_kinds() {
  static const std::unordered_set<std::string_view> k = {"array_expression",
                                                         "assignment_expression",
                                                         "async_block",
                                                         "await_expression",
                                                         "binary_expression",
                                                         "block",
                                                         "break_expression",
                                                         "call_expression",
                                                         "closure_expression",
                                                         "compound_assignment_expr",
                                                         "const_block",
                                                         "continue_expression",
                                                         "field_expression",
                                                         "for_expression",
                                                         "gen_block",
                                                         "generic_function",
                                                         "identifier",
                                                         "if_expression",
                                                         "index_expression",
                                                         "loop_expression",
                                                         "macro_invocation",
                                                         "match_expression",
                                                         "metavariable",
                                                         "parenthesized_expression",
                                                         "range_expression",
                                                         "reference_expression",
                                                         "return_expression",
                                                         "scoped_identifier",
                                                         "self",
                                                         "struct_expression",
                                                         "try_block",
                                                         "try_expression",
                                                         "tuple_expression",
                                                         "type_cast_expression",
                                                         "unary_expression",
                                                         "unit_expression",
                                                         "unsafe_block",
                                                         "while_expression",
                                                         "yield_expression",
                                                         "boolean_literal",
                                                         "char_literal",
                                                         "float_literal",
                                                         "integer_literal",
                                                         "raw_string_literal",
                                                         "string_literal",
                                                         "let_condition",
                                                         "let_chain",
                                                         "crate",
                                                         "super",
                                                         "ERROR"};
  return k;
}

bool is_item_kind(std::string_view k) {
  return k.find("item") != std::string_view::npos || k == "use_declaration" ||
         k == "extern_crate_declaration" || k == "macro_definition" || k == "associated_type";
}

}  // namespace

class Lowering {
 public:
  Lowering(const CfgSet& cfg, std::string_view text, std::size_t file, Body& body)
      : cfg_(cfg), b_(body), text_(text) {
    b_.file = file;
    b_.file_text_ = text_;
  }

  NodeId expr(TSNode n, int depth);
  NodeId pat(TSNode n, int depth);
  NodeId block(TSNode n, TSNode span, std::uint8_t flags, int depth);
  // Lowers with `fn` (a call of expr/block on this Lowering): on this thread while the nesting
  // stays shallow, else again from scratch on a large stack.
  template <typename Fn>
  NodeId run(Fn fn) {
    limit_ = kShallowDepth;
    NodeId root = fn();
    if (!hit_limit_) return root;
    b_.nodes_.clear();
    b_.kids_.clear();
    b_.pool_.clear();
    hit_limit_ = false;
    limit_ = kMaxDepth;
    util::run_on_deep_stack([&] { root = fn(); });
    return root;
  }
  // Drops the arena's spare capacity once the body is complete.
  void finish() {
    b_.nodes_.shrink_to_fit();
    b_.kids_.shrink_to_fit();
  }

 private:
  const CfgSet& cfg_;
  Body& b_;
  int limit_ = kMaxDepth;
  bool hit_limit_ = false;

  bool too_deep(int depth) {
    if (depth <= limit_) return false;
    hit_limit_ = true;
    return true;
  }
  std::string_view text_;

  std::string_view slice(std::uint32_t a, std::uint32_t e) const {
    if (e > text_.size() || a > e) return {};
    return text_.substr(a, e - a);
  }
  std::string_view text(TSNode n) const {
    if (ts_node_is_null(n)) return {};
    return slice(ts_node_start_byte(n), ts_node_end_byte(n));
  }
  Node& at(NodeId id) { return b_.nodes_[id]; }

  NodeId add(Kind k, TSNode n) {
    Node node;
    node.kind = k;
    b_.nodes_.push_back(node);
    auto id = static_cast<NodeId>(b_.nodes_.size() - 1);
    if (!ts_node_is_null(n)) respan(id, n);
    return id;
  }
  // Gives node `id` the span, line and syntax kind of `n` (a wrapper the node stands for).
  void respan(NodeId id, TSNode n) {
    Node& node = at(id);
    node.start = ts_node_start_byte(n);
    node.end = ts_node_end_byte(n);
    node.line = ts_node_start_point(n).row + 1;
    node.syntax = ts_node_type(n);
  }
  void set_kids(NodeId id, const std::vector<NodeId>& kids) {
    Node& n = at(id);
    n.kids_begin = static_cast<std::uint32_t>(b_.kids_.size());
    n.kids_count = static_cast<std::uint32_t>(kids.size());
    b_.kids_.insert(b_.kids_.end(), kids.begin(), kids.end());
  }
  std::string_view pool(std::string s) {
    b_.pool_.push_back(std::move(s));
    return b_.pool_.back();
  }
  NodeId opt_expr(TSNode n, int depth) { return ts_node_is_null(n) ? kNone : expr(n, depth); }

  // The `#[cfg]`s among `attrs`, evaluated as Crate::attributes_active does.
  Tri attributes(const std::vector<TSNode>& attrs) const {
    std::vector<std::string> preds;
    for (TSNode a : attrs) {
      TSNode attr = ts_node_named_child(a, 0);
      if (ts_node_is_null(attr)) continue;
      std::string t(text(attr));
      if (t.rfind("cfg", 0) != 0 || t.rfind("cfg_attr", 0) == 0) continue;
      auto open = t.find('('), close = t.rfind(')');
      if (open != std::string::npos && close != std::string::npos && close > open)
        preds.push_back(normalize_cfg(std::string_view(t).substr(open + 1, close - open - 1)));
    }
    return cfg_.eval_all(preds);
  }
  Tri inner_attributes(TSNode n) const {
    std::vector<TSNode> attrs;
    for (const Child& c : children(n))
      if (type_of(c.node) == "attribute_item") attrs.push_back(c.node);
    return attrs.empty() ? Tri::True : attributes(attrs);
  }

  std::string_view label_of(TSNode n) const { return text(child_of_kind(n, "label")); }

  NodeId unsupported(TSNode n, int depth) {
    NodeId id = add(Kind::Unsupported, n);
    at(id).str = at(id).syntax;
    if (too_deep(depth)) return id;
    std::vector<NodeId> kids;
    for (const Child& c : children(n)) {
      if (!ts_node_is_named(c.node)) continue;
      if (expression_kinds().count(type_of(c.node))) kids.push_back(expr(c.node, depth + 1));
    }
    set_kids(id, kids);
    return id;
  }

  NodeId literal(TSNode n) {
    NodeId id = add(Kind::Lit, n);
    std::string_view k = type_of(n), t = text(n);
    Node& node = at(id);
    node.str = t;
    if (k == "integer_literal") {
      node.lit = LitKind::Int;
    } else if (k == "float_literal") {
      node.lit = LitKind::Float;
    } else if (k == "boolean_literal") {
      node.lit = LitKind::Bool;
    } else if (k == "char_literal") {
      node.lit = !t.empty() && t[0] == 'b' ? LitKind::Byte : LitKind::Char;
    } else {
      node.lit = LitKind::Str;
      auto s = decode_string_literal(t);
      std::string_view v = s ? pool(std::move(*s)) : std::string_view{};
      at(id).text = v;
    }
    return id;
  }

  NodeId call(TSNode n, int depth);
  NodeId condition(TSNode n, int depth);
  NodeId let_chain(TSNode n, int depth);
  NodeId match(TSNode n, int depth);
  NodeId closure(TSNode n, int depth);
  NodeId structure(TSNode n, int depth);
  NodeId macro(TSNode n, Kind k);
  std::optional<NodeId> vec_macro(TSNode n, int depth);
  NodeId statement(TSNode n, bool last, Tri cfg, bool& is_tail, int depth);
  std::optional<NodeId> branch_or_loop(TSNode n, std::string_view k, int depth);
  std::optional<NodeId> aggregate(TSNode n, std::string_view k, int depth);
  std::optional<NodeId> compound_pattern(TSNode n, std::string_view k, int depth);
  // A node of `kind` spanning `n` whose one operand is `child` (absent when null).
  NodeId unary(Kind kind, TSNode n, TSNode child, int depth) {
    NodeId id = add(kind, n);
    NodeId a = opt_expr(child, depth + 1);
    at(id).a = a;
    return id;
  }
};

NodeId Lowering::macro(TSNode n, Kind k) {
  NodeId id = add(k, n);
  TSNode tt{};
  for (const Child& c : children(n))
    if (type_of(c.node) == "token_tree") tt = c.node;
  Node& node = at(id);
  node.str = text(field_of(n, "macro"));
  if (!ts_node_is_null(tt) && ts_node_end_byte(tt) >= ts_node_start_byte(tt) + 2)
    node.text = slice(ts_node_start_byte(tt) + 1, ts_node_end_byte(tt) - 1);
  return id;
}

// `vec![a, b, c]` / `vec![x; n]` is the array it spells: tree-sitter leaves a macro's arguments
// as tokens, so the bracketed token tree is parsed again on its own (the same file text, only
// that byte range included, so every span stays the file's) and lowered as an Array /
// ArrayRepeat spanning the whole invocation, `str` = the macro path. Interpreters then see the
// elements (candle-transformers' Vgg builds its blocks in one). Anything else — `(..)`/`{..}`
// delimiters, tokens that are not one array expression — stays a Macro.
std::optional<NodeId> Lowering::vec_macro(TSNode n, int depth) {
  std::string_view name = text(field_of(n, "macro"));
  if (name != "vec" && name != "std::vec" && name != "alloc::vec") return std::nullopt;
  TSNode tt{};
  for (const Child& c : children(n))
    if (type_of(c.node) == "token_tree") tt = c.node;
  if (ts_node_is_null(tt) || !text(tt).starts_with('[') || too_deep(depth)) return std::nullopt;
  TSParser* parser = ts_parser_new();
  std::unique_ptr<TSParser, void (*)(TSParser*)> own_parser(parser, ts_parser_delete);
  if (!ts_parser_set_language(parser, rust_language())) return std::nullopt;
  TSRange range{ts_node_start_point(tt), ts_node_end_point(tt), ts_node_start_byte(tt),
                ts_node_end_byte(tt)};
  if (!ts_parser_set_included_ranges(parser, &range, 1)) return std::nullopt;
  TSTree* tree = ts_parser_parse_string(parser, nullptr, text_.data(),
                                        static_cast<std::uint32_t>(text_.size()));
  if (!tree) return std::nullopt;
  std::unique_ptr<TSTree, void (*)(TSTree*)> own_tree(tree, ts_tree_delete);
  // Parsed as a statement, `[a, b]` lacks its `;` (error recovery adds a MISSING node or an ERROR
  // beside it): the array spanning exactly the tokens must be there, itself free of errors.
  TSNode arr =
      ts_node_descendant_for_byte_range(ts_tree_root_node(tree), range.start_byte, range.end_byte);
  while (!ts_node_is_null(arr) && type_of(arr) != "array_expression" &&
         ts_node_start_byte(arr) == range.start_byte && ts_node_end_byte(arr) == range.end_byte)
    arr = ts_node_parent(arr);
  if (ts_node_is_null(arr) || type_of(arr) != "array_expression" || ts_node_has_error(arr) ||
      ts_node_start_byte(arr) != range.start_byte || ts_node_end_byte(arr) != range.end_byte)
    return std::nullopt;
  auto id = aggregate(arr, "array_expression", depth);
  if (!id) return std::nullopt;
  respan(*id, n);
  at(*id).str = name;
  return id;
}

NodeId Lowering::call(TSNode n, int depth) {
  TSNode fn = field_of(n, "function");
  std::string_view turbofish;
  TSNode callee = fn;
  if (!ts_node_is_null(fn) && type_of(fn) == "generic_function") {
    callee = field_of(fn, "function");
    TSNode colons = child_of_kind(fn, "::");
    TSNode targs = field_of(fn, "type_arguments");
    if (!ts_node_is_null(colons))
      turbofish = slice(ts_node_start_byte(colons), ts_node_end_byte(fn));
    else
      turbofish = text(targs);
    if (ts_node_is_null(callee)) callee = fn;
  }
  NodeId id;
  if (!ts_node_is_null(callee) && type_of(callee) == "field_expression") {
    id = add(Kind::MethodCall, n);
    NodeId recv = opt_expr(field_of(callee, "value"), depth + 1);
    Node& node = at(id);
    node.a = recv;
    node.str = text(field_of(callee, "field"));
  } else {
    id = add(Kind::Call, n);
    NodeId f = opt_expr(callee, depth + 1);
    at(id).a = f;
  }
  at(id).text = turbofish;
  std::vector<NodeId> args;
  for (TSNode a : named_kids(field_of(n, "arguments")))
    args.push_back(expr(a, depth + 1));
  set_kids(id, args);
  return id;
}

NodeId Lowering::let_chain(TSNode n, int depth) {
  // `let A = a && b && let C = c`: left-associated `&&` of the conditions.
  NodeId acc = kNone;
  std::uint32_t first_start = 0, first_line = 0;
  for (TSNode c : named_kids(n)) {
    NodeId e = condition(c, depth + 1);
    if (acc == kNone) {
      acc = e;
      first_start = ts_node_start_byte(c);
      first_line = ts_node_start_point(c).row + 1;
      continue;
    }
    NodeId bin = add(Kind::Binary, TSNode{});
    Node& node = at(bin);
    node.str = "&&";
    node.a = acc;
    node.b = e;
    node.start = first_start;
    node.line = first_line;
    node.end = ts_node_end_byte(c);
    acc = bin;
  }
  if (acc == kNone) return unsupported(n, depth);
  // The outermost `&&` is the let_chain node itself.
  auto syntax = at(acc).syntax;
  respan(acc, n);
  if (at(acc).kind != Kind::Binary) at(acc).syntax = syntax;
  return acc;
}

NodeId Lowering::condition(TSNode n, int depth) {
  if (ts_node_is_null(n)) return kNone;
  std::string_view k = type_of(n);
  if (k == "let_condition") {
    NodeId id = add(Kind::LetCond, n);
    NodeId p = pat(field_of(n, "pattern"), depth + 1);
    NodeId v = opt_expr(field_of(n, "value"), depth + 1);
    at(id).a = p;
    at(id).b = v;
    return id;
  }
  if (k == "let_chain") return let_chain(n, depth);
  return expr(n, depth);
}

NodeId Lowering::match(TSNode n, int depth) {
  NodeId id = add(Kind::Match, n);
  NodeId scrut = opt_expr(field_of(n, "value"), depth + 1);
  at(id).a = scrut;
  std::vector<NodeId> arms;
  for (TSNode arm : named_kids(field_of(n, "body"))) {
    if (type_of(arm) != "match_arm") continue;
    Tri cfg = inner_attributes(arm);
    if (cfg == Tri::False) continue;
    NodeId aid = add(Kind::Arm, arm);
    at(aid).cfg = cfg;
    TSNode mp = field_of(arm, "pattern");
    TSNode guard{}, p{};
    for (const Child& c : children(mp)) {
      std::string_view ck = type_of(c.node);
      if (c.field && std::strcmp(c.field, "condition") == 0) {
        guard = c.node;
      } else if (ts_node_is_null(p) && !is_comment(ck) && ck != "if" &&
                 (ts_node_is_named(c.node) || ck == "_")) {
        p = c.node;
      }
    }
    NodeId pid = ts_node_is_null(p) ? kNone : pat(p, depth + 1);
    NodeId gid = ts_node_is_null(guard) ? kNone : condition(guard, depth + 1);
    NodeId vid = opt_expr(field_of(arm, "value"), depth + 1);
    Node& an = at(aid);
    an.a = pid;
    an.b = gid;
    an.c = vid;
    an.text = text(mp);
    arms.push_back(aid);
  }
  set_kids(id, arms);
  return id;
}

NodeId Lowering::closure(TSNode n, int depth) {
  NodeId id = add(Kind::Closure, n);
  if (has_token(n, "move")) at(id).flags |= kMove;
  TSNode params = field_of(n, "parameters");
  at(id).str = text(params);
  std::vector<NodeId> ps;
  for (TSNode p : pattern_kids(params)) {
    if (type_of(p) == "parameter") {
      TSNode inner = field_of(p, "pattern");
      ps.push_back(ts_node_is_null(inner) ? pat(p, depth + 1) : pat(inner, depth + 1));
    } else {
      ps.push_back(pat(p, depth + 1));
    }
  }
  set_kids(id, ps);
  NodeId body = opt_expr(field_of(n, "body"), depth + 1);
  at(id).a = body;
  return id;
}

NodeId Lowering::structure(TSNode n, int depth) {
  NodeId id = add(Kind::Struct, n);
  at(id).str = text(field_of(n, "name"));
  std::vector<NodeId> inits;
  NodeId base = kNone;
  for (TSNode fi : named_kids(field_of(n, "body"))) {
    std::string_view k = type_of(fi);
    if (k == "field_initializer") {
      NodeId f = add(Kind::FieldInit, fi);
      at(f).cfg = inner_attributes(fi);
      at(f).str = text(field_of(fi, "field"));
      NodeId v = opt_expr(field_of(fi, "value"), depth + 1);
      at(f).a = v;
      inits.push_back(f);
    } else if (k == "shorthand_field_initializer") {
      NodeId f = add(Kind::FieldInit, fi);
      at(f).cfg = inner_attributes(fi);
      at(f).flags |= kShorthand;
      TSNode ident = child_of_kind(fi, "identifier");
      at(f).str = text(ident);
      NodeId v = ts_node_is_null(ident) ? kNone : expr(ident, depth + 1);
      at(f).a = v;
      inits.push_back(f);
    } else if (k == "base_field_initializer") {
      auto kids = named_kids(fi);
      if (!kids.empty()) base = expr(kids[0], depth + 1);
    }
  }
  set_kids(id, inits);
  at(id).a = base;
  return id;
}

NodeId Lowering::block(TSNode n, TSNode span, std::uint8_t flags, int depth) {
  NodeId id = add(Kind::Block, span);
  at(id).flags |= flags;
  if (too_deep(depth)) {
    at(id).kind = Kind::Unsupported;
    at(id).str = at(id).syntax;
    return id;
  }
  // Statements with the cfg of the attributes right before them (as attributes_active reads
  // them: a comment in between breaks the run).
  struct Stmt {
    TSNode node;
    Tri cfg;
  };
  std::vector<Stmt> stmts;
  bool extras = false, trailing = false;
  std::vector<TSNode> attrs;
  for (const Child& c : children(n)) {
    if (!ts_node_is_named(c.node)) continue;
    std::string_view k = type_of(c.node);
    if (k == "attribute_item") {
      attrs.push_back(c.node);
      extras = true;
      trailing = true;
      continue;
    }
    if (is_comment(k) || k == "inner_attribute_item" || k == "label" || k == "empty_statement") {
      extras = true;
      trailing = k != "label";
      attrs.clear();
      if (k == "label") at(id).str = text(c.node);
      continue;
    }
    stmts.push_back({c.node, attrs.empty() ? Tri::True : attributes(attrs)});
    attrs.clear();
    trailing = false;
  }
  if (extras) at(id).flags |= kExtras;
  if (trailing) at(id).flags |= kTrailingExtras;
  std::vector<NodeId> kids;
  bool has_tail = false;
  for (std::size_t i = 0; i < stmts.size(); ++i) {
    bool is_tail = false;
    NodeId s = statement(stmts[i].node, i + 1 == stmts.size(), stmts[i].cfg, is_tail, depth);
    kids.push_back(s);
    has_tail = is_tail;
  }
  set_kids(id, kids);
  if (has_tail) at(id).flags |= kHasTail;
  return id;
}

NodeId Lowering::statement(TSNode n, bool last, Tri cfg, bool& is_tail, int depth) {
  std::string_view k = type_of(n);
  NodeId id;
  if (k == "let_declaration") {
    id = add(Kind::Let, n);
    TSNode p = field_of(n, "pattern");
    NodeId pid = ts_node_is_null(p) ? kNone : pat(p, depth + 1);
    if (pid != kNone && !ts_node_is_null(child_of_kind(n, "mutable_specifier")) &&
        at(pid).kind == Kind::PIdent)
      at(pid).flags |= kMut;
    NodeId v = opt_expr(field_of(n, "value"), depth + 1);
    TSNode alt = field_of(n, "alternative");
    NodeId e = ts_node_is_null(alt) ? kNone : block(alt, alt, 0, depth + 1);
    Node& node = at(id);
    node.a = pid;
    node.b = v;
    node.c = e;
    node.str = text(field_of(n, "type"));
  } else if (k == "expression_statement") {
    TSNode inner{};
    bool semicolon = false;
    for (const Child& c : children(n)) {
      std::string_view ck = type_of(c.node);
      if (!ts_node_is_named(c.node)) {
        semicolon = semicolon || ck == ";";
        continue;
      }
      if (is_comment(ck)) continue;
      if (ts_node_is_null(inner)) inner = c.node;
    }
    if (!ts_node_is_null(inner) && type_of(inner) == "macro_invocation") {
      id = macro(inner, Kind::MacroStmt);
      respan(id, n);
    } else {
      id = add(Kind::ExprStmt, n);
      NodeId e = opt_expr(inner, depth + 1);
      at(id).a = e;
    }
    if (semicolon) at(id).flags |= kSemicolon;
  } else if (is_item_kind(k)) {
    id = add(Kind::Item, n);
    at(id).str = at(id).syntax;
  } else if (k == "macro_invocation" && !last) {
    id = macro(n, Kind::MacroStmt);
  } else if (last) {
    id = expr(n, depth + 1);
    is_tail = true;
  } else {
    // Only in trees with syntax errors: an expression that does not end the block.
    id = add(Kind::ExprStmt, n);
    NodeId e = expr(n, depth + 1);
    at(id).a = e;
  }
  at(id).cfg = cfg;
  return id;
}

// `if`, loops and jumps (`return`, `break`, `continue`); nullopt for any other kind.
std::optional<NodeId> Lowering::branch_or_loop(TSNode n, std::string_view k, int depth) {
  if (k == "if_expression") {
    NodeId id = add(Kind::If, n);
    NodeId c = condition(field_of(n, "condition"), depth + 1);
    TSNode cons = field_of(n, "consequence");
    NodeId t = ts_node_is_null(cons) ? kNone : expr(cons, depth + 1);
    NodeId e = kNone;
    if (TSNode alt = field_of(n, "alternative"); !ts_node_is_null(alt))
      e = opt_expr(first_named(alt), depth + 1);
    Node& node = at(id);
    node.a = c;
    node.b = t;
    node.c = e;
    return id;
  }
  if (k == "for_expression") {
    NodeId id = add(Kind::For, n);
    TSNode p = field_of(n, "pattern");
    NodeId pid = ts_node_is_null(p) ? kNone : pat(p, depth + 1);
    NodeId v = opt_expr(field_of(n, "value"), depth + 1);
    NodeId body = opt_expr(field_of(n, "body"), depth + 1);
    Node& node = at(id);
    node.a = pid;
    node.b = v;
    node.c = body;
    node.str = label_of(n);
    return id;
  }
  if (k == "while_expression") {
    NodeId id = add(Kind::While, n);
    NodeId c = condition(field_of(n, "condition"), depth + 1);
    NodeId body = opt_expr(field_of(n, "body"), depth + 1);
    Node& node = at(id);
    node.a = c;
    node.b = body;
    node.str = label_of(n);
    return id;
  }
  if (k == "loop_expression") {
    NodeId id = unary(Kind::Loop, n, field_of(n, "body"), depth);
    at(id).str = label_of(n);
    return id;
  }
  if (k == "return_expression") return unary(Kind::Return, n, first_named(n), depth);
  if (k == "break_expression") {
    TSNode value{};
    for (TSNode c : named_kids(n))
      if (type_of(c) != "label") value = c;
    NodeId id = unary(Kind::Break, n, value, depth);
    at(id).str = label_of(n);
    return id;
  }
  if (k == "continue_expression") {
    NodeId id = add(Kind::Continue, n);
    at(id).str = label_of(n);
    return id;
  }
  return std::nullopt;
}

// Indexing, tuples, arrays (`[x; n]` too), `()` and ranges; nullopt for any other kind.
std::optional<NodeId> Lowering::aggregate(TSNode n, std::string_view k, int depth) {
  if (k == "index_expression") {
    auto kids = named_kids(n);
    NodeId id = add(Kind::Index, n);
    NodeId a = kids.size() > 0 ? expr(kids[0], depth + 1) : kNone;
    NodeId b = kids.size() > 1 ? expr(kids[1], depth + 1) : kNone;
    at(id).a = a;
    at(id).b = b;
    return id;
  }
  if (k == "tuple_expression" || k == "array_expression") {
    TSNode length = field_of(n, "length");
    if (k == "array_expression" && !ts_node_is_null(length)) {
      NodeId id = add(Kind::ArrayRepeat, n);
      TSNode elem{};
      for (const Child& c : children(n))
        if (ts_node_is_named(c.node) && !c.field && !is_comment(type_of(c.node)) &&
            type_of(c.node) != "attribute_item" && ts_node_is_null(elem))
          elem = c.node;
      NodeId a = opt_expr(elem, depth + 1);
      NodeId b = expr(length, depth + 1);
      at(id).a = a;
      at(id).b = b;
      return id;
    }
    NodeId id = add(k == "tuple_expression" ? Kind::Tuple : Kind::Array, n);
    std::vector<NodeId> kids;
    for (TSNode c : named_kids(n))
      kids.push_back(expr(c, depth + 1));
    set_kids(id, kids);
    return id;
  }
  if (k == "unit_expression") return add(Kind::Unit, n);
  if (k == "range_expression") {
    NodeId id = add(Kind::Range, n);
    NodeId a = kNone, b = kNone;
    bool after_op = false;
    for (const Child& c : children(n)) {
      std::string_view ck = type_of(c.node);
      if (!ts_node_is_named(c.node)) {
        if (ck == ".." || ck == "..=" || ck == "...") {
          at(id).str = ck == "..="   ? std::string_view("..=")
                       : ck == "..." ? std::string_view("...")
                                     : std::string_view("..");
          after_op = true;
        }
        continue;
      }
      if (is_comment(ck)) continue;
      NodeId e = expr(c.node, depth + 1);
      if (after_op)
        b = e;
      else
        a = e;
    }
    at(id).a = a;
    at(id).b = b;
    return id;
  }
  return std::nullopt;
}

NodeId Lowering::expr(TSNode n, int depth) {
  if (ts_node_is_null(n)) return kNone;
  if (too_deep(depth)) {
    NodeId id = add(Kind::Unsupported, n);
    at(id).str = at(id).syntax;
    return id;
  }
  std::string_view k = type_of(n);
  if (k == "identifier" || k == "scoped_identifier" || k == "self" || k == "crate" ||
      k == "super" || k == "generic_function") {
    NodeId id = add(Kind::Path, n);
    at(id).str = text(n);
    if (k == "self") at(id).flags |= kSelf;
    return id;
  }
  if (k == "integer_literal" || k == "float_literal" || k == "boolean_literal" ||
      k == "char_literal" || k == "string_literal" || k == "raw_string_literal")
    return literal(n);
  if (k == "call_expression") return call(n, depth);
  if (k == "field_expression") {
    NodeId id = unary(Kind::Field, n, field_of(n, "value"), depth);
    at(id).str = text(field_of(n, "field"));
    return id;
  }
  if (k == "macro_invocation") {
    if (auto v = vec_macro(n, depth)) return *v;
    return macro(n, Kind::Macro);
  }
  if (k == "binary_expression" || k == "assignment_expression" || k == "compound_assignment_expr") {
    Kind kind = k == "binary_expression"       ? Kind::Binary
                : k == "assignment_expression" ? Kind::Assign
                                               : Kind::CompoundAssign;
    NodeId id = add(kind, n);
    NodeId l = opt_expr(field_of(n, "left"), depth + 1);
    NodeId r = opt_expr(field_of(n, "right"), depth + 1);
    Node& node = at(id);
    node.a = l;
    node.b = r;
    if (kind != Kind::Assign) node.str = text(field_of(n, "operator"));
    return id;
  }
  if (k == "unary_expression") {
    NodeId id = unary(Kind::Unary, n, first_named(n), depth);
    std::string_view t = text(n);
    at(id).str = t.substr(0, t.empty() ? 0 : 1);
    return id;
  }
  if (k == "reference_expression") {
    NodeId id = unary(Kind::Ref, n, field_of(n, "value"), depth);
    if (!ts_node_is_null(child_of_kind(n, "mutable_specifier"))) at(id).flags |= kMut;
    return id;
  }
  if (k == "try_expression") return unary(Kind::Try, n, first_named(n), depth);
  if (k == "await_expression") return unary(Kind::Await, n, first_named(n), depth);
  if (k == "parenthesized_expression") return unary(Kind::Paren, n, first_named(n), depth);
  if (k == "type_cast_expression") {
    NodeId id = unary(Kind::Cast, n, field_of(n, "value"), depth);
    at(id).str = text(field_of(n, "type"));
    return id;
  }
  if (k == "block") return block(n, n, 0, depth);
  if (k == "unsafe_block" || k == "async_block") {
    TSNode inner = child_of_kind(n, "block");
    if (ts_node_is_null(inner)) return unsupported(n, depth);
    return block(inner, n, k == "unsafe_block" ? kUnsafe : kAsync, depth);
  }
  if (k == "match_expression") return match(n, depth);
  if (k == "closure_expression") return closure(n, depth);
  if (auto id = branch_or_loop(n, k, depth)) return *id;
  if (auto id = aggregate(n, k, depth)) return *id;
  if (k == "struct_expression") return structure(n, depth);
  if (k == "let_condition" || k == "let_chain") return condition(n, depth);
  return unsupported(n, depth);
}

// Struct patterns and the binding modifiers (`mut x`, `ref x`, `&x`, `x @ p`); nullopt for any
// other kind (and for a capture that is not `name @ pattern`).
std::optional<NodeId> Lowering::compound_pattern(TSNode n, std::string_view k, int depth) {
  if (k == "struct_pattern") {
    NodeId id = add(Kind::PStruct, n);
    at(id).str = text(field_of(n, "type"));
    std::vector<NodeId> kids;
    for (TSNode c : named_kids(n)) {
      std::string_view ck = type_of(c);
      if (ck == "remaining_field_pattern") {
        at(id).flags |= kHasRest;
      } else if (ck == "field_pattern") {
        NodeId f = add(Kind::PField, c);
        TSNode name = field_of(c, "name");
        at(f).str = text(name);
        TSNode sub = field_of(c, "pattern");
        NodeId sp;
        if (!ts_node_is_null(sub)) {
          sp = pat(sub, depth + 1);
        } else {
          sp = add(Kind::PIdent, c);
          at(sp).str = text(name);
          if (has_token(c, "ref")) at(sp).flags |= kRefBinding;
          if (!ts_node_is_null(child_of_kind(c, "mutable_specifier"))) at(sp).flags |= kMut;
        }
        at(f).a = sp;
        kids.push_back(f);
      }
    }
    set_kids(id, kids);
    return id;
  }
  if (k == "mut_pattern" || k == "ref_pattern") {
    auto kids = pattern_kids(n);
    TSNode inner{};
    for (TSNode c : kids)
      if (type_of(c) != "mutable_specifier") inner = c;
    NodeId id = ts_node_is_null(inner) ? kNone : pat(inner, depth + 1);
    if (id == kNone || at(id).kind != Kind::PIdent) {
      if (id != kNone) return id;
      NodeId u = add(Kind::PUnsupported, n);
      at(u).str = at(u).syntax;
      return u;
    }
    at(id).flags |= k == "mut_pattern" ? kMut : kRefBinding;
    respan(id, n);
    return id;
  }
  if (k == "reference_pattern") {
    NodeId id = add(Kind::PRef, n);
    if (!ts_node_is_null(child_of_kind(n, "mutable_specifier"))) at(id).flags |= kMut;
    TSNode inner{};
    for (TSNode c : pattern_kids(n))
      if (type_of(c) != "mutable_specifier") inner = c;
    NodeId a = ts_node_is_null(inner) ? kNone : pat(inner, depth + 1);
    at(id).a = a;
    return id;
  }
  if (k == "captured_pattern") {
    auto kids = pattern_kids(n);
    if (kids.size() == 2) {
      NodeId id = pat(kids[0], depth + 1);
      if (at(id).kind == Kind::PIdent || at(id).kind == Kind::PPath) {
        NodeId sub = pat(kids[1], depth + 1);
        at(id).kind = Kind::PIdent;
        at(id).a = sub;
        respan(id, n);
        return id;
      }
    }
  }
  return std::nullopt;
}

NodeId Lowering::pat(TSNode n, int depth) {
  if (ts_node_is_null(n)) return kNone;
  std::string_view k = type_of(n);
  if (too_deep(depth)) {
    NodeId id = add(Kind::PUnsupported, n);
    at(id).str = at(id).syntax;
    return id;
  }
  auto list = [&](Kind kind, const char* skip_field) {
    NodeId id = add(kind, n);
    std::vector<NodeId> kids;
    for (TSNode c : pattern_kids(n, skip_field))
      kids.push_back(pat(c, depth + 1));
    set_kids(id, kids);
    return id;
  };
  if (k == "identifier" || k == "self") {
    std::string_view t = text(n);
    bool upper = !t.empty() && std::isupper(static_cast<unsigned char>(t[0]));
    NodeId id = add(upper ? Kind::PPath : Kind::PIdent, n);
    at(id).str = t;
    return id;
  }
  if (k == "_") return add(Kind::PWild, n);
  if (k == "remaining_field_pattern") return add(Kind::PRest, n);
  if (k == "scoped_identifier") {
    NodeId id = add(Kind::PPath, n);
    at(id).str = text(n);
    return id;
  }
  if (k == "integer_literal" || k == "float_literal" || k == "boolean_literal" ||
      k == "char_literal" || k == "string_literal" || k == "raw_string_literal" ||
      k == "negative_literal") {
    NodeId id = add(Kind::PLit, n);
    TSNode lit = k == "negative_literal" ? ts_node_named_child(n, 0) : n;
    std::string_view lk = ts_node_is_null(lit) ? std::string_view() : type_of(lit);
    Node& node = at(id);
    node.str = text(n);
    node.lit = lk == "integer_literal"   ? LitKind::Int
               : lk == "float_literal"   ? LitKind::Float
               : lk == "boolean_literal" ? LitKind::Bool
               : lk == "char_literal"
                   ? (!node.str.empty() && node.str[0] == 'b' ? LitKind::Byte : LitKind::Char)
               : lk.empty() ? LitKind::None
                            : LitKind::Str;
    return id;
  }
  if (k == "tuple_pattern") return list(Kind::PTuple, nullptr);
  if (k == "slice_pattern") return list(Kind::PSlice, nullptr);
  if (k == "tuple_struct_pattern") {
    NodeId id = list(Kind::PTupleStruct, "type");
    at(id).str = text(field_of(n, "type"));
    return id;
  }
  if (k == "or_pattern") {
    NodeId id = add(Kind::POr, n);
    std::vector<NodeId> kids;
    for (TSNode c : pattern_kids(n)) {
      NodeId p = pat(c, depth + 1);
      if (at(p).kind == Kind::POr && type_of(c) == "or_pattern") {
        auto inner = b_.kids(p);
        kids.insert(kids.end(), inner.begin(), inner.end());
      } else {
        kids.push_back(p);
      }
    }
    set_kids(id, kids);
    return id;
  }
  if (auto id = compound_pattern(n, k, depth)) return *id;
  if (k == "range_pattern") {
    NodeId id = add(Kind::PRange, n);
    at(id).str = text(n);
    return id;
  }
  NodeId id = add(Kind::PUnsupported, n);
  at(id).str = at(id).syntax;
  return id;
}

const Body& Crate::lowered(std::size_t item) const {
  LoweredCache& cache = *lowered_;
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    if (cache.bodies.size() < items_.size()) cache.bodies.resize(items_.size());
    if (item < cache.bodies.size() && cache.bodies[item]) return *cache.bodies[item];
  }
  // Lowered outside the lock (several analysis threads may lower different items at once); a
  // racing thread's result is dropped in favour of the one installed first.
  auto body = std::make_unique<Body>();
  if (item < items_.size()) {
    const Item& it = items_[item];
    Lowering low(cfg_, files_[it.file]->text(), it.file, *body);
    if (!ts_node_is_null(it.node)) {
      if (it.kind == ItemKind::Function || it.kind == ItemKind::Method) {
        TSNode b = it.body();
        if (!ts_node_is_null(b)) body->root = low.run([&] { return low.block(b, b, 0, 0); });
      } else if (it.kind == ItemKind::Const || it.kind == ItemKind::Static) {
        TSNode v = field_of(it.node, "value");
        if (!ts_node_is_null(v)) body->root = low.run([&] { return low.expr(v, 0); });
      }
    }
    low.finish();
  }
  std::lock_guard<std::mutex> lock(cache.mu);
  if (item >= cache.bodies.size()) {
    // Not an item of this crate: keep the empty body alive with the cache all the same.
    cache.extra.push_back(std::move(body));
    return *cache.extra.back();
  }
  if (!cache.bodies[item]) cache.bodies[item] = std::move(body);
  return *cache.bodies[item];
}

FormatArgs parse_format_args(std::string_view body) {
  FormatArgs out;
  auto q1 = body.find('"');
  auto q2 = q1 == std::string_view::npos ? q1 : body.find('"', q1 + 1);
  if (q2 == std::string_view::npos) return out;
  out.ok = true;
  out.templ = std::string(body.substr(q1 + 1, q2 - q1 - 1));
  std::string rest(body.substr(q2 + 1)), cur;
  rest += ',';
  int depth = 0;
  for (char c : rest) {
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      std::string a;
      for (char x : cur)
        if (x != ' ' && x != '\n' && x != '\t') a.push_back(x);
      if (!a.empty()) {
        auto eq = a.find('=');
        if (eq != std::string::npos && a.find("==") == std::string::npos) {
          std::string name = a.substr(0, eq), value = a.substr(eq + 1);
          bool seen = false;
          for (auto& [k, v] : out.named)
            if (k == name) {
              v = value;
              seen = true;
            }
          if (!seen) out.named.emplace_back(std::move(name), std::move(value));
        } else {
          out.positional.push_back(std::move(a));
        }
      }
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  return out;
}

}  // namespace cg::rust
