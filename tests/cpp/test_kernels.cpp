// Tests of kernels.hpp: kernel values against closed forms, dk/dr2, the
// gradient contraction `cross_gradient`, and positive semi-definiteness.
#include <catch2/catch.hpp>
#include "fixtures.hpp"

#include <Eigen/Eigenvalues>
#include <cmath>
#include <random>
#include <vector>

using namespace scalegp;
using namespace fixtures;

namespace {

// Closed-form k as a function of the Euclidean scaled distance r.
double closed_form(KernelType t, double s2, double r) {
  switch (t) {
    case KernelType::se: return s2 * std::exp(-0.5 * r * r);
    case KernelType::matern32: return s2 * (1.0 + std::sqrt(3.0) * r) * std::exp(-std::sqrt(3.0) * r);
    case KernelType::matern52:
      return s2 * (1.0 + std::sqrt(5.0) * r + 5.0 * r * r / 3.0) * std::exp(-std::sqrt(5.0) * r);
  }
  return 0.0;
}

Kernel make_kernel(KernelType t, double log_var, const VectorXd& log_ls) {
  Kernel k;
  k.type = t;
  k.log_var = log_var;
  k.log_ls = log_ls;
  return k;
}

struct Case {
  KernelType type;
  bool ard;
};

const std::vector<Case> kCases = {{KernelType::se, true},        {KernelType::se, false},
                                  {KernelType::matern32, true},  {KernelType::matern32, false},
                                  {KernelType::matern52, true},  {KernelType::matern52, false}};

Kernel case_kernel(const Case& c, Index d) {
  VectorXd ls;
  if (c.ard) {
    ls.resize(d);
    for (Index j = 0; j < d; ++j) ls(j) = -0.3 + 0.25 * static_cast<double>(j);  // distinct lengthscales
  } else {
    ls = VectorXd::Constant(1, 0.2);
  }
  return make_kernel(c.type, 0.4, ls);
}

double inner(const MatrixXd& A, const MatrixXd& B) { return (A.array() * B.array()).sum(); }

}  // namespace

TEST_CASE("kernel_from_string", "[kernels]") {
  CHECK(kernel_from_string("se") == KernelType::se);
  CHECK(kernel_from_string("matern32") == KernelType::matern32);
  CHECK(kernel_from_string("matern52") == KernelType::matern52);
  CHECK_THROWS_AS(kernel_from_string("rbf"), std::invalid_argument);
}

TEST_CASE("kernel values match closed forms (ARD and isotropic)", "[kernels]") {
  const Index d = 3;
  const MatrixXd X = normal_matrix(5, d, 1), Z = normal_matrix(4, d, 2);
  for (const Case& c : kCases) {
    const Kernel k = case_kernel(c, d);
    CHECK(k.n_params() == 1 + (c.ard ? d : 1));
    const double s2 = std::exp(0.4);
    CHECK(k.variance() == Approx(s2).epsilon(1e-15));
    const MatrixXd K = k.cross(X, Z);
    REQUIRE(K.rows() == 5);
    REQUIRE(K.cols() == 4);
    for (Index i = 0; i < X.rows(); ++i)
      for (Index j = 0; j < Z.rows(); ++j) {
        double r2 = 0.0;
        for (Index a = 0; a < d; ++a) {
          const double l = std::exp(c.ard ? -0.3 + 0.25 * static_cast<double>(a) : 0.2);
          r2 += std::pow((X(i, a) - Z(j, a)) / l, 2);
        }
        const double ref = closed_form(c.type, s2, std::sqrt(r2));
        CHECK(std::abs(K(i, j) - ref) <= 1e-13 * s2);
      }
    // k(x, x) = variance
    const MatrixXd Kxx = k.cross(X, X);
    CHECK((Kxx.diagonal().array() - s2).abs().maxCoeff() < 1e-13);
  }
}

