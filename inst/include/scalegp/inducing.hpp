// The random generator of the fits (Rng: a fixed algorithm, the same draws
// on every platform) and what is drawn with it: uniform integers and
// numbers, the shuffle of the samplers; selection of order statistics and
// quantiles; and the initial inducing locations: k-means (k-means++
// seeding, Lloyd iterations) on the rows of X, run on a random subset of
// rows when X is large.
#pragma once
#include "linalg.hpp"
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace scalegp {

using Rng = std::mt19937_64;

// Uniform integer in [0, n) from our generator (fixed algorithm, portable).
inline std::size_t uniform_index(Rng& rng, std::size_t n) {
  return static_cast<std::size_t>((rng() >> 11) * (1.0 / 9007199254740992.0) * n) % n;
}
inline double uniform01(Rng& rng) { return (rng() >> 11) * (1.0 / 9007199254740992.0); }

// In-place Fisher-Yates shuffle.
inline void shuffle(std::vector<std::size_t>& v, Rng& rng) {
  for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[uniform_index(rng, i)]);
}

// Places the order statistics at the 0-based positions ks[a, b) (increasing)
// of x[lo, hi): each is the value a full sort would put there (recursive
// selection: O(n log |ks|)).
inline void multi_select(std::vector<double>& x, const std::vector<std::size_t>& ks, std::size_t a, std::size_t b,
                         std::size_t lo, std::size_t hi) {
  if (a >= b || lo >= hi) return;
  const std::size_t mid = a + (b - a) / 2, k = ks[mid];
  std::nth_element(x.begin() + static_cast<std::ptrdiff_t>(lo), x.begin() + static_cast<std::ptrdiff_t>(k),
                   x.begin() + static_cast<std::ptrdiff_t>(hi));
  multi_select(x, ks, a, mid, lo, k);
  multi_select(x, ks, mid + 1, b, k + 1, hi);
}

