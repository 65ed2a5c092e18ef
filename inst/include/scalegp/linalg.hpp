// Dense linear-algebra helpers shared by every engine: a Cholesky factorisation
// with escalating jitter, triangular solves and log-determinants.
#pragma once
#include <Eigen/Dense>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

namespace scalegp {

using Eigen::Index;
using Eigen::MatrixXd;
using Eigen::VectorXd;

// Thrown for numerical failures; the R glue turns it into an R error.
struct numerical_error : std::runtime_error {
  explicit numerical_error(const std::string& what) : std::runtime_error(what) {}
};

// Lower Cholesky factor of A + jitter * I.  The first attempt adds
// `rel_jitter * scale` (scale defaults to mean(diag A)); on failure the jitter grows tenfold, up to
// `retries` more times, before a numerical_error explains what to try.
// `what` names the matrix in the error message.  The jitter actually used is
// returned through `used` when it is non-null.
inline MatrixXd jitter_cholesky(const MatrixXd& A, double rel_jitter, const char* what,
                                int retries = 3, double* used = nullptr, double scale = 0.0) {
  const Index n = A.rows();
  if (n == 0) return MatrixXd(0, 0);
  if (!A.allFinite())
    throw numerical_error(std::string("non-finite entries in ") + what +
                          "; the optimisation diverged (try a smaller learning_rate)");
  if (scale <= 0) scale = A.diagonal().mean();
  if (!(scale > 0)) scale = 1.0;
  double jitter = rel_jitter * scale;
  for (int attempt = 0; attempt <= retries; ++attempt) {
    MatrixXd B = A;
    B.diagonal().array() += jitter;
    Eigen::LLT<MatrixXd> llt(B);
    if (llt.info() == Eigen::Success) {
      if (used) *used = jitter;
      return llt.matrixL();
    }
    if (attempt < retries) jitter = std::max(10.0 * jitter, 1e-10 * scale);
  }
  std::ostringstream msg;
  msg << "Cholesky factorisation of " << what << " failed even with jitter " << std::scientific << jitter
      << "; likely causes: duplicated or nearly identical inducing points, inputs on extreme scales, "
         "or a learning_rate that is too large";
  throw numerical_error(msg.str());
}

// 2 * sum(log(diag(L))) = log|L L^T|.
inline double logdet_chol(const MatrixXd& L) {
  return 2.0 * L.diagonal().array().log().sum();
}

// T <- T^{-1} for a lower-triangular T (upper triangle zero), by halves:
// inv([A 0; B C]) = [A^-1 0; -C^-1 B A^-1, C^-1], about n^3 / 3 flops where
// a triangular solve against the identity takes n^3.
inline void lower_inverse_in_place(Eigen::Ref<MatrixXd> T) {
  const Index n = T.rows();
  if (n <= 32) {
    MatrixXd I = MatrixXd::Identity(n, n);
    T.triangularView<Eigen::Lower>().solveInPlace(I);
    T = I.triangularView<Eigen::Lower>();
    return;
  }
  const Index h = n / 2;
  lower_inverse_in_place(T.topLeftCorner(h, h));
  lower_inverse_in_place(T.bottomRightCorner(n - h, n - h));
  const MatrixXd BA = T.bottomLeftCorner(n - h, h) * T.topLeftCorner(h, h).triangularView<Eigen::Lower>();
  T.bottomLeftCorner(n - h, h).noalias() = -(T.bottomRightCorner(n - h, n - h).triangularView<Eigen::Lower>() * BA);
}

// Inverse of L L^T from its lower Cholesky factor: L^{-T} L^{-1}, with
// L^{-1} from lower_inverse_in_place() and the product formed as a
// symmetric rank-k update (half the flops of a general product).
inline MatrixXd chol_inverse(const MatrixXd& L) {
  const Index n = L.rows();
  MatrixXd Linv = L.triangularView<Eigen::Lower>();
  lower_inverse_in_place(Linv);
  MatrixXd A = MatrixXd::Zero(n, n);
  A.selfadjointView<Eigen::Lower>().rankUpdate(Linv.transpose());
  return A.selfadjointView<Eigen::Lower>();
}

// X <- X L^{-T} (rows of X are solved against the lower factor L).
inline void solve_right_LT(const MatrixXd& L, Eigen::Ref<MatrixXd> X) {
  L.transpose().triangularView<Eigen::Upper>().solveInPlace<Eigen::OnTheRight>(X);
}

// X <- X L^{-1}.
inline void solve_right_L(const MatrixXd& L, Eigen::Ref<MatrixXd> X) {
  L.triangularView<Eigen::Lower>().solveInPlace<Eigen::OnTheRight>(X);
}

}  // namespace scalegp
