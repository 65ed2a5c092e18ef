// Tests of the SVGP engine (svgp.hpp): hyperparameter gradients against finite
// differences, the exact-GP and Bayesian-linear-regression limits, the
// natural-gradient fixed point, and bit-reproducible fits.
#include <catch2/catch.hpp>
#include "fixtures.hpp"

#include <cmath>
#include <limits>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace scalegp;
using namespace fixtures;

namespace {

Svgp make_svgp(const Data& d, std::vector<Component> comps, Family fam, Settings set = Settings(),
               SvgpSettings opt = SvgpSettings()) {
  Likelihood lik(fam);
  lik.log_noise = std::log(0.2);
  return Svgp(std::move(comps), lik, set, opt, d.X.data(), d.n(), static_cast<std::size_t>(d.X.cols()), d.y.data(),
              d.w.data(), d.o.data());
}

// Random q: P = I + 2 B B' / M (SPD), h ~ U(-1, 1).
void randomise_q(Svgp& s, unsigned seed) {
  const Index Mt = s.total_size();
  const MatrixXd B = uniform_matrix(Mt, Mt, seed, -1.0, 1.0);
  s.P = MatrixXd::Identity(Mt, Mt) + 2.0 * B * B.transpose() / static_cast<double>(Mt);
  s.h = uniform_matrix(Mt, 1, seed + 1, -1.0, 1.0);
  s.refresh();
}

// A Hilbert term over columns `cols` with m sines per input on the box
// [-3.5, 3.5]^d: variance `var`, lengthscales from ls_lo to ls_hi (ARD) or
// their geometric mean (one lengthscale).
Component hilbert_term(KernelType t, std::vector<Index> cols, std::vector<Index> m, bool ard, double var, double ls_lo,
                       double ls_hi) {
  Component c;
  c.kind = Kind::hilbert;
  c.cols = std::move(cols);
  const Index dim = static_cast<Index>(m.size());
  c.kernel.type = t;
  c.kernel.log_var = std::log(var);
  c.kernel.log_ls = ard ? VectorXd(VectorXd::LinSpaced(dim, std::log(ls_lo), std::log(ls_hi)))
                        : VectorXd::Constant(1, 0.5 * (std::log(ls_lo) + std::log(ls_hi)));
  c.basis.centre = VectorXd::Zero(dim);
  c.basis.L = VectorXd::Constant(dim, 3.5);
  c.basis.m = std::move(m);
  c.basis.check();
  return c;
}

std::string kname(KernelType t) {
  return t == KernelType::se ? "se" : t == KernelType::matern32 ? "matern32" : "matern52";
}

// Checks gradient() against central differences of the data term
// scale * sum_v over the rows idx, holding the whitened q(v) = N(m, S) fixed.
void check_gradient(Svgp& s, const std::vector<std::size_t>* idx, double scale, double tol) {
  randomise_q(s, 77);
  const MatrixXd S0 = s.S;
  const VectorXd m0 = s.m;
  const VectorXd th0 = s.pack();
  REQUIRE(th0.size() == s.n_theta());
  auto F = [&](const VectorXd& th) {
    s.unpack(th);
    s.refresh();
    s.S = S0;
    s.m = m0;
    return scale * s.evaluate(idx, false, serial_for).sum_v;
  };
  F(th0);
  const VectorXd g = s.gradient(s.evaluate(idx, true, serial_for), scale);
  REQUIRE(g.size() == th0.size());
  const double gmax = g.cwiseAbs().maxCoeff();
  REQUIRE(gmax > 0.0);
  const VectorXd fdg = fd_gradient(F, th0, 1e-4);
  double worst = 0.0;
  for (Index j = 0; j < th0.size(); ++j) {
    const double fd = fdg(j);
    const double err = std::abs(g(j) - fd) / std::max(std::abs(fd), 1e-3 * gmax);
    worst = std::max(worst, err);
    CAPTURE(j, g(j), fd);
    CHECK(err < tol);
  }
  F(th0);
  INFO("worst relative error " << worst);
  CHECK(worst < tol);
}

// log N(y | 0, K + diag(noise)).
double exact_gp_logml(const MatrixXd& K, const VectorXd& noise, const VectorXd& y) {
  MatrixXd A = K;
  A.diagonal() += noise;
  const Eigen::LLT<MatrixXd> llt(A);
  const VectorXd alpha = llt.solve(y);
  const MatrixXd L = llt.matrixL();
  return -0.5 * y.dot(alpha) - L.diagonal().array().log().sum() - 0.5 * static_cast<double>(y.size()) * kLog2Pi;
}

}  // namespace

TEST_CASE("Svgp layout, prior state and KL", "[svgp]") {
  const Data d = make_data(60, Family::poisson, 1);
  const MatrixXd Z = uniform_matrix(8, 2, 2, -2, 2);
  Svgp s = make_svgp(d, {gp_component(KernelType::se, true, Z), linear_component({2}, VectorXd::Constant(1, 2.0))},
                     Family::poisson);
  CHECK(s.total_size() == 9);
  CHECK(s.offset_of(0) == 0);
  CHECK(s.offset_of(1) == 8);
  CHECK(s.n() == 60);
  CHECK(s.n_theta() == 3 + 16);  // no noise parameter for Poisson
  // prior: q = N(0, I), KL = 0
  CHECK((s.S - MatrixXd::Identity(9, 9)).cwiseAbs().maxCoeff() == 0.0);
  CHECK(s.m.cwiseAbs().maxCoeff() == 0.0);
  CHECK(s.kl() == Approx(0.0).margin(1e-14));
  // pack / unpack round trip
  const VectorXd th = s.pack();
  CHECK(th(0) == std::log(0.8));
  CHECK(th(1) == std::log(0.9));
  CHECK(th(3) == Z(0, 0));
  s.unpack(th);
  CHECK(s.pack() == th);
  // KL of a random q against the dense formula
  randomise_q(s, 5);
  const MatrixXd Sd = s.P.inverse();
  const VectorXd md = Sd * s.h;
  CHECK((s.S - Sd).cwiseAbs().maxCoeff() < 1e-12);
  CHECK((s.m - md).cwiseAbs().maxCoeff() < 1e-12);
  const double kl = 0.5 * (Sd.trace() + md.squaredNorm() - 9.0 + std::log(s.P.determinant()));
  CHECK(s.kl() == Approx(kl).epsilon(1e-12));
  CHECK(s.kl() > 0.0);
}

TEST_CASE("evaluate() statistics match a dense computation", "[svgp]") {
  for (Family fam : {Family::gaussian, Family::poisson, Family::logit}) {
    const Data d = make_data(60, fam, 3);
    const MatrixXd Z = uniform_matrix(7, 2, 4, -2, 2);
    const VectorXd tau = VectorXd::Constant(1, 2.0);
    Svgp s = make_svgp(d, {gp_component(KernelType::matern52, true, Z), linear_component({2}, tau)}, fam);
    randomise_q(s, 6);
    // dense whitened features
    const Kernel& k = s.comps[0].kernel;
    MatrixXd Kzz = k.cross(Z, Z);
    Kzz.diagonal().array() += s.set.rel_jitter * k.variance();
    const MatrixXd L = Eigen::LLT<MatrixXd>(Kzz).matrixL();
    const MatrixXd Kxz = k.cross(d.X.leftCols(2), Z);
    MatrixXd Phi(60, 8);
    Phi.leftCols(7) = Kxz * MatrixXd(L.transpose()).inverse();
    Phi.col(7) = 2.0 * d.X.col(2);
    const VectorXd mu = Phi * s.m + d.o;
    VectorXd s2(60), g(60), gam(60);
    double sum_v = 0.0;
    for (Index i = 0; i < 60; ++i) {
      const double resid = k.variance() - Phi.row(i).head(7).squaredNorm();
      s2(i) = resid + Phi.row(i).dot(s.S * Phi.row(i).transpose());
      const Expectation e = s.lik.expect(d.y(i), d.w(i), mu(i), s2(i));
      sum_v += e.v;
      g(i) = e.dm;
      gam(i) = e.dv;
    }
    const PassSums acc = s.evaluate(nullptr, false, serial_for);
    CHECK(acc.sum_v == Approx(sum_v).epsilon(1e-11));
    CHECK((acc.r - Phi.transpose() * g).cwiseAbs().maxCoeff() < 1e-10);
    const VectorXd eta1 = Phi.transpose() * (g.array() - 2.0 * gam.array() * (mu - d.o).array()).matrix();
    const MatrixXd Q = Phi.transpose() * gam.asDiagonal() * Phi;
    const MatrixXd Qs = acc.Q.selfadjointView<Eigen::Lower>();
    CHECK((Qs - Q).cwiseAbs().maxCoeff() < 1e-10);
    // natural step: P <- (1 - rho) P + rho (I - 2 s Q), h <- (1 - rho) h + rho s eta1
    const MatrixXd P0 = s.P;
    const VectorXd h0 = s.h;
    s.natural_step(acc, 1.7, 0.3);
    CHECK((s.P - (0.7 * P0 + 0.3 * (MatrixXd::Identity(8, 8) - 2 * 1.7 * Q))).cwiseAbs().maxCoeff() < 1e-10);
    CHECK((s.h - (0.7 * h0 + 0.3 * 1.7 * eta1)).cwiseAbs().maxCoeff() < 1e-10);
    // a subset of rows: same as the dense computation on those rows
    std::vector<std::size_t> idx = {59, 3, 17, 17, 40};
    s.refresh();
    const PassSums ai = s.evaluate(&idx, false, serial_for);
    double sv = 0.0;
    const VectorXd mu2 = Phi * s.m + d.o;
    for (std::size_t i : idx) {
      const Index r = static_cast<Index>(i);
      const double s2i = k.variance() - Phi.row(r).head(7).squaredNorm() + Phi.row(r).dot(s.S * Phi.row(r).transpose());
      sv += s.lik.expect(d.y(r), d.w(r), mu2(r), s2i).v;
    }
    CHECK(ai.sum_v == Approx(sv).epsilon(1e-11));
  }
}

