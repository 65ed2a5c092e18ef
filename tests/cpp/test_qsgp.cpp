// Tests of the QSGP engine (qsgp.hpp): random Fourier features against the
// SE and Matern kernels; the ELBO estimator exact with all rows and features
// and unbiased (value and gradient) under sampling, against the closed-form
// ELBO and its finite-difference gradient, also with the control variate;
// fits bit-identical for any thread count; the inducing-point basis with
// m = n (QsgpGram) likewise.
#include <catch2/catch.hpp>
#include "fixtures.hpp"

#include <cmath>
#include <vector>

using namespace scalegp;
using namespace fixtures;

namespace {

// An RFF block over columns {0, 1} (ARD lengthscales 0.9, 1.4; variance 0.8)
// and a parametric block (column 2, prior sd 2).
std::vector<QsgpBlock> make_blocks(Index nf, KernelType type, unsigned seed, bool iso = false) {
  Rng rng(seed);
  QsgpBlock g;
  g.rff = true;
  g.type = type;
  g.cols = {0, 1};
  g.log_var = std::log(0.8);
  g.log_ls = iso ? VectorXd::Constant(1, std::log(1.1)) : (VectorXd(2) << std::log(0.9), std::log(1.4)).finished();
  g.eps = rff_frequencies(type, nf, 2, rng);
  QsgpBlock p;
  p.rff = false;
  p.cols = {2};
  p.prior_sd = VectorXd::Constant(1, 2.0);
  return {g, p};
}

Qsgp make_model(const Data& d, Index nf, std::size_t batch, Index feature_batch, unsigned seed, bool iso = false) {
  Settings set;
  set.batch_size = batch;
  QsgpSettings qs;
  qs.feature_batch = feature_batch;
  Qsgp q(make_blocks(nf, KernelType::se, seed, iso), std::log(0.3), set, qs, d.X.data(), d.n(),
         static_cast<std::size_t>(d.X.cols()), d.y.data(), d.w.data(), d.o.data());
  const Index m = q.total_size();
  q.mu = uniform_matrix(m, 1, seed + 1, -0.6, 0.6);
  q.rho = uniform_matrix(m, 1, seed + 2, -1.5, -0.2);
  return q;
}

// The packed parameters (mu, rho, every hyperparameter) and back.
VectorXd pack_all(const Qsgp& q) {
  const Index m = q.total_size();
  VectorXd x(2 * m + q.n_hyper());
  x << q.mu, q.rho, VectorXd::Zero(q.n_hyper());
  Index h = 2 * m;
  for (const QsgpBlock& b : q.blocks)
    if (b.rff) {
      x(h++) = b.log_var;
      for (Index d = 0; d < b.log_ls.size(); ++d) x(h++) = b.log_ls(d);
    }
  x(h) = q.log_noise;
  return x;
}
void unpack_all(Qsgp& q, const VectorXd& x) {
  const Index m = q.total_size();
  q.mu = x.head(m);
  q.rho = x.segment(m, m);
  Index h = 2 * m;
  for (QsgpBlock& b : q.blocks)
    if (b.rff) {
      b.log_var = x(h++);
      for (Index d = 0; d < b.log_ls.size(); ++d) b.log_ls(d) = x(h++);
    }
  q.log_noise = x(h);
}

// The estimate's gradient scattered to the packed layout.
VectorXd full_gradient(const Qsgp& q, const QsgpDraw& dr, const QsgpEstimate& est) {
  const Index m = q.total_size();
  VectorXd g = VectorXd::Zero(2 * m + q.n_hyper());
  for (std::size_t b = 0; b < q.blocks.size(); ++b) {
    const Index s = q.blocks[b].start;
    for (std::size_t e = 0; e < dr.I[b].size(); ++e) {
      g(s + dr.I[b][e]) += est.gmuI[b](static_cast<Index>(e));
      g(m + s + dr.I[b][e]) += est.grhoI[b](static_cast<Index>(e));
    }
    for (std::size_t e = 0; e < dr.J[b].size(); ++e) g(s + dr.J[b][e]) += est.gmuJ[b](static_cast<Index>(e));
  }
  g.tail(q.n_hyper()) = est.ghyper;
  return g;
}

VectorXd exact_gradient(Qsgp q) {
  const VectorXd x0 = pack_all(q);
  return fd_gradient(
      [&](const VectorXd& x) {
        unpack_all(q, x);
        return q.exact(serial_for).elbo;
      },
      x0, 1e-4);
}

// The mean of the estimate and of its full gradient over R draws, with their standard errors.
struct McAverage {
  double value, value_se;
  VectorXd gradient, gradient_se;
};
McAverage average_estimate(const Qsgp& q, int R, Rng& rng) {
  double s = 0, ss = 0;
  VectorXd gs, gss;
  for (int r = 0; r < R; ++r) {
    const QsgpDraw dr = q.draw(rng);
    const QsgpEstimate est = q.estimate(dr, serial_for);
    s += est.value;
    ss += est.value * est.value;
    const VectorXd g = full_gradient(q, dr, est);
    if (r == 0) gs = gss = VectorXd::Zero(g.size());
    gs += g;
    gss += g.cwiseAbs2();
  }
  McAverage out;
  out.value = s / R;
  out.value_se = std::sqrt((ss / R - out.value * out.value) / R);
  out.gradient = gs / R;
  out.gradient_se = ((gss / R - out.gradient.cwiseAbs2()) / R).cwiseSqrt();
  return out;
}

}  // namespace

