#include "analysis/layer_source.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "rust/crate.hpp"

namespace cg::analysis {

namespace fs = std::filesystem;

namespace {

using rust::Kind;
using rust::kNone;
using rust::NodeId;

constexpr std::size_t kNpos = static_cast<std::size_t>(-1);
constexpr int kMaxInline = 8;
// A condition the interpretation could not express: any leaf requested under one makes the
// constructor not understood (the text after the marker is the source, for the reason).
constexpr char kUnknownCond = '\x01';

bool is_ident(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool mentions_var_builder(const std::string& type_text) {
  for (std::string_view w : {"VarBuilder", "VarBuilderArgs"}) {
    for (auto pos = type_text.find(w); pos != std::string::npos; pos = type_text.find(w, pos + 1)) {
      std::size_t end = pos + w.size();
      bool left = pos == 0 || !is_ident(type_text.substr(pos - 1, 1));
      bool right = end >= type_text.size() || !is_ident(type_text.substr(end, 1));
      if (left && right) return true;
    }
  }
  return false;
}

std::string strip_generics(std::string s) {
  if (auto lt = s.find('<'); lt != std::string::npos) s.resize(lt);
  while (!s.empty() && s.back() == ' ')
    s.pop_back();
  return s;
}

std::string last_segment(const std::string& path) {
  auto sep = path.rfind("::");
  return sep == std::string::npos ? path : path.substr(sep + 2);
}

// `Result<Linear>`, `candle::Result<crate::Linear>` → `Linear`.
std::string layer_type_of(std::string ret) {
  auto lt = ret.find('<');
  if (lt != std::string::npos && last_segment(strip_generics(ret)) == "Result") {
    auto gt = ret.rfind('>');
    ret = ret.substr(lt + 1, gt == std::string::npos ? std::string::npos : gt - lt - 1);
    if (auto comma = ret.find(','); comma != std::string::npos) ret.resize(comma);
  }
  while (!ret.empty() && (ret.front() == ' ' || ret.front() == '&'))
    ret.erase(ret.begin());
  return last_segment(strip_generics(ret));
}

std::string negate(const std::string& c) {
  if (!c.empty() && c[0] == kUnknownCond) return c;
  if (c.size() > 1 && c[0] == '!' && c.find(' ') == std::string::npos) return c.substr(1);
  return c.find(' ') == std::string::npos ? "!" + c : "!(" + c + ")";
}

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

Val Val::expr(std::string t) {
  Val v;
  v.k = K::expr;
  v.text = std::move(t);
  return v;
}

Val Val::str(std::string t) {
  Val v;
  v.k = K::str;
  v.text = std::move(t);
  return v;
}

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
  std::optional<ConstructorSpec> derive(std::size_t item, std::string& why) {
    const rust::Item& it = crate_.items()[item];
    ConstructorSpec spec;
    spec.name = it.name;
    spec.layer_type = layer_type_of(it.return_type);
    Frame f{item, &crate_.lowered(item), {}};
    for (std::size_t i = 0; i < it.params.size(); ++i) {
      const rust::Param& p = it.params[i];
      if (mentions_var_builder(p.type_text)) {
        if (i + 1 != it.params.size()) {
          why = "the VarBuilder is not its last argument";
          return std::nullopt;
        }
        Val b;
        b.k = Val::K::builder;
        f.env.emplace_back(p.name, b);
        continue;
      }
      if (!is_ident(p.name)) {
        why = "argument pattern `" + p.name + "` is not a plain name";
        return std::nullopt;
      }
      spec.params.push_back(p.name);
      f.env.emplace_back(p.name, Val::expr("{" + p.name + "}"));
    }
    if (f.body->root == kNone) {
      why = "it has no body";
      return std::nullopt;
    }
    frames_.push_back(std::move(f));
    eval(frames_.back().body->root);
    frames_.pop_back();
    if (error_.empty())
      for (const DLeaf& l : leaves_)
        for (const auto& c : l.conds)
          if (!c.empty() && c[0] == kUnknownCond) {
            fail("`" + l.name + "` is requested under a condition not understood: `" + c.substr(1) +
                 "`");
            break;
          }
    if (!error_.empty()) {
      why = error_;
      return std::nullopt;
    }
    std::string note = "read from candle-nn's source (" + crate_.source(item) + ")";
    for (const auto& n : notes_)
      note += "; " + n;
    spec.note = note;
    for (DLeaf& l : leaves_) {
      LeafSpec ls;
      ls.name = std::move(l.name);
      ls.shape = std::move(l.shape);
      for (const auto& c : l.conds)
        ls.condition += (ls.condition.empty() ? "" : " && ") + c;
      ls.running_state = l.running_state;
      spec.leaves.push_back(std::move(ls));
    }
    return spec;
  }

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
  void bind_pattern(NodeId p, const Val& v) {
    if (p == kNone) return;
    const rust::Node& n = node(p);
    if (n.kind == Kind::PIdent) {
      bind(std::string(n.str), v);
      return;
    }
    for (NodeId k : body().kids(p))
      bind_pattern(k, Val{});
    if (n.a != kNone) bind_pattern(n.a, Val{});
  }

  Val eval(NodeId n) {
    if (n == kNone || !error_.empty()) return {};
    const rust::Node& nd = node(n);
    last_line_ = nd.line;
    switch (nd.kind) {
      case Kind::Block:
        return block(n);
      case Kind::Lit:
        switch (nd.lit) {
          case rust::LitKind::Str:
            return Val::str(std::string(nd.text));
          case rust::LitKind::Int:
          case rust::LitKind::Float:
          case rust::LitKind::Bool:
            return Val::expr(std::string(nd.str));
          default:
            return {};
        }
      case Kind::Path: {
        std::string p(nd.str);
        if (const Val* v = lookup(p)) return *v;
        return {};
      }
      case Kind::Field: {
        Val base = eval(nd.a);
        std::string f(nd.str);
        if (base.k == Val::K::config) {
          for (const auto& [k, v] : base.fields)
            if (k == f) return v;
          return {};
        }
        if (base.k == Val::K::expr) return Val::expr(base.text + "." + f);
        return {};
      }
      case Kind::Paren: {
        Val v = eval(nd.a);
        if (v.k == Val::K::expr && v.text.find(' ') != std::string::npos)
          v.text = "(" + v.text + ")";
        return v;
      }
      case Kind::Ref:
      case Kind::Try:
      case Kind::Await:
        return eval(nd.a);
      case Kind::Unary: {
        Val v = eval(nd.a);
        if (nd.str == "*") return v;
        if (v.k != Val::K::expr) return {};
        if (nd.str == "!") {
          if (v.is_bool(true)) return Val::expr("false");
          if (v.is_bool(false)) return Val::expr("true");
          return Val::expr(negate(v.text));
        }
        return Val::expr(std::string(nd.str) + v.text);
      }
      case Kind::Binary:
        return binary(n);
      case Kind::Cast:
        eval(nd.a);
        return {};
      case Kind::MethodCall:
        return method_call(n);
      case Kind::Call:
        return call(n);
      case Kind::Macro:
        if (nd.str == "format" || nd.str == "std::format") return format_value(nd.text);
        return {};
      case Kind::If:
        return if_expr(n);
      case Kind::Match:
        return match_expr(n);
      case Kind::Struct: {
        Val v;
        v.k = Val::K::config;
        for (NodeId fi : body().kids(n)) {
          const rust::Node& f = node(fi);
          if (f.cfg == rust::Tri::False) continue;
          v.fields.push_back(Val::Field{std::string(f.str), eval(f.a)});
        }
        if (nd.a != kNone) eval(nd.a);  // `..base`: the fields it gives stay unknown
        return v;
      }
      case Kind::Tuple:
      case Kind::Array:
      case Kind::ArrayRepeat:
      case Kind::Range:
      case Kind::Index:
      case Kind::Assign:
      case Kind::CompoundAssign:
      case Kind::Unsupported:
        for (NodeId k : {nd.a, nd.b})
          eval(k);
        for (NodeId k : body().kids(n))
          eval(k);
        return {};
      case Kind::Return:
      case Kind::Break:
        eval(nd.a);
        return {};
      case Kind::Closure:
      case Kind::For:
      case Kind::While:
      case Kind::Loop: {
        std::size_t before = leaves_.size();
        for (NodeId k : {nd.a, nd.b, nd.c})
          if (k != kNone && node(k).kind != Kind::PIdent) eval(k);
        if (leaves_.size() != before)
          fail("tensors are requested inside a " +
               std::string(nd.kind == Kind::Closure ? "closure" : "loop"));
        return {};
      }
      default:
        return {};
    }
  }

  Val block(NodeId n) {
    std::size_t env_size = frames_.back().env.size();
    Val out;
    NodeId tail = body().tail(n);
    for (NodeId s : body().kids(n)) {
      if (!error_.empty()) break;
      const rust::Node& st = node(s);
      if (st.cfg == rust::Tri::False) continue;
      if (s == tail) {
        out = eval(s);
        break;
      }
      if (st.kind == Kind::Let) {
        Val v = eval(st.b);
        if (st.c != kNone) eval(st.c);
        bind_pattern(st.a, v);
      } else if (st.kind == Kind::ExprStmt) {
        Val v = eval(st.a);
        if (!(st.flags & rust::kSemicolon) && s == body().kids(n).back()) out = v;
      }
    }
    frames_.back().env.resize(env_size);
    return out;
  }

  Val binary(NodeId n) {
    const rust::Node& nd = node(n);
    Val l = eval(nd.a), r = eval(nd.b);
    if (l.k != Val::K::expr || r.k != Val::K::expr) return {};
    if (nd.str == "&&") {
      if (l.is_bool(false) || r.is_bool(false)) return Val::expr("false");
      if (l.is_bool(true)) return r;
      if (r.is_bool(true)) return l;
    }
    if (nd.str == "||") {
      if (l.is_bool(true) || r.is_bool(true)) return Val::expr("true");
      if (l.is_bool(false)) return r;
      if (r.is_bool(false)) return l;
    }
    auto wrap = [&](NodeId k, const Val& v) {
      return node(k).kind == Kind::Binary ? "(" + v.text + ")" : v.text;
    };
    return Val::expr(wrap(nd.a, l) + " " + std::string(nd.str) + " " + wrap(nd.b, r));
  }

  std::vector<Val> args_of(NodeId n) {
    std::vector<Val> out;
    for (NodeId k : body().kids(n))
      out.push_back(eval(k));
    return out;
  }

  Val method_call(NodeId n) {
    const rust::Node& nd = node(n);
    Val recv = eval(nd.a);
    std::string m(nd.str);
    std::vector<NodeId> kids = body().kids(n);
    if (recv.k == Val::K::builder) {
      if (m == "get" || m == "get_with_hints" || m == "get_with_hints_dtype" ||
          m == "get_unchecked" || m == "get_unchecked_dtype")
        return request(n, recv, m, kids);
      if (m == "pp" || m == "push_prefix") {
        Val s = kids.empty() ? Val{} : eval(kids[0]);
        if (s.k == Val::K::expr) s = Val::str("{" + s.text + "}");
        if (s.k != Val::K::str) {
          fail("prefix `" + (kids.empty() ? std::string() : src(kids[0])) + "` not understood");
          return {};
        }
        recv.segs.push_back(s.text);
        return recv;
      }
      for (NodeId k : kids)
        eval(k);
      if (m == "set_device" || m == "set_dtype" || m == "clone" || m == "to_owned") return recv;
      if (m == "device" || m == "dtype") return {};
      fail("`" + src(n) + "` is a VarBuilder method the interpretation does not know");
      return {};
    }
    std::vector<Val> args;
    for (NodeId k : kids)
      args.push_back(eval(k));
    if (m == "into" || m == "clone" || m == "to_owned") return recv;
    if (recv.k == Val::K::expr) {
      std::string t = recv.text + "." + m + "(";
      for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i].k != Val::K::expr) return {};
        t += (i ? ", " : "") + args[i].text;
      }
      return Val::expr(t + ")");
    }
    return {};
  }

  // `vb.get*(shape, name, ..)`: one leaf under the current conditions.
  Val request(NodeId n, const Val& b, const std::string& m, const std::vector<NodeId>& kids) {
    bool name_first = m == "get_unchecked" || m == "get_unchecked_dtype";
    std::size_t name_idx = name_first ? 0 : 1;
    if (kids.size() <= name_idx) {
      fail("`" + src(n) + "` has no tensor name");
      return {};
    }
    DLeaf leaf;
    if (!name_first) {
      NodeId s = body().peel(kids[0], {Kind::Ref});
      const rust::Node& sn = node(s);
      std::vector<NodeId> dims;
      if (sn.kind == Kind::Tuple || sn.kind == Kind::Array)
        dims = body().kids(s);
      else if (sn.kind != Kind::Unit)
        dims.push_back(s);
      for (NodeId d : dims) {
        Val v = eval(d);
        if (v.k != Val::K::expr) {
          fail("shape dimension `" + src(d) + "` of `" + src(n) + "` not understood");
          return {};
        }
        leaf.shape.push_back(v.text);
      }
    } else {
      fail("`" + m + "` takes no shape");
      return {};
    }
    Val name = eval(kids[name_idx]);
    if (name.k == Val::K::expr) name = Val::str("{" + name.text + "}");
    if (name.k != Val::K::str) {
      fail("tensor name `" + src(kids[name_idx]) + "` not understood");
      return {};
    }
    for (std::size_t k = name_idx + 1; k < kids.size(); ++k)
      eval(kids[k]);
    for (const auto& s : b.segs)
      leaf.name += s + ".";
    leaf.name += name.text;
    leaf.conds = conds_;
    leaves_.push_back(std::move(leaf));
    Val t;
    t.k = Val::K::tensor;
    t.leaf = leaves_.size() - 1;
    return t;
  }

  Val call(NodeId n) {
    const rust::Node& nd = node(n);
    std::string path = strip_generics(src(nd.a));
    std::vector<Val> args = args_of(n);
    if (!error_.empty()) return {};
    if ((path == "Var::from_tensor" || last_segment(path) == "from_tensor") && !args.empty() &&
        args[0].k == Val::K::tensor) {
      // The layer keeps its own Var of it, updated by the layer, never by an optimizer.
      leaves_[args[0].leaf].running_state = true;
      return {};
    }
    if (path == "Some" && args.size() == 1) return args[0];
    bool passes_builder =
        std::any_of(args.begin(), args.end(), [](const Val& v) { return v.k == Val::K::builder; });
    if (!passes_builder) return {};
    std::size_t callee = kNpos;
    for (const auto& c : crate_.resolve_in(frames_.back().item, path))
      if (c.kind == rust::Candidate::Kind::Item) {
        const rust::Item& it = crate_.items()[c.item];
        if ((it.kind == rust::ItemKind::Function || it.kind == rust::ItemKind::Method) &&
            it.self_kind == rust::SelfKind::None && it.cfg.state != rust::Tri::False)
          callee = callee == kNpos ? c.item : kNpos - 1;
      }
    if (callee == kNpos || callee == kNpos - 1) {
      fail("`" + path + "` receives the VarBuilder and is not " +
           (callee == kNpos ? std::string("a function of candle-nn") : "one function"));
      return {};
    }
    if (frames_.size() > kMaxInline) {
      fail("calls nest deeper than " + std::to_string(kMaxInline));
      return {};
    }
    const rust::Item& it = crate_.items()[callee];
    if (it.params.size() != args.size()) {
      fail("`" + path + "` is called with " + std::to_string(args.size()) + " arguments");
      return {};
    }
    Frame f{callee, &crate_.lowered(callee), {}};
    if (f.body->root == kNone) {
      fail("`" + path + "` has no body");
      return {};
    }
    for (std::size_t i = 0; i < args.size(); ++i)
      f.env.emplace_back(it.params[i].name, args[i]);
    frames_.push_back(std::move(f));
    Val out = eval(frames_.back().body->root);
    frames_.pop_back();
    return out;
  }

  // `format!("weight_ih_l{layer_idx}{direction_str}")`: a name with `{…}` placeholders for what
  // depends on the arguments. A part chosen by a branch between "" and other strings is modelled
  // as absent, and the note says when it is not.
  Val format_value(std::string_view tokens) {
    rust::FormatArgs fa = rust::parse_format_args(tokens);
    if (!fa.ok) return {};
    const std::string& t = fa.templ;
    std::string out;
    std::size_t positional = 0;
    for (std::size_t i = 0; i < t.size(); ++i) {
      char c = t[i];
      if (c == '\\' || ((c == '{' || c == '}') && i + 1 < t.size() && t[i + 1] == c)) return {};
      if (c != '{') {
        out.push_back(c);
        continue;
      }
      auto close = t.find('}', i);
      if (close == std::string::npos) return {};
      std::string name = t.substr(i + 1, close - i - 1);
      i = close;
      std::string arg;
      if (name.empty()) {
        if (positional >= fa.positional.size()) return {};
        arg = fa.positional[positional++];
      } else if (const std::string* v = fa.find(name)) {
        arg = *v;
      } else {
        arg = name;
      }
      if (!is_ident(arg)) return {};
      const Val* v = lookup(arg);
      if (v == nullptr) return {};
      if (v->k == Val::K::str) {
        out += v->text;
      } else if (v->k == Val::K::expr) {
        out += "{" + v->text + "}";
      } else if (v->k == Val::K::strs &&
                 std::find(v->strs.begin(), v->strs.end(), "") != v->strs.end()) {
        std::string others;
        for (const auto& s : v->strs)
          if (!s.empty()) others += (others.empty() ? "`" : ", `") + s + "`";
        std::string note = "names end in " + others + " when " + v->strs_on +
                           " selects it (not modelled: the names shown are without it)";
        if (std::find(notes_.begin(), notes_.end(), note) == notes_.end()) notes_.push_back(note);
      } else {
        return {};
      }
    }
    return Val::str(out);
  }

  // One branch of an `if`/`match`: its condition, then its leaves and value.
  struct Arm {
    std::string cond;
    std::size_t begin = 0, end = 0;
    Val value;
  };

  // Leaves every arm requests alike lose that arm's condition (a leaf requested on both sides
  // of `if bias { linear(..) } else { linear_no_bias(..) }` is unconditional).
  void merge_arms(std::vector<Arm>& arms, std::size_t first) {
    if (arms.size() < 2) return;
    const std::size_t depth = conds_.size();
    auto rest_of = [&](const DLeaf& l) {
      return std::vector<std::string>(l.conds.begin() + static_cast<std::ptrdiff_t>(depth) + 1,
                                      l.conds.end());
    };
    auto same = [&](const DLeaf& x, const DLeaf& y) {
      return x.name == y.name && x.shape == y.shape && x.running_state == y.running_state &&
             rest_of(x) == rest_of(y);
    };
    std::vector<bool> used(leaves_.size(), false);
    std::vector<DLeaf> out(leaves_.begin(), leaves_.begin() + static_cast<std::ptrdiff_t>(first));
    for (std::size_t i = arms[0].begin; i < arms[0].end; ++i) {
      std::vector<std::size_t> matched;
      for (std::size_t b = 1; b < arms.size(); ++b)
        for (std::size_t j = arms[b].begin; j < arms[b].end; ++j)
          if (!used[j] && same(leaves_[i], leaves_[j])) {
            matched.push_back(j);
            break;
          }
      DLeaf l = leaves_[i];
      if (matched.size() + 1 == arms.size()) {
        l.conds.erase(l.conds.begin() + static_cast<std::ptrdiff_t>(depth));
        for (std::size_t j : matched)
          used[j] = true;
      }
      out.push_back(std::move(l));
    }
    for (std::size_t b = 1; b < arms.size(); ++b)
      for (std::size_t j = arms[b].begin; j < arms[b].end; ++j)
        if (!used[j]) out.push_back(leaves_[j]);
    leaves_ = std::move(out);
    for (Arm& arm : arms)
      if (arm.value.k == Val::K::tensor) arm.value = Val{};  // indices moved
  }

  Val join_values(const std::vector<Arm>& arms, const std::string& on) {
    Val v;
    for (const Arm& a : arms)
      if (a.value.k != Val::K::str) return {};
    v.k = Val::K::strs;
    v.strs_on = on;
    for (const Arm& a : arms)
      v.strs.push_back(a.value.text);
    return v;
  }

  // Runs `branch` under condition `cond`, recording its leaves.
  template <typename F>
  Arm run_arm(const std::string& cond, F&& branch) {
    Arm a;
    a.cond = cond;
    a.begin = leaves_.size();
    conds_.push_back(cond);
    a.value = branch();
    conds_.pop_back();
    a.end = leaves_.size();
    return a;
  }

  Val if_expr(NodeId n) {
    const rust::Node& nd = node(n);
    std::string cond;
    NodeId c = nd.a;
    if (node(c).kind == Kind::LetCond) {
      Val v = eval(node(c).b);
      std::string pat = src(node(c).a);
      cond = v.k == Val::K::expr && pat.rfind("Some(", 0) == 0 ? v.text + ".is_some()"
                                                               : kUnknownCond + src(c);
      std::size_t env_size = frames_.back().env.size();
      Arm then = run_arm(cond, [&] {
        bind_pattern(node(c).a, Val{});
        return eval(nd.b);
      });
      frames_.back().env.resize(env_size);
      std::vector<Arm> arms{then};
      if (nd.c != kNone) arms.push_back(run_arm(negate(cond), [&] { return eval(nd.c); }));
      merge_arms(arms, then.begin);
      return arms.size() == 2 ? join_values(arms, cond) : Val{};
    }
    Val v = eval(c);
    if (v.is_bool(true)) return eval(nd.b);
    if (v.is_bool(false)) return nd.c == kNone ? Val{} : eval(nd.c);
    cond = v.k == Val::K::expr ? v.text : kUnknownCond + src(c);
    std::vector<Arm> arms{run_arm(cond, [&] { return eval(nd.b); })};
    if (nd.c != kNone) arms.push_back(run_arm(negate(cond), [&] { return eval(nd.c); }));
    merge_arms(arms, arms[0].begin);
    return arms.size() == 2 ? join_values(arms, cond) : Val{};
  }

  Val match_expr(NodeId n) {
    const rust::Node& nd = node(n);
    Val s = eval(nd.a);
    std::string on = s.k == Val::K::expr ? s.text : src(nd.a);
    std::vector<Arm> arms;
    std::size_t first = leaves_.size();
    for (NodeId armn : body().kids(n)) {
      const rust::Node& an = node(armn);
      if (an.cfg == rust::Tri::False) continue;
      std::string pat = src(an.a);
      std::string cond;
      if (s.k == Val::K::expr && an.b == kNone) {
        if (pat.rfind("Some(", 0) == 0)
          cond = s.text + ".is_some()";
        else if (pat == "None")
          cond = negate(s.text + ".is_some()");
        else if (pat == "true")
          cond = s.text;
        else if (pat == "false")
          cond = negate(s.text);
      }
      if (cond.empty()) cond = kUnknownCond + on + " matches " + pat;
      std::size_t env_size = frames_.back().env.size();
      arms.push_back(run_arm(cond, [&] {
        bind_pattern(an.a, Val{});
        return eval(an.c);
      }));
      frames_.back().env.resize(env_size);
    }
    merge_arms(arms, first);
    return join_values(arms, on);
  }
};