TEST_CASE("the ELBO, natural and gradient passes agree on sum_v", "[svgp]") {
  const Data d = make_data(600, Family::logit, 8);
  const MatrixXd Z = uniform_matrix(8, 2, 9, -2, 2);
  Svgp s = make_svgp(d, {gp_component(KernelType::matern32, true, Z), linear_component({2}, VectorXd::Constant(1, 2.0))},
                     Family::logit);
  randomise_q(s, 10);
  const double v_elbo = s.evaluate(nullptr, Pass::elbo, serial_for).sum_v;
  const double v_nat = s.evaluate(nullptr, Pass::natural, serial_for).sum_v;
  const double v_grad = s.evaluate(nullptr, Pass::gradient, thread_for(2)).sum_v;
  CHECK(v_nat == v_elbo);
  CHECK(v_grad == Approx(v_elbo).epsilon(1e-12));
  CHECK(s.elbo(thread_for(3)) == v_elbo - s.kl());
}

TEST_CASE("gradient() matches finite differences of the data term", "[svgp][gradient]") {
  const MatrixXd Z = uniform_matrix(8, 2, 10, -2, 2);
  const VectorXd tau = VectorXd::Constant(1, 2.0);
  struct Case {
    Family fam;
    KernelType kt;
    bool ard;
    double tol;
  };
  const std::vector<Case> cases = {
      {Family::gaussian, KernelType::se, true, 1e-6},       {Family::gaussian, KernelType::matern32, false, 1e-6},
      {Family::gaussian, KernelType::matern52, true, 1e-6}, {Family::poisson, KernelType::matern32, true, 1e-6},
      {Family::poisson, KernelType::matern52, false, 1e-6}, {Family::poisson, KernelType::se, false, 1e-6},
      {Family::probit, KernelType::matern52, true, 1e-6},   {Family::logit, KernelType::se, false, 1e-6},
      {Family::logit, KernelType::matern32, true, 1e-6},    {Family::gamma, KernelType::matern52, true, 1e-6},
      {Family::gamma, KernelType::se, false, 1e-6},         {Family::negbin, KernelType::matern32, true, 1e-6},
      {Family::negbin, KernelType::se, false, 1e-6},        {Family::scat, KernelType::matern52, true, 1e-6},
      {Family::scat, KernelType::se, false, 1e-6}};
  for (const Case& c : cases) {
    CAPTURE(static_cast<int>(c.fam), kname(c.kt), c.ard);
    const Data d = make_data(60, c.fam, 11);
    Svgp s = make_svgp(d, {gp_component(c.kt, c.ard, Z), linear_component({2}, tau)}, c.fam);
    // (the likelihood's own parameter last: Gaussian, Gamma, negative binomial;
    // the scaled t's scale, then its log(df - min_df))
    CHECK(s.n_theta() == 1 + (c.ard ? 2 : 1) + 16 + (Likelihood(c.fam).has_noise() ? 1 : 0) +
                             (Likelihood(c.fam).has_df() ? 1 : 0));
    check_gradient(s, nullptr, 1.0, c.tol);
  }
  SECTION("minibatch rows with scale N / |b|") {
    for (Family fam : {Family::poisson, Family::gaussian}) {
      const Data d = make_data(60, fam, 12);
      Svgp s = make_svgp(d, {gp_component(KernelType::matern52, true, Z), linear_component({2}, tau)}, fam);
      std::vector<std::size_t> idx;
      for (std::size_t i = 0; i < 60; i += 3) idx.push_back((i * 7) % 60);
      check_gradient(s, &idx, 60.0 / static_cast<double>(idx.size()), 1e-6);
    }
  }
  SECTION("a varying-coefficient component f(x1) * x2 (by column)") {
    for (Family fam : {Family::gaussian, Family::poisson}) {
      const Data d = make_data(60, fam, 16);
      Component a = gp_component(KernelType::matern52, false, uniform_matrix(5, 1, 17, -2, 2), {0});
      a.by_col = 1;
      Component b = gp_component(KernelType::se, false, uniform_matrix(4, 1, 18, -2, 2), {1});
      Svgp s = make_svgp(d, {a, b, linear_component({2}, tau)}, fam);
      check_gradient(s, nullptr, 1.0, 1e-6);
      // the features are those of x1 times x2
      Svgp t = make_svgp(d, {gp_component(KernelType::matern52, false, uniform_matrix(5, 1, 17, -2, 2), {0})}, fam);
      Block b1, b2;
      s.gather(b1, nullptr, 0, 60);
      s.features(b1);
      t.gather(b2, nullptr, 0, 60);
      t.features(b2);
      CHECK((b1.Phi.leftCols(5) - d.X.col(1).asDiagonal() * b2.Phi).cwiseAbs().maxCoeff() < 1e-14);
      CHECK((b1.rows[0].resid - b2.rows[0].resid.cwiseProduct(d.X.col(1).cwiseAbs2())).cwiseAbs().maxCoeff() < 1e-14);
    }
  }
  SECTION("two GP components with coupled q") {
    const Data d = make_data(60, Family::gaussian, 13);
    Component a = gp_component(KernelType::se, false, uniform_matrix(5, 1, 14, -2, 2), {0});
    Component b = gp_component(KernelType::matern32, false, uniform_matrix(4, 1, 15, -2, 2), {1});
    Svgp s = make_svgp(d, {a, linear_component({2}, tau), b}, Family::gaussian);
    check_gradient(s, nullptr, 1.0, 1e-6);
  }
}

TEST_CASE("gradient() with centred, factor and linear components", "[svgp][gradient]") {
  // centred (ANOVA) GP over x1, x2 + a factor random effect + an intercept
  for (Family fam : {Family::gaussian, Family::poisson}) {
    for (bool pure_interaction : {false, true}) {
      CAPTURE(static_cast<int>(fam), pure_interaction);
      Data d = make_data(60, fam, 17);
      d.X.conservativeResize(60, 4);
      for (Index i = 0; i < 60; ++i) d.X(i, 3) = static_cast<double>((i * 7) % 5);  // 5 levels
      const Component cen = centred_component(pure_interaction ? KernelType::matern52 : KernelType::se,
                                              pure_interaction, uniform_matrix(7, 2, 18, -2, 2));
      Component fac;
      fac.kind = Kind::factor;
      fac.cols = {3};
      fac.levels = 5;
      fac.kernel.log_var = std::log(0.5);
      Svgp s = make_svgp(d, {cen, fac, linear_component({2}, VectorXd::Constant(1, 2.0))}, fam);
      CHECK(s.total_size() == 7 + 5 + 1);
      CHECK(s.n_theta() == 3 + 14 + 1 + (fam == Family::gaussian ? 1 : 0));
      check_gradient(s, nullptr, 1.0, 1e-6);
    }
  }
}

