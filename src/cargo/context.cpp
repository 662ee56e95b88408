#include "cargo/context.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

#include "cargo/lockfile.hpp"
#include "util/error.hpp"
#include "util/read_ledger.hpp"

namespace cg::cargo {

namespace fs = std::filesystem;

namespace {

std::string where_of(const fs::path& manifest, const toml::source_region& src) {
  std::string w = manifest.filename().string();
  if (src.begin.line > 0) w += ":" + std::to_string(src.begin.line);
  return w;
}

toml::table parse_manifest(const fs::path& manifest) {
  std::error_code ec;
  if (!fs::is_regular_file(manifest, ec))
    throw InputError(manifest.string(), "no Cargo.toml here (expected a Cargo package)");
  // Real manifests are kilobytes; a runaway file is refused instead of parsed into memory.
  constexpr std::uintmax_t kMaxManifestBytes = std::uintmax_t{4} << 20;
  if (auto size = fs::file_size(manifest, ec); !ec && size > kMaxManifestBytes)
    throw InputError(manifest.string(), "Cargo.toml is " + std::to_string(size) +
                                            " bytes; manifests over 4 MiB are refused");
  try {
    note_input(manifest);
    return toml::parse_file(manifest.string());
  } catch (const toml::parse_error& e) {
    throw InputError(where_of(manifest, e.source()),
                     "malformed Cargo.toml: " + std::string(e.description()));
  }
}

template <typename View>
std::string str_or(const View& v, std::string fallback = {}) {
  if (auto s = v.template value<std::string>()) return *s;
  return fallback;
}

template <typename View>
bool is_inherited(const View& v) {
  const toml::table* t = v.as_table();
  return t != nullptr && (*t)["workspace"].value_or(false);
}

void split_features(const std::vector<std::string>& in, std::vector<std::string>& out) {
  for (const auto& item : in) {
    std::string cur;
    for (char c : item) {
      if (c == ',' || c == ' ') {
        if (!cur.empty()) out.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    if (!cur.empty()) out.push_back(cur);
  }
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i)
    s += (i ? sep : "") + v[i];
  return s;
}

// The nearest ancestor manifest that declares `[workspace]` (the package's own included).
std::optional<fs::path> find_workspace_root(const fs::path& package_dir) {
  for (fs::path dir = package_dir; !dir.empty(); dir = dir.parent_path()) {
    fs::path m = dir / "Cargo.toml";
    std::error_code ec;
    if (fs::is_regular_file(m, ec)) {
      try {
        note_input(m);
        auto t = toml::parse_file(m.string());
        if (t.contains("workspace")) return dir;
      } catch (const toml::parse_error&) {
        // A broken unrelated manifest above us is not our input; keep walking.
      }
    }
    if (dir == dir.root_path()) break;
  }
  return std::nullopt;
}

bool glob_match(const char* p, const char* s) {
  for (; *p; ++p, ++s) {
    if (*p == '*') {
      for (;; ++s) {
        if (glob_match(p + 1, s)) return true;
        if (!*s) return false;
      }
    }
    if (!*s || (*p != '?' && *p != *s)) return false;
  }
  return !*s;
}

std::vector<Target> discover_targets(const toml::table& m, const fs::path& dir,
                                     const std::string& package) {
  std::vector<Target> out;
  std::set<std::string> explicit_paths;
  auto exists = [&](const std::string& rel) {
    std::error_code ec;
    return fs::is_regular_file(dir / rel, ec);
  };
  std::string lib_name = CargoContext::crate_name(package);
  if (const toml::table* lib = m["lib"].as_table()) {
    std::string path = str_or((*lib)["path"], "src/lib.rs");
    out.push_back({str_or((*lib)["name"], lib_name), "lib", path});
    explicit_paths.insert(path);
  } else if (exists("src/lib.rs")) {
    out.push_back({lib_name, "lib", "src/lib.rs"});
  }
  struct Kind {
    const char* key;
    const char* kind;
    const char* dir;
    const char* auto_key;
  };
  for (Kind k : {Kind{"bin", "bin", "src/bin", "autobins"},
                 Kind{"example", "example", "examples", "autoexamples"},
                 Kind{"test", "test", "tests", "autotests"},
                 Kind{"bench", "bench", "benches", "autobenches"}}) {
    std::set<std::string> names;
    if (const toml::array* arr = m[k.key].as_array()) {
      for (const auto& n : *arr) {
        const toml::table* t = n.as_table();
        if (t == nullptr) continue;
        std::string name = str_or((*t)["name"]);
        std::string path = str_or((*t)["path"]);
        if (path.empty()) {
          if (std::string(k.kind) == "bin" && name == package)
            path = "src/main.rs";
          else
            path = std::string(k.dir) + "/" + name + ".rs";
        }
        out.push_back({name, k.kind, path});
        names.insert(name);
        explicit_paths.insert(path);
      }
    }
    bool autodiscover = m["package"][k.auto_key].value_or(true);
    if (!autodiscover) continue;
    if (std::string(k.kind) == "bin" && exists("src/main.rs") && !names.count(package) &&
        !explicit_paths.count("src/main.rs"))
      out.push_back({package, "bin", "src/main.rs"});
    std::error_code ec;
    if (!fs::is_directory(dir / k.dir, ec)) continue;
    std::vector<fs::path> entries;
    for (const auto& e : fs::directory_iterator(dir / k.dir, ec))
      entries.push_back(e.path());
    std::sort(entries.begin(), entries.end());
    for (const auto& p : entries) {
      std::string name, rel;
      if (p.extension() == ".rs" && fs::is_regular_file(p, ec)) {
        name = p.stem().string();
        rel = std::string(k.dir) + "/" + p.filename().string();
      } else if (fs::is_regular_file(p / "main.rs", ec)) {
        name = p.filename().string();
        rel = std::string(k.dir) + "/" + name + "/main.rs";
      } else {
        continue;
      }
      if (names.count(name) || explicit_paths.count(rel)) continue;
      out.push_back({name, k.kind, rel});
    }
  }
  std::sort(out.begin(), out.end(), [](const Target& a, const Target& b) {
    return std::tie(a.name, a.kind, a.src_path) < std::tie(b.name, b.kind, b.src_path);
  });
  return out;
}

// Locked versions by package name, sorted, deduplicated. A git source (maybe a fork) is not the
// release its version names: `0.9.1+git`. A broken or missing lock gives none: versions then fall
// back to manifest requirements (only exactness is lost).
std::map<std::string, std::vector<std::string>> locked_versions(const Lockfile& lock) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& p : lock.packages)
    out[p.name].push_back(p.version + (p.source.rfind("git+", 0) == 0 ? "+git" : ""));
  for (auto& [k, v] : out) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  return out;
}

}  // namespace

