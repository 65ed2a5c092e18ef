// Tests of linalg.hpp: jittered Cholesky, triangular solves, inverse and log-determinant.
#include <catch2/catch.hpp>
#include "fixtures.hpp"

#include <random>
#include <string>

using namespace scalegp;
using fixtures::normal_matrix;

namespace {

// A well-conditioned SPD matrix B B' + n I.
MatrixXd random_spd(Index n, unsigned seed) {
  const MatrixXd B = normal_matrix(n, n, seed);
  MatrixXd A = B * B.transpose();
  A.diagonal().array() += static_cast<double>(n);
  return A;
}

double max_abs(const MatrixXd& A) { return A.cwiseAbs().maxCoeff(); }

}  // namespace

TEST_CASE("jitter_cholesky reproduces an SPD matrix", "[linalg]") {
  const MatrixXd A = random_spd(7, 11);
  double used = -1.0;
  const MatrixXd L = jitter_cholesky(A, 1e-12, "A", 3, &used);
  // first attempt succeeds: jitter = rel_jitter * mean(diag A)
  CHECK(used == Approx(1e-12 * A.diagonal().mean()).epsilon(1e-14));
  // lower triangular
  CHECK(max_abs(MatrixXd(L.triangularView<Eigen::StrictlyUpper>())) == 0.0);
  CHECK((L.diagonal().array() > 0).all());
  MatrixXd Aj = A;
  Aj.diagonal().array() += used;
  CHECK(max_abs(L * L.transpose() - Aj) < 1e-12 * max_abs(A));
  CHECK(max_abs(L * L.transpose() - A) < 1e-10);
  // matches Eigen's own factor
  const MatrixXd L0 = Eigen::LLT<MatrixXd>(Aj).matrixL();
  CHECK(max_abs(L - L0) < 1e-12);
}

TEST_CASE("jitter_cholesky with an explicit jitter scale", "[linalg]") {
  const MatrixXd A = random_spd(4, 12);
  double used = 0.0;
  const MatrixXd L = jitter_cholesky(A, 1e-3, "A", 3, &used, 2.5);
  CHECK(used == Approx(2.5e-3).epsilon(1e-14));  // rel_jitter * scale, not * mean(diag A)
  MatrixXd Aj = A;
  Aj.diagonal().array() += 2.5e-3;
  CHECK(max_abs(L * L.transpose() - Aj) < 1e-12 * max_abs(A));
  // scale <= 0 falls back to mean(diag A)
  jitter_cholesky(A, 1e-3, "A", 3, &used, 0.0);
  CHECK(used == Approx(1e-3 * A.diagonal().mean()).epsilon(1e-14));
}

TEST_CASE("jitter_cholesky of an empty matrix", "[linalg]") {
  const MatrixXd L = jitter_cholesky(MatrixXd(0, 0), 1e-6, "empty");
  CHECK(L.rows() == 0);
  CHECK(L.cols() == 0);
}

TEST_CASE("jitter_cholesky on a singular PSD matrix adds jitter", "[linalg]") {
  // rank 2 in dimension 5: exact factorisation impossible without jitter
  const MatrixXd B = normal_matrix(5, 2, 3);
  const MatrixXd A = B * B.transpose();
  // no retries and no jitter: impossible
  CHECK_THROWS_AS(jitter_cholesky(A, 0.0, "singular", 0), numerical_error);
  // rel_jitter = 0 with retries: the retries start from 1e-10 * mean(diag)
  double used0 = 0.0;
  jitter_cholesky(A, 0.0, "singular", 3, &used0);
  CHECK(used0 >= 1e-10 * A.diagonal().mean() * (1 - 1e-12));
  CHECK(used0 <= 1e-8 * A.diagonal().mean() * (1 + 1e-12));
  double used = 0.0;
  const MatrixXd L = jitter_cholesky(A, 1e-8, "singular", 3, &used);
  CHECK(used > 0.0);
  MatrixXd Aj = A;
  Aj.diagonal().array() += used;
  CHECK(max_abs(L * L.transpose() - Aj) < 1e-12 * max_abs(A));
  CHECK(L.allFinite());

  // exactly singular 2x2 [[1,1],[1,1]]: the first jitter 1e-8 * 1 is enough
  MatrixXd ones = MatrixXd::Ones(2, 2);
  used = 0.0;
  const MatrixXd L2 = jitter_cholesky(ones, 1e-8, "ones", 3, &used);
  CHECK(used == Approx(1e-8).epsilon(1e-14));
  CHECK(max_abs(L2 * L2.transpose() - (ones + used * MatrixXd::Identity(2, 2))) < 1e-15);
}

TEST_CASE("jitter_cholesky escalates the jitter tenfold", "[linalg]") {
  // eigenvalues {1, 1, -3e-9}: mean diagonal 2/3 - 1e-9; the first jitter
  // (1e-9 * mean diag ~ 6.7e-10) is too small, the second (6.7e-9) suffices.
  const MatrixXd Qm = Eigen::HouseholderQR<MatrixXd>(normal_matrix(3, 3, 5)).householderQ();
  const Eigen::Vector3d ev(1.0, 1.0, -3e-9);
  const MatrixXd A = Qm * ev.asDiagonal() * Qm.transpose();
  const double md = A.diagonal().mean();
  double used = 0.0;
  const MatrixXd L = jitter_cholesky(A, 1e-9, "escalate", 3, &used);
  CHECK(used == Approx(1e-8 * md).epsilon(1e-12));
  MatrixXd Aj = A;
  Aj.diagonal().array() += used;
  CHECK(max_abs(L * L.transpose() - Aj) < 1e-14);
  // with no retries allowed, the same call must fail
  CHECK_THROWS_AS(jitter_cholesky(A, 1e-9, "escalate", 0), numerical_error);
}