TEST_CASE("gradient() layout follows learn_kernel / learn_inducing / learn_noise", "[svgp][gradient]") {
  const Data d = make_data(60, Family::gaussian, 21);
  const MatrixXd Z = uniform_matrix(6, 2, 22, -2, 2);
  const VectorXd tau = VectorXd::Constant(1, 2.0);
  Svgp full = make_svgp(d, {gp_component(KernelType::se, true, Z), linear_component({2}, tau)}, Family::gaussian);
  randomise_q(full, 3);
  const VectorXd gf = full.gradient(full.evaluate(nullptr, true, serial_for), 1.0);
  REQUIRE(gf.size() == 3 + 12 + 1);

  Settings no_z;
  no_z.learn_inducing = false;
  Svgp a = make_svgp(d, {gp_component(KernelType::se, true, Z), linear_component({2}, tau)}, Family::gaussian, no_z);
  randomise_q(a, 3);
  const VectorXd ga = a.gradient(a.evaluate(nullptr, true, serial_for), 1.0);
  REQUIRE(ga.size() == 4);
  CHECK((ga.head(3) - gf.head(3)).cwiseAbs().maxCoeff() < 1e-12);
  CHECK(ga(3) == Approx(gf(15)).epsilon(1e-12));

  Settings no_noise;
  no_noise.learn_noise = false;
  Component fixed_k = gp_component(KernelType::se, true, Z);
  fixed_k.learn_kernel = false;
  Svgp b = make_svgp(d, {fixed_k, linear_component({2}, tau)}, Family::gaussian, no_noise);
  randomise_q(b, 3);
  const VectorXd gb = b.gradient(b.evaluate(nullptr, true, serial_for), 1.0);
  REQUIRE(gb.size() == 12);
  CHECK((gb - gf.segment(3, 12)).cwiseAbs().maxCoeff() < 1e-12);
}

TEST_CASE("mean-field and low-rank natural steps", "[svgp][natgrad]") {
  const Data d = make_data(60, Family::poisson, 81);
  const MatrixXd Z = uniform_matrix(6, 2, 82, -2, 2);
  const VectorXd tau = VectorXd::Constant(1, 2.0);
  auto comps = [&] { return std::vector<Component>{gp_component(KernelType::se, true, Z), linear_component({2}, tau)}; };
  SECTION("mean-field: block-diagonal target") {
    SvgpSettings opt;
    opt.meanfield = true;
    Svgp s = make_svgp(d, comps(), Family::poisson, Settings(), opt);
    Svgp full = make_svgp(d, comps(), Family::poisson);
    // start both from the same block-diagonal q
    randomise_q(s, 83);
    s.P.block(0, 6, 6, 1).setZero();
    s.P.block(6, 0, 1, 6).setZero();
    s.refresh();
    full.P = s.P;
    full.h = s.h;
    full.refresh();
    const PassSums acc = s.evaluate(nullptr, false, serial_for);
    const MatrixXd Q = acc.Q.selfadjointView<Eigen::Lower>();
    MatrixXd Qb = MatrixXd::Zero(7, 7);
    Qb.topLeftCorner(6, 6) = Q.topLeftCorner(6, 6);
    Qb(6, 6) = Q(6, 6);
    const MatrixXd P0 = s.P;
    const VectorXd h0 = s.h, m0 = s.m;
    s.natural_step(acc, 2.0, 0.4);
    CHECK((s.P - (0.6 * P0 + 0.4 * (MatrixXd::Identity(7, 7) - 4.0 * Qb))).cwiseAbs().maxCoeff() < 1e-12);
    CHECK((s.h - (0.6 * h0 + 0.4 * 2.0 * (acc.r - 2.0 * Qb * m0))).cwiseAbs().maxCoeff() < 1e-12);
    CHECK(s.P.block(0, 6, 6, 1).cwiseAbs().maxCoeff() == 0.0);
    // the coupled step differs (Q has cross-blocks here)
    CHECK(Q.block(6, 0, 1, 6).cwiseAbs().maxCoeff() > 1e-3);
    full.natural_step(full.evaluate(nullptr, false, serial_for), 2.0, 0.4);
    CHECK((full.P - s.P).cwiseAbs().maxCoeff() > 1e-3);
  }
  SECTION("rank-R precision: best rank-R approximation of P - I") {
    SvgpSettings opt;
    opt.rank = 3;
    Svgp s = make_svgp(d, comps(), Family::poisson, Settings(), opt);
    Svgp full = make_svgp(d, comps(), Family::poisson);
    full.natural_step(full.evaluate(nullptr, false, serial_for), 1.0, 1.0);
    s.natural_step(s.evaluate(nullptr, false, serial_for), 1.0, 1.0);
    MatrixXd D = full.P;
    D.diagonal().array() -= 1.0;
    Eigen::SelfAdjointEigenSolver<MatrixXd> es(D);
    const VectorXd ev = es.eigenvalues();  // ascending, all >= 0 here
    REQUIRE(ev.minCoeff() > -1e-12);
    const MatrixXd V = es.eigenvectors().rightCols(3);
    MatrixXd Pr = V * ev.tail(3).asDiagonal() * V.transpose();
    Pr.diagonal().array() += 1.0;
    CHECK((s.P - Pr).cwiseAbs().maxCoeff() < 1e-10);
    // share of the effective degrees of freedom sum l / (1 + l) dropped
    const VectorXd edf = ev.array() / (1.0 + ev.array());
    CHECK(s.rank_loss() == Approx(edf.head(4).sum() / edf.sum()).epsilon(1e-10));
    CHECK(s.rank_loss() > 0.0);
    MatrixXd Ds = s.P;
    Ds.diagonal().array() -= 1.0;
    const VectorXd evs = Eigen::SelfAdjointEigenSolver<MatrixXd>(Ds).eigenvalues();
    CHECK(evs.head(4).cwiseAbs().maxCoeff() < 1e-10);  // rank 3
    // the mean of the full-rank step is kept (h = P_R m), the covariance is not
    s.refresh();
    full.refresh();
    CHECK((s.m - full.m).cwiseAbs().maxCoeff() < 1e-10);
    CHECK((s.h - s.P * full.m).cwiseAbs().maxCoeff() < 1e-10);
    CHECK((s.S - full.S).cwiseAbs().maxCoeff() > 1e-3);
  }
}

TEST_CASE("exact GP limit: Z = X, one natural step of size 1", "[svgp][exact]") {
  // 36 inputs on a jittered 6 x 6 grid (well-conditioned K)
  const Index n = 36;
  Rng rng(5);
  Data d;
  d.X.resize(n, 2);
  d.y.resize(n);
  d.w = VectorXd::Ones(n);
  d.o.resize(n);
  for (Index i = 0; i < n; ++i) {
    d.X(i, 0) = static_cast<double>(i % 6) + 0.3 * (uniform01(rng) - 0.5);
    d.X(i, 1) = static_cast<double>(i / 6) + 0.3 * (uniform01(rng) - 0.5);
    d.o(i) = 0.1 * d.X(i, 0);
    d.y(i) = std::sin(d.X(i, 0)) + std::cos(0.7 * d.X(i, 1)) + 0.2 * (uniform01(rng) - 0.5) + d.o(i);
  }
  MatrixXd Xnew = uniform_matrix(10, 2, 6, -0.5, 5.5);
  Xnew.conservativeResize(14, 2);
  Xnew.bottomRows(4) = d.X.topRows(4);  // also at training inputs
  const VectorXd onew = 0.1 * Xnew.col(0);

  for (KernelType kt : {KernelType::se, KernelType::matern32, KernelType::matern52}) {
    CAPTURE(kname(kt));
    // unit weights for SE, precision weights (noise variance nv / w) otherwise
    for (Index i = 0; i < n; ++i) d.w(i) = kt == KernelType::se ? 1.0 : 0.5 + uniform01(rng);
    Component c = gp_component(kt, true, d.X);
    Settings set;
    set.rel_jitter = 1e-10;
    Likelihood lik(Family::gaussian);
    lik.log_noise = std::log(0.05);
    Svgp s({c}, lik, set, SvgpSettings(), d.X.data(), static_cast<std::size_t>(n), 2, d.y.data(), d.w.data(),
           d.o.data());
    s.natural_step(s.evaluate(nullptr, false, serial_for), 1.0, 1.0);
    s.refresh();

    // exact GP posterior with Eigen's LLT
    const Kernel& k = s.comps[0].kernel;
    const double nv = s.lik.noise_var();
    const MatrixXd K = k.cross(d.X, d.X);
    const VectorXd noise = nv * d.w.cwiseInverse();
    MatrixXd A = K;
    A.diagonal() += noise;
    const Eigen::LLT<MatrixXd> llt(A);
    const VectorXd r = d.y - d.o;
    const VectorXd alpha = llt.solve(r);
    const MatrixXd Ks = k.cross(Xnew, d.X);
    const VectorXd mean_ex = Ks * alpha + onew;
    const MatrixXd V = llt.solve(MatrixXd(Ks.transpose()));
    const VectorXd var_ex = (k.variance() - (Ks.array() * V.transpose().array()).rowwise().sum()).matrix();

    VectorXd mean, var;
    s.predict(Xnew, onew, mean, var, nullptr, nullptr, serial_for);
    CHECK((mean - mean_ex).cwiseAbs().maxCoeff() < 1e-6);
    CHECK((var - var_ex).cwiseAbs().maxCoeff() < 1e-6);
    CHECK(var.minCoeff() > 0.0);
    // the log marginal likelihood
    CHECK(std::abs(s.elbo(serial_for) - exact_gp_logml(K, noise, r)) < 1e-6);
    // threads give the same prediction
    VectorXd mean2, var2;
    s.predict(Xnew, onew, mean2, var2, nullptr, nullptr, thread_for(3));
    CHECK(mean2 == mean);
    CHECK(var2 == var);
  }
}

