#include "cli/output.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "util/atomic_file.hpp"
#include "util/error.hpp"

namespace cg::cli {

namespace {

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

}  // namespace

void refuse_overwriting_inputs(const std::string& output, const std::vector<NamedInput>& inputs) {
  if (output.empty() || output == "-") return;
  struct stat out {};
  if (::stat(output.c_str(), &out) != 0) return;  // not there yet: nothing to overwrite
  if (!S_ISREG(out.st_mode) && !S_ISDIR(out.st_mode)) return;  // devices are written in place
  for (const auto& in : inputs) {
    struct stat st {};
    if (in.path.empty() || ::stat(in.path.c_str(), &st) != 0) continue;
    if (same_file(out, st))
      throw InputError(output, "is the same file as the " + in.role + " input " + in.path +
                                   "; refusing to overwrite an input (choose another output)");
  }
}

void write_or_print(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-")
    std::cout << text;
  else
    write_file_atomic(path, text);
}

void check_stdout() {
  errno = 0;
  std::cout.flush();
  if (std::cout.good()) return;
  const int err = errno;
  std::cout.clear();
  throw InputError("standard output", std::string("write failed") +
                                          (err != 0 ? ": " + std::string(std::strerror(err)) : "") +
                                          "; the output was lost");
}

}  // namespace cg::cli