TEST_CASE("jitter_cholesky on an indefinite matrix throws an explanatory error", "[linalg]") {
  MatrixXd A = MatrixXd::Zero(2, 2);
  A(0, 0) = 1.0;
  A(1, 1) = -1.0;
  bool threw = false;
  try {
    jitter_cholesky(A, 1e-6, "the test matrix", 3);
  } catch (const numerical_error& e) {
    threw = true;
    const std::string msg = e.what();
    CHECK(msg.find("the test matrix") != std::string::npos);
    CHECK(msg.find("likely causes") != std::string::npos);
    CHECK(msg.find("inducing points") != std::string::npos);
  }
  CHECK(threw);
  // numerical_error is a std::runtime_error (the R glue catches that)
  CHECK_THROWS_AS(jitter_cholesky(A, 1e-6, "x", 3), std::runtime_error);

  // non-finite input: a different, specific message
  MatrixXd Bn = MatrixXd::Identity(2, 2);
  Bn(0, 1) = Bn(1, 0) = std::nan("");
  threw = false;
  try {
    jitter_cholesky(Bn, 1e-6, "nanmat", 3);
  } catch (const numerical_error& e) {
    threw = true;
    const std::string msg = e.what();
    CHECK(msg.find("non-finite") != std::string::npos);
    CHECK(msg.find("nanmat") != std::string::npos);
  }
  CHECK(threw);
}

TEST_CASE("triangular solves, inverse and log-determinant match direct Eigen", "[linalg]") {
  const Index n = 6;
  const MatrixXd A = random_spd(n, 21);
  const MatrixXd L = jitter_cholesky(A, 0.0, "A", 0);
  CHECK(max_abs(L * L.transpose() - A) < 1e-12);
  const MatrixXd X = normal_matrix(9, n, 22);
  const MatrixXd Lt_inv = MatrixXd(L.transpose()).inverse();
  const MatrixXd L_inv = L.inverse();

  SECTION("solve_right_LT: X L^{-T}") {
    MatrixXd Y = X;
    solve_right_LT(L, Y);
    CHECK(max_abs(Y - X * Lt_inv) < 1e-12);
    CHECK(max_abs(Y * L.transpose() - X) < 1e-12);
    // works on a block view (Ref) too
    MatrixXd W = MatrixXd::Zero(9, n + 3);
    W.middleCols(2, n) = X;
    solve_right_LT(L, W.middleCols(2, n));
    CHECK(max_abs(W.middleCols(2, n) - X * Lt_inv) < 1e-12);
    CHECK(max_abs(W.leftCols(2)) == 0.0);
    CHECK(max_abs(W.rightCols(1)) == 0.0);
  }
  SECTION("solve_right_L: X L^{-1}") {
    MatrixXd Y = X;
    solve_right_L(L, Y);
    CHECK(max_abs(Y - X * L_inv) < 1e-12);
    CHECK(max_abs(Y * L - X) < 1e-12);
    // the two solves differ (L is not symmetric)
    MatrixXd Z = X;
    solve_right_LT(L, Z);
    CHECK(max_abs(Y - Z) > 1e-3);
  }
  SECTION("chol_inverse") {
    const MatrixXd Ai = chol_inverse(L);
    CHECK(max_abs(Ai - A.inverse()) < 1e-12);
    CHECK(max_abs(Ai * A - MatrixXd::Identity(n, n)) < 1e-12);
    CHECK(max_abs(Ai - Ai.transpose()) < 1e-15);
  }
  SECTION("chol_inverse and lower_inverse_in_place by halves (sizes past the base case)") {
    for (Index k : {33, 70, 151}) {
      CAPTURE(k);
      const MatrixXd R = normal_matrix(k, k, 90 + static_cast<unsigned>(k));
      const MatrixXd B = R * R.transpose() / static_cast<double>(k) + MatrixXd::Identity(k, k);
      const MatrixXd LB = B.llt().matrixL();
      MatrixXd Ti = LB;
      lower_inverse_in_place(Ti);
      CHECK(max_abs(MatrixXd(Ti.triangularView<Eigen::StrictlyUpper>())) == 0.0);
      CHECK(max_abs(Ti * LB - MatrixXd::Identity(k, k)) < 1e-12);
      CHECK(max_abs(LB * Ti - MatrixXd::Identity(k, k)) < 1e-12);
      const MatrixXd Bi = chol_inverse(LB);
      CHECK(max_abs(Bi * B - MatrixXd::Identity(k, k)) < 1e-11);
      CHECK(max_abs(Bi - Bi.transpose()) == 0.0);
    }
  }
  SECTION("logdet_chol") {
    CHECK(logdet_chol(L) == Approx(std::log(A.determinant())).epsilon(1e-12));
    const MatrixXd D = Eigen::Vector3d(2.0, 3.0, 0.5).asDiagonal();
    const MatrixXd LD = jitter_cholesky(D, 0.0, "D", 0);
    CHECK(logdet_chol(LD) == Approx(std::log(3.0)).epsilon(1e-14));
  }
}
