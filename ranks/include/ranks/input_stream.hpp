// The container step of reading: a profile's bytes as its reader sees them, whatever they are
// stored in. A gzip file (by its magic bytes, not its name) is decompressed while read; any other
// file is read as it is. Files are opened read-only. Readers that need random access (SQLite)
// cannot take a compressed file: profile_reader.cpp says so instead of reading it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace ranks {

class InputStream {
 public:
  // Throws ProfileError ("FILE: cannot open the file") when the file cannot be opened.
  explicit InputStream(const std::string& path);
  ~InputStream();
  InputStream(const InputStream&) = delete;
  InputStream& operator=(const InputStream&) = delete;

  // Up to n bytes into buf; 0 at the end. Throws ProfileError naming the file for a read error or
  // a damaged / truncated gzip stream.
  size_t read(char* buf, size_t n);
  bool compressed() const { return compressed_; }
  const std::string& path() const { return path_; }
  uint64_t bytes_read() const { return total_; }

 private:
  std::string path_;
  void* gz_ = nullptr;  // gzFile
  bool compressed_ = false;
  uint64_t total_ = 0;
};

// Whether these first bytes are a gzip member's header.
inline bool is_gzip_magic(const char* p, size_t n) {
  return n >= 2 && static_cast<unsigned char>(p[0]) == 0x1f && static_cast<unsigned char>(p[1]) == 0x8b;
}

}  // namespace ranks
