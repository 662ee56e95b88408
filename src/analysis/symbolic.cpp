#include "analysis/symbolic.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "rust/literal.hpp"

namespace cg::analysis {

SymValue SymValue::of_int(std::int64_t v) {
  SymValue s;
  s.kind = Kind::integer;
  s.integer = v;
  return s;
}
SymValue SymValue::of_real(double v) {
  SymValue s;
  s.kind = Kind::real;
  s.real = v;
  return s;
}
SymValue SymValue::of_bool(bool v) {
  SymValue s;
  s.kind = Kind::boolean;
  s.boolean = v;
  return s;
}
SymValue SymValue::of_string(std::string v) {
  SymValue s;
  s.kind = Kind::string;
  s.text = std::move(v);
  return s;
}
SymValue SymValue::none() {
  SymValue s;
  s.kind = Kind::none;
  return s;
}
SymValue SymValue::symbolic(std::string text, std::string reason) {
  // An expression's text is for reading; past 4 KiB (an 8,000-link method chain) it is cut, so
  // rebuilding it at every level of a deep chain stays linear.
  constexpr std::size_t kMaxText = 4096;
  if (text.size() > kMaxText) {
    std::size_t cut = kMaxText;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
      --cut;  // not inside a UTF-8 sequence
    text.resize(cut);
    text += "…";
  }
  SymValue s;
  s.kind = Kind::symbolic;
  s.text = std::move(text);
  s.reason = std::move(reason);
  return s;
}

std::string SymValue::display() const {
  switch (kind) {
    case Kind::integer:
      return std::to_string(integer);
    case Kind::real: {
      char buf[32];
      auto r = std::to_chars(buf, buf + sizeof buf, real);
      return std::string(buf, r.ptr);
    }
    case Kind::boolean:
      return boolean ? "true" : "false";
    case Kind::string:
      return "\"" + text + "\"";
    case Kind::none:
      return "None";
    case Kind::symbolic:
      return text;
  }
  return text;
}

std::optional<SymValue> parse_literal(std::string_view kind, std::string_view text) {
  if (kind == "boolean_literal") return SymValue::of_bool(text == "true");
  if (kind == "string_literal" || kind == "raw_string_literal") {
    if (auto s = rust::decode_string_literal(text)) return SymValue::of_string(std::move(*s));
    return std::nullopt;
  }
  std::string clean;
  for (char c : text)
    if (c != '_') clean.push_back(c);
  if (kind == "integer_literal") {
    // Strip a type suffix (usize, u32, i64, …).
    std::size_t end = clean.size();
    for (const char* suf :
         {"usize", "isize", "u128", "i128", "u64", "i64", "u32", "i32", "u16", "i16", "u8", "i8"}) {
      std::size_t n = std::strlen(suf);
      if (clean.size() > n && clean.compare(clean.size() - n, n, suf) == 0 &&
          !(clean.size() > 2 && clean[1] == 'x')) {
        end = clean.size() - n;
        break;
      }
    }
    clean.resize(end);
    int base = 10;
    std::string_view digits(clean);
    if (digits.size() > 2 && digits[0] == '0' &&
        (digits[1] == 'x' || digits[1] == 'o' || digits[1] == 'b')) {
      base = digits[1] == 'x' ? 16 : digits[1] == 'o' ? 8 : 2;
      digits.remove_prefix(2);
    }
    std::int64_t v = 0;
    auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
    if (r.ec != std::errc() || r.ptr != digits.data() + digits.size()) return std::nullopt;
    return SymValue::of_int(v);
  }
  if (kind == "float_literal") {
    for (const char* suf : {"f32", "f64"}) {
      if (clean.size() > 3 && clean.compare(clean.size() - 3, 3, suf) == 0)
        clean.resize(clean.size() - 3);
    }
    double v = 0;
    auto r = std::from_chars(clean.data(), clean.data() + clean.size(), v);
    if (r.ec != std::errc() || r.ptr != clean.data() + clean.size()) return std::nullopt;
    return SymValue::of_real(v);
  }
  return std::nullopt;
}

namespace {

constexpr int kMaxDepth = 96;

using rust::Body;
using rust::Kind;
using rust::kNone;
using rust::NodeId;

// Evaluates lowered nodes. Dispatch and messages follow the syntax kind each node was lowered
// from (`Node::syntax`), so results read exactly as when the evaluator walked syntax trees.
struct Evaluator {
  const Body& body;
  EvalContext& ctx;

