// Tests of parallel.hpp: group boundaries and bit-reproducible reductions.
#include <catch2/catch.hpp>
#include <scalegp/parallel.hpp>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <vector>

using namespace scalegp;

namespace {

// A deterministic, badly-conditioned summand: the result of a floating sum
// depends on the order of the additions.
double term(std::size_t i) {
  const double s = (i * 2654435761u) % 7 < 3 ? -1.0 : 1.0;
  return s * (1.0 + 1e8 * static_cast<double>((i * 40503u) % 97 == 0)) / (1.0 + static_cast<double>(i % 1013));
}

}  // namespace

TEST_CASE("group_bounds covers [0, n) with aligned contiguous groups", "[parallel]") {
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(255), std::size_t(256), std::size_t(257),
                        std::size_t(5000), std::size_t(1000000)}) {
    CAPTURE(n);
    const std::vector<std::size_t> b = group_bounds(n);
    REQUIRE(b.size() >= 1);
    CHECK(b.front() == 0);
    CHECK(b.back() == n);
    CHECK(b.size() - 1 <= kMaxGroups);
    if (n > 0) {
      CHECK(b.size() >= 2);
    } else {
      CHECK(b.size() == 1);  // no groups for no rows
    }
    for (std::size_t g = 1; g < b.size(); ++g) CHECK(b[g] > b[g - 1]);          // non-empty, increasing
    for (std::size_t g = 1; g + 1 < b.size(); ++g) CHECK(b[g] % kChunkRows == 0);  // interior boundaries aligned
  }
  // the layout depends only on n
  CHECK(group_bounds(5000) == std::vector<std::size_t>{0, 512, 1024, 1536, 2048, 2560, 3072, 3584, 4096, 4608, 5000});
  CHECK(group_bounds(257) == std::vector<std::size_t>{0, 256, 257});
  CHECK(group_bounds(256) == std::vector<std::size_t>{0, 256});
  CHECK(group_bounds(1000000).size() - 1 == kMaxGroups);
}

TEST_CASE("thread_for and serial_for cover each index once", "[parallel]") {
  std::vector<ParallelFor> execs = {serial_for, thread_for(1), thread_for(2), thread_for(3), thread_for(4)};
  for (std::size_t k = 0; k < execs.size(); ++k) {
    for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(5), std::size_t(17)}) {
      std::vector<int> hits(n, 0);
      std::atomic<int> calls{0};
      execs[k](n, [&](std::size_t b, std::size_t e) {
        ++calls;
        for (std::size_t i = b; i < e; ++i) ++hits[i];
      });
      for (std::size_t i = 0; i < n; ++i) CHECK(hits[i] == 1);
      if (n == 0) CHECK(calls.load() == 0);
    }
  }
}

TEST_CASE("deterministic_reduce is bit-identical to the ordered serial sum", "[parallel]") {
  for (std::size_t n : {std::size_t(1), std::size_t(300), std::size_t(5000), std::size_t(70001)}) {
    CAPTURE(n);
    // reference: blocks of kChunkRows summed in order inside each group,
    // groups (each starting from 0) added in order
    const std::vector<std::size_t> b = group_bounds(n);
    double ref = 0.0;
    for (std::size_t g = 0; g + 1 < b.size(); ++g) {
      double acc = 0.0;
      for (std::size_t i = b[g]; i < b[g + 1]; ++i) acc += term(i);
      ref += acc;
    }
    // (Catch assertions are not thread-safe: record violations, check later)
    std::atomic<int> bad{0};
    auto work = [&bad](double& acc, std::size_t begin, std::size_t end) {
      if (!(end > begin) || end - begin > kChunkRows || begin % kChunkRows != 0) ++bad;
      for (std::size_t i = begin; i < end; ++i) acc += term(i);
    };
    auto make = [] { return 0.0; };
    const double s0 = deterministic_reduce<double>(n, serial_for, make, work);
    CHECK(s0 == ref);
    for (unsigned t = 1; t <= 4; ++t) {
      const double st = deterministic_reduce<double>(n, thread_for(t), make, work);
      CHECK(st == ref);  // exact equality, not approximate
    }
    CHECK(bad.load() == 0);
    // the order matters for this summand (so the equality above is meaningful)
    if (n == 70001) {
      double rev = 0.0;
      for (std::size_t i = n; i-- > 0;) rev += term(i);
      CHECK(rev != ref);
      CHECK(rev == Approx(ref).epsilon(1e-9));
    }
  }
}

TEST_CASE("deterministic_reduce with a vector accumulator and every row once", "[parallel]") {
  struct Acc {
    std::vector<double> v = std::vector<double>(3, 0.0);
    std::size_t rows = 0;
    Acc& operator+=(const Acc& a) {
      for (int k = 0; k < 3; ++k) v[k] += a.v[k];
      rows += a.rows;
      return *this;
    }
  };
  const std::size_t n = 4099;
  std::vector<int> seen(n, 0);
  const Acc a = deterministic_reduce<Acc>(n, thread_for(3), [] { return Acc(); },
                                          [&](Acc& acc, std::size_t b, std::size_t e) {
                                            for (std::size_t i = b; i < e; ++i) {
                                              ++seen[i];
                                              acc.v[0] += 1.0;
                                              acc.v[1] += static_cast<double>(i);
                                              acc.v[2] += term(i);
                                            }
                                            acc.rows += e - b;
                                          });
  CHECK(a.rows == n);
  CHECK(a.v[0] == static_cast<double>(n));
  CHECK(a.v[1] == static_cast<double>(n) * static_cast<double>(n - 1) / 2);
  for (std::size_t i = 0; i < n; ++i) CHECK(seen[i] == 1);
  const Acc b = deterministic_reduce<Acc>(n, serial_for, [] { return Acc(); },
                                          [&](Acc& acc, std::size_t bb, std::size_t e) {
                                            for (std::size_t i = bb; i < e; ++i) acc.v[2] += term(i);
                                          });
  CHECK(a.v[2] == b.v[2]);
}

TEST_CASE("blocked_for visits aligned blocks covering [0, n)", "[parallel]") {
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(256), std::size_t(1000)}) {
    std::vector<int> seen(n, 0);
    std::atomic<int> bad{0};
    blocked_for(n, thread_for(2), [&](std::size_t b, std::size_t e) {
      if (b % kChunkRows != 0 || e - b > kChunkRows) ++bad;
      for (std::size_t i = b; i < e; ++i) ++seen[i];
    });
    for (std::size_t i = 0; i < n; ++i) CHECK(seen[i] == 1);
    CHECK(bad.load() == 0);
  }
}
