#include "cargo/lockfile.hpp"

#include <toml++/toml.h>

#include <system_error>

#include "util/read_ledger.hpp"

namespace cg::cargo {
namespace fs = std::filesystem;

namespace {

// Real locks are a few hundred KiB; this only keeps a hostile file from costing unbounded memory.
constexpr std::uintmax_t kMaxLockBytes = std::uintmax_t{64} << 20;

std::string str(toml::node_view<const toml::node> v) {
  if (auto s = v.value<std::string>()) return *s;
  return {};
}

// One candidate lock: false when it does not exist or is unusable (`error` says why).
bool read_one(const fs::path& file, Lockfile& out) {
  note_input(file);
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return false;
  if (auto size = fs::file_size(file, ec); !ec && size > kMaxLockBytes) {
    out.broken = file;
    out.error = "over 64 MiB, not read";
    return false;
  }
  toml::table t;
  try {
    t = toml::parse_file(file.string());
  } catch (const toml::parse_error& e) {
    out.broken = file;
    out.error =
        "line " + std::to_string(e.source().begin.line) + ": " + std::string(e.description());
    return false;
  }
  std::vector<LockPackage> pkgs;
  if (const toml::array* arr = t["package"].as_array()) {
    for (const auto& n : *arr) {
      const toml::table* p = n.as_table();
      if (p == nullptr) continue;
      const toml::table& tab = *p;
      LockPackage lp;
      lp.name = str(tab["name"]);
      lp.version = str(tab["version"]);
      lp.source = str(tab["source"]);
      if (const toml::array* deps = tab["dependencies"].as_array())
        for (const auto& d : *deps)
          if (auto s = d.value<std::string>()) lp.dependencies.push_back(*s);
      if (!lp.name.empty()) pkgs.push_back(std::move(lp));
    }
  }
  if (pkgs.empty()) return false;
  out.path = file;
  out.packages = std::move(pkgs);
  return true;
}

}  // namespace

std::vector<std::string> LockPackage::dependency_names() const {
  std::vector<std::string> out;
  out.reserve(dependencies.size());
  for (const auto& d : dependencies)
    out.push_back(d.substr(0, d.find(' ')));
  return out;
}

std::string LockPackage::dependency_version(const std::string& package) const {
  for (const auto& d : dependencies) {
    auto sp = d.find(' ');
    if (sp == std::string::npos || d.compare(0, sp, package) != 0 || sp != package.size()) continue;
    std::string rest = d.substr(sp + 1);
    return rest.substr(0, rest.find(' '));
  }
  return {};
}

Lockfile read_lockfile(const fs::path& workspace_root, const fs::path& package_dir) {
  Lockfile out;
  if (read_one(workspace_root / "Cargo.lock", out)) return out;
  if (package_dir != workspace_root) read_one(package_dir / "Cargo.lock", out);
  return out;
}

}  // namespace cg::cargo
