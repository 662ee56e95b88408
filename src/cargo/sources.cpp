#include "cargo/sources.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <system_error>

#include "cargo/lockfile.hpp"
#include "util/read_ledger.hpp"

namespace cg::cargo {
namespace fs = std::filesystem;

std::string_view to_string(SourceOrigin o) {
  switch (o) {
    case SourceOrigin::workspace:
      return "workspace";
    case SourceOrigin::path:
      return "path";
    case SourceOrigin::vendor:
      return "vendor";
    case SourceOrigin::registry:
      return "registry";
    case SourceOrigin::git:
      return "git";
    case SourceOrigin::missing:
      return "missing";
  }
  return "missing";
}

namespace {

constexpr std::uintmax_t kMaxTomlBytes = std::uintmax_t{4} << 20;

struct Manifest {
  std::string name, version;
  std::vector<std::pair<std::string, std::string>> deps;  // (package, path or "")
  std::string error;                                      // set when unreadable
};

std::optional<toml::table> parse_toml(const fs::path& file, std::string& error) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    error = "no " + file.filename().string();
    return std::nullopt;
  }
  if (auto size = fs::file_size(file, ec); !ec && size > kMaxTomlBytes) {
    error = file.filename().string() + " over 4 MiB";
    return std::nullopt;
  }
  try {
    note_input(file);
    return toml::parse_file(file.string());
  } catch (const toml::parse_error& e) {
    error = "malformed " + file.filename().string() + " (line " +
            std::to_string(e.source().begin.line) + "): " + std::string(e.description());
    return std::nullopt;
  }
}

template <typename View>
std::string str(const View& v) {
  if (auto s = v.template value<std::string>()) return *s;
  return {};
}

Manifest read_manifest(const fs::path& dir) {
  Manifest m;
  auto t = parse_toml(dir / "Cargo.toml", m.error);
  if (!t) return m;
  const toml::table& tab = *t;
  m.name = str(tab["package"]["name"]);
  m.version = str(tab["package"]["version"]);
  for (const char* section : {"dependencies", "build-dependencies"}) {
    const toml::table* deps = tab[section].as_table();
    if (deps == nullptr) continue;
    for (const auto& [key, value] : *deps) {
      std::string pkg(key.str()), path;
      if (const toml::table* d = value.as_table()) {
        if (auto p = (*d)["package"].value<std::string>()) pkg = *p;
        if (auto p = (*d)["path"].value<std::string>()) path = *p;
      }
      m.deps.emplace_back(pkg, path);
    }
  }
  return m;
}

// Without a Cargo.lock, the git source of each dependency of the manifest in `dir` that has
// one, written as the lock would (`git+URL#REV`, `git+URL` when it pins no revision: a branch, a
// tag or the default branch), by package name. `workspace = true` entries take the workspace's
// `[workspace.dependencies]` entry.
std::map<std::string, std::string> manifest_git_sources(const fs::path& dir,
                                                        const fs::path& workspace_root) {
  std::map<std::string, std::string> out;
  std::string error;
  auto t = parse_toml(dir / "Cargo.toml", error);
  if (!t) return out;
  std::optional<toml::table> ws;
  auto entry = [&](const std::string& key, const toml::table& d) -> const toml::table* {
    if (!d["workspace"].value_or(false)) return &d;
    if (!ws) {
      std::string e2;
      ws = parse_toml(workspace_root / "Cargo.toml", e2).value_or(toml::table{});
    }
    return (*ws)["workspace"]["dependencies"][key].as_table();
  };
  auto read = [&](const toml::table* deps) {
    if (deps == nullptr) return;
    for (const auto& [key, value] : *deps) {
      const toml::table* d = value.as_table();
      if (d == nullptr) continue;
      const toml::table* src = entry(std::string(key.str()), *d);
      if (src == nullptr) continue;
      std::string url = str((*src)["git"]);
      if (url.empty()) continue;
      std::string pkg = str((*d)["package"]);
      if (pkg.empty()) pkg = str((*src)["package"]);
      if (pkg.empty()) pkg = std::string(key.str());
      std::string rev = str((*src)["rev"]);
      out[pkg] = "git+" + url + (rev.empty() ? "" : "#" + rev);
    }
  };
  const toml::table& tab = *t;
  for (const char* section : {"dependencies", "dev-dependencies", "build-dependencies"})
    read(tab[section].as_table());
  if (const toml::table* targets = tab["target"].as_table())
    for (const auto& [k, v] : *targets)
      if (const toml::table* tt = v.as_table())
        for (const char* section : {"dependencies", "dev-dependencies", "build-dependencies"})
          read((*tt)[section].as_table());
  return out;
}

