#pragma once
// Binding a model's config struct to config.json (issue #4, "config binding"): a field's value
// comes from the JSON (through `#[serde(rename/alias)]`), else from `#[serde(default = "fn")]`,
// `#[serde(default)]` (the field type's default, or the struct's `Default` impl for a
// struct-level attribute), else `None` for an `Option` field. Crate-local methods on the config
// (`cfg.head_dim()`) evaluate from their bodies. Without a bound file, fields stay symbolic as
// `cfg.<field>`. A field the JSON lacks and serde cannot default stays symbolic, with a
// diagnostic naming it — never a guessed number.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/config_values.hpp"
#include "analysis/symbolic.hpp"
#include "rust/crate.hpp"

namespace cg::analysis {

// Why Rust would refuse `v` as a value of type `type_text` ("a negative value", "a string", "out
// of the range of u32"); "" when it takes it or the type is not one this judges (a path, an
// enum). The rule config.json's values are held to (serde_json's strict integers), also applied
// to `--arg` values: `None` for an Option only, a number for f32/f64, true/false for bool.
std::string rust_value_refusal(const std::string& type_text, const SymValue& v);

// The reason an `--arg` value written as a call (`Config::convnext_tiny()`) carries: the root's
// config parameter is bound to what that constructor's body evaluates to.
inline constexpr std::string_view kArgCallReason = "a constructor call given with --arg";

// A config value: a crate-local struct item and its dotted JSON path ("" or "text_config.").
struct ConfigRef {
  std::size_t item = 0;
  std::string path;
  bool bound = false;  // backed by config.json
  // A config type built by a conversion (`LlamaConfig::into_config(self) -> Config`): the
  // method item whose struct literal gives each field from the Deserialize source; -1 if none.
  std::ptrdiff_t via = -1;
  std::size_t via_source = 0;  // the Deserialize struct the conversion reads
  // A struct a field's `#[serde(deserialize_with = "f")]` built from its JSON value: the fields
  // `f`'s struct literal gives (`ActivationWithOptionalGating { gated: true, .. }`).
  std::shared_ptr<const std::map<std::string, SymValue, std::less<>>> computed;
  // Fields a copy of the config was given after it was read (`let mut c = cfg.clone();
  // c.is_decoder = true;`, `Config { num_layers: 2, ..cfg.clone() }`): they replace the file's
  // values (a value not known stays symbolic); every other field reads as before.
  std::shared_ptr<const std::map<std::string, SymValue, std::less<>>> assigned;
  // Nested config structs a config built in code gave (`ClipConfig { text_config:
  // ClipTextConfig::vit_base_patch32(), .. }`, from `--arg c=ClipConfig::vit_base_patch32()`).
  std::shared_ptr<const std::vector<std::pair<std::string, ConfigRef>>> assigned_configs;
  // A nested struct the file does not give whose field is `#[serde(default)]`: serde builds it
  // with its `Default` (t5's absent `feed_forward_proj`), so each field reads that default.
  bool defaulted = false;
};

// A struct field built by a call in its type's constructor (`kv_cache: KvCache::new(2,
// cfg.max_position_embeddings)`): the callee path as written and each argument evaluated with the
// config bound (a value not known stays symbolic).
struct ConstructorCall {
  std::string callee;
  std::vector<SymValue> args;
};

struct FieldResult {
  SymValue value;                   // when the field is a scalar (or unknown)
  std::optional<ConfigRef> config;  // when the field is itself a config struct
};

class ConfigBinding {
 public:
  // `built`: configs an `--arg` call built (by struct item), which a constructor's config
  // parameter of that type is bound to when no file is.
  ConfigBinding(const rust::Crate& crate, const ConfigValues* values,
                const std::map<std::size_t, ConfigRef>* built = nullptr);

  // A parameter type naming a crate-local struct (`&Config`, `&crate::config::Config`,
  // `Arc<Config>`), resolved from module `module`; not bound (see can_bind).
  std::optional<ConfigRef> config_of_type(const std::string& type_text,
                                          const std::string& module) const;
  // True when a file is bound and the struct derives Deserialize: the root constructor's config
  // parameter then reads config.json.
  bool can_bind(const ConfigRef& c) const;
  // The root constructor's config bound to the file: directly when it derives Deserialize, else
  // through a crate-local conversion from a Deserialize struct; nullopt when neither applies.
  std::optional<ConfigRef> bind_root(const ConfigRef& c) const;
  // A root constructor's parameter of config type `type_text` (from `module`): the config an
  // `--arg` call built for it when `given`, else the file bound as bind_root binds it; nullopt
  // when neither applies or the type is no crate-local struct.
  std::optional<ConfigRef> bind_param(const std::string& type_text, const std::string& module,
                                      bool given) const;
  FieldResult field(const ConfigRef& c, std::string_view name) const;
  // The declared Rust type of a config field ("f64", "Option<usize>"); empty when unknown.
  std::string field_type(const ConfigRef& c, std::string_view name) const;
  std::optional<SymValue> method(const ConfigRef& c, std::string_view name,
                                 const std::vector<SymValue>& args) const;

