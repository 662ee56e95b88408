#include "runtime/output_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/atomic_file.hpp"
#include "util/error.hpp"

namespace cg::runtime {
namespace {
constexpr std::size_t kFlushBytes = std::size_t{1} << 20;

[[noreturn]] void fail(const std::filesystem::path& p, const char* what) {
  throw InputError(p.string(), std::string(what) + ": " + std::strerror(errno));
}
}  // namespace

OutputFile::OutputFile(std::filesystem::path target) : target_(std::move(target)) {
  std::error_code ec;
  if (writes_in_place(target_)) {
    // A device or pipe (/dev/null, /dev/stdout): written directly, never renamed over.
    file_ = std::fopen(target_.c_str(), "wb");
    if (!file_) fail(target_, "cannot open output");
    buffer_.reserve(kFlushBytes + 4096);
    return;
  }
  if (target_.has_parent_path()) std::filesystem::create_directories(target_.parent_path(), ec);
  // A fresh name opened with O_EXCL|O_NOFOLLOW, keeping an existing output's permissions.
  int fd = create_temp_beside(target_, temp_);
  file_ = ::fdopen(fd, "wb");
  if (!file_) {
    int err = errno;
    ::close(fd);
    ::unlink(temp_.c_str());
    temp_.clear();
    errno = err;
    fail(target_, "cannot create output");
  }
  buffer_.reserve(kFlushBytes + 4096);
}

OutputFile::~OutputFile() {
  if (file_) {
    std::fclose(file_);
    std::error_code ec;
    if (!temp_.empty()) std::filesystem::remove(temp_, ec);
  }
}

void OutputFile::write(std::string_view bytes) {
  buffer_.append(bytes);
  if (buffer_.size() >= kFlushBytes) {
    if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) {
      fail(target_, "cannot write output");
    }
    buffer_.clear();
  }
}

void OutputFile::commit() {
  if (temp_.empty()) {  // in place: nothing to sync or rename
    const bool ok = std::fwrite(buffer_.data(), 1, buffer_.size(), file_) == buffer_.size();
    buffer_.clear();
    const bool closed = std::fclose(file_) == 0;
    file_ = nullptr;
    if (!ok || !closed) fail(target_, "cannot write output");
    return;
  }
  if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size() ||
      std::fflush(file_) != 0 || ::fsync(::fileno(file_)) != 0) {
    fail(target_, "cannot write output");
  }
  buffer_.clear();
  if (std::fclose(file_) != 0) {
    file_ = nullptr;
    fail(target_, "cannot write output");
  }
  file_ = nullptr;
  std::error_code ec;
  std::filesystem::rename(temp_, target_, ec);
  if (ec) {
    std::filesystem::remove(temp_, ec);
    throw InputError(target_.string(), "cannot rename output into place");
  }
}

}  // namespace cg::runtime
