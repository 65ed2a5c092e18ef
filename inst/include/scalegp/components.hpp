// The additive components of a model and their whitened features.
//   stationary  a GP over its inputs with a stationary kernel (SE, Matern)
//   centred     a GP with a centred (ANOVA) kernel, see anova.hpp
//   factor      an i.i.d. random effect of a factor (a GP with a delta
//               kernel); its inducing points are all levels, so it is exact
//   linear      parametric coefficients beta ~ N(0, diag(prior_sd^2))
//   hilbert     a GP over 1-3 inputs with a stationary kernel in the
//               reduced-rank Hilbert-space basis (Solin and Sarkka 2020;
//               Riutort-Mayol et al. 2023): fixed sines on a box, the
//               kernel only in their prior variances (hilbert.hpp)
// For each, u = L v with whitened v ~ N(0, I): the features of a row are
// phi = L^{-1} k(Z, x) (GP kinds), onehot * sd (factor; code -1, a level not
// seen in the fit: 0, its variance left unexplained), x * prior_sd (linear),
// phi_j(x) sqrt(S(omega_j)) (hilbert: the weights of the sines are w = D v,
// D = diag(sqrt(S(omega_j))), with no residual variance).
#pragma once
#include "anova.hpp"
#include "hilbert.hpp"
#include "kernels.hpp"
#include <vector>

namespace scalegp {

enum class Kind { stationary, centred, factor, linear, hilbert };

struct Component {
  Kind kind = Kind::stationary;
  std::vector<Index> cols;     // columns of the input matrix (factor: one column of 0-based codes)
  Kernel kernel;               // stationary; factor uses log_var only
  CentredKernel centred;       // centred
  MatrixXd Z;                  // inducing inputs (stationary, centred)
  Index levels = 0;            // factor
  VectorXd prior_sd;           // linear
  bool learn_kernel = true;
  // Priors of the hyperparameters (none when zero / empty): the kernel sd
  // sqrt(variance) ~ half-normal(0, sd_prior^2); each lengthscale
  // ~ inverse-gamma(ls_a, ls_b) (shape, scale; standardised inputs).
  double sd_prior = 0;
  VectorXd ls_a, ls_b;
  // A `by` column (>= 0): the component is f(x) * z with z that column
  // (mgcv's by =: a numeric variable, or the indicator of a factor level).
  Index by_col = -1;
  HilbertBasis basis;          // hilbert: the box and the sines per input
  // Lower bounds of the log lengthscales (empty: the common bound, -7); a
  // hilbert term cannot represent lengthscales much below its basis's.
  VectorXd log_ls_min;