bool has_manifest(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "Cargo.toml", ec);
}

// The packages reachable by path from the analysed one: workspace members and path dependencies,
// transitively. A cycle of path dependencies is walked once and reported; a path dependency with
// no Cargo.toml at its path is reported as absent, never taken for a package.
struct PathGraph {
  std::map<std::string, std::pair<fs::path, SourceOrigin>> found;  // by package name
  std::map<std::string, fs::path> absent;     // package name → the directory looked in
  std::map<std::string, std::string> cycles;  // package name → "a → b → a"
};

PathGraph path_packages(const CargoContext& ctx, std::size_t budget) {
  PathGraph out;
  struct Pending {
    fs::path dir;
    SourceOrigin origin;
    std::string name;  // the package the dependent expects there; empty for members
    fs::path from;     // the dependent's directory; empty for workspace members
  };
  std::deque<Pending> queue;
  for (const auto& m : workspace_members(ctx.workspace_root))
    queue.push_back({ctx.workspace_root / m, SourceOrigin::workspace, "", {}});
  for (const auto& d : ctx.dependencies)
    if (!d.path.empty())
      queue.push_back({fs::path(d.path), SourceOrigin::path, d.package, ctx.package_dir});
  std::map<fs::path, std::string> names{{ctx.package_dir, ctx.package}};
  std::map<fs::path, std::vector<fs::path>> edges;
  std::set<fs::path> seen{ctx.package_dir};
  while (!queue.empty() && seen.size() < budget) {
    Pending p = std::move(queue.front());
    queue.pop_front();
    std::error_code ec;
    fs::path canon = fs::weakly_canonical(p.dir, ec);
    if (ec) canon = p.dir;
    if (!p.from.empty()) edges[p.from].push_back(canon);
    if (!seen.insert(canon).second) continue;
    if (!has_manifest(canon)) {
      if (!p.name.empty()) out.absent.emplace(p.name, canon);
      continue;
    }
    Manifest m = read_manifest(canon);
    std::string name = !m.name.empty()   ? m.name
                       : !p.name.empty() ? p.name
                                         : canon.filename().string();
    names[canon] = name;
    out.found.emplace(name, std::make_pair(canon, p.origin));
    for (const auto& [pkg, path] : m.deps)
      if (!path.empty()) queue.push_back({canon / path, SourceOrigin::path, pkg, canon});
  }
  // Cycles: an iterative depth-first walk (a long chain must not exhaust the stack); a back edge
  // closes a cycle whose members are named by the first one found.
  std::map<fs::path, int> state;  // 1 on the stack, 2 done
  std::vector<std::pair<fs::path, std::size_t>> stack{{ctx.package_dir, 0}};
  state[ctx.package_dir] = 1;
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    const auto& outs = edges[node];
    if (next == outs.size()) {
      state[node] = 2;
      stack.pop_back();
      continue;
    }
    fs::path to = outs[next++];
    if (state[to] == 0) {
      state[to] = 1;
      stack.emplace_back(to, 0);
    } else if (state[to] == 1) {
      std::string chain;
      bool in = false;
      std::vector<std::string> members;
      for (const auto& [n, i] : stack) {
        in = in || n == to;
        if (!in) continue;
        members.push_back(names[n]);
        chain += names[n] + " → ";
      }
      chain += names[to];
      for (const auto& m : members)
        out.cycles.emplace(m, chain);
    }
  }
  return out;
}

