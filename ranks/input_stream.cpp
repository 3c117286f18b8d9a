#include "ranks/input_stream.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <climits>

#include "common/text.hpp"
#include "ranks/profile_reader.hpp"

namespace ranks {

InputStream::InputStream(const std::string& path) : path_(path) {
  // open(2) read-only ourselves, then hand the descriptor to zlib: gzopen would also accept "w".
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw ProfileError(common::printable(path) + ": cannot open the file");
  unsigned char magic[2] = {};
  const ssize_t got = ::pread(fd, magic, 2, 0);
  compressed_ = got == 2 && is_gzip_magic(reinterpret_cast<const char*>(magic), 2);
  gzFile gz = gzdopen(fd, "rb");  // transparent: a file without the gzip magic is read as it is
  if (!gz) {
    ::close(fd);
    throw ProfileError(common::printable(path) + ": cannot open the file");
  }
  gzbuffer(gz, 1 << 18);
  gz_ = gz;
}

InputStream::~InputStream() {
  if (gz_) gzclose_r(static_cast<gzFile>(gz_));
}

size_t InputStream::read(char* buf, size_t n) {
  auto* gz = static_cast<gzFile>(gz_);
  size_t done = 0;
  while (done < n) {
    const unsigned chunk = unsigned(std::min<size_t>(n - done, size_t(1) << 30));
    const int got = gzread(gz, buf + done, chunk);
    if (got < 0) {
      int err = 0;
      const char* msg = gzerror(gz, &err);
      throw ProfileError(common::printable(path_) + ": " + (compressed_ ? "damaged gzip data: " : "read error: ") +
                         common::printable(msg ? msg : "unknown"));
    }
    if (got == 0) {
      // zlib reports a stream cut short (no gzip trailer) only through gzerror at the end.
      int err = 0;
      gzerror(gz, &err);
      if (err == Z_BUF_ERROR && compressed_)
        throw ProfileError(common::printable(path_) + ": the gzip file is truncated (it ends before its last block)");
      break;
    }
    done += size_t(got);
  }
  total_ += done;
  return done;
}

}  // namespace ranks
