// Tests of fit_loop.hpp with a toy engine: the samplers, warm-up, the
// stopping rule, the monitor, and the recovery from failed iterations
// (back to the last good state, rates halved, Adam's moments reset).
#include <catch2/catch.hpp>

#include "fixtures.hpp"

#include <limits>
#include <set>
#include <vector>

using namespace scalegp;

namespace {

// Maximises -|theta - target|^2 / 2 (a concave quadratic; gradient target - theta).
// The objective of iterations listed in `fail_at` is NaN; `throw_at` throws
// in update().  Records what the loop asked of it.
struct Toy {
  VectorXd theta = VectorXd::Zero(2), target = VectorXd::Constant(2, 3.0);
  std::set<int> fail_at, throw_at;
  int calls = 0, warm = 2, restores = 0, back_offs = 0;
  std::vector<VectorXd> restored;
  std::vector<int> grads;  // iteration numbers at which a gradient was asked for

  struct Snapshot {
    VectorXd theta;
  };
  int warmup() const { return warm; }
  int stop_warmup() const { return warm; }
  bool own_stop() const { return false; }
  Index n_theta() const { return 2; }
  VectorXd pack() const { return theta; }
  void unpack(const VectorXd& th) { theta = th; }
  void initialise(const Sampler&) {}
  Snapshot snapshot() const { return {theta}; }
  void restore(const Snapshot& s) {
    ++restores;
    restored.push_back(s.theta);
    theta = s.theta;
  }
  void back_off() { ++back_offs; }
  Step step(const Sampler&, bool grad) {
    const int it = calls++;
    Step st;
    st.objective = fail_at.count(it) ? std::numeric_limits<double>::quiet_NaN()
                                     : -0.5 * (theta - target).squaredNorm();
    if (grad) {
      grads.push_back(it);
      st.gradient = target - theta;
    }
    return st;
  }
  void update(const Step&) {
    if (throw_at.count(calls - 1)) throw numerical_error("injected");
  }
  void finish(FitInfo& info) { info.objective = -0.5 * (theta - target).squaredNorm(); }
};

}  // namespace

TEST_CASE("Sampler: full, shuffled minibatches and fixed blocks", "[fit_loop]") {
  Rng rng(3);
  Sampler full(Sampler::Mode::shuffled, 10, 0, rng);
  CHECK(full.full());
  CHECK(full.rows() == nullptr);
  CHECK(full.scale() == 1.0);
  // minibatches without replacement within an epoch: every row once per 10 draws
  Sampler sh(Sampler::Mode::shuffled, 10, 5, rng);
  CHECK(sh.per_epoch() == 2);
  CHECK(sh.scale() == 2.0);
  std::multiset<std::size_t> seen;
  for (int k = 0; k < 4; ++k) {
    sh.next();
    REQUIRE(sh.rows()->size() == 5);
    seen.insert(sh.rows()->begin(), sh.rows()->end());
  }
  for (std::size_t i = 0; i < 10; ++i) CHECK(seen.count(i) == 2);
  // fixed blocks: the same blocks every epoch, each once per epoch
  Sampler bl(Sampler::Mode::blocks, 11, 4, rng);
  REQUIRE(bl.per_epoch() == 3);
  std::vector<std::vector<std::size_t>> first(3), second(3);
  for (int k = 0; k < 6; ++k) {
    bl.next();
    (k < 3 ? first : second)[bl.block()] = *bl.rows();
  }
  CHECK(first == second);
  CHECK(first[0].size() + first[1].size() + first[2].size() == 11);
}

