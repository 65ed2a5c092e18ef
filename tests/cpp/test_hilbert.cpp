// Tests of hilbert.hpp and the hilbert component kind: the basis's
// covariance against the kernel (a large basis on a wide box), the sines'
// orthonormality, the spectral density's derivatives against finite
// differences, and the component's feature gradient (components.hpp)
// against finite differences of a linear functional of the features.
#include <catch2/catch.hpp>
#include "fixtures.hpp"

#include <cmath>
#include <vector>

using namespace scalegp;
using namespace fixtures;

namespace {

Component hilbert_component(KernelType t, const VectorXd& log_ls, double log_var, std::vector<Index> m, double L) {
  Component c;
  c.kind = Kind::hilbert;
  const Index d = static_cast<Index>(m.size());
  for (Index k = 0; k < d; ++k) c.cols.push_back(k);
  c.kernel.type = t;
  c.kernel.log_var = log_var;
  c.kernel.log_ls = log_ls;
  c.basis.centre = VectorXd::Zero(d);
  c.basis.L = VectorXd::Constant(d, L);
  c.basis.m = std::move(m);
  c.basis.check();
  return c;
}

MatrixXd features(const Component& c, const MatrixXd& X) {
  const ComponentPrior p = component_prior(c, 0.0);
  MatrixXd Phi(X.rows(), c.size());
  VectorXd resid = VectorXd::Zero(X.rows());
  ComponentRows r;
  component_features(c, p, X, Phi, resid, r);
  CHECK(resid.cwiseAbs().maxCoeff() == 0.0);  // no residual variance
  return Phi;
}

}  // namespace

TEST_CASE("Hilbert covariance matches the kernel for a large basis on a wide box", "[hilbert]") {
  struct Case {
    KernelType t;
    std::vector<Index> m;
    double tol;
  };
  // inputs in [-1, 1]^d, box [-4, 4]^d, lengthscales 0.4 (and 0.6)
  const std::vector<Case> cases = {{KernelType::se, {120}, 1e-10},
                                   {KernelType::matern52, {400}, 2e-4},
                                   {KernelType::matern32, {400}, 2e-3},
                                   {KernelType::se, {60, 50}, 1e-9},
                                   {KernelType::matern52, {90, 80}, 5e-3}};
  for (const Case& cs : cases) {
    const Index d = static_cast<Index>(cs.m.size());
    VectorXd log_ls(d);
    for (Index k = 0; k < d; ++k) log_ls(k) = std::log(0.4 + 0.2 * static_cast<double>(k));
    const Component c = hilbert_component(cs.t, log_ls, std::log(1.7), cs.m, 4.0);
    const MatrixXd X = uniform_matrix(30, d, 7, -1.0, 1.0);
    const MatrixXd Phi = features(c, X);
    const MatrixXd K = c.kernel.cross(X, X);
    CHECK((Phi * Phi.transpose() - K).cwiseAbs().maxCoeff() < cs.tol);
  }
}

TEST_CASE("Hilbert sines are orthonormal on the box and vanish outside it", "[hilbert]") {
  const Component c = hilbert_component(KernelType::se, VectorXd::Constant(1, 0.0), 0.0, {12}, 2.0);
  HilbertBasis b = c.basis;
  const VectorXd ones = VectorXd::Ones(b.size());
  const Index n = 4000;  // midpoint rule on [-2, 2]
  MatrixXd X(n, 1);
  for (Index i = 0; i < n; ++i) X(i, 0) = -2.0 + 4.0 * (static_cast<double>(i) + 0.5) / static_cast<double>(n);
  MatrixXd Phi(n, b.size());
  hilbert_features(b, X, ones, Phi);
  const MatrixXd G = Phi.transpose() * Phi * (4.0 / static_cast<double>(n));
  CHECK((G - MatrixXd::Identity(b.size(), b.size())).cwiseAbs().maxCoeff() < 1e-6);
  MatrixXd out(2, 1);
  out << -2.5, 2.0001;
  MatrixXd Po(2, b.size());
  hilbert_features(b, out, ones, Po);
  CHECK(Po.cwiseAbs().maxCoeff() == 0.0);
}

