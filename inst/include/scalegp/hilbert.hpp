// The reduced-rank Hilbert-space basis of a stationary kernel (Solin and
// Sarkka 2020, Statistics and Computing 30; Riutort-Mayol, Burkner, Andersen,
// Solin and Vehtari 2023, Statistics and Computing 33).  On the box
// prod_k [-L_k, L_k] around centre c, the Laplacian's Dirichlet eigenfunctions
//   sine_j(x) = prod_k L_k^{-1/2} sin(omega_jk (x_k - c_k + L_k)),
//   omega_jk = pi j_k / (2 L_k),  j_k = 1..m_k   (the full grid; input 1 fastest)
// do not depend on any hyperparameter, and
//   k(x, x') ~ sum_j S(omega_j) sine_j(x) sine_j(x')
// with S the kernel's spectral density (angular frequency, d inputs):
//   SE:      log S = log var + (d/2) log 2 pi + sum_k log l_k - (1/2) sum_k u_k
//   Matern:  log S = log var + log C_{nu,d} + sum_k log l_k - (nu + d/2) log(2 nu + sum_k u_k)
// with u_k = l_k^2 omega_k^2 and C_{nu,d} = 2^d pi^{d/2} Gamma(nu + d/2) (2 nu)^nu / Gamma(nu)
// (kernels.hpp's parametrisation, (1 + sqrt(3) r) e^{-sqrt(3) r} and
// (1 + sqrt(5) r + 5 r^2 / 3) e^{-sqrt(5) r}).  The sines vanish outside the box.
#pragma once
#include "kernels.hpp"
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace scalegp {

constexpr double kHilbertPi = 3.14159265358979323846;

struct HilbertBasis {
  VectorXd centre, L;   // per input: the box's centre and half-width
  std::vector<Index> m;  // per input: the number of sines
  // per input: none (empty), or one number per sine subtracted from it (R:
  // the sine's mean over the data along the inputs a term is centred on,
  // e.g. all of them for mgcv's ti(); 0 along the others), so that the
  // product averages zero along those inputs.  Beyond the walls the sines
  // are 0, so a shifted input's table is minus its shift there: the term
  // goes on at its value at the wall instead of jumping to 0.
  std::vector<VectorXd> shift;

  Index dim() const { return static_cast<Index>(m.size()); }
  Index size() const {
    Index M = m.empty() ? 0 : 1;
    for (Index mk : m) M *= mk;
    return M;
  }
  // Frequency of sine j (its multi-index decoded, input 1 fastest) along input k.
  double omega(Index j, Index k) const {
    Index r = j;
    for (Index e = 0; e < k; ++e) r /= m[static_cast<std::size_t>(e)];
    const Index jk = r % m[static_cast<std::size_t>(k)] + 1;
    return kHilbertPi * static_cast<double>(jk) / (2.0 * L(k));
  }
  // The basis of inputs from..from+count-1 alone (the factors of the product form).
  HilbertBasis inputs(Index from, Index count) const {
    HilbertBasis b;
    b.centre = centre.segment(from, count);
    b.L = L.segment(from, count);
    b.m.assign(m.begin() + from, m.begin() + from + count);
    if (!shift.empty()) b.shift.assign(shift.begin() + from, shift.begin() + from + count);
    return b;
  }
  // Whether the features of a row with value x of input k are all 0: x is
  // NaN, or beyond the walls of an input without a (nonzero) shift.
  bool vanishes(Index k, double x) const {
    if (std::isnan(x)) return true;
    if (std::abs(x - centre(k)) <= L(k)) return false;
    return shift.empty() || shift[static_cast<std::size_t>(k)].cwiseAbs().maxCoeff() == 0.0;
  }
  void check() const {
    if (m.empty() || m.size() > 3) throw std::invalid_argument("a Hilbert basis has 1 to 3 inputs");
    if (centre.size() != dim() || L.size() != dim())
      throw std::invalid_argument("a Hilbert basis needs a centre and a half-width per input");
    if (!shift.empty()) {
      if (static_cast<Index>(shift.size()) != dim())
        throw std::invalid_argument("a Hilbert basis's shifts are one vector per input");
      for (Index k = 0; k < dim(); ++k)
        if (shift[static_cast<std::size_t>(k)].size() != m[static_cast<std::size_t>(k)] ||
            !shift[static_cast<std::size_t>(k)].allFinite())
          throw std::invalid_argument("a Hilbert basis's shift of an input needs one finite number per sine");
    }
    for (Index k = 0; k < dim(); ++k)
      if (!(L(k) > 0) || m[static_cast<std::size_t>(k)] < 1)
        throw std::invalid_argument("a Hilbert basis needs positive half-widths and at least one sine per input");
  }
};

// log S(omega_j) of every sine j into rho, and (when drho is given) its
// derivatives in the packed kernel parameters [log var, log l_1 (, .., log l_d)]
// (one lengthscale column when the kernel is isotropic).
inline void hilbert_log_spectrum(const HilbertBasis& b, const Kernel& ker, VectorXd& rho, MatrixXd* drho) {
  const Index d = b.dim(), M = b.size(), nls = ker.log_ls.size();
  if (nls != 1 && nls != d) throw std::invalid_argument("a Hilbert term needs one lengthscale or one per input");
  rho.resize(M);
  if (drho) drho->setZero(M, 1 + nls);
  const double dd = static_cast<double>(d);
  double nu = 0, logC = 0;
  const bool se = ker.type == KernelType::se;
  if (se) {
    logC = 0.5 * dd * std::log(2.0 * kHilbertPi);
  } else {
    nu = ker.type == KernelType::matern32 ? 1.5 : 2.5;
    logC = dd * std::log(2.0) + 0.5 * dd * std::log(kHilbertPi) + std::lgamma(nu + 0.5 * dd) + nu * std::log(2.0 * nu) -
           std::lgamma(nu);
  }
  double sum_log_ls = 0;
  for (Index k = 0; k < d; ++k) sum_log_ls += std::log(ker.ls(k));
  std::vector<double> u(static_cast<std::size_t>(d));
  for (Index j = 0; j < M; ++j) {
    double U = 0;
    for (Index k = 0; k < d; ++k) {
      const double w = ker.ls(k) * b.omega(j, k);
      u[static_cast<std::size_t>(k)] = w * w;
      U += w * w;
    }
    const double a = nu + 0.5 * dd;
    rho(j) = ker.log_var + logC + sum_log_ls - (se ? 0.5 * U : a * std::log(2.0 * nu + U));
    if (!drho) continue;
    (*drho)(j, 0) = 1.0;
    for (Index k = 0; k < d; ++k) {
      const double uk = u[static_cast<std::size_t>(k)];
      const double dk = se ? 1.0 - uk : 1.0 - 2.0 * a * uk / (2.0 * nu + U);
      (*drho)(j, nls == 1 ? 1 : 1 + k) += dk;
    }
  }
}

// sum_j g_j d^2 log S(omega_j) / d theta d theta' in the packed kernel
// parameters [log var, log l_1 (, .., log l_d)] (the log variance enters
// linearly): with u_k = l_k^2 omega_jk^2 and U = sum_k u_k,
//   SE:      d^2 / d log l_k d log l_k' = -2 u_k delta_kk'
//   Matern:  d^2 / d log l_k d log l_k' = -4 a u_k (delta_kk' (2 nu + U) - u_k') / (2 nu + U)^2,  a = nu + d/2
// (one lengthscale: the sums over k and k').
inline MatrixXd hilbert_log_spectrum_hessian(const HilbertBasis& b, const Kernel& ker, const VectorXd& g) {
  const Index d = b.dim(), M = b.size(), nls = ker.log_ls.size();
  MatrixXd H = MatrixXd::Zero(1 + nls, 1 + nls);
  const bool se = ker.type == KernelType::se;
  const double nu = se ? 0 : (ker.type == KernelType::matern32 ? 1.5 : 2.5), a = nu + 0.5 * static_cast<double>(d);
  VectorXd u(d);
  for (Index j = 0; j < M; ++j) {
    for (Index k = 0; k < d; ++k) {
      const double w = ker.ls(k) * b.omega(j, k);
      u(k) = w * w;
    }
    const double U = u.sum(), t = 2.0 * nu + U;
    for (Index k = 0; k < d; ++k)
      for (Index l = 0; l < d; ++l) {
        const double v = se ? (k == l ? -2.0 * u(k) : 0.0) : -4.0 * a * u(k) * ((k == l ? t : 0.0) - u(l)) / (t * t);
        H(nls == 1 ? 1 : 1 + k, nls == 1 ? 1 : 1 + l) += g(j) * v;
      }
  }
  return H;
}

// Features of rows Xc (one column per input): Phi(i, j) = sine_j(x_i) sd(j)
// (with shifts, each input's sine less its shift), the sines 0 beyond the
// walls; zero for a row with a NaN input.
inline void hilbert_features(const HilbertBasis& b, const Eigen::Ref<const MatrixXd>& Xc, const VectorXd& sd,
                             Eigen::Ref<MatrixXd> Phi) {
  const Index d = b.dim(), M = b.size(), n = Xc.rows();
  if (Xc.cols() != d) throw std::invalid_argument("a Hilbert term's rows have the wrong number of inputs");
  std::vector<VectorXd> tab(static_cast<std::size_t>(d));
  std::vector<Index> jk(static_cast<std::size_t>(d));
  for (Index i = 0; i < n; ++i) {
    bool zero = false;
    for (Index k = 0; k < d; ++k) {
      const double t = Xc(i, k) - b.centre(k), L = b.L(k);
      if (std::isnan(t)) zero = true;
      const Index mk = b.m[static_cast<std::size_t>(k)];
      VectorXd& s = tab[static_cast<std::size_t>(k)];
      s.resize(mk);
      if (std::abs(t) <= L) {
        const double scale = 1.0 / std::sqrt(L), a = kHilbertPi * (t + L) / (2.0 * L);
        for (Index j = 0; j < mk; ++j) s(j) = scale * std::sin(static_cast<double>(j + 1) * a);
      } else {
        s.setZero();
      }
      if (!b.shift.empty()) s -= b.shift[static_cast<std::size_t>(k)];
    }
    if (zero) {
      Phi.row(i).setZero();
      continue;
    }
    std::fill(jk.begin(), jk.end(), 0);
    for (Index j = 0; j < M; ++j) {
      double v = sd(j);
      for (Index k = 0; k < d; ++k) v *= tab[static_cast<std::size_t>(k)](jk[static_cast<std::size_t>(k)]);
      Phi(i, j) = v;
      for (Index k = 0; k < d; ++k) {  // next multi-index, input 1 fastest
        if (++jk[static_cast<std::size_t>(k)] < b.m[static_cast<std::size_t>(k)]) break;
        jk[static_cast<std::size_t>(k)] = 0;
      }
    }
  }
}

// The lower triangle of Phi' diag(w) Phi (upper triangle zero), Phi the
// features of rows Xc (hilbert_features()), from the product form of a term
// of d >= 2 inputs.  With the rows grouped by their value u of the last
// input, s(u) that input's sines at u and Phi1 the sines of the other inputs
// (sine_j = sine1_j1 * s_jd, input 1 fastest, so block (a, b) of the Gram
// belongs to sines a and b of the last input):
//   Phi' diag(w) Phi = diag(sd) [sum_u (s(u) s(u)') kron (Phi1_u' diag(w_u) Phi1_u)] diag(sd),
// which costs O(rows M1^2 + groups M^2 / 2) against O(rows M^2 / 2) for the
// features' product (M1 = M / m_d).  Rows whose features vanish
// (HilbertBasis::vanishes()) are skipped.  Serial, so the same for any thread count.  Returns false
// (G untouched) for a term of one input, or when there are more than
// rows / 8 groups (the features' product, in parallel, is then as quick).
inline bool hilbert_weighted_gram(const HilbertBasis& b, const MatrixXd& Xc, const VectorXd& w, const VectorXd& sd,
                                  MatrixXd& G) {
  const Index d = b.dim(), n = Xc.rows(), M = b.size();
  if (d < 2 || n == 0 || Xc.cols() != d || w.size() != n || sd.size() != M) return false;
  const std::size_t last = static_cast<std::size_t>(d - 1);
  const Index md = b.m[last], M1 = M / md;
  std::vector<Index> order;
  order.reserve(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) {
    bool kept = w(i) != 0;
    for (Index k = 0; k < d && kept; ++k) kept = !b.vanishes(k, Xc(i, k));
    if (kept) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](Index i, Index j) { return Xc(i, d - 1) < Xc(j, d - 1); });
  std::vector<std::size_t> start{0};
  for (std::size_t r = 1; r < order.size(); ++r)
    if (Xc(order[r], d - 1) != Xc(order[r - 1], d - 1)) start.push_back(r);
  start.push_back(order.size());
  const std::size_t U = order.empty() ? 0 : start.size() - 1;
  if (8 * U > static_cast<std::size_t>(n)) return false;
  // the bases of the other inputs and of the last one alone (unit prior sds)
  const HilbertBasis b1 = b.inputs(0, d - 1), bd = b.inputs(d - 1, 1);
  const VectorXd ones = VectorXd::Ones(M1), ones_d = VectorXd::Ones(md);
  MatrixXd Gu = MatrixXd::Zero(M, M);
  MatrixXd s(1, md);
  for (std::size_t g = 0; g < U; ++g) {
    const Index ng = static_cast<Index>(start[g + 1] - start[g]);
    MatrixXd X1(ng, d - 1), P(ng, M1);
    VectorXd wg(ng);
    for (Index r = 0; r < ng; ++r) {
      const Index i = order[start[g] + static_cast<std::size_t>(r)];
      X1.row(r) = Xc.row(i).head(d - 1);
      wg(r) = w(i);
    }
    hilbert_features(b1, X1, ones, P);
    const MatrixXd T = P.transpose() * (wg.asDiagonal() * P);
    hilbert_features(bd, Xc.block(order[start[g]], d - 1, 1, 1), ones_d, s);
    for (Index p = 0; p < md; ++p)
      for (Index q = 0; q <= p; ++q) Gu.block(p * M1, q * M1, M1, M1) += (s(0, p) * s(0, q)) * T;
  }
  G = sd.asDiagonal() * Gu * sd.asDiagonal();
  G.triangularView<Eigen::StrictlyUpper>().setZero();
  return true;
}

