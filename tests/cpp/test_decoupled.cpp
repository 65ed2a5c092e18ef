// Tests of the decoupled engine (decoupled.hpp): every gradient against
// finite differences (exact and column-sampled KL), the KL against the
// closed-form Gaussian KL of the inducing values at Z and A, the Titsias
// bound without mean bases, the kernel-ridge-regression optimum of a with
// the prior covariance, and bit-identical fits for any thread count.
#include <catch2/catch.hpp>
#include "fixtures.hpp"

#include <cmath>
#include <vector>

using namespace scalegp;
using namespace fixtures;

namespace {

Decoupled make_decoupled(const Data& d, std::vector<Component> comps, Family fam, Index mean_basis,
                         Index kl_columns = 0, Settings set = Settings(), double rate_decay = 0) {
  Likelihood lik(fam);
  lik.log_noise = std::log(0.2);
  DecoupledSettings ds;
  ds.mean_basis = mean_basis;
  ds.kl_columns = kl_columns;
  ds.rate_decay = rate_decay;
  return Decoupled(std::move(comps), lik, set, SvgpSettings(), ds, d.X.data(), d.n(),
                   static_cast<std::size_t>(d.X.cols()), d.y.data(), d.w.data(), d.o.data());
}

// Random q: P = I + 2 B B' / M, h ~ U(-1, 1); mean bases at random inputs with random a.
void randomise(Decoupled& s, Index nb, unsigned seed) {
  const Index Mt = s.total_size();
  const MatrixXd B = uniform_matrix(Mt, Mt, seed, -1.0, 1.0);
  s.P = MatrixXd::Identity(Mt, Mt) + 2.0 * B * B.transpose() / static_cast<double>(Mt);
  s.h = uniform_matrix(Mt, 1, seed + 1, -1.0, 1.0);
  if (nb > 0) s.set_basis(uniform_matrix(nb, 2, seed + 2, -2.0, 2.0), uniform_matrix(nb, 1, seed + 3, -0.5, 0.5));
  s.refresh();
}

Step eval(Decoupled& s, bool grad, bool exact, Index start, double scale = 1.0,
          const std::vector<std::size_t>* idx = nullptr) {
  Decoupled::Eval ev;
  return s.objective(idx, scale, grad, exact, start, ev);
}

// Gradient of the objective (rows idx, scale) w.r.t. the packed parameters
// against central differences, q(v) held fixed.
void check_gradient(Decoupled& s, bool exact, Index start, const std::vector<std::size_t>* idx, double scale) {
  const ParallelFor pfor = serial_for;
  s.set_executor(pfor);
  const MatrixXd P0 = s.P;
  const VectorXd h0 = s.h;
  const VectorXd th0 = s.pack();
  auto F = [&](const VectorXd& th) {
    s.unpack(th);
    s.P = P0;
    s.h = h0;
    s.refresh();
    return eval(s, false, exact, start, scale, idx).objective;
  };
  F(th0);
  const VectorXd g = eval(s, true, exact, start, scale, idx).gradient;
  REQUIRE(g.size() == th0.size());
  REQUIRE(g.cwiseAbs().maxCoeff() > 0.0);
  const VectorXd fd = fd_gradient(F, th0, 1e-4);
  F(th0);
  check_all_close(g, fd, 1e-5, 1e-6 * fd.cwiseAbs().maxCoeff());
}

}  // namespace