// The directory `cargo vendor` filled, from `.cargo/config.toml` (or `config`) in the package
// directory or an ancestor: the `directory` of the source that crates-io is replaced with.
std::optional<fs::path> vendor_dir(const CargoContext& ctx) {
  for (fs::path dir = ctx.package_dir; !dir.empty(); dir = dir.parent_path()) {
    for (const char* name : {"config.toml", "config"}) {
      std::string error;
      auto t = parse_toml(dir / ".cargo" / name, error);
      if (!t) continue;
      std::string with = str((*t)["source"]["crates-io"]["replace-with"]);
      if (with.empty()) continue;
      std::string d = str((*t)["source"][with]["directory"]);
      if (!d.empty()) return fs::path(d).is_absolute() ? fs::path(d) : dir / d;
    }
    if (dir == dir.parent_path() || dir == ctx.workspace_root.parent_path()) break;
  }
  std::error_code ec;
  if (fs::is_directory(ctx.workspace_root / "vendor", ec)) return ctx.workspace_root / "vendor";
  return std::nullopt;
}

fs::path default_cargo_home() {
  if (const char* h = std::getenv("CARGO_HOME"); h != nullptr && *h != '\0') return h;
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0')
    return fs::path(h) / ".cargo";
  return {};
}

// Inside a git checkout (a repository, maybe a workspace), the directory of package `name`:
// the root, or a directory up to three levels down whose Cargo.toml names it.
std::optional<fs::path> package_in_checkout(const fs::path& root, const std::string& name,
                                            std::size_t budget) {
  std::deque<std::pair<fs::path, int>> queue{{root, 0}};
  std::size_t looked = 0;
  while (!queue.empty() && looked < budget) {
    auto [dir, depth] = queue.front();
    queue.pop_front();
    if (has_manifest(dir) && read_manifest(dir).name == name) return dir;
    if (depth >= 3) continue;
    std::error_code ec;
    std::vector<fs::path> subdirs;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end && looked < budget;
         it.increment(ec), ++looked) {
      std::error_code e2;
      std::string fname = it->path().filename().string();
      if (fname.empty() || fname[0] == '.' || fname == "target") continue;
      if (it->is_directory(e2) && !it->is_symlink(e2)) subdirs.push_back(it->path());
    }
    std::sort(subdirs.begin(), subdirs.end());
    for (auto& s : subdirs)
      queue.emplace_back(std::move(s), depth + 1);
  }
  return std::nullopt;
}

// `NAME-VERSION` → (NAME, VERSION): the split is at the first `-` followed by a version
// (`DIGITS.DIGITS.DIGITS…`), so `foo-2d-1.0.0` is foo-2d 1.0.0 and `candle-nn-0.9.0-alpha.1` is
// candle-nn 0.9.0-alpha.1.
std::optional<std::pair<std::string, std::string>> split_name_version(const std::string& f) {
  for (std::size_t dash = f.find('-'); dash != std::string::npos; dash = f.find('-', dash + 1)) {
    std::size_t p = dash + 1;
    int numbers = 0;
    while (numbers < 3) {
      std::size_t start = p;
      while (p < f.size() && std::isdigit(static_cast<unsigned char>(f[p])))
        ++p;
      if (p == start) break;
      ++numbers;
      if (numbers < 3) {
        if (p >= f.size() || f[p] != '.') break;
        ++p;
      }
    }
    if (numbers == 3 && dash > 0) return std::make_pair(f.substr(0, dash), f.substr(dash + 1));
  }
  return std::nullopt;
}

std::vector<long> version_key(const std::string& s) {
  std::vector<long> parts;
  std::size_t p = 0;
  while (p < s.size() && std::isdigit(static_cast<unsigned char>(s[p]))) {
    parts.push_back(std::strtol(s.c_str() + p, nullptr, 10));
    while (p < s.size() && std::isdigit(static_cast<unsigned char>(s[p])))
      ++p;
    if (p < s.size() && s[p] == '.') ++p;
  }
  return parts;
}