// v(i) = phi_i' S phi_i for the features phi_i of rows Xc (hilbert_features())
// and a symmetric S (M x M), from the product form of a term of d >= 2
// inputs.  With the rows grouped by their value u of the last input (as in
// hilbert_weighted_gram(): sine_j = sine1_j1 * s_jd, block (p, q) of
// St = diag(sd) S diag(sd) belongs to sines p and q of the last input),
//   v(i) = p_i' A_u p_i,   A_u = sum_{p,q} s_p(u) s_q(u) St_pq   (M1 x M1),
// p_i the sines of the other inputs at row i: O(groups M^2 + rows M1^2)
// against O(rows M^2 / 2) for the features' product.  Rows whose features
// vanish (HilbertBasis::vanishes()) get 0.  Each row's value is computed alike however the rows are split (by
// groups, in parallel through `for_groups(U, body)`, body(g0, g1) the groups
// g0..g1-1).  Returns false (v untouched) for a term of one input, or when
// the groups' cost is over half of the product's.
template <class ForGroups>
bool hilbert_quadratic_diag(const HilbertBasis& b, const MatrixXd& Xc, const VectorXd& sd, const MatrixXd& S,
                            VectorXd& v, ForGroups for_groups) {
  const Index d = b.dim(), n = Xc.rows(), M = b.size();
  if (d < 2 || n == 0 || Xc.cols() != d || sd.size() != M || S.rows() != M || S.cols() != M) return false;
  const std::size_t last = static_cast<std::size_t>(d - 1);
  const Index md = b.m[last], M1 = M / md;
  std::vector<Index> order;
  order.reserve(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) {
    bool kept = true;
    for (Index k = 0; k < d && kept; ++k) kept = !b.vanishes(k, Xc(i, k));
    if (kept) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](Index i, Index j) { return Xc(i, d - 1) < Xc(j, d - 1); });
  std::vector<std::size_t> start{0};
  for (std::size_t r = 1; r < order.size(); ++r)
    if (Xc(order[r], d - 1) != Xc(order[r - 1], d - 1)) start.push_back(r);
  start.push_back(order.size());
  const std::size_t U = order.empty() ? 0 : start.size() - 1;
  const double Md = static_cast<double>(M), M1d = static_cast<double>(M1);
  if (static_cast<double>(U) * Md * Md + static_cast<double>(n) * M1d * M1d > 0.25 * static_cast<double>(n) * Md * Md)
    return false;
  const HilbertBasis b1 = b.inputs(0, d - 1), bd = b.inputs(d - 1, 1);
  // every group's A_u by one product (serial): column p + md q of B is
  // block (p, q) of St, column u of W is s(u) kron s(u)
  MatrixXd B(M1 * M1, md * md), W(md * md, static_cast<Index>(U)), s(1, md);
  for (Index q = 0; q < md; ++q)
    for (Index p = 0; p < md; ++p)
      Eigen::Map<MatrixXd>(B.col(p + md * q).data(), M1, M1) =
          sd.segment(p * M1, M1).asDiagonal() * S.block(p * M1, q * M1, M1, M1) * sd.segment(q * M1, M1).asDiagonal();
  const VectorXd ones = VectorXd::Ones(M1), ones_d = VectorXd::Ones(md);
  for (std::size_t g = 0; g < U; ++g) {
    hilbert_features(bd, Xc.block(order[start[g]], d - 1, 1, 1), ones_d, s);
    for (Index q = 0; q < md; ++q)
      for (Index p = 0; p < md; ++p) W(p + md * q, static_cast<Index>(g)) = s(0, p) * s(0, q);
  }
  const MatrixXd As = B * W;
  v.setZero(n);
  for_groups(U, [&](std::size_t g0, std::size_t g1) {
    for (std::size_t g = g0; g < g1; ++g) {
      const Index ng = static_cast<Index>(start[g + 1] - start[g]);
      const Eigen::Map<const MatrixXd> A(As.col(static_cast<Index>(g)).data(), M1, M1);
      MatrixXd X1(ng, d - 1), P(ng, M1);
      for (Index r = 0; r < ng; ++r) X1.row(r) = Xc.row(order[start[g] + static_cast<std::size_t>(r)]).head(d - 1);
      hilbert_features(b1, X1, ones, P);
      const MatrixXd PA = P * A;
      for (Index r = 0; r < ng; ++r) v(order[start[g] + static_cast<std::size_t>(r)]) = PA.row(r).dot(P.row(r));
    }
  });
  return true;
}