TEST_CASE("random Fourier features approximate the SE and Matern kernels", "[qsgp]") {
  const Index nf = 40000;
  MatrixXd xz(2, 2);
  xz << 0.3, -0.5, 1.1, 0.2;
  for (KernelType type : {KernelType::se, KernelType::matern32, KernelType::matern52}) {
    Rng rng(11);
    const MatrixXd eps = rff_frequencies(type, nf, 2, rng);
    Kernel k;
    k.type = type;
    k.log_var = 0;
    k.log_ls = (VectorXd(2) << std::log(0.9), std::log(1.4)).finished();
    // phi(x)' phi(z) = mean_k cos(omega_k' (x - z))
    double s = 0;
    for (Index j = 0; j < nf; ++j)
      s += std::cos(eps(j, 0) / 0.9 * (xz(0, 0) - xz(1, 0)) + eps(j, 1) / 1.4 * (xz(0, 1) - xz(1, 1)));
    s /= static_cast<double>(nf);
    const double exact = k.cross(xz.row(0), xz.row(1))(0, 0);
    CHECK(std::abs(s - exact) < 4.0 / std::sqrt(static_cast<double>(nf)));  // (sd <= 1 / sqrt(2 nf))
  }
}

TEST_CASE("QSGP estimator with all rows and features is the exact ELBO and its gradient", "[qsgp]") {
  const Data d = make_data(40, Family::gaussian, 3);
  for (bool iso : {false, true}) {
    Qsgp q = make_model(d, 6, 0, 1000, 5, iso);
    Rng rng(1);
    const QsgpDraw dr = q.draw(rng);
    const QsgpEstimate est = q.estimate(dr, serial_for);
    const QsgpExact ex = q.exact(serial_for);
    CHECK(est.value == Approx(ex.elbo).epsilon(1e-12));
    const VectorXd g = full_gradient(q, dr, est), fd = exact_gradient(q);
    for (Index j = 0; j < g.size(); ++j) CHECK(g(j) == Approx(fd(j)).epsilon(1e-6).margin(1e-7));
  }
}

