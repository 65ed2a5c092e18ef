// The drivers of the fits.  fit_loop(), the loop of minibatch (and
// iterative) fits: which rows an iteration sees (Sampler), the warm-up
// before the first parameter step, Adam on the packed parameters, the
// stopping rule, timers, the monitor (progress and interrupts, on the
// calling thread), and the recovery from a failed iteration (back to the
// last state whose objective was finite, the Adam step and the engine's own
// rate halved, Adam's moments forgotten).  fit_profile(), the driver of
// full-data fits: L-BFGS, then BFGS from a finite-difference Hessian, on
// the profile objective (below).  The natural step size and warm-up rule
// of the variational engines (natural_rate(), natural_warmup()).
//
// An engine of fit_loop() (svgp.hpp, decoupled.hpp, ep.hpp,
// ep_minibatch.hpp) provides
//   int warmup() const          iterations before the first parameter step
//   int stop_warmup() const     iterations before the stopping rule counts
//   bool own_stop() const       convergence is Step::done, not the stopping rule
//   Index n_theta() const; VectorXd pack() const; void unpack(const VectorXd&)
//   void initialise(const Sampler&)       before the first iteration
//   Step step(const Sampler&, bool grad)  the objective at the current state
//                                         (and its gradient when grad)
//   void update(const Step&)              after the parameters moved
//   Snapshot snapshot() const; void restore(const Snapshot&)
//   void back_off()                       halve the engine's own step sizes
//   void finish(FitInfo&)                 final passes; sets info.objective
// step(), update() and restore() signal an invalid state by throwing
// numerical_error or returning a non-finite objective.
#pragma once
#include "inducing.hpp"
#include "optim.hpp"
#include "settings.hpp"
#include <Eigen/Eigenvalues>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

namespace scalegp {

// The rows of each iteration:
//   full      all rows every iteration;
//   shuffled  minibatches of `batch` rows drawn without replacement within
//             an epoch (a new permutation each epoch; a batch may straddle two);
//   blocks    fixed blocks of a permutation made once, visited in a random
//             order each epoch (block() says which).
class Sampler {
 public:
  enum class Mode { full, shuffled, blocks };

  Sampler(Mode mode, std::size_t n, std::size_t batch, Rng& rng)
      : mode_(batch == 0 || batch >= n ? Mode::full : mode), n_(n), batch_(batch == 0 || batch >= n ? n : batch),
        rng_(rng) {
    if (mode_ == Mode::full) return;
    perm_.resize(n_);
    for (std::size_t i = 0; i < n_; ++i) perm_[i] = i;
    pos_ = n_;
    if (mode_ == Mode::blocks) {
      shuffle(perm_, rng_);
      order_.resize(per_epoch());
      for (std::size_t k = 0; k < order_.size(); ++k) order_[k] = k;
      pos_ = order_.size();
    }
  }

  void next() {
    if (mode_ == Mode::shuffled) {
      idx_.clear();
      while (idx_.size() < batch_) {
        if (pos_ == n_) {
          shuffle(perm_, rng_);
          pos_ = 0;
        }
        idx_.push_back(perm_[pos_++]);
      }
    } else if (mode_ == Mode::blocks) {
      if (pos_ == order_.size()) {
        shuffle(order_, rng_);
        pos_ = 0;
      }
      block_ = order_[pos_++];
      idx_.assign(perm_.begin() + static_cast<std::ptrdiff_t>(block_ * batch_),
                  perm_.begin() + static_cast<std::ptrdiff_t>(std::min(n_, (block_ + 1) * batch_)));
    }
  }

  bool full() const { return mode_ == Mode::full; }
  // The rows of the current iteration (null: all rows).
  const std::vector<std::size_t>* rows() const { return full() ? nullptr : &idx_; }
  std::size_t block() const { return block_; }
  std::size_t n() const { return n_; }
  std::size_t batch() const { return batch_; }
  // Iterations per pass through the data, and the scale N / batch of a batch's sums.
  std::size_t per_epoch() const { return (n_ + batch_ - 1) / batch_; }
  double scale() const { return static_cast<double>(n_) / static_cast<double>(batch_); }