// A Hilbert term of d >= 2 inputs at given rows (its distinct values in a
// discretised fit) in the product form of its features:
//   F(i, j1 + M1 k) = sd(j1 + M1 k) P(i, j1) Sv(v_i, k),
// P the sines of the other inputs at row i times the row's scale (a by
// value), Sv the last input's sines at its V distinct values, v_i the index
// of row i's value.  Only sd depends on the hyperparameters.  The products
// of the pairs of components through their observed value pairs
// (data_pass.hpp) then touch P's rows (M1 numbers) per observed pair
// instead of F's (M = M1 md).
struct HilbertTensor {
  Index M1 = 0, md = 0;
  std::vector<int> v;
  MatrixXd P, Sv;
  VectorXd sd;
  bool empty() const { return M1 == 0; }
  Index values() const { return Sv.rows(); }
};

// The product form of the features of rows Xc (scale: empty, or one factor
// per row); false (t untouched) for a term of one input.
inline bool hilbert_tensor(const HilbertBasis& b, const MatrixXd& Xc, const VectorXd& scale, const VectorXd& sd,
                           HilbertTensor& t) {
  const Index d = b.dim(), n = Xc.rows(), M = b.size();
  if (d < 2 || Xc.cols() != d || sd.size() != M || (scale.size() != 0 && scale.size() != n)) return false;
  const Index md = b.m[static_cast<std::size_t>(d - 1)], M1 = M / md;
  const HilbertBasis b1 = b.inputs(0, d - 1), bd = b.inputs(d - 1, 1);
  std::vector<double> u;
  for (Index i = 0; i < n; ++i)
    if (!std::isnan(Xc(i, d - 1))) u.push_back(Xc(i, d - 1));  // (NaN rows: no features, value 0 below)
  std::sort(u.begin(), u.end());
  u.erase(std::unique(u.begin(), u.end()), u.end());
  t.M1 = M1;
  t.md = md;
  t.sd = sd;
  t.Sv.resize(static_cast<Index>(u.size()), md);
  hilbert_features(bd, Eigen::Map<const MatrixXd>(u.data(), static_cast<Index>(u.size()), 1), VectorXd::Ones(md), t.Sv);
  t.v.resize(static_cast<std::size_t>(n));
  t.P.resize(n, M1);
  hilbert_features(b1, Xc.leftCols(d - 1), VectorXd::Ones(M1), t.P);
  for (Index i = 0; i < n; ++i) {
    const auto it = std::lower_bound(u.begin(), u.end(), Xc(i, d - 1));
    const bool found = it != u.end() && *it == Xc(i, d - 1);
    t.v[static_cast<std::size_t>(i)] = found ? static_cast<int>(it - u.begin()) : 0;
    if (!found) t.P.row(i).setZero();
    if (scale.size() != 0) t.P.row(i) *= scale(i);
  }
  return true;
}