TEST_CASE("QSGP ELBO estimator and its gradient are unbiased under row and feature sampling", "[qsgp]") {
  const Data d = make_data(30, Family::gaussian, 4);
  Qsgp q = make_model(d, 8, 6, 5, 7);  // m = 16 + 1, n~ = 6, m~ = 5
  const QsgpExact ex = q.exact(serial_for);
  const VectorXd fd = exact_gradient(q);
  Rng rng(2);
  const McAverage mc = average_estimate(q, 40000, rng);
  CHECK(std::abs(mc.value - ex.elbo) < 4 * mc.value_se);
  CHECK(mc.value_se < 0.05 * std::abs(ex.elbo));  // (a test with power: the error bar is small)
  const VectorXd& gse = mc.gradient_se;
  int outside = 0;
  for (Index j = 0; j < fd.size(); ++j) outside += std::abs(mc.gradient(j) - fd(j)) > 4 * gse(j) + 1e-6;
  CHECK(outside == 0);
  // the estimator is not exact: a wrong scale factor would show
  CHECK(gse.maxCoeff() > 0);
}

TEST_CASE("QSGP fit is bit-identical for any thread count and starts at the prior", "[qsgp]") {
  const Data d = make_data(3000, Family::gaussian, 5);
  auto run = [&](const ParallelFor& pfor) {
    Settings set;
    set.batch_size = 700;
    set.max_iter = 60;
    QsgpSettings qs;
    qs.feature_batch = 64;
    Qsgp q(make_blocks(256, KernelType::matern52, 9), std::log(0.3), set, qs, d.X.data(), d.n(), 3, d.y.data(),
           d.w.data(), d.o.data());
    CHECK(q.mu.isZero());
    CHECK(std::exp(2 * q.rho(0)) == Approx(0.8));
    Rng rng(4);
    const FitInfo info = q.fit(pfor, rng, [](int, double) { return true; });
    CHECK_FALSE(info.converged);
    return std::make_pair(q.mu, info.trace);
  };
  const auto a = run(serial_for), b = run(thread_for(3));
  CHECK(a.first == b.first);
  CHECK(a.second == b.second);
}

TEST_CASE("QSGP control variate: unbiased, exact in full, tracked under sparse updates, thread-independent", "[qsgp]") {
  const Data d = make_data(30, Family::gaussian, 4);
  Qsgp q = make_model(d, 8, 6, 5, 7);
  const QsgpExact ex = q.exact(serial_for);
  const VectorXd fd = exact_gradient(q);
  Rng rng(2);
  q.cv_init(12, rng, serial_for);
  REQUIRE(q.cv_rows.size() == 12);
  const McAverage mc = average_estimate(q, 40000, rng);
  CHECK(std::abs(mc.value - ex.elbo) < 4 * mc.value_se);
  int outside = 0;
  for (Index j = 0; j < fd.size(); ++j) outside += std::abs(mc.gradient(j) - fd(j)) > 4 * mc.gradient_se(j) + 1e-6;
  CHECK(outside == 0);
  // all rows and features: the estimate and its gradient are exact
  Qsgp full = make_model(d, 8, 30, 16, 7);
  full.cv_init(30, rng, serial_for);
  const QsgpDraw dr = full.draw(rng);
  const QsgpEstimate est = full.estimate(dr, serial_for);
  CHECK(est.value == Approx(ex.elbo).epsilon(1e-10));
  CHECK((full_gradient(full, dr, est) - fd).cwiseAbs().maxCoeff() < 1e-5 * std::max(1.0, fd.cwiseAbs().maxCoeff()));
  // a fit: a = Phi0_P mu tracked through the sparse steps; bit-identical for any thread count
  const Data big = make_data(3000, Family::gaussian, 5);
  auto run = [&](const ParallelFor& pfor) {
    Settings set;
    set.batch_size = 300;
    set.max_iter = 60;
    QsgpSettings qs;
    qs.feature_batch = 64;
    qs.control_rows = 200;
    Qsgp f(make_blocks(256, KernelType::matern52, 9), std::log(0.3), set, qs, big.X.data(), big.n(), 3, big.y.data(),
           big.w.data(), big.o.data());
    Rng r(4);
    const FitInfo info = f.fit(pfor, r, [](int, double) { return true; });
    CHECK(f.cv_rows.size() == 200);
    CHECK(f.cv_drift(pfor) < 1e-10 * std::max(1.0, f.cv_a.cwiseAbs().maxCoeff()));
    CHECK(f.cv_a.cwiseAbs().maxCoeff() > 0.1);  // (mu moved)
    return std::make_pair(f.mu, info.trace);
  };
  const auto a = run(serial_for), b = run(thread_for(3));
  CHECK(a.first == b.first);
  CHECK(a.second == b.second);
}

