// Optimisers: Adam (gradient ascent on the objective) and the stopping rule.
#pragma once
#include "linalg.hpp"
#include <limits>
#include <vector>

namespace scalegp {

class Adam {
 public:
  explicit Adam(double lr = 0.01, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8)
      : lr_(lr), b1_(b1), b2_(b2), eps_(eps) {}
  void scale_rate(double f) { lr_ *= f; }
  double rate() const { return lr_; }
  // Step size lr / (1 + decay sqrt(t)) at the t-th step (Cheng and Boots
  // 2017; t counts every step, also across reset()); 0: constant.
  void set_decay(double decay) { decay_ = decay; }
  // Its whole state (step size, moment estimates, step counts), for a later
  // call to go on where this one stopped (dgp() on data read in chunks).
  struct State {
    double lr = 0;  // 0: no state (a fresh optimiser)
    VectorXd m, v;
    int t = 0;
    long steps = 0;
  };
  State state() const { return State{lr_, m_, v_, t_, steps_}; }
  void restore(const State& s) {
    if (!(s.lr > 0)) return;
    lr_ = s.lr, m_ = s.m, v_ = s.v, t_ = s.t, steps_ = s.steps;
  }
  // Forgets the moment estimates (after a step was undone: they hold its gradient).
  void reset() {
    m_.resize(0);
    v_.resize(0);
    t_ = 0;
  }
  // One ascent step x += lr * mhat / (sqrt(vhat) + eps) for gradient g.
  void step(Eigen::Ref<VectorXd> x, const VectorXd& g) {
    if (m_.size() != g.size()) {
      m_ = VectorXd::Zero(g.size());
      v_ = VectorXd::Zero(g.size());
      t_ = 0;
    }
    ++t_;
    ++steps_;
    m_ = b1_ * m_ + (1 - b1_) * g;
    v_ = b2_ * v_ + (1 - b2_) * g.cwiseProduct(g);
    const double c1 = 1 - std::pow(b1_, t_), c2 = 1 - std::pow(b2_, t_);
    const double lr = decay_ > 0 ? lr_ / (1.0 + decay_ * std::sqrt(static_cast<double>(steps_))) : lr_;
    x.array() += lr * (m_.array() / c1) / ((v_.array() / c2).sqrt() + eps_);
  }

 private:
  double lr_, b1_, b2_, eps_, decay_ = 0;
  VectorXd m_, v_;
  int t_ = 0;
  long steps_ = 0;
};

// Stops when the per-epoch mean objective has not improved by more than
// `tol` (per observation) on `patience` consecutive epochs.
class Stopper {
 public:
  Stopper(double tol, int patience, double n_obs) : tol_(tol * n_obs), patience_(patience) {}
  // Adds one epoch mean; returns true when the rule says stop.
  bool add_epoch(double value) {
    if (value > best_ + tol_) {
      best_ = value;
      bad_ = 0;
    } else {
      ++bad_;
    }
    return bad_ >= patience_;
  }

