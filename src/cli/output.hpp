#pragma once
// Where a command's results go, and the exit policy around them: the exit codes, writing to
// stdout or a file (a failed stdout write is an error, not silence), and refusing an output that
// is one of the command's inputs (the same file by device and inode, however it is spelled).
#include <string>
#include <vector>

namespace cg::cli {

// Exit codes (documented in --help and docs/commands.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitGate = 1;   // a --strict/--deny/check/verify gate failed
inline constexpr int kExitUsage = 2;  // usage or input error (also: stdout could not be written)
inline constexpr int kExitInternal = 70;  // an internal error (a bug): EX_SOFTWARE of sysexits.h

// One input of a command: the flag or role that named it (for the message) and its path.
struct NamedInput {
  std::string role;  // e.g. "--checkpoint", "--config", "the crate manifest"
  std::string path;
};

// Throws cg::InputError when `output` already exists and is the same file as one of `inputs`
// (compared by st_dev/st_ino, so `./m.safetensors`, a hard link or a symlink are caught too).
// A device, FIFO or socket output (`-o /dev/stdout`) is never refused. Inputs that do not exist
// are ignored.
void refuse_overwriting_inputs(const std::string& output, const std::vector<NamedInput>& inputs);

// `text` to stdout when `path` is empty or "-", else to the file (atomically).
void write_or_print(const std::string& path, const std::string& text);

// Flushes stdout; throws cg::InputError("standard output", why) when any write to it failed
// (`candle-graph check > /dev/full`), so the loss is never silent.
void check_stdout();

}  // namespace cg::cli