TEST_CASE("Hilbert spectral density derivatives match finite differences", "[hilbert]") {
  for (KernelType t : {KernelType::se, KernelType::matern32, KernelType::matern52})
    for (Index nls : {1, 2}) {
      VectorXd log_ls(nls);
      for (Index k = 0; k < nls; ++k) log_ls(k) = std::log(0.5 + 0.3 * static_cast<double>(k));
      const Component c = hilbert_component(t, log_ls, 0.3, {5, 4}, 2.5);
      VectorXd rho;
      MatrixXd drho;
      hilbert_log_spectrum(c.basis, c.kernel, rho, &drho);
      VectorXd th(1 + nls);
      th << c.kernel.log_var, log_ls;
      for (Index j = 0; j < rho.size(); ++j) {
        const VectorXd fd = fd_gradient(
            [&](const VectorXd& x) {
              Kernel k = c.kernel;
              k.log_var = x(0);
              k.log_ls = x.tail(nls);
              VectorXd r;
              hilbert_log_spectrum(c.basis, k, r, nullptr);
              return r(j);
            },
            th, 1e-4);
        CHECK((fd - drho.row(j).transpose()).cwiseAbs().maxCoeff() < 1e-8 * (1 + std::abs(rho(j))));
      }
    }
}

TEST_CASE("Hilbert feature gradient through the prior variances matches finite differences", "[hilbert]") {
  for (KernelType t : {KernelType::se, KernelType::matern52}) {
    VectorXd log_ls(2);
    log_ls << std::log(0.6), std::log(0.9);
    const Component c = hilbert_component(t, log_ls, 0.2, {6, 5}, 2.0);
    const MatrixXd X = uniform_matrix(40, 2, 3, -1.5, 1.5);
    const MatrixXd Pb = normal_matrix(40, c.size(), 11);
    // f(theta) = sum(Phibar o Phi(theta))
    auto f = [&](const VectorXd& th) {
      Component k = c;
      k.kernel.log_var = th(0);
      k.kernel.log_ls = th.tail(2);
      return (Pb.array() * features(k, X).array()).sum();
    };
    VectorXd th(3);
    th << c.kernel.log_var, log_ls;
    const ComponentPrior p = component_prior(c, 0.0);
    const MatrixXd Phi = features(c, X);
    VectorXd g = VectorXd::Zero(3);
    MatrixXd gZ(0, 0);
    component_prior_gradient(c, p, Pb.transpose() * Phi, g, gZ);
    const VectorXd fd = fd_gradient(f, th, 1e-4);
    CHECK((g - fd).cwiseAbs().maxCoeff() < 1e-7 * (1 + fd.cwiseAbs().maxCoeff()));
  }
}

TEST_CASE("Hilbert gradient under the adjoint convention of the inducing kinds", "[hilbert]") {
  // The engines' adjoint of the features is Phibar = Pb - 2 diag(gam) Phi
  // (the variance k(x,x) - |phi|^2 of a row, adjoint gam); for a Hilbert term
  // k(x,x) = |phi|^2, so the objective sum(Pb o Phi) has the gradient
  // row part (Phibar, gam) + prior part (Y = Phibar' Phi).
  VectorXd log_ls(1);
  log_ls << std::log(0.7);
  const Component c = hilbert_component(KernelType::matern32, log_ls, -0.3, {9}, 2.0);
  const MatrixXd X = uniform_matrix(50, 1, 5, -1.5, 1.5);
  const MatrixXd Pb = normal_matrix(50, c.size(), 13);
  const VectorXd gam = normal_matrix(50, 1, 17).col(0);
  auto f = [&](const VectorXd& th) {
    Component k = c;
    k.kernel.log_var = th(0);
    k.kernel.log_ls = th.tail(1);
    return (Pb.array() * features(k, X).array()).sum();
  };
  VectorXd th(2);
  th << c.kernel.log_var, log_ls;
  const ComponentPrior p = component_prior(c, 0.0);
  MatrixXd Phi(50, c.size());
  VectorXd resid = VectorXd::Zero(50);
  ComponentRows r;
  component_features(c, p, X, Phi, resid, r);
  const MatrixXd Phibar = Pb - 2.0 * gam.asDiagonal() * Phi;
  VectorXd g = VectorXd::Zero(2);
  MatrixXd gZ(0, 0);
  component_row_gradient(c, p, r, Phibar, gam, g, nullptr);
  component_prior_gradient(c, p, Phibar.transpose() * Phi, g, gZ);
  const VectorXd fd = fd_gradient(f, th, 1e-4);
  CHECK((g - fd).cwiseAbs().maxCoeff() < 1e-7 * (1 + fd.cwiseAbs().maxCoeff()));
}

