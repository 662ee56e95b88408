#include "runtime/line_reader.hpp"

#include <simdjson.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "util/error.hpp"
#include "util/read_ledger.hpp"

namespace cg::runtime {
std::string_view trim_line(std::string_view s) {
  auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && ws(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && ws(s.back()))
    s.remove_suffix(1);
  return s;
}

LineReader::LineReader(const std::filesystem::path& path, std::size_t max_line_bytes,
                       std::size_t chunk_bytes)
    : path_(path), max_line_(max_line_bytes) {
  note_input(path);
  file_ = std::fopen(path.c_str(), "rb");
  if (!file_) {
    throw InputError(path.string(), std::string("cannot open trace: ") + std::strerror(errno));
  }
  chunk_ = std::max<std::size_t>(chunk_bytes, 1);
  full_cap_ = chunk_ + max_line_ + 1;
  std::error_code ec;
  std::uintmax_t size = std::filesystem::file_size(path, ec);
  // Over two chunks: two full buffers, read ahead (see the header).
  if (!ec && size > 2 * chunk_ && std::filesystem::is_regular_file(path, ec) && !ec) {
    data_cap_ = full_cap_;
    buf_.resize(data_cap_ + simdjson::SIMDJSON_PADDING, ' ');
    spare_.resize(buf_.size(), ' ');
    begin_ = end_ = max_line_;
    read_ahead();
    return;
  }
  // Otherwise one buffer, sized by the file and grown on demand, so a small trace does not clear a
  // chunk plus the line limit (megabytes) before reading a byte — it made every fuzz input cost
  // ~16 MiB of memset.
  constexpr std::size_t kMinCap = std::size_t{64} << 10;
  data_cap_ =
      ec ? full_cap_ : std::min(full_cap_, std::max(kMinCap, static_cast<std::size_t>(size) + 1));
  buf_.resize(data_cap_ + simdjson::SIMDJSON_PADDING, ' ');
}

LineReader::~LineReader() {
  if (ahead_.valid()) ahead_.wait();  // the worker reads file_ and spare_
  if (file_) std::fclose(file_);
}

// Starts reading the next chunk into spare_ on a thread. A chunk under 64 KiB (tests and the
// fuzzer make them tiny to put block edges everywhere) is not worth a thread: its read is
// deferred to the `get`, through the same buffers. Where no thread can be started, libstdc++
// defers too.
void LineReader::read_ahead() {
  char* to = spare_.data() + max_line_;
  std::size_t n = chunk_;
  std::FILE* file = file_;
  auto policy = n >= (std::size_t{64} << 10) ? std::launch::async | std::launch::deferred
                                             : std::launch::deferred;
  ahead_ = std::async(policy, [to, n, file] {
    Chunk c;
    c.bytes = std::fread(to, 1, n, file);
    if (c.bytes == 0 && std::ferror(file)) c.error = errno ? errno : EIO;
    return c;
  });
}

// Takes the chunk read ahead: the unfinished line left in buf_ (at most max_line_ bytes, see
// `next` and `next_block`) is copied in front of it, the buffers swap, and the next read starts.
bool LineReader::fill_ahead() {
  Chunk c = ahead_.get();
  if (c.bytes == 0) {
    if (c.error) {
      throw InputError(path_.string(), std::string("read error: ") + std::strerror(c.error));
    }
    eof_ = true;
    return false;
  }
  std::size_t left = end_ - begin_;
  std::memcpy(spare_.data() + max_line_ - left, buf_.data() + begin_, left);
  buf_.swap(spare_);
  begin_ = max_line_ - left;
  end_ = max_line_ + c.bytes;
  bytes_ += c.bytes;
  read_ahead();
  return true;
}

bool LineReader::fill() {
  if (eof_) return false;
  if (!spare_.empty()) return fill_ahead();
  if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == data_cap_ && data_cap_ < full_cap_) {
    // Full and no newline yet (a long line, or a file that grew while read): double, up to the
    // chunk plus the line limit, so oversized-line detection is unchanged.
    data_cap_ = std::min(full_cap_, data_cap_ * 2);
    buf_.resize(data_cap_ + simdjson::SIMDJSON_PADDING, ' ');
  }
  std::size_t n = std::fread(buf_.data() + end_, 1, data_cap_ - end_, file_);
  if (n == 0) {
    if (std::ferror(file_)) {
      throw InputError(path_.string(), std::string("read error: ") + std::strerror(errno));
    }
    eof_ = true;
    return false;
  }
  end_ += n;
  bytes_ += n;
  return true;
}

// Drops the rest of an over-long line already reported by `next`, up to its newline. A stream
// that never brings one (/dev/zero, a pipe of binary data) cannot be skipped forever: past
// kMaxSkipLines line limits it is an error, in lenient mode too.
bool LineReader::skip_rest() {
  constexpr std::uint64_t kMaxSkipLines = 64;
  for (;;) {
    const char* start = buf_.data() + begin_;
    const void* nl = std::memchr(start, '\n', end_ - begin_);
    if (nl) {
      const auto len = static_cast<std::size_t>(static_cast<const char*>(nl) - start);
      begin_ += len + 1;
      skipping_ = false;
      return true;
    }
    skipped_ += end_ - begin_;
    begin_ = end_;
    if (skipped_ > kMaxSkipLines * max_line_) {
      throw InputError(path_.string() + ":" + std::to_string(number_),
                       "no newline in the first " + std::to_string(kMaxSkipLines * max_line_) +
                           " bytes of this line (the line limit is " + std::to_string(max_line_) +
                           " bytes): not a line-oriented trace");
    }
    if (!fill()) {
      skipping_ = false;
      return false;
    }
  }
}

bool LineReader::next_block(Block& block) {
  if (skipping_ && !skip_rest()) return false;
  for (;;) {
    std::size_t n = end_ - begin_;
    const char* start = buf_.data() + begin_;
    const void* last = n ? ::memrchr(start, '\n', n) : nullptr;
    if (last) {
      std::size_t len = static_cast<std::size_t>(static_cast<const char*>(last) - start) + 1;
      block.text = std::string_view(start, len);
      block.capacity = buf_.size() - begin_;
      block.first_number = number_ + 1;
      begin_ += len;
      return true;
    }
    if (eof_ || n > max_line_ || !fill()) return false;
  }
}

// An over-long line is reported as soon as it passes the limit, not at its newline: a stream with
// no newline (/dev/zero) fails within the bound. Its rest is dropped by the next call.
bool LineReader::next(Line& line) {
  if (skipping_ && !skip_rest()) return false;
  for (;;) {
    const char* start = buf_.data() + begin_;
    const void* nl = std::memchr(start, '\n', end_ - begin_);
    if (nl || (eof_ && begin_ < end_)) {
      std::size_t len =
          nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - start) : end_ - begin_;
      begin_ += len + (nl ? 1 : 0);
      if (len > max_line_) {
        line = Line{{}, 0, ++number_, true};
        return true;
      }
      line.text = trim_line(std::string_view(start, len));
      line.capacity = buf_.size() - static_cast<std::size_t>(line.text.data() - buf_.data());
      line.number = ++number_;
      line.oversized = false;
      return true;
    }
    if (eof_) return false;
    if (end_ - begin_ > max_line_) {
      skipped_ = end_ - begin_;
      begin_ = end_;
      skipping_ = true;
      line = Line{{}, 0, ++number_, true};
      return true;
    }
    fill();
  }
}

}  // namespace cg::runtime