// One registry source directory (`registry/src/index.crates.io-…`), listed at most once and only
// when a dependency without a locked version needs the highest release on disk: a registry of
// 10,000 crates costs one listing, not one per lookup. With a lock every lookup is one stat.
struct Registry {
  fs::path dir;
  bool listed = false;
  bool cut = false;  // the listing stopped at the entry budget
  std::map<std::string, std::pair<std::string, fs::path>> highest;  // name → (version, dir)

  void list(std::size_t budget, std::size_t& entries) {
    if (listed) return;
    listed = true;
    std::error_code ec;
    std::size_t looked = 0;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (looked++ >= budget) {
        cut = true;
        break;
      }
      ++entries;
      auto nv = split_name_version(it->path().filename().string());
      if (!nv) continue;
      auto [pos, fresh] = highest.try_emplace(nv->first, nv->second, it->path());
      if (!fresh && version_key(nv->second) > version_key(pos->second.first))
        pos->second = {nv->second, it->path()};
    }
  }
};

}  // namespace

namespace {

// A path as the note shows it: `$CARGO_HOME/…` under the cargo home, relative to the workspace
// root inside it (or `../…` next to it), so the IR that carries the note is the same on every
// machine holding the same files.
struct Shown {
  fs::path home, workspace;
  std::string operator()(const fs::path& p) const {
    auto under = [&](const fs::path& root) -> std::optional<std::string> {
      if (root.empty()) return std::nullopt;
      fs::path rel = p.lexically_relative(root);
      if (rel.empty() || *rel.begin() == "..") return std::nullopt;
      return rel == "." ? std::string() : rel.generic_string();
    };
    if (auto r = under(home)) return "$CARGO_HOME" + (r->empty() ? "" : "/" + *r);
    if (auto r = under(workspace)) return r->empty() ? "." : *r;
    fs::path rel = p.lexically_relative(workspace);
    if (!rel.empty() && !workspace.empty()) return rel.generic_string();
    return p.generic_string();
  }
};

// `git+https://host/org/repo.git?branch=main#rev` → "repo".
std::string git_repo_name(const std::string& source) {
  std::string url = source.substr(0, source.find('#'));
  url = url.substr(0, url.find('?'));
  while (!url.empty() && url.back() == '/')
    url.pop_back();
  std::string name = url.substr(url.rfind('/') + 1);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, ".git") == 0)
    name.resize(name.size() - 4);
  return name;
}

}  // namespace

