#pragma once
// The files a command has read, so that none of them is ever overwritten by one of its outputs.
//
// A command of the CLI opens a ReadLedgerScope; inside it every reader notes the files it opens
// (`note_input`: crate sources — also those skipped for their size or encoding —, manifests, lock
// files, configs, traces, checkpoints, baselines), identified by device and inode after following
// symlinks. Every output file goes through create_temp_beside or AtomicDirectory::add, which call
// `refuse_overwriting_read`: an output that is one of those files, however it is spelled (a
// relative path, a hard link, a symlink into the crate), is an input error before a byte is
// written. Outside a scope (library use, tests of single stages) nothing is noted.
#include <filesystem>

namespace cg {

// Notes `path` as read by the running command, when a scope is open and the file exists.
void note_input(const std::filesystem::path& path);

// Throws InputError when `target` exists, is a regular file and was noted as read in the open
// scope. Devices, FIFOs and sockets (`-o /dev/stdout`) are never refused.
void refuse_overwriting_read(const std::filesystem::path& target);

// Opens the ledger for one command; it starts empty and is cleared when the scope ends.
class ReadLedgerScope {
 public:
  ReadLedgerScope();
  ~ReadLedgerScope();
  ReadLedgerScope(const ReadLedgerScope&) = delete;
  ReadLedgerScope& operator=(const ReadLedgerScope&) = delete;
};

}  // namespace cg
