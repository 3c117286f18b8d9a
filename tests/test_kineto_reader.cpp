// The PyTorch profiler (Kineto) reader on small traces written here, each with a known truth: exact
// time conversion, event order, the time base, the claimed rank, kernel metadata, gzip, and the
// one-line errors of damaged files. The real traces: tests/kineto/check_dlrm.py, test_reader_conformance.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "collectives/collective_op.hpp"
#include "collectives/nccl_annotate.hpp"
#include "ranks/discovery.hpp"
#include "ranks/kineto_reader.hpp"
#include "ranks/rank_assignment.hpp"
#include "ranks/profile_reader.hpp"

namespace fs = std::filesystem;
namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("ss-kineto-" + std::to_string(getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }
void write_gz(const fs::path& p, const std::string& text) {
  gzFile g = gzopen(p.c_str(), "wb");
  gzwrite(g, text.data(), unsigned(text.size()));
  gzclose(g);
}

// Two kernels (a GEMM, an NCCL all-reduce with 2024 metadata) out of order, their launches, a copy,
// a memset, a step marker and PyTorch's nccl range; the time base at the end, as PyTorch writes it.
std::string trace(int rank, const std::string& pg = "0") {
  return R"J({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}, {"id": 1, "name": "NVIDIA H100 80GB HBM3"}],
  "distributedInfo": {"backend": "nccl", "rank": )J" + std::to_string(rank) + R"J(, "world_size": 8},
  "traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "pid": 1, "tid": 40, "ts": 2000.250, "dur": 100.0005,
   "args": {"device": 1, "stream": 40, "correlation": 12, "Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "Group size": 8, "dtype": "BFloat16",
            "Process Group Name": ")J" + pg + R"J(", "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7]"}},
  {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm", "pid": 1, "tid": 7, "ts": 1000.0, "dur": 500, "args": {"device": 1, "stream": 7, "correlation": 10}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242, "ts": 990, "dur": 5, "args": {"correlation": 10}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4250, "ts": 1990.5, "dur": 4, "args": {"correlation": 12}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4250, "ts": 2500, "dur": 4, "args": {"correlation": 99}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 4242, "tid": 4242, "ts": 2600, "dur": 50, "args": {"correlation": 13}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaFuncGetAttributes", "pid": 4242, "tid": 4242, "ts": 2700, "dur": 1, "args": {"correlation": 14}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 1, "tid": 7, "ts": 900, "dur": 10, "args": {"device": 1, "stream": 7, "bytes": 4096}},
  {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 1, "tid": 7, "ts": 950, "dur": 2, "args": {"device": 1, "stream": 7, "bytes": 64}},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#5", "pid": 4242, "tid": 4242, "ts": 980, "dur": 2000},
  {"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 4242, "tid": 4250, "ts": 1990, "dur": 10, "args": {"Input Dims": [[1024]], "Input type": ["c10::BFloat16"]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 4242, "tid": 4242, "ts": 985, "dur": 8},
  {"ph": "f", "id": 12, "pid": 4242, "tid": 4250, "ts": 1990.5, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"name": "process_name", "ph": "M", "ts": 0, "pid": 4242, "tid": 0, "args": {"name": "python3"}},
  {"ph": "X", "cat": "Trace", "ts": 900, "dur": 5000, "pid": "Spans", "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)"},
  {"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": 900}
  ],
  "traceName": "x.json",
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 1711964646000000000
})J";
}

TEST(KinetoTime, MicrosecondsToNanosecondsExactly) {
  int64_t ns = 0;
  auto ok = [&](const char* t, int64_t want) {
    ASSERT_TRUE(ranks::parse_us_to_ns(t, ns)) << t;
    EXPECT_EQ(ns, want) << t;
  };
  ok("1694128201435418", 1694128201435418000);
  // 16 integer digits and a fraction: a double holds ...418.125 here (2 ns of drift).
  ok("1694128201435418.123", 1694128201435418123);
  ok("12.345", 12345), ok("12.3456", 12346), ok("12.3454", 12345), ok("-3.5", -3500);
  ok("0.0005", 1), ok("-0.0005", -1), ok("0.0004", 0), ok("007.5", 7500);
  ok("1e3", 1000000), ok("1.5E-3", 2), ok("2.5e+1", 25000), ok("0", 0), ok("5.", 5000), ok("123 ", 123000);
  for (const char* bad : {"", "-", ".", "abc", "1.2.3", "1e", "1e+", "\"5\"", "99999999999999999999", "1e400", "0x10", "1,5"})
    EXPECT_FALSE(ranks::parse_us_to_ns(bad, ns)) << bad;
}