TEST_CASE("linear component only: Bayesian linear regression", "[svgp][linear]") {
  for (bool unit : {true, false}) {
    CAPTURE(unit);
    Data d = make_data(60, Family::gaussian, 31, unit);
    if (!unit) d.w(5) = d.w(17) = 0.0;  // zero weights drop rows
    VectorXd tau(3);
    tau << 0.7, 1.3, 2.0;  // prior sds of x1, x2, intercept
    Svgp s = make_svgp(d, {linear_component({0, 1, 2}, tau)}, Family::gaussian);
    CHECK(s.n_theta() == 1);  // only the noise
    s.natural_step(s.evaluate(nullptr, false, serial_for), 1.0, 1.0);
    s.refresh();
    const VectorXd beta = tau.cwiseProduct(s.m);
    const MatrixXd cov = tau.asDiagonal() * s.S * tau.asDiagonal();

    const double s2 = s.lik.noise_var();
    const MatrixXd& X = d.X;
    MatrixXd Prec = X.transpose() * d.w.asDiagonal() * X / s2;
    Prec.diagonal() += tau.cwiseInverse().cwiseAbs2();
    const VectorXd b_ex = Prec.ldlt().solve(X.transpose() * d.w.asDiagonal() * (d.y - d.o) / s2);
    CHECK((beta - b_ex).cwiseAbs().maxCoeff() < 1e-10);
    CHECK((cov - Prec.inverse()).cwiseAbs().maxCoeff() < 1e-10);
    // ELBO = log N(y - o | 0, X diag(tau^2) X' + s2 diag(1/w)) at the optimum,
    // over the rows with w > 0
    std::vector<Index> keep;
    for (Index i = 0; i < 60; ++i)
      if (d.w(i) > 0) keep.push_back(i);
    const Index nk = static_cast<Index>(keep.size());
    CHECK(nk == (unit ? 60 : 58));
    MatrixXd Xk(nk, 3);
    VectorXd rk(nk), noise(nk);
    for (Index i = 0; i < nk; ++i) {
      Xk.row(i) = X.row(keep[static_cast<std::size_t>(i)]);
      rk(i) = d.y(keep[static_cast<std::size_t>(i)]) - d.o(keep[static_cast<std::size_t>(i)]);
      noise(i) = s2 / d.w(keep[static_cast<std::size_t>(i)]);
    }
    const MatrixXd C = Xk * tau.cwiseAbs2().asDiagonal() * Xk.transpose();
    CHECK(std::abs(s.elbo(serial_for) - exact_gp_logml(C, noise, rk)) < 1e-8);
    // predict: mean x' beta + o, variance x' cov x
    VectorXd mean, var;
    MatrixXd tm, tv;
    s.predict(X.topRows(5), d.o.head(5), mean, var, &tm, &tv, serial_for);
    CHECK((mean - (X.topRows(5) * b_ex + d.o.head(5))).cwiseAbs().maxCoeff() < 1e-10);
    const VectorXd v_ex = (X.topRows(5) * Prec.inverse()).cwiseProduct(X.topRows(5)).rowwise().sum();
    CHECK((var - v_ex).cwiseAbs().maxCoeff() < 1e-10);
    CHECK((tm.col(0) - X.topRows(5) * b_ex).cwiseAbs().maxCoeff() < 1e-10);
    CHECK((tv.col(0) - v_ex).cwiseAbs().maxCoeff() < 1e-10);
  }
}

TEST_CASE("the initial step of q is IRLS's first iteration from glm's start", "[svgp][linear]") {
  // a linear component with prior sds tau: the first step solves
  // (X' G X + diag(1/tau^2)) beta = X' G (z - o), with G = -l''(f0) and the
  // working response z = f0 - l'(f0) / l''(f0) at f0 = start_value(y, w)
  // (Poisson: log(y + 0.1); binomial: logit((w y + 0.5) / (w + 1))), from
  // any starting mean
  for (Family fam : {Family::poisson, Family::logit, Family::probit, Family::gamma}) {
    CAPTURE(static_cast<int>(fam));
    Data d = make_data(80, fam, 41);
    VectorXd tau(3);
    tau << 0.7, 1.3, 10.0;
    Svgp s = make_svgp(d, {linear_component({0, 1, 2}, tau)}, fam);
    s.lik.log_noise = std::log(3.0);  // (Gamma shape)
    s.h = VectorXd::Constant(3, 0.4);  // a start of q that must not matter
    s.refresh();
    Rng rng(1);
    const ParallelFor serial = serial_for;
    s.begin_fit(serial, rng);
    s.start();
    const VectorXd beta = tau.cwiseProduct(s.m);
    const Index n = d.X.rows();
    VectorXd G(n), z(n);
    for (Index i = 0; i < n; ++i) {
      const double f0 = s.lik.start_value(d.y(i), d.w(i));
      double l, d1, d2;
      s.lik.loglik(d.y(i), d.w(i), f0, l, d1, d2);
      G(i) = -d2;
      z(i) = f0 - d1 / d2;
    }
    if (fam == Family::poisson) CHECK(s.lik.start_value(4.0, 1.0) == Approx(std::log(4.1)).epsilon(1e-14));
    MatrixXd Prec = d.X.transpose() * G.asDiagonal() * d.X;
    Prec.diagonal() += tau.cwiseInverse().cwiseAbs2();
    const VectorXd b_ex = Prec.ldlt().solve(d.X.transpose() * G.asDiagonal() * (z - d.o));
    for (Index j = 0; j < 3; ++j) CHECK(std::abs(beta(j) - b_ex(j)) < 1e-9 * (1.0 + std::abs(b_ex(j))));
    CHECK((tau.asDiagonal() * s.S * tau.asDiagonal() - MatrixXd(Prec.inverse())).cwiseAbs().maxCoeff() < 1e-10);
  }
}

