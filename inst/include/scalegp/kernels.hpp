// Stationary kernels (squared exponential, Matern 3/2 and 5/2) with ARD or
// isotropic lengthscales.  Every kernel is a function of the scaled squared
// distance r2 = sum_d (x_d - z_d)^2 / l_d^2, so one profile k(r2) and its
// derivative dk/dr2 give all gradients (hyperparameters and inputs) through
// the contraction in `cross_gradient`.
#pragma once
#include "linalg.hpp"
#include <string>

namespace scalegp {

enum class KernelType { se, matern32, matern52 };

inline KernelType kernel_from_string(const std::string& s) {
  if (s == "se") return KernelType::se;
  if (s == "matern32") return KernelType::matern32;
  if (s == "matern52") return KernelType::matern52;
  throw std::invalid_argument("unknown kernel '" + s + "'");
}

struct Kernel {
  KernelType type = KernelType::se;
  double log_var = 0.0;   // log variance
  VectorXd log_ls;        // log lengthscales: one per input (ARD) or a single one

  double variance() const { return std::exp(log_var); }
  // Lengthscale of input dimension d.
  double ls(Index d) const { return std::exp(log_ls.size() == 1 ? log_ls(0) : log_ls(d)); }
  Index n_params() const { return 1 + log_ls.size(); }

  // Correlation profile c(r2) and dc/dr2 (the variance multiplies both).
  void profile(double r2, double& c, double& dc) const {
    switch (type) {
      case KernelType::se:
        c = std::exp(-0.5 * r2);
        dc = -0.5 * c;
        return;
      case KernelType::matern32: {
        const double a = std::sqrt(3.0 * r2), e = std::exp(-a);
        c = (1.0 + a) * e;
        dc = -1.5 * e;
        return;
      }
      case KernelType::matern52: {
        const double a = std::sqrt(5.0 * r2), e = std::exp(-a);
        c = (1.0 + a + 5.0 * r2 / 3.0) * e;
        dc = -(5.0 / 6.0) * (1.0 + a) * e;
        return;
      }
    }
  }

  // Inputs divided by their lengthscales.
  MatrixXd scale(const Eigen::Ref<const MatrixXd>& X) const {
    MatrixXd Xs = X;
    for (Index d = 0; d < X.cols(); ++d) Xs.col(d) /= ls(d);
    return Xs;
  }

  // K = k(X, Z) and D = dk/dr2 for pre-scaled inputs Xs, Zs.
  void cross(const Eigen::Ref<const MatrixXd>& Xs, const Eigen::Ref<const MatrixXd>& Zs,
             MatrixXd& K, MatrixXd& D) const {
    const VectorXd xx = Xs.rowwise().squaredNorm(), zz = Zs.rowwise().squaredNorm();
    K.noalias() = Xs * Zs.transpose();
    D.resize(K.rows(), K.cols());
    const double s2 = variance();
    for (Index j = 0; j < K.cols(); ++j)
      for (Index i = 0; i < K.rows(); ++i) {
        const double r2 = std::max(0.0, xx(i) + zz(j) - 2.0 * K(i, j));
        double c = 0, dc = 0;
        profile(r2, c, dc);
        K(i, j) = s2 * c;
        D(i, j) = s2 * dc;
      }
  }

  MatrixXd cross(const Eigen::Ref<const MatrixXd>& X, const Eigen::Ref<const MatrixXd>& Z) const {
    MatrixXd K, D;
    cross(scale(X), scale(Z), K, D);
    return K;
  }
};

// Gradients of <Kbar, k(X, Z)> for a given adjoint Kbar, with E = Kbar .* D
// (D = dk/dr2 from `cross`) and pre-scaled inputs.  Adds to g_logls (size of
// log_ls), and to gX / gZ (unscaled input gradients) when they are non-null.
// The log-variance gradient is <Kbar, K> and is left to the caller.
inline void cross_gradient(const Kernel& k, const Eigen::Ref<const MatrixXd>& Xs,
                           const Eigen::Ref<const MatrixXd>& Zs, const MatrixXd& E,
                           Eigen::Ref<VectorXd> g_logls, MatrixXd* gX, MatrixXd* gZ) {
  const VectorXd e = E.rowwise().sum(), c = E.colwise().sum().transpose();
  const MatrixXd XtEZ = Xs.transpose() * E;  // d x M
  for (Index d = 0; d < Xs.cols(); ++d) {
    // sum_nm E_nm (xs_nd - zs_md)^2
    const double q = Xs.col(d).array().square().matrix().dot(e) -
                     2.0 * XtEZ.row(d).dot(Zs.col(d)) +
                     Zs.col(d).array().square().matrix().dot(c);
    g_logls(g_logls.size() == 1 ? 0 : d) += -2.0 * q;
    const double inv_l = 1.0 / k.ls(d);
    if (gZ) gZ->col(d) += 2.0 * inv_l * (Zs.col(d).cwiseProduct(c) - XtEZ.row(d).transpose());
    if (gX) gX->col(d) += 2.0 * inv_l * (Xs.col(d).cwiseProduct(e) - E * Zs.col(d));
  }
}

}  // namespace scalegp