TEST_CASE("decoupled: gradients of every parameter match finite differences", "[decoupled]") {
  const MatrixXd Z = uniform_matrix(5, 2, 11, -2.0, 2.0);
  for (Family fam : {Family::gaussian, Family::logit, Family::poisson}) {
    for (KernelType kt : {KernelType::se, KernelType::matern52}) {
      const Data d = make_data(60, fam, 3);
      std::vector<Component> comps{gp_component(kt, true, Z), linear_component({2}, VectorXd::Constant(1, 2.0))};
      Decoupled s = make_decoupled(d, comps, fam, 9, 0);
      randomise(s, 7, 5);  // 7 of 9 bases active: the others have no gradient
      CAPTURE(static_cast<int>(fam), static_cast<int>(kt));
      check_gradient(s, true, 0, nullptr, 1.0);
      // a window of 3 of the 7 columns from column 5 (wrapping), a minibatch with its scale
      Decoupled s2 = make_decoupled(d, comps, fam, 9, 3);
      randomise(s2, 7, 5);
      std::vector<std::size_t> idx;
      for (std::size_t i = 0; i < 60; i += 3) idx.push_back(i);
      check_gradient(s2, false, 5, &idx, 3.0);
    }
  }
}

TEST_CASE("decoupled: the KL is that of the Gaussian inducing values at Z and A", "[decoupled]") {
  // q(f) = p(f | u) q(u) with u = f(Z, A): KL(q || p) = KL(N(mu_u, S_u) || N(0, K_UU)) with
  //   mu_u = K_UZ K_ZZ^{-1} L m + K_UA a,  S_u = K_UU + K_UZ K_ZZ^{-1} (L S L' - K_ZZ) K_ZZ^{-1} K_ZU.
  const Data d = make_data(40, Family::gaussian, 4);
  const MatrixXd Z = uniform_matrix(4, 2, 12, -2.0, 2.0);
  Decoupled s = make_decoupled(d, {gp_component(KernelType::se, true, Z)}, Family::gaussian, 5, 0);
  randomise(s, 5, 9);
  s.set_executor(serial_for);
  Decoupled::Eval ev;
  const double obj = s.objective(nullptr, 1.0, false, true, 0, ev).objective;
  const double kl = ev.acc.sum_v - obj;
  const Kernel& k = s.kernel();
  MatrixXd U(9, 2);
  U << Z, s.A;
  const MatrixXd KUU = k.cross(U, U), KUZ = k.cross(U, Z), KZZ = KUU.topLeftCorner(4, 4), KUA = k.cross(U, s.A);
  const Eigen::LLT<MatrixXd> cz(KZZ);
  const MatrixXd L = cz.matrixL();
  const MatrixXd G = KUZ * cz.solve(MatrixXd::Identity(4, 4));  // K_UZ K_ZZ^{-1}
  const VectorXd mu = G * L * s.m + KUA * s.coef();
  const MatrixXd Su = KUU + G * (L * s.S * L.transpose() - KZZ) * G.transpose();
  const Eigen::LLT<MatrixXd> cu(KUU), cs(Su);
  const double ld_u = 2.0 * MatrixXd(cu.matrixL()).diagonal().array().log().sum();
  const double ld_s = 2.0 * MatrixXd(cs.matrixL()).diagonal().array().log().sum();
  const double want = 0.5 * (cu.solve(Su).trace() + mu.dot(cu.solve(mu)) - 9.0 + ld_u - ld_s);
  CAPTURE(kl, want);
  // (the model adds a relative jitter of 1e-6 to K_ZZ)
  CHECK(std::abs(kl - want) <= 1e-4 * std::abs(want));
  CHECK(want > 0.1);
}