TEST_CASE("predict: per-component terms", "[svgp]") {
  const Data d = make_data(60, Family::gaussian, 41);
  const MatrixXd Z = uniform_matrix(6, 2, 42, -2, 2);
  Svgp s = make_svgp(d, {gp_component(KernelType::matern32, true, Z), linear_component({2}, VectorXd::Constant(1, 2.0))},
                     Family::gaussian);
  randomise_q(s, 43);
  const MatrixXd Xn = uniform_matrix(300, 3, 44, -2, 2);  // > kChunkRows: two blocks
  const VectorXd on = VectorXd::Constant(300, 0.25);
  VectorXd mean, var;
  MatrixXd tm, tv;
  s.predict(Xn, on, mean, var, &tm, &tv, thread_for(2));
  REQUIRE(tm.cols() == 2);
  CHECK((tm.rowwise().sum() + on - mean).cwiseAbs().maxCoeff() < 1e-12);
  // dense reference for the GP term's variance and the total variance (with cross-covariance)
  const Kernel& k = s.comps[0].kernel;
  MatrixXd Kzz = k.cross(Z, Z);
  Kzz.diagonal().array() += s.set.rel_jitter * k.variance();
  const MatrixXd L = Eigen::LLT<MatrixXd>(Kzz).matrixL();
  MatrixXd Phi(300, 7);
  Phi.leftCols(6) = k.cross(Xn.leftCols(2), Z) * MatrixXd(L.transpose()).inverse();
  Phi.col(6) = 2.0 * Xn.col(2);
  for (Index i = 0; i < 300; i += 37) {
    const double resid = k.variance() - Phi.row(i).head(6).squaredNorm();
    CHECK(var(i) == Approx(resid + Phi.row(i).dot(s.S * Phi.row(i).transpose())).epsilon(1e-11));
    CHECK(tv(i, 0) ==
          Approx(resid + Phi.row(i).head(6).dot(s.S.topLeftCorner(6, 6) * Phi.row(i).head(6).transpose())).epsilon(1e-11));
    CHECK(tv(i, 1) == Approx(4.0 * Xn(i, 2) * Xn(i, 2) * s.S(6, 6)).epsilon(1e-11));
  }
  // centred parts: the features minus a centre c, (phi - c)' m and (phi - c)' S (phi - c) + resid
  const VectorXd c = s.feature_means(serial_for);
  REQUIRE(c.size() == 7);
  VectorXd mean2, var2;
  MatrixXd tm2, tv2;
  s.predict(Xn, on, mean2, var2, &tm2, &tv2, thread_for(2), &c);
  CHECK(mean2 == mean);  // the predictor is unchanged
  CHECK(var2 == var);
  for (Index i = 0; i < 300; i += 37) {
    const VectorXd u = Phi.row(i).head(6).transpose() - c.head(6);
    const double resid = k.variance() - Phi.row(i).head(6).squaredNorm();
    CHECK(tm2(i, 0) == Approx(u.dot(s.m.head(6))).epsilon(1e-11));
    CHECK(tv2(i, 0) == Approx(resid + u.dot(s.S.topLeftCorner(6, 6) * u)).epsilon(1e-11));
  }
}

TEST_CASE("natural-gradient iteration converges to a stationary q (Poisson)", "[svgp][natgrad]") {
  const Data d = make_data(60, Family::poisson, 51);
  const MatrixXd Z = uniform_matrix(8, 2, 52, -2, 2);
  Svgp s = make_svgp(d, {gp_component(KernelType::matern52, true, Z), linear_component({2}, VectorXd::Constant(1, 2.0))},
                     Family::poisson);
  std::vector<double> elbos;
  elbos.push_back(s.elbo(serial_for));
  for (int it = 0; it < 150; ++it) {
    s.natural_step(s.evaluate(nullptr, false, serial_for), 1.0, 0.5);
    s.refresh();
    elbos.push_back(s.elbo(serial_for));
  }
  for (std::size_t i = 4; i < elbos.size(); ++i) {
    CAPTURE(i, elbos[i - 1], elbos[i]);
    CHECK(elbos[i] >= elbos[i - 1] - 1e-8);
  }
  CHECK(elbos.back() > elbos.front() + 1.0);
  const VectorXd m_before = s.m;
  const double elbo_before = s.elbo(serial_for);
  s.natural_step(s.evaluate(nullptr, false, serial_for), 1.0, 0.5);
  s.refresh();
  CHECK((s.m - m_before).cwiseAbs().maxCoeff() < 1e-8);
  CHECK(std::abs(s.elbo(serial_for) - elbo_before) < 1e-8);
  // stationary point of the ELBO in m: d ELBO / d m = Phi' g - m = 0
  const PassSums acc = s.evaluate(nullptr, false, serial_for);
  CHECK((acc.r - s.m).cwiseAbs().maxCoeff() < 1e-7);
  // ... and checked by finite differences of the ELBO in m
  auto elbo_at = [&](const VectorXd& mm) {
    Svgp t = s;
    t.m = mm;
    return t.elbo(serial_for);
  };
  CHECK(fd_gradient(elbo_at, s.m, 1e-4).cwiseAbs().maxCoeff() < 1e-6);
  // and a local maximum
  for (Index j = 0; j < s.total_size(); ++j)
    for (double h : {-1e-3, 1e-3}) {
      VectorXd mm = s.m;
      mm(j) += h;
      CHECK(elbo_at(mm) < elbo_before);
    }
}

TEST_CASE("fit() is deterministic and thread-count invariant", "[svgp][fit]") {
  const Data d = make_data(3000, Family::poisson, 61);
  const MatrixXd Z = uniform_matrix(10, 2, 62, -2, 2);
  Settings set;
  set.batch_size = 1000;  // 4 groups of rows per batch, 3 batches per epoch
  SvgpSettings opt;
  opt.natgrad_step = 0.5;  // warm-up of ceil(5 / 0.5) = 10 iterations, then Adam
  set.max_iter = 16;
  set.learning_rate = 0.02;
  struct Result {
    FitInfo info;
    VectorXd m, th;
    MatrixXd S;
  };
  auto run = [&](const ParallelFor& pfor, std::uint64_t seed) {
    Svgp s = make_svgp(d, {gp_component(KernelType::se, true, Z), linear_component({2}, VectorXd::Constant(1, 2.0))},
                       Family::poisson, set, opt);
    Rng rng(seed);
    Result r;
    r.info = s.fit(pfor, rng, [](int, double) { return true; });
    r.m = s.m;
    r.S = s.S;
    r.th = s.pack();
    return r;
  };
  const Result a = run(serial_for, 1);
  REQUIRE(a.info.trace.size() == 16);
  CHECK(a.info.iterations == 16);
  {
    // Adam moved the hyperparameters and inducing inputs (not vacuous)
    const Svgp s0 = make_svgp(d, {gp_component(KernelType::se, true, Z), linear_component({2}, VectorXd::Constant(1, 2.0))},
                              Family::poisson, set, opt);
    CHECK((a.th - s0.pack()).cwiseAbs().maxCoeff() > 1e-3);
  }
  CHECK(std::isfinite(a.info.objective));
  const Result b = run(serial_for, 1);
  CHECK(a.info.trace == b.info.trace);
  CHECK(a.m == b.m);
  CHECK(a.th == b.th);
  CHECK(a.info.objective == b.info.objective);
  for (unsigned t : {2u, 3u}) {
    CAPTURE(t);
    const Result c = run(thread_for(t), 1);
    CHECK(c.info.trace == a.info.trace);  // bit-identical
    CHECK(c.m == a.m);
    CHECK(c.S == a.S);
    CHECK(c.th == a.th);
    CHECK(c.info.objective == a.info.objective);
  }
  // the seed matters (minibatches differ), so the equalities above are not vacuous
  const Result e = run(serial_for, 2);
  CHECK(e.info.trace != a.info.trace);
  CHECK(e.info.trace[0] != a.info.trace[0]);
}

TEST_CASE("fit() honours the monitor and improves the ELBO", "[svgp][fit]") {
  const Data d = make_data(60, Family::gaussian, 71);
  const MatrixXd Z = uniform_matrix(8, 2, 72, -2, 2);
  const VectorXd tau = VectorXd::Constant(1, 2.0);
  SECTION("monitor returning false stops the fit") {
    Settings set;
    set.max_iter = 50;
    Svgp s = make_svgp(d, {gp_component(KernelType::se, true, Z), linear_component({2}, tau)}, Family::gaussian, set);
    Rng rng(1);
    std::vector<int> its;
    const FitInfo info = s.fit(serial_for, rng, [&](int it, double obj) {
      its.push_back(it);
      return std::isfinite(obj) && it < 4;
    });
    CHECK(info.iterations == 4);
    CHECK(info.trace.size() == 5);  // the starting value and 4 iterations
    CHECK_FALSE(info.converged);
    CHECK(its == std::vector<int>{1, 2, 3, 4});
  }
  SECTION("full-batch Gaussian fit") {
    Settings set;
    set.max_iter = 300;
    set.learning_rate = 0.03;
    Svgp s0 = make_svgp(d, {gp_component(KernelType::se, true, Z), linear_component({2}, tau)}, Family::gaussian, set);
    s0.natural_step(s0.evaluate(nullptr, false, serial_for), 1.0, 1.0);
    s0.refresh();
    const double elbo_init = s0.elbo(serial_for);  // optimal q at the initial hyperparameters

    Svgp s = make_svgp(d, {gp_component(KernelType::se, true, Z), linear_component({2}, tau)}, Family::gaussian, set);
    Rng rng(1);
    const FitInfo info = s.fit(serial_for, rng, [](int, double) { return true; });
    // (the fit maximised ELBO + log prior and reports (ELBO + log prior) - log prior)
    CHECK(std::abs(info.objective - s.elbo(serial_for)) <= 1e-12 * std::abs(s.elbo(serial_for)));
    CHECK(info.objective > elbo_init + 1.0);
    CHECK(info.trace.back() > info.trace.front());
    // Gaussian: q is the optimum for the final hyperparameters (a further step changes nothing)
    const VectorXd m = s.m;
    s.natural_step(s.evaluate(nullptr, false, serial_for), 1.0, 1.0);
    s.refresh();
    CHECK((s.m - m).cwiseAbs().maxCoeff() < 1e-10);
    // the fitted noise sd is near the simulated 0.3
    CHECK(std::sqrt(s.lik.noise_var()) > 0.2);
    CHECK(std::sqrt(s.lik.noise_var()) < 0.45);
  }
}

