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
// gradient costs nothing per row (svgp.hpp, evaluate_discrete()).  Other
// likelihoods keep each row's value of every component and its entry in
// the observed value pairs of every pair of components (`row_level`): an
// evaluation then costs O(components^2) lookups and one scatter-add of
// weights per row, plus products over distinct values
// (svgp.hpp, evaluate_discrete_rows()).
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
#include <cmath>
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
  MatrixXd times(const MatrixXd& Fl, const ParallelFor& pfor) const {  // C F_l
    return dense ? dense_times(C, Fl, pfor) : sparse_times(Cs, Fl, pfor);
  }
  MatrixXd trans_times(const MatrixXd& Fc, const ParallelFor& pfor) const {  // C' F_c
    return dense ? dense_times(Ct, Fc, pfor) : sparse_times(CsT, Fc, pfor);
  }
  static MatrixXd dense_times(const MatrixXd& A, const MatrixXd& F, const ParallelFor& pfor) {
    MatrixXd out(A.rows(), F.cols());
    blocked_for(static_cast<std::size_t>(A.rows()), pfor, [&](std::size_t b, std::size_t e) {
      const Index nb = static_cast<Index>(e - b);
      out.middleRows(static_cast<Index>(b), nb).noalias() = A.middleRows(static_cast<Index>(b), nb) * F;
    });
    return out;
  }
  static MatrixXd sparse_times(const Sparse& A, const MatrixXd& F, const ParallelFor& pfor) {
    return sparse_times_t(A, F.transpose(), pfor);  // rows of F as contiguous columns
  }
  // A F from FT = F'.
  static MatrixXd sparse_times_t(const Sparse& A, const MatrixXd& FT, const ParallelFor& pfor) {
    MatrixXd outT = MatrixXd::Zero(FT.rows(), A.rows());
    blocked_for(static_cast<std::size_t>(A.rows()), pfor, [&](std::size_t b, std::size_t e) {
      for (Index a = static_cast<Index>(b); a < static_cast<Index>(e); ++a)
        for (Sparse::InnerIterator it(A, a); it; ++it) outT.col(a).noalias() += it.value() * FT.col(it.col());
    });
    return outT.transpose();
  }
};

