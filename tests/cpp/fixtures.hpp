// Shared fixtures of the Catch2 tests: random matrices, simulated data sets,
// components, and the one finite-difference rule every gradient test uses.
#pragma once
#include <catch2/catch.hpp>
#include <scalegp/scalegp.hpp>

#include <cmath>
#include <random>
#include <vector>

namespace fixtures {

using namespace scalegp;

// Entries N(0, sd^2) from std::mt19937_64(seed).
inline MatrixXd normal_matrix(Index r, Index c, unsigned seed, double sd = 1.0) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> nd(0.0, sd);
  MatrixXd A(r, c);
  for (Index j = 0; j < c; ++j)
    for (Index i = 0; i < r; ++i) A(i, j) = nd(gen);
  return A;
}

// Entries U(lo, hi) from the core's generator.
inline MatrixXd uniform_matrix(Index r, Index c, unsigned seed, double lo, double hi) {
  Rng rng(seed);
  MatrixXd A(r, c);
  for (Index j = 0; j < c; ++j)
    for (Index i = 0; i < r; ++i) A(i, j) = lo + (hi - lo) * uniform01(rng);
  return A;
}

// Derivative at t = 0 of f(t) by the fourth-order central difference
//   (8 (f(h) - f(-h)) - (f(2h) - f(-2h))) / (12 h),  error O(h^4 f^(5)).
template <class F>
double central_difference(F&& f, double h) {
  return (8.0 * (f(h) - f(-h)) - (f(2 * h) - f(-2 * h))) / (12.0 * h);
}

// Gradient of f at x by central_difference along each coordinate.
template <class F>
VectorXd fd_gradient(F&& f, const VectorXd& x, double h) {
  VectorXd g(x.size());
  for (Index j = 0; j < x.size(); ++j)
    g(j) = central_difference(
        [&](double t) {
          VectorXd y = x;
          y(j) += t;
          return f(y);
        },
        h);
  return g;
}

// Gradient of f at matrix A (entry by entry), by central_difference.
template <class F>
MatrixXd fd_matrix_gradient(F&& f, const MatrixXd& A, double h) {
  const VectorXd a = Eigen::Map<const VectorXd>(A.data(), A.size());
  const VectorXd g = fd_gradient(
      [&](const VectorXd& v) { return f(MatrixXd(Eigen::Map<const MatrixXd>(v.data(), A.rows(), A.cols()))); }, a, h);
  return Eigen::Map<const MatrixXd>(g.data(), A.rows(), A.cols());
}

// Checks every entry of `analytic` against `fd`: |a - f| <= rel |f| + abs.
inline void check_all_close(const MatrixXd& analytic, const MatrixXd& fd, double rel, double abs) {
  REQUIRE(analytic.rows() == fd.rows());
  REQUIRE(analytic.cols() == fd.cols());
  for (Index j = 0; j < fd.cols(); ++j)
    for (Index i = 0; i < fd.rows(); ++i) {
      CAPTURE(i, j, analytic(i, j), fd(i, j));
      CHECK(std::abs(analytic(i, j) - fd(i, j)) <= rel * std::abs(fd(i, j)) + abs);
    }
}

// x1, x2 ~ U(-2, 2), a column of ones, weights, offsets and a response.
struct Data {
  MatrixXd X;  // n x 3: x1, x2, 1
  VectorXd y, w, o;
  std::size_t n() const { return static_cast<std::size_t>(X.rows()); }
};

