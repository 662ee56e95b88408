#pragma once
// The interpretation behind analysis/layer_source.hpp (internal to it): a small evaluator over a
// candle-nn function's lowered body that tracks what the VarBuilder is asked for. Its expression
// and call rules are in layer_source_eval.cpp, its branches (`if`/`match`) in
// layer_source_branches.cpp.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/layer_catalog.hpp"
#include "rust/crate.hpp"

namespace cg::analysis::layer_source_detail {

using rust::Kind;
using rust::kNone;
using rust::NodeId;

inline constexpr std::size_t kNpos = static_cast<std::size_t>(-1);
inline constexpr int kMaxInline = 8;
// A condition the interpretation could not express: any leaf requested under one makes the
// constructor not understood (the text after the marker is the source, for the reason).
inline constexpr char kUnknownCond = '\x01';

bool is_ident(std::string_view s);
// A parameter type naming candle-nn's VarBuilder (`VarBuilder`, `crate::VarBuilderArgs<'_, B>`).
bool mentions_var_builder(const std::string& type_text);
std::string strip_generics(std::string s);
std::string last_segment(const std::string& path);
// `Result<Linear>`, `candle::Result<crate::Linear>` → `Linear`.
std::string layer_type_of(std::string ret);
// The negation of a condition text (`a` → `!a`, `!a` → `a`, `a && b` → `!(a && b)`).
std::string negate(const std::string& c);

// A value the interpretation tracks.
struct Val {
  enum class K { unknown, expr, str, strs, config, builder, tensor } k = K::unknown;
  // expr: a template over the constructor's arguments (`{out_dim}`, `4 * {hidden_dim}`,
  // `{config}.affine`, `true`); str: a string (a key name, `{…}` placeholders kept).
  std::string text;
  std::vector<std::string> strs;  // strs: the strings a branch chooses between
  std::string strs_on;            // strs: what chooses (`{config}.direction`)
  struct Field;
  std::vector<Field> fields;      // config: a struct literal's fields
  std::vector<std::string> segs;  // builder: prefix segments pushed
  std::size_t leaf = kNpos;       // tensor: the leaf it holds

  static Val expr(std::string t);
  static Val str(std::string t);
  bool is_bool(bool b) const { return k == K::expr && text == (b ? "true" : "false"); }
};

// Named, not a std::pair: a pair needs Val complete where Val is still being defined.
struct Val::Field {
  std::string first;
  Val second;
};

struct DLeaf {
  std::string name;
  std::vector<std::string> shape;
  std::vector<std::string> conds;
  bool running_state = false;
};

class Deriver {
 public:
  explicit Deriver(const rust::Crate& crate) : crate_(crate) {}

  // The constructor `item` (a free function whose last parameter is the VarBuilder); nullopt
  // with `why` when not understood.
  std::optional<ConstructorSpec> derive(std::size_t item, std::string& why);

 private:
  struct Frame {
    std::size_t item;
    const rust::Body* body;
    std::vector<std::pair<std::string, Val>> env;  // innermost binding last
  };

  const rust::Crate& crate_;
  std::vector<Frame> frames_;
  std::vector<DLeaf> leaves_;
  std::vector<std::string> conds_;
  std::vector<std::string> notes_;
  std::string error_;

  const rust::Body& body() const { return *frames_.back().body; }
  const rust::Node& node(NodeId n) const { return body()[n]; }
  std::string src(NodeId n) const { return std::string(body().source(n)); }
  void fail(const std::string& why) {
    if (error_.empty())
      error_ =
          why + " (" + body_file() + ":" + std::to_string(frames_.empty() ? 0 : node_line()) + ")";
  }
  std::uint32_t last_line_ = 0;
  std::uint32_t node_line() const { return last_line_; }
  std::string body_file() const {
    if (frames_.empty()) return "";
    return crate_.files()[body().file]->path();
  }

  const Val* lookup(const std::string& name) const {
    const auto& env = frames_.back().env;
    for (auto it = env.rbegin(); it != env.rend(); ++it)
      if (it->first == name) return &it->second;
    return nullptr;
  }
  void bind(const std::string& name, Val v) { frames_.back().env.emplace_back(name, std::move(v)); }

  // Binds the identifiers of a pattern (a PIdent to `v`, anything nested to unknown).
  void bind_pattern(NodeId p, const Val& v);

  Val eval(NodeId n);
  Val unmodelled(NodeId n);
  static Val literal(const rust::Node& nd);
  Val field(NodeId n);
  Val unary(NodeId n);
  Val struct_literal(NodeId n);
  Val repeated(NodeId n);

  Val block(NodeId n);

  Val binary(NodeId n);

  std::vector<Val> args_of(NodeId n);

  Val method_call(NodeId n);

  // `vb.get*(shape, name, ..)`: one leaf under the current conditions.
  Val request(NodeId n, const Val& b, const std::string& m, const std::vector<NodeId>& kids);

  Val call(NodeId n);

  // `format!("weight_ih_l{layer_idx}{direction_str}")`: a name with `{…}` placeholders for what
  // depends on the arguments. A part chosen by a branch between "" and other strings is modelled
  // as absent, and the note says when it is not.
  Val format_value(std::string_view tokens);

  // One branch of an `if`/`match`: its condition, then its leaves and value.
  struct Arm {
    std::string cond;
    std::size_t begin = 0, end = 0;
    Val value;
  };

  // Leaves every arm requests alike lose that arm's condition (a leaf requested on both sides
  // of `if bias { linear(..) } else { linear_no_bias(..) }` is unconditional).
  void merge_arms(std::vector<Arm>& arms, std::size_t first);

  Val join_values(const std::vector<Arm>& arms, const std::string& on);

  // Runs `branch` under condition `cond`, recording its leaves.
  template <typename F>
  Arm run_arm(const std::string& cond, F&& branch);

  Val if_expr(NodeId n);

  Val match_expr(NodeId n);
};

}  // namespace cg::analysis::layer_source_detail