std::vector<DependencySource> locate_dependency_sources(const CargoContext& ctx,
                                                        const SourceOptions& opts) {
  fs::path home = opts.cargo_home.empty() ? default_cargo_home() : opts.cargo_home;
  const Shown shown{home, ctx.workspace_root};
  std::size_t entries = 0;  // directory entries listed, all listings together
  std::vector<LockPackage> lock = read_lockfile(ctx.workspace_root, ctx.package_dir).packages;
  PathGraph graph = path_packages(ctx, opts.max_entries);
  auto vendor = vendor_dir(ctx);
  // Registry source directories (`registry/src/index.crates.io-…`): a handful.
  std::vector<Registry> registries;
  {
    std::error_code ec;
    std::size_t looked = 0;
    for (fs::directory_iterator it(home / "registry" / "src", ec), end;
         !ec && it != end && looked < opts.max_entries; it.increment(ec), ++looked, ++entries) {
      Registry r;
      r.dir = it->path();
      registries.push_back(std::move(r));
    }
    std::sort(registries.begin(), registries.end(),
              [](const Registry& a, const Registry& b) { return a.dir < b.dir; });
  }
  // Git checkouts (`git/checkouts/REPO-HASH/REV`), listed once when a git dependency needs them.
  std::optional<std::vector<fs::path>> checkouts;
  auto list_checkouts = [&]() -> const std::vector<fs::path>& {
    if (!checkouts) {
      checkouts.emplace();
      std::error_code ec;
      std::size_t looked = 0;
      for (fs::directory_iterator it(home / "git" / "checkouts", ec), end;
           !ec && it != end && looked < opts.max_entries; it.increment(ec), ++looked, ++entries)
        checkouts->push_back(it->path());
      std::sort(checkouts->begin(), checkouts->end());
    }
    return *checkouts;
  };

  std::vector<DependencySource> out;
  const bool locked = !lock.empty();
  if (lock.empty()) {
    // No lock: the manifest's own dependencies, each at the highest version on disk; a git
    // dependency in a checkout of the revision its manifest pins.
    const auto git = manifest_git_sources(ctx.package_dir, ctx.workspace_root);
    for (const auto& d : ctx.dependencies) {
      LockPackage e;
      e.name = d.package;
      if (auto g = git.find(d.package); g != git.end() && d.path.empty()) e.source = g->second;
      lock.push_back(std::move(e));
    }
    for (const auto& entry : graph.found) {
      const std::string& name = entry.first;
      if (std::none_of(lock.begin(), lock.end(), [&](const auto& e) { return e.name == name; })) {
        LockPackage e;
        e.name = name;
        lock.push_back(std::move(e));
      }
    }
  }
  for (const auto& e : lock) {
    if (e.name == ctx.package && (e.version.empty() || e.version == ctx.version) &&
        e.source.empty())
      continue;
    DependencySource s;
    s.package = e.name;
    s.version = e.version;
    s.source = e.source;
    s.depends_on = e.dependency_names();
    std::string label = e.name + (e.version.empty() ? "" : " " + e.version);
    std::vector<std::string> looked_in;  // portable forms of `searched`, for the note
    auto found = [&](fs::path dir, SourceOrigin origin) {
      s.dir = std::move(dir);
      s.origin = origin;
    };
    if (e.source.empty() || e.source.rfind("path+", 0) == 0) {
      if (auto it = graph.found.find(e.name); it != graph.found.end()) {
        found(it->second.first, it->second.second);
      } else if (auto ab = graph.absent.find(e.name); ab != graph.absent.end()) {
        s.searched.push_back(ab->second.string() + " (path dependency)");
        looked_in.push_back(shown(ab->second) + " (path dependency: no Cargo.toml there)");
      } else {
        s.searched.push_back("workspace members and path dependencies of " +
                             ctx.workspace_root.string());
        looked_in.push_back("the workspace members and path dependencies");
      }
    }
    // A path dependency with no manifest at its path is not looked for elsewhere (Cargo does not).
    const bool absent_path = graph.absent.count(e.name) > 0 && e.source.empty();
    if (s.origin == SourceOrigin::missing && vendor && !absent_path) {
      for (const fs::path& dir : {*vendor / (e.name + "-" + e.version), *vendor / e.name}) {
        if (e.version.empty() && dir.filename() != e.name) continue;
        if (!has_manifest(dir)) continue;
        Manifest m = read_manifest(dir);
        if (!m.error.empty() || e.version.empty() || m.version == e.version) {
          found(dir, SourceOrigin::vendor);
          if (s.version.empty()) s.version = m.version;
          break;
        }
      }
      if (s.origin == SourceOrigin::missing) {
        fs::path dir = *vendor / (e.name + "-" + e.version);
        s.searched.push_back(dir.string() + " (vendor)");
        looked_in.push_back(shown(dir) + " (vendor)");
      }
    }
    bool git = e.source.rfind("git+", 0) == 0;
    if (s.origin == SourceOrigin::missing && !git && !absent_path &&
        (e.source.empty() || e.source.rfind("registry+", 0) == 0 ||
         e.source.rfind("sparse+", 0) == 0)) {
      for (auto& reg : registries) {
        if (e.version.empty()) {
          reg.list(opts.max_entries, entries);
          if (auto h = reg.highest.find(e.name); h != reg.highest.end()) {
            found(h->second.second, SourceOrigin::registry);
            s.version = h->second.first;
            break;
          }
        } else if (has_manifest(reg.dir / (e.name + "-" + e.version))) {
          found(reg.dir / (e.name + "-" + e.version), SourceOrigin::registry);
          break;
        }
      }
      if (s.origin == SourceOrigin::missing) {
        fs::path pattern = home / "registry" / "src" / "*" / (e.name + "-" + e.version);
        if (e.version.empty()) pattern = home / "registry" / "src" / "*" / (e.name + "-*");
        s.searched.push_back(pattern.string());
        std::string where = shown(pattern);
        for (const auto& reg : registries)
          if (reg.cut)
            where += " (listing of " + shown(reg.dir) + " stopped after " +
                     std::to_string(opts.max_entries) + " entries)";
        looked_in.push_back(where);
      }
    }
    if (s.origin == SourceOrigin::missing && git) {
      auto hash = e.source.rfind('#');
      std::string rev = hash == std::string::npos ? "" : e.source.substr(hash + 1);
      // Without a lock, a manifest that pins no revision (a branch, a tag, the default branch)
      // takes the repository's checkout when there is exactly one.
      std::vector<fs::path> only;
      if (rev.empty() && !locked) {
        std::string repo = git_repo_name(e.source);
        for (const auto& c : list_checkouts()) {
          std::string f = c.filename().string();
          if (repo.empty() || f.rfind(repo + "-", 0) != 0) continue;
          std::error_code ec;
          std::size_t looked = 0;
          for (fs::directory_iterator it(c, ec), end; !ec && it != end && looked < 8;
               it.increment(ec), ++looked, ++entries)
            only.push_back(it->path());
        }
        if (only.size() == 1)
          if (auto p = package_in_checkout(only[0], e.name, opts.max_entries))
            found(*p, SourceOrigin::git);
      }
      if (rev.empty() && !locked) {
        if (s.origin == SourceOrigin::missing) {
          std::string where = shown(home / "git" / "checkouts" / "*") +
                              " (the manifest pins no revision of `" +
                              e.source.substr(4, e.source.find('#') - 4) + "`; checkouts of it: ";
          std::sort(only.begin(), only.end());
          for (std::size_t i = 0; i < only.size(); ++i)
            where += (i ? ", " : "") + only[i].filename().string();
          where += only.empty() ? "none)" : only.size() == 1 ? " without the package)" : ")";
          looked_in.push_back(where);
          s.searched.push_back((home / "git" / "checkouts" / "*").string());
        }
      } else if (rev.empty()) {
        // Cargo always pins a git dependency to a commit; a lock without one was edited by hand
        // or is damaged: there is no checkout to look for.
        looked_in.push_back("nothing: the git source in Cargo.lock names no revision (`" +
                            e.source + "`)");
        s.searched.push_back("(no revision in Cargo.lock)");
      } else {
        std::string short_rev = rev.substr(0, 7);
        for (const auto& c : list_checkouts()) {
          for (const fs::path& dir : {c / short_rev, c / rev}) {
            std::error_code e2;
            if (!fs::is_directory(dir, e2)) continue;
            if (auto p = package_in_checkout(dir, e.name, opts.max_entries)) {
              found(*p, SourceOrigin::git);
              break;
            }
          }
          if (s.origin != SourceOrigin::missing) break;
        }
        if (s.origin == SourceOrigin::missing) {
          fs::path pattern = home / "git" / "checkouts" / "*" / short_rev;
          s.searched.push_back(pattern.string());
          std::string where = shown(pattern);
          // Checkouts of the same repository at other revisions: the lock moved on, or the
          // checkout of this revision was deleted.
          std::string repo = git_repo_name(e.source);
          std::vector<std::string> others;
          for (const auto& c : list_checkouts()) {
            std::string f = c.filename().string();
            if (repo.empty() || f.rfind(repo + "-", 0) != 0) continue;
            std::error_code ec;
            std::size_t looked = 0;
            for (fs::directory_iterator it(c, ec), end; !ec && it != end && looked < 8;
                 it.increment(ec), ++looked, ++entries)
              others.push_back(it->path().filename().string());
          }
          std::sort(others.begin(), others.end());
          if (!others.empty()) {
            where += " (checkouts of " + repo + " exist only at revision";
            where += others.size() > 1 ? "s " : " ";
            for (std::size_t i = 0; i < others.size(); ++i)
              where += (i ? ", " : "") + others[i];
            where += ")";
          }
          looked_in.push_back(where);
        }
      }
    }
    if (s.origin != SourceOrigin::missing) {
      Manifest m = read_manifest(s.dir);
      if (!m.error.empty()) {
        s.problem = (s.dir / "Cargo.toml").string() + ": " + m.error;
        s.note = label + " (" + std::string(to_string(s.origin)) + ") at " + shown(s.dir) + ": " +
                 m.error + "; its manifest is not used";
      }
      if (s.depends_on.empty())
        for (const auto& [pkg, path] : m.deps)
          s.depends_on.push_back(pkg);
    } else {
      s.note = label + " is not on disk; looked in ";
      for (std::size_t i = 0; i < looked_in.size(); ++i)
        s.note += (i ? ", then " : "") + looked_in[i];
    }
    if (auto c = graph.cycles.find(e.name); c != graph.cycles.end() && e.source.empty()) {
      std::string cyc = label + " at " + shown(s.dir) + " is in a cycle of path dependencies (" +
                        c->second + "), which Cargo rejects; each package was read once";
      s.note = s.note.empty() ? cyc : s.note + "; " + cyc;
    }
    if (!s.dir.empty()) s.shown_dir = shown(s.dir);
    out.push_back(std::move(s));
  }
  // Several versions of candle-core or candle-nn in one lock: the Candle release the analysis
  // audits against is ambiguous unless the analysed package's own lock entry names one.
  std::map<std::string, std::vector<std::size_t>> versions;
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i].package == "candle-core" || out[i].package == "candle-nn")
      versions[out[i].package].push_back(i);
  for (const auto& [pkg, idx] : versions) {
    if (idx.size() < 2) continue;
    std::vector<std::string> listed;
    for (std::size_t i : idx)
      listed.push_back(out[i].version + " at " +
                       (out[i].dir.empty() ? "(not on disk)" : shown(out[i].dir)));
    std::sort(listed.begin(), listed.end());
    std::string all;
    for (std::size_t k = 0; k < listed.size(); ++k)
      all += (k ? ", " : "") + listed[k];
    for (std::size_t i : idx) {
      std::string n = "Cargo.lock holds " + std::to_string(idx.size()) + " versions of " + pkg +
                      " (" + all + ")";
      out[i].note = out[i].note.empty() ? n : out[i].note + "; " + n;
    }
  }
  if (opts.entries_read != nullptr) *opts.entries_read = entries;
  // candle-core and candle-nn reach themselves; a package reaches them through its dependencies.
  std::map<std::string, std::vector<std::size_t>> by_name;
  for (std::size_t i = 0; i < out.size(); ++i) {
    by_name[out[i].package].push_back(i);
    out[i].reaches_candle = out[i].package == "candle-core" || out[i].package == "candle-nn";
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& s : out) {
      if (s.reaches_candle) continue;
      for (const auto& d : s.depends_on) {
        bool reaches = d == "candle-core" || d == "candle-nn";
        if (auto it = by_name.find(d); it != by_name.end())
          for (std::size_t j : it->second)
            reaches = reaches || out[j].reaches_candle;
        if (reaches) {
          s.reaches_candle = changed = true;
          break;
        }
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const DependencySource& a, const DependencySource& b) {
    return std::tie(a.package, a.version, a.source) < std::tie(b.package, b.version, b.source);
  });
  return out;
}