// Regression / count / binary data from a smooth latent function
// sin(1.5 x1) + 0.5 x2 - 0.3 x1 x2 + offset; binomial rows with i % 7 == 3
// are the proportion 0.4 (w trials).
inline Data make_data(std::size_t n, Family fam, unsigned seed, bool unit_weights = false, bool zero_offset = false) {
  Rng rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  Data d;
  d.X.resize(static_cast<Index>(n), 3);
  d.y.resize(static_cast<Index>(n));
  d.w.resize(static_cast<Index>(n));
  d.o.resize(static_cast<Index>(n));
  for (Index i = 0; i < static_cast<Index>(n); ++i) {
    const double x1 = 4 * uniform01(rng) - 2, x2 = 4 * uniform01(rng) - 2;
    d.X(i, 0) = x1;
    d.X(i, 1) = x2;
    d.X(i, 2) = 1.0;
    d.o(i) = zero_offset ? 0.0 : 0.2 * std::sin(3.0 * x2);
    d.w(i) = unit_weights ? 1.0 : 0.5 + uniform01(rng);
    const double f = std::sin(1.5 * x1) + 0.5 * x2 - 0.3 * x1 * x2 + d.o(i);
    switch (fam) {
      case Family::gaussian: d.y(i) = f + 0.3 * nd(rng); break;
      case Family::poisson: {
        std::poisson_distribution<int> pd(std::exp(0.3 + 0.6 * f));
        d.y(i) = pd(rng);
        break;
      }
      case Family::probit:
      case Family::logit:
        d.y(i) = (f + nd(rng) > 0) ? 1.0 : 0.0;
        if (i % 7 == 3) d.y(i) = 0.4;  // a proportion (binomial with w trials)
        break;
      case Family::gamma: {  // shape 4, mean exp(0.3 + 0.6 f)
        std::gamma_distribution<double> gd(4.0, std::exp(0.3 + 0.6 * f) / 4.0);
        d.y(i) = gd(rng);
        break;
      }
      case Family::negbin: {  // theta 2: Poisson with a Gamma(2, mu / 2) rate
        std::gamma_distribution<double> gd(2.0, std::exp(0.3 + 0.6 * f) / 2.0);
        std::poisson_distribution<int> pd(gd(rng));
        d.y(i) = pd(rng);
        break;
      }
      case Family::scat: {  // f + 0.3 t_3: heavy tails, rows far from f
        std::student_t_distribution<double> td(3.0);
        d.y(i) = f + 0.3 * td(rng);
        break;
      }
    }
  }
  return d;
}

// Binary 0/1 data with unit weights: y = 1{1.5 sin(1.5 x1) + x2 + offset + N(0, 0.25) > 0}.
inline Data class_data(Index n, unsigned seed, double offset = 0.2) {
  Rng rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  Data d{MatrixXd(n, 3), VectorXd(n), VectorXd::Ones(n), VectorXd(n)};
  for (Index i = 0; i < n; ++i) {
    const double x1 = 4 * uniform01(rng) - 2, x2 = 4 * uniform01(rng) - 2;
    d.X.row(i) << x1, x2, 1.0;
    d.o(i) = offset * std::sin(3 * x2);
    d.y(i) = 1.5 * std::sin(1.5 * x1) + x2 + d.o(i) + 0.5 * nd(rng) > 0 ? 1.0 : 0.0;
  }
  return d;
}

// A stationary GP over columns `cols` (variance 0.8; lengthscales 0.9, 1.4
// with ARD, 1.1 without).
inline Component gp_component(KernelType t, bool ard, const MatrixXd& Z, std::vector<Index> cols = {0, 1}) {
  Component c;
  c.kind = Kind::stationary;
  c.cols = std::move(cols);
  c.kernel.type = t;
  c.kernel.log_var = std::log(0.8);
  if (ard) {
    c.kernel.log_ls.resize(2);
    c.kernel.log_ls << std::log(0.9), std::log(1.4);
  } else {
    c.kernel.log_ls = VectorXd::Constant(1, std::log(1.1));
  }
  c.Z = Z;
  return c;
}

// A centred (ANOVA) GP over columns 0, 1 (variance 0.9, lengthscales 1.2,
// 0.8; measure: 9 equally weighted nodes on [-2, 2] per input): the pure
// interaction, or the kernel without its main effect in x1.
inline Component centred_component(KernelType t, bool pure_interaction, const MatrixXd& Z) {
  Component cen;
  cen.kind = Kind::centred;
  cen.cols = {0, 1};
  cen.centred.base.type = t;
  cen.centred.base.log_var = std::log(0.9);
  cen.centred.base.log_ls.resize(2);
  cen.centred.base.log_ls << std::log(1.2), std::log(0.8);
  for (int e = 0; e < 2; ++e) {
    VectorXd nodes(9), w(9);
    for (int q = 0; q < 9; ++q) {
      nodes(q) = -2.0 + 0.5 * q;
      w(q) = 1.0 / 9.0;
    }
    cen.centred.nodes.push_back(nodes);
    cen.centred.weights.push_back(w);
  }
  if (pure_interaction)
    cen.centred.products = {{3u, 1.0}, {1u, -1.0}, {2u, -1.0}, {0u, 1.0}};
  else
    cen.centred.products = {{3u, 1.0}, {0u, -1.0}};
  cen.Z = Z;
  return cen;
}

inline Component linear_component(std::vector<Index> cols, const VectorXd& prior_sd) {
  Component c;
  c.kind = Kind::linear;
  c.cols = std::move(cols);
  c.prior_sd = prior_sd;
  c.learn_kernel = false;
  return c;
}

}  // namespace fixtures
