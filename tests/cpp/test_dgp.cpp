// Tests of dgp.hpp (deep GPs by approximate EP, Bui et al. 2016): the
// psi-statistics against Monte Carlo, every analytic gradient of the energy
// against central finite differences, the exact cases (one data point; one
// layer = FITC predictive density), determinism across thread counts, a
// short fit and prediction.
#include <catch2/catch.hpp>
#include <scalegp/dgp.hpp>

#include <cmath>
#include <vector>

using namespace scalegp;
using namespace scalegp::dgp;

namespace {

// A network with widths dims[0] -> ... -> dims.back(), M inducing points per
// GP and parameters drawn from the generator (fixed seed).
Net random_net(const std::vector<Index>& dims, Index M, Rng& rng) {
  Net net;
  for (std::size_t l = 0; l + 1 < dims.size(); ++l) {
    Layer ly;
    ly.log_ell = VectorXd(dims[l]);
    for (Index j = 0; j < dims[l]; ++j) ly.log_ell[j] = 0.3 + 0.2 * std_normal(rng);
    ly.log_sf = 0.2 * std_normal(rng);
    ly.log_sn = std::log(0.2);
    for (Index d = 0; d < dims[l + 1]; ++d) {
      MatrixXd Z(M, dims[l]);
      for (Index i = 0; i < Z.size(); ++i) Z.data()[i] = std_normal(rng);
      VectorXd rho(M * (M + 1) / 2), tau(M);
      for (Index i = 0; i < rho.size(); ++i) rho[i] = std_normal(rng) / 3;
      for (Index i = 0; i < M; ++i) tau[i] = std_normal(rng);
      ly.Z.push_back(Z), ly.rho.push_back(rho), ly.tau.push_back(tau);
    }
    net.layers.push_back(ly);
  }
  return net;
}

MatrixXd normal_matrix(Index r, Index c, Rng& rng) {
  MatrixXd A(r, c);
  for (Index i = 0; i < A.size(); ++i) A.data()[i] = std_normal(rng);
  return A;
}

}  // namespace

TEST_CASE("dgp psi-statistics agree with Monte Carlo", "[dgp]") {
  Rng rng(11);
  const Index Q = 3, M = 4;
  const MatrixXd Z = normal_matrix(M, Q, rng);
  VectorXd mu(Q), s(Q), ell2(Q);
  mu << 0.3, -0.5, 0.1;
  s << 0.2, 0.5, 0.05;
  ell2 << 0.8, 1.5, 0.6;
  const double sf2 = 1.7;
  const VectorXd p1 = psi1(mu, s, Z, ell2, sf2);
  const MatrixXd P2 = psi2(mu, s, Z, ell2, sf2);
  const int draws = 200000;
  VectorXd e1 = VectorXd::Zero(M);
  MatrixXd e2 = MatrixXd::Zero(M, M), sq2 = MatrixXd::Zero(M, M);
  VectorXd sq1 = VectorXd::Zero(M);
  MatrixXd h(1, Q);
  for (int t = 0; t < draws; ++t) {
    for (Index j = 0; j < Q; ++j) h(0, j) = mu[j] + std::sqrt(s[j]) * std_normal(rng);
    const VectorXd k = se_kernel(Z, h, ell2, sf2).col(0);
    const MatrixXd kk = k * k.transpose();
    e1 += k, sq1 += k.cwiseProduct(k), e2 += kk, sq2 += kk.cwiseProduct(kk);
  }
  e1 /= draws, e2 /= draws;
  for (Index m = 0; m < M; ++m) {
    const double se1 = std::sqrt((sq1[m] / draws - e1[m] * e1[m]) / draws);
    CHECK(std::abs(p1[m] - e1[m]) < 5 * se1);
    for (Index m2 = 0; m2 < M; ++m2) {
      const double se2 = std::sqrt((sq2(m, m2) / draws - e2(m, m2) * e2(m, m2)) / draws);
      CHECK(std::abs(P2(m, m2) - e2(m, m2)) < 5 * se2);
    }
  }
  // s = 0: the kernel vector and its outer product
  const VectorXd k = se_kernel(Z, mu.transpose(), ell2, sf2).col(0);
  CHECK((psi1(mu, VectorXd::Zero(Q), Z, ell2, sf2) - k).norm() < 1e-14);
  CHECK((psi2(mu, VectorXd::Zero(Q), Z, ell2, sf2) - k * k.transpose()).norm() < 1e-14);
}

