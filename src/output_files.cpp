#include "output_files.hpp"

#include <unistd.h>

#include <filesystem>

#include "common/atomic_file.hpp"
#include "common/text.hpp"
#include "exchange.hpp"

namespace straggler {
namespace fs = std::filesystem;

OutputFiles::OutputFiles(Transport& t, const std::string& h5_path, const std::string& summary_path)
    : t_(t), h5_(h5_path), summary_(summary_path) {
  ByteWriter w;
  if (t.root()) w.str(common::host_name()), w.pod<int64_t>(int64_t(getpid()));
  const std::string blob = t.broadcast(w.bytes(), 0);
  ByteReader r(blob);
  const std::string host = r.str();
  const int64_t pid = r.pod<int64_t>();
  if (!h5_.empty()) h5_temp_ = common::temp_path(h5_, host, pid);
  if (!summary_.empty()) summary_temp_ = common::temp_path(summary_, host, pid);
  if (t.root()) {
    for (const auto* p : {&h5_, &summary_})
      if (!p->empty()) common::remove_stale_temps(*p);
    common::arm_cleanup({h5_temp_, summary_temp_});
  }
}

OutputFiles::~OutputFiles() {
  if (!done_ && t_.root()) remove_temps();
  if (t_.root()) common::disarm_cleanup();
}

void OutputFiles::remove_temps() {
  std::error_code ec;
  for (const auto* p : {&h5_temp_, &summary_temp_})
    if (!p->empty()) fs::remove(*p, ec);
}

void OutputFiles::commit(const std::string& error) {
  ByteWriter w;
  std::string why = error;
  const int interrupted = t_.root() ? common::begin_commit() : 0;
  if (t_.root() && why.empty() && interrupted)
    why = "interrupted (signal " + std::to_string(interrupted) + "): outputs not written";
  else if (t_.root() && why.empty() && common::launcher_gone())
    why = "the launcher (mpirun) ended before the outputs were complete: outputs not written";
  if (t_.root() && why.empty()) {
    // The summary first: if the HDF5 rename then fails, the summary is taken back.
    std::vector<std::pair<std::string, std::string>> renames;
    if (!summary_.empty()) renames.emplace_back(summary_temp_, summary_);
    if (!h5_.empty()) renames.emplace_back(h5_temp_, h5_);
    if (const auto fail = common::rename_all(renames); !fail.reason.empty()) {
      // "is a directory now" (the target changed during the run) or the system's reason.
      const std::string reason = fail.reason.rfind("is ", 0) == 0 ? "the path " + fail.reason : "rename: " + fail.reason;
      why = renames[fail.index].second == summary_
                ? common::printable(summary_) + ": cannot write the summary (" + reason + ")"
                : common::printable(h5_) + ": cannot write HDF5 output (" + reason + ")";
    }
  }
  if (t_.root()) {
    if (!why.empty()) remove_temps();
    common::end_commit();  // a signal noted during the renames ends the process now
    w.str(why);
  }
  const std::string blob = t_.broadcast(w.bytes(), 0);
  done_ = true;
  ByteReader r(blob);
  if (std::string msg = r.str(); !msg.empty()) throw common::OutputError(msg);
}

}  // namespace straggler
