#pragma once
// Input errors: bad files, bad flags, bad formats. They carry the location the user must fix and
// are caught once, at the command line, which turns them into exit code 2.
#include <stdexcept>
#include <string>

#include "util/text.hpp"

namespace cg {

class InputError : public std::runtime_error {
 public:
  // `where` is "file", "file:line" or "file:line:column"; empty when no file is involved. Control
  // bytes in either (a NUL, an escape sequence quoted from a source file) are written as `\xNN`:
  // the message is shown whole and never drives the user's terminal.
  InputError(std::string where, const std::string& message)
      : std::runtime_error(terminal_safe(where.empty() ? message : where + ": " + message)),
        where_(std::move(where)) {}
  const std::string& where() const { return where_; }

 private:
  std::string where_;
};

}  // namespace cg