TEST_CASE("kernel spot values at r = 1", "[kernels]") {
  // scaled distance exactly 1: x = (l, 0), z = 0 with lengthscales (l, anything)
  MatrixXd X(1, 2), Z = MatrixXd::Zero(1, 2);
  X << std::exp(0.7), 0.0;
  VectorXd ls(2);
  ls << 0.7, -1.0;
  const double s3 = std::sqrt(3.0), s5 = std::sqrt(5.0);
  CHECK(make_kernel(KernelType::se, 0.0, ls).cross(X, Z)(0, 0) == Approx(std::exp(-0.5)).epsilon(1e-14));
  CHECK(make_kernel(KernelType::matern32, 0.0, ls).cross(X, Z)(0, 0) ==
        Approx((1 + s3) * std::exp(-s3)).epsilon(1e-14));
  CHECK(make_kernel(KernelType::matern52, std::log(2.0), ls).cross(X, Z)(0, 0) ==
        Approx(2.0 * (1 + s5 + 5.0 / 3.0) * std::exp(-s5)).epsilon(1e-14));
}

TEST_CASE("D = dk/dr2 from Kernel::cross matches central differences", "[kernels]") {
  const std::vector<double> r2s = {0.05, 0.3, 1.0, 2.5, 7.0};
  for (const Case& c : kCases) {
    if (!c.ard) continue;  // the profile does not depend on ARD
    const Kernel k = make_kernel(c.type, -0.6, VectorXd::Zero(1));
    const double s2 = std::exp(-0.6);
    for (double r2 : r2s) {
      // pre-scaled 1-d inputs at distance sqrt(r2)
      MatrixXd Xs(1, 1), Zs = MatrixXd::Zero(1, 1), K, D;
      Xs(0, 0) = std::sqrt(r2);
      k.cross(Xs, Zs, K, D);
      const double h = 1e-3 * r2;
      // central differences in r2 of the independent closed form, and of the kernel's own values
      const double fd = central_difference([&](double t) { return closed_form(c.type, s2, std::sqrt(r2 + t)); }, h);
      CHECK(D(0, 0) == Approx(fd).epsilon(1e-8));
      const double fk = central_difference(
          [&](double t) {
            MatrixXd X1(1, 1), K1, D1;
            X1(0, 0) = std::sqrt(r2 + t);
            k.cross(X1, Zs, K1, D1);
            return K1(0, 0);
          },
          h);
      CHECK(D(0, 0) == Approx(fk).epsilon(1e-8));
      CHECK(D(0, 0) < 0.0);
    }
    // value and slope at r2 = 0
    MatrixXd K0, D0;
    k.cross(MatrixXd::Zero(1, 1), MatrixXd::Zero(1, 1), K0, D0);
    CHECK(K0(0, 0) == Approx(s2).epsilon(1e-15));
    const double slope0 = c.type == KernelType::se ? -0.5 : c.type == KernelType::matern32 ? -1.5 : -5.0 / 6.0;
    CHECK(D0(0, 0) == Approx(s2 * slope0).epsilon(1e-14));
  }
}