TEST_CASE("decoupled: without mean bases the optimal q gives the Titsias bound and the SVGP gradient",
          "[decoupled]") {
  const Data d = make_data(50, Family::gaussian, 6, true, true);
  const MatrixXd Z = uniform_matrix(6, 2, 13, -2.0, 2.0);
  Settings set;
  set.rel_jitter = 1e-10;
  Decoupled s = make_decoupled(d, {gp_component(KernelType::se, true, Z)}, Family::gaussian, 0, 0, set);
  s.set_executor(serial_for);
  s.refresh();
  s.full_natural_step(1.0);
  const Step st = eval(s, true, true, 0);
  // Titsias: log N(y | 0, Q + s2 I) - tr(K - Q) / (2 s2)
  const Kernel& k = s.kernel();
  const MatrixXd Kxz = k.cross(d.X.leftCols(2), Z), Kzz = k.cross(Z, Z);
  const MatrixXd Q = Kxz * Kzz.ldlt().solve(Kxz.transpose());
  const double s2 = s.lik.noise_var();
  MatrixXd C = Q;
  C.diagonal().array() += s2;
  const Eigen::LLT<MatrixXd> cc(C);
  const double n = 50;
  const double logdet = 2.0 * MatrixXd(cc.matrixL()).diagonal().array().log().sum();
  const double bound = -0.5 * (n * std::log(2 * kPi) + logdet + d.y.dot(cc.solve(d.y))) -
                       (n * k.variance() - Q.trace()) / (2 * s2);
  CAPTURE(st.objective, bound);
  CHECK(std::abs(st.objective - bound) <= 1e-8 * std::abs(bound));
  // the same state in the SVGP engine: the same ELBO and hyperparameter gradient
  Svgp v(s.comps, s.lik, set, SvgpSettings(), d.X.data(), d.n(), 3, d.y.data(), d.w.data(), d.o.data());
  v.P = s.P;
  v.h = s.h;
  v.refresh();
  const VectorXd gv = v.gradient(v.evaluate(nullptr, true, serial_for), 1.0);
  CHECK(std::abs(v.elbo(serial_for) - st.objective) <= 1e-10 * std::abs(bound));
  check_all_close(st.gradient.head(gv.size()), gv, 1e-9, 1e-9);
}

TEST_CASE("decoupled: with the prior covariance the optimal a is kernel ridge regression", "[decoupled]") {
  // q(v) = N(0, I): the objective in a is -|y - o - K_XA a|^2 / (2 s2) - a' K_AA a / 2 + const,
  // maximised by a = (K_AX K_XA + s2 K_AA)^{-1} K_AX (y - o).
  const Data d = make_data(70, Family::gaussian, 8, true);
  const MatrixXd Z = uniform_matrix(3, 2, 14, -2.0, 2.0);
  Decoupled s = make_decoupled(d, {gp_component(KernelType::matern52, false, Z)}, Family::gaussian, 12, 0);
  s.set_executor(serial_for);
  const MatrixXd A = uniform_matrix(12, 2, 15, -2.0, 2.0);
  const Kernel& k = s.kernel();
  const MatrixXd KXA = k.cross(d.X.leftCols(2), A), KAA = k.cross(A, A);
  const double s2 = s.lik.noise_var();
  const VectorXd a = (KXA.transpose() * KXA + s2 * KAA).ldlt().solve(KXA.transpose() * (d.y - d.o));
  s.set_basis(A, a);
  s.refresh();  // P = I, h = 0: the prior
  const Step st = eval(s, true, true, 0);
  const Index k0 = st.gradient.size() - 12 - 24;
  const VectorXd ga = st.gradient.segment(k0, 12);
  CAPTURE(ga.transpose());
  CHECK(ga.cwiseAbs().maxCoeff() <= 1e-8 * (1.0 + (KXA.transpose() * (d.y - d.o)).cwiseAbs().maxCoeff()));
  // and a different a is not stationary
  s.set_basis(A, 1.1 * a);
  s.refresh();
  CHECK(eval(s, true, true, 0).gradient.segment(k0, 12).cwiseAbs().maxCoeff() > 1e-3);
}

TEST_CASE("decoupled: fits are identical for 1, 2 and 3 threads", "[decoupled]") {
  const Data d = make_data(700, Family::logit, 9);
  const MatrixXd Z = uniform_matrix(8, 2, 16, -2.0, 2.0);
  std::vector<FitInfo> infos;
  std::vector<VectorXd> thetas;
  for (unsigned t : {1u, 2u, 3u}) {
    Settings set;
    set.batch_size = 300;
    set.max_iter = 30;
    Decoupled s = make_decoupled(d, {gp_component(KernelType::se, true, Z), linear_component({2}, VectorXd::Ones(1))},
                                 Family::logit, 400, 50, set, 0.1);
    Rng rng(42);
    const ParallelFor pfor = t == 1 ? ParallelFor(serial_for) : thread_for(t);
    infos.push_back(s.fit(pfor, rng, [](int, double) { return true; }));
    thetas.push_back(s.pack());
    CHECK(s.active == 400);
  }
  for (std::size_t t = 1; t < 3; ++t) {
    CHECK(infos[t].trace == infos[0].trace);
    CHECK(infos[t].objective == infos[0].objective);
    CHECK((thetas[t].array() == thetas[0].array()).all());
  }
}