TEST_CASE("fit_loop: warm-up, Adam ascent and the stopping rule", "[fit_loop]") {
  Toy toy;
  Settings set;
  set.max_iter = 5000;
  set.learning_rate = 0.1;
  set.tol = 1e-12;
  set.patience = 5;
  Rng rng(1);
  Sampler s(Sampler::Mode::full, 1, 0, rng);
  std::vector<int> mon;
  const FitInfo info = fit_loop(toy, s, set, [&](int it, double) {
    mon.push_back(it);
    return true;
  });
  CHECK(info.converged);
  CHECK(info.iterations < 5000);
  CHECK(info.failures == 0);
  CHECK(toy.grads.front() == 2);  // no gradient during the warm-up of 2 iterations
  // Adam's steps are about learning_rate long: it stops within a few of them
  CHECK((toy.theta - toy.target).cwiseAbs().maxCoeff() < 3 * set.learning_rate);
  CHECK(info.trace.back() > info.trace.front() + 8.0);
  CHECK(static_cast<int>(mon.size()) == info.iterations);
  CHECK(mon.back() == info.iterations);
}

TEST_CASE("fit_loop: a failed iteration returns to the last good state", "[fit_loop]") {
  Toy toy;
  toy.fail_at = {6};     // the state made by iteration 5's update is bad
  toy.throw_at = {10};   // iteration 10's update throws
  Settings set;
  set.max_iter = 20;
  set.learning_rate = 0.1;
  set.patience = 1000;
  Rng rng(1);
  Sampler s(Sampler::Mode::full, 1, 0, rng);
  // the states whose objective was evaluated, by iteration
  std::vector<VectorXd> evaluated;
  Toy* t = &toy;
  const FitInfo info = fit_loop(toy, s, set, [&](int, double) {
    evaluated.push_back(t->theta);
    return true;
  });
  CHECK(info.failures == 2);
  CHECK(toy.restores == 2);
  CHECK(toy.back_offs == 2);
  CHECK(info.iterations == 20);
  CHECK(info.trace.size() == 18);  // the failed iterations leave no trace
  for (double v : info.trace) CHECK(std::isfinite(v));
  // iteration 6 failed: back to the state iteration 5 evaluated (before its update)
  // iteration 10's update failed: back to the state iteration 10 evaluated
  REQUIRE(toy.restored.size() == 2);
  CHECK(toy.restored[0] != toy.restored[1]);
  CHECK((toy.restored[0] - toy.target).norm() > (toy.restored[1] - toy.target).norm());
}

TEST_CASE("fit_loop: too many failures end the fit with an error", "[fit_loop]") {
  Toy toy;
  for (int i = 0; i < 100; ++i) toy.fail_at.insert(i);
  Settings set;
  set.max_iter = 100;
  set.max_failures = 4;
  Rng rng(1);
  Sampler s(Sampler::Mode::full, 1, 0, rng);
  REQUIRE_THROWS_WITH(fit_loop(toy, s, set, [](int, double) { return true; }), Catch::Contains("4 times"));
  CHECK(toy.restores == 4);
}

TEST_CASE("fit_loop: the monitor stops the fit", "[fit_loop]") {
  Toy toy;
  Settings set;
  set.max_iter = 100;
  Rng rng(1);
  Sampler s(Sampler::Mode::full, 1, 0, rng);
  const FitInfo info = fit_loop(toy, s, set, [](int it, double) { return it < 7; });
  CHECK(info.iterations == 7);
  CHECK_FALSE(info.converged);
}