TEST_CASE("cross_gradient matches finite differences of <Kbar, k(X, Z)>", "[kernels]") {
  const Index d = 2, n = 6, M = 4;
  const MatrixXd X = normal_matrix(n, d, 7), Z = normal_matrix(M, d, 8), Kbar = normal_matrix(n, M, 9);
  for (const Case& c : kCases) {
    const Kernel k = case_kernel(c, d);
    auto F = [&](const Kernel& kk, const MatrixXd& XX, const MatrixXd& ZZ) { return inner(Kbar, kk.cross(XX, ZZ)); };

    const MatrixXd Xs = k.scale(X), Zs = k.scale(Z);
    MatrixXd K, D;
    k.cross(Xs, Zs, K, D);
    const MatrixXd E = Kbar.cwiseProduct(D);
    VectorXd g_ls = VectorXd::Zero(k.log_ls.size());
    MatrixXd gX = MatrixXd::Zero(n, d), gZ = MatrixXd::Zero(M, d);
    cross_gradient(k, Xs, Zs, E, g_ls, &gX, &gZ);

    const double h = 1e-4;
    const VectorXd fd_ls = fd_gradient(
        [&](const VectorXd& l) {
          Kernel kk = k;
          kk.log_ls = l;
          return F(kk, X, Z);
        },
        k.log_ls, h);
    check_all_close(g_ls, fd_ls, 1e-8, 1e-10);
    // log variance: <Kbar, K> (left to the caller)
    const double fd_var = central_difference(
        [&](double t) {
          Kernel kk = k;
          kk.log_var += t;
          return F(kk, X, Z);
        },
        h);
    CHECK(inner(Kbar, K) == Approx(fd_var).epsilon(1e-8));
    // inputs X and inducing inputs Z
    check_all_close(gX, fd_matrix_gradient([&](const MatrixXd& XX) { return F(k, XX, Z); }, X, h), 1e-7, 1e-9);
    check_all_close(gZ, fd_matrix_gradient([&](const MatrixXd& ZZ) { return F(k, X, ZZ); }, Z, h), 1e-7, 1e-9);
    // the gradients are accumulated (added), not overwritten
    VectorXd g2 = VectorXd::Constant(k.log_ls.size(), 1.0);
    MatrixXd gX2 = MatrixXd::Constant(n, d, 1.0);
    cross_gradient(k, Xs, Zs, E, g2, &gX2, nullptr);
    CHECK((g2.array() - 1.0 - g_ls.array()).abs().maxCoeff() < 1e-12);
    CHECK((gX2.array() - 1.0 - gX.array()).abs().maxCoeff() < 1e-12);
  }
}

TEST_CASE("cross_gradient on k(Z, Z) with both adjoints (symmetric use)", "[kernels]") {
  // the SVGP engine passes the same Zs twice and the same gZ for X and Z
  const Index d = 2, M = 5;
  const MatrixXd Z = normal_matrix(M, d, 31);
  MatrixXd Kbar = normal_matrix(M, M, 32);
  Kbar = 0.5 * (Kbar + Kbar.transpose()).eval();
  for (const Case& c : kCases) {
    const Kernel k = case_kernel(c, d);
    const MatrixXd Zs = k.scale(Z);
    MatrixXd K, D;
    k.cross(Zs, Zs, K, D);
    VectorXd g_ls = VectorXd::Zero(k.log_ls.size());
    MatrixXd gZ = MatrixXd::Zero(M, d);
    cross_gradient(k, Zs, Zs, Kbar.cwiseProduct(D), g_ls, &gZ, &gZ);
    const double h = 1e-4;
    check_all_close(gZ, fd_matrix_gradient([&](const MatrixXd& ZZ) { return inner(Kbar, k.cross(ZZ, ZZ)); }, Z, h),
                    1e-7, 1e-9);
    const VectorXd fd_ls = fd_gradient(
        [&](const VectorXd& l) {
          Kernel kk = k;
          kk.log_ls = l;
          return inner(Kbar, kk.cross(Z, Z));
        },
        k.log_ls, h);
    check_all_close(g_ls, fd_ls, 1e-8, 1e-10);
  }
}

TEST_CASE("k(Z, Z) is symmetric positive semi-definite", "[kernels]") {
  const Index d = 2, M = 25;
  const MatrixXd Z = normal_matrix(M, d, 41);
  for (const Case& c : kCases) {
    const Kernel k = case_kernel(c, d);
    const MatrixXd K = k.cross(Z, Z);
    CHECK((K - K.transpose()).cwiseAbs().maxCoeff() == 0.0);
    const VectorXd ev = Eigen::SelfAdjointEigenSolver<MatrixXd>(K).eigenvalues();
    CHECK(ev.minCoeff() > -1e-12 * ev.maxCoeff());
    // a proper kernel: off-diagonal entries bounded by the variance
    CHECK(K.maxCoeff() <= k.variance() * (1 + 1e-15));
    CHECK(K.minCoeff() > 0.0);
  }
}
