// Discretised covariates for the additive model (the idea of Wood, Li,
// Shaddick and Augustin 2017, "Generalized additive models for gigadata",
// and Li and Wood 2020): each component's inputs take few distinct values
// after rounding, so its features need only be computed at those values,
// and every product over rows becomes a product over distinct values with
// weighted counts:
//   Phi' W Phi, block (c, l) = F_c' C_cl F_l,
//   C_cl[a, b] = sum of w_i over rows whose component-c value is a and
//                component-l value is b   (C_cc = diag(n_c)),
//   Phi' W y,   block c      = F_c' (sum of w_i (y_i - o_i) by value of c).
// A Gaussian likelihood depends on the data only through these sums, so
// after the one pass of discretise() an evaluation of the ELBO and its
// gradient costs nothing per row (data_pass.hpp, DataPass::evaluate_discrete()).  Other
// likelihoods keep each row's value of every component and its entry in
// the observed value pairs of every pair of components (`row_level`): an
// evaluation then costs O(components^2) lookups and one scatter-add of
// weights per row, plus products over distinct values
// (data_pass.hpp, DataPass::evaluate_discrete_rows(); a Hilbert term of
// several inputs enters them through the product form of its sines, so a
// product through observed pairs reads M1 numbers per pair, not M).
//
// Rounding: a gp() input is rounded to the nearest of `bins` equally spaced
// values over its range (for a term over d >= 2 inputs, max(100,
// ceil(bins^(1/d))) values per input) unless it has no more distinct values
// (tuples) than the grid has points; bins <= 0 keeps the exact values (rows
// are only grouped by equal inputs, the fit is that of the exact rows).
// Factor codes, parametric columns and `by` variables are never rounded.
#pragma once
#include "components.hpp"
#include "parallel.hpp"
#include <Eigen/Sparse>
#include <algorithm>
#include <limits>
#include <stdexcept>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <unordered_set>
#include <numeric>
#include <vector>

