#pragma once
// Output files are written atomically: a temporary file beside the target, fsync, then rename.
// A crash or a full disk never leaves a half-written report where a good one was.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace cg {

// Creates missing parent directories. Throws InputError naming the path on any failure.
// An existing device, FIFO or socket (`-o /dev/null`, `/dev/stdout`, a named pipe) is written in
// place: renaming a temporary over it would replace the device node with a regular file.
void write_file_atomic(const std::filesystem::path& path, std::string_view contents);

// Creates a fresh temporary file beside `target` for writing and returns its descriptor; `temp`
// receives its name (`<target>.tmp.<pid>.<serial>.<random>`). The name is created with
// O_CREAT|O_EXCL|O_NOFOLLOW, so a symlink or file planted under a predictable name is never
// followed or reused (another name is tried). The file has the permissions of an existing regular
// `target` (a 0600 report stays 0600), else 0666 less the umask. Throws InputError naming target.
int create_temp_beside(const std::filesystem::path& target, std::filesystem::path& temp);

// A directory of output files that appears all or nothing (`audit`'s bundle): every file is first
// written and synced in a staging directory, and `commit` moves them in only when all were
// written. A failure before `commit` (a full disk, a refused file) leaves `dir` exactly as it was,
// and the staging directory is removed.
// - `dir` absent: the staging directory is created beside it and renamed to `dir` in one step.
// - `dir` present: files are staged inside it (same file system) and each is swapped with the old
//   one (renameat2 RENAME_EXCHANGE); if a swap fails, the earlier ones are swapped back. Files of
//   `dir` that the bundle does not name are left alone.
// Usage: AtomicDirectory b(dir); b.add("summary.txt", text); …; b.commit();
class AtomicDirectory {
 public:
  explicit AtomicDirectory(std::filesystem::path dir);
  ~AtomicDirectory();  // removes the staging directory unless committed
  AtomicDirectory(const AtomicDirectory&) = delete;
  AtomicDirectory& operator=(const AtomicDirectory&) = delete;

  // Writes and syncs one file (a plain name, no '/') into the staging directory now. Throws
  // InputError naming `dir/name` on any failure; the bundle is then abandoned.
  void add(const std::string& name, std::string_view contents);
  // Moves every added file into `dir` together. Throws InputError naming `dir` on failure, after
  // putting back what was already moved.
  void commit();

 private:
  std::filesystem::path dir_;
  std::filesystem::path staging_;
  bool dir_existed_ = false;
  bool done_ = false;
  std::vector<std::string> names_;
};

// True when `path` exists and is a device, FIFO or socket: written in place, never replaced.
bool writes_in_place(const std::filesystem::path& path);

// Reads a whole file; throws InputError naming the path when it cannot be read or exceeds
// `max_bytes`.
std::string read_file(const std::filesystem::path& path, std::size_t max_bytes = 1ull << 30);

}  // namespace cg