  std::string text(NodeId n) const { return std::string(body.source(n)); }

  SymValue unknown(NodeId n, std::string reason) const {
    return SymValue::symbolic(text(n), std::move(reason));
  }

  static bool numeric(const SymValue& v) {
    return v.kind == SymValue::Kind::integer || v.kind == SymValue::Kind::real;
  }
  static double as_real(const SymValue& v) {
    return v.kind == SymValue::Kind::integer ? static_cast<double>(v.integer) : v.real;
  }

  // The text of an operand inside a composed symbolic expression: concrete values print as
  // values, symbolic ones as their (already composed) text, parenthesized when they are compound
  // so `a * (b + c)` keeps its meaning.
  static std::string operand(const SymValue& v, bool wrap_compound) {
    std::string t = v.concrete() ? v.display() : v.text;
    if (!wrap_compound) return t;
    int depth = 0;
    for (char c : t) {
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') --depth;
      if (c == ' ' && depth == 0) return "(" + t + ")";
    }
    return t;
  }
  // A symbolic result rebuilt from its operands, so a local bound to `cfg.hidden_size` reads as
  // `cfg.hidden_size` at the use site instead of the local's name.
  static SymValue composed(const SymValue& a, const std::string& op, const SymValue& b,
                           std::string reason) {
    bool tight = op == "*" || op == "/" || op == "%";
    std::string text = operand(a, tight) + " " + op + " " + operand(b, tight || op == "-");
    return SymValue::symbolic(std::move(text), std::move(reason));
  }

  SymValue binary(NodeId n, int depth) {
    const rust::Node& node = body[n];
    if (node.a == kNone || node.b == kNone || node.str.empty())
      return unknown(n, "incomplete binary expression");
    std::string op(node.str);
    SymValue a = eval(node.a, depth + 1);
    // Short-circuit booleans exactly like Rust.
    if (op == "&&" && a.kind == SymValue::Kind::boolean && !a.boolean) return a;
    if (op == "||" && a.kind == SymValue::Kind::boolean && a.boolean) return a;
    SymValue b = eval(node.b, depth + 1);
    // `x && false` is false and `x || true` is true whatever x is (no side effects here).
    if (op == "&&" && b.kind == SymValue::Kind::boolean && !b.boolean) return b;
    if (op == "||" && b.kind == SymValue::Kind::boolean && b.boolean) return b;
    // `x && true` and `x || false` are x.
    if ((op == "&&" || op == "||") && b.kind == SymValue::Kind::boolean && !a.concrete()) return a;
    if ((op == "&&" || op == "||") && a.kind == SymValue::Kind::boolean && !b.concrete()) return b;
    // `cfg.version == ModelVersion::V7b`: a config string against a variant of the enum serde
    // read it as.
    if ((op == "==" || op == "!=") &&
        (a.kind == SymValue::Kind::string) != (b.kind == SymValue::Kind::string)) {
      const bool left = a.kind == SymValue::Kind::string;
      const NodeId other = left ? node.b : node.a;
      if (body[other].kind == rust::Kind::Path && body[other].is_scoped_identifier())
        if (auto names = ctx.variant_spellings(body[other].str)) {
          const std::string& s = left ? a.text : b.text;
          const bool eq = std::find(names->begin(), names->end(), s) != names->end();
          return SymValue::of_bool(op == "==" ? eq : !eq);
        }
    }
    if (!a.concrete()) return composed(a, op, b, a.reason);
    if (!b.concrete()) return composed(a, op, b, b.reason);
    return binary_value(op, a, b, text(n));
  }