TEST_CASE("snapshot and restore return the exact state; an invalid precision throws", "[svgp][fit]") {
  const Data d = make_data(80, Family::poisson, 91);
  const MatrixXd Z = uniform_matrix(6, 2, 92, -2, 2);
  Svgp s = make_svgp(d, {gp_component(KernelType::se, true, Z), linear_component({2}, VectorXd::Constant(1, 2.0))},
                     Family::poisson);
  randomise_q(s, 93);
  const Svgp::Snapshot snap = s.snapshot();
  const VectorXd m0 = s.m;
  const MatrixXd S0 = s.S;
  VectorXd th = s.pack();
  th.array() += 0.3;
  s.unpack(th);
  s.natural_step(s.evaluate(nullptr, false, serial_for), 1.0, 0.5);
  s.refresh();
  REQUIRE((s.m - m0).cwiseAbs().maxCoeff() > 1e-3);
  s.restore(snap);
  CHECK(s.pack() == snap.theta);
  CHECK(s.m == m0);
  CHECK(s.S == S0);
  // a precision that is not positive definite is an error, never patched
  s.P(0, 0) = -1.0;
  CHECK_THROWS_AS(s.refresh_q(), numerical_error);
}

TEST_CASE("factor level codes out of range are refused", "[svgp][components]") {
  Data d = make_data(20, Family::gaussian, 95);
  d.X.col(2).setConstant(1.0);
  d.X(4, 2) = 3.0;  // level 3 of a factor with 3 levels (codes 0..2)
  Component fac;
  fac.kind = Kind::factor;
  fac.cols = {2};
  fac.levels = 3;
  Svgp s = make_svgp(d, {fac}, Family::gaussian);
  CHECK_THROWS_AS(s.evaluate(nullptr, false, serial_for), std::invalid_argument);
  d.X(4, 2) = std::numeric_limits<double>::quiet_NaN();
  Svgp t = make_svgp(d, {fac}, Family::gaussian);
  CHECK_THROWS_AS(t.evaluate(nullptr, false, serial_for), std::invalid_argument);
  // code -1, a level not seen in the fit (R: predict()), is the prior: mean 0
  // and all of the effect's variance; a seen level is sd * its weight's moments
  d.X(4, 2) = 1.0;
  Svgp u = make_svgp(d, {fac}, Family::gaussian);
  randomise_q(u, 96);
  MatrixXd Xn = d.X.topRows(2);
  Xn(0, 2) = -1.0;
  const VectorXd on = VectorXd::Constant(2, 0.25);
  VectorXd mean, var;
  u.predict(Xn, on, mean, var, nullptr, nullptr, serial_for);
  const double v = u.comps[0].kernel.variance();
  CHECK(mean(0) == 0.25);
  CHECK(std::abs(var(0) - v) < 1e-14 * v);
  CHECK(std::abs(mean(1) - (0.25 + std::sqrt(v) * u.m(1))) < 1e-12);
  CHECK(std::abs(var(1) - v * u.S(1, 1)) < 1e-12 * v);
  Xn(0, 2) = -2.0;
  CHECK_THROWS_AS(u.predict(Xn, on, mean, var, nullptr, nullptr, serial_for), std::invalid_argument);
}

TEST_CASE("full-batch fits end at a stationary point of the ELBO", "[svgp][fit]") {
  // L-BFGS on the hyperparameters with q optimal at each value: the gradient
  // at the end is below tol * N, and it is the gradient of the ELBO itself
  for (Family fam : {Family::gaussian, Family::poisson, Family::logit}) {
    CAPTURE(static_cast<int>(fam));
    const Data d = make_data(200, fam, 101);
    Settings set;
    set.max_iter = 500;
    set.tol = 1e-7;
    Svgp s = make_svgp(d, {gp_component(KernelType::se, true, uniform_matrix(6, 2, 102, -2, 2)),
                           linear_component({2}, VectorXd::Constant(1, 2.0))},
                       fam, set);
    Rng rng(1);
    const FitInfo info = s.fit(serial_for, rng, [](int, double) { return true; });
    CHECK(info.converged);
    CHECK(info.stop == "stationary point");
    CHECK(info.gradient.lpNorm<Eigen::Infinity>() <= 1e-7 * 200);
    CHECK(info.objective == Approx(s.elbo(serial_for)).epsilon(1e-12));
    // the trace increases
    for (std::size_t i = 1; i < info.trace.size(); ++i) CHECK(info.trace[i] >= info.trace[i - 1]);
    // q is optimal for the final hyperparameters: a further natural step of
    // size 1 moves the mean by less than the inner loop's tolerance (1e-6)
    const VectorXd m_end = s.m;
    s.natural_step(s.evaluate(nullptr, Pass::natural, serial_for), 1.0, 1.0);
    s.refresh_q();
    CHECK((s.m - m_end).lpNorm<Eigen::Infinity>() < 1e-6);
    CHECK(info.q_change < 1e-3);
  }
}

// Svgp with the inner loop tight throughout, as before fit_profile() set
// the tolerance of the mean by the outer gradient (fit_profile() on this
// type sees the inner_accuracy() that hides Svgp's)
struct TightSvgp : Svgp {
  using Svgp::Svgp;
  void inner_accuracy(double) { Svgp::inner_accuracy(0); }
};

TEST_CASE("an inner loop loose far from a stationary point reaches the tight loop's optimum in fewer passes", "[svgp][fit]") {
  // binomial and Poisson, an inducing-point GP of x1, a Hilbert term of x2
  // and an intercept: the fit whose inner tolerance follows the outer gradient ends
  // at the optimum of the fit tight throughout (ELBO to 1e-6, final
  // gradients both stationary), with fewer passes over the data
  for (Family fam : {Family::logit, Family::poisson}) {
    CAPTURE(static_cast<int>(fam));
    const Data d = make_data(600, fam, 121, true);
    Settings set;
    set.max_iter = 500;
    set.tol = 1e-6;
    const std::vector<Component> comps = {
        gp_component(KernelType::se, false, uniform_matrix(10, 1, 122, -2, 2), {0}),
        hilbert_term(KernelType::matern52, {1}, {24}, false, 0.5, 1.0, 1.0),
        linear_component({2}, VectorXd::Constant(1, 10.0))};
    Likelihood lik(fam);
    Svgp loose(comps, lik, set, SvgpSettings(), d.X.data(), d.n(), 3, d.y.data(), d.w.data(), d.o.data());
    TightSvgp tight(comps, lik, set, SvgpSettings(), d.X.data(), d.n(), 3, d.y.data(), d.w.data(), d.o.data());
    Rng r1(1), r2(1);
    const FitInfo a = loose.fit(serial_for, r1, [](int, double) { return true; });
    const ParallelFor serial = serial_for;  // (begin_fit() keeps a reference)
    tight.begin_fit(serial, r2);
    const FitInfo b = fit_profile(tight, set, static_cast<double>(d.n()), [](int, double) { return true; });
    const std::size_t pa = loose.data().passes(), pb = tight.data().passes();
    INFO("passes: loose " << pa << ", tight " << pb << "; ELBO " << a.objective << " against " << b.objective);
    CHECK(a.converged);
    CHECK(b.converged);
    CHECK(std::abs(a.objective - b.objective) < 1e-6 * std::abs(b.objective));
    CHECK(loose.inner_tight());  // (the final state was solved tightly)
    CHECK(pa < pb);
    // the final q is optimal: a natural step of size 1 moves the mean by < 1e-6
    const VectorXd m_end = loose.m;
    loose.natural_step(loose.evaluate(nullptr, Pass::natural, serial_for), 1.0, 1.0);
    loose.refresh_q();
    CHECK((loose.m - m_end).lpNorm<Eigen::Infinity>() < 1e-6);
  }
}