// The work of W F (W sparse with nnz entries, its columns the tensor's rows,
// `rows` rows) through the product form, hilbert_tensor_times(); and of the
// same by F's rows (nnz M).
inline double hilbert_tensor_work(const HilbertTensor& t, double nnz, double rows) {
  return nnz * static_cast<double>(t.M1) + rows * static_cast<double>(t.M1 * t.md) * static_cast<double>(t.values());
}

// W F (rows(W) x M) for a row-major sparse W whose columns are the tensor's
// rows: for each row a of W,
//   Y_a(j1, v) = sum_{b: v_b = v} W(a, b) P(b, j1),   (W F)(a, j1 + M1 k) = sd(j1 + M1 k) (Y_a Sv)(j1, k),
// the rows of W by blocks (`for_blocks(rows, body)`, body(a0, a1) the rows
// a0..a1-1, each block computed alike whichever thread runs it).
template <class Sparse, class ForBlocks>
MatrixXd hilbert_tensor_times(const HilbertTensor& t, const Sparse& W, ForBlocks for_blocks) {
  const Index R = W.rows(), M1 = t.M1, md = t.md, V = t.values();
  MatrixXd out(R, M1 * md);
  for_blocks(static_cast<std::size_t>(R), [&](std::size_t a0, std::size_t a1) {
    const Index na = static_cast<Index>(a1 - a0);
    MatrixXd Y = MatrixXd::Zero(na * M1, V);
    for (Index a = 0; a < na; ++a)
      for (typename Sparse::InnerIterator it(W, static_cast<Index>(a0) + a); it; ++it)
        Y.col(t.v[static_cast<std::size_t>(it.col())]).segment(a * M1, M1) += it.value() * t.P.row(it.col()).transpose();
    const MatrixXd Z = Y * t.Sv;  // (na M1) x md
    for (Index a = 0; a < na; ++a)
      for (Index k = 0; k < md; ++k)
        out.row(static_cast<Index>(a0) + a).segment(k * M1, M1) =
            Z.col(k).segment(a * M1, M1).transpose().cwiseProduct(t.sd.segment(k * M1, M1).transpose());
  });
  return out;
}

