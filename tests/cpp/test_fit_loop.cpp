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