  SymValue cast(NodeId n, int depth) {
    const rust::Node& node = body[n];
    if (node.a == kNone || node.str.empty()) return unknown(n, "incomplete cast");
    SymValue v = eval(node.a, depth + 1);
    std::string t(node.str);
    if (!v.concrete()) return SymValue::symbolic(operand(v, true) + " as " + t, v.reason);
    bool to_float = t == "f32" || t == "f64";
    if (!numeric(v)) return unknown(n, "cast of a non-number");
    if (to_float) return SymValue::of_real(as_real(v));
    if (v.kind == SymValue::Kind::real) {
      if (!std::isfinite(v.real)) return unknown(n, "cast of a non-finite float");
      return SymValue::of_int(static_cast<std::int64_t>(v.real));
    }
    return v;
  }

  // The callee as written: `f`, `Tensor::zeros::<f32>`, `x.get::<u32>`.
  std::string callee_text(NodeId n) const {
    const rust::Node& node = body[n];
    if (node.text.empty()) return node.kind == Kind::Call ? text(node.a) : std::string();
    // The turbofish is a view into the file text ending where the callee ends.
    std::string_view file = body.file_text();
    auto end = static_cast<std::size_t>(node.text.data() + node.text.size() - file.data());
    if (end < node.start || end > file.size()) return {};
    return std::string(file.substr(node.start, end - node.start));
  }

