// Tests of anova.hpp: centred (ANOVA) kernels against a brute-force
// evaluation, their defining zero-mean property, PSD-ness, the diagonal, and
// the gradient contraction `centred_gradient` against finite differences.
#include <catch2/catch.hpp>
#include "fixtures.hpp"

#include <Eigen/Eigenvalues>
#include <cmath>
#include <random>
#include <vector>

using namespace scalegp;
using namespace fixtures;

namespace {

// Centred kernel over d = 2 inputs, nodes on [-2, 2] with unequal weights.
CentredKernel make_centred(KernelType t, bool ard, std::vector<Product> products) {
  CentredKernel k;
  k.base.type = t;
  k.base.log_var = std::log(1.3);
  if (ard) {
    k.base.log_ls.resize(2);
    k.base.log_ls << std::log(0.8), std::log(1.5);
  } else {
    k.base.log_ls = VectorXd::Constant(1, std::log(1.1));
  }
  for (int e = 0; e < 2; ++e) {
    VectorXd s(7), w(7);
    for (int q = 0; q < 7; ++q) {
      s(q) = -2.0 + 4.0 * q / 6.0 + 0.05 * e;
      w(q) = 1.0 + 0.1 * q;
    }
    k.nodes.push_back(s);
    k.weights.push_back(w / w.sum());
  }
  k.products = std::move(products);
  return k;
}

// Brute force: the unit-variance 1-D profile by closed form.
double g1(KernelType t, double r) {
  switch (t) {
    case KernelType::se: return std::exp(-0.5 * r * r);
    case KernelType::matern32: return (1 + std::sqrt(3.0) * r) * std::exp(-std::sqrt(3.0) * r);
    case KernelType::matern52: return (1 + std::sqrt(5.0) * r + 5 * r * r / 3) * std::exp(-std::sqrt(5.0) * r);
  }
  return 0;
}

double brute_k(const CentredKernel& k, const Eigen::RowVectorXd& x, const Eigen::RowVectorXd& y) {
  std::vector<double> F(2);
  for (int e = 0; e < 2; ++e) {
    const double l = std::exp(k.base.log_ls.size() == 1 ? k.base.log_ls(0) : k.base.log_ls(e));
    auto g = [&](double a, double b) { return g1(k.base.type, std::abs(a - b) / l); };
    const VectorXd& s = k.nodes[e];
    const VectorXd& w = k.weights[e];
    double mx = 0, my = 0, c = 0;
    for (Index q = 0; q < s.size(); ++q) {
      mx += w(q) * g(x(e), s(q));
      my += w(q) * g(y(e), s(q));
      for (Index r = 0; r < s.size(); ++r) c += w(q) * w(r) * g(s(q), s(r));
    }
    F[e] = 1.0 + g(x(e), y(e)) - mx * my / c;
  }
  double v = 0;
  for (const Product& p : k.products) {
    double t = p.coef;
    for (int e = 0; e < 2; ++e)
      if (p.mask >> e & 1u) t *= F[e];
    v += t;
  }
  return k.base.variance() * v;
}

MatrixXd eval(const CentredKernel& k, const MatrixXd& X, const MatrixXd& Z) {
  const CentredMeasure M = centred_measure(k);
  const CentredSide sx = centred_side(k, M, X), sz = centred_side(k, M, Z);
  std::vector<MatrixXd> F, Dx;
  return centred_cross(k, M, sx, sz, F, Dx);
}

const std::vector<Product> kAll = {{3u, 1.0}, {0u, -1.0}};                          // all but the constant
const std::vector<Product> kInter = {{3u, 1.0}, {1u, -1.0}, {2u, -1.0}, {0u, 1.0}};  // s1 s2 only
const std::vector<Product> kMain1 = {{1u, 1.0}, {0u, -1.0}};                        // s1 only

}  // namespace

