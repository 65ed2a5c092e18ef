// Optimisers: Adam (gradient ascent on the objective) and the stopping rule.
#pragma once
#include "linalg.hpp"
#include <limits>

namespace scalegp {

class Adam {
 public:
  explicit Adam(double lr = 0.01, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8)
      : lr_(lr), b1_(b1), b2_(b2), eps_(eps) {}
  void scale_rate(double f) { lr_ *= f; }
  double rate() const { return lr_; }
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
    m_ = b1_ * m_ + (1 - b1_) * g;
    v_ = b2_ * v_ + (1 - b2_) * g.cwiseProduct(g);
    const double c1 = 1 - std::pow(b1_, t_), c2 = 1 - std::pow(b2_, t_);
    x.array() += lr_ * (m_.array() / c1) / ((v_.array() / c2).sqrt() + eps_);
  }

 private:
  double lr_, b1_, b2_, eps_;
  VectorXd m_, v_;
  int t_ = 0;
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

}  // namespace scalegp
