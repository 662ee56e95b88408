#pragma once
// Cargo.lock, read once for everything that needs it: the Cargo context (exact Candle versions)
// and the dependency-source locator (which package is where, who depends on whom).
#include <filesystem>
#include <string>
#include <vector>

namespace cg::cargo {

struct LockPackage {
  std::string name, version;
  std::string source;  // `registry+…`, `sparse+…`, `git+URL#REV`; empty for path packages
  // As the lock writes them: "name", "name version" or "name version (source)" (the longer forms
  // when several versions of `name` are locked).
  std::vector<std::string> dependencies;

  // `dependencies` reduced to package names.
  std::vector<std::string> dependency_names() const;
  // The version of `package` this one depends on when the lock names it ("name version"), else "".
  std::string dependency_version(const std::string& package) const;
};

struct Lockfile {
  std::filesystem::path path;         // the lock read; empty when none was usable
  std::vector<LockPackage> packages;  // in file order; entries without a name are skipped
  // A Cargo.lock that exists but was not usable, and why ("line 7: expected …", "over 64 MiB");
  // the other candidate may still have been read.
  std::filesystem::path broken;
  std::string error;
};

// The lock Cargo uses for a package: `workspace_root/Cargo.lock`, else `package_dir/Cargo.lock`
// (the first that exists, parses and lists packages). Never throws: a missing lock gives an empty
// Lockfile, a broken one an empty Lockfile with `error` set.
Lockfile read_lockfile(const std::filesystem::path& workspace_root,
                       const std::filesystem::path& package_dir);

}  // namespace cg::cargo
