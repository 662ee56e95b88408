#include "util/read_ledger.hpp"

#include <sys/stat.h>

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "util/error.hpp"

namespace cg {

namespace {

struct Ledger {
  std::mutex mu;
  int depth = 0;
  // (st_dev, st_ino) -> the path as the reader named it, for the message.
  std::map<std::pair<dev_t, ino_t>, std::string> files;
};

Ledger& ledger() {
  static Ledger l;
  return l;
}

}  // namespace

void note_input(const std::filesystem::path& path) {
  Ledger& l = ledger();
  {
    std::lock_guard lock(l.mu);
    if (l.depth == 0) return;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  std::lock_guard lock(l.mu);
  l.files.try_emplace({st.st_dev, st.st_ino}, path.string());
}

void refuse_overwriting_read(const std::filesystem::path& target) {
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  Ledger& l = ledger();
  std::string read_as;
  {
    std::lock_guard lock(l.mu);
    auto it = l.files.find({st.st_dev, st.st_ino});
    if (it == l.files.end()) return;
    read_as = it->second;
  }
  throw InputError(target.string(),
                   (read_as == target.string() ? std::string("is a file")
                                               : "is the same file as " + read_as + ", a file") +
                       " this command read; refusing to overwrite an input (choose another "
                       "output)");
}

ReadLedgerScope::ReadLedgerScope() {
  Ledger& l = ledger();
  std::lock_guard lock(l.mu);
  if (l.depth++ == 0) l.files.clear();
}

ReadLedgerScope::~ReadLedgerScope() {
  Ledger& l = ledger();
  std::lock_guard lock(l.mu);
  if (--l.depth == 0) l.files.clear();
}

}  // namespace cg
