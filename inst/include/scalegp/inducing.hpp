// Initial inducing locations: k-means (k-means++ seeding, Lloyd iterations)
// on the rows of X, run on a random subset of rows when X is large.
#pragma once
#include "linalg.hpp"
#include <algorithm>
#include <cmath>
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

// Sample quantiles of type 7 (R's default, quantile(x, probs, type = 7)),
// by selection instead of sorting, with R's arithmetic:
// index = 1 + (n - 1) p, q = x[lo] (1 - h) + h x[hi] where x[hi] != x[lo].
inline std::vector<double> quantiles_type7(std::vector<double> x, const std::vector<double>& probs) {
  const std::size_t n = x.size();
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
  multi_select(x, ks, 0, ks.size(), 0, n);
  for (std::size_t i = 0; i < probs.size(); ++i) {
    const double lo = std::floor(index[i]);
    double q = x[static_cast<std::size_t>(lo) - 1];
    const double xh = x[static_cast<std::size_t>(std::ceil(index[i])) - 1];
    if (index[i] > lo && xh != q) {
      const double h = index[i] - lo;
      q = (1 - h) * q + h * xh;
    }
    out[i] = q;
  }
  return out;
}

inline MatrixXd kmeans(const MatrixXd& Xall, Index k, Rng& rng, Index max_rows = 20000, int iters = 25) {
  const Index n0 = Xall.rows(), d = Xall.cols();
  MatrixXd X;
  if (n0 > max_rows) {
    std::vector<std::size_t> idx(n0);
    for (Index i = 0; i < n0; ++i) idx[i] = i;
    shuffle(idx, rng);
    X.resize(max_rows, d);
    for (Index i = 0; i < max_rows; ++i) X.row(i) = Xall.row(idx[i]);
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
  std::vector<Index> lab(n, 0);
  for (int it = 0; it < iters; ++it) {
    const VectorXd cc = C.rowwise().squaredNorm();
    const MatrixXd XC = X * C.transpose();
    for (Index i = 0; i < n; ++i) (cc.transpose() - 2.0 * XC.row(i)).minCoeff(&lab[i]);
    MatrixXd S = MatrixXd::Zero(k, d);
    VectorXd cnt = VectorXd::Zero(k);
    for (Index i = 0; i < n; ++i) { S.row(lab[i]) += X.row(i); cnt(lab[i]) += 1; }
    for (Index j = 0; j < k; ++j)
      if (cnt(j) > 0) C.row(j) = S.row(j) / cnt(j);  // empty clusters keep their centre
  }
  return C;
}

}  // namespace scalegp