struct DiscreteData {
  std::vector<DiscreteComponent> comp;
  std::vector<std::vector<DiscretePair>> pair;  // pair[c][l - c - 1], l > c
  std::vector<std::vector<int>> id;             // row level: id[c][i], row i's value of component c
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

// Groups the rows by the (rounded) values of each component and
// sums counts and data by value and by pair of values (`row_level`: keeps
// the row indices instead of the pair counts).
inline DiscreteData discretise(const std::vector<Component>& comps, const Eigen::Ref<const MatrixXd>& X,
                               const Eigen::Ref<const VectorXd>& y, const Eigen::Ref<const VectorXd>& w,
                               const Eigen::Ref<const VectorXd>& offset, double bins,
                               double dense_cells = kDenseCells, bool row_level = false) {
  const Index n = X.rows(), p = X.cols();
  DiscreteData dd;
  std::vector<Index> rows;
  for (Index i = 0; i < n; ++i) {
    rows.push_back(i);  // (rows of weight 0 add nothing but their count in `rows`)
    if (w(i) > 0) {
      dd.n_pos += 1;
      dd.sum_log_w += std::log(w(i));
      const double r = y(i) - offset(i);
      dd.wyy += w(i) * r * r;
    }
  }
  const Index nr = static_cast<Index>(rows.size());
  const std::size_t C = comps.size();
  std::vector<std::vector<int>> id(C, std::vector<int>(nr));
  dd.comp.resize(C);
  for (std::size_t c = 0; c < C; ++c) {
    const Component& k = comps[c];
    std::vector<Index> cols(k.cols.begin(), k.cols.end());
    const std::size_t n_round = cols.size();
    if (k.by_col >= 0) cols.push_back(k.by_col);
    const Index dk = static_cast<Index>(cols.size());
    const bool round = k.kind == Kind::stationary || k.kind == Kind::centred;
    const double grid = round ? discrete_grid(bins, static_cast<Index>(n_round)) : 0;
    // key rows (row-major): the component's inputs (rounded when `step`) and its by column
    std::vector<double> key(static_cast<std::size_t>(nr) * dk);
    auto make_key = [&](bool rounded) {
      for (Index j = 0; j < dk; ++j) {
        double lo = 0, step = 0;
        if (rounded && static_cast<std::size_t>(j) < n_round && nr > 0) {
          lo = X(rows[0], cols[j]);
          double hi = lo;
          for (Index i : rows) {
            lo = std::min(lo, X(i, cols[j]));
            hi = std::max(hi, X(i, cols[j]));
          }
          step = (hi - lo) / (grid - 1);
        }
        for (Index r = 0; r < nr; ++r) {
          double x = X(rows[r], cols[j]);
          if (step > 0) x = lo + std::round((x - lo) / step) * step;
          key[static_cast<std::size_t>(r) * dk + j] = x;
        }
      }
    };
    auto less = [&](Index a, Index b) {
      for (Index j = 0; j < dk; ++j) {
        const double u = key[static_cast<std::size_t>(a) * dk + j], v = key[static_cast<std::size_t>(b) * dk + j];
        if (u != v) return u < v;
      }
      return false;
    };
    std::vector<Index> ord(nr), first;  // first: the first sorted row of each value
    auto group = [&]() {
      std::iota(ord.begin(), ord.end(), Index(0));
      std::stable_sort(ord.begin(), ord.end(), less);
      first.clear();
      for (Index t = 0; t < nr; ++t) {
        if (t == 0 || less(ord[t - 1], ord[t])) first.push_back(ord[t]);
        id[c][ord[t]] = static_cast<int>(first.size()) - 1;
      }
    };
    // Inputs with no more distinct values than the grid has points are kept
    // exact (rounding values that already lie on a coarse grid, e.g. ages in
    // years, would shift them all alike); others are rounded.
    make_key(false);
    group();
    if (grid > 0 && static_cast<double>(first.size()) > std::pow(grid, static_cast<double>(n_round))) {
      make_key(true);
      group();
    }
    DiscreteComponent& dc = dd.comp[c];
    const Index D = static_cast<Index>(first.size());
    dc.X = MatrixXd::Zero(D, p);
    for (Index a = 0; a < D; ++a)
      for (Index j = 0; j < dk; ++j) dc.X(a, cols[j]) = key[static_cast<std::size_t>(first[a]) * dk + j];
    dc.count = VectorXd::Zero(D);
    dc.wy = VectorXd::Zero(D);
    dc.rows = VectorXd::Zero(D);
    for (Index r = 0; r < nr; ++r) {
      const Index i = rows[r];
      dc.rows(id[c][r]) += 1;
      dc.count(id[c][r]) += w(i);
      dc.wy(id[c][r]) += w(i) * (y(i) - offset(i));
    }
  }
  dd.pair.resize(C);
  for (std::size_t c = 0; c < C; ++c)
    for (std::size_t l = c + 1; l < C; ++l) {
      const Index Dc = dd.comp[c].X.rows(), Dl = dd.comp[l].X.rows();
      DiscretePair pr;
      if (row_level) {
        pair_pattern(pr, id[c], id[l], Dc, Dl);
        dd.pair[c].push_back(std::move(pr));
        continue;
      }
      // dense when small and at least 1/8 full (a product with a sparse
      // matrix costs a few times more per entry than a dense one)
      const double cells = static_cast<double>(Dc) * static_cast<double>(Dl);
      pr.dense = cells <= dense_cells;
      if (pr.dense) {
        std::vector<char> seen(static_cast<std::size_t>(cells), 0);
        double filled = 0;
        for (Index r = 0; r < nr; ++r) {
          char& s = seen[static_cast<std::size_t>(id[c][r]) * static_cast<std::size_t>(Dl) + static_cast<std::size_t>(id[l][r])];
          if (!s && w(rows[r]) != 0) {
            s = 1;
            filled += 1;
          }
        }
        pr.dense = 8.0 * filled >= cells;
      }
      if (pr.dense) {
        pr.C = MatrixXd::Zero(Dc, Dl);
        for (Index r = 0; r < nr; ++r) pr.C(id[c][r], id[l][r]) += w(rows[r]);
        pr.Ct = pr.C.transpose();
      } else {
        std::vector<Eigen::Triplet<double>> t;
        t.reserve(static_cast<std::size_t>(nr));
        for (Index r = 0; r < nr; ++r) t.emplace_back(id[c][r], id[l][r], w(rows[r]));
        pr.Cs.resize(Dc, Dl);
        pr.Cs.setFromTriplets(t.begin(), t.end());
        pr.Cs.prune(0.0);  // (rows of weight 0)
        pr.CsT = pr.Cs.transpose();
      }
      dd.pair[c].push_back(std::move(pr));
    }
  if (row_level) dd.id = std::move(id);
  return dd;
}

}  // namespace scalegp