// Shifts of every input's sines (a basis centred along its inputs, as ti()
// makes it): arbitrary numbers, so that the product forms are checked with them.
inline void shift_sines(Component& c, unsigned seed) {
  c.basis.shift.clear();
  for (Index k = 0; k < c.basis.dim(); ++k)
    c.basis.shift.push_back(0.3 * normal_matrix(c.basis.m[static_cast<std::size_t>(k)], 1, seed + static_cast<unsigned>(k)).col(0));
}

TEST_CASE("Hilbert variances from the product form equal those of the features", "[hilbert]") {
  // hilbert_quadratic_diag(): diag(Phi S Phi') by groups of the last input,
  // on a grid of 9 values per input, with rows outside the box (0), an S
  // with cross-covariances between every pair of sines, and the groups
  // split over threads (the same values).
  for (Index d : {2, 3})
  for (bool shifted : {false, true}) {
    CAPTURE(d, shifted);
    std::vector<Index> m = d == 2 ? std::vector<Index>{7, 5} : std::vector<Index>{4, 3, 5};
    VectorXd log_ls = VectorXd::LinSpaced(d, std::log(0.6), std::log(1.1));
    Component c = hilbert_component(KernelType::matern32, log_ls, 0.4, m, 2.0);
    c.basis.centre(0) = 0.3;
    if (shifted) shift_sines(c, 71);
    const Index n = 400, M = c.size();
    MatrixXd X = uniform_matrix(n, d, 51 + static_cast<unsigned>(d), -2.0, 2.0);
    for (Index i = 0; i < n; ++i)
      for (Index k = 0; k < d; ++k) X(i, k) = std::round(X(i, k) * 2.0) / 2.0;
    X(3, 0) = 2.5;  // outside the box
    X(7, d - 1) = -2.5;
    const MatrixXd R = normal_matrix(M, M, 53);
    const MatrixXd S = R * R.transpose() / static_cast<double>(M) + MatrixXd::Identity(M, M);
    const ComponentPrior p = component_prior(c, 0.0);
    const MatrixXd Phi = features(c, X);
    const VectorXd direct = (Phi * S).cwiseProduct(Phi).rowwise().sum();
    VectorXd v, v3;
    REQUIRE(hilbert_quadratic_diag(c.basis, X, p.sd, S, v, serial_for));
    REQUIRE(v.size() == n);
    // (beyond a wall the sines vanish; a shifted input's table is minus its shift there)
    CHECK((v(3) == 0.0) == !shifted);
    CHECK((v(7) == 0.0) == !shifted);
    CHECK(direct.minCoeff() >= 0.0);
    CHECK(direct.maxCoeff() > 0.1);
    for (Index i = 0; i < n; ++i) CHECK(std::abs(v(i) - direct(i)) <= 1e-12 * direct.maxCoeff());
    REQUIRE(component_quadratic_diag(c, p, X, S, v3, thread_for(3)));
    CHECK(v3 == v);
  }
  // not used for one input, nor when the last input takes many values
  VectorXd ls1(1), ls2(2);
  ls1 << 0.5;
  ls2 << 0.5, 0.7;
  const Component c1 = hilbert_component(KernelType::se, ls1, 0.0, {8}, 2.0);
  const Component c2 = hilbert_component(KernelType::se, ls2, 0.0, {4, 4}, 2.0);
  VectorXd v;
  CHECK_FALSE(hilbert_quadratic_diag(c1.basis, uniform_matrix(50, 1, 45, -1.0, 1.0), component_prior(c1, 0.0).sd,
                                     MatrixXd::Identity(8, 8), v, serial_for));
  CHECK_FALSE(hilbert_quadratic_diag(c2.basis, uniform_matrix(50, 2, 46, -1.0, 1.0), component_prior(c2, 0.0).sd,
                                     MatrixXd::Identity(16, 16), v, serial_for));
  CHECK(v.size() == 0);
}

