#pragma once
// A function body (or a const's value) lowered once into a small, typed, tree-sitter-free form:
// the subset of Rust the analysis interprets. Every interpreter in src/analysis/ walks this and
// never a syntax tree; teaching the analysis a new construct starts here (`lower.cpp`) and then
// touches only the domains that care.
//
// Nodes live in one arena per body and refer to each other by index (`NodeId`). Each node keeps
// its source span (byte range into the file's text and 1-based line), so ids derived from
// positions (`file:byte:name`) and messages quoting the source stay as before. Text fields are
// views into the ParsedFile's text or into the body's own string pool: valid while the Crate
// lives.
//
// The lowering (src/rust/lower.cpp) follows tree-sitter-rust's tree faithfully: one node per
// syntax node it keeps, with that node's exact span, so `source(id)` is what tree-sitter's node
// text was. Comments and attribute items are never nodes (a statement's `#[cfg]` is its `cfg`).
// Where tree-sitter's shape is not the obvious one, the Kind comments below say so.
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rust/cfg.hpp"

namespace cg::rust {

using NodeId = std::uint32_t;
inline constexpr NodeId kNone = 0xffffffffu;

enum class Kind : std::uint8_t {
  // ---- statements (children of Block) ----
  Let,        // a = pattern, b = value (kNone for `let x;`), c = `else` block (kNone);
              // str = the type annotation's text ("" when absent); `let mut x` puts kMut on the
              // PIdent
  ExprStmt,   // a = the expression; flags & kSemicolon when written with `;`. As in tree-sitter,
              // a block-like expression (`if`/`match`/`for`/block) ending a block without `;` is
              // an ExprStmt too, not the block's tail (see Body::value_tail)
  Item,       // a nested item (fn/struct/use/const/impl/mod/macro_rules …): str = its syntax
              // kind; no children
  MacroStmt,  // a macro in statement position (`m!(..);`, or `m! { .. }` not ending the block):
              // as Macro (below), flags & kSemicolon. A macro ending a block is its tail Macro.

  // ---- expressions ----
  Block,       // kids = statements then (flags & kHasTail) the tail expression as the last kid;
               // flags & kUnsafe / kAsync for `unsafe {}` / `async {}` (span: the whole
               // `unsafe { .. }`); str = the label of `'a: { .. }` ("" otherwise); flags &
               // kExtras when tree-sitter saw comments, attributes, a label or `;` among its
               // named children (kTrailingExtras: after the last statement)
  Lit,         // lit = the literal kind; str = source text; text = decoded string literal value
               // ("" when the literal is malformed); byte strings are Str, `b'x'` is Byte
  Path,        // str = the path as written, generics kept (`Tensor::zeros`, `Self::new`,
               // `DType::F32`, `x`, `self`); flags & kSelf for `self`. Also `f::<T>` written
               // outside a call (str = its whole text)
  Field,       // a = base; str = field name (`0` for tuple fields)
  Call,        // a = callee expression (usually Path; a Generic wrapper is lowered away, its
               // turbofish text in `text`); kids = arguments
  MethodCall,  // a = receiver; str = method name; text = turbofish (`::<f32>`) or ""; kids = args
  Macro,       // str = macro path as written (`format`, `candle::bail`); text = the token tree's
               // inner text (between the delimiters); kids = the comma-separated arguments that
               // parse as expressions (format!/println!/assert!/write! …; empty otherwise).
               // Today kids are always empty: no interpreter reads macro arguments as
               // expressions yet (parse_format_args reads `text`). `vec![..]` is no Macro: it
               // lowers to the Array / ArrayRepeat it spells
  Binary,      // str = operator (`+`, `&&`, `==` …); a = left, b = right
  Unary,       // str = `-`, `!` or `*`; a = operand
  Ref,         // `&e` / `&mut e`: a = operand; flags & kMut
  Try,         // `e?`: a
  Cast,        // `e as T`: a; str = T's text
  Await,       // `e.await`: a
  Paren,       // `(e)`: a (kept: some domains care that the receiver was written in parens)
  If,          // a = condition (an expression or a LetCond), b = then Block, c = else (Block, If,
               // or kNone)
  LetCond,     // `let P = e` inside an if/while condition: a = pattern, b = value; a `&&` chain of
               // let-conditions lowers to Binary `&&` of LetConds
  Match,       // a = scrutinee; kids = Arm nodes (cfg-inactive arms dropped)
  Arm,         // a = pattern, b = guard expression (kNone), c = body expression; text = the
               // pattern and guard as written (`A(x) if x > 0`); cfg = its `#[cfg]`s
  For,         // a = pattern, b = iterated expression, c = body Block; str = label ("" or `'a`)
  While,       // a = condition (expression or LetCond), b = body Block; str = label
  Loop,        // a = body Block; str = label
  Closure,     // kids = parameter patterns; a = body expression; str = the parameters' text
               // (`|a, b: u32|`, pipes included); flags & kMove
  Return,      // a = value (kNone)
  Break,       // a = value (kNone); str = label
  Continue,    // str = label
  Assign,      // a = left, b = right
  CompoundAssign,  // str = operator (`+=` …); a = left, b = right
  Index,           // a = base, b = index
  Tuple,           // kids = elements
  Array,           // kids = elements. Also `vec![a, b]` (syntax "macro_invocation", str = the
                   // macro path `vec`, span = the whole invocation): lowered as the array it spells
  ArrayRepeat,     // `[e; n]`: a = element, b = count; `vec![e; n]` too (as Array)
  Range,           // a = start (kNone), b = end (kNone); str = `..` or `..=`
  Struct,          // str = the type path as written; kids = FieldInit; a = `..base` (kNone)
  FieldInit,       // str = field name; a = value; flags & kShorthand for `Foo { x }` (a = the
                   // Path `x`); cfg = its `#[cfg]`s (False ones kept)
  Unit,            // `()`
  Unsupported,     // any other expression: str = its syntax kind; kids = its lowered
                   // sub-expressions, so effects inside are still seen. Also (no kids) any
                   // node nested more than 4,000 levels deep (generated or hostile input)