  SymValue call(NodeId n, int depth) {
    const rust::Node& node = body[n];
    if (node.kind == Kind::Call && node.a == kNone) return unknown(n, "incomplete call");
    std::vector<NodeId> arg_nodes = body.kids(n);
    if (node.kind == Kind::Call && node.text.empty() && body[node.a].is_identifier() &&
        body.source(node.a) == "Some" && arg_nodes.size() == 1) {
      // `Some(3)` is read as its number (a config's `Option<usize>`); `Some((attn, ln))` of
      // values not evaluated stays written `Some(..)`, so what holds it is known to be `Some`.
      SymValue v = eval(arg_nodes[0], depth + 1);
      if (v.concrete()) return v;
      return SymValue::symbolic("Some(" + v.text + ")", v.reason);
    }
    if (node.kind != Kind::MethodCall || !node.text.empty())
      return unknown(n, "call of `" + callee_text(n) + "`");
    NodeId recv = node.a;
    if (recv == kNone || node.str.empty()) return unknown(n, "incomplete call");
    std::string name(node.str);
    std::vector<SymValue> argv;
    for (NodeId a : arg_nodes)
      argv.push_back(eval(a, depth + 1));
    auto as_text = [&](const SymValue& r, const std::string& reason) {
      std::string t = operand(r, true) + "." + name + "(";
      for (std::size_t i = 0; i < argv.size(); ++i)
        t += (i ? ", " : "") + operand(argv[i], false);
      return SymValue::symbolic(t + ")", reason);
    };
    // Option and numeric helpers whose meaning is fixed by std.
    if ((name == "len" || name == "is_empty") && argv.empty()) {
      SymValue r = eval(recv, depth + 1);
      if (r.array_len)
        return name == "len" ? SymValue::of_int(*r.array_len)
                             : SymValue::of_bool(*r.array_len == 0);
      if (r.kind == SymValue::Kind::string) {
        auto len = static_cast<std::int64_t>(r.text.size());
        return name == "len" ? SymValue::of_int(len) : SymValue::of_bool(len == 0);
      }
    }
    // `cfg.hidden_sizes.get(i)`: the element (a `Some` is its value here), `None` past the end.
    if (name == "get" && argv.size() == 1 && argv[0].kind == SymValue::Kind::integer) {
      SymValue r = eval(recv, depth + 1);
      if (r.elements) {
        if (argv[0].integer >= 0 && static_cast<std::size_t>(argv[0].integer) < r.elements->size())
          return (*r.elements)[static_cast<std::size_t>(argv[0].integer)];
        return SymValue::none();
      }
    }
    if ((name == "first" || name == "last") && argv.empty()) {
      SymValue r = eval(recv, depth + 1);
      if (r.elements) {
        if (r.elements->empty()) return SymValue::none();
        return name == "first" ? r.elements->front() : r.elements->back();
      }
    }
    if (name == "as_str" || name == "as_ref" || name == "to_string" || name == "to_owned" ||
        name == "into") {
      SymValue r = eval(recv, depth + 1);
      if (r.concrete()) return r;
    }
    if (name == "unwrap_or" || name == "unwrap_or_else" || name == "unwrap_or_default" ||
        name == "unwrap" || name == "expect" || name == "clone" || name == "copied" ||
        name == "cloned" || name == "min" || name == "max") {
      SymValue r = eval(recv, depth + 1);
      if (name == "clone" || name == "copied" || name == "cloned") return r;
      if (name == "unwrap" || name == "expect") {
        if (r.kind == SymValue::Kind::none) return unknown(n, "unwrap of None");
        return r.concrete() ? r : SymValue::symbolic(r.text, r.reason);
      }
      if (name == "unwrap_or" && argv.size() == 1) {
        if (r.kind == SymValue::Kind::none) return argv[0];
        return r.concrete() ? r : as_text(r, r.reason);
      }
      if (name == "unwrap_or_default") {
        if (r.kind == SymValue::Kind::none) return unknown(n, "default of an unknown type");
        return r.concrete() ? r : as_text(r, r.reason);
      }
      if ((name == "min" || name == "max") && argv.size() == 1) {
        if (!r.concrete() || !argv[0].concrete() || !numeric(r) || !numeric(argv[0]))
          return as_text(r, !r.concrete() ? r.reason : argv[0].reason);
        bool take_first =
            name == "min" ? as_real(r) <= as_real(argv[0]) : as_real(r) >= as_real(argv[0]);
        return take_first ? r : argv[0];
      }
    }
    // `opt.is_some()` / `is_none()` on a value the config decided (`None` from an absent field,
    // or a concrete value).
    if ((name == "is_some" || name == "is_none") && argv.empty()) {
      SymValue r = eval(recv, depth + 1);
      if (r.concrete())
        return SymValue::of_bool((r.kind == SymValue::Kind::none) == (name == "is_none"));
      // A local bound to `Some(..)` of a value not evaluated (a module the constructor built).
      if (r.text.rfind("Some(", 0) == 0) return SymValue::of_bool(name == "is_some");
    }
    // Integer helpers with fixed std meaning.
    if ((name == "div_ceil" || name == "pow" || name == "saturating_sub" || name == "abs") &&
        argv.size() == (name == "abs" ? 0u : 1u)) {
      SymValue r = eval(recv, depth + 1);
      if (r.kind == SymValue::Kind::integer &&
          (argv.empty() || argv[0].kind == SymValue::Kind::integer)) {
        std::int64_t a = r.integer, b = argv.empty() ? 0 : argv[0].integer, out = 0;
        if (name == "abs") return SymValue::of_int(a < 0 ? -a : a);
        if (name == "saturating_sub") return SymValue::of_int(a > b ? a - b : 0);
        if (name == "div_ceil") {
          if (b == 0) return unknown(n, "division by zero");
          if (b < 0 || a < 0) return unknown(n, "div_ceil by a negative value");
          return SymValue::of_int(a / b + (a % b != 0 ? 1 : 0));
        }
        if (b < 0 || b > 62) return unknown(n, "pow exponent out of range");
        out = 1;
        for (std::int64_t i = 0; i < b; ++i)
          if (__builtin_mul_overflow(out, a, &out)) return unknown(n, "pow overflows");
        return SymValue::of_int(out);
      }
    }
    // `layer_idx.is_multiple_of(freq)`: std's rule, where only 0 is a multiple of 0.
    if (name == "is_multiple_of" && argv.size() == 1) {
      SymValue r = eval(recv, depth + 1);
      if (r.kind == SymValue::Kind::integer && argv[0].kind == SymValue::Kind::integer)
        return SymValue::of_bool(argv[0].integer == 0 ? r.integer == 0
                                                      : r.integer % argv[0].integer == 0);
    }
    if (auto v = ctx.method(body, recv, name, argv)) return *v;
    SymValue r = eval(recv, depth + 1);
    std::string call_text = operand(r, true) + "." + name + "(";
    for (std::size_t i = 0; i < argv.size(); ++i)
      call_text += (i ? ", " : "") + operand(argv[i], false);
    call_text += ")";
    return SymValue::symbolic(std::move(call_text),
                              r.concrete() ? "method `" + name + "` not evaluated" : r.reason);
  }