struct Stamp {
  fs::path path;
  std::uintmax_t size = 0;
  fs::file_time_type mtime{};
  bool operator==(const Stamp&) const = default;
};

Stamp stamp_of(const fs::path& p) {
  std::error_code ec;
  Stamp s{p, fs::file_size(p, ec), {}};
  if (ec) s.size = static_cast<std::uintmax_t>(-1);
  s.mtime = fs::last_write_time(p, ec);
  return s;
}

struct CacheEntry {
  std::vector<Stamp> stamps;
  std::shared_ptr<const LayerSource> source;
};

}  // namespace

LayerSource derive_layer_constructors(const rust::Crate& crate) {
  LayerSource out;
  out.files = crate.units().empty() ? 0 : crate.units()[0].files;
  // A syntax error inside a constructor, or one that hides a `pub fn … VarBuilder …` from the
  // item list, keeps that constructor from being read. Errors elsewhere cannot change one (real
  // candle-nn 0.11.0's var_builder.rs and func.rs hold syntax tree-sitter-rust 0.23 rejects).
  std::map<std::size_t, std::vector<std::uint32_t>> error_lines;  // file → problem lines
  for (std::size_t f = 0; f < crate.files().size(); ++f)
    for (const auto& p : crate.files()[f]->problems())
      error_lines[f].push_back(p.line);
  auto error_inside = [&](std::size_t item) -> std::string {
    const rust::Item& it = crate.items()[item];
    auto e = error_lines.find(it.file);
    if (e == error_lines.end()) return "";
    const rust::Body& b = crate.lowered(item);
    std::uint32_t last = it.line;
    if (b.root != kNone) {
      const std::string& text = crate.files()[it.file]->text();
      const rust::Node& r = b[b.root];
      if (r.end <= text.size())
        last = r.line + static_cast<std::uint32_t>(
                            std::count(text.begin() + r.start, text.begin() + r.end, '\n'));
    }
    for (std::uint32_t l : e->second)
      if (l >= it.line && l <= last)
        return crate.files()[it.file]->path() + ":" + std::to_string(l) + ": syntax error in it";
    return "";
  };
  for (const auto& d : crate.diagnostics())
    if (d.rule == "source-load")
      out.problems.push_back((d.file.empty() ? "" : d.file + ": ") + d.message);
  // Public free functions taking a VarBuilder, by name; a name two of them share is the one the
  // crate root exports.
  std::map<std::string, std::vector<std::size_t>> by_name;
  for (std::size_t i = 0; i < crate.items().size(); ++i) {
    const rust::Item& it = crate.items()[i];
    if (it.kind != rust::ItemKind::Function || it.unit != 0 ||
        it.visibility != rust::Visibility::Public || it.cfg.state == rust::Tri::False)
      continue;
    if (std::any_of(it.params.begin(), it.params.end(),
                    [](const rust::Param& p) { return mentions_var_builder(p.type_text); }))
      by_name[it.name].push_back(i);
  }
  for (const auto& entry : error_lines) {
    // Named, not a structured binding: a lambda below captures the file index.
    const std::size_t f = entry.first;
    const auto& lines = entry.second;
    const std::string& text = crate.files()[f]->text();
    for (auto pos = text.find("pub fn "); pos != std::string::npos;
         pos = text.find("pub fn ", pos + 1)) {
      std::size_t n0 = pos + 7, n1 = n0;
      while (n1 < text.size() && is_ident(text.substr(n1, 1)))
        ++n1;
      std::size_t sig_end = text.find_first_of("{;", n1);
      std::string sig =
          text.substr(n1, sig_end == std::string::npos ? std::string::npos : sig_end - n1);
      std::string name = text.substr(n0, n1 - n0);
      if (name.empty() || by_name.count(name) > 0 || !mentions_var_builder(sig)) continue;
      auto line = static_cast<std::uint32_t>(
          1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
      // Parsed after all (a method, or a function the error did not reach): not hidden.
      if (std::any_of(crate.items().begin(), crate.items().end(), [&](const rust::Item& it) {
            return it.file == f && it.line == line && it.name == name;
          }))
        continue;
      out.problems.push_back(crate.files()[f]->path() + ":" + std::to_string(line) + ": `" + name +
                             "` is not parsed (syntax error at line " +
                             std::to_string(lines.front()) + ")");
    }
  }
  for (auto& [name, items] : by_name) {
    if (items.size() > 1) {
      std::vector<std::size_t> exported;
      for (const auto& c : crate.resolve("", name))
        if (c.kind == rust::Candidate::Kind::Item &&
            std::find(items.begin(), items.end(), c.item) != items.end())
          exported.push_back(c.item);
      if (exported.size() != 1) {
        out.skipped.push_back(name + " (" + crate.source(items[0]) +
                              "): " + std::to_string(items.size()) +
                              " public functions share the name and the crate root exports " +
                              (exported.empty() ? "none" : "several"));
        continue;
      }
      items = exported;
    }
    if (std::string e = error_inside(items[0]); !e.empty()) {
      out.skipped.push_back(name + " (" + crate.source(items[0]) + "): " + e);
      continue;
    }
    std::string why;
    Deriver d(crate);
    if (auto spec = d.derive(items[0], why))
      out.constructors.push_back(std::move(*spec));
    else
      out.skipped.push_back(name + " (" + crate.source(items[0]) + "): " + why);
  }
  if (out.constructors.empty())
    out.error = out.problems.empty() ? "no public function taking a VarBuilder was understood"
                                     : out.problems.front();
  return out;
}

std::shared_ptr<const LayerSource> read_layer_source(const fs::path& package_dir,
                                                     const fs::path& root_file,
                                                     const rust::CfgSet& cfg) {
  static std::mutex mu;
  static std::map<std::string, CacheEntry> cache;
  std::error_code ec;
  const std::string key =
      fs::weakly_canonical(package_dir, ec).string() + "\n" + root_file.string();
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end() && std::all_of(it->second.stamps.begin(), it->second.stamps.end(),
                                         [](const Stamp& s) { return stamp_of(s.path) == s; }))
      return it->second.source;
  }
  CacheEntry e;
  auto src = std::make_shared<LayerSource>();
  if (!fs::is_regular_file(root_file, ec)) {
    // Relative to the package: notes become IR findings, the same on every machine.
    src->error =
        "it has no library root (" + root_file.lexically_relative(package_dir).string() + ")";
  } else {
    rust::Crate crate = rust::Crate::load(package_dir, root_file, nullptr, cfg, 2);
    *src = derive_layer_constructors(crate);
    fs::path dir = fs::weakly_canonical(package_dir, ec);
    for (const auto& f : crate.files())
      e.stamps.push_back(stamp_of(dir / f->path()));
  }
  e.stamps.push_back(stamp_of(root_file));
  e.source = src;
  std::lock_guard<std::mutex> lock(mu);
  cache[key] = e;
  return src;
}

}  // namespace cg::analysis