TEST_CASE("Hilbert products through observed pairs in product form equal those of the features", "[hilbert]") {
  // hilbert_tensor(): F = sd .* (P kron Sv) with a by value per row;
  // hilbert_tensor_times(): W F for a sparse W over the term's rows;
  // hilbert_tensor_dots(): 2 H(a, :) . F(b, :) at W's entries, in W's order
  // or through a permutation; blocks split over threads give the same values.
  using Sparse = Eigen::SparseMatrix<double, Eigen::RowMajor>;
  for (Index d : {2, 3})
  for (bool shifted : {false, true}) {
    CAPTURE(d, shifted);
    std::vector<Index> m = d == 2 ? std::vector<Index>{6, 4} : std::vector<Index>{3, 4, 5};
    VectorXd log_ls = VectorXd::LinSpaced(d, std::log(0.5), std::log(0.9));
    Component c = hilbert_component(KernelType::se, log_ls, 0.2, m, 2.0);
    if (shifted) shift_sines(c, 73);
    const Index n = 120, R = 30, M = c.size();
    MatrixXd X = uniform_matrix(n, d, 61 + static_cast<unsigned>(d), -2.0, 2.0);
    for (Index i = 0; i < n; ++i) X(i, d - 1) = std::round(X(i, d - 1) * 2.0) / 2.0;  // 9 values
    X(5, 0) = 2.5;  // outside the box
    const VectorXd by = uniform_matrix(n, 1, 63, 0.5, 1.5).col(0);
    const ComponentPrior p = component_prior(c, 0.0);
    const MatrixXd F = by.asDiagonal() * features(c, X);
    HilbertTensor t;
    REQUIRE(hilbert_tensor(c.basis, X, by, p.sd, t));
    CHECK(t.values() == 9);
    CHECK(t.M1 * t.md == M);
    std::vector<Eigen::Triplet<double>> trip;
    const MatrixXd U = uniform_matrix(R, n, 65, 0.0, 1.0), Wv = normal_matrix(R, n, 66);
    for (Index a = 0; a < R; ++a)
      for (Index b = 0; b < n; ++b)
        if (U(a, b) < 0.15) trip.emplace_back(a, b, Wv(a, b));
    Sparse W(R, n);
    W.setFromTriplets(trip.begin(), trip.end());
    REQUIRE(W.nonZeros() > 200);
    const auto serial = [](std::size_t k, const RangeBody& body) { blocked_for(k, serial_for, body); };
    const ParallelFor threads = thread_for(3);
    const auto parallel = [&](std::size_t k, const RangeBody& body) {  // blocks of 4 rows on 3 threads
      threads((k + 3) / 4, [&](std::size_t b0, std::size_t b1) { body(4 * b0, std::min(k, 4 * b1)); });
    };
    const MatrixXd direct = W * F, got = hilbert_tensor_times(t, W, serial);
    REQUIRE(got.rows() == R);
    REQUIRE(got.cols() == M);
    for (Index a = 0; a < R; ++a)
      for (Index j = 0; j < M; ++j) CHECK(std::abs(got(a, j) - direct(a, j)) <= 1e-12 * direct.cwiseAbs().maxCoeff());
    CHECK(hilbert_tensor_times(t, W, parallel) == got);
    const MatrixXd H = normal_matrix(R, M, 67);
    VectorXd v(W.nonZeros()), v2(W.nonZeros());
    hilbert_tensor_dots(t, H, W, nullptr, v, serial);
    Index e = 0;
    for (Index a = 0; a < R; ++a)
      for (Sparse::InnerIterator it(W, a); it; ++it, ++e)
        CHECK(std::abs(v(e) - 2.0 * H.row(a).dot(F.row(it.col()))) <= 1e-12 * (1 + std::abs(v(e))));
    std::vector<int> rev(static_cast<std::size_t>(W.nonZeros()));
    for (std::size_t j = 0; j < rev.size(); ++j) rev[j] = static_cast<int>(rev.size() - 1 - j);
    hilbert_tensor_dots(t, H, W, rev.data(), v2, parallel);
    CHECK(v2 == v.reverse());
  }
  // one input: no product form
  VectorXd ls1(1);
  ls1 << 0.5;
  const Component c1 = hilbert_component(KernelType::se, ls1, 0.0, {8}, 2.0);
  HilbertTensor t1;
  CHECK_FALSE(hilbert_tensor(c1.basis, uniform_matrix(20, 1, 68, -1.0, 1.0), VectorXd(), component_prior(c1, 0.0).sd, t1));
  CHECK(t1.empty());
}

