#include "util/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>

#include "util/error.hpp"
#include "util/read_ledger.hpp"

namespace cg {

namespace fs = std::filesystem;

bool writes_in_place(const fs::path& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  return !ec && (fs::is_character_file(st) || fs::is_block_file(st) || fs::is_fifo(st) ||
                 fs::is_socket(st));
}

namespace {

// Writes all of `contents` to fd; on failure closes fd and returns the errno.
int write_all(int fd, std::string_view contents) {
  const char* p = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return err;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return 0;
}

}  // namespace

int create_temp_beside(const fs::path& target, fs::path& temp) {
  refuse_overwriting_read(target);
  // The permissions the output ends with: an existing file keeps its own (a 0600 report stays
  // 0600); a new one gets 0666 less the umask, like any file the user creates.
  struct stat st {};
  const bool keep_mode = ::stat(target.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  static std::atomic<unsigned> serial{0};
  std::random_device rd;
  for (int attempt = 0; attempt < 100; ++attempt) {
    fs::path tmp = target;
    char suffix[64];
    std::snprintf(suffix, sizeof suffix, ".tmp.%ld.%u.%08x", static_cast<long>(::getpid()),
                  serial.fetch_add(1), rd());
    tmp += suffix;
    // O_EXCL|O_NOFOLLOW: a name someone planted (a symlink to another file, a stale file) is
    // never opened, so nothing but our own new file is ever written; another name is tried.
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
      if (errno == EEXIST) continue;
      throw InputError(target.string(), std::string("cannot write: ") + std::strerror(errno));
    }
    if (keep_mode && ::fchmod(fd, st.st_mode & 07777) != 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw InputError(target.string(),
                       std::string("cannot keep the file's permissions: ") + std::strerror(err));
    }
    temp = std::move(tmp);
    return fd;
  }
  throw InputError(target.string(), "cannot create a temporary file beside it (every name taken)");
}

void write_file_atomic(const fs::path& path, std::string_view contents) {
  if (writes_in_place(path)) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
      throw InputError(path.string(), std::string("cannot write: ") + std::strerror(errno));
    if (int err = write_all(fd, contents); err != 0)
      throw InputError(path.string(), std::string("write failed: ") + std::strerror(err));
    if (::close(fd) != 0)
      throw InputError(path.string(), std::string("write failed: ") + std::strerror(errno));
    return;
  }
  std::error_code ec;
  fs::path parent = path.parent_path();
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    if (ec) throw InputError(parent.string(), "cannot create directory: " + ec.message());
  }
  fs::path tmp;
  int fd = create_temp_beside(path, tmp);
  if (int err = write_all(fd, contents); err != 0) {
    ::unlink(tmp.c_str());
    throw InputError(path.string(), std::string("write failed: ") + std::strerror(err));
  }
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw InputError(path.string(), std::string("write failed: ") + std::strerror(err));
  }
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw InputError(path.string(), std::string("write failed: ") + std::strerror(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw InputError(path.string(), std::string("cannot replace file: ") + std::strerror(err));
  }
}

namespace {

fs::path staging_name(const fs::path& dir, bool inside, unsigned serial, unsigned random) {
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, ".tmp.%ld.%u.%08x", static_cast<long>(::getpid()), serial,
                random);
  if (inside) return dir / (std::string(".candle-graph-staging") + suffix);
  return dir.parent_path() / ("." + dir.filename().string() + suffix);
}

}  // namespace

AtomicDirectory::AtomicDirectory(fs::path dir) : dir_(std::move(dir)) {
  fs::path d = dir_.lexically_normal();
  if (!d.has_filename() && d.has_parent_path()) d = d.parent_path();
  dir_ = d.empty() ? fs::path(".") : d;
  std::error_code ec;
  const auto st = fs::symlink_status(dir_, ec);
  if (fs::exists(st)) {
    if (!fs::is_directory(fs::status(dir_, ec))) {
      throw InputError(dir_.string(), "exists and is not a directory");
    }
    dir_existed_ = true;
  } else if (dir_.has_parent_path()) {
    fs::create_directories(dir_.parent_path(), ec);
    if (ec) {
      throw InputError(dir_.parent_path().string(), "cannot create directory: " + ec.message());
    }
  }
  static std::atomic<unsigned> serial{0};
  std::random_device rd;
  for (int attempt = 0; attempt < 100; ++attempt) {
    fs::path s = staging_name(dir_, dir_existed_, serial.fetch_add(1), rd());
    if (::mkdir(s.c_str(), 0777) == 0) {
      staging_ = std::move(s);
      return;
    }
    if (errno != EEXIST) {
      throw InputError(dir_.string(),
                       std::string("cannot create a staging directory: ") + std::strerror(errno));
    }
  }
  throw InputError(dir_.string(), "cannot create a staging directory (every name taken)");
}