TEST_CASE("QSGP initial c is the mean-field optimum (Proposition 1) and maximises the exact ELBO in c", "[qsgp]") {
  const Data d = make_data(50, Family::gaussian, 6);
  Qsgp q = make_model(d, 5, 0, 1000, 8);
  Rng rng(3);
  q.init_diagonal(1000, rng, serial_for);  // (all 50 rows)
  const std::vector<MatrixXd> om = q.frequencies();
  VectorXd phi(q.total_size()), ss = VectorXd::Zero(q.total_size());
  for (Index l = 0; l < d.X.rows(); ++l) {
    q.row_features(d.X.data() + l, d.n(), om, phi);
    ss += d.w(l) * phi.cwiseAbs2();
  }
  const double s2 = q.noise_var();
  for (const QsgpBlock& b : q.blocks)
    for (Index i = b.start; i < b.start + b.size(); ++i)
      CHECK(std::exp(2 * q.rho(i)) == Approx(1.0 / (ss(i) / s2 + b.precision())).epsilon(1e-12));
  // a stationary point of the exact ELBO in rho
  const VectorXd x0 = q.rho;
  const VectorXd g = fd_gradient(
      [&](const VectorXd& r) {
        q.rho = r;
        return q.exact(serial_for).elbo;
      },
      x0, 1e-4);
  CHECK(g.cwiseAbs().maxCoeff() < 1e-6);
}

// ---- non-Gaussian likelihoods: the tangent-line bound ----

namespace {

// Model of make_model() with likelihood `fam` (data made for that family).
Qsgp make_model_lik(const Data& d, Family fam, Index nf, std::size_t batch, Index feature_batch, unsigned seed) {
  Qsgp q = make_model(d, nf, batch, feature_batch, seed);
  q.lik = Likelihood(fam);
  return q;
}

// log p(y | f) of a row with weight w, written here independently of likelihoods.hpp.
double row_loglik(Family fam, double y, double w, double f) {
  switch (fam) {
    case Family::logit: return w * (y * f - (f > 0 ? f + std::log1p(std::exp(-f)) : std::log1p(std::exp(f))));
    case Family::probit: {  // (a zero count adds nothing, also where its log is -inf)
      const double l1 = y > 0 ? y * std::log(0.5 * std::erfc(-f / std::sqrt(2.0))) : 0.0;
      const double l0 = y < 1 ? (1 - y) * std::log(0.5 * std::erfc(f / std::sqrt(2.0))) : 0.0;
      return w * (l1 + l0);
    }
    case Family::poisson: return w * (y * f - std::exp(f) - std::lgamma(y + 1.0));
    default: return 0;
  }
}

// E_{z ~ N(0,1)} log p(y | m + s z) by composite Simpson over z in [-10, 10] (20000 intervals).
double expected_loglik(Family fam, double y, double w, double m, double s) {
  const int N = 20000;
  const double h = 20.0 / N;
  double acc = 0;
  for (int k = 0; k <= N; ++k) {
    const double z = -10.0 + k * h, c = (k == 0 || k == N) ? 1.0 : (k % 2 ? 4.0 : 2.0);
    acc += c * std::exp(-0.5 * z * z) * row_loglik(fam, y, w, m + s * z);
  }
  return acc * h / 3.0 / std::sqrt(2.0 * kPi);
}

// The exact ELBO of q, computed directly: the expected log-likelihood of
// every row at its exact latent mean and sd, minus KL(q || p) in closed form.
double direct_elbo(const Qsgp& q, const Data& d, Family fam) {
  const std::vector<MatrixXd> om = q.frequencies();
  VectorXd phi(q.total_size());
  const VectorXd c2 = (2.0 * q.rho).array().exp().matrix();
  double out = 0;
  for (Index l = 0; l < d.X.rows(); ++l) {
    q.row_features(d.X.data() + l, d.n(), om, phi);
    out += expected_loglik(fam, d.y(l), d.w(l), d.o(l) + phi.dot(q.mu), std::sqrt(phi.cwiseAbs2().dot(c2)));
  }
  for (const QsgpBlock& b : q.blocks) {
    const double s = b.precision();
    for (Index i = b.start; i < b.start + b.size(); ++i)
      out -= 0.5 * (s * (q.mu(i) * q.mu(i) + c2(i)) - 2.0 * q.rho(i) - std::log(s) - 1.0);
  }
  return out;
}

}  // namespace

