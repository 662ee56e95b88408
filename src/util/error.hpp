#pragma once
// Input errors: bad files, bad flags, bad formats. They carry the location the user must fix and
// are caught once, at the command line, which turns them into exit code 2.
#include <stdexcept>
#include <string>

namespace cg {

class InputError : public std::runtime_error {
 public:
  // `where` is "file", "file:line" or "file:line:column"; empty when no file is involved.
  InputError(std::string where, const std::string& message)
      : std::runtime_error(where.empty() ? message : where + ": " + message),
        where_(std::move(where)) {}
  const std::string& where() const { return where_; }

 private:
  std::string where_;
};

}  // namespace cg