TEST_CASE("centred kernel matches a brute-force evaluation", "[anova]") {
  const MatrixXd X = uniform_matrix(5, 2, 1, -2.5, 2.5), Z = uniform_matrix(4, 2, 2, -2, 2);
  for (KernelType t : {KernelType::se, KernelType::matern32, KernelType::matern52})
    for (bool ard : {true, false})
      for (const auto& prods : {kAll, kInter, kMain1}) {
        const CentredKernel k = make_centred(t, ard, prods);
        const MatrixXd K = eval(k, X, Z);
        for (Index i = 0; i < X.rows(); ++i)
          for (Index j = 0; j < Z.rows(); ++j) CHECK(K(i, j) == Approx(brute_k(k, X.row(i), Z.row(j))).margin(1e-13));
        // diagonal
        const CentredMeasure M = centred_measure(k);
        std::vector<VectorXd> Fd;
        const VectorXd kd = centred_diag(k, M, centred_side(k, M, X), Fd);
        const MatrixXd Kxx = eval(k, X, X);
        CHECK((kd - Kxx.diagonal()).cwiseAbs().maxCoeff() < 1e-13);
      }
}

TEST_CASE("centred kernel: zero mean over the measure and PSD", "[anova]") {
  const MatrixXd Y = uniform_matrix(6, 2, 3, -2, 2);
  for (KernelType t : {KernelType::se, KernelType::matern32, KernelType::matern52}) {
    // s1 alone: sum_q w_q k((s_q, .), y) = 0 for every y
    const CentredKernel k = make_centred(t, true, kMain1);
    MatrixXd S(7, 2);
    S.col(0) = k.nodes[0];
    S.col(1).setConstant(0.3);  // second input irrelevant for s1
    const MatrixXd K = eval(k, S, Y);
    const VectorXd mean = K.transpose() * k.weights[0];
    CHECK(mean.cwiseAbs().maxCoeff() < 1e-13);
    CHECK(K.cwiseAbs().maxCoeff() > 1e-2);  // non-trivial
    // pure interaction: zero mean along either input
    const CentredKernel ki = make_centred(t, true, kInter);
    MatrixXd S2(7, 2);
    S2.col(0).setConstant(-0.7);
    S2.col(1) = ki.nodes[1];
    CHECK((eval(ki, S2, Y).transpose() * ki.weights[1]).cwiseAbs().maxCoeff() < 1e-13);
    // PSD
    const MatrixXd Z = uniform_matrix(20, 2, 4, -2, 2);
    for (const auto& prods : {kAll, kInter, kMain1}) {
      const MatrixXd Kz = eval(make_centred(t, false, prods), Z, Z);
      CHECK((Kz - Kz.transpose()).cwiseAbs().maxCoeff() < 1e-14);
      const VectorXd ev = Eigen::SelfAdjointEigenSolver<MatrixXd>(Kz).eigenvalues();
      CHECK(ev.minCoeff() > -1e-12 * ev.maxCoeff());
    }
  }
}

TEST_CASE("centred_gradient matches finite differences", "[anova]") {
  const MatrixXd X = uniform_matrix(6, 2, 5, -2.5, 2.5), Z = uniform_matrix(4, 2, 6, -2, 2);
  const MatrixXd Kbar = uniform_matrix(6, 4, 7, -1, 1);
  const VectorXd gdiag = uniform_matrix(6, 1, 8, -1, 1);
  for (KernelType t : {KernelType::se, KernelType::matern32, KernelType::matern52})
    for (bool ard : {true, false})
      for (const auto& prods : {kAll, kInter}) {
        const CentredKernel k = make_centred(t, ard, prods);
        // objective <Kbar, k(X, Z)> + <gdiag, diag k(X, X)>
        auto F = [&](const CentredKernel& kk, const MatrixXd& XX, const MatrixXd& ZZ) {
          const CentredMeasure M = centred_measure(kk);
          const CentredSide sx = centred_side(kk, M, XX);
          std::vector<MatrixXd> Fm, Dx;
          std::vector<VectorXd> Fd;
          const MatrixXd K = centred_cross(kk, M, sx, centred_side(kk, M, ZZ), Fm, Dx);
          return (Kbar.array() * K.array()).sum() + gdiag.dot(centred_diag(kk, M, sx, Fd));
        };
        const CentredMeasure M = centred_measure(k);
        const CentredSide sx = centred_side(k, M, X), sz = centred_side(k, M, Z);
        std::vector<MatrixXd> Fm, Dx;
        std::vector<VectorXd> Fd;
        centred_cross(k, M, sx, sz, Fm, Dx);
        centred_diag(k, M, sx, Fd);
        VectorXd g = VectorXd::Zero(1 + k.base.log_ls.size());
        MatrixXd gX = MatrixXd::Zero(6, 2), gZ = MatrixXd::Zero(4, 2);
        centred_gradient(k, M, sx, sz, Fm, Dx, Kbar, &gdiag, &Fd, g, &gX, &gZ);

        const double h = 1e-4;
        VectorXd th(g.size());
        th(0) = k.base.log_var;
        th.tail(k.base.log_ls.size()) = k.base.log_ls;
        const VectorXd fd = fd_gradient(
            [&](const VectorXd& t) {
              CentredKernel kk = k;
              kk.base.log_var = t(0);
              kk.base.log_ls = t.tail(k.base.log_ls.size());
              return F(kk, X, Z);
            },
            th, h);
        check_all_close(g, fd, 1e-7, 1e-9);
        check_all_close(gX, fd_matrix_gradient([&](const MatrixXd& XX) { return F(k, XX, Z); }, X, h), 1e-7, 1e-9);
        check_all_close(gZ, fd_matrix_gradient([&](const MatrixXd& ZZ) { return F(k, X, ZZ); }, Z, h), 1e-7, 1e-9);
      }
}