TEST_CASE("QSGP tangent-line bound with all rows and features is the exact ELBO, with its exact gradient", "[qsgp]") {
  for (Family fam : {Family::logit, Family::probit, Family::poisson}) {
    const Data d = make_data(20, fam, 13);
    Qsgp q = make_model_lik(d, fam, 4, 0, 1000, 5);  // m = 8 + 1: all features, all rows
    Rng rng(1);
    const QsgpDraw dr = q.draw(rng);
    const QsgpEstimate est = q.estimate(dr, serial_for);
    const double direct = direct_elbo(q, d, fam);
    CHECK(std::abs(est.value - direct) < 1e-10 * std::abs(direct));
    CHECK(std::abs(q.exact(serial_for).elbo - direct) < 1e-10 * std::abs(direct));
    const VectorXd g = full_gradient(q, dr, est), fd = exact_gradient(q);
    for (Index j = 0; j < g.size(); ++j) CHECK(g(j) == Approx(fd(j)).epsilon(1e-6).margin(1e-7));
    CHECK(std::abs(fd(2 * q.total_size() + 1)) > 0.05);  // (a lengthscale gradient to test)
    CHECK(g(g.size() - 1) == 0.0);                         // (no noise)
  }
}

TEST_CASE("QSGP tangent-line estimate of one draw: its gradient is that of the estimate at fixed tangent means", "[qsgp]") {
  for (Family fam : {Family::logit, Family::poisson}) {
    const Data d = make_data(20, fam, 14);
    Qsgp q = make_model_lik(d, fam, 4, 7, 3, 6);  // n~ = 7, m~ = 3 of 8
    Rng rng(9);
    const QsgpDraw dr = q.draw(rng);
    REQUIRE_FALSE(dr.full[0]);
    REQUIRE(dr.full[1]);
    const std::vector<double> t0 = q.tangent_means();
    const QsgpEstimate est = q.estimate(dr, serial_for, t0);
    CHECK(est.value == Approx(q.estimate(dr, serial_for).value).epsilon(1e-14));
    const VectorXd g = full_gradient(q, dr, est);
    const VectorXd fd = fd_gradient(
        [&](const VectorXd& x) {
          Qsgp q2 = q;
          unpack_all(q2, x);
          return q2.estimate(dr, serial_for, t0).value;
        },
        pack_all(q), 1e-4);
    for (Index j = 0; j < g.size(); ++j) CHECK(g(j) == Approx(fd(j)).epsilon(1e-6).margin(1e-7));
  }
}

TEST_CASE("QSGP tangent-line estimate under row and feature sampling is a lower bound on the exact ELBO", "[qsgp]") {
  for (Family fam : {Family::logit, Family::poisson}) {
    const Data d = make_data(20, fam, 15);
    Qsgp q = make_model_lik(d, fam, 4, 6, 3, 7);  // n = 20, m = 8 (+1), n~ = 6, m~ = 3
    const double direct = direct_elbo(q, d, fam);
    // tangent points: the mean c^2 (as the fit uses), and 4 times it (a poor tangent)
    const std::vector<double> tm = q.tangent_means();
    std::vector<double> tm4 = tm;
    for (double& t : tm4) t *= 4.0;
    for (const std::vector<double>& t : {tm, tm4}) {
      Rng rng(3);
      const int R = 40000;
      double s = 0, ss = 0;
      for (int r = 0; r < R; ++r) {
        const QsgpEstimate est = q.estimate(q.draw(rng), serial_for, t);
        s += est.value;
        ss += est.value * est.value;
      }
      const double mean = s / R, se = std::sqrt((ss / R - mean * mean) / R);
      CHECK(mean < direct + 3 * se);
      CHECK(se < 0.02 * std::abs(direct));  // (a test with power: the error bar is small)
      // a bound, not far below: the gap is the Jensen gap of the sampled mean and variance
      CHECK(mean > direct - 0.25 * std::abs(direct));
    }
  }
}

