// Centred ("ANOVA") kernels for additive models (Durrande et al. 2013; seed
// 004 eq. 8).  Along each input e a unit-variance 1-D kernel g_e is centred
// with respect to a discrete measure (nodes s_q, weights w_q):
//   s_e(x, y) = g_e(x, y) - m_e(x) m_e(y) / c_e,
//   m_e(x) = sum_q w_q g_e(x, s_q),   c_e = w' G_e(s, s) w,
// which is the covariance of g_e's process conditioned on sum_q w_q f(s_q) = 0,
// so every sample path averages to zero over the measure (PSD by construction).
// A term over inputs T has
//   k(x, y) = variance * sum_j coef_j prod_{e in A_j} (1 + s_e(x_e, y_e)),
// a polynomial in the centred kernels: with products {(T, +1), ({}, -1)} it is
// every interaction of the inputs of T except the constant; removing the
// products of lower-order terms present elsewhere in the model leaves, e.g.,
// the pure interaction s_1 s_2 of gp(x1, x2) beside gp(x1) and gp(x2).
#pragma once
#include "kernels.hpp"
#include <algorithm>
#include <utility>
#include <vector>

namespace scalegp {

struct Product {
  unsigned mask;  // inputs of the product (bit e = input e of the term)
  double coef;
};

struct CentredKernel {
  Kernel base;                  // 1-D profile type, log variance, log lengthscale per input
  std::vector<VectorXd> nodes;  // per input: centring nodes (standardised scale)
  std::vector<VectorXd> weights;
  std::vector<Product> products;

