// Deterministic parallel reductions over data rows.  The core never starts
// threads itself: the caller supplies a `ParallelFor` (RcppParallel in the R
// glue, a serial loop or std::thread in the C++ tests).  Rows are cut into a
// fixed number of groups whose boundaries depend only on the row count; each
// group is reduced sequentially and the group results are added in order, so
// results are bit-identical for any number of threads.
#pragma once
#include <algorithm>
#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

namespace scalegp {

// Calls body(begin, end) on disjoint sub-ranges covering [0, n), possibly in parallel.
using RangeBody = std::function<void(std::size_t, std::size_t)>;
using ParallelFor = std::function<void(std::size_t, const RangeBody&)>;

inline void serial_for(std::size_t n, const RangeBody& body) {
  if (n > 0) body(0, n);
}

// A std::thread executor (used by the C++ tests to exercise real concurrency).
inline ParallelFor thread_for(unsigned n_threads) {
  n_threads = std::max(1u, n_threads);
  return [n_threads](std::size_t n, const RangeBody& body) {
    std::vector<std::thread> pool;
    const std::size_t per = (n + n_threads - 1) / n_threads;
    for (std::size_t b = 0; b < n; b += per) pool.emplace_back(body, b, std::min(n, b + per));
    for (auto& t : pool) t.join();
  };
}

constexpr std::size_t kMaxGroups = 16;   // fixed: never depends on the thread count
constexpr std::size_t kChunkRows = 256;  // rows per block inside a group

// Splits [0, n) into at most kMaxGroups contiguous groups, each a multiple of kChunkRows.
inline std::vector<std::size_t> group_bounds(std::size_t n) {
  const std::size_t chunks = (n + kChunkRows - 1) / kChunkRows;
  const std::size_t groups = std::max<std::size_t>(1, std::min(kMaxGroups, chunks));
  const std::size_t per = (chunks + groups - 1) / groups;
  std::vector<std::size_t> b{0};
  for (std::size_t g = 1; b.back() < n; ++g) b.push_back(std::min(n, g * per * kChunkRows));
  return b;
}

// Runs `work(acc, begin, end)` for every kChunkRows block of the groups
// [b[g], b[g+1]) (chunks start at each group's first row), with one
// accumulator per group (made by `make`); returns the group accumulators.
template <class Acc, class Make, class Work>
std::vector<Acc> group_reduce(const std::vector<std::size_t>& b, const ParallelFor& pfor, Make make, Work work) {
  const std::size_t groups = b.size() - 1;
  std::vector<Acc> acc;
  acc.reserve(groups);
  for (std::size_t g = 0; g < groups; ++g) acc.push_back(make());
  pfor(groups, [&](std::size_t g0, std::size_t g1) {
    for (std::size_t g = g0; g < g1; ++g)
      for (std::size_t r = b[g]; r < b[g + 1]; r += kChunkRows)
        work(acc[g], r, std::min(b[g + 1], r + kChunkRows));
  });
  return acc;
}

// The sum of group accumulators, added in order (the same result wherever the
// groups were computed: threads of one process or workers of a cluster).
template <class Acc, class Make>
Acc sum_groups(const std::vector<Acc>& acc, Make make) {
  Acc total = make();
  for (const Acc& a : acc) total += a;
  return total;
}

// group_reduce over group_bounds(n), summed.
template <class Acc, class Make, class Work>
Acc deterministic_reduce(std::size_t n, const ParallelFor& pfor, Make make, Work work) {
  return sum_groups(group_reduce<Acc>(group_bounds(n), pfor, make, work), make);
}

// Runs work(begin, end) for every kChunkRows block (independent outputs, no reduction).
template <class Work>
void blocked_for(std::size_t n, const ParallelFor& pfor, Work work) {
  const std::size_t chunks = (n + kChunkRows - 1) / kChunkRows;
  pfor(chunks, [&](std::size_t c0, std::size_t c1) {
    for (std::size_t c = c0; c < c1; ++c) work(c * kChunkRows, std::min(n, (c + 1) * kChunkRows));
  });
}

// Asks the processor to bring the cache line of `p` in (a hint; no effect
// on any result).  For loops that read or add to scattered entries of a
// long array by an index known some rows ahead.
inline void prefetch(const void* p) {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p);
#else
  (void)p;
#endif
}
constexpr std::size_t kPrefetchRows = 16;  // how far ahead

}  // namespace scalegp