TEST_CASE("QSGP non-Gaussian fit is bit-identical for any thread count and raises the exact ELBO", "[qsgp]") {
  const Data d = make_data(3000, Family::logit, 5);
  double start = 0;
  auto run = [&](const ParallelFor& pfor) {
    Settings set;
    set.batch_size = 500;
    set.max_iter = 300;
    QsgpSettings qs;
    qs.feature_batch = 32;
    Qsgp q(make_blocks(128, KernelType::se, 9), std::log(0.3), set, qs, d.X.data(), d.n(), 3, d.y.data(), d.w.data(),
           d.o.data());
    q.lik = Likelihood(Family::logit);
    start = q.exact(pfor).elbo;
    Rng rng(4);
    const FitInfo info = q.fit(pfor, rng, [](int, double) { return true; });
    CHECK(info.gradient.size() == 3);  // (log variance, two log lengthscales; no noise)
    return std::make_tuple(q.mu, info.trace, q.exact(pfor).elbo);
  };
  const auto a = run(serial_for), b = run(thread_for(3));
  CHECK(std::get<0>(a) == std::get<0>(b));
  CHECK(std::get<1>(a) == std::get<1>(b));
  CHECK(std::get<2>(a) > start + 100);
}

TEST_CASE("QSGP chevron: exact in full with the finite-difference gradient of its dense columns; fit thread-independent",
          "[qsgp]") {
  const Data d = make_data(40, Family::gaussian, 11);
  Qsgp q = make_model(d, 6, 40, 12, 21);
  // 4 dense columns in the gp() block (12 features), the parametric block mean field
  MatrixXd L = uniform_matrix(12, 4, 23, -0.4, 0.4);
  q.set_dense({L, MatrixXd::Zero(1, 0)});
  for (Index i = 0; i < 12; ++i)
    for (Index r = 0; r < 4; ++r) CHECK((q.L[0](i, r) == 0) == (q.blocks[0].pos(i) <= r));  // (structural zeros)
  Rng rng(5);
  const QsgpDraw dr = q.draw(rng);
  const QsgpEstimate est = q.estimate(dr, serial_for);
  const double exact = q.exact(serial_for).elbo;
  CHECK(est.value == Approx(exact).epsilon(1e-10));
  // every live entry of L: the gradient (I and J are all features) against central differences of the exact ELBO
  int live = 0;
  for (Index i = 0; i < 12; ++i)
    for (Index r = 0; r < std::min<Index>(q.blocks[0].pos(i), 4); ++r) {
      double g = 0;
      for (std::size_t e = 0; e < dr.I[0].size(); ++e)
        if (dr.I[0][e] == i) g += est.gLI[0](static_cast<Index>(e), r);
      for (std::size_t e = 0; e < dr.J[0].size(); ++e)
        if (dr.J[0][e] == i) g += est.gLJ[0](static_cast<Index>(e), r);
      Qsgp qp = q, qm = q;
      qp.L[0](i, r) += 1e-5;
      qm.L[0](i, r) -= 1e-5;
      const double fd = (qp.exact(serial_for).elbo - qm.exact(serial_for).elbo) / 2e-5;
      CHECK(g == Approx(fd).epsilon(1e-6).margin(1e-6));
      ++live;
    }
  CHECK(live == 38);  // (sum over the chevron positions 0..11 of min(pos, 4))
  // the control variate on 20 support rows (on the mean and on each dense
  // column): with all rows and features its value and its gradient are zero
  // (per index: I = J = all features in order, and the I and J entries of
  // an index carry halves of its gradient)
  {
    Qsgp qc = q;
    Rng rc(6);
    qc.cv_init(20, rc, serial_for);
    REQUIRE(qc.cv_b.size() == 2);
    CHECK(qc.cv_b[0].rows() == 20);
    CHECK(qc.cv_b[0].cols() == 4);
    CHECK(qc.cv_b[0].cwiseAbs().maxCoeff() > 0);
    const QsgpEstimate ec = qc.estimate(dr, serial_for);
    CHECK(ec.value == Approx(exact).epsilon(1e-10));
    const auto close = [](const MatrixXd& a, const MatrixXd& b) {
      return (a - b).cwiseAbs().maxCoeff() <= 1e-9 * (1.0 + b.cwiseAbs().maxCoeff());
    };
    REQUIRE(dr.I[0] == dr.J[0]);
    CHECK(close(ec.gLI[0] + ec.gLJ[0], est.gLI[0] + est.gLJ[0]));
    CHECK(close(ec.grhoI[0] + ec.grhoJ[0], est.grhoI[0] + est.grhoJ[0]));
    CHECK(close(ec.gmuI[0] + ec.gmuJ[0], est.gmuI[0] + est.gmuJ[0]));
    CHECK(!close(ec.gLI[0], est.gLI[0]));  // (the control variate did move the halves)
  }
  // a fit with 6 dense columns and the control variate: the same posterior
  // for 1 and 3 threads, beta = Phi0_P C's dense columns tracked
  const Data big = make_data(2000, Family::gaussian, 5);
  auto run = [&](const ParallelFor& pfor) {
    Settings set;
    set.batch_size = 300;
    set.max_iter = 40;
    QsgpSettings qs;
    qs.feature_batch = 32;
    qs.dense_columns = 6;
    qs.control_rows = 100;
    Qsgp f(make_blocks(64, KernelType::se, 9), std::log(0.3), set, qs, big.X.data(), big.n(), 3, big.y.data(),
           big.w.data(), big.o.data());
    Rng r(4);
    f.fit(pfor, r, [](int, double) { return true; });
    CHECK(f.cv_drift(pfor) < 1e-10 * std::max(1.0, f.cv_b[0].cwiseAbs().maxCoeff()));
    return std::make_pair(f.mu, f.L[0]);
  };
  const auto a = run(serial_for), b = run(thread_for(3));
  CHECK(a.first == b.first);
  CHECK(a.second == b.second);
  CHECK(a.second.cwiseAbs().maxCoeff() > 0);  // (the dense columns moved)
}