  SymValue eval(NodeId n, int depth) {
    if (n == kNone) return SymValue::symbolic("", "missing expression");
    if (depth > kMaxDepth) return unknown(n, "expression nested too deeply");
    const rust::Node& node = body[n];
    std::string_view t = node.syntax;
    if (t == "integer_literal" || t == "float_literal" || t == "boolean_literal" ||
        t == "string_literal" || t == "raw_string_literal") {
      if (auto v = parse_literal(t, body.source(n))) return *v;
      return unknown(n, "unparsed literal");
    }
    if (t == "parenthesized_expression" || t == "reference_expression" || t == "try_expression")
      return eval(node.a, depth + 1);
    if (t == "identifier") {
      std::string name = text(n);
      if (name == "None") return SymValue::none();
      if (auto v = ctx.lookup(name)) return *v;
      return unknown(n, "`" + name + "` is not bound");
    }
    if (t == "field_expression") {
      if (node.a == kNone || node.str.empty()) return unknown(n, "incomplete field");
      if (auto v = ctx.field(body, node.a, node.str)) return *v;
      return unknown(n, "`" + text(n) + "` is not bound");
    }
    if (t == "binary_expression") return binary(n, depth);
    if (t == "unary_expression") {
      std::string op(node.str);
      SymValue v = eval(node.a, depth + 1);
      if (op == "*" && v.concrete()) return v;  // `*hidden_size` of a `&usize`: the number
      if (!v.concrete()) return unknown(n, v.reason);
      if (op == "-" && v.kind == SymValue::Kind::integer) return SymValue::of_int(-v.integer);
      if (op == "-" && v.kind == SymValue::Kind::real) return SymValue::of_real(-v.real);
      if (op == "!" && v.kind == SymValue::Kind::boolean) return SymValue::of_bool(!v.boolean);
      return unknown(n, "unary `" + op + "` not evaluated");
    }
    if (t == "type_cast_expression") return cast(n, depth);
    if (t == "call_expression") return call(n, depth);
    if (t == "if_expression") {
      SymValue c = eval(node.a, depth + 1);
      if (c.kind != SymValue::Kind::boolean)
        return unknown(n, c.concrete() ? "non-boolean condition" : c.reason);
      if (c.boolean) return eval(node.b, depth + 1);
      if (node.c == kNone) return unknown(n, "if without else");
      return eval(node.c, depth + 1);
    }
    if (t == "block") {
      // Only a block whose single element is a tail expression is evaluated (a statement, a
      // comment or an attribute beside it makes it a block with statements).
      if (node.kids_count == 1 && !(node.flags & rust::kExtras)) {
        NodeId only = body.kid(n, 0);
        if (body[only].syntax.find("statement") == std::string_view::npos)
          return eval(only, depth + 1);
      }
      // A block with statements (`{ let a = ..; let b = ..; Some((a, b)) }`): its tail's
      // variant alone, which the statements before it cannot change.
      if (node.kids_count > 0 && !(node.flags & rust::kTrailingExtras)) {
        NodeId tail = body.kid(n, node.kids_count - 1);
        const rust::Node& tl = body[tail];
        if (tl.kind == Kind::Path && tl.is_identifier() && body.source(tail) == "None")
          return SymValue::none();
        if (tl.kind == Kind::Call && tl.text.empty() && tl.a != kNone &&
            body[tl.a].is_identifier() && body.source(tl.a) == "Some" && tl.kids_count == 1)
          return SymValue::symbolic("Some(..)", "block with statements");
      }
      return unknown(n, "block with statements");
    }
    if (t == "index_expression") {
      // `cfg.hidden_sizes[i]` with `i` known (an expanded loop's index) and in range.
      SymValue base = eval(node.a, depth + 1);
      SymValue i = eval(node.b, depth + 1);
      if (base.elements && i.kind == SymValue::Kind::integer && i.integer >= 0 &&
          static_cast<std::size_t>(i.integer) < base.elements->size())
        return (*base.elements)[static_cast<std::size_t>(i.integer)];
      return unknown(n, !base.elements ? std::string("index of an array not known")
                        : i.concrete() ? "index " + i.display() + " out of range"
                                       : i.reason);
    }
    if (t == "scoped_identifier") {
      std::string s = text(n);
      if (s == "Option::None") return SymValue::none();
      if (auto v = ctx.lookup(s)) return *v;
      return unknown(n, "`" + s + "` is not bound");
    }
    return unknown(n, std::string(t) + " not evaluated");
  }
};

}  // namespace

// `a op b` of two known values (Rust's integer and float arithmetic, comparisons, `&&`/`||`);
// a value it cannot give is symbolic as `text` with the reason.
SymValue binary_value(const std::string& op, const SymValue& a, const SymValue& b,
                      const std::string& text) {
  const auto numeric = [](const SymValue& v) {
    return v.kind == SymValue::Kind::integer || v.kind == SymValue::Kind::real;
  };
  const auto as_real = [](const SymValue& v) {
    return v.kind == SymValue::Kind::integer ? static_cast<double>(v.integer) : v.real;
  };
  if (op == "&&" || op == "||") {
    if (a.kind != SymValue::Kind::boolean || b.kind != SymValue::Kind::boolean)
      return SymValue::symbolic(text, "`" + op + "` on non-booleans");
    return SymValue::of_bool(op == "&&" ? a.boolean && b.boolean : a.boolean || b.boolean);
  }
  if (op == "==" || op == "!=") {
    bool eq;
    if (numeric(a) && numeric(b))
      eq = as_real(a) == as_real(b);
    else if (a.kind == b.kind)
      eq = a.display() == b.display();
    else
      return SymValue::symbolic(text, "comparison of different kinds");
    return SymValue::of_bool(op == "==" ? eq : !eq);
  }
  if (!numeric(a) || !numeric(b)) return SymValue::symbolic(text, "arithmetic on non-numbers");
  if (op == "<") return SymValue::of_bool(as_real(a) < as_real(b));
  if (op == "<=") return SymValue::of_bool(as_real(a) <= as_real(b));
  if (op == ">") return SymValue::of_bool(as_real(a) > as_real(b));
  if (op == ">=") return SymValue::of_bool(as_real(a) >= as_real(b));
  if (a.kind == SymValue::Kind::integer && b.kind == SymValue::Kind::integer) {
    std::int64_t x = a.integer, y = b.integer, out = 0;
    if (op == "+") {
      if (__builtin_add_overflow(x, y, &out)) return SymValue::symbolic(text, "integer overflow");
    } else if (op == "-") {
      if (__builtin_sub_overflow(x, y, &out)) return SymValue::symbolic(text, "integer overflow");
    } else if (op == "*") {
      if (__builtin_mul_overflow(x, y, &out)) return SymValue::symbolic(text, "integer overflow");
    } else if (op == "/" || op == "%") {
      if (y == 0) return SymValue::symbolic(text, "division by zero");
      if (x == std::numeric_limits<std::int64_t>::min() && y == -1)
        return SymValue::symbolic(text, "integer overflow");
      out = op == "/" ? x / y : x % y;
    } else if (op == "<<" || op == ">>") {
      if (y < 0 || y > 62) return SymValue::symbolic(text, "shift out of range");
      out = op == "<<" ? (x << y) : (x >> y);
    } else if (op == "&") {
      out = x & y;
    } else if (op == "|") {
      out = x | y;
    } else {
      return SymValue::symbolic(text, "operator `" + op + "` not evaluated");
    }
    return SymValue::of_int(out);
  }
  double x = as_real(a), y = as_real(b);
  if (op == "+") return SymValue::of_real(x + y);
  if (op == "-") return SymValue::of_real(x - y);
  if (op == "*") return SymValue::of_real(x * y);
  if (op == "/") return SymValue::of_real(x / y);
  return SymValue::symbolic(text, "operator `" + op + "` not evaluated on floats");
}

SymValue evaluate(const rust::Body& body, rust::NodeId expr, EvalContext& ctx) {
  Evaluator e{body, ctx};
  return e.eval(expr, 0);
}

}  // namespace cg::analysis
