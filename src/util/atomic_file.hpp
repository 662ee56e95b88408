#pragma once
// Output files are written atomically: a temporary file beside the target, fsync, then rename.
// A crash or a full disk never leaves a half-written report where a good one was.
#include <filesystem>
#include <string_view>

namespace cg {

// Creates missing parent directories. Throws InputError naming the path on any failure.
// An existing device, FIFO or socket (`-o /dev/null`, `/dev/stdout`, a named pipe) is written in
// place: renaming a temporary over it would replace the device node with a regular file.
void write_file_atomic(const std::filesystem::path& path, std::string_view contents);

// True when `path` exists and is a device, FIFO or socket: written in place, never replaced.
bool writes_in_place(const std::filesystem::path& path);

// Reads a whole file; throws InputError naming the path when it cannot be read or exceeds
// `max_bytes`.
std::string read_file(const std::filesystem::path& path, std::size_t max_bytes = 1ull << 30);

}  // namespace cg