TEST_CASE("decoupled: a full natural step of 1 gives the optimal q with mean bases (Gaussian)", "[decoupled]") {
  // h* = r - 2 Q m - c: the ELBO is stationary in the mean and covariance of q(v)
  const Data d = make_data(80, Family::gaussian, 10);
  const MatrixXd Z = uniform_matrix(5, 2, 17, -2.0, 2.0);
  Decoupled s = make_decoupled(d, {gp_component(KernelType::se, true, Z), linear_component({2}, VectorXd::Ones(1))},
                               Family::gaussian, 8, 0);
  randomise(s, 8, 21);
  s.set_executor(serial_for);
  const VectorXd dir = uniform_matrix(s.total_size(), 1, 22, -1.0, 1.0);
  const MatrixXd B = uniform_matrix(s.total_size(), s.total_size(), 23, -0.3, 0.3);
  const MatrixXd dP = B + B.transpose();
  auto slope = [&]() {  // derivatives along a change of h and of P
    const VectorXd h0 = s.h;
    const MatrixXd P0 = s.P;
    auto F = [&](double t, bool prec) {
      if (prec) s.P = P0 + t * dP; else s.h = h0 + t * dir;
      s.refresh();
      const double v = eval(s, false, true, 0).objective;
      s.h = h0;
      s.P = P0;
      s.refresh();
      return v;
    };
    return std::make_pair(central_difference([&](double t) { return F(t, false); }, 1e-4),
                          central_difference([&](double t) { return F(t, true); }, 1e-4));
  };
  const auto before = slope();
  s.full_natural_step(1.0);
  const auto after = slope();
  CAPTURE(before.first, before.second, after.first, after.second);
  CHECK(std::abs(before.first) > 1e-2);
  CHECK(std::abs(after.first) <= 1e-7 * std::abs(before.first));
  CHECK(std::abs(after.second) <= 1e-7 * std::abs(before.second));
}

TEST_CASE("decoupled: the mean solve gives the optimal mean and the noise round raises the ELBO (Gaussian)",
          "[decoupled]") {
  // (Lambda + G / s2) theta = b / s2: afterwards the exact ELBO is stationary in a
  // (with q optimal given a), and no other a does better
  const Data d = make_data(90, Family::gaussian, 24);  // non-unit weights, an offset
  const MatrixXd Z = uniform_matrix(5, 2, 25, -2.0, 2.0);
  Decoupled s = make_decoupled(d, {gp_component(KernelType::se, true, Z), linear_component({2}, VectorXd::Ones(1))},
                               Family::gaussian, 10, 0);
  randomise(s, 10, 26);
  s.set_executor(serial_for);
  const Index k0 = s.n_theta() - 10 - 20;
  const Step before = eval(s, true, true, 0);
  CHECK(before.gradient.segment(k0, 10).cwiseAbs().maxCoeff() > 1e-2);
  const Decoupled::MeanSystem sys = s.mean_system();
  REQUIRE(s.solve_mean(sys));
  s.full_natural_step(1.0);
  const Step after = eval(s, true, true, 0);
  CAPTURE(before.objective, after.objective, after.gradient.segment(k0, 10).transpose());
  CHECK(after.objective > before.objective);
  CHECK(after.gradient.segment(k0, 10).cwiseAbs().maxCoeff() <= 1e-8 * before.gradient.segment(k0, 10).cwiseAbs().maxCoeff());
  // a perturbed a (q optimal given it) has a lower ELBO
  const VectorXd a = s.coef();
  s.set_basis(s.A.topRows(10), a + 0.05 * uniform_matrix(10, 1, 27, -1.0, 1.0));
  s.full_natural_step(1.0);
  CHECK(eval(s, false, true, 0).objective < after.objective - 1e-6);
  // the noise rounds: the noise maximises the ELBO given the mean (to the
  // stopping rule's 1e-3 in log sigma^2), and the ELBO rises
  s.set_basis(s.A.topRows(10), a);
  s.lik.log_noise = std::log(0.05);
  s.solve_mean_and_noise();
  const Step tuned = eval(s, true, true, 0);
  const double gnoise = tuned.gradient(s.NaturalQ::n_theta() - 1);
  CAPTURE(tuned.objective, gnoise, s.lik.log_noise);
  CHECK(tuned.objective > after.objective);
  CHECK(std::abs(gnoise) <= 2e-3 * static_cast<double>(d.n()));
}

