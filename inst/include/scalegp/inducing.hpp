// Initial inducing locations: k-means (k-means++ seeding, Lloyd iterations)
// on the rows of X, run on a random subset of rows when X is large.
#pragma once
#include "linalg.hpp"
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