TEST_CASE("dgp energy gradient agrees with central finite differences (2-2-2-1, M = 3, N = 7, batch 4)", "[dgp]") {
  Rng rng(3);
  const Index N = 7;
  const Net net = random_net({2, 2, 2, 1}, 3, rng);
  const MatrixXd X = normal_matrix(N, 2, rng), Y = normal_matrix(N, 1, rng);
  const std::vector<std::size_t> idx{0, 2, 3, 5};
  Net g;
  const double E = energy(net, X, Y, idx, static_cast<double>(N), &g, serial_for);
  CHECK(std::isfinite(E));
  const VectorXd th = pack(net), ga = pack(g);
  REQUIRE(ga.size() == th.size());
  REQUIRE(th.size() == (2 + 2) * 3 + (6 + 6 + 3) * 5);
  const double h = 1e-5;
  double worst = 0;
  for (Index i = 0; i < th.size(); ++i) {
    Net a = net, b = net;
    VectorXd ta = th, tb = th;
    ta[i] += h, tb[i] -= h;
    unpack(a, ta), unpack(b, tb);
    const double gn = (energy(a, X, Y, idx, static_cast<double>(N), nullptr, serial_for) -
                       energy(b, X, Y, idx, static_cast<double>(N), nullptr, serial_for)) / (2 * h);
    worst = std::max(worst, std::abs(ga[i] - gn) / (std::abs(gn) + 1e-3));
  }
  CHECK(worst < 1e-6);
}

TEST_CASE("dgp energy gradient agrees with finite differences with zero hidden layers (3-1, M = 4)", "[dgp]") {
  Rng rng(5);
  const Index N = 9;
  const Net net = random_net({3, 1}, 4, rng);
  const MatrixXd X = normal_matrix(N, 3, rng), Y = normal_matrix(N, 1, rng);
  const std::vector<std::size_t> idx{1, 4, 8};
  Net g;
  energy(net, X, Y, idx, static_cast<double>(N), &g, serial_for);
  const VectorXd th = pack(net), ga = pack(g);
  double worst = 0;
  for (Index i = 0; i < th.size(); ++i) {
    Net a = net, b = net;
    VectorXd ta = th, tb = th;
    ta[i] += 1e-5, tb[i] -= 1e-5;
    unpack(a, ta), unpack(b, tb);
    const double gn = (energy(a, X, Y, idx, static_cast<double>(N), nullptr, serial_for) -
                       energy(b, X, Y, idx, static_cast<double>(N), nullptr, serial_for)) / 2e-5;
    worst = std::max(worst, std::abs(ga[i] - gn) / (std::abs(gn) + 1e-3));
  }
  CHECK(worst < 1e-6);
}

TEST_CASE("dgp with zero hidden layers: log Z_n is the FITC predictive density under the cavity", "[dgp]") {
  Rng rng(7);
  const Index N = 6, M = 4;
  const Net net = random_net({2, 1}, M, rng);
  const MatrixXd X = normal_matrix(N, 2, rng), Y = normal_matrix(N, 1, rng);
  const Layer& ly = net.layers[0];
  const VectorXd ell2 = (2 * ly.log_ell.array()).exp();
  const double sf2 = std::exp(2 * ly.log_sf), sn2 = std::exp(2 * ly.log_sn), beta = (N - 1.0) / N;
  // the cavity directly: precision K^-1 + beta Lambda, mean Sh beta tau
  MatrixXd K = se_kernel(ly.Z[0], ly.Z[0], ell2, sf2);
  K.diagonal().array() += net.jitter;
  const MatrixXd R = r_of(ly.rho[0], M);
  const MatrixXd Sh = (K.inverse() + beta * R.transpose() * R).inverse();
  const VectorXd mh = Sh * (beta * ly.tau[0]);
  for (Index n = 0; n < N; ++n) {
    const VectorXd k = se_kernel(ly.Z[0], X.row(n), ell2, sf2).col(0);
    const VectorXd a = K.ldlt().solve(k);
    const double mean = a.dot(mh), var = sf2 - k.dot(a) + a.dot(Sh * a) + sn2;
    const double want = -0.5 * std::log(2 * kPi * var) - 0.5 * std::pow(Y(n, 0) - mean, 2) / var;
    // E over one row minus E over no log Z term: -N log Z_n
    const SharedSet sh = make_shared_all(net, N, false);
    Pass ps;
    forward(net, sh, X.row(n).transpose(), ps);
    const double got = gaussian_logz(Y.row(n).transpose(), ps.m[0], ps.v[0], nullptr, nullptr);
    CHECK(std::abs(got - want) < 1e-9);
  }
}

TEST_CASE("dgp with one data point: the energy is minus the exact log marginal likelihood for any factor", "[dgp]") {
  Rng rng(9);
  const Net net = random_net({2, 1}, 3, rng);
  const MatrixXd X = normal_matrix(1, 2, rng), Y = normal_matrix(1, 1, rng);
  const double v = std::exp(2 * net.layers[0].log_sf) + std::exp(2 * net.layers[0].log_sn);
  const double exact = -0.5 * std::log(2 * kPi * v) - 0.5 * Y(0, 0) * Y(0, 0) / v;
  const double E = energy(net, X, Y, {0}, 1.0, nullptr, serial_for);
  CHECK(std::abs(-E - exact) < 1e-8);
}