std::vector<std::string> dependency_notes(const std::vector<DependencySource>& sources) {
  std::vector<std::string> out;
  std::vector<const DependencySource*> quiet;
  for (const auto& d : sources) {
    if (d.note.empty()) continue;
    bool registry = d.source.rfind("registry+", 0) == 0 || d.source.rfind("sparse+", 0) == 0;
    if (!d.reaches_candle && registry && d.origin == SourceOrigin::missing)
      quiet.push_back(&d);
    else
      out.push_back(d.note);
  }
  if (quiet.size() == 1) out.push_back(quiet[0]->note);
  if (quiet.size() > 1) {
    std::string n = std::to_string(quiet.size()) +
                    " registry dependencies that do not reach candle are not on disk (";
    for (std::size_t i = 0; i < quiet.size() && i < 5; ++i)
      n += (i ? ", " : "") + quiet[i]->package + " " + quiet[i]->version;
    if (quiet.size() > 5) n += ", …";
    n += "); looked in $CARGO_HOME/registry/src/*/NAME-VERSION";
    out.push_back(n);
  }
  return out;
}

}  // namespace cg::cargo

namespace cg::cargo {

PackageManifest read_package_manifest(const fs::path& package_dir) {
  PackageManifest m;
  auto t = parse_toml(package_dir / "Cargo.toml", m.error);
  if (!t) return m;
  const toml::table& tab = *t;
  m.name = str(tab["package"]["name"]);
  m.version = str(tab["package"]["version"]);
  if (auto p = tab["lib"]["path"].value<std::string>()) m.lib_path = *p;
  m.lib_name = CargoContext::crate_name(m.name);
  if (auto n = tab["lib"]["name"].value<std::string>(); n && !n->empty())
    m.lib_name = CargoContext::crate_name(*n);
  if (const toml::table* f = tab["features"].as_table())
    for (const auto& [key, value] : *f) {
      auto& list = m.features[std::string(key.str())];
      if (const toml::array* a = value.as_array())
        for (const auto& e : *a)
          if (auto s = e.value<std::string>()) list.push_back(*s);
    }
  auto add_deps = [&](const toml::table* deps) {
    if (deps == nullptr) return;
    for (const auto& [key, value] : *deps) {
      PackageManifest::Dep d;
      d.package = std::string(key.str());
      if (const toml::table* dt = value.as_table()) {
        if (auto p = (*dt)["package"].value<std::string>()) d.package = *p;
        if (auto b = (*dt)["default-features"].value<bool>()) d.default_features = *b;
        if (const toml::array* a = (*dt)["features"].as_array())
          for (const auto& e : *a)
            if (auto s = e.value<std::string>()) d.features.push_back(*s);
      }
      d.alias = CargoContext::crate_name(std::string(key.str()));
      m.dependencies.push_back(std::move(d));
    }
  };
  add_deps(tab["dependencies"].as_table());
  if (const toml::table* targets = tab["target"].as_table())
    for (const auto& [key, value] : *targets)
      if (const toml::table* tt = value.as_table()) add_deps((*tt)["dependencies"].as_table());
  std::sort(m.dependencies.begin(), m.dependencies.end(),
            [](const auto& a, const auto& b) { return a.alias < b.alias; });
  return m;
}

std::vector<std::string> expand_features(const PackageManifest& m,
                                         const std::vector<std::string>& requested,
                                         bool with_default) {
  std::set<std::string> on;
  std::deque<std::string> todo(requested.begin(), requested.end());
  if (with_default && m.features.count("default") > 0) todo.push_back("default");
  while (!todo.empty()) {
    std::string f = std::move(todo.front());
    todo.pop_front();
    if (f.rfind("dep:", 0) == 0 || f.find('/') != std::string::npos) continue;
    if (!on.insert(f).second) continue;
    if (auto it = m.features.find(f); it != m.features.end())
      for (const auto& g : it->second)
        todo.push_back(g);
  }
  return {on.begin(), on.end()};
}

}  // namespace cg::cargo