AtomicDirectory::~AtomicDirectory() {
  if (!done_ && !staging_.empty()) {
    std::error_code ec;
    fs::remove_all(staging_, ec);
  }
}

void AtomicDirectory::add(const std::string& name, std::string_view contents) {
  const fs::path target = dir_ / name;
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    throw InputError(target.string(), "a bundle file must be a plain file name");
  }
  if (done_) throw InputError(target.string(), "the bundle was already committed");
  refuse_overwriting_read(target);
  struct stat st {};
  if (::lstat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
    throw InputError(target.string(), "exists and is not a regular file; not replaced");
  }
  const bool keep_mode = ::stat(target.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  const fs::path staged = staging_ / name;
  int fd = ::open(staged.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) {
    throw InputError(target.string(), std::string("cannot write: ") + std::strerror(errno));
  }
  int err = keep_mode && ::fchmod(fd, st.st_mode & 07777) != 0 ? errno : 0;
  if (!err) {
    err = write_all(fd, contents);
    if (err) fd = -1;  // write_all closed it
  }
  if (!err && ::fsync(fd) != 0) err = errno;
  if (fd >= 0 && ::close(fd) != 0 && !err) err = errno;
  if (err) {
    throw InputError(target.string(), std::string("write failed: ") + std::strerror(err) +
                                          " (the bundle in " + dir_.string() +
                                          " was left as it was)");
  }
  names_.push_back(name);
}

void AtomicDirectory::commit() {
  if (done_) return;
  if (!dir_existed_) {
    if (::rename(staging_.c_str(), dir_.c_str()) == 0) {
      done_ = true;
      return;
    }
    if (errno != EEXIST && errno != ENOTEMPTY) {
      throw InputError(dir_.string(),
                       std::string("cannot move the bundle into place: ") + std::strerror(errno));
    }
    // Someone created the directory meanwhile: fall through to moving file by file.
  }
  enum class Move : std::uint8_t { exchanged, added };
  std::vector<Move> moves;
  auto undo = [&] {
    for (std::size_t i = moves.size(); i-- > 0;) {
      const fs::path staged = staging_ / names_[i];
      const fs::path target = dir_ / names_[i];
      if (moves[i] == Move::exchanged) {
        ::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE);
      } else {
        ::rename(target.c_str(), staged.c_str());
      }
    }
  };
  for (const auto& name : names_) {
    const fs::path staged = staging_ / name;
    const fs::path target = dir_ / name;
    struct stat st {};
    int rc;
    Move move;
    if (::lstat(target.c_str(), &st) == 0) {
      if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
        undo();
        throw InputError(target.string(), "exists and is not a regular file; not replaced");
      }
      rc = ::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE);
      move = Move::exchanged;
      if (rc != 0 && (errno == EINVAL || errno == ENOSYS)) {
        // A file system without exchange: a plain replace (the old file cannot be put back).
        rc = ::rename(staged.c_str(), target.c_str());
        move = Move::added;
      }
    } else {
      rc = ::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE);
      if (rc != 0 && (errno == EINVAL || errno == ENOSYS))
        rc = ::rename(staged.c_str(), target.c_str());
      move = Move::added;
    }
    if (rc != 0) {
      int err = errno;
      undo();
      throw InputError(target.string(), std::string("cannot move into place: ") +
                                            std::strerror(err) + " (the bundle was put back)");
    }
    moves.push_back(move);
  }
  done_ = true;
  std::error_code ec;
  fs::remove_all(staging_, ec);  // now holds the replaced files
}

std::string read_file(const fs::path& path, std::size_t max_bytes) {
  note_input(path);
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw InputError(path.string(), "is a directory, expected a file");
  // A regular file over the limit is refused before a byte is read (and before the buffer grows
  // to the limit); pipes and other streams are checked while reading below.
  if (fs::is_regular_file(path, ec)) {
    const auto size = fs::file_size(path, ec);
    if (!ec && size > max_bytes)
      throw InputError(path.string(), "file is " + std::to_string(size) +
                                          " bytes, larger than the limit of " +
                                          std::to_string(max_bytes) + " bytes");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string(), std::string("cannot read: ") + std::strerror(errno));
  std::string data;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    data.append(buf, static_cast<std::size_t>(in.gcount()));
    if (data.size() > max_bytes)
      throw InputError(path.string(),
                       "file is larger than the limit of " + std::to_string(max_bytes) + " bytes");
  }
  if (in.bad()) throw InputError(path.string(), "read error");
  return data;
}

}  // namespace cg