  // ---- patterns ----
  PIdent,        // str = name; flags & kMut / kRefBinding; a = sub-pattern of `x @ P` (kNone).
                 // A lone identifier starting with an upper-case letter (`None`, `MAX`) is a
                 // PPath instead: Rust reads it as a variant or constant
  PWild,         // `_`
  PRest,         // `..`
  PTuple,        // kids
  PSlice,        // kids
  PTupleStruct,  // str = path; kids
  PStruct,       // str = path; kids = PField; flags & kHasRest for `..`
  PField,        // str = field name; a = pattern (a PIdent for shorthand, spanning `ref mut x`)
  PLit,          // str = literal text (negative numbers included); lit = kind
  PPath,         // str = path (`None`, `Kind::A`, a const)
  POr,           // kids
  PRef,          // `&P` / `&mut P`: a
  PRange,        // str = the pattern's text
  PUnsupported,  // str = its syntax kind
};

enum class LitKind : std::uint8_t { None, Int, Float, Str, Bool, Char, Byte };

// Node flags.
inline constexpr std::uint8_t kSemicolon = 1;
inline constexpr std::uint8_t kHasTail = 2;
inline constexpr std::uint8_t kMut = 4;
inline constexpr std::uint8_t kRefBinding = 8;
inline constexpr std::uint8_t kShorthand = 16;
inline constexpr std::uint8_t kHasRest = 32;
inline constexpr std::uint8_t kMove = 64;
inline constexpr std::uint8_t kSelf = 128;
inline constexpr std::uint8_t kUnsafe = 16;  // Block only
inline constexpr std::uint8_t kAsync = 32;   // Block only
inline constexpr std::uint8_t kExtras = 64;  // Block only: comments/attributes/label/`;` inside
inline constexpr std::uint8_t kTrailingExtras = 8;  // Block only: a comment, attribute or `;`
                                                    // follows its last statement

struct Node {
  Kind kind = Kind::Unsupported;
  LitKind lit = LitKind::None;
  std::uint8_t flags = 0;
  // Statements only (and a Block's tail, Arms, FieldInits): the `#[cfg]` attributes written on
  // it, under the crate's cfg, as Crate::attributes_active computes them (statements whose cfg
  // is False are kept, so a domain can report them; interpreters skip them).
  Tri cfg = Tri::True;
  NodeId a = kNone, b = kNone, c = kNone;
  std::uint32_t kids_begin = 0, kids_count = 0;  // into Body::kids
  std::uint32_t start = 0, end = 0;              // byte range in the file's text
  std::uint32_t line = 0;                        // 1-based line of `start`
  std::string_view str;                          // see Kind
  std::string_view text;                         // see Kind
  // The tree-sitter node kind it was lowered from (`call_expression`, `identifier`,
  // `let_chain` …; "" for nodes the lowering synthesized, like the inner `&&` of a let chain),
  // for messages that must read as they did when the analysis walked syntax trees.
  std::string_view syntax;