TEST(KinetoReader, ReadsEveryKindOfEventInAnyOrder) {
  TempDir t;
  write(t.path / "a.json", trace(3));
  const auto tls = ranks::read_profile((t.path / "a.json").string());
  ASSERT_EQ(tls.size(), 1u);
  const auto& tl = tls[0];
  EXPECT_EQ(tl.source.format, "kineto-json");
  EXPECT_EQ(tl.claimed_rank, 3);
  EXPECT_EQ(tl.rank, -1);
  EXPECT_EQ(tl.pid, 4242);
  EXPECT_EQ(tl.device, 1);
  EXPECT_EQ(tl.gpu_name, "NVIDIA H100 80GB HBM3");
  // Times are relative to the first event's ts (2000.250 us); the wall clock adds the base.
  EXPECT_EQ(tl.utc_epoch_ns, 1711964646000000000 + 2000250);
  const auto& k = tl.kernels;
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(tl.names.str(k.name[0]), "sm90_xmma_gemm");
  EXPECT_EQ(k.start[0], 1000000 - 2000250);
  EXPECT_EQ(k.end[0], 1500000 - 2000250);
  EXPECT_EQ(k.start[1], 0);
  EXPECT_EQ(k.end[1], 100001);  // 100.0005 us: half a nanosecond rounds up
  EXPECT_EQ(k.stream[0], 7);
  EXPECT_EQ(k.stream[1], 40);
  EXPECT_EQ(k.launch[0], 990000 - 2000250);
  EXPECT_EQ(k.launch_tid[0], 4242u);
  EXPECT_EQ(k.launch[1], 1990500 - 2000250);
  EXPECT_EQ(k.launch_tid[1], 4250u);
  EXPECT_EQ(k.launch_dur[1], 4000u);
  // Kernel metadata: one rank's buffer (1024 bf16), a group id; none on the GEMM.
  ASSERT_EQ(k.meta_bytes.size(), 2u);
  EXPECT_EQ(k.meta_bytes[0], -1);
  EXPECT_EQ(k.meta_bytes[1], 2048);
  EXPECT_EQ(tl.names.str(k.meta_call[1]), "nccl:allreduce");
  EXPECT_NE(k.meta_comm[1], 0u);
  EXPECT_EQ(k.meta_comm[0], 0u);
  // Launches: 3 (one never completed: no kernel with correlation 99); sync kept, other calls not.
  EXPECT_EQ(tl.launches_total, 3);
  ASSERT_EQ(tl.unmatched_launches.size(), 1u);
  EXPECT_EQ(tl.unmatched_launches[0].start, 2500000 - 2000250);
  ASSERT_EQ(tl.api.size(), 1u);
  EXPECT_EQ(tl.api.kind[0], ranks::ApiKind::Sync);
  ASSERT_EQ(tl.copies.size(), 2u);
  EXPECT_EQ(tl.copies.kind[0], ranks::CopyKind::HtoD);
  EXPECT_EQ(tl.copies.bytes[0], 4096);
  EXPECT_EQ(tl.copies.kind[1], ranks::CopyKind::Memset);
  ASSERT_EQ(tl.nvtx.size(), 2u);  // the step marker and PyTorch's nccl range; aten::mm is not kept
  EXPECT_EQ(tl.names.str(tl.nvtx.name[0]), "ProfilerStep#5");
  EXPECT_EQ(tl.names.str(tl.nvtx.name[1]), "nccl:all_reduce");
  EXPECT_EQ(tl.nvtx.payload_bytes[1], 2048);  // Input Dims x Input type
  EXPECT_EQ(tl.capture_end, 5900000 - 2000250);  // the profiler's own span ends last
}

TEST(KinetoReader, TheSameTimelineFromGzipAndFromShuffledEvents) {
  TempDir t;
  write(t.path / "a.json", trace(3));
  write_gz(t.path / "b.json.gz", trace(3));
  const auto a = ranks::read_profile((t.path / "a.json").string());
  const auto b = ranks::read_profile((t.path / "b.json.gz").string());
  EXPECT_EQ(a[0].kernels.start, b[0].kernels.start);
  EXPECT_EQ(a[0].kernels.launch, b[0].kernels.launch);
  EXPECT_EQ(a[0].utc_epoch_ns, b[0].utc_epoch_ns);
  EXPECT_EQ(a[0].nvtx.start, b[0].nvtx.start);
  // One line, no spaces: the same events.
  std::string one_line = trace(3);
  for (char& c : one_line)
    if (c == '\n') c = ' ';
  write(t.path / "c.json", one_line);
  EXPECT_EQ(ranks::read_profile((t.path / "c.json").string())[0].kernels.end, a[0].kernels.end);
}