std::string CargoContext::crate_name(const std::string& pkg) {
  std::string s = pkg;
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

std::string CargoContext::package_for_alias(const std::string& ident) const {
  for (const auto& d : dependencies)
    if (d.alias == ident) return d.package;
  return {};
}

std::vector<std::string> host_default_cfgs() {
  return {"debug_assertions",
          "panic=\"unwind\"",
          "target_abi=\"\"",
          "target_arch=\"x86_64\"",
          "target_endian=\"little\"",
          "target_env=\"gnu\"",
          "target_family=\"unix\"",
          "target_feature=\"fxsr\"",
          "target_feature=\"sse\"",
          "target_feature=\"sse2\"",
          "target_has_atomic=\"16\"",
          "target_has_atomic=\"32\"",
          "target_has_atomic=\"64\"",
          "target_has_atomic=\"8\"",
          "target_has_atomic=\"ptr\"",
          "target_os=\"linux\"",
          "target_pointer_width=\"64\"",
          "target_vendor=\"unknown\"",
          "unix"};
}

std::vector<std::string> rustc_cfgs(const std::string& target_triple, int timeout_ms) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return {};
  }
  if (pid == 0) {
    dup2(fds[1], 1);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, 2);
    close(fds[0]);
    close(fds[1]);
    std::vector<std::string> args = {"rustc", "--print", "cfg"};
    if (!target_triple.empty()) {
      args.push_back("--target");
      args.push_back(target_triple);
    }
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    execvp("rustc", argv.data());
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool timed_out = false;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left));
    if (r <= 0) {
      timed_out = r == 0;
      if (r < 0 && errno == EINTR) continue;
      break;
    }
    char buf[4096];
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (timed_out || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return {};
  std::vector<std::string> lines;
  std::string cur;
  for (char c : out) {
    if (c == '\n') {
      if (!cur.empty()) lines.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) lines.push_back(cur);
  return lines;
}

std::vector<std::string> workspace_members(const fs::path& workspace_root) {
  fs::path manifest = workspace_root / "Cargo.toml";
  toml::table t = parse_manifest(manifest);
  std::vector<std::string> out;
  std::set<std::string> excluded;
  if (const toml::array* ex = t["workspace"]["exclude"].as_array())
    for (const auto& n : *ex)
      if (auto s = n.value<std::string>()) excluded.insert(*s);
  if (const toml::array* members = t["workspace"]["members"].as_array()) {
    for (const auto& n : *members) {
      auto pat = n.value<std::string>();
      if (!pat) continue;
      if (pat->find_first_of("*?") == std::string::npos) {
        out.push_back(*pat);
        continue;
      }
      // Globs: expand one path component at a time (Cargo uses the `glob` crate semantics).
      std::vector<std::string> parts;
      std::string cur;
      for (char c : *pat) {
        if (c == '/') {
          parts.push_back(cur);
          cur.clear();
        } else {
          cur += c;
        }
      }
      parts.push_back(cur);
      std::vector<std::string> found = {""};
      for (const auto& part : parts) {
        std::vector<std::string> next;
        for (const auto& base : found) {
          fs::path dir = workspace_root / base;
          std::error_code ec;
          if (part.find_first_of("*?") == std::string::npos) {
            if (fs::exists(dir / part, ec)) next.push_back(base.empty() ? part : base + "/" + part);
            continue;
          }
          for (const auto& e : fs::directory_iterator(dir, ec)) {
            std::string name = e.path().filename().string();
            if (e.is_directory(ec) && glob_match(part.c_str(), name.c_str()))
              next.push_back(base.empty() ? name : base + "/" + name);
          }
        }
        found = std::move(next);
      }
      for (auto& f : found) {
        std::error_code ec;
        if (fs::is_regular_file(workspace_root / f / "Cargo.toml", ec)) out.push_back(f);
      }
    }
  }
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const std::string& m) { return excluded.count(m) > 0; }),
            out.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string compute_build_id(const CargoContext& ctx) {
  std::string s = "candle-graph/build/1";
  s += '\0';
  for (const std::string* part : {&ctx.package, &ctx.version, &ctx.selected.name}) {
    s += *part;
    s += '\0';
  }
  std::vector<std::string> feats = ctx.features, cfgs = ctx.cfgs, candles;
  std::sort(feats.begin(), feats.end());
  std::sort(cfgs.begin(), cfgs.end());
  for (const auto& c : ctx.candle_versions)
    candles.push_back(c.package + "@" + c.version);
  std::sort(candles.begin(), candles.end());
  for (const auto& f : feats)
    s += "feature=" + f + '\0';
  for (const auto& c : cfgs)
    s += "cfg=" + c + '\0';
  for (const auto& c : candles)
    s += "candle=" + c + '\0';
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return std::string("candle-graph/build/1:") + hex;
}