  bool has_inducing() const { return kind == Kind::stationary || kind == Kind::centred; }
  bool has_kernel() const { return kind != Kind::linear; }
  Index size() const {
    return has_inducing() ? Z.rows()
           : kind == Kind::factor  ? levels
           : kind == Kind::hilbert ? basis.size()
                                   : static_cast<Index>(cols.size());
  }
  // Lower bound of log lengthscale j when it is moved.
  double ls_lower(Index j) const { return log_ls_min.size() ? std::max(-7.0, log_ls_min(j)) : -7.0; }
  Index dim() const { return static_cast<Index>(cols.size()); }
  const Kernel& hyper() const { return kind == Kind::centred ? centred.base : kernel; }
  Kernel& hyper() { return kind == Kind::centred ? centred.base : kernel; }
  Index n_kernel_params() const { return has_kernel() ? (kind == Kind::factor ? 1 : hyper().n_params()) : 0; }
};

// Hyperparameter-dependent quantities of one component (per iteration).
struct ComponentPrior {
  MatrixXd L, Kuu, Duu, Zs;           // Cholesky of K_uu (+ jitter), K_uu (+ jitter), dk/dr2, scaled Z
  double jitter = 0;
  CentredMeasure measure;             // centred
  CentredSide zside;
  std::vector<MatrixXd> Fuu, Duu_axes;
  VectorXd sd;                        // hilbert: sqrt of the spectral density at each sine's frequency
  MatrixXd drho;                      // hilbert: d log S / d [log var, log ls]
};

inline ComponentPrior component_prior(const Component& k, double rel_jitter) {
  ComponentPrior p;
  switch (k.kind) {
    case Kind::stationary:
      p.Zs = k.kernel.scale(k.Z);
      k.kernel.cross(p.Zs, p.Zs, p.Kuu, p.Duu);
      break;
    case Kind::centred:
      p.measure = centred_measure(k.centred);
      p.zside = centred_side(k.centred, p.measure, k.Z);
      p.Kuu = centred_cross(k.centred, p.measure, p.zside, p.zside, p.Fuu, p.Duu_axes);
      break;
    case Kind::hilbert: {
      VectorXd rho;
      hilbert_log_spectrum(k.basis, k.kernel, rho, &p.drho);
      p.sd = (0.5 * rho.array()).exp().matrix();
      return p;
    }
    default:
      return p;
  }
  // jitter proportional to the kernel variance, so that d jitter / d log var = jitter
  p.L = jitter_cholesky(p.Kuu, rel_jitter, "the inducing-point covariance", 3, &p.jitter, k.hyper().variance());
  p.Kuu.diagonal().array() += p.jitter;
  return p;
}

// Per-block quantities kept for the gradient.
struct ComponentRows {
  VectorXd resid;                     // k(x, x) - |phi|^2 of this component
  MatrixXd K, D, Xs;                  // stationary
  CentredSide side;                   // centred
  std::vector<MatrixXd> F, Dx;
  std::vector<VectorXd> Fd;
  std::vector<Index> code;            // factor
  // (hilbert: K holds the features, before any by scaling)
  VectorXd by;                        // the by column's values (Component::by_col)
};

// Whitened features of rows Xc (the component's columns) into Phic; adds the
// prior variance not explained by the inducing points, k(x,x) - |phi|^2, to resid.
inline void component_features(const Component& k, const ComponentPrior& p, const MatrixXd& Xc,
                               Eigen::Ref<MatrixXd> Phic, Eigen::Ref<VectorXd> resid, ComponentRows& r) {
  switch (k.kind) {
    case Kind::stationary: {
      r.Xs = k.kernel.scale(Xc);
      k.kernel.cross(r.Xs, p.Zs, r.K, r.D);
      Phic = r.K;
      solve_right_LT(p.L, Phic);
      resid.array() += k.kernel.variance() - Phic.rowwise().squaredNorm().array();
      return;
    }
    case Kind::centred: {
      r.side = centred_side(k.centred, p.measure, Xc);
      r.K = centred_cross(k.centred, p.measure, r.side, p.zside, r.F, r.Dx);
      const VectorXd kd = centred_diag(k.centred, p.measure, r.side, r.Fd);
      Phic = r.K;
      solve_right_LT(p.L, Phic);
      resid += kd - Phic.rowwise().squaredNorm();
      return;
    }
    case Kind::factor: {
      const double sd = std::sqrt(k.kernel.variance());
      Phic.setZero();
      r.code.resize(Xc.rows());
      for (Index i = 0; i < Xc.rows(); ++i) {
        const double x = Xc(i, 0);  // 0-based level code; -1: a level not seen in the fit
        if (x == -1) {  // (its effect is the prior's: no feature, all of the variance unexplained)
          r.code[i] = -1;
          resid(i) += k.kernel.variance();
          continue;
        }
        if (!(x >= 0 && x < static_cast<double>(k.levels)) || x != std::floor(x))
          throw std::invalid_argument("a factor level code is not an integer in [0, levels) or -1");
        r.code[i] = static_cast<Index>(x);
        Phic(i, r.code[i]) = sd;
      }
      return;
    }
    case Kind::linear:
      Phic = Xc * k.prior_sd.asDiagonal();
      return;
    case Kind::hilbert:
      hilbert_features(k.basis, Xc, p.sd, Phic);
      r.K = Phic;  // (for the gradient through the prior variance |phi|^2: component_row_gradient())
      return;
  }
}

// The lower triangle of Phic' diag(w) Phic (upper triangle zero) at rows Xc
// from the component's structure, when it has one that makes this cheaper
// than the product of its features (hilbert: a term of several inputs on
// few values of its last input, hilbert_weighted_gram()); false otherwise.
inline bool component_gram_lower(const Component& k, const ComponentPrior& p, const MatrixXd& Xc, const VectorXd& w,
                                 MatrixXd& G) {
  switch (k.kind) {
    case Kind::hilbert:
      return hilbert_weighted_gram(k.basis, Xc, w, p.sd, G);
    default:
      return false;
  }
}

// v(i) = phic_i' S phic_i at rows Xc (S symmetric, size() square) from the
// component's structure when it has one that makes this cheaper than the
// features' product (hilbert: a term of several inputs on few values of its
// last input, hilbert_quadratic_diag(); `for_groups` as there); false
// otherwise.
template <class ForGroups>
bool component_quadratic_diag(const Component& k, const ComponentPrior& p, const MatrixXd& Xc, const MatrixXd& S,
                              VectorXd& v, ForGroups for_groups) {
  switch (k.kind) {
    case Kind::hilbert:
      return hilbert_quadratic_diag(k.basis, Xc, p.sd, S, v, for_groups);
    default:
      return false;
  }
}

// The product form of the features at rows Xc (scale: empty, or a factor
// per row) when the component has one (hilbert: a term of several inputs,
// hilbert_tensor()); false otherwise.
inline bool component_tensor(const Component& k, const ComponentPrior& p, const MatrixXd& Xc, const VectorXd& scale,
                             HilbertTensor& t) {
  return k.kind == Kind::hilbert && hilbert_tensor(k.basis, Xc, scale, p.sd, t);
}

// The component's part of the predictor's mean, Phic m_c, at rows Xc without
// forming the features: K(Xc, Z) (L^{-T} m_c), the whitening applied once to
// m_c instead of to every row (and no variances).
inline VectorXd component_mean(const Component& k, const ComponentPrior& p, const MatrixXd& Xc, const VectorXd& mc,
                               ComponentRows& r) {
  switch (k.kind) {
    case Kind::stationary:
      r.Xs = k.kernel.scale(Xc);
      k.kernel.cross(r.Xs, p.Zs, r.K, r.D);
      return r.K * p.L.transpose().triangularView<Eigen::Upper>().solve(mc);
    case Kind::centred:
      r.side = centred_side(k.centred, p.measure, Xc);
      r.K = centred_cross(k.centred, p.measure, r.side, p.zside, r.F, r.Dx);
      return r.K * p.L.transpose().triangularView<Eigen::Upper>().solve(mc);
    default: {
      MatrixXd Phic(Xc.rows(), k.size());
      VectorXd resid = VectorXd::Zero(Xc.rows());
      component_features(k, p, Xc, Phic, resid, r);
      return Phic * mc;
    }
  }
}

// Data part of the gradient w.r.t. [kernel parameters] (g) and Z (gZ, may be
// null) given the adjoint of the features, Phibar_c, and of the variances, gam.
inline void component_row_gradient(const Component& k, const ComponentPrior& p, const ComponentRows& r,
                                   const Eigen::Ref<const MatrixXd>& Phibar, const VectorXd& gam,
                                   Eigen::Ref<VectorXd> g, MatrixXd* gZ) {
  switch (k.kind) {
    case Kind::stationary: {
      MatrixXd Kbar = Phibar;
      solve_right_L(p.L, Kbar);  // adjoint of K_fu
      g(0) += (Kbar.array() * r.K.array()).sum() + k.kernel.variance() * gam.sum();
      cross_gradient(k.kernel, r.Xs, p.Zs, Kbar.cwiseProduct(r.D), g.tail(k.kernel.log_ls.size()), nullptr, gZ);
      return;
    }
    case Kind::centred: {
      MatrixXd Kbar = Phibar;
      solve_right_L(p.L, Kbar);
      centred_gradient(k.centred, p.measure, r.side, p.zside, r.F, r.Dx, Kbar, &gam, &r.Fd, g, nullptr, gZ);
      return;
    }
    case Kind::factor: {  // phi = sd * onehot: d phi / d log var = phi / 2
      // plus d k(x,x)/d log var = var (the -2 gamma phi part of Phibar and this cancel: resid = 0)
      const double sd = std::sqrt(k.kernel.variance());
      // (a row of an unseen level, code -1: phi = 0 and resid = var, whose derivative is the same var)
      for (Index i = 0; i < Phibar.rows(); ++i)
        if (r.code[i] >= 0) g(0) += 0.5 * sd * Phibar(i, r.code[i]);
      g(0) += k.kernel.variance() * gam.sum();
      return;
    }
    case Kind::hilbert: {
      // The adjoint Phibar treats the row's variance as k(x,x) - |phi|^2 (its
      // -2 gam phi part), as for the inducing kinds; here k(x,x) = |phi|^2
      // (no residual variance), so add d|phi_i|^2/d theta = sum_j phi_ij^2 drho_j
      // (as the factor kind adds var * gam).  The rest is in
      // component_prior_gradient().
      const VectorXd w = r.K.array().square().matrix().transpose() * gam;
      g += p.drho.transpose() * w;
      return;
    }
    case Kind::linear:
      return;
  }
}

// Whether component_row_gradient() reads the adjoint of the features
// (the hilbert and linear kinds do not: a Hilbert term's gradient comes from
// Phi' Phibar, which the engines form from the pass's r and Q, and from the
// variances' adjoint).
inline bool reads_feature_adjoint(const Component& k) { return k.kind != Kind::hilbert && k.kind != Kind::linear; }

// Gradient through the whitening L (the Cholesky factor of K_uu), given
// Y = (Phibar' Phi) restricted to this component:
//   Kbar_uu = -L^{-T} sym(Psi(Y)) L^{-1},  Psi = lower triangle, halved diagonal.
inline void component_prior_gradient(const Component& k, const ComponentPrior& p, MatrixXd Y,
                                     Eigen::Ref<VectorXd> g, MatrixXd& gZ) {
  if (k.kind == Kind::hilbert) {
    // phi_ij = sine_j(x_i) exp(rho_j / 2): d phi_ij / d theta = phi_ij drho_j / 2,
    // so the gradient is (1/2) sum_j (Phi' Phibar)_jj drho_j / d theta
    g += 0.5 * p.drho.transpose() * Y.diagonal();
    return;
  }
  if (!k.has_inducing()) return;
  Y.triangularView<Eigen::StrictlyUpper>().setZero();
  Y.diagonal() *= 0.5;
  MatrixXd Kbar = -0.5 * (Y + Y.transpose());
  solve_right_L(p.L, Kbar);
  MatrixXd KbarT = Kbar.transpose();
  solve_right_L(p.L, KbarT);  // L^{-T} sym(Psi(Y)) L^{-1}, symmetric
  Kbar = KbarT;
  MatrixXd gZuu = MatrixXd::Zero(k.Z.rows(), k.dim());
  if (k.kind == Kind::stationary) {
    g(0) += (Kbar.array() * p.Kuu.array()).sum();  // K_uu includes the jitter
    cross_gradient(k.kernel, p.Zs, p.Zs, Kbar.cwiseProduct(p.Duu), g.tail(k.kernel.log_ls.size()), &gZuu, &gZuu);
  } else {
    // the jitter scales with the variance: d(K_uu + jitter I)/d log var = K_uu + jitter I
    g(0) += p.jitter * Kbar.trace();
    centred_gradient(k.centred, p.measure, p.zside, p.zside, p.Fuu, p.Duu_axes, Kbar, nullptr, nullptr, g, &gZuu,
                     &gZuu);
  }
  gZ += gZuu;
}

}  // namespace scalegp