// out(pos[e]) (pos null: out(e)) = 2 H(a, :) . F(b, :) for each entry e =
// (a, b) of the pattern W (row-major; rows: H's rows, columns: the tensor's
// rows), through Z_a = reshape(H(a, :) .* sd', M1, md) Sv' (M1 x V):
// 2 P(b, :) . Z_a(:, v_b).  Blocks of rows as hilbert_tensor_times().
template <class Sparse, class ForBlocks>
void hilbert_tensor_dots(const HilbertTensor& t, const MatrixXd& H, const Sparse& W, const int* pos, VectorXd& out,
                         ForBlocks for_blocks) {
  const Index R = W.rows(), M1 = t.M1, md = t.md;
  const int* outer = W.outerIndexPtr();
  const int* inner = W.innerIndexPtr();
  for_blocks(static_cast<std::size_t>(R), [&](std::size_t a0, std::size_t a1) {
    const Index na = static_cast<Index>(a1 - a0);
    MatrixXd Hr(na * M1, md);
    for (Index a = 0; a < na; ++a)
      for (Index k = 0; k < md; ++k)
        Hr.col(k).segment(a * M1, M1) =
            H.row(static_cast<Index>(a0) + a).segment(k * M1, M1).transpose().cwiseProduct(t.sd.segment(k * M1, M1));
    const MatrixXd Z = Hr * t.Sv.transpose();  // (na M1) x V
    for (Index a = 0; a < na; ++a)
      for (int e = outer[a0 + static_cast<std::size_t>(a)]; e < outer[a0 + static_cast<std::size_t>(a) + 1]; ++e) {
        const int b = inner[e];
        out(pos ? pos[e] : e) = 2.0 * Z.col(t.v[static_cast<std::size_t>(b)]).segment(a * M1, M1).dot(t.P.row(b).transpose());
      }
  });
}

}  // namespace scalegp