// ---- basis = "inducing" (QsgpGram): inducing points at every training row

namespace {

// QsgpGram over columns {0, 1} (SE-ARD, variance 0.8) and the parametric column 2, at a given (mu, rho).
QsgpGram make_gram(const Data& d, std::size_t batch, Index feature_batch, unsigned seed) {
  Settings set;
  set.batch_size = batch;
  QsgpSettings qs;
  qs.feature_batch = feature_batch;
  Kernel k;
  k.type = KernelType::se;
  k.log_var = std::log(0.8);
  k.log_ls = (VectorXd(2) << std::log(0.5), std::log(0.9)).finished();
  QsgpGram g(k, {0, 1}, {2}, VectorXd::Constant(1, 2.0), std::log(0.3), set, qs, d.X.data(), d.n(),
             static_cast<std::size_t>(d.X.cols()), d.y.data(), d.w.data(), d.o.data());
  g.mu = uniform_matrix(g.mu.size(), 1, seed + 1, -0.3, 0.3);
  g.rho = uniform_matrix(g.mu.size(), 1, seed + 2, -1.5, -0.5);
  return g;
}

VectorXd gram_gradient(const QsgpGram& g, const QsgpGramDraw& dr, const QsgpGramEstimate& est) {
  const Index m = g.mu.size(), n = static_cast<Index>(g.n()), np = g.n_param();
  VectorXd out = VectorXd::Zero(2 * m);
  for (std::size_t e = 0; e < dr.I.size(); ++e) {
    out(dr.I[e]) += est.gmuI(static_cast<Index>(e));
    out(m + dr.I[e]) += est.grhoI(static_cast<Index>(e));
  }
  for (std::size_t e = 0; e < dr.J.size(); ++e) out(dr.J[e]) += est.gmuJ(static_cast<Index>(e));
  out.segment(n, np) += est.gmuP;
  out.segment(m + n, np) += est.grhoP;
  return out;
}

}  // namespace