TEST_CASE("Hilbert Gram from the product form equals the product of the features", "[hilbert]") {
  // hilbert_weighted_gram() groups the rows by their last input; rows on a
  // grid of 9 values per input (so few groups), weights of both signs and
  // zero, and rows outside the box (no features).
  for (Index d : {2, 3})
  for (bool shifted : {false, true}) {
    CAPTURE(d, shifted);
    std::vector<Index> m = d == 2 ? std::vector<Index>{7, 5} : std::vector<Index>{4, 3, 5};
    VectorXd log_ls = VectorXd::LinSpaced(d, std::log(0.6), std::log(1.1));
    Component c = hilbert_component(KernelType::matern52, log_ls, 0.4, m, 2.0);
    c.basis.centre(0) = 0.3;
    if (shifted) shift_sines(c, 75);
    const Index n = 300;
    MatrixXd X = uniform_matrix(n, d, 41 + static_cast<unsigned>(d), -2.0, 2.0);
    for (Index i = 0; i < n; ++i)
      for (Index k = 0; k < d; ++k) X(i, k) = std::round(X(i, k) * 2.0) / 2.0;  // 9 values per input
    X(3, 0) = 2.5;  // outside the box (centre 0.3, half-width 2 along input 1)
    X(7, d - 1) = -2.5;
    VectorXd w = normal_matrix(n, 1, 43).col(0);
    w(10) = 0;
    const ComponentPrior p = component_prior(c, 0.0);
    const MatrixXd Phi = features(c, X);
    MatrixXd direct = Phi.transpose() * w.asDiagonal() * Phi;
    direct.triangularView<Eigen::StrictlyUpper>().setZero();
    MatrixXd G;
    REQUIRE(hilbert_weighted_gram(c.basis, X, w, p.sd, G));
    REQUIRE(G.rows() == c.size());
    CHECK(G.triangularView<Eigen::StrictlyUpper>().toDenseMatrix().cwiseAbs().maxCoeff() == 0.0);
    CHECK((G - direct).cwiseAbs().maxCoeff() < 1e-12 * direct.cwiseAbs().maxCoeff());
    CHECK(direct.cwiseAbs().maxCoeff() > 0.1);
    MatrixXd G2;  // through the component kind
    REQUIRE(component_gram_lower(c, p, X, w, G2));
    CHECK(G2 == G);
  }
  // not used for one input, nor when the last input takes many values
  VectorXd ls1(1);
  ls1 << 0.5;
  const Component c1 = hilbert_component(KernelType::se, ls1, 0.0, {8}, 2.0);
  const MatrixXd X1 = uniform_matrix(50, 1, 45, -1.0, 1.0);
  MatrixXd G;
  CHECK_FALSE(hilbert_weighted_gram(c1.basis, X1, VectorXd::Ones(50), component_prior(c1, 0.0).sd, G));
  VectorXd ls2(2);
  ls2 << 0.5, 0.7;
  const Component c2 = hilbert_component(KernelType::se, ls2, 0.0, {4, 4}, 2.0);
  const MatrixXd X2 = uniform_matrix(50, 2, 46, -1.0, 1.0);  // 50 distinct values of input 2
  CHECK_FALSE(hilbert_weighted_gram(c2.basis, X2, VectorXd::Ones(50), component_prior(c2, 0.0).sd, G));
  CHECK(G.size() == 0);
}