  // What the analysis asks of a node's spelling, answered here so that only src/rust/ reads
  // tree-sitter's kind names (`syntax`).
  bool is_identifier() const { return syntax == "identifier"; }  // `x`, not `a::x` or `self`
  bool is_scoped_identifier() const { return syntax == "scoped_identifier"; }  // `a::x`
  bool is_self() const { return syntax == "self"; }
  bool is_int_literal() const { return syntax == "integer_literal"; }
  bool is_float_literal() const { return syntax == "float_literal"; }
  bool is_bool_literal() const { return syntax == "boolean_literal"; }
  bool is_string_literal() const {
    return syntax == "string_literal" || syntax == "raw_string_literal";
  }
  bool is_binary_expression() const { return syntax == "binary_expression"; }  // not `&&` of lets
  bool is_array_expression() const { return syntax == "array_expression"; }    // not `vec![..]`
  bool is_tuple_expression() const { return syntax == "tuple_expression"; }
  bool is_struct_expression() const { return syntax == "struct_expression"; }
  bool is_macro_invocation() const { return syntax == "macro_invocation"; }  // `vec![..]` too
  bool is_block_expression() const { return syntax == "block"; }
  bool is_mut_pattern() const { return syntax == "mut_pattern"; }      // `mut x`
  bool is_field_pattern() const { return syntax == "field_pattern"; }  // `Foo { a: x }`'s `a`
  bool is_underscore() const { return syntax == "_"; }
  // An expression the lowering would have lowered but cut for depth (Unsupported, no kids): a
  // hostile or generated nesting, not Rust the lowering does not know.
  bool cut_at_depth() const {
    if (kind != Kind::Unsupported || kids_count != 0) return false;
    static constexpr std::string_view kLowered[] = {"call_expression",
                                                    "field_expression",
                                                    "binary_expression",
                                                    "block",
                                                    "if_expression",
                                                    "match_expression",
                                                    "parenthesized_expression",
                                                    "try_expression",
                                                    "unary_expression",
                                                    "reference_expression",
                                                    "type_cast_expression",
                                                    "index_expression",
                                                    "tuple_expression",
                                                    "array_expression",
                                                    "closure_expression",
                                                    "for_expression",
                                                    "while_expression",
                                                    "loop_expression",
                                                    "await_expression",
                                                    "return_expression"};
    for (std::string_view k : kLowered)
      if (syntax == k) return true;
    return false;
  }
};

class Body {
 public:
  std::size_t file = 0;  // index into Crate::files()
  NodeId root = kNone;   // the body Block, or a const's value expression

  const Node& operator[](NodeId id) const { return nodes_[id]; }
  std::size_t size() const { return nodes_.size(); }
  // Children of `id` (Block statements, call arguments, arms, pattern elements …).
  std::vector<NodeId> kids(NodeId id) const {
    const Node& n = nodes_[id];
    return {kids_.begin() + n.kids_begin, kids_.begin() + n.kids_begin + n.kids_count};
  }
  // The same children without a copy (valid as long as the Body): what the interpreters iterate.
  std::span<const NodeId> kids_view(NodeId id) const {
    const Node& n = nodes_[id];
    return {kids_.data() + n.kids_begin, n.kids_count};
  }
  NodeId kid(NodeId id, std::uint32_t i) const {
    const Node& n = nodes_[id];
    return i < n.kids_count ? kids_[n.kids_begin + i] : kNone;
  }
  // The node's exact source text.
  std::string_view source(NodeId id) const {
    const Node& n = nodes_[id];
    return n.end <= file_text_.size() && n.start <= n.end
               ? file_text_.substr(n.start, n.end - n.start)
               : std::string_view{};
  }
  // A Block's tail expression, kNone when it ends with a statement.
  NodeId tail(NodeId block) const {
    const Node& n = nodes_[block];
    return (n.flags & kHasTail) && n.kids_count ? kids_[n.kids_begin + n.kids_count - 1] : kNone;
  }
  // The value a block produces: its tail, else the expression of a last ExprStmt written
  // without `;` (a trailing `if`/`match`, which tree-sitter parses as a statement); kNone
  // otherwise.
  NodeId value_tail(NodeId block) const {
    NodeId t = tail(block);
    if (t != kNone) return t;
    const Node& n = nodes_[block];
    if (n.kids_count == 0) return kNone;
    const Node& last = nodes_[kids_[n.kids_begin + n.kids_count - 1]];
    return last.kind == Kind::ExprStmt && !(last.flags & kSemicolon) ? last.a : kNone;
  }
  std::string_view file_text() const { return file_text_; }
  // Peels Paren / Ref / Try (and whichever of them `kinds` lists) off `id`.
  NodeId peel(NodeId id, std::initializer_list<Kind> kinds) const {
    while (id != kNone) {
      bool again = false;
      for (Kind k : kinds)
        again = again || nodes_[id].kind == k;
      if (!again) break;
      id = nodes_[id].a;
    }
    return id;
  }

 private:
  friend class Lowering;
  std::string_view file_text_;
  std::vector<Node> nodes_;
  std::vector<NodeId> kids_;
  std::deque<std::string> pool_;  // decoded strings that are not slices of the file (a deque:
                                  // views into it survive growth)
};

// `format!("a.{}.{name}", i, name = n)`'s parts, from a Macro node's token text: the template
// literal's raw text (between the first two `"`, escapes NOT decoded), positional argument texts
// and named ones, split at commas outside ()/[]/{} with spaces, tabs and newlines removed; `a=b`
// (without
// `==`) is named. A repeated name keeps its first place and its last value. ok = false when the
// text holds no two `"`.
struct FormatArgs {
  bool ok = false;
  std::string templ;
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> named;
  // The named argument's text, nullptr when absent.
  const std::string* find(std::string_view name) const {
    for (const auto& [k, v] : named)
      if (k == name) return &v;
    return nullptr;
  }
};
FormatArgs parse_format_args(std::string_view macro_tokens);

}  // namespace cg::rust
