/* The raw SQLite limit: only step the kernel columns a reader needs, nothing else.
   Usage: raw_sqlite_scan FILE  -> prints rows and seconds. */
#include <sqlite3.h>
#include <stdio.h>
#include <time.h>

int main(int argc, char** argv) {
  if (argc != 2) return fprintf(stderr, "usage: raw_sqlite_scan FILE\n"), 2;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  sqlite3* db;
  if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) return 1;
  sqlite3_stmt* st;
  if (sqlite3_prepare_v2(db, "SELECT start,end,deviceId,streamId,shortName FROM CUPTI_ACTIVITY_KIND_KERNEL", -1, &st,
                         NULL) != SQLITE_OK)
    return 1;
  long long rows = 0, sum = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    sum += sqlite3_column_int64(st, 0) + sqlite3_column_int64(st, 1) + sqlite3_column_int64(st, 2) +
           sqlite3_column_int64(st, 3) + sqlite3_column_int64(st, 4);
    ++rows;
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  printf("{\"rows\": %lld, \"seconds\": %.6f, \"checksum\": %lld}\n", rows, s, sum);
  return 0;
}
