#pragma once
// Reads a file as lines through a fixed buffer, so memory is bounded by the longest allowed line
// and the chunk size, not by the file. Each line is handed out in place with simdjson's padding
// readable after it, which lets the JSONL importer parse without copying.
//
// A file of more than two chunks is read ahead: while the caller parses one chunk's lines, a
// worker reads the next chunk into a second buffer, behind room for the unfinished line the
// first one ends with (at most the line limit); the two buffers then swap. The copy out of the
// page cache, 15% of reading a trace, no longer waits in line with the parsing.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <future>
#include <string_view>
#include <vector>

namespace cg::runtime {

struct Line {
  std::string_view text;     // trimmed of ASCII whitespace; may be empty
  std::size_t capacity = 0;  // readable bytes from text.data()
  std::uint64_t number = 0;  // 1-based
  bool oversized = false;    // longer than the limit: text is empty, the line was discarded
};

// A line's text without leading or trailing ASCII whitespace.
std::string_view trim_line(std::string_view s);

// Whole lines, in place: `text` ends with '\n'; `capacity` bytes from text.data() are readable.
struct Block {
  std::string_view text;
  std::size_t capacity = 0;
  std::uint64_t first_number = 0;  // of the block's first line
};

class LineReader {
 public:
  // Reads `chunk_bytes` at a time (plus room for one line of `max_line_bytes`).
  LineReader(const std::filesystem::path& path, std::size_t max_line_bytes,
             std::size_t chunk_bytes);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  bool next(Line& line);
  // Every whole line now buffered (reading more when there is none). False when the next line
  // has no newline within the limit or the file ends without one: `next` handles those. The
  // caller then counts the block's lines with `count_lines` before asking for more.
  bool next_block(Block& block);
  void count_lines(std::uint64_t lines) { number_ += lines; }
  // The most a block can hold now (the buffer grows only for a long line).
  std::size_t block_capacity() const { return data_cap_; }
  std::uint64_t bytes_read() const { return bytes_; }

 private:
  bool fill();
  bool fill_ahead();
  bool skip_rest();
  void read_ahead();

  struct Chunk {
    std::size_t bytes = 0;
    int error = 0;  // errno of a failed read
  };

  std::FILE* file_ = nullptr;
  std::filesystem::path path_;
  std::size_t max_line_;
  std::vector<char> buf_;
  std::size_t data_cap_;
  std::size_t full_cap_ = 0;  // the most the buffer grows to: one chunk plus the longest line
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
  bool eof_ = false;
  std::uint64_t number_ = 0;
  std::uint64_t bytes_ = 0;
  bool skipping_ = false;      // dropping the rest of an over-long line already reported
  std::uint64_t skipped_ = 0;  // bytes of it dropped so far
  // Read-ahead (files over two chunks): the next chunk lands at spare_[max_line_, …).
  std::size_t chunk_ = 0;
  std::vector<char> spare_;
  std::future<Chunk> ahead_;
};

}  // namespace cg::runtime
