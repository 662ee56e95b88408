#include "analysis/layer_source_eval.hpp"

#include <algorithm>

namespace cg::analysis::layer_source_detail {

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

// The constructor `item` (a free function whose last parameter is the VarBuilder); nullopt
// with `why` when not understood.
std::optional<ConstructorSpec> Deriver::derive(std::size_t item, std::string& why) {
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

// Binds the identifiers of a pattern (a PIdent to `v`, anything nested to unknown).
void Deriver::bind_pattern(NodeId p, const Val& v) {
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

Val Deriver::eval(NodeId n) {
  if (n == kNone || !error_.empty()) return {};
  const rust::Node& nd = node(n);
  last_line_ = nd.line;
  switch (nd.kind) {
    case Kind::Block:
      return block(n);
    case Kind::Lit:
      return literal(nd);
    case Kind::Path:
      if (const Val* v = lookup(std::string(nd.str))) return *v;
      return {};
    case Kind::Field:
      return field(n);
    case Kind::Paren: {
      Val v = eval(nd.a);
      if (v.k == Val::K::expr && v.text.find(' ') != std::string::npos) v.text = "(" + v.text + ")";
      return v;
    }
    case Kind::Ref:
    case Kind::Try:
    case Kind::Await:
      return eval(nd.a);
    case Kind::Unary:
      return unary(n);
    case Kind::Binary:
      return binary(n);
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
    case Kind::Struct:
      return struct_literal(n);
    case Kind::Closure:
    case Kind::For:
    case Kind::While:
    case Kind::Loop:
      return repeated(n);
    default:
      return unmodelled(n);
  }
}

// The kinds the interpretation gives no value: their parts still run (a leaf requested inside
// a tuple or an assignment counts).
Val Deriver::unmodelled(NodeId n) {
  const rust::Node& nd = node(n);
  switch (nd.kind) {
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
    case Kind::Cast:
      eval(nd.a);
      return {};
    default:
      return {};
  }
}

Val Deriver::literal(const rust::Node& nd) {
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
}

// `config.affine`: a struct literal's field, or the field of an argument.
Val Deriver::field(NodeId n) {
  const rust::Node& nd = node(n);
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

Val Deriver::unary(NodeId n) {
  const rust::Node& nd = node(n);
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

// `LayerNormConfig { affine: false, ..Default::default() }`: its fields (those `..base` gives
// stay unknown).
Val Deriver::struct_literal(NodeId n) {
  const rust::Node& nd = node(n);
  Val v;
  v.k = Val::K::config;
  for (NodeId fi : body().kids(n)) {
    const rust::Node& f = node(fi);
    if (f.cfg == rust::Tri::False) continue;
    v.fields.push_back(Val::Field{std::string(f.str), eval(f.a)});
  }
  if (nd.a != kNone) eval(nd.a);
  return v;
}

// A closure or loop: a tensor requested inside one is not understood (how often is unknown).
Val Deriver::repeated(NodeId n) {
  const rust::Node& nd = node(n);
  std::size_t before = leaves_.size();
  for (NodeId k : {nd.a, nd.b, nd.c})
    if (k != kNone && node(k).kind != Kind::PIdent) eval(k);
  if (leaves_.size() != before)
    fail("tensors are requested inside a " +
         std::string(nd.kind == Kind::Closure ? "closure" : "loop"));
  return {};
}

Val Deriver::block(NodeId n) {
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

Val Deriver::binary(NodeId n) {
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

std::vector<Val> Deriver::args_of(NodeId n) {
  std::vector<Val> out;
  for (NodeId k : body().kids(n))
    out.push_back(eval(k));
  return out;
}

Val Deriver::method_call(NodeId n) {
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
Val Deriver::request(NodeId n, const Val& b, const std::string& m,
                     const std::vector<NodeId>& kids) {
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

Val Deriver::call(NodeId n) {
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
Val Deriver::format_value(std::string_view tokens) {
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

}  // namespace cg::analysis::layer_source_detail
