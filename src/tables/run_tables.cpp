#include "tables/run_tables.hpp"

namespace straggler::tables {

const Table<InputFile>& inputs_table() {
  using I = InputFile;
  static const Table<I> t{"/inputs",
                          "one row per profile found",
                          Distribution::Replicated,
                          {col("path", &I::path), col("format", &I::format).doc("as `/ranks/source_format`"),
                           col("version", &I::version).doc("as `/ranks/source_version`"),
                           col("schema", &I::schema).doc("as `/ranks/source_schema`"),
                           col("ranks", &I::ranks, "", "rank processes read from it (0: failed)")}};
  return t;
}

const Table<FailureRow>& failures_table() {
  using F = FailureRow;
  static const Table<F> t{"/failures",
                          "one row per profile or rank that could not be analysed",
                          Distribution::Replicated,
                          {col("rank", &F::rank).doc("-1: unknown"), col("file", &F::file), col("error", &F::error).doc("one line")}};
  return t;
}

}  // namespace straggler::tables
