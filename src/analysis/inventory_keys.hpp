#pragma once
// The builder/prefix domain of the inventory (reference-static §4.1), free of any walk: the
// certainty of a leaf, VarBuilder key segments (`vb.pp("a.b")`, `format!("layers.{i}")`), catalog
// shape templates (`{in_channels} / {cfg}.groups`) and candle-nn's config defaults. The builder
// domain (builder/domain.hpp) applies these to the values it finds; the unit tests in
// tests/analysis/inventory_keys_test.cpp pin them down without a crate.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/layer_catalog.hpp"
#include "analysis/symbolic.hpp"
#include "ir/model.hpp"
#include "rust/body.hpp"

namespace cg::analysis::inventory {

// Certainty of a leaf or instance; joins keep the least certain (the outer reason on a tie).
struct Cert {
  ir::Confidence level = ir::Confidence::proven;  // proven < conditional < unknown
  std::string reason;
};
Cert join(const Cert& outer, const Cert& inner);
// `outer` made conditional on `reason` (read in one line).
Cert conditional(const Cert& outer, std::string reason);

// Reasons are read in one line: whitespace collapsed, cut at 120 characters.
std::string one_line(const std::string& s);
// A source expression named in a label: one line, in backticks, cut at 48 characters.
std::string brief(const std::string& s);

// `Vec::<Block>::with_capacity` -> `Vec::with_capacity`; `collect::<..>` -> `collect`.
std::string strip_generics(std::string path);
std::string last_segment(const std::string& path);

// Key segments of a prefix text: splits on '.' outside braces, so `{self.idx}` stays one segment.
std::vector<std::string> split_key(const std::string& s);
// Segments joined with '.', empty ones skipped.
std::string join_key(const std::vector<std::string>& segs);

// A `format!` template as a key: each `{}` / `{0}` / `{name}` placeholder replaced by
// `placeholder(expr)` of the argument text it names (the name itself when no argument names it),
// `{{` kept as `{`. `placeholder` decides whether a bound value or `{expr}` is written.
std::string format_key(const rust::FormatArgs& f,
                       const std::function<std::string(const std::string&)>& placeholder);

// Iterator adaptors whose closure runs once per element (`xs.iter().enumerate().map(..)`).
bool is_iterator_method(std::string_view m);
// Macros in statement position that never register parameters (assertions, logging, bail!).
bool ignored_macro(std::string_view name);

// candle-nn 0.11.0 defaults of the config types catalog constructors take (`groups` 1,
// `padding` 0, `affine` true …); `ctor` is `default` or `default_no_bias`. With a catalogue read
// from candle-nn's source, its `Default::default()` values come first (layer_source.hpp).
std::optional<SymValue> layer_config_default(std::string_view field, std::string_view ctor,
                                             const LayerCatalog* catalog = nullptr);

// A catalog template (`{out_dim}`, `{in_channels} / {cfg}.groups`, `4 * {h}`) split on ` * ` and
// ` / `, each term evaluated by `term`, folded with integer arithmetic where both sides are
// integers and kept symbolic (`(a + b) * 4`) otherwise.
SymValue template_arithmetic(const std::string& templ,
                             const std::function<SymValue(const std::string&)>& term);

// A conv layer's config as ir::Module::attributes (padding, stride, dilation, groups, and
// output_padding when transposed), each `{cfg}.<field>` evaluated by `term`: a number, or the
// expression's text. Empty for a layer that is no conv or takes no config.
std::map<std::string, std::string> conv_attributes(
    const ConstructorSpec& spec, const std::function<SymValue(const std::string&)>& term);

}  // namespace cg::analysis::inventory
