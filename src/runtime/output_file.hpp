#pragma once
// A streamed output file that appears atomically: bytes go to a temporary file beside the target
// and `commit` renames it into place, so a failed export never leaves a half-written file where a
// good one was (util/atomic_file.hpp does the same for outputs built in memory).
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

namespace cg::runtime {

class OutputFile {
 public:
  explicit OutputFile(std::filesystem::path target);
  ~OutputFile();  // removes the temporary file unless committed
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::string_view bytes);
  void commit();

 private:
  std::filesystem::path target_;
  std::filesystem::path temp_;
  std::FILE* file_ = nullptr;
  std::string buffer_;
};

}  // namespace cg::runtime
