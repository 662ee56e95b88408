#pragma once
// Evaluating the Rust expressions that decide shapes, loop bounds and branches
// (`cfg.hidden_size / cfg.num_attention_heads`, `cfg.head_dim.unwrap_or(64)`,
// `if cfg.tie_word_embeddings {…}`) as far as the bound facts allow. Whatever cannot be evaluated
// stays symbolic: its source text plus the reason, never a guessed number.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rust/body.hpp"

namespace cg::analysis {

struct SymValue {
  enum class Kind { integer, real, boolean, string, none, symbolic };
  Kind kind = Kind::symbolic;
  std::int64_t integer = 0;
  double real = 0.0;
  bool boolean = false;
  std::string text;    // the string value, or the symbolic expression's source text
  std::string reason;  // why a symbolic value is not concrete
  // A symbolic array whose length is known (a config.json array): `len()` evaluates.
  std::optional<std::int64_t> array_len;
  // That array's elements when each is a number, string, boolean or null (`hidden_sizes: [64,
  // 128]`): `a[i]` and `a.get(i)` with a known index evaluate.
  std::shared_ptr<const std::vector<SymValue>> elements;

  static SymValue of_int(std::int64_t v);
  static SymValue of_real(double v);
  static SymValue of_bool(bool v);
  static SymValue of_string(std::string v);
  static SymValue none();
  static SymValue symbolic(std::string text, std::string reason);

  bool concrete() const { return kind != Kind::symbolic; }
  // "256", "1e-05", "true", "\"silu\"", "None", or the symbolic text.
  std::string display() const;
};

// What the evaluator asks its caller: bindings of names, fields and crate-local methods. Return
// nullopt for "I do not know" (the expression then stays symbolic with a reason naming it).
// `field` and `method` receive the base / receiver node of the lowered body (src/rust/body.hpp) so
// the caller can evaluate it in its own domain.
class EvalContext {
 public:
  virtual ~EvalContext() = default;
  virtual std::optional<SymValue> lookup(std::string_view name) = 0;
  virtual std::optional<SymValue> field(const rust::Body& body, rust::NodeId base,
                                        std::string_view field) = 0;
  virtual std::optional<SymValue> method(const rust::Body& body, rust::NodeId receiver,
                                         std::string_view method,
                                         const std::vector<SymValue>& args) = 0;
  // The strings a config value must be to be the unit variant `path` names (`Kind::A`, serde's
  // spelling of it); nullopt when not known.
  virtual std::optional<std::vector<std::string>> variant_spellings(std::string_view /*path*/) {
    return std::nullopt;
  }
};
// Evaluates `expr` of `body`. Depth-bounded: deeper expressions stay symbolic with a reason
// instead of exhausting the stack.
SymValue evaluate(const rust::Body& body, rust::NodeId expr, EvalContext& ctx);

// `a op b` of two concrete values, as `evaluate` computes a binary expression; symbolic (as
// `text`, with the reason) when it cannot be computed.
SymValue binary_value(const std::string& op, const SymValue& a, const SymValue& b,
                      const std::string& text);

// Parses a Rust literal's text (`10_000.0`, `1e-5`, `0usize`, `0x10`, `true`, `"x"`).
std::optional<SymValue> parse_literal(std::string_view kind, std::string_view text);

}  // namespace cg::analysis