// A trace holds no host name; tensorboard_trace_handler's default file name does, with the pid.
TEST(KinetoReader, TheHostFromTheProfilersDefaultFileName) {
  TempDir t;
  const auto host = [&](const std::string& name) {
    write(t.path / name, trace(0));
    return ranks::read_profile((t.path / name).string())[0].host;
  };
  EXPECT_EQ(host("gpu-node-7_4242.1711964646123.pt.trace.json"), "gpu-node-7");
  EXPECT_EQ(host("a_b_4242.1.pt.trace.json.gz"), "a_b");
  EXPECT_EQ(host("gpu-node-7_4243.1711964646123.pt.trace.json"), "");  // another process's pid
  EXPECT_EQ(host("worker0_step_12.1694128201545.pt.trace.json"), "");
  EXPECT_EQ(host("rank-3.json"), "");
}

TEST(KinetoReader, MembersOfOneProcessGroupShareItsId) {
  TempDir t;
  write(t.path / "a.json", trace(0)), write(t.path / "b.json", trace(5)), write(t.path / "c.json", trace(5, "7"));
  const auto id = [&](const char* f) { return ranks::read_profile((t.path / f).string())[0].kernels.meta_comm[1]; };
  EXPECT_EQ(id("a.json"), id("b.json"));
  EXPECT_NE(id("a.json"), id("c.json"));
}

TEST(KinetoReader, AnAllToAllOfSendRecvKernelsIsOneAllToAll) {
  TempDir t;
  std::string s = trace(0);
  const std::string from = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  s.replace(s.find(from), from.size(), "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t");
  s.replace(s.find("\"Collective name\": \"allreduce\", "), std::string("\"Collective name\": \"allreduce\", ").size(), "");
  s.replace(s.find("\"nccl:all_reduce\""), std::string("\"nccl:all_reduce\"").size(), "\"nccl:all_to_all\"");
  write(t.path / "a.json", s);
  auto tls = collectives::read_annotated((t.path / "a.json").string());
  const auto ops = collectives::extract_ops(tls[0], {}, 0);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].type, collectives::CollectiveType::AllToAll);
  EXPECT_EQ(ops[0].bytes, 2048);  // the kernel's own metadata
}

