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

// Directories of the packages reachable by path from the analysed one: workspace members and
// path dependencies, transitively (a cycle of path dependencies is walked once).
std::map<std::string, std::pair<fs::path, SourceOrigin>> path_packages(const CargoContext& ctx,
                                                                       std::size_t budget) {
  std::map<std::string, std::pair<fs::path, SourceOrigin>> out;
  std::deque<std::pair<fs::path, SourceOrigin>> queue;
  for (const auto& m : workspace_members(ctx.workspace_root))
    queue.emplace_back(ctx.workspace_root / m, SourceOrigin::workspace);
  for (const auto& d : ctx.dependencies)
    if (!d.path.empty()) queue.emplace_back(fs::path(d.path), SourceOrigin::path);
  std::set<fs::path> seen{ctx.package_dir};
  while (!queue.empty() && seen.size() < budget) {
    auto [dir, origin] = queue.front();
    queue.pop_front();
    std::error_code ec;
    fs::path canon = fs::weakly_canonical(dir, ec);
    if (ec) canon = dir;
    if (!seen.insert(canon).second) continue;
    Manifest m = read_manifest(canon);
    std::string name = m.name.empty() ? canon.filename().string() : m.name;
    out.emplace(name, std::make_pair(canon, origin));
    for (const auto& [pkg, path] : m.deps)
      if (!path.empty()) queue.emplace_back(canon / path, SourceOrigin::path);
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

bool has_manifest(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "Cargo.toml", ec);
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

// The highest `NAME-VERSION` directory under `dir` (no lock file to pin the version).
std::optional<std::pair<fs::path, std::string>> highest_version(const fs::path& dir,
                                                                const std::string& name,
                                                                std::size_t budget) {
  std::optional<std::pair<fs::path, std::string>> best;
  std::error_code ec;
  std::size_t looked = 0;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end && looked < budget;
       it.increment(ec), ++looked) {
    std::string f = it->path().filename().string();
    if (f.size() <= name.size() + 1 || f.compare(0, name.size() + 1, name + "-") != 0) continue;
    std::string v = f.substr(name.size() + 1);
    if (v.empty() || !std::isdigit(static_cast<unsigned char>(v[0]))) continue;
    auto key = [](const std::string& s) {
      std::vector<long> parts;
      std::size_t p = 0;
      while (p < s.size() && std::isdigit(static_cast<unsigned char>(s[p]))) {
        parts.push_back(std::strtol(s.c_str() + p, nullptr, 10));
        while (p < s.size() && std::isdigit(static_cast<unsigned char>(s[p])))
          ++p;
        if (p < s.size() && s[p] == '.') ++p;
      }
      return parts;
    };
    if (!best || key(v) > key(best->second)) best = std::make_pair(it->path(), v);
  }
  return best;
}

}  // namespace

std::vector<DependencySource> locate_dependency_sources(const CargoContext& ctx,
                                                        const SourceOptions& opts) {
  fs::path home = opts.cargo_home.empty() ? default_cargo_home() : opts.cargo_home;
  std::vector<LockPackage> lock = read_lockfile(ctx.workspace_root, ctx.package_dir).packages;
  auto paths = path_packages(ctx, opts.max_entries);
  auto vendor = vendor_dir(ctx);
  // Registry index directories (`registry/src/index.crates.io-…`): a handful.
  std::vector<fs::path> registries;
  {
    std::error_code ec;
    std::size_t looked = 0;
    for (fs::directory_iterator it(home / "registry" / "src", ec), end;
         !ec && it != end && looked < opts.max_entries; it.increment(ec), ++looked)
      registries.push_back(it->path());
    std::sort(registries.begin(), registries.end());
  }

  std::vector<DependencySource> out;
  if (lock.empty()) {
    // No lock: the manifest's own dependencies, each at the highest version on disk.
    for (const auto& d : ctx.dependencies) {
      LockPackage e;
      e.name = d.package;
      lock.push_back(std::move(e));
    }
    for (const auto& entry : paths) {
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
    auto found = [&](fs::path dir, SourceOrigin origin) {
      s.dir = std::move(dir);
      s.origin = origin;
    };
    if (e.source.empty() || e.source.rfind("path+", 0) == 0) {
      if (auto it = paths.find(e.name); it != paths.end()) {
        found(it->second.first, it->second.second);
      } else {
        s.searched.push_back("workspace members and path dependencies of " +
                             ctx.workspace_root.string());
      }
    }
    if (s.origin == SourceOrigin::missing && vendor) {
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
      if (s.origin == SourceOrigin::missing)
        s.searched.push_back((*vendor / (e.name + "-" + e.version)).string() + " (vendor)");
    }
    bool git = e.source.rfind("git+", 0) == 0;
    if (s.origin == SourceOrigin::missing && !git &&
        (e.source.empty() || e.source.rfind("registry+", 0) == 0 ||
         e.source.rfind("sparse+", 0) == 0)) {
      for (const auto& reg : registries) {
        if (e.version.empty()) {
          if (auto h = highest_version(reg, e.name, opts.max_entries)) {
            found(h->first, SourceOrigin::registry);
            s.version = h->second;
            break;
          }
        } else if (has_manifest(reg / (e.name + "-" + e.version))) {
          found(reg / (e.name + "-" + e.version), SourceOrigin::registry);
          break;
        }
      }
      if (s.origin == SourceOrigin::missing)
        s.searched.push_back(
            (home / "registry" / "src" / "*" / (e.name + "-" + e.version)).string());
    }
    if (s.origin == SourceOrigin::missing && git) {
      std::string rev = e.source.substr(e.source.rfind('#') + 1);
      std::string short_rev = rev.substr(0, 7);
      std::error_code ec;
      std::size_t looked = 0;
      std::vector<fs::path> checkouts;
      for (fs::directory_iterator it(home / "git" / "checkouts", ec), end;
           !ec && it != end && looked < opts.max_entries; it.increment(ec), ++looked)
        checkouts.push_back(it->path());
      std::sort(checkouts.begin(), checkouts.end());
      for (const auto& c : checkouts) {
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
      if (s.origin == SourceOrigin::missing)
        s.searched.push_back((home / "git" / "checkouts" / "*" / short_rev).string());
    }
    if (s.origin != SourceOrigin::missing) {
      Manifest m = read_manifest(s.dir);
      if (!m.error.empty()) s.problem = (s.dir / "Cargo.toml").string() + ": " + m.error;
      if (s.depends_on.empty())
        for (const auto& [pkg, path] : m.deps)
          s.depends_on.push_back(pkg);
    }
    out.push_back(std::move(s));
  }
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

}  // namespace cg::cargo