TEST_CASE("decoupled: the mean solve is identical for 1, 2 and 3 threads", "[decoupled]") {
  const Data d = make_data(5000, Family::gaussian, 28);  // several passes of kSolveRows rows
  const MatrixXd Z = uniform_matrix(6, 2, 29, -2.0, 2.0);
  std::vector<VectorXd> coefs;
  std::vector<double> noise;
  for (unsigned t : {1u, 2u, 3u}) {
    Decoupled s = make_decoupled(d, {gp_component(KernelType::se, true, Z), linear_component({2}, VectorXd::Ones(1))},
                                 Family::gaussian, 300, 0);
    randomise(s, 300, 30);
    s.set_executor(t == 1 ? ParallelFor(serial_for) : thread_for(t));
    s.solve_mean_and_noise();
    coefs.push_back(s.coef());
    noise.push_back(s.lik.log_noise);
  }
  REQUIRE(coefs[0].size() == 300);
  CHECK(coefs[0].cwiseAbs().maxCoeff() > 0.0);
  for (std::size_t t = 1; t < 3; ++t) {
    CHECK((coefs[t].array() == coefs[0].array()).all());
    CHECK(noise[t] == noise[0]);
  }
}

TEST_CASE("decoupled: the closed form is the joint optimum of a and q, identical for 1, 2 and 3 threads",
          "[decoupled]") {
  const Data d = make_data(3000, Family::gaussian, 33);  // (two passes of kSolveRows rows)
  const MatrixXd Z = uniform_matrix(6, 2, 34, -2.0, 2.0);
  std::vector<VectorXd> coefs, means;
  std::vector<double> objectives;
  for (unsigned t : {1u, 2u, 3u}) {
    Settings set;
    set.batch_size = 500;
    set.learn_noise = false;
    set.learn_inducing = false;
    Component g = gp_component(KernelType::se, true, Z);
    g.learn_kernel = false;
    Likelihood lik(Family::gaussian);
    lik.log_noise = std::log(0.2);
    DecoupledSettings ds;
    ds.mean_basis = 200;
    ds.closed_form = true;
    Decoupled s({g, linear_component({2}, VectorXd::Ones(1))}, lik, set, SvgpSettings(), ds, d.X.data(), d.n(),
                static_cast<std::size_t>(d.X.cols()), d.y.data(), d.w.data(), d.o.data());
    Rng rng(5);
    const ParallelFor pfor = t == 1 ? ParallelFor(serial_for) : thread_for(t);
    const FitInfo info = s.fit(pfor, rng, [](int, double) { return true; });
    CHECK(info.converged);
    CHECK(info.iterations == 0);
    CHECK(s.active == 200);
    // the free parameters are the 200 coefficients a; the ELBO is quadratic
    // and concave in them, so a vanishing gradient is its maximum
    REQUIRE(info.gradient.size() == 200);
    CHECK(info.gradient.cwiseAbs().maxCoeff() < 1e-7 * std::abs(info.objective));
    CHECK(s.coef().cwiseAbs().maxCoeff() > 0.0);
    // q is optimal too: one more full natural step of size 1 leaves it
    const VectorXd m0 = s.m;
    s.set_executor(pfor);
    s.full_natural_step(1.0);
    CHECK((s.m - m0).cwiseAbs().maxCoeff() < 1e-8);
    coefs.push_back(s.coef());
    means.push_back(m0);
    objectives.push_back(info.objective);
  }
  for (std::size_t t = 1; t < 3; ++t) {
    CHECK((coefs[t].array() == coefs[0].array()).all());
    CHECK((means[t].array() == means[0].array()).all());
    CHECK(objectives[t] == objectives[0]);
  }
  // anything left to learn is refused
  DecoupledSettings ds;
  ds.mean_basis = 50;
  ds.closed_form = true;
  Decoupled s2({gp_component(KernelType::se, true, Z)}, Likelihood(Family::gaussian), Settings(), SvgpSettings(), ds,
               d.X.data(), d.n(), static_cast<std::size_t>(d.X.cols()), d.y.data(), d.w.data(), d.o.data());
  Rng rng(5);
  CHECK_THROWS_AS(s2.fit(ParallelFor(serial_for), rng, [](int, double) { return true; }), std::invalid_argument);
}