TEST_CASE("centred kernel on rows sharing values: grouped by distinct values, the same numbers", "[anova]") {
  // 60 rows on a 5 x 6 grid: each input has at most half as many values as rows
  MatrixXd X(60, 2);
  const MatrixXd u = uniform_matrix(60, 2, 9, 0, 1);
  for (Index i = 0; i < 60; ++i) {
    X(i, 0) = -2.0 + std::floor(u(i, 0) * 5) * 0.9;
    X(i, 1) = -2.0 + std::floor(u(i, 1) * 6) * 0.7;
  }
  const MatrixXd Z = uniform_matrix(4, 2, 10, -2, 2);
  const MatrixXd Kbar = uniform_matrix(60, 4, 11, -1, 1);
  const VectorXd gdiag = uniform_matrix(60, 1, 12, -1, 1);
  for (KernelType t : {KernelType::se, KernelType::matern52})
    for (const auto& prods : {kAll, kInter}) {
      const CentredKernel k = make_centred(t, true, prods);
      const CentredMeasure M = centred_measure(k);
      const CentredSide sx = centred_side(k, M, X), sz = centred_side(k, M, Z);
      REQUIRE_FALSE(sx.at[0].empty());  // grouped
      REQUIRE_FALSE(sx.at[1].empty());
      CHECK(sz.at[0].empty());          // 4 rows: not grouped
      std::vector<MatrixXd> Fm, Dx;
      std::vector<VectorXd> Fd;
      const MatrixXd K = centred_cross(k, M, sx, sz, Fm, Dx);
      const VectorXd kd = centred_diag(k, M, sx, Fd);
      VectorXd g = VectorXd::Zero(3);
      MatrixXd gX = MatrixXd::Zero(60, 2), gZ = MatrixXd::Zero(4, 2);
      centred_gradient(k, M, sx, sz, Fm, Dx, Kbar, &gdiag, &Fd, g, &gX, &gZ);
      // row by row (one row: never grouped); the gradient sums over rows
      VectorXd g1r = VectorXd::Zero(3);
      MatrixXd gZ1 = MatrixXd::Zero(4, 2);
      for (Index i = 0; i < 60; ++i) {
        const CentredSide si = centred_side(k, M, X.row(i));
        REQUIRE(si.at[0].empty());
        std::vector<MatrixXd> Fi, Di;
        std::vector<VectorXd> Fdi;
        const MatrixXd Ki = centred_cross(k, M, si, sz, Fi, Di);
        const VectorXd kdi = centred_diag(k, M, si, Fdi);
        for (Index j = 0; j < 4; ++j) CHECK(K(i, j) == Approx(brute_k(k, X.row(i), Z.row(j))).margin(1e-13));
        CHECK(std::abs(K.row(i).dot(Kbar.row(i)) - Ki.row(0).dot(Kbar.row(i))) < 1e-13);
        CHECK(std::abs(kd(i) - kdi(0)) < 1e-13);
        MatrixXd gXi = MatrixXd::Zero(1, 2);
        const MatrixXd Kb = Kbar.row(i);
        const VectorXd gd = gdiag.segment(i, 1);
        centred_gradient(k, M, si, sz, Fi, Di, Kb, &gd, &Fdi, g1r, &gXi, &gZ1);
        CHECK((gX.row(i) - gXi).cwiseAbs().maxCoeff() < 1e-12);
      }
      check_all_close(g, g1r, 1e-12, 1e-12);
      check_all_close(gZ, gZ1, 1e-12, 1e-12);
    }
}
