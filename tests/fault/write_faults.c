/* LD_PRELOAD fault injection for the output tests (issue 17, "faults during the write"): write
 * calls on files whose path contains SS_FAULT_PATH fail with SS_FAULT_ERRNO (default ENOSPC) from
 * the SS_FAULT_AFTER-th such call on (default 1), as a disk that fills, a quota or an I/O error
 * would make them, in whichever process or library (HDF5's POSIX or MPI-IO driver) writes. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static long calls;

static int faulty(int fd) {
  const char* want = getenv("SS_FAULT_PATH");
  if (!want || !*want) return 0;
  char link[64], path[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return 0;
  path[n] = 0;
  if (!strstr(path, want)) return 0;
  const char* after = getenv("SS_FAULT_AFTER");
  if (++calls < (after ? atol(after) : 1)) return 0;
  const char* e = getenv("SS_FAULT_ERRNO");
  errno = e ? atoi(e) : ENOSPC;
  return 1;
}

#define NEXT(name)                      \
  static __typeof__(&name) next_##name; \
  if (!next_##name) next_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

ssize_t write(int fd, const void* buf, size_t count) {
  NEXT(write);
  return faulty(fd) ? -1 : next_write(fd, buf, count);
}
ssize_t pwrite(int fd, const void* buf, size_t count, off_t off) {
  NEXT(pwrite);
  return faulty(fd) ? -1 : next_pwrite(fd, buf, count, off);
}
ssize_t pwrite64(int fd, const void* buf, size_t count, off_t off) {
  NEXT(pwrite64);
  return faulty(fd) ? -1 : next_pwrite64(fd, buf, count, off);
}
ssize_t writev(int fd, const struct iovec* iov, int n) {
  NEXT(writev);
  return faulty(fd) ? -1 : next_writev(fd, iov, n);
}
ssize_t pwritev(int fd, const struct iovec* iov, int n, off_t off) {
  NEXT(pwritev);
  return faulty(fd) ? -1 : next_pwritev(fd, iov, n, off);
}
ssize_t pwritev64(int fd, const struct iovec* iov, int n, off_t off) {
  NEXT(pwritev64);
  return faulty(fd) ? -1 : next_pwritev64(fd, iov, n, off);
}