TEST_CASE("Anderson mixing solves an affine fixed-point map in three steps", "[svgp][natgrad]") {
  // x = (P, h) with one weight: x -> A x + b with a slow contraction
  // (eigenvalues 0.74 and -0.34); type-II Anderson with two differences is
  // exact on an affine map of two unknowns after three plain steps, and
  // recording without applying changes nothing
  MatrixXd A(2, 2);
  A << 0.7, 0.2, 0.2, -0.3;  // eigenvalues 0.74, -0.34
  const Eigen::EigenSolver<MatrixXd> es(A);
  CAPTURE(es.eigenvalues().transpose());
  const VectorXd b = (VectorXd(2) << 0.6, -0.2).finished();
  const VectorXd xs = (MatrixXd::Identity(2, 2) - A).lu().solve(b);
  Anderson an(3);
  MatrixXd P(1, 1);
  VectorXd h(1);
  P(0, 0) = 3.0;
  h(0) = 1.0;
  VectorXd g;
  for (int k = 0; k < 3; ++k) {
    const MatrixXd P0 = P;
    const VectorXd h0 = h;
    g = A * (VectorXd(2) << P(0, 0), h(0)).finished() + b;
    P(0, 0) = g(0);
    h(0) = g(1);
    const bool mixed = an.mix(P0, h0, P, h, k >= 1);
    CHECK(mixed == (k >= 1));
    if (!mixed) CHECK((P(0, 0) == g(0) && h(0) == g(1)));
  }
  CHECK(std::abs(P(0, 0) - xs(0)) < 1e-10);
  CHECK(std::abs(h(0) - xs(1)) < 1e-10);
  // back to the plain step of the last mix
  an.plain(P, h);
  CHECK((P(0, 0) == g(0) && h(0) == g(1)));
}

TEST_CASE("keep_weights: q of every component's weights is unchanged by a change of hyperparameters", "[svgp]") {
  // inducing (stationary, centred), hilbert and factor components, and a linear one
  Data d = make_data(100, Family::logit, 111);
  d.X.conservativeResize(100, 4);
  for (Index i = 0; i < 100; ++i) d.X(i, 3) = static_cast<double>((i * 3) % 4);
  Component hs;
  hs.kind = Kind::hilbert;
  hs.cols = {0};
  hs.kernel.log_var = std::log(0.6);
  hs.kernel.log_ls = VectorXd::Constant(1, std::log(0.9));
  hs.basis.centre = VectorXd::Zero(1);
  hs.basis.L = VectorXd::Constant(1, 3.0);
  hs.basis.m = {9};
  Component fac;
  fac.kind = Kind::factor;
  fac.cols = {3};
  fac.levels = 4;
  fac.kernel.log_var = std::log(0.5);
  Settings set;
  Svgp s = make_svgp(d, {gp_component(KernelType::se, true, uniform_matrix(6, 2, 112, -2, 2)),
                         centred_component(KernelType::matern52, false, uniform_matrix(5, 2, 113, -2, 2)), hs, fac,
                         linear_component({2}, VectorXd::Constant(1, 2.0))},
                     Family::logit, set);
  const Index Mt = s.total_size();
  const MatrixXd B = uniform_matrix(Mt, Mt, 114, -1.0, 1.0);
  s.P = MatrixXd::Identity(Mt, Mt) + 2.0 * B * B.transpose() / static_cast<double>(Mt);
  s.h = uniform_matrix(Mt, 1, 115, -1.0, 1.0);
  s.refresh();
  // block-diagonal W (identity for the linear component)
  const auto whitening = [&](std::vector<MatrixXd>* Ws) {
    MatrixXd W = MatrixXd::Identity(Mt, Mt);
    for (std::size_t c = 0; c < s.comps.size(); ++c) {
      const MatrixXd Wc = s.whitening(c);
      if (Ws) Ws->push_back(Wc);
      if (Wc.size() > 0) W.block(s.offset_of(c), s.offset_of(c), Wc.rows(), Wc.cols()) = Wc;
    }
    return W;
  };
  std::vector<MatrixXd> old_W;
  const MatrixXd W0 = whitening(&old_W);
  CHECK(old_W[0] == component_prior(s.comps[0], set.rel_jitter).L);
  CHECK(old_W[4].size() == 0);
  const VectorXd mu0 = W0 * s.m;
  const MatrixXd Su0 = W0 * s.S * W0.transpose();
  VectorXd th = s.pack();
  th.array() += 0.3;  // every log variance and log lengthscale
  s.unpack(th);
  s.refresh_prior();
  s.keep_weights(old_W);
  const MatrixXd W1 = whitening(nullptr);
  for (std::size_t c = 0; c < 4; ++c) {
    const Index o = s.offset_of(c), M = s.comps[c].size();
    CAPTURE(c);
    CHECK((W1 - W0).block(o, o, M, M).cwiseAbs().maxCoeff() > 0.02);
  }
  check_all_close(W1 * s.m, mu0, 1e-9, 1e-10);
  check_all_close(W1 * s.S * W1.transpose(), Su0, 1e-9, 1e-10);
  // the linear component's coefficients are untouched
  CHECK(s.m.tail(1)(0) == Approx(mu0.tail(1)(0)).epsilon(1e-12));
}

TEST_CASE("inducing_iterations: the inducing inputs move, then the fit converges without them", "[svgp][fit]") {
  for (Family fam : {Family::gaussian, Family::logit}) {
    CAPTURE(static_cast<int>(fam));
    const Data d = make_data(200, fam, 111);
    const MatrixXd Z0 = uniform_matrix(6, 2, 112, -2, 2);
    Settings set;
    set.max_iter = 500;
    set.tol = 1e-7;
    set.inducing_iterations = 3;
    Svgp s = make_svgp(d, {gp_component(KernelType::se, true, Z0), linear_component({2}, VectorXd::Constant(1, 2.0))},
                       fam, set);
    Rng rng(1);
    const FitInfo info = s.fit(serial_for, rng, [](int, double) { return true; });
    CHECK(info.iterations > 3);
    CHECK(info.converged);
    // the final gradient leaves out the 12 inducing coordinates
    CHECK(info.gradient.size() == (fam == Family::gaussian ? 4 : 3));
    CHECK(info.gradient.lpNorm<Eigen::Infinity>() <= 1e-7 * 200);
    CHECK((s.comps[0].Z - Z0).cwiseAbs().maxCoeff() > 1e-3);
    for (std::size_t i = 1; i < info.trace.size(); ++i) CHECK(info.trace[i] >= info.trace[i - 1]);
    // ... a stationary point of the fit with those inducing inputs fixed: a
    // fresh fit started there stops at once
    Settings fixed;
    fixed.max_iter = 500;
    fixed.tol = 1e-7;
    fixed.learn_inducing = false;
    Svgp t = make_svgp(d, s.comps, fam, fixed);
    t.lik.log_noise = s.lik.log_noise;
    Rng rng2(1);
    const FitInfo again = t.fit(serial_for, rng2, [](int, double) { return true; });
    CHECK(again.converged);
    CHECK(again.iterations == 0);
    CHECK(again.objective == Approx(info.objective).epsilon(1e-9));
  }
}

