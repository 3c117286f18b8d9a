// The leaf library: text from untrusted sources, exact statistics, atomic renames, exit statuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <thread>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

#include "common/atomic_file.hpp"
#include "common/balance.hpp"
#include "common/csr.hpp"
#include "common/groups.hpp"
#include "common/errors.hpp"
#include "common/stats.hpp"
#include "common/tasks.hpp"
#include "common/text.hpp"

namespace fs = std::filesystem;

TEST(Text, PrintableEscapesControlsAndBrokenUtf8ButKeepsUtf8) {
  EXPECT_EQ(common::printable("a\nb\tc\x01"), "a\\nb\\tc\\x01");
  EXPECT_EQ(common::printable("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(common::printable("\xff" "x"), "\\xffx");
  EXPECT_EQ(common::printable("\xc2\x85"), "\\u0085");  // C1 NEL
  const std::string once = common::printable("\x1b[31m\\");
  EXPECT_EQ(common::printable(once), once);  // idempotent
}

TEST(Text, Utf8LengthRejectsOverlongSurrogatesAndTruncation) {
  EXPECT_EQ(common::utf8_length("\xe2\x82\xac", 0), 3u);
  EXPECT_EQ(common::utf8_length("\xc0\xaf", 0), 0u);      // overlong '/'
  EXPECT_EQ(common::utf8_length("\xed\xa0\x80", 0), 0u);  // surrogate
  EXPECT_EQ(common::utf8_length("\xe2\x82", 0), 0u);      // truncated
  EXPECT_EQ(common::utf8_length("\xf4\x90\x80\x80", 0), 0u);  // beyond U+10FFFF
}

TEST(Text, ClipCutsBeforeACharacter) {
  EXPECT_EQ(common::clip("abcdef", 10), "abcdef");
  EXPECT_EQ(common::clip("abcdefgh", 6), "abc...");
  EXPECT_EQ(common::clip("ab\xe2\x82\xac" "cdef", 7), "ab...");  // not inside the euro sign
  EXPECT_EQ(common::clip("abcdef", 2), "..");
}

TEST(Text, JsonStringIsValidUtf8AndEscaped) {
  std::string out;
  common::append_json_string(out, "q\"\\\n\xff\xc3\xa9");
  EXPECT_EQ(out, "\"q\\\"\\\\\\u000a\\ufffd\xc3\xa9\"");
}

TEST(Text, AsciiOnlyBoundsAndReplaces) {
  EXPECT_EQ(common::ascii_only("h\xc3\xa9st\n", 4), "h??s");
}

TEST(Stats, MedianMadAndQuantiles) {
  EXPECT_EQ(common::median(std::vector<int>{}), 0);
  EXPECT_EQ(common::median(std::vector<double>{3, 1, 2}), 2);
  EXPECT_EQ(common::median(std::vector<double>{4, 1, 3, 2}), 2.5);
  EXPECT_EQ(common::median(std::vector<int64_t>{INT64_MAX, INT64_MAX - 2}), INT64_MAX - 1);  // no overflow
  EXPECT_DOUBLE_EQ(common::mad_sigma({1, 2, 3, 4, 100}, 3), common::kMadToSigma * 1);
  std::vector<int64_t> v{5, 1, 4, 2, 3};
  EXPECT_EQ(common::nearest_rank_quantile(v, 0.9), 5);
  EXPECT_EQ(common::interpolated_quantile({1, 2, 3, 4}, 0.5), 2.5);
  EXPECT_EQ(common::interpolated_quantile({}, 0.5), 0);
}

// The summary's moments (Boost.Accumulators) against a two-pass computation, and its quantiles
// against the sorted sample.
TEST(Stats, DistributionMomentsAndQuantiles) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> step(3.0, 0.4);
  for (int n : {1, 2, 3, 17, 1000}) {
    std::vector<double> v;
    for (int i = 0; i < n; ++i) v.push_back(step(rng));
    const auto d = common::Distribution::of(v);
    double sum = 0, ss = 0;
    for (double x : v) sum += x;
    const double mean = sum / n;
    for (double x : v) ss += (x - mean) * (x - mean);
    EXPECT_EQ(d.count, uint64_t(n));
    EXPECT_EQ(d.sum, sum) << n;
    EXPECT_DOUBLE_EQ(d.mean, mean) << n;
    EXPECT_NEAR(d.stddev, n > 1 ? std::sqrt(ss / (n - 1)) : 0.0, 1e-12 * mean) << n;
    EXPECT_EQ(d.min, *std::min_element(v.begin(), v.end()));
    EXPECT_EQ(d.max, *std::max_element(v.begin(), v.end()));
    std::sort(v.begin(), v.end());
    EXPECT_EQ(d.p50, common::interpolated_quantile(v, 0.5));
  }
  const auto d = common::Distribution::of({4, 1, 3, 2});
  EXPECT_EQ(d.p50, 2.5);
  EXPECT_DOUBLE_EQ(d.stddev, std::sqrt(5.0 / 3.0));
}

TEST(AtomicFile, RenameAllTakesBackOnFailure) {
  const fs::path dir = fs::temp_directory_path() / ("ss-common-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "a.tmp") << "a";
  const auto fail = common::rename_all({{(dir / "a.tmp").string(), (dir / "a").string()},
                                        {(dir / "missing.tmp").string(), (dir / "b").string()}});
  EXPECT_EQ(fail.index, 1u);
  EXPECT_FALSE(fail.reason.empty());
  EXPECT_FALSE(fs::exists(dir / "a"));  // the first was taken back
  std::ofstream(dir / "c.tmp") << "c";
  EXPECT_TRUE(common::rename_all({{(dir / "c.tmp").string(), (dir / "c").string()}}).reason.empty());
  EXPECT_TRUE(fs::exists(dir / "c"));
  EXPECT_EQ(common::temp_path((dir / "out.h5").string(), "h", 42), (dir / ".out.h5.tmp-h-42").string());
  fs::remove_all(dir);
}

TEST(Errors, ExitStatusesInOnePlace) {
  EXPECT_EQ(common::exit_status_of(common::UsageError("x")), common::ExitStatus::Usage);
  EXPECT_EQ(common::exit_status_of(common::OutputError("x")), common::ExitStatus::Failed);
  EXPECT_EQ(common::exit_status_of(std::logic_error("x")), common::ExitStatus::Failed);
  EXPECT_EQ(common::code(common::ExitStatus::Usage), 2);
}

// Items by group, in their order within a group; items of no group left out.
TEST(Csr, GroupByKeepsOrderAndLeavesOut) {
  const std::vector<size_t> group{2, 0, 2, 9, 1, 0};
  const auto c = common::group_by(group.size(), 3, [&](size_t i) { return group[i]; });
  EXPECT_EQ(std::vector<uint32_t>(c.of(0).begin(), c.of(0).end()), (std::vector<uint32_t>{1, 5}));
  EXPECT_EQ(std::vector<uint32_t>(c.of(1).begin(), c.of(1).end()), (std::vector<uint32_t>{4}));
  EXPECT_EQ(std::vector<uint32_t>(c.of(2).begin(), c.of(2).end()), (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(c.ids.size(), 5u);
}

// The costliest first to the least loaded; ties to the first worker.
TEST(Balance, LargestFirstToTheLeastLoaded) {
  EXPECT_EQ(common::largest_first(std::vector<int>{5, 9, 4, 3}, 2), (std::vector<int>{1, 0, 1, 0}));
  EXPECT_EQ(common::largest_first(std::vector<double>{1, 1}, 1), (std::vector<int>{0, 0}));
  EXPECT_EQ(common::largest_first(std::vector<int>{}, 4), std::vector<int>{});
  // Worker 0 already busy (process 0's root blame): the largest item goes to worker 1.
  EXPECT_EQ(common::largest_first(std::vector<int>{5, 9, 4, 3}, 2, {10, 0}), (std::vector<int>{1, 1, 0, 0}));
}

// Every task runs once on up to the threads asked; the heartbeat only on the calling thread; the
// first failure comes back after all stopped.
TEST(Tasks, EveryTaskOnceHeartbeatOnTheCaller) {
  for (int threads : {1, 2, 4}) {
    std::vector<std::atomic<int>> ran(50);
    std::vector<std::function<void()>> tasks;
    for (size_t k = 0; k < ran.size(); ++k)
      tasks.push_back([&, k] {
        ++ran[k];
        std::this_thread::sleep_for(std::chrono::milliseconds(k % 3));
      });
    const auto caller = std::this_thread::get_id();
    int beats = 0, off_caller = 0;
    common::run_tasks(tasks, threads, [&] { ++beats, off_caller += std::this_thread::get_id() != caller; },
                      std::chrono::milliseconds(1));
    for (const auto& r : ran) EXPECT_EQ(r.load(), 1);
    EXPECT_GT(beats, 0);
    EXPECT_EQ(off_caller, 0);
  }
  std::atomic<int> after{0};
  std::vector<std::function<void()>> failing{[] { throw std::runtime_error("task 0 failed"); }, [&] { ++after; }};
  EXPECT_THROW(common::run_tasks(failing, 2), std::runtime_error);
  // A heartbeat that fails (the job ended elsewhere) ends the run the same way, never std::terminate.
  std::vector<std::function<void()>> slow(4, [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
  EXPECT_THROW(common::run_tasks(slow, 2, [] { throw std::runtime_error("job ended"); }, std::chrono::milliseconds(1)),
               std::runtime_error);
  common::run_tasks({}, 4);  // nothing to do: returns
}

TEST(Groups, IndexGroupsJoinChains) {
  common::IndexGroups g(6);
  g.join(0, 1), g.join(1, 2), g.join(4, 5);
  EXPECT_EQ(g.find(0), g.find(2));
  EXPECT_EQ(g.find(4), g.find(5));
  EXPECT_NE(g.find(0), g.find(4));
  EXPECT_NE(g.find(3), g.find(0));
}