  Index dim() const { return static_cast<Index>(nodes.size()); }
  Kernel axis(Index e) const {  // unit-variance 1-D kernel of input e
    Kernel k;
    k.type = base.type;
    k.log_var = 0.0;
    k.log_ls = VectorXd::Constant(1, base.log_ls.size() == 1 ? base.log_ls(0) : base.log_ls(e));
    return k;
  }
};

// Quantities of one side (rows X, n x d) of a centred-kernel evaluation.
// When the rows of an input share few values (a term over several inputs
// on a grid: discretised covariates), the kernels along that input are
// evaluated at its distinct values only and copied to the rows (the same
// numbers: every entry depends on its own two values alone).
struct CentredSide {
  std::vector<MatrixXd> Xs;   // per input: scaled column (n x 1)
  std::vector<MatrixXd> Gs;   // per input: g_e(X, s) (n x Q)
  std::vector<MatrixXd> Ds;   // per input: dg/dr2 at (X, s)
  std::vector<VectorXd> m;    // per input: m_e(X)
  std::vector<std::vector<Index>> at;  // per input: each row's distinct value (empty: not grouped)
  std::vector<MatrixXd> Us;   // per input: the distinct scaled values (when grouped)
  std::vector<VectorXd> mu;   // per input: m_e at them
};

// The distinct values U of a column x and each row's among them, when they
// are at most half the rows (and the rows at least 32); else false, with
// `at` empty.
inline bool distinct_column(const Eigen::Ref<const MatrixXd>& x, MatrixXd& U, std::vector<Index>& at) {
  const Index n = x.rows();
  if (n < 32) return false;
  std::vector<Index> ord(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) ord[static_cast<std::size_t>(i)] = i;
  std::sort(ord.begin(), ord.end(), [&](Index a, Index b) { return x(a, 0) < x(b, 0); });
  at.assign(static_cast<std::size_t>(n), 0);
  std::vector<double> u;
  for (std::size_t t = 0; t < ord.size(); ++t) {
    const double v = x(ord[t], 0);
    if (u.empty() || v != u.back()) {
      u.push_back(v);
      if (2 * u.size() > static_cast<std::size_t>(n)) {
        at.clear();
        return false;
      }
    }
    at[static_cast<std::size_t>(ord[t])] = static_cast<Index>(u.size() - 1);
  }
  U = Eigen::Map<const MatrixXd>(u.data(), static_cast<Index>(u.size()), 1);
  return true;
}

// The rows at of U.
template <class Mat>
Mat gather_rows(const Mat& U, const std::vector<Index>& at) {
  Mat R(static_cast<Index>(at.size()), U.cols());
  for (Index j = 0; j < U.cols(); ++j)
    for (std::size_t i = 0; i < at.size(); ++i) R(static_cast<Index>(i), j) = U(at[i], j);
  return R;
}

// Quantities that depend on the hyperparameters only (the measure side).
struct CentredMeasure {
  std::vector<MatrixXd> ss;   // scaled nodes (Q x 1)
  std::vector<MatrixXd> Dss;  // dg/dr2 at (s, s)
  std::vector<double> c;      // c_e = w' G(s, s) w
};

inline CentredMeasure centred_measure(const CentredKernel& k) {
  CentredMeasure M;
  for (Index e = 0; e < k.dim(); ++e) {
    const Kernel a = k.axis(e);
    MatrixXd s = a.scale(k.nodes[e]), G, D;
    a.cross(s, s, G, D);
    M.ss.push_back(s);
    M.Dss.push_back(D);
    M.c.push_back(k.weights[e].dot(G * k.weights[e]));
  }
  return M;
}

inline CentredSide centred_side(const CentredKernel& k, const CentredMeasure& M, const Eigen::Ref<const MatrixXd>& X) {
  CentredSide S;
  S.at.resize(static_cast<std::size_t>(k.dim()));
  S.Us.resize(static_cast<std::size_t>(k.dim()));
  S.mu.resize(static_cast<std::size_t>(k.dim()));
  for (Index e = 0; e < k.dim(); ++e) {
    const std::size_t ue = static_cast<std::size_t>(e);
    const Kernel a = k.axis(e);
    S.Xs.push_back(a.scale(X.col(e)));
    const bool grouped = distinct_column(S.Xs.back(), S.Us[ue], S.at[ue]);
    MatrixXd G, D;
    a.cross(grouped ? S.Us[ue] : S.Xs.back(), M.ss[e], G, D);
    VectorXd m = G * k.weights[e];
    if (grouped) {
      S.mu[ue] = m;
      m = gather_rows(S.mu[ue], S.at[ue]);
      G = gather_rows(G, S.at[ue]);
      D = gather_rows(D, S.at[ue]);
    }
    S.m.push_back(std::move(m));
    S.Gs.push_back(std::move(G));
    S.Ds.push_back(std::move(D));
  }
  return S;
}

// Centred 1-D kernels s_e(X, Z) (and dg/dr2 at (X, Z) for gradients).
inline void centred_axes(const CentredKernel& k, const CentredMeasure& M, const CentredSide& X, const CentredSide& Z,
                         std::vector<MatrixXd>& Sx, std::vector<MatrixXd>& Dx) {
  Sx.resize(k.dim());
  Dx.resize(k.dim());
  for (Index e = 0; e < k.dim(); ++e) {
    const std::size_t ue = static_cast<std::size_t>(e);
    // grouped: at the distinct values, then copied to the rows
    const bool grouped = ue < X.at.size() && !X.at[ue].empty();
    k.axis(e).cross(grouped ? X.Us[ue] : X.Xs[e], Z.Xs[e], Sx[e], Dx[e]);
    Sx[e].noalias() -= (grouped ? X.mu[ue] : X.m[e]) * Z.m[e].transpose() / M.c[e];
    if (grouped) {
      Sx[e] = gather_rows(Sx[e], X.at[ue]);
      Dx[e] = gather_rows(Dx[e], X.at[ue]);
    }
  }
}

// The polynomial sum_j coef_j prod_{e in A_j} F_e of matrices F_e = 1 + s_e
// (elementwise), and its partial derivatives dP/dF_e when `dF` is non-null.
template <class Mat>
Mat product_polynomial(const std::vector<Product>& prods, const std::vector<Mat>& F, std::vector<Mat>* dF) {
  const Index r = F[0].rows(), c = F[0].cols();
  Mat P = Mat::Zero(r, c);
  if (dF) dF->assign(F.size(), Mat::Zero(r, c));
  for (const Product& p : prods) {
    Mat term = Mat::Constant(r, c, p.coef);
    for (std::size_t e = 0; e < F.size(); ++e)
      if (p.mask >> e & 1u) term.array() *= F[e].array();
    P += term;
    if (!dF) continue;
    for (std::size_t e = 0; e < F.size(); ++e) {
      if (!(p.mask >> e & 1u)) continue;
      Mat t = Mat::Constant(r, c, p.coef);
      for (std::size_t f = 0; f < F.size(); ++f)
        if (f != e && (p.mask >> f & 1u)) t.array() *= F[f].array();
      (*dF)[e] += t;
    }
  }
  return P;
}

// k(X, Z); keeps the per-axis centred kernels and D for gradients.
inline MatrixXd centred_cross(const CentredKernel& k, const CentredMeasure& M, const CentredSide& X,
                              const CentredSide& Z, std::vector<MatrixXd>& F, std::vector<MatrixXd>& Dx) {
  centred_axes(k, M, X, Z, F, Dx);
  for (auto& f : F) f.array() += 1.0;
  return k.base.variance() * product_polynomial<MatrixXd>(k.products, F, nullptr);
}

// diag k(x, x) of rows X, and F_e(x, x) = 1 + s_e(x, x).
inline VectorXd centred_diag(const CentredKernel& k, const CentredMeasure& M, const CentredSide& X,
                             std::vector<VectorXd>& Fd) {
  Fd.resize(k.dim());
  for (Index e = 0; e < k.dim(); ++e) Fd[e] = (2.0 - X.m[e].array().square() / M.c[e]).matrix();
  return k.base.variance() * product_polynomial<VectorXd>(k.products, Fd, nullptr);
}

// Gradient of <Kbar, k(X, Z)> + <gdiag, diag k(X, X)> (gdiag may be null)
// w.r.t. [log variance, log lengthscales] (added to g), the rows of X (gX) and
// of Z (gZ) when non-null.  F, Dx from centred_cross; Fd from centred_diag.
inline void centred_gradient(const CentredKernel& k, const CentredMeasure& M, const CentredSide& X,
                             const CentredSide& Z, const std::vector<MatrixXd>& F, const std::vector<MatrixXd>& Dx,
                             const MatrixXd& Kbar, const VectorXd* gdiag, const std::vector<VectorXd>* Fd,
                             Eigen::Ref<VectorXd> g, MatrixXd* gX, MatrixXd* gZ) {
  const double var = k.base.variance();
  std::vector<MatrixXd> dF;
  const MatrixXd P = product_polynomial(k.products, F, &dF);
  g(0) += var * (Kbar.array() * P.array()).sum();
  std::vector<VectorXd> dFd;
  if (gdiag) g(0) += var * gdiag->dot(product_polynomial(k.products, *Fd, &dFd));
  const bool iso = k.base.log_ls.size() == 1;
  for (Index e = 0; e < k.dim(); ++e) {
    const Kernel a = k.axis(e);
    const VectorXd& w = k.weights[e];
    const double c = M.c[e];
    const MatrixXd Fbar = var * Kbar.cwiseProduct(dF[e]);  // adjoint of s_e(X, Z)
    VectorXd gl = VectorXd::Zero(1);
    MatrixXd gx = MatrixXd::Zero(X.Xs[e].rows(), 1), gz = MatrixXd::Zero(Z.Xs[e].rows(), 1);
    // (i) through g_e(X, Z)
    cross_gradient(a, X.Xs[e], Z.Xs[e], Fbar.cwiseProduct(Dx[e]), gl, gX ? &gx : nullptr, gZ ? &gz : nullptr);
    // (ii) through m_e(X) (and the diagonal), (iii) through m_e(Z), (iv) through c_e
    VectorXd aX = -(Fbar * Z.m[e]) / c;
    double cbar = X.m[e].dot(Fbar * Z.m[e]) / (c * c);
    if (gdiag) {
      const VectorXd gd = var * gdiag->cwiseProduct(dFd[e]);  // adjoint of s_e(x, x) = 1 - m(x)^2 / c
      aX -= 2.0 * gd.cwiseProduct(X.m[e]) / c;
      cbar += gd.dot(X.m[e].cwiseAbs2()) / (c * c);
    }
    const VectorXd aZ = -(Fbar.transpose() * X.m[e]) / c;
    cross_gradient(a, X.Xs[e], M.ss[e], (aX * w.transpose()).cwiseProduct(X.Ds[e]), gl, gX ? &gx : nullptr, nullptr);
    cross_gradient(a, Z.Xs[e], M.ss[e], (aZ * w.transpose()).cwiseProduct(Z.Ds[e]), gl, gZ ? &gz : nullptr, nullptr);
    cross_gradient(a, M.ss[e], M.ss[e], (cbar * w * w.transpose()).cwiseProduct(M.Dss[e]), gl, nullptr, nullptr);
    g(1 + (iso ? 0 : e)) += gl(0);
    if (gX) gX->col(e) += gx.col(0);
    if (gZ) gZ->col(e) += gz.col(0);
  }
}

}  // namespace scalegp