// The order statistics at the 0-based positions ks (increasing, distinct)
// of x[0, n): the values a full sort would put there.  Small or non-finite
// x: recursive selection on a copy.  Otherwise one pass counts the values
// in equal-width bins over [min, max] (a value's bin never decreases with
// the value, so each bin holds consecutive order statistics) and a second
// collects the values of the bins that hold a wanted position; only those
// are selected, in O(n) in all.
inline std::vector<double> order_statistics(const double* x, std::size_t n, const std::vector<std::size_t>& ks) {
  std::vector<double> out(ks.size());
  if (ks.empty()) return out;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  bool finite = true;
  for (std::size_t i = 0; i < n; ++i) {
    finite = finite && std::isfinite(x[i]);
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  constexpr std::size_t kBins = 4096;
  if (n < 16 * kBins || !finite || !std::isfinite(hi - lo) || !(hi > lo)) {
    if (n > 0 && finite && !(hi > lo)) {  // all values equal
      std::fill(out.begin(), out.end(), lo);
      return out;
    }
    std::vector<double> v(x, x + n);
    multi_select(v, ks, 0, ks.size(), 0, n);
    for (std::size_t t = 0; t < ks.size(); ++t) out[t] = v[ks[t]];
    return out;
  }
  const double scale = static_cast<double>(kBins) / (hi - lo);
  const auto bin = [&](double v) { return std::min(static_cast<std::size_t>((v - lo) * scale), kBins - 1); };
  std::vector<std::size_t> start(kBins + 1, 0);  // start[b]: values in bins before b
  for (std::size_t i = 0; i < n; ++i) ++start[bin(x[i]) + 1];
  for (std::size_t b = 0; b < kBins; ++b) start[b + 1] += start[b];
  std::vector<int> slot(kBins, -1);  // index of a wanted bin among `wanted`
  std::vector<std::size_t> wanted, bin_of(ks.size());
  for (std::size_t t = 0; t < ks.size(); ++t) {
    const std::size_t b = static_cast<std::size_t>(std::upper_bound(start.begin(), start.end(), ks[t]) - start.begin()) - 1;
    bin_of[t] = b;
    if (slot[b] < 0) {
      slot[b] = static_cast<int>(wanted.size());
      wanted.push_back(b);
    }
  }
  std::vector<std::vector<double>> vals(wanted.size());
  for (std::size_t q = 0; q < wanted.size(); ++q) vals[q].reserve(start[wanted[q] + 1] - start[wanted[q]]);
  for (std::size_t i = 0; i < n; ++i) {
    const int q = slot[bin(x[i])];
    if (q >= 0) vals[static_cast<std::size_t>(q)].push_back(x[i]);
  }
  for (std::size_t q = 0; q < wanted.size(); ++q) {
    std::vector<std::size_t> local;  // the wanted positions within this bin
    for (std::size_t t = 0; t < ks.size(); ++t)
      if (bin_of[t] == wanted[q]) local.push_back(ks[t] - start[wanted[q]]);
    multi_select(vals[q], local, 0, local.size(), 0, vals[q].size());
    for (std::size_t t = 0; t < ks.size(); ++t)
      if (bin_of[t] == wanted[q]) out[t] = vals[q][ks[t] - start[wanted[q]]];
  }
  return out;
}

// Sample quantiles of type 7 (R's default, quantile(x, probs, type = 7))
// of x[0, n), by selection instead of sorting, with R's arithmetic:
// index = 1 + (n - 1) p, q = x[lo] (1 - h) + h x[hi] where x[hi] != x[lo].
inline std::vector<double> quantiles_type7(const double* x, std::size_t n, const std::vector<double>& probs) {
  std::vector<double> out(probs.size(), std::nan(""));
  if (n == 0) return out;
  std::vector<double> index(probs.size());
  std::vector<std::size_t> ks;
  for (std::size_t i = 0; i < probs.size(); ++i) {
    index[i] = 1.0 + static_cast<double>(n - 1) * probs[i];
    ks.push_back(static_cast<std::size_t>(std::floor(index[i])) - 1);
    ks.push_back(static_cast<std::size_t>(std::ceil(index[i])) - 1);
  }
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  const std::vector<double> os = order_statistics(x, n, ks);
  const auto at = [&](double pos) {  // x_(pos), 1-based
    return os[static_cast<std::size_t>(std::lower_bound(ks.begin(), ks.end(), static_cast<std::size_t>(pos) - 1) - ks.begin())];
  };
  for (std::size_t i = 0; i < probs.size(); ++i) {
    const double lo = std::floor(index[i]);
    double q = at(lo);
    const double xh = at(std::ceil(index[i]));
    if (index[i] > lo && xh != q) {
      const double h = index[i] - lo;
      q = (1 - h) * q + h * xh;
    }
    out[i] = q;
  }
  return out;
}

inline MatrixXd kmeans(const Eigen::Ref<const MatrixXd>& Xall, Index k, Rng& rng, Index max_rows = 20000, int iters = 25) {
  const Index n0 = Xall.rows(), d = Xall.cols();
  MatrixXd X;
  if (n0 > max_rows) {  // a random subset: the last max_rows places of a Fisher-Yates shuffle
    std::vector<std::size_t> idx(static_cast<std::size_t>(n0));
    for (Index i = 0; i < n0; ++i) idx[static_cast<std::size_t>(i)] = static_cast<std::size_t>(i);
    X.resize(max_rows, d);
    for (Index t = 0; t < max_rows; ++t) {
      const std::size_t i = static_cast<std::size_t>(n0 - t);
      std::swap(idx[i - 1], idx[uniform_index(rng, i)]);
      X.row(t) = Xall.row(static_cast<Index>(idx[i - 1]));
    }
  } else {
    X = Xall;
  }
  const Index n = X.rows();
  if (k >= n) return X;
  MatrixXd C(k, d);
  // k-means++ seeding
  C.row(0) = X.row(uniform_index(rng, n));
  VectorXd dist = (X.rowwise() - C.row(0)).rowwise().squaredNorm();
  for (Index j = 1; j < k; ++j) {
    const double total = dist.sum();
    Index pick = uniform_index(rng, n);
    if (total > 0) {
      double u = uniform01(rng) * total, acc = 0;
      for (Index i = 0; i < n; ++i) {
        acc += dist(i);
        if (acc >= u) { pick = i; break; }
      }
    }
    C.row(j) = X.row(pick);
    dist = dist.cwiseMin((X.rowwise() - C.row(j)).rowwise().squaredNorm());
  }
  // Lloyd iterations, until no row changes its centre
  const MatrixXd XT = X.transpose();  // rows of X as contiguous columns
  std::vector<Index> lab(n, -1);
  MatrixXd CT(d, k);
  for (int it = 0; it < iters; ++it) {
    CT = C.transpose();
    bool changed = false;
    for (Index i = 0; i < n; ++i) {
      const double* x = XT.data() + i * d;
      Index best = 0;
      double best_d = std::numeric_limits<double>::infinity();
      for (Index j = 0; j < k; ++j) {
        const double* c = CT.data() + j * d;
        double dj = 0;
        for (Index t = 0; t < d; ++t) dj += (x[t] - c[t]) * (x[t] - c[t]);
        if (dj < best_d) {
          best_d = dj;
          best = j;
        }
      }
      changed = changed || best != lab[i];
      lab[i] = best;
    }
    if (!changed) break;
    MatrixXd S = MatrixXd::Zero(k, d);
    VectorXd cnt = VectorXd::Zero(k);
    for (Index i = 0; i < n; ++i) { S.row(lab[i]) += X.row(i); cnt(lab[i]) += 1; }
    for (Index j = 0; j < k; ++j)
      if (cnt(j) > 0) C.row(j) = S.row(j) / cnt(j);  // empty clusters keep their centre
  }
  return C;
}

}  // namespace scalegp