 private:
  double tol_;
  int patience_;
  double best_ = -std::numeric_limits<double>::infinity();
  int bad_ = 0;
};

// Whether a step s with gradient change y (of -f) has the positive
// curvature (s'y > 0, relative to their sizes) a BFGS update needs.
inline bool positive_curvature(const VectorXd& s, const VectorXd& y) {
  return s.dot(y) > 1e-12 * s.norm() * y.norm();
}

// Parameters held at a bound: those whose projected gradient pg is zero
// while the gradient g is not (the step leaves them where they are).
inline std::vector<bool> held_at_bound(const VectorXd& pg, const VectorXd& g) {
  std::vector<bool> held(static_cast<std::size_t>(pg.size()));
  for (Index j = 0; j < pg.size(); ++j) held[static_cast<std::size_t>(j)] = pg(j) == 0 && g(j) != 0;
  return held;
}

// Limited-memory BFGS (Nocedal and Wright 2006, Algorithm 7.4) for
// maximising f: keeps the last `m` pairs s = x1 - x0, y = g0 - g1 (the
// change of the gradient of -f) and turns a gradient of f into an ascent
// direction by the two-loop recursion.
class Lbfgs {
 public:
  explicit Lbfgs(int m = 10) : m_(m) {}
  void reset() {
    s_.clear();
    y_.clear();
  }
  bool empty() const { return s_.empty(); }
  // Keeps a pair when it has positive curvature (s'y > 0).
  void update(const VectorXd& s, const VectorXd& y) {
    if (!positive_curvature(s, y)) return;
    s_.push_back(s);
    y_.push_back(y);
    if (static_cast<int>(s_.size()) > m_) {
      s_.erase(s_.begin());
      y_.erase(y_.begin());
    }
  }
  // H g with H the inverse-Hessian approximation of -f (an ascent direction for f).
  VectorXd direction(const VectorXd& g) const {
    const std::size_t k = s_.size();
    VectorXd q = g;
    std::vector<double> alpha(k), rho(k);
    for (std::size_t i = k; i-- > 0;) {
      rho[i] = 1.0 / s_[i].dot(y_[i]);
      alpha[i] = rho[i] * s_[i].dot(q);
      q -= alpha[i] * y_[i];
    }
    if (k > 0) q *= s_[k - 1].dot(y_[k - 1]) / y_[k - 1].squaredNorm();
    for (std::size_t i = 0; i < k; ++i) {
      const double beta = rho[i] * y_[i].dot(q);
      q += (alpha[i] - beta) * s_[i];
    }
    return q;
  }

 private:
  int m_;
  std::vector<VectorXd> s_, y_;
};

// Dense BFGS for maximising f (Nocedal and Wright 2006, eq. 6.17): the
// inverse-Hessian approximation H of -f, started from a given matrix (a
// finite-difference Hessian's inverse, fit_loop.hpp) and updated with the
// pairs of positive curvature, as Lbfgs keeps them.
class Bfgs {
 public:
  void start(MatrixXd H) {
    H_ = std::move(H);
    active_ = true;
  }
  void reset() { active_ = false; }
  bool active() const { return active_; }
  void update(const VectorXd& s, const VectorXd& y) {
    if (!active_ || !positive_curvature(s, y)) return;
    const double sy = s.dot(y);
    const VectorXd Hy = H_ * y;
    const double yHy = y.dot(Hy);
    H_ += ((sy + yHy) / (sy * sy)) * s * s.transpose() - (Hy * s.transpose() + s * Hy.transpose()) / sy;
    H_ = 0.5 * (H_ + H_.transpose());
  }
  // The ascent direction H pg for the projected gradient pg; with
  // parameters held at a bound (held_at_bound()), the Newton direction in
  // the others, B_FF^-1 pg_F with B = H^-1 and F the free parameters (not
  // the rows F of H pg, which still carry the curvature of the held ones),
  // and 0 for the held ones.
  VectorXd direction(const VectorXd& pg, const std::vector<bool>& held) const {
    std::vector<Index> f;
    for (Index j = 0; j < pg.size(); ++j)
      if (!held[static_cast<std::size_t>(j)]) f.push_back(j);
    const Index p = pg.size(), nf = static_cast<Index>(f.size());
    if (nf == p) return H_ * pg;
    VectorXd d = VectorXd::Zero(p);
    if (nf == 0) return d;
    const MatrixXd B = H_.ldlt().solve(MatrixXd::Identity(p, p));
    MatrixXd Bf(nf, nf);
    VectorXd gf(nf);
    for (Index a = 0; a < nf; ++a) {
      gf(a) = pg(f[a]);
      for (Index b = 0; b < nf; ++b) Bf(a, b) = B(f[a], f[b]);
    }
    const VectorXd df = Bf.ldlt().solve(gf);
    for (Index a = 0; a < nf; ++a) d(f[a]) = df(a);
    return d;
  }

 private:
  MatrixXd H_;
  bool active_ = false;
};

}  // namespace scalegp
