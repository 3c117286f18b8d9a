/* The raw SQLite limit (issue 8's baseline: "a raw C scan of the kernel and runtime tables"): step
   the columns the reader needs from both tables, one after the other on one thread, nothing else.
   Usage: raw_sqlite_scan FILE...  -> one JSON line (rows, wall and CPU seconds, over all files in
   turn: the one-process floor of a run directory, issue 24). */
#include <sqlite3.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

static double now(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static long long scan(sqlite3* db, const char* sql, int cols, long long* sum) {
  sqlite3_stmt* st;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
  long long rows = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    for (int c = 0; c < cols; ++c) *sum += sqlite3_column_int64(st, c);
    ++rows;
  }
  sqlite3_finalize(st);
  return rows;
}

int main(int argc, char** argv) {
  if (argc < 2) return fprintf(stderr, "usage: raw_sqlite_scan FILE...\n"), 2;
  const double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
  long long sum = 0, k = 0, r = 0;
  double kernel_wall = 0;
  for (int f = 1; f < argc; ++f) {
    sqlite3* db;
    if (sqlite3_open_v2(argv[f], &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) return 1;
    const double a = now(CLOCK_MONOTONIC);
    const long long kf = scan(db,
                              "SELECT start, end, streamId, shortName, correlationId, globalPid, deviceId "
                              "FROM CUPTI_ACTIVITY_KIND_KERNEL",
                              7, &sum);
    kernel_wall += now(CLOCK_MONOTONIC) - a;
    const long long rf = scan(db, "SELECT start, end, globalTid, correlationId, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME",
                              5, &sum);
    sqlite3_close(db);
    if (kf < 0 || rf < 0) return 1;
    k += kf, r += rf;
  }
  const double w2 = now(CLOCK_MONOTONIC), c2 = now(CLOCK_PROCESS_CPUTIME_ID);
  const double w1 = w0 + kernel_wall;
  printf("{\"rows\": %lld, \"runtime_rows\": %lld, \"seconds\": %.6f, \"kernel_seconds\": %.6f, "
         "\"runtime_seconds\": %.6f, \"cpu_seconds\": %.6f, \"checksum\": %lld}\n",
         k, r, w2 - w0, w1 - w0, w2 - w1, c2 - c0, sum);
  return 0;
}