TEST_CASE("QSGP inducing basis: exact in full with the finite-difference gradient, unbiased sampled, thread-independent",
          "[qsgp]") {
  const Data d = make_data(25, Family::gaussian, 4);
  QsgpGram g = make_gram(d, 0, 1000, 3);
  const Index m = g.mu.size();
  Rng rng(1);
  g.cv_init(8, rng, serial_for);  // (in full the control variate vanishes)
  const QsgpGramDraw dr = g.draw(rng);
  REQUIRE(dr.full);
  const QsgpGramEstimate est = g.estimate(dr, serial_for);
  const double exact = g.exact(serial_for).elbo;
  CHECK(est.value == Approx(exact).epsilon(1e-12));
  VectorXd x0(2 * m);
  x0 << g.mu, g.rho;
  QsgpGram h = g;
  const VectorXd fd = fd_gradient(
      [&](const VectorXd& x) {
        h.mu = x.head(m);
        h.rho = x.tail(m);
        return h.exact(serial_for).elbo;
      },
      x0, 1e-4);
  const VectorXd an = gram_gradient(g, dr, est);
  for (Index j = 0; j < an.size(); ++j) CHECK(an(j) == Approx(fd(j)).epsilon(1e-6).margin(1e-7));
  // sampled (6 rows, 5 weights twice) with the control variate: unbiased
  QsgpGram s = make_gram(d, 6, 5, 3);
  Rng r2(2);
  s.cv_init(8, r2, serial_for);
  double sum = 0, ss = 0;
  VectorXd gs = VectorXd::Zero(2 * m), gss = gs;
  const int R = 40000;
  for (int k = 0; k < R; ++k) {
    const QsgpGramDraw dk = s.draw(r2);
    const QsgpGramEstimate ek = s.estimate(dk, serial_for);
    sum += ek.value;
    ss += ek.value * ek.value;
    const VectorXd gk = gram_gradient(s, dk, ek);
    gs += gk;
    gss += gk.cwiseAbs2();
  }
  const double mean = sum / R, se = std::sqrt((ss / R - mean * mean) / R);
  CHECK(std::abs(mean - exact) < 4.5 * se);
  const VectorXd gm = gs / R, gse = ((gss / R - gm.cwiseAbs2()) / R).cwiseSqrt();
  int outside = 0;
  for (Index j = 0; j < m; ++j) outside += std::abs(gm(j) - fd(j)) > 4.5 * gse(j) + 1e-6;
  CHECK(outside == 0);
  // a fit: a = K_U. mu tracked through the sparse steps; bit-identical for any thread count
  const Data big = make_data(600, Family::gaussian, 5);
  auto run = [&](const ParallelFor& pfor) {
    QsgpGram f = make_gram(big, 100, 40, 9);
    f.mu.setZero();
    f.set.max_iter = 40;
    f.qs.control_rows = 50;
    Rng r(4);
    const FitInfo info = f.fit(pfor, r, [](int, double) { return true; });
    CHECK((f.cv_exact(pfor) - f.cv_a).cwiseAbs().maxCoeff() < 1e-10 * std::max(1.0, f.cv_a.cwiseAbs().maxCoeff()));
    CHECK(f.cv_a.cwiseAbs().maxCoeff() > 0.01);  // (mu moved)
    return std::make_pair(f.mu, info.trace);
  };
  const auto a = run(serial_for), b = run(thread_for(3));
  CHECK(a.first == b.first);
  CHECK(a.second == b.second);
}