TEST_CASE("decoupled: full-data fits end at a stationary point (L-BFGS, q optimal at each step)", "[decoupled]") {
  for (Family fam : {Family::gaussian, Family::logit, Family::poisson}) {
    CAPTURE(static_cast<int>(fam));
    const Data d = make_data(300, fam, 31);
    const MatrixXd Z = uniform_matrix(6, 2, 32, -2.0, 2.0);
    auto run = [&](bool lbfgs, unsigned threads, FitInfo& info, bool move = true) {
      Settings set;
      set.learn_inducing = move;
      set.max_iter = lbfgs ? 1000 : 300;
      set.tol = 1e-6;
      set.inducing_iterations = 5;
      set.learning_rate = 0.05;
      Likelihood lik(fam);
      lik.log_noise = std::log(0.2);
      DecoupledSettings ds;
      ds.mean_basis = 40;
      SvgpSettings so;
      so.lbfgs = lbfgs;
      Decoupled s({gp_component(KernelType::se, true, Z), linear_component({2}, VectorXd::Ones(1))}, lik, set, so, ds,
                  d.X.data(), d.n(), static_cast<std::size_t>(d.X.cols()), d.y.data(), d.w.data(), d.o.data());
      Rng rng(7);
      const ParallelFor pfor = threads == 1 ? ParallelFor(serial_for) : thread_for(threads);
      info = s.fit(pfor, rng, [](int, double) { return true; });
      return s.pack();
    };
    FitInfo lb, lb2, adam;
    const VectorXd th = run(true, 1, lb);
    CHECK(lb.converged);
    CHECK(lb.stop == "stationary point");
    CHECK(lb.iterations > 5);
    // after 5 iterations the bases and inducing inputs stay: the final
    // gradient covers the 3 kernel parameters (+ noise) and the 40 coefficients
    CHECK(lb.gradient.size() == (fam == Family::gaussian ? 4 : 3) + 40);
    CHECK(lb.gradient.lpNorm<Eigen::Infinity>() <= 1e-6 * 300);
    for (std::size_t i = 1; i < lb.trace.size(); ++i) CHECK(lb.trace[i] >= lb.trace[i - 1]);
    // bit-identical with two threads
    const VectorXd th2 = run(true, 2, lb2);
    CHECK(lb2.trace == lb.trace);
    CHECK((th2.array() == th.array()).all());
    // with bases and inducing inputs fixed: at least as high as 300 Adam
    // steps from the same start
    FitInfo fixed;
    run(true, 1, fixed, false);
    run(false, 1, adam, false);
    CHECK(fixed.converged);
    CHECK(fixed.objective >= adam.objective - 1e-6 * std::abs(adam.objective));
  }
}