TEST_CASE("Gaussian mean-field optimum: the coupled mean, diagonal precision blocks, a fixed point", "[svgp][natgrad]") {
  const Data d = make_data(80, Family::gaussian, 121);
  const VectorXd tau = VectorXd::Constant(1, 2.0);
  // two GP components on the same input (their features are strongly
  // correlated) and a linear one
  Component a = gp_component(KernelType::se, true, uniform_matrix(5, 2, 122, -2, 2));
  Component b = gp_component(KernelType::se, true, uniform_matrix(4, 2, 123, -2, 2));
  auto comps = [&] { return std::vector<Component>{a, b, linear_component({2}, tau)}; };
  SvgpSettings mf;
  mf.meanfield = true;
  Svgp s = make_svgp(d, comps(), Family::gaussian, Settings(), mf);
  Svgp full = make_svgp(d, comps(), Family::gaussian);
  randomise_q(s, 124);  // (the optimum does not depend on the start)
  s.gaussian_meanfield_optimum(s.evaluate(nullptr, false, serial_for));
  s.refresh();
  full.natural_step(full.evaluate(nullptr, false, serial_for), 1.0, 1.0);
  full.refresh();
  // the mean is the exact posterior mean; the precision is its diagonal blocks
  CHECK((s.m - full.m).cwiseAbs().maxCoeff() < 1e-10);
  const Index o[] = {0, 5, 9, 10};
  for (int c = 0; c < 3; ++c)
    for (int l = 0; l < 3; ++l) {
      const auto blk = s.P.block(o[c], o[l], o[c + 1] - o[c], o[l + 1] - o[l]);
      const auto ref = full.P.block(o[c], o[l], o[c + 1] - o[c], o[l + 1] - o[l]);
      CHECK((c == l ? (blk - ref).cwiseAbs().maxCoeff() : blk.cwiseAbs().maxCoeff()) < 1e-10);
    }
  CHECK(full.P.block(0, 5, 5, 4).cwiseAbs().maxCoeff() > 1e-2);  // the components are coupled in truth
  // a fixed point of the mean-field natural step of size 1
  const MatrixXd P1 = s.P;
  const VectorXd m1 = s.m;
  const double e1 = s.elbo(serial_for);
  s.natural_step(s.evaluate(nullptr, false, serial_for), 1.0, 1.0);
  s.refresh();
  CHECK((s.P - P1).cwiseAbs().maxCoeff() < 1e-10);
  CHECK((s.m - m1).cwiseAbs().maxCoeff() < 1e-9);
  // the optimum of the family: moving the mean or a block lowers the ELBO
  for (int k = 0; k < 10; ++k) {
    s.h = P1 * (m1 + 1e-3 * uniform_matrix(10, 1, 130 + k, -1, 1).col(0));
    s.P = P1;
    s.refresh();
    CHECK(s.elbo(serial_for) < e1);
  }
  CHECK(full.elbo(serial_for) > e1);
}

TEST_CASE("fixed design: the profile from statistics formed once equals the passes", "[svgp][fixed]") {
  // a 1-D Hilbert term (SE) + a 2-D ARD Hilbert term (Matern 5/2) with a
  // numeric by, a factor random effect and an intercept; weights and offsets.
  // The objective and gradient at the start (no iteration), and the fit's
  // optimum, with the fixed-design statistics and with a pass per evaluation,
  // over the rows and over discretised values.
  Data d = make_data(240, Family::gaussian, 29);
  d.X.conservativeResize(240, 5);
  for (Index i = 0; i < 240; ++i) {
    d.X(i, 3) = static_cast<double>((i * 7) % 4);  // 4 levels, with effects
    d.X(i, 4) = 0.5 + 0.25 * std::cos(static_cast<double>(i));
    d.y(i) += std::vector<double>{-0.4, 0.1, 0.5, -0.2}[static_cast<std::size_t>((i * 7) % 4)];
  }
  const auto hilbert = [](KernelType t, std::vector<Index> cols, std::vector<Index> m) {
    return hilbert_term(t, std::move(cols), std::move(m), true, 0.7, 0.8, 1.3);
  };
  Component fac;
  fac.kind = Kind::factor;
  fac.cols = {3};
  fac.levels = 4;
  fac.kernel.log_var = std::log(0.5);
  Component h2 = hilbert(KernelType::matern52, {0, 1}, {7, 6});
  h2.by_col = 4;
  const std::vector<Component> comps = {hilbert(KernelType::se, {0}, {20}), h2, fac,
                                        linear_component({2}, VectorXd::Constant(1, 3.0))};
  const auto run = [&](bool fixed, bool discrete, int iterations) {
    Settings set;
    set.max_iter = iterations;
    set.tol = 1e-9;
    SvgpSettings opt;
    opt.fixed_design = fixed;
    opt.discrete = discrete;
    opt.bins = 0;  // exact values: the same sums as the rows
    Svgp s = make_svgp(d, comps, Family::gaussian, set, opt);
    CHECK(s.fixed_design() == fixed);
    Rng rng(3);
    const FitInfo info = s.fit(serial_for, rng, [](int, double) { return true; });
    if (fixed) CHECK(s.data().passes() == 1);  // the statistics, once per fit
    return std::make_pair(info, s.pack());
  };
  for (bool discrete : {false, true}) {
    CAPTURE(discrete);
    const auto a = run(true, discrete, 0), b = run(false, discrete, 0);
    CHECK(std::abs(a.first.objective - b.first.objective) < 1e-10 * std::abs(b.first.objective));
    REQUIRE(a.first.gradient.size() == b.first.gradient.size());
    const double gs = b.first.gradient.cwiseAbs().maxCoeff();
    REQUIRE(gs > 1.0);
    for (Index j = 0; j < b.first.gradient.size(); ++j) {
      CAPTURE(j);
      CHECK(std::abs(a.first.gradient(j) - b.first.gradient(j)) < 1e-9 * gs);
    }
    const auto fa = run(true, discrete, 200), fb = run(false, discrete, 200);
    CHECK(fa.first.converged);
    CHECK(fb.first.converged);
    // Newton steps with the exact Hessian against BFGS from a finite-difference one
    CHECK(fa.first.evaluations < fb.first.evaluations);
    CAPTURE(fa.first.objective, fb.first.objective, fa.first.evaluations, fb.first.evaluations, fa.first.stop, fb.first.stop);
    CAPTURE(fa.second.transpose(), fb.second.transpose());
    CHECK(std::abs(fa.first.objective - fb.first.objective) < 1e-9 * std::abs(fb.first.objective));
    CHECK((fa.second - fb.second).cwiseAbs().maxCoeff() < 1e-4);
  }
}

TEST_CASE("fixed design: the exact Hessian matches finite differences of the gradient", "[svgp][fixed]") {
  // 1-D SE and 2-D ARD Matern 5/2 (and 3/2, isotropic) Hilbert terms, a
  // factor, an intercept, hyperpriors on the variances and lengthscales
  Data d = make_data(200, Family::gaussian, 31);
  d.X.conservativeResize(200, 4);
  for (Index i = 0; i < 200; ++i) d.X(i, 3) = static_cast<double>((i * 5) % 3);
  for (KernelType t2 : {KernelType::matern52, KernelType::matern32}) {
    CAPTURE(static_cast<int>(t2));
    const auto hilbert = [](KernelType t, std::vector<Index> cols, std::vector<Index> m, bool ard) {
      Component c = hilbert_term(t, std::move(cols), std::move(m), ard, 0.6, 0.7, 1.2);
      c.sd_prior = 1.5;
      c.ls_a = VectorXd::Constant(c.kernel.log_ls.size(), 2.0);
      c.ls_b = VectorXd::Constant(c.kernel.log_ls.size(), 0.3);
      return c;
    };
    Component fac;
    fac.kind = Kind::factor;
    fac.cols = {3};
    fac.levels = 3;
    fac.kernel.log_var = std::log(0.4);
    fac.sd_prior = 1.0;
    const std::vector<Component> comps = {hilbert(KernelType::se, {0}, {18}, true),
                                          hilbert(t2, {0, 1}, {7, 6}, t2 == KernelType::matern52), fac,
                                          linear_component({2}, VectorXd::Constant(1, 3.0))};
    Settings set;
    set.max_iter = 0;
    Svgp s = make_svgp(d, comps, Family::gaussian, set);
    Rng rng(3);
    s.fit(serial_for, rng, [](int, double) { return true; });  // the fixed design's statistics, q at the start
    const VectorXd th0 = s.pack();
    const auto grad = [&](const VectorXd& th) {
      s.unpack(th);
      return s.profile().gradient;
    };
    grad(th0);
    MatrixXd Hinv;
    REQUIRE(s.exact_hessian(Hinv));
    const MatrixXd H = s.last_hessian();
    const Index K = th0.size();
    REQUIRE(K == 2 + (t2 == KernelType::matern52 ? 3 : 2) + 1 + 1);
    MatrixXd Hfd(K, K);
    const double h = 1e-5;
    for (Index j = 0; j < K; ++j) {
      VectorXd a = th0, b = th0;
      a(j) += h;
      b(j) -= h;
      Hfd.col(j) = (grad(a) - grad(b)) / (2 * h);
    }
    const double scale = Hfd.cwiseAbs().maxCoeff();
    REQUIRE(scale > 1.0);
    for (Index a = 0; a < K; ++a)
      for (Index b = 0; b < K; ++b) {
        CAPTURE(a, b, H(a, b), Hfd(a, b));
        CHECK(std::abs(H(a, b) - Hfd(a, b)) < 1e-6 * scale + 1e-5 * std::abs(Hfd(a, b)));
      }
  }
}