 private:
  Mode mode_;
  std::size_t n_, batch_, pos_ = 0, block_ = 0;
  Rng& rng_;
  std::vector<std::size_t> perm_, order_, idx_;
};

// What one iteration of an engine reports.
struct Step {
  double objective = 0;  // the objective (estimate) at the state evaluated
  VectorXd gradient;     // its gradient w.r.t. the packed parameters, when asked
  bool done = false;     // the engine's own convergence (with own_stop())
};

inline bool stationary(const VectorXd& g, double gtol);

// The step size of the natural-gradient steps on q of the variational
// engines when none is given (natgrad_step <= 0): 1 with a Gaussian
// likelihood on all rows (exact), 0.5 for other likelihoods on all rows,
// 0.1 on minibatches.
inline double natural_rate(double given, bool full, bool gaussian) {
  return given > 0 ? given : full ? (gaussian ? 1.0 : 0.5) : 0.1;
}

// Warm-up: with damped natural steps (rho < 1) q needs a few iterations to
// approach its optimum; hyperparameter gradients at a poor q are misleading
// (and would dominate Adam's moment estimates), so Adam starts after
// ceil(5 / rho) iterations.
inline int natural_warmup(double rho) { return rho >= 1.0 ? 0 : static_cast<int>(std::ceil(5.0 / rho)); }

// `rate_decay`: Adam's step is set.learning_rate / (1 + rate_decay sqrt(t))
// (0: constant; the decoupled engine's option).
template <class Engine, class Monitor>
FitInfo fit_loop(Engine& e, Sampler& sampler, const Settings& set, Monitor monitor, double rate_decay = 0) {
  FitInfo info;
  auto clock = Clock::now();
  sampler.next();
  e.initialise(sampler);
  info.seconds_init = seconds_since(clock);
  clock = Clock::now();
  const bool learn = e.n_theta() > 0;
  const int warmup = e.warmup(), stop_warmup = e.stop_warmup();
  const std::size_t per_epoch = sampler.per_epoch();
  Adam adam(set.learning_rate);
  adam.set_decay(rate_decay);
  Stopper stop(set.tol, set.patience, static_cast<double>(sampler.n()));
  auto good = e.snapshot();  // the last state whose objective was finite
  double epoch_sum = 0;
  for (int it = 0; it < set.max_iter; ++it) {
    if (it > 0) sampler.next();
    const bool grad = learn && it >= warmup;
    Step st;
    bool ok = true;
    try {
      st = e.step(sampler, grad);
      ok = std::isfinite(st.objective) && (!grad || st.gradient.allFinite());
      if (ok) {
        good = e.snapshot();
        if (grad) {
          VectorXd th = e.pack();
          adam.step(th, st.gradient);
          e.unpack(th);
        }
        e.update(st);
      }
    } catch (const numerical_error&) {
      ok = false;
    }
    if (!ok) {
      if (++info.failures > set.max_failures)
        throw numerical_error("the fit failed to make a finite step " + std::to_string(set.max_failures) +
                              " times (each undone, with the step sizes halved); try a smaller learning_rate");
      e.restore(good);
      e.back_off();
      adam.scale_rate(0.5);
      adam.reset();
      continue;
    }
    info.trace.push_back(st.objective);
    info.iterations = it + 1;
    bool done = false;
    if (e.own_stop()) {
      done = st.done;
    } else {
      const int k = it + 1 - stop_warmup;  // iterations since the stopping rule started
      if (k > 0) epoch_sum += st.objective;
      if (k > 0 && static_cast<std::size_t>(k) % per_epoch == 0) {
        done = stop.add_epoch(epoch_sum / static_cast<double>(per_epoch));
        epoch_sum = 0;
      }
    }
    if (!monitor(it + 1, st.objective)) break;
    if (done) {
      info.converged = true;
      break;
    }
  }
  info.seconds_iter = seconds_since(clock);
  clock = Clock::now();
  e.finish(info);
  info.seconds_final = seconds_since(clock);
  const bool rule = info.converged;
  info.converged = rule && stationary(info.gradient, set.tol * static_cast<double>(sampler.n()));
  info.stop = !rule ? (info.iterations >= set.max_iter ? "iteration limit" : "stopped by the monitor")
              : info.converged ? "stationary point"
                               : "the stopping rule was met at a point that is not stationary";
  return info;
}

// No entry of the gradient exceeds gtol in absolute value.
inline bool stationary(const VectorXd& g, double gtol) { return g.size() == 0 || g.lpNorm<Eigen::Infinity>() <= gtol; }

// The deterministic driver of full-data fits: maximises the profile
// objective F(theta) = max over the engine's inner state (q, or EP sites) of
// the objective at parameters theta, by quasi-Newton steps with a
// backtracking line search (Armijo) inside the parameters' bounds: L-BFGS
// for the first kHessianAfter iterations (and throughout with more than
// kHessianMaxParams parameters), then BFGS started from the inverse of a
// finite-difference Hessian (fd_hessian_inverse()); or, for an engine with
// an exact Hessian (has_exact_hessian), Newton steps with it from the
// first iteration (made positive definite where it is not).  L-BFGS alone crawled
// along the ridges of the hyperparameters: on the design of
// bench/gam_vs_mgcv.R, 35-43 iterations of a Gaussian fit where this takes
// 10-15 (with 8 more evaluations for the Hessian).  At a maximum of F the
// gradient of the objective at the optimal inner state is the gradient of F
// (the inner state is stationary), so F's gradient is the engine's.  The
// fit stops at a stationary point (projected gradient below tol * N), at the
// iteration limit, when no step increases F, or when the monitor says so.
//
// An engine provides, besides pack(), unpack(), n_theta(), snapshot() and
// restore() of fit_loop():
//   void start()                the inner state at the starting parameters
//   Step profile()              optimises the inner state at the current
//                               parameters; the objective and its gradient
//   void bounds(VectorXd& lo, VectorXd& hi)
//   void finish_profile(FitInfo&)  the inner state's last change (q_change)
//   bool fix_inducing()         stops moving the inducing inputs (false: they
//                               were not moving); called after
//                               set.inducing_iterations iterations, when the
//                               search restarts over the other parameters
constexpr int kHessianAfter = 2;       // L-BFGS iterations (since the start or a restart) before the Hessian
constexpr Index kHessianMaxParams = 20;  // more parameters: L-BFGS throughout (the Hessian costs one evaluation each)
constexpr double kHessianStep = 1e-4;  // finite-difference step on the packed (log or standardised) scale

// H = the inverse of the symmetric part of B made positive definite
// (absolute eigenvalues, at least 1e-8 of the largest); false (H untouched)
// when that fails or B is zero or not finite.
inline bool positive_inverse(const MatrixXd& B, MatrixXd& H) {
  if (!B.allFinite()) return false;
  Eigen::SelfAdjointEigenSolver<MatrixXd> es(0.5 * (B + B.transpose()));
  if (es.info() != Eigen::Success) return false;
  VectorXd ev = es.eigenvalues().cwiseAbs();
  const double top = ev.maxCoeff();
  if (!(top > 0) || !std::isfinite(top)) return false;
  ev = ev.cwiseMax(1e-8 * top);
  H = es.eigenvectors() * ev.cwiseInverse().asDiagonal() * es.eigenvectors().transpose();
  return true;
}

// The inverse of the Hessian of -F at x (gradient g there) by forward
// differences of the gradient, one profile() per parameter (each step
// towards the interior of the bounds), symmetrised and made positive
// definite (absolute eigenvalues, at least 1e-8 of the largest): the start
// of BFGS.  The engine's state is restored afterwards.  Returns false (H
// untouched) when an evaluation fails or a bound leaves no room.
template <class Engine>
bool fd_hessian_inverse(Engine& e, const VectorXd& x, const VectorXd& g, const VectorXd& lo, const VectorXd& hi,
                        FitInfo& info, MatrixXd& H) {
  const Index p = x.size();
  const auto snap = e.snapshot();
  MatrixXd B(p, p);
  bool ok = true;
  for (Index j = 0; j < p && ok; ++j) {
    const double h = x(j) + kHessianStep <= hi(j) ? kHessianStep : -kHessianStep;
    if (x(j) + h < lo(j)) {
      ok = false;
      break;
    }
    VectorXd xj = x;
    xj(j) += h;
    e.unpack(xj);
    try {
      ++info.evaluations;
      const Step st = e.profile();
      ok = st.gradient.allFinite();
      if (ok) B.col(j) = (g - st.gradient) / h;
    } catch (const numerical_error&) {
      ok = false;
    }
    e.restore(snap);
  }
  if (!ok) return false;
  return positive_inverse(B, H);
}

// Engines whose profile objective has an exact Hessian (svgp's fixed
// design): bool exact_hessian(MatrixXd& Hinv), the inverse of the negative
// Hessian made positive definite, false when there is none at this state.
template <class E, class = void>
struct has_exact_hessian : std::false_type {};
template <class E>
struct has_exact_hessian<E, std::void_t<decltype(std::declval<const E&>().exact_hessian(std::declval<MatrixXd&>()))>>
    : std::true_type {};

// Engines whose inner solve may be looser far from a stationary point
// (natural_q.hpp): void inner_accuracy(double ratio), with ratio the
// largest projected gradient over its tolerance (0: tight), and bool
// inner_tight(), whether the current inner state was solved tightly.
// fit_profile() solves tightly at the start, then as loosely as each
// iteration's gradient allows, and tightly again before it declares a
// stationary point, before a finite-difference Hessian, and at its end.
template <class E, class = void>
struct has_inner_accuracy : std::false_type {};
template <class E>
struct has_inner_accuracy<E, std::void_t<decltype(std::declval<E&>().inner_accuracy(1.0)),
                                         decltype(std::declval<const E&>().inner_tight())>> : std::true_type {};

template <class Engine, class Monitor>
FitInfo fit_profile(Engine& e, const Settings& set, double n_obs, Monitor monitor) {
  FitInfo info;
  auto clock = Clock::now();
  e.start();
  VectorXd lo, hi;
  e.bounds(lo, hi);
  // the inner state solved tightly at the current parameters (true: it was
  // loose and cur changed; a failure keeps the loose state)
  const auto tighten = [&](Step& cur) {
    if constexpr (has_inner_accuracy<Engine>::value) {
      if (e.inner_tight()) return false;
      e.inner_accuracy(0);
      const auto snap = e.snapshot();
      try {
        ++info.evaluations;
        Step st = e.profile();
        if (!std::isfinite(st.objective) || !st.gradient.allFinite()) throw numerical_error("not finite");
        cur = std::move(st);
        return true;
      } catch (const numerical_error&) {
        e.restore(snap);
      }
    }
    return false;
  };
  if constexpr (has_inner_accuracy<Engine>::value) e.inner_accuracy(0);  // (a fit started at its optimum stops at once)
  Step cur = e.profile();
  info.evaluations = 1;
  if (!std::isfinite(cur.objective) || !cur.gradient.allFinite())
    throw numerical_error("the objective is not finite at the starting values");
  VectorXd x = e.pack();
  info.trace.push_back(cur.objective);  // at the starting parameters
  info.seconds_init = seconds_since(clock);
  clock = Clock::now();
  const double gtol = set.tol * n_obs;
  auto project = [&](const VectorXd& g) {
    VectorXd p = g;
    for (Index j = 0; j < p.size(); ++j)
      if ((x(j) >= hi(j) && p(j) > 0) || (x(j) <= lo(j) && p(j) < 0)) p(j) = 0;
    return p;
  };
  Lbfgs mem(10);
  Bfgs dense;  // (active from the finite-difference Hessian on)
  bool tried = false;
  int since = 0;  // iterations since the start or the last restart
  const auto restart = [&] {
    mem.reset();
    dense.reset();
    since = 0;
  };
  int stall = 0;
  info.stop = "iteration limit";
  for (int it = 0; it < set.max_iter; ++it) {
    VectorXd pg = project(cur.gradient);
    if (stationary(pg, gtol) && tighten(cur)) pg = project(cur.gradient);
    if (stationary(pg, gtol)) {
      info.stop = "stationary point";
      break;
    }
    const bool fd_hessian = !dense.active() && !tried && since >= kHessianAfter && x.size() <= kHessianMaxParams;
    if constexpr (has_inner_accuracy<Engine>::value) {
      if (!fd_hessian)
        e.inner_accuracy(pg.lpNorm<Eigen::Infinity>() / gtol);
      else if (tighten(cur))  // (differences of gradients need tight gradients)
        pg = project(cur.gradient);
    }
    if constexpr (has_exact_hessian<Engine>::value) {  // Newton steps: the exact Hessian at every iteration
      MatrixXd H;
      if (e.exact_hessian(H)) {
        dense.start(std::move(H));
        tried = true;
      }
    }
    if (fd_hessian && !dense.active()) {
      tried = true;  // (once per fit, and once more after the inducing inputs are fixed)
      MatrixXd H;
      if (fd_hessian_inverse(e, x, cur.gradient, lo, hi, info, H)) dense.start(std::move(H));
    }
    const std::vector<bool> held = held_at_bound(pg, cur.gradient);
    VectorXd d = dense.active() ? dense.direction(pg, held) : mem.direction(pg);
    for (Index j = 0; j < d.size(); ++j)
      if (held[static_cast<std::size_t>(j)]) d(j) = 0;
    double slope = pg.dot(d);
    if (!(slope > 0)) {
      restart();
      d = pg;
      slope = pg.squaredNorm();
    }
    // the first step moves no parameter by more than 1 (they are on log scales or standardised)
    double t = mem.empty() ? std::min(1.0, 1.0 / d.lpNorm<Eigen::Infinity>()) : 1.0;
    const auto snap = e.snapshot();
    Step st;
    bool accepted = false;
    for (int ls = 0; ls < 40 && !accepted; ++ls) {
      e.unpack((x + t * d).cwiseMax(lo).cwiseMin(hi));
      bool ok = true;
      try {
        ++info.evaluations;
        st = e.profile();
        ok = std::isfinite(st.objective) && st.gradient.allFinite();
      } catch (const numerical_error&) {
        ok = false;
      }
      if (ok && st.objective >= cur.objective + 1e-4 * t * slope) {
        accepted = true;
      } else {
        if (!ok) ++info.failures;
        e.restore(snap);
        t *= ok ? 0.5 : 0.1;
      }
    }
    if (!accepted) {
      if (!mem.empty() || dense.active()) {  // retry along the gradient itself
        restart();
        continue;
      }
      info.stop = "no step along the gradient increases the objective";
      break;
    }
    const VectorXd xn = e.pack();
    const VectorXd sv = xn - x, yv = cur.gradient - st.gradient;
    mem.update(sv, yv);
    dense.update(sv, yv);
    ++since;
    const double gain = st.objective - cur.objective;
    x = xn;
    cur = st;
    info.trace.push_back(cur.objective);
    info.iterations = it + 1;
    if (!monitor(it + 1, cur.objective)) {
      info.stop = "stopped by the monitor";
      break;
    }
    if (info.iterations == set.inducing_iterations && e.fix_inducing()) {
      x = e.pack();
      e.bounds(lo, hi);
      cur = e.profile();
      ++info.evaluations;
      restart();
      tried = false;  // (fewer parameters now: a Hessian may be affordable)
      stall = 0;
      continue;
    }
    if (gain <= 1e-13 * (1.0 + std::abs(cur.objective))) {
      if (++stall >= 5) {
        info.stop = "the objective stopped increasing";
        break;
      }
    } else {
      stall = 0;
    }
  }
  tighten(cur);  // (the final state solved tightly)
  info.seconds_iter = seconds_since(clock);
  info.objective = cur.objective;
  info.gradient = cur.gradient;
  info.converged = stationary(project(cur.gradient), gtol);
  if (info.converged) info.stop = "stationary point";
  e.finish_profile(info);
  return info;
}

}  // namespace scalegp
