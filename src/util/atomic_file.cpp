#include "util/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "util/error.hpp"

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
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError(path.string(), std::string("cannot write: ") + std::strerror(errno));
  if (int err = write_all(fd, contents); err != 0) {
    ::unlink(tmp.c_str());
    throw InputError(path.string(), std::string("write failed: ") + std::strerror(err));
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
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

std::string read_file(const fs::path& path, std::size_t max_bytes) {
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