  // The values a crate-local constructor (`new`, else `load`, of struct `type_item`) gives the
  // struct's fields, with the constructor's config parameter bound to the file: each struct
  // literal initializer (`head_dim: cfg.hidden_size / cfg.num_attention_heads`, or shorthand
  // `head_dim` after `let head_dim = ..;`). Empty when no file is bound or no constructor takes a
  // config; values may still be symbolic. `arguments`: numbers one instance's constructor call
  // passed (ir::Module::arguments), bound to those parameters (`Self { n_head, .. }` of
  // `load(n_state, n_head, vb)`); a constructor taking no config is then evaluated too.
  std::map<std::string, SymValue> constructor_fields(
      std::size_t type_item, const std::map<std::string, SymValue>& arguments = {}) const;
  // The call that builds field `field` in that constructor (written there, or a top-level `let`
  // the literal names in shorthand); nullopt when no file is bound or the field is not a call.
  std::optional<ConstructorCall> constructor_field_call(std::size_t type_item,
                                                        std::string_view field) const;
  // The config a constructor stores whole in field `field` (`cfg: cfg.clone()`, shorthand `cfg`,
  // `text_config: cfg.text_config.clone()`), bound as its parameter is; nullopt otherwise.
  std::optional<ConfigRef> constructor_field_config(std::size_t type_item,
                                                    std::string_view field) const;
  // The strings a config.json value must be to deserialize as the unit variant `path` names
  // (`ModelVersion::V7b`, resolved from `module`); nullopt when it names no such variant.
  std::optional<std::vector<std::string>> variant_spellings(std::string_view path,
                                                            const std::string& module) const;

  struct Diag {
    std::string source, message;
  };
  const std::vector<Diag>& diagnostics() const { return diags_; }

 private:
  using LetValues = std::map<std::string, rust::NodeId>;
  bool with_constructor(std::size_t type_item,
                        const std::function<void(const rust::Body&, rust::NodeId, EvalContext&,
                                                 const LetValues&)>& visit,
                        const std::map<std::string, SymValue>& arguments = {}) const;
  struct FieldInfo {
    std::string name, type_text, json_name;
    std::vector<std::string> aliases;
    bool serde_default = false;
    std::string default_fn;
    std::string deserialize_with;  // `#[serde(deserialize_with = "f")]` or `with = "m"`
    std::string deserializer;      // `f` of `deserialize_with = "f"`
    std::uint32_t line = 0;
  };
  struct StructInfo {
    bool deserialize = false;
    bool struct_default = false;
    std::vector<FieldInfo> fields;
  };
  const StructInfo& info(std::size_t item) const;
  std::optional<ConfigProblem> refusal(const rust::Item& st, const FieldInfo& f,
                                       const std::string& key, const SymValue& v) const;
  void validate(std::size_t item, const std::string& path, int depth) const;
  std::optional<std::vector<std::string>> variant_names(const std::string& type_text,
                                                        const std::string& module) const;
  std::optional<std::vector<std::pair<std::string, std::vector<std::string>>>> variant_table(
      const std::string& t, const std::string& module) const;
  SymValue default_of(const ConfigRef& c, const StructInfo& s, const FieldInfo& f) const;
  SymValue impl_default(const ConfigRef& c, const FieldInfo& f) const;
  std::optional<FieldResult> deserialized(const ConfigRef& c, const FieldInfo& f) const;
  SymValue eval_fn_body(std::size_t fn_item, const std::optional<ConfigRef>& self,
                        const std::vector<SymValue>& args) const;

  const rust::Crate& crate_;
  const ConfigValues* values_;
  const std::map<std::size_t, ConfigRef>* built_ = nullptr;
  mutable std::map<std::size_t, StructInfo> infos_;
  mutable std::vector<Diag> diags_;
  mutable std::set<std::string> reported_;
  mutable std::set<std::string> validated_;  // (path, struct item) pairs validate() has checked
  mutable int depth_ = 0;
};

}  // namespace cg::analysis