CargoContext load_cargo_context(const fs::path& path, const Selection& selection) {
  std::error_code ec;
  fs::path manifest = fs::is_directory(path, ec) ? path / "Cargo.toml" : path;
  if (!fs::is_regular_file(manifest, ec))
    throw InputError(manifest.string(), "no Cargo.toml here (expected a Cargo package)");
  manifest = fs::canonical(manifest);
  toml::table m = parse_manifest(manifest);
  CargoContext ctx;
  ctx.manifest_path = manifest;
  ctx.package_dir = manifest.parent_path();

  const toml::table* pkg = m["package"].as_table();
  if (pkg == nullptr) {
    if (m.contains("workspace")) {
      auto members = workspace_members(ctx.package_dir);
      throw InputError(manifest.string(),
                       "virtual workspace: pass one of its members: " + join(members, ", "));
    }
    throw InputError(manifest.string(), "expected a [package] table");
  }

  auto ws_root = find_workspace_root(ctx.package_dir);
  ctx.workspace_root = ws_root.value_or(ctx.package_dir);
  toml::table ws;
  if (ws_root && *ws_root != ctx.package_dir)
    ws = parse_manifest(*ws_root / "Cargo.toml");
  else if (ws_root)
    ws = m;

  auto inherited = [&](const char* key) -> std::string {
    auto v = (*pkg)[key];
    if (is_inherited(v)) {
      auto w = ws["workspace"]["package"][key];
      if (!w)
        throw InputError(where_of(manifest, v.node()->source()),
                         std::string("`") + key +
                             ".workspace = true` but the workspace has no "
                             "[workspace.package] " +
                             key);
      return str_or(w);
    }
    return str_or(v);
  };
  ctx.package = str_or((*pkg)["name"]);
  if (ctx.package.empty())
    throw InputError(where_of(manifest, pkg->source()), "[package] has no `name`");
  ctx.version = inherited("version");

  // Dependencies (all tables: normal, dev, build, target-specific) with renames and inheritance.
  std::map<std::string, Dependency> deps;
  auto read_deps = [&](const toml::table* t) {
    if (t == nullptr) return;
    for (const auto& [k, v] : *t) {
      Dependency d;
      std::string key(k.str());
      d.package = key;
      if (auto s = v.value<std::string>()) {
        d.requirement = *s;
      } else if (const toml::table* dt = v.as_table()) {
        const toml::table* src = dt;
        if ((*dt)["workspace"].value_or(false)) {
          const toml::node* w = ws["workspace"]["dependencies"][key].node();
          if (w == nullptr)
            throw InputError(where_of(manifest, v.source()),
                             "dependency `" + key +
                                 "` has `workspace = true` but [workspace.dependencies] has no `" +
                                 key + "`");
          if (auto ws_s = w->value<std::string>()) d.requirement = *ws_s;
          src = w->as_table() != nullptr ? w->as_table() : dt;
          if (src != dt) d.requirement = str_or((*src)["version"]);
          if (auto p = (*src)["package"].value<std::string>()) d.package = *p;
          if (auto p = (*src)["path"].value<std::string>(); p && ws_root)
            d.path = (*ws_root / *p).lexically_normal().string();
        } else {
          d.requirement = str_or((*dt)["version"], str_or((*dt)["path"]));
          if (auto p = (*dt)["path"].value<std::string>())
            d.path = (ctx.package_dir / *p).lexically_normal().string();
        }
        if (auto p = (*dt)["package"].value<std::string>()) d.package = *p;
        d.optional = (*dt)["optional"].value_or(false);
      }
      d.alias = CargoContext::crate_name(key);
      auto [it, inserted] = deps.emplace(d.alias, d);
      if (!inserted) it->second.optional = it->second.optional && d.optional;
    }
  };
  for (const char* key : {"dependencies", "dev-dependencies", "build-dependencies"})
    read_deps(m[key].as_table());
  if (const toml::table* tt = m["target"].as_table())
    for (const auto& [k, v] : *tt)
      if (const toml::table* t = v.as_table())
        for (const char* key : {"dependencies", "dev-dependencies", "build-dependencies"})
          read_deps((*t)[key].as_table());

  // Features: declared ones plus implicit features of optional dependencies never named `dep:x`.
  std::map<std::string, std::vector<std::string>> declared;
  if (const toml::table* ft = m["features"].as_table())
    for (const auto& [k, v] : *ft) {
      auto& list = declared[std::string(k.str())];
      if (const toml::array* a = v.as_array())
        for (const auto& n : *a)
          if (auto s = n.value<std::string>()) list.push_back(*s);
    }
  std::set<std::string> dep_colon;
  for (const auto& [f, list] : declared)
    for (const auto& e : list)
      if (e.rfind("dep:", 0) == 0) dep_colon.insert(e.substr(4));
  std::map<std::string, std::vector<std::string>> features = declared;
  for (const auto& [alias, d] : deps) {
    (void)alias;
    std::string key = d.alias;
    for (const auto& [k, v] :
         m["dependencies"].as_table() ? *m["dependencies"].as_table() : toml::table{}) {
      (void)v;
      if (CargoContext::crate_name(std::string(k.str())) == d.alias) key = std::string(k.str());
    }
    if (d.optional && !dep_colon.count(key) && !features.count(key)) features[key] = {"dep:" + key};
  }
  for (const auto& [f, list] : features)
    ctx.all_feature_names.push_back(f);

  std::vector<std::string> requested;
  split_features(selection.features, requested);
  std::vector<std::string> work;
  for (const auto& f : requested) {
    std::string name = f;
    auto slash = name.find('/');
    if (slash != std::string::npos) {
      // `dep/feature` on the command line enables the dependency; the feature is theirs.
      work.push_back(name);
      continue;
    }
    if (!features.count(name))
      throw InputError("", "unknown feature `" + name + "` for package `" + ctx.package +
                               "`; valid features: " +
                               (ctx.all_feature_names.empty() ? std::string("(none)")
                                                              : join(ctx.all_feature_names, ", ")));
    work.push_back(name);
  }
  if (selection.all_features)
    for (const auto& f : ctx.all_feature_names)
      work.push_back(f);
  if (!selection.no_default_features && features.count("default")) work.push_back("default");

  std::set<std::string> active, active_deps;
  while (!work.empty()) {
    std::string f = work.back();
    work.pop_back();
    if (f.rfind("dep:", 0) == 0) {
      active_deps.insert(f.substr(4));
      continue;
    }
    auto slash = f.find('/');
    if (slash != std::string::npos) {
      std::string dep = f.substr(0, slash);
      bool weak = !dep.empty() && dep.back() == '?';
      if (weak) continue;  // `dep?/f` enables f only if dep is enabled elsewhere
      if (features.count(dep) && !declared.count(dep))
        work.push_back(dep);  // the implicit feature of an optional dependency
      else
        active_deps.insert(dep);
      continue;
    }
    if (!active.insert(f).second) continue;
    auto it = features.find(f);
    if (it == features.end()) continue;
    for (const auto& e : it->second)
      work.push_back(e);
  }
  ctx.features.assign(active.begin(), active.end());
  for (auto& [alias, d] : deps) {
    if (!d.optional) continue;
    bool on = false;
    for (const auto& name : active_deps)
      if (CargoContext::crate_name(name) == alias) on = true;
    d.active = on;
  }
  for (auto& [alias, d] : deps)
    ctx.dependencies.push_back(d);

  // Targets and the selected one.
  ctx.targets = discover_targets(m, ctx.package_dir, ctx.package);
  const Target* sel = nullptr;
  if (!selection.cargo_target.empty()) {
    for (const auto& t : ctx.targets)
      if (t.name == selection.cargo_target && sel == nullptr) sel = &t;
    if (sel == nullptr) {
      std::vector<std::string> names;
      for (const auto& t : ctx.targets)
        names.push_back(t.name + " (" + t.kind + ")");
      throw InputError("", "unknown cargo target `" + selection.cargo_target +
                               "`; available targets: " +
                               (names.empty() ? std::string("(none)") : join(names, ", ")));
    }
  } else {
    for (const auto& t : ctx.targets)
      if (t.kind == "lib") sel = &t;
    if (sel == nullptr)
      for (const auto& t : ctx.targets)
        if (t.kind == "bin" && sel == nullptr) sel = &t;
    if (sel == nullptr)
      throw InputError(manifest.string(), "package `" + ctx.package +
                                              "` has no lib or bin target (expected src/lib.rs "
                                              "or src/main.rs)");
  }
  ctx.selected = *sel;
  ctx.root_file = ctx.package_dir / ctx.selected.src_path;
  if (fs::exists(ctx.root_file, ec)) ctx.root_file = fs::canonical(ctx.root_file);

  // Candle versions: every other `candle-*` package this one depends on.
  const Lockfile lockfile = read_lockfile(ctx.workspace_root, ctx.package_dir);
  if (!lockfile.broken.empty()) {
    std::error_code rec;
    fs::path rel = fs::relative(lockfile.broken, ctx.package_dir, rec);
    ctx.lock_problem = (rec || rel.empty() ? lockfile.broken.filename() : rel).generic_string() +
                       ": " + lockfile.error;
  }
  auto lock = locked_versions(lockfile);
  // The analysed package's own lock entry: with several versions of a package locked, it names
  // the one this package depends on ("candle-nn 0.9.1").
  const LockPackage* own = nullptr;
  for (const auto& p : lockfile.packages)
    if (p.name == ctx.package && p.version == ctx.version && p.source.empty()) own = &p;
  for (const auto& d : ctx.dependencies) {
    if (d.package.rfind("candle-", 0) != 0 || d.package == ctx.package) continue;
    CandleVersion v{d.package, d.requirement, false};
    auto it = lock.find(d.package);
    if (it != lock.end()) {
      v.version = join(it->second, ",");
      v.exact = true;
      std::string mine = own != nullptr ? own->dependency_version(d.package) : "";
      if (it->second.size() > 1 && !mine.empty()) {
        for (const auto& locked : it->second)
          if (locked == mine || locked == mine + "+git") v.version = locked;
      }
    } else if (!d.path.empty()) {
      // A path dependency is exactly the version its own manifest declares (or inherits).
      std::error_code pec;
      fs::path dep_manifest = fs::path(d.path) / "Cargo.toml";
      if (fs::is_regular_file(dep_manifest, pec)) {
        try {
          toml::table dm = parse_manifest(dep_manifest);
          auto ver = dm["package"]["version"];
          std::string s;
          if (is_inherited(ver))
            s = str_or(ws["workspace"]["package"]["version"]);
          else
            s = str_or(ver);
          if (!s.empty()) {
            v.version = s;
            v.exact = true;
          }
        } catch (const InputError&) {
          // An unreadable dependency manifest only costs exactness.
        }
      }
    }
    ctx.candle_versions.push_back(v);
  }
  std::sort(ctx.candle_versions.begin(), ctx.candle_versions.end(),
            [](const CandleVersion& a, const CandleVersion& b) { return a.package < b.package; });
  ctx.candle_versions.erase(std::unique(ctx.candle_versions.begin(), ctx.candle_versions.end(),
                                        [](const CandleVersion& a, const CandleVersion& b) {
                                          return a.package == b.package;
                                        }),
                            ctx.candle_versions.end());

  ctx.cfgs = rustc_cfgs(selection.target_triple);
  ctx.cfgs_from_rustc = !ctx.cfgs.empty();
  if (ctx.cfgs.empty()) ctx.cfgs = host_default_cfgs();
  for (const auto& f : ctx.features)
    ctx.cfgs.push_back("feature=\"" + f + "\"");
  std::sort(ctx.cfgs.begin(), ctx.cfgs.end());
  ctx.cfgs.erase(std::unique(ctx.cfgs.begin(), ctx.cfgs.end()), ctx.cfgs.end());

  ctx.build_id = compute_build_id(ctx);
  ctx.analysis_id = "analysis:" + ctx.build_id;
  return ctx;
}

}  // namespace cg::cargo