TEST_CASE("dgp energy and gradient are bit-identical for 1 and 2 threads", "[dgp]") {
  Rng rng(13);
  const Index N = 700;
  const Net net = random_net({2, 2, 1}, 3, rng);
  const MatrixXd X = normal_matrix(N, 2, rng), Y = normal_matrix(N, 1, rng);
  std::vector<std::size_t> idx(static_cast<std::size_t>(N));
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  Net g1, g2;
  const double e1 = energy(net, X, Y, idx, static_cast<double>(N), &g1, serial_for);
  const double e2 = energy(net, X, Y, idx, static_cast<double>(N), &g2, thread_for(2));
  CHECK(e1 == e2);
  CHECK(pack(g1) == pack(g2));
}

TEST_CASE("dgp fit raises the objective and predicts a smooth function", "[dgp]") {
  Rng rng(17);
  const Index N = 150;
  MatrixXd X(N, 1), Y(N, 1);
  for (Index i = 0; i < N; ++i) {
    X(i, 0) = -2 + 4.0 * i / (N - 1);
    Y(i, 0) = std::sin(2 * X(i, 0)) + 0.1 * std_normal(rng);
  }
  Net net = initialise(X, 1, {1}, 10, rng);
  const double before = -energy(net, X, Y, [&] {
    std::vector<std::size_t> a(static_cast<std::size_t>(N));
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = i;
    return a;
  }(), static_cast<double>(N), nullptr, serial_for);
  Settings set;
  set.batch_size = 50;
  set.max_iter = 1500;
  set.learning_rate = 0.01;
  const FitInfo info = train(net, X, Y, set, rng, serial_for, [](int, double) { return true; });
  CHECK(info.iterations == 1500);
  CHECK(!info.converged);
  CHECK(info.objective > before + 50);
  const Prediction p = predict(net, X, static_cast<double>(N), serial_for);
  REQUIRE(p.mean.size() == 2);
  double rss = 0;
  for (Index i = 0; i < N; ++i) rss += std::pow(p.mean[1](i, 0) - std::sin(2 * X(i, 0)), 2);
  CHECK(std::sqrt(rss / N) < 0.15);
  CHECK((p.var[1].array() > 0).all());
}

TEST_CASE("dgp probit output: gradient agrees with finite differences (2-2-1, M = 3), log Z exact with one point", "[dgp]") {
  Rng rng(19);
  const Index N = 8;
  Net net = random_net({2, 2, 1}, 3, rng);
  net.probit = true;
  const MatrixXd X = normal_matrix(N, 2, rng);
  MatrixXd Y(N, 1);
  for (Index i = 0; i < N; ++i) Y(i, 0) = X(i, 0) + 0.3 * std_normal(rng) > 0 ? 1.0 : -1.0;
  const std::vector<std::size_t> idx{0, 1, 4, 6, 7};
  Net g;
  energy(net, X, Y, idx, static_cast<double>(N), &g, serial_for);
  const VectorXd th = pack(net), ga = pack(g);
  double worst = 0;
  for (Index i = 0; i < th.size(); ++i) {
    Net a = net, b = net;
    VectorXd ta = th, tb = th;
    ta[i] += 1e-5, tb[i] -= 1e-5;
    unpack(a, ta), unpack(b, tb);
    const double gn = (energy(a, X, Y, idx, static_cast<double>(N), nullptr, serial_for) -
                       energy(b, X, Y, idx, static_cast<double>(N), nullptr, serial_for)) / 2e-5;
    worst = std::max(worst, std::abs(ga[i] - gn) / (std::abs(gn) + 1e-3));
  }
  CHECK(worst < 1e-6);
  CHECK(g.layers[1].log_sn == 0.0);  // no output noise
  // one layer, one point: the cavity is the prior, f ~ N(0, sf2), log Z = log Phi(0) = log 1/2
  Net one = random_net({2, 1}, 3, rng);
  one.probit = true;
  CHECK(std::abs(-energy(one, X.topRows(1), Y.topRows(1), {0}, 1.0, nullptr, serial_for) - std::log(0.5)) < 1e-10);
  // with a mean: log Phi(y m / sqrt(1 + v)) against the probit integral by quadrature
  const VectorXd m = VectorXd::Constant(1, 0.7), v = VectorXd::Constant(1, 0.5), y = VectorXd::Constant(1, -1.0);
  double quad = 0;
  const int K = 20000;
  for (int k = 0; k < K; ++k) {
    const double f = -10 + 20.0 * (k + 0.5) / K;
    quad += std::exp(-0.5 * (f - 0.7) * (f - 0.7) / 0.5) / std::sqrt(2 * kPi * 0.5) * 0.5 * std::erfc(f / std::sqrt(2.0)) * 20.0 / K;
  }
  CHECK(std::abs(probit_logz(y, m, v, nullptr, nullptr) - std::log(quad)) < 1e-8);
}