namespace {

// A profile engine (fit_profile()) maximising a smooth concave function of
// theta: -(theta - t)' A (theta - t) / 2 - c sum_j (exp(theta_j - t_j) - (theta_j - t_j) - 1),
// with A = Q diag(1, ..., 1e4) Q' (condition number 1e4), inside a box.
struct ToyProfile {
  VectorXd theta, t;
  MatrixXd A;
  double c = 0;
  VectorXd lo, hi;
  int profiles = 0;
  explicit ToyProfile(Index p, double curved) : theta(VectorXd::Zero(p)), t(VectorXd::LinSpaced(p, -1.0, 2.0)), c(curved) {
    const MatrixXd G = fixtures::normal_matrix(p, p, 7);
    const Eigen::HouseholderQR<MatrixXd> qr(G);
    const MatrixXd Q = qr.householderQ();
    VectorXd ev(p);
    for (Index j = 0; j < p; ++j) ev(j) = std::pow(1e4, p > 1 ? static_cast<double>(j) / static_cast<double>(p - 1) : 0.0);
    A = Q * ev.asDiagonal() * Q.transpose();
    lo = VectorXd::Constant(p, -10.0);
    hi = VectorXd::Constant(p, 10.0);
  }
  struct Snapshot {
    VectorXd theta;
  };
  Index n_theta() const { return theta.size(); }
  VectorXd pack() const { return theta; }
  void unpack(const VectorXd& th) { theta = th; }
  Snapshot snapshot() const { return {theta}; }
  void restore(const Snapshot& s) { theta = s.theta; }
  void start() {}
  void bounds(VectorXd& l, VectorXd& h) const {
    l = lo;
    h = hi;
  }
  Step profile() {
    ++profiles;
    const VectorXd r = theta - t;
    Step st;
    st.objective = -0.5 * r.dot(A * r) - c * (r.array().exp() - r.array() - 1.0).sum();
    st.gradient = -(A * r) - c * (r.array().exp() - 1.0).matrix();
    return st;
  }
  void finish_profile(FitInfo&) const {}
  bool fix_inducing() { return false; }
};

}  // namespace

TEST_CASE("fit_profile: BFGS from a finite-difference Hessian ends an ill-conditioned quadratic in a few steps",
          "[fit_loop]") {
  ToyProfile toy(8, 0.0);
  Settings set;
  set.max_iter = 500;
  set.tol = 1e-9;
  const FitInfo info = fit_profile(toy, set, 1.0, [](int, double) { return true; });
  CHECK(info.converged);
  CHECK(info.stop == "stationary point");
  // kHessianAfter L-BFGS steps, then the Newton step of the exact Hessian
  // lands on the maximum (forward differences are exact for a quadratic up to
  // rounding)
  CHECK(info.iterations <= kHessianAfter + 2);
  CHECK(info.evaluations <= 1 + 4 * kHessianAfter + 8 + 4);
  for (Index j = 0; j < 8; ++j) CHECK(std::abs(toy.theta(j) - toy.t(j)) < 1e-7);
}

TEST_CASE("fit_profile: BFGS and L-BFGS (many parameters) reach the maximum of a non-quadratic function",
          "[fit_loop]") {
  for (Index p : {Index(8), kHessianMaxParams + 10}) {
    ToyProfile toy(p, 50.0);
    // (L-BFGS over 50 parameters stops gaining in double precision before a
    // gradient of 1e-6)
    const double tol = p <= kHessianMaxParams ? 1e-8 : 1e-5;
    Settings set;
    set.max_iter = 2000;
    set.tol = tol;
    const FitInfo info = fit_profile(toy, set, 1.0, [](int, double) { return true; });
    INFO("parameters " << p << ", iterations " << info.iterations << ", stop " << info.stop);
    CHECK(info.converged);
    // at the maximum theta = t (the gradient vanishes there); its error is
    // at most the gradient (below tol) over the smallest curvature (1 + 50)
    for (Index j = 0; j < p; ++j) CHECK(std::abs(toy.theta(j) - toy.t(j)) < tol);
    if (p <= kHessianMaxParams) CHECK(info.iterations < 20);
  }
}

TEST_CASE("fit_profile: a maximum outside the box ends at the bound, with the Hessian taken inside it",
          "[fit_loop]") {
  ToyProfile toy(8, 5.0);
  toy.hi(7) = 1.0;  // t(7) = 2 lies beyond
  toy.hi(0) = 0.00005;  // less room than one finite-difference step: taken backwards
  Settings set;
  set.max_iter = 500;
  set.tol = 1e-9;
  const FitInfo info = fit_profile(toy, set, 1.0, [](int, double) { return true; });
  INFO("iterations " << info.iterations << ", stop " << info.stop << ", gradient " << info.gradient.transpose()
       << ", theta " << toy.theta.transpose());
  CHECK(info.converged);
  CHECK(toy.theta(7) == 1.0);
  CHECK(info.gradient(7) > 0);  // the objective still rises beyond the bound
  for (Index j = 0; j <= 7; ++j) CHECK(toy.theta(j) <= toy.hi(j));
}