namespace scalegp {

// The distinct values of one component.
struct DiscreteComponent {
  MatrixXd X;     // D x p: distinct rows (the component's columns and its by column; other columns 0)
  VectorXd count; // weighted counts n_c (sum of w by value)
  VectorXd wy;    // sum of w (y - offset) by value
  VectorXd rows;  // rows by value (unweighted)
};

// Weighted counts of the value pairs of two components c < l (D_c x D_l),
// dense when small and not sparse, sparse otherwise.
// The products are cut into blocks of rows of the result (parallel, each
// block computed alike for any thread count).
struct DiscretePair {
  using Sparse = Eigen::SparseMatrix<double, Eigen::RowMajor>;
  bool dense = true;
  MatrixXd C, Ct;  // dense: C and C'
  Sparse Cs, CsT;  // sparse: C and C'
  // Row level: the observed value pairs (a CSR pattern, values unused), its
  // transpose, where each entry of the transpose sits in the pattern, and
  // each row's entry of the pattern.
  Sparse pattern, patternT;
  std::vector<int> tperm;  // entry t of patternT is entry tperm[t] of pattern
  std::vector<int> pos;    // row i: its entry of pattern
  // `pattern` (and its transpose) with the entry values v.
  Sparse with_values(const VectorXd& v) const {
    Sparse s = pattern;
    std::copy(v.data(), v.data() + v.size(), s.valuePtr());
    return s;
  }
  Sparse trans_with_values(const VectorXd& v) const {
    Sparse s = patternT;
    for (std::size_t t = 0; t < tperm.size(); ++t) s.valuePtr()[t] = v(tperm[t]);
    return s;
  }
  // The number of entries a product with the pair's weights touches: the
  // observed pairs (row level), else the stored counts.
  double entries() const {
    if (pattern.nonZeros() > 0) return static_cast<double>(pattern.nonZeros());
    return dense ? static_cast<double>(C.size()) : static_cast<double>(Cs.nonZeros());
  }
  // C F_l and C' F_c, given also the transposes FlT = F_l', FcT = F_c'.
  MatrixXd times(const MatrixXd& Fl, const MatrixXd& FlT, const ParallelFor& pfor) const {
    return dense ? dense_times(C, Fl, pfor) : sparse_times_t(Cs, FlT, pfor);
  }
  MatrixXd trans_times(const MatrixXd& Fc, const MatrixXd& FcT, const ParallelFor& pfor) const {
    return dense ? dense_times(Ct, Fc, pfor) : sparse_times_t(CsT, FcT, pfor);
  }
  static MatrixXd dense_times(const MatrixXd& A, const MatrixXd& F, const ParallelFor& pfor) {
    MatrixXd out(A.rows(), F.cols());
    blocked_for(static_cast<std::size_t>(A.rows()), pfor, [&](std::size_t b, std::size_t e) {
      const Index nb = static_cast<Index>(e - b);
      out.middleRows(static_cast<Index>(b), nb).noalias() = A.middleRows(static_cast<Index>(b), nb) * F;
    });
    return out;
  }
  // A F from FT = F' (rows of F as contiguous columns); each block of rows of
  // the result is summed in its own transposed buffer.
  static MatrixXd sparse_times_t(const Sparse& A, const MatrixXd& FT, const ParallelFor& pfor) {
    MatrixXd out(A.rows(), FT.rows());
    blocked_for(static_cast<std::size_t>(A.rows()), pfor, [&](std::size_t b, std::size_t e) {
      MatrixXd outT = MatrixXd::Zero(FT.rows(), static_cast<Index>(e - b));
      for (Index a = static_cast<Index>(b); a < static_cast<Index>(e); ++a)
        for (Sparse::InnerIterator it(A, a); it; ++it)
          outT.col(a - static_cast<Index>(b)).noalias() += it.value() * FT.col(it.col());
      out.middleRows(static_cast<Index>(b), static_cast<Index>(e - b)) = outT.transpose();
    });
    return out;
  }
};

// A pair's observed value pairs with the values v (a likelihood's sums by
// observed pair), with the products of DiscretePair.
struct ValuedPairs {
  const DiscretePair& pr;
  const VectorXd& v;
  MatrixXd times(const MatrixXd&, const MatrixXd& FlT, const ParallelFor& pfor) const {
    return DiscretePair::sparse_times_t(pr.with_values(v), FlT, pfor);
  }
  MatrixXd trans_times(const MatrixXd&, const MatrixXd& FcT, const ParallelFor& pfor) const {
    return DiscretePair::sparse_times_t(pr.trans_with_values(v), FcT, pfor);
  }
};

// How the rows of one component become keys: its columns (gp() inputs
// first, then its by column), the first n_round of them rounded to
// lo + k step where step > 0.
struct KeyRule {
  std::vector<Index> cols;
  std::size_t n_round = 0;
  double grid = 0;               // values per rounded input (0: exact values only)
  std::vector<double> lo, step;  // per column; step 0: exact
  Index dk() const { return static_cast<Index>(cols.size()); }
  // the number of points of the grid (grid^n_round)
  double points() const { return std::pow(grid, static_cast<double>(n_round)); }
  // whether D distinct exact keys are more than the grid has points (then round)
  bool too_many(double D) const { return grid > 0 && D > points(); }
  // whether the inputs are rounded (round_rule())
  bool rounded() const { return n_round > 0 && step[0] > 0; }
};

struct DiscreteData {
  std::vector<DiscreteComponent> comp;
  std::vector<std::vector<DiscretePair>> pair;  // pair[c][l - c - 1], l > c
  std::vector<std::vector<int>> id;             // id[c][i], row i's value of component c (see discretise())
  std::vector<KeyRule> rule;                    // per component: how its rows became values
  bool exact = false;                           // no input rounded (set by discretise())
  double n_pos = 0;      // rows with w > 0
  double sum_log_w = 0;  // sum of log w over them
  double wyy = 0;        // sum of w (y - offset)^2
  std::size_t n_distinct() const {
    std::size_t d = 0;
    for (const auto& c : comp) d += static_cast<std::size_t>(c.X.rows());
    return d;
  }
};

// Largest D_c x D_l held dense (doubles).
constexpr double kDenseCells = 4.0e6;

// Values per input of a gp() term over d inputs (0: exact).
inline double discrete_grid(double bins, Index d) {
  if (!(bins > 0)) return 0;
  if (d <= 1) return std::max(2.0, std::floor(bins));
  return std::max(100.0, std::ceil(std::pow(bins, 1.0 / static_cast<double>(d))));
}

// The observed value pairs of two components (value a of one, b of the
// other) and each row's entry among them.
inline void pair_pattern(DiscretePair& pr, const std::vector<int>& a, const std::vector<int>& b, Index Da, Index Db) {
  using Sparse = DiscretePair::Sparse;
  const std::size_t n = a.size();
  std::vector<Eigen::Triplet<double>> t;
  t.reserve(n);
  for (std::size_t i = 0; i < n; ++i) t.emplace_back(a[i], b[i], 1.0);
  pr.dense = false;
  pr.pattern.resize(Da, Db);
  pr.pattern.setFromTriplets(t.begin(), t.end());
  pr.pattern.makeCompressed();
  const int* outer = pr.pattern.outerIndexPtr();
  const int* inner = pr.pattern.innerIndexPtr();
  pr.pos.resize(n);
  for (std::size_t i = 0; i < n; ++i)
    pr.pos[i] = static_cast<int>(std::lower_bound(inner + outer[a[i]], inner + outer[a[i] + 1], b[i]) - inner);
  Sparse numbered = pr.pattern;
  for (Index e = 0; e < numbered.nonZeros(); ++e) numbered.valuePtr()[e] = static_cast<double>(e);
  pr.patternT = numbered.transpose();
  pr.patternT.makeCompressed();
  pr.tperm.resize(static_cast<std::size_t>(pr.patternT.nonZeros()));
  for (std::size_t e = 0; e < pr.tperm.size(); ++e) pr.tperm[e] = static_cast<int>(pr.patternT.valuePtr()[e]);
}

// ---- the pieces of discretise() --------------------------------------------------
// They are separate so that a fit over the shards of a cluster (R:
// engine-vi.R) builds the same DiscreteData from per-shard summaries: the
// rounding is fixed from the ranges of all rows, the distinct values are the
// union of the shards' distinct values, and every sum is formed per group
// of rows (group_bounds(), which never depends on the thread count or the
// number of shards) and the group sums added in group order.

// The exact rule of component k.
inline KeyRule key_rule(const Component& k, double bins) {
  KeyRule r;
  r.cols.assign(k.cols.begin(), k.cols.end());
  r.n_round = r.cols.size();
  if (k.by_col >= 0) r.cols.push_back(k.by_col);
  const bool round = k.kind == Kind::stationary || k.kind == Kind::centred || k.kind == Kind::hilbert;
  r.grid = round ? discrete_grid(bins, static_cast<Index>(r.n_round)) : 0;
  r.lo.assign(r.cols.size(), 0.0);
  r.step.assign(r.cols.size(), 0.0);
  return r;
}

// Ranges of the rounded inputs over the rows of X: lo, hi (n_round each).
inline void key_range(const KeyRule& r, const Eigen::Ref<const MatrixXd>& X, std::vector<double>& lo,
                      std::vector<double>& hi) {
  lo.assign(r.n_round, std::numeric_limits<double>::infinity());
  hi.assign(r.n_round, -std::numeric_limits<double>::infinity());
  for (std::size_t j = 0; j < r.n_round; ++j)
    for (Index i = 0; i < X.rows(); ++i) {
      lo[j] = std::min(lo[j], X(i, r.cols[j]));
      hi[j] = std::max(hi[j], X(i, r.cols[j]));
    }
}

// Switches rule r to rounding over the ranges [lo, hi] of all rows.
inline void round_rule(KeyRule& r, const std::vector<double>& lo, const std::vector<double>& hi) {
  for (std::size_t j = 0; j < r.n_round; ++j) {
    r.lo[j] = lo[j];
    r.step[j] = (hi[j] - lo[j]) / (r.grid - 1);
  }
}

// The keys of the rows of X (row-major, dk per row).
inline std::vector<double> make_keys(const KeyRule& r, const Eigen::Ref<const MatrixXd>& X) {
  const Index nr = X.rows(), dk = r.dk();
  std::vector<double> key(static_cast<std::size_t>(nr) * static_cast<std::size_t>(dk));
  for (Index j = 0; j < dk; ++j) {
    const double lo = r.lo[static_cast<std::size_t>(j)], step = r.step[static_cast<std::size_t>(j)];
    for (Index i = 0; i < nr; ++i) {
      double x = X(i, r.cols[static_cast<std::size_t>(j)]);
      if (step > 0) x = lo + std::round((x - lo) / step) * step;
      key[static_cast<std::size_t>(i) * dk + j] = x + 0.0;  // (-0 as +0)
    }
  }
  return key;
}

// Hash and equality of key rows (row-major, dk per row; make_keys() has
// turned -0 into +0, so equal keys have equal bits).
struct KeyRows {
  const double* key;
  Index dk;
  std::size_t operator()(Index a) const {
    std::uint64_t h = 1469598103934665603ULL;
    for (Index j = 0; j < dk; ++j) {
      std::uint64_t u;
      std::memcpy(&u, key + static_cast<std::size_t>(a) * dk + j, sizeof u);
      h = (h ^ u) * 1099511628211ULL;
      h ^= h >> 29;
    }
    return static_cast<std::size_t>(h);
  }
  bool operator()(Index a, Index b) const {
    for (Index j = 0; j < dk; ++j)
      if (key[static_cast<std::size_t>(a) * dk + j] != key[static_cast<std::size_t>(b) * dk + j]) return false;
    return true;
  }
};

// The distinct keys (sorted lexicographically; D x dk) of nr keys, and each
// key's index among them (`id`, optional): the rows are grouped by hashing,
// then the D distinct keys sorted.
inline MatrixXd distinct_keys(const std::vector<double>& key, Index nr, Index dk, std::vector<int>* id) {
  const KeyRows kr{key.data(), dk};
  std::unordered_map<Index, int, KeyRows, KeyRows> seen(16, kr, kr);
  std::vector<Index> first;  // first row of each value, in order of appearance
  std::vector<int> local(static_cast<std::size_t>(nr));
  for (Index i = 0; i < nr; ++i) {
    const auto it = seen.emplace(i, static_cast<int>(first.size()));
    if (it.second) first.push_back(i);
    local[static_cast<std::size_t>(i)] = it.first->second;
  }
  std::vector<int> ord(first.size());
  std::iota(ord.begin(), ord.end(), 0);
  std::sort(ord.begin(), ord.end(), [&](int a, int b) {
    for (Index j = 0; j < dk; ++j) {
      const double u = key[static_cast<std::size_t>(first[a]) * dk + j], v = key[static_cast<std::size_t>(first[b]) * dk + j];
      if (u != v) return u < v;
    }
    return false;
  });
  std::vector<int> rank(first.size());
  MatrixXd U(static_cast<Index>(first.size()), dk);
  for (std::size_t t = 0; t < ord.size(); ++t) {
    rank[static_cast<std::size_t>(ord[t])] = static_cast<int>(t);
    for (Index j = 0; j < dk; ++j) U(static_cast<Index>(t), j) = key[static_cast<std::size_t>(first[ord[t]]) * dk + j];
  }
  if (id) {
    id->resize(static_cast<std::size_t>(nr));
    for (std::size_t i = 0; i < local.size(); ++i) (*id)[i] = rank[static_cast<std::size_t>(local[i])];
  }
  return U;
}

// Whether the rows of X have more distinct exact keys under rule r than its
// grid has points (stops as soon as they do).  Only the distinct keys are
// kept: each row's key is appended, hashed by its place, and dropped again
// when already seen.
inline bool exact_too_many(const KeyRule& r, const Eigen::Ref<const MatrixXd>& X) {
  if (!(r.grid > 0)) return false;
  const double limit = r.points();
  const Index dk = r.dk(), step = 4096;
  struct Distinct {  // KeyRows over a growing vector of keys
    const std::vector<double>* key;
    Index dk;
    std::size_t operator()(Index a) const { return KeyRows{key->data(), dk}(a); }
    bool operator()(Index a, Index b) const { return KeyRows{key->data(), dk}(a, b); }
  };
  std::vector<double> key;
  const Distinct kd{&key, dk};
  std::unordered_set<Index, Distinct, Distinct> seen(16, kd, kd);
  for (Index begin = 0; begin < X.rows(); begin += step) {
    const Index nb = std::min(step, X.rows() - begin);
    const std::vector<double> part = make_keys(r, X.middleRows(begin, nb));
    for (Index i = 0; i < nb; ++i) {
      const Index t = static_cast<Index>(seen.size());
      key.insert(key.end(), part.begin() + i * dk, part.begin() + (i + 1) * dk);
      if (!seen.insert(t).second) key.resize(key.size() - static_cast<std::size_t>(dk));
      else if (static_cast<double>(seen.size()) > limit) return true;
    }
  }
  return false;
}

// The sorted distinct keys of X's rows under rule r and each row's index
// among them.  Rounded inputs without a by column: from the grid indices
// (no hashing) when the grid has at most 1e7 points and its values increase.
inline MatrixXd rule_values(const KeyRule& r, const Eigen::Ref<const MatrixXd>& X, std::vector<int>* id) {
  const Index nr = X.rows(), dk = r.dk();
  const double cells = r.points();
  bool grid_ok = r.rounded() && dk == static_cast<Index>(r.n_round) && cells <= 1e7;
  const std::size_t G = grid_ok ? static_cast<std::size_t>(r.grid) : 0;
  for (std::size_t j = 0; grid_ok && j < r.n_round; ++j)
    for (std::size_t k = 1; k < G; ++k)
      if (!(r.lo[j] + static_cast<double>(k) * r.step[j] > r.lo[j] + static_cast<double>(k - 1) * r.step[j])) {
        grid_ok = false;
        break;
      }
  if (grid_ok) {
    std::vector<int> local;  // each row's grid point, then (in place) its rank
    std::vector<int>& code = id ? *id : local;
    code.resize(static_cast<std::size_t>(nr));
    for (Index i = 0; i < nr && grid_ok; ++i) {
      std::size_t c = 0;
      for (std::size_t j = 0; j < r.n_round; ++j) {
        const double k = std::round((X(i, r.cols[j]) - r.lo[j]) / r.step[j]);
        if (!(k >= 0 && k < static_cast<double>(G))) {
          grid_ok = false;
          break;
        }
        c = c * G + static_cast<std::size_t>(k);
      }
      code[static_cast<std::size_t>(i)] = static_cast<int>(c);
    }
    if (grid_ok) {
      std::vector<int> rank(static_cast<std::size_t>(cells), -1);
      for (int c : code) rank[static_cast<std::size_t>(c)] = 0;
      int D = 0;
      for (int& v : rank)
        if (v == 0) v = D++;
      MatrixXd U(D, dk);
      for (std::size_t c = 0; c < rank.size(); ++c) {
        if (rank[c] < 0) continue;
        std::size_t rest = c;
        for (std::size_t j = r.n_round; j-- > 0;) {
          const double k = static_cast<double>(rest % G);
          rest /= G;
          U(rank[c], static_cast<Index>(j)) = r.lo[j] + k * r.step[j];
        }
      }
      for (int& c : code) c = rank[static_cast<std::size_t>(c)];
      return U;
    }
  }
  return distinct_keys(make_keys(r, X), nr, dk, id);
}

// The sorted distinct rows of the union of key matrices (the values of all
// shards).
inline MatrixXd union_keys(const std::vector<MatrixXd>& parts, Index dk) {
  std::vector<double> key;
  Index nr = 0;
  for (const MatrixXd& u : parts) {
    for (Index a = 0; a < u.rows(); ++a)
      for (Index j = 0; j < dk; ++j) key.push_back(u(a, j));
    nr += u.rows();
  }
  return distinct_keys(key, nr, dk, nullptr);
}

// Row i's index in the sorted distinct values U of all rows (ids of the
// local distinct values, mapped by binary search).
inline std::vector<int> global_ids(const KeyRule& r, const Eigen::Ref<const MatrixXd>& X, const MatrixXd& U) {
  const Index dk = r.dk();
  std::vector<int> local;
  const MatrixXd L = rule_values(r, X, &local);
  std::vector<int> map(static_cast<std::size_t>(L.rows()));
  for (Index a = 0; a < L.rows(); ++a) {
    Index lo = 0, hi = U.rows();  // first row of U not less than L.row(a)
    while (lo < hi) {
      const Index mid = (lo + hi) / 2;
      bool lt = false;
      for (Index j = 0; j < dk; ++j)
        if (U(mid, j) != L(a, j)) {
          lt = U(mid, j) < L(a, j);
          break;
        }
      if (lt) lo = mid + 1;
      else hi = mid;
    }
    if (lo >= U.rows() || U.row(lo) != L.row(a)) throw std::invalid_argument("discretise: a value missing from the union");
    map[static_cast<std::size_t>(a)] = static_cast<int>(lo);
  }
  for (int& i : local) i = map[static_cast<std::size_t>(i)];
  return local;
}

// The additive summaries of a range of rows, given each row's value of every
// component: counts and sums by value, weighted counts by pair of values
// (entries (a, b, sum of w), one per observed pair, summed in row order),
// and the scalars of the Gaussian likelihood.
struct DiscreteSums {
  std::vector<VectorXd> count, wy, rows;                    // per component
  std::vector<std::vector<Eigen::Triplet<double>>> pair;    // pairs c < l, c-major
  std::vector<MatrixXd> pair_dense;  // a total (add_sums()): the dense pairs' counts (else empty)
  double n_pos = 0, sum_log_w = 0, wyy = 0;
};

inline DiscreteSums range_sums(const std::vector<std::vector<int>>& id, const std::vector<Index>& D,
                               const Eigen::Ref<const VectorXd>& y, const Eigen::Ref<const VectorXd>& w,
                               const Eigen::Ref<const VectorXd>& offset, std::size_t begin, std::size_t end,
                               bool pairs) {
  const std::size_t C = id.size();
  DiscreteSums s;
  for (std::size_t c = 0; c < C; ++c) {
    s.count.push_back(VectorXd::Zero(D[c]));
    s.wy.push_back(VectorXd::Zero(D[c]));
    s.rows.push_back(VectorXd::Zero(D[c]));
  }
  for (std::size_t i = begin; i < end; ++i) {
    const Index r = static_cast<Index>(i);
    const double res = y(r) - offset(r);
    if (w(r) > 0) {
      s.n_pos += 1;
      s.sum_log_w += std::log(w(r));
      s.wyy += w(r) * res * res;
    }
    for (std::size_t c = 0; c < C; ++c) {
      const int a = id[c][i];
      s.rows[c](a) += 1;
      s.count[c](a) += w(r);
      s.wy[c](a) += w(r) * res;
    }
  }
  if (!pairs) return s;
  using Sparse = DiscretePair::Sparse;
  std::vector<Eigen::Triplet<double>> t;
  for (std::size_t c = 0; c < C; ++c)
    for (std::size_t l = c + 1; l < C; ++l) {
      t.clear();
      for (std::size_t i = begin; i < end; ++i)
        if (w(static_cast<Index>(i)) != 0) t.emplace_back(id[c][i], id[l][i], w(static_cast<Index>(i)));
      Sparse g(D[c], D[l]);
      g.setFromTriplets(t.begin(), t.end());  // (duplicates summed in row order)
      std::vector<Eigen::Triplet<double>> e;
      e.reserve(static_cast<std::size_t>(g.nonZeros()));
      for (Index a = 0; a < g.outerSize(); ++a)
        for (Sparse::InnerIterator it(g, a); it; ++it) e.emplace_back(static_cast<int>(a), static_cast<int>(it.col()), it.value());
      s.pair.push_back(std::move(e));
    }
  return s;
}

// Adds the sums of the next range of rows (in row order) to a total, whose
// pair counts are dense where a pair has at most dense_cells value pairs.
inline void add_sums(DiscreteSums& total, DiscreteSums&& part, double dense_cells) {
  if (total.count.empty()) {
    total = std::move(part);
    const std::size_t C = total.count.size();
    total.pair_dense.resize(total.pair.size());
    std::size_t q = 0;
    for (std::size_t c = 0; c < C && !total.pair.empty(); ++c)
      for (std::size_t l = c + 1; l < C; ++l, ++q) {
        const Index Dc = total.count[c].size(), Dl = total.count[l].size();
        if (static_cast<double>(Dc) * static_cast<double>(Dl) > dense_cells) continue;
        MatrixXd& G = total.pair_dense[q];
        G = MatrixXd::Zero(Dc, Dl);
        for (const auto& e : total.pair[q]) G(e.row(), e.col()) += e.value();
        std::vector<Eigen::Triplet<double>>().swap(total.pair[q]);
      }
    return;
  }
  for (std::size_t c = 0; c < total.count.size(); ++c) {
    total.count[c] += part.count[c];
    total.wy[c] += part.wy[c];
    total.rows[c] += part.rows[c];
  }
  for (std::size_t q = 0; q < total.pair.size(); ++q) {
    if (total.pair_dense[q].size() > 0)
      for (const auto& e : part.pair[q]) total.pair_dense[q](e.row(), e.col()) += e.value();
    else
      total.pair[q].insert(total.pair[q].end(), part.pair[q].begin(), part.pair[q].end());
  }
  total.n_pos += part.n_pos;
  total.sum_log_w += part.sum_log_w;
  total.wyy += part.wyy;
}

// The DiscreteData of the distinct values U (per component, dk columns as
// its rule) and the total of add_sums() (without pair counts when it has
// none: row level).
inline DiscreteData discrete_data(const std::vector<KeyRule>& rules, const std::vector<MatrixXd>& U, Index p,
                                  DiscreteSums&& s) {
  const std::size_t C = rules.size();
  DiscreteData dd;
  dd.rule = rules;
  dd.n_pos = s.n_pos;
  dd.sum_log_w = s.sum_log_w;
  dd.wyy = s.wyy;
  dd.comp.resize(C);
  for (std::size_t c = 0; c < C; ++c) {
    DiscreteComponent& dc = dd.comp[c];
    dc.X = MatrixXd::Zero(U[c].rows(), p);
    for (Index j = 0; j < rules[c].dk(); ++j) dc.X.col(rules[c].cols[static_cast<std::size_t>(j)]) = U[c].col(j);
    dc.count = std::move(s.count[c]);
    dc.wy = std::move(s.wy[c]);
    dc.rows = std::move(s.rows[c]);
  }
  dd.pair.resize(C);
  std::size_t q = 0;
  for (std::size_t c = 0; c < C; ++c)
    for (std::size_t l = c + 1; l < C; ++l, ++q) {
      const Index Dc = U[c].rows(), Dl = U[l].rows();
      DiscretePair pr;
      if (q < s.pair_dense.size() && s.pair_dense[q].size() > 0) {
        // dense when at least 1/8 full (a product with a sparse matrix costs
        // a few times more per entry than a dense one)
        pr.C = std::move(s.pair_dense[q]);
        const double filled = static_cast<double>((pr.C.array() != 0.0).count());
        pr.dense = 8.0 * filled >= static_cast<double>(Dc) * static_cast<double>(Dl);
        if (pr.dense) {
          pr.Ct = pr.C.transpose();
        } else {
          pr.Cs = pr.C.sparseView();
          pr.C.resize(0, 0);
        }
      } else if (q < s.pair.size()) {
        pr.dense = false;
        pr.Cs.resize(Dc, Dl);
        pr.Cs.setFromTriplets(s.pair[q].begin(), s.pair[q].end());  // (duplicates summed in order)
        pr.Cs.prune(0.0);
        std::vector<Eigen::Triplet<double>>().swap(s.pair[q]);
      }
      if (!pr.dense) {
        pr.Cs.makeCompressed();
        pr.CsT = pr.Cs.transpose();
      }
      dd.pair[c].push_back(std::move(pr));
    }
  return dd;
}

// Groups the rows by the (rounded) values of each component and
// sums counts and data by value and by pair of values (`row_level`: keeps
// the observed pairs and each row's entry among them instead of the pair
// counts).  Each row's value of every component is kept (id) with
// `row_level` or when no input was rounded (exact: the values are the rows').
inline DiscreteData discretise(const std::vector<Component>& comps, const Eigen::Ref<const MatrixXd>& X,
                               const Eigen::Ref<const VectorXd>& y, const Eigen::Ref<const VectorXd>& w,
                               const Eigen::Ref<const VectorXd>& offset, double bins,
                               double dense_cells = kDenseCells, bool row_level = false) {
  const Index n = X.rows();
  const std::size_t C = comps.size();
  std::vector<KeyRule> rules;
  std::vector<MatrixXd> U(C);
  std::vector<std::vector<int>> id(C);
  std::vector<Index> D(C);
  for (std::size_t c = 0; c < C; ++c) {
    rules.push_back(key_rule(comps[c], bins));
    KeyRule& r = rules.back();
    // Inputs with no more distinct values than the grid has points are kept
    // exact (rounding values that already lie on a coarse grid, e.g. ages in
    // years, would shift them all alike); others are rounded.
    if (exact_too_many(r, X)) {
      std::vector<double> lo, hi;
      key_range(r, X, lo, hi);
      round_rule(r, lo, hi);
    }
    U[c] = rule_values(r, X, &id[c]);
    D[c] = U[c].rows();
  }
  // Weighted pair counts with integer weights are exact in any order: one
  // pass over all rows; otherwise per group like the other sums.
  bool integral = true;
  double wsum = 0;
  for (Index i = 0; i < n && integral; ++i) {
    integral = w(i) == std::floor(w(i));
    wsum += std::abs(w(i));
  }
  integral = integral && wsum < 9.0e15;
  const bool group_pairs = !row_level && !integral;
  DiscreteSums total;
  const std::vector<std::size_t> b = group_bounds(static_cast<std::size_t>(n));
  for (std::size_t g = 0; g + 1 < b.size(); ++g)
    add_sums(total, range_sums(id, D, y, w, offset, b[g], b[g + 1], group_pairs), dense_cells);
  if (total.count.empty()) add_sums(total, range_sums(id, D, y, w, offset, 0, 0, group_pairs), dense_cells);
  if (!row_level && integral) {
    for (std::size_t c = 0; c < C; ++c)
      for (std::size_t l = c + 1; l < C; ++l) {
        std::vector<Eigen::Triplet<double>> t;
        MatrixXd G;
        if (static_cast<double>(D[c]) * static_cast<double>(D[l]) <= dense_cells) {
          G = MatrixXd::Zero(D[c], D[l]);
          for (Index i = 0; i < n; ++i) G(id[c][static_cast<std::size_t>(i)], id[l][static_cast<std::size_t>(i)]) += w(i);
        } else {
          t.reserve(static_cast<std::size_t>(n));
          for (Index i = 0; i < n; ++i)
            if (w(i) != 0) t.emplace_back(id[c][static_cast<std::size_t>(i)], id[l][static_cast<std::size_t>(i)], w(i));
        }
        total.pair.push_back(std::move(t));
        total.pair_dense.push_back(std::move(G));
      }
  }
  DiscreteData dd = discrete_data(rules, U, X.cols(), std::move(total));
  if (row_level) {
    for (std::size_t c = 0; c < C; ++c)
      for (std::size_t l = c + 1; l < C; ++l) {
        DiscretePair& pr = dd.pair[c][l - c - 1];
        pr = DiscretePair();
        pair_pattern(pr, id[c], id[l], D[c], D[l]);
      }
  }
  dd.exact = std::none_of(rules.begin(), rules.end(), [](const KeyRule& r) { return r.rounded(); });
  if (row_level || dd.exact) dd.id = std::move(id);
  return dd;
}

}  // namespace scalegp