TEST(KinetoReader, DamagedFilesGetOneLineNamingTheFile) {
  TempDir t;
  const std::string full = trace(0);
  struct Case {
    std::string name, text, says;
  };
  const std::vector<Case> cases = {
      {"cut.json", full.substr(0, full.find("\"cat\": \"gpu_memcpy\"")), "ends inside"},
      {"cut_string.json", full.substr(0, full.find("sm90_xmma") + 4), "ends inside a string"},
      {"array.json", "[{\"ph\": \"X\"}]", "not a JSON object"},
      {"events_not_array.json", "{\"schemaVersion\": 1, \"traceEvents\": {\"a\": 1}}", "not an array"},
      {"no_events.json", "{\"schemaVersion\": 1, \"deviceProperties\": []}", "no \"traceEvents\""},
      {"cpu_only.json", "{\"schemaVersion\": 1, \"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"ts\": 1, \"dur\": 1}]}",
       "no GPU kernel"},
      {"bad_ts.json", "{\"schemaVersion\": 1, \"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"ts\": \"1\"}]}",
       "no usable GPU kernel"},
  };
  for (const auto& c : cases) {
    write(t.path / c.name, c.text);
    try {
      ranks::read_profile((t.path / c.name).string());
      ADD_FAILURE() << c.name << " was read";
    } catch (const ranks::ProfileError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(c.name), std::string::npos) << what;
      EXPECT_NE(what.find(c.says), std::string::npos) << c.name << ": " << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  // A damaged gzip stream: said by the container step.
  std::string gz;
  write_gz(t.path / "ok.json.gz", full);
  {
    std::ifstream in(t.path / "ok.json.gz", std::ios::binary);
    gz.assign(std::istreambuf_iterator<char>(in), {});
  }
  write(t.path / "cut.json.gz", gz.substr(0, gz.size() / 2));
  EXPECT_THROW(ranks::read_profile((t.path / "cut.json.gz").string()), ranks::ProfileError);
}

// Fuzz findings K1-K4 (tests/fuzz/corpus/kineto): a stray '}' between events (looped forever), a
// member name longer than the read window (copied from freed bytes), a huge member skipped without
// a word.
TEST(KinetoReader, StructuralOdditiesEndOrWarnNeverHang) {
  TempDir t;
  const std::string full = trace(0);
  std::string stray = full;
  stray.insert(stray.find("  {\"ph\": \"X\", \"cat\": \"gpu_memcpy\""), "},\n");
  write(t.path / "stray.json", stray);
  try {
    ranks::read_profile((t.path / "stray.json").string());
    ADD_FAILURE() << "a stray brace was read";
  } catch (const ranks::ProfileError& e) {
    EXPECT_NE(std::string(e.what()).find("unexpected '}'"), std::string::npos) << e.what();
  }
  std::string long_key = full;
  long_key.insert(long_key.find("\"traceEvents\""), "\"" + std::string(1536 * 1024, 'k') + "\": 1,\n");
  write(t.path / "long_key.json", long_key);
  EXPECT_EQ(ranks::read_profile((t.path / "long_key.json").string())[0].kernels.size(), 2u);
  std::string huge = full;
  const std::string di = "\"distributedInfo\": {";
  huge.insert(huge.find(di) + di.size(), "\"note\": \"" + std::string(66 << 20, 'x') + "\", ");
  write(t.path / "huge.json", huge);
  const auto tl = ranks::read_profile((t.path / "huge.json").string())[0];
  EXPECT_EQ(tl.claimed_rank, -1);
  std::string all;
  for (const auto& w : tl.warnings) all += w + "|";
  EXPECT_NE(all.find("\"distributedInfo\" is over 64 MB"), std::string::npos) << all;
}

TEST(KinetoReader, BadEventsAreSkippedAndCounted) {
  TempDir t;
  std::string s = trace(0);
  const std::string anchor = "  {\"ph\": \"X\", \"cat\": \"gpu_memcpy\"";
  s.insert(s.find(anchor), "  {\"ph\": \"X\", \"cat\": \"kernel\", \"ts\": [1, 2], \"dur\": 1},\n  {\"ph\": \"X\", \"cat\": \"kernel\", \"ts\": 1e, \"dur\": 1},\n"
                           "  {\"ph\": \"X\", \"cat\": \"kernel\" \"ts\": 1},\n"
                           "  {\"ph\": 5, \"cat\": \"kernel\", \"name\": {\"a\": 1}, \"ts\": 7, \"args\": [1]},\n");
  write(t.path / "a.json", s);
  const auto tls = ranks::read_profile((t.path / "a.json").string());
  EXPECT_EQ(tls[0].kernels.size(), 2u);
  std::string all;
  for (const auto& w : tls[0].warnings) all += w + "|";
  EXPECT_NE(all.find("2 events without a usable time"), std::string::npos) << all;
  EXPECT_NE(all.find("1 malformed trace events"), std::string::npos) << all;
}

TEST(KinetoDiscovery, OtherJsonFilesArePassedOverAndTheContentNamesTheRank) {
  TempDir t;
  write(t.path / "worker0_step_12.1694128201545.pt.trace.json", trace(5));
  write(t.path / "config.json", "{\"lr\": 0.1}");
  write(t.path / "summary.json", "[1, 2]");
  const auto d = ranks::discover({t.path.string()}, {});
  ASSERT_EQ(d.files.size(), 1u);
  EXPECT_EQ(fs::path(d.files[0].path).filename(), "worker0_step_12.1694128201545.pt.trace.json");
  EXPECT_TRUE(d.skipped.empty());
  // A damaged gzip file is read (and refused with its reason), never passed over.
  write(t.path / "rank_1.json.gz", std::string("\x1f\x8b\x08\x00garbage", 12));
  EXPECT_EQ(ranks::discover({t.path.string()}, {}).files.size(), 2u);
  ranks::FoundProcess p;
  p.claimed_rank = 5;
  const auto a = ranks::assign_ranks(d, {p});
  EXPECT_EQ(a.rank, std::vector<int>{5});
}

}  // namespace
