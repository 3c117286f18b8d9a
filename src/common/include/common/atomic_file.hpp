// Output files that appear whole or not at all, on one machine: each is written under a
// temporary name beside its final path, ".NAME.tmp-HOST-PID", and renamed into place when complete.
// SIGINT, SIGTERM and SIGHUP (what mpirun sends the others when one process dies) remove armed
// temporaries before the process ends; a temporary left by a SIGKILLed run is removed by the next
// run writing the same output on that host (its process is gone), as are commit backups (below).
// src/output_files.hpp agrees on
// them across processes.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace common {

// This machine's name, cut to letters, digits, '-' and '.' ("host" if none).
std::string host_name();
// ".NAME.tmp-HOST-PID" beside `path`.
std::string temp_path(const std::string& path, const std::string& host, int64_t pid);
// Removes ".NAME.tmp-HOST-PID" and ".NAME.bak-HOST-PID" files beside `path` whose HOST is this
// host and whose process no longer exists. Returns how many.
int remove_stale_temps(const std::string& path);
// Bytes available to this user on the file system of `path`'s directory (-1: unknown).
int64_t free_bytes(const std::string& path);
// Reserves `bytes` of disk for the existing file `path` without changing its size
// (fallocate(FALLOC_FL_KEEP_SIZE)): writes up to that size then cannot fail for want of space or
// quota, even when another job fills the disk meanwhile. "" when reserved, or when the file
// system cannot reserve (then nothing is promised); else why not ("No space left on device",
// "Disk quota exceeded", "File too large"), with nothing left reserved.
std::string reserve_space(const std::string& path, uint64_t bytes);

// Until disarm_cleanup(), the signals above remove these paths (at most 2; "" = none).
void arm_cleanup(const std::vector<std::string>& paths);
void disarm_cleanup();
// Removes the armed paths now (async-signal-safe): before a process ends itself (--timeout).
void remove_armed_temps();

// A commit (the renames of the temporaries) is never cut in two by those signals: between
// begin_commit() and end_commit() a signal is only noted. begin_commit() returns the signal already
// noted (0: none), so that an interrupted run renames nothing; end_commit() removes the armed
// paths and ends the process by a signal noted meanwhile (the outputs are then complete).
int begin_commit();
void end_commit();

// The process that started this one (mpirun, srun's step daemon): noted at the start; a launcher
// that ended before the outputs were committed (killed, or interrupted: mpirun returns at once and
// signals its processes only a second later) means the run was given up: nothing is committed.
void note_launcher();
bool launcher_gone();

// "" when `path` is absent or a regular file (not followed through a link), else why a commit must
// not rename a file over it: "is a character device", "is a symbolic link", ... Renaming over
// /dev/null as root would replace the device node with a file (repro N4).
std::string not_replaceable(const std::string& path);
// "a directory", "a FIFO", ... for messages.
const char* file_type_name(std::filesystem::file_type t);

// Renames each (temporary, final) pair in order, as one transaction: nothing is renamed unless
// every final is (still) replaceable; a final that existed keeps a hard-linked backup
// (".NAME.bak-HOST-PID") until all renames are done, and on the first failure the earlier finals
// get their old files back (or are removed where there was none): a failed commit leaves the
// user's earlier outputs as they were (repro N8). Returns "" or the failed pair's index and why.
struct RenameFailure {
  size_t index = 0;
  std::string reason;  // "" when every rename succeeded
};
RenameFailure rename_all(const std::vector<std::pair<std::string, std::string>>& temp_to_final);

}  // namespace common
