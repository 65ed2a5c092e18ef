// Expectation propagation for GP classification with a probit likelihood
// (Hernandez-Lobato and Hernandez-Lobato 2016, "Scalable Gaussian process
// classification via expectation propagation").  The engine's parts:
//   ep_site.hpp       the probit site (tilted moments, derivatives)
//   ep_model.hpp      the sites, q and the passes over rows
//   ep_minibatch.hpp  minibatch EP, per-row or tied sites
//   this file         batch EP, in one process or distributed, and fit_ep()
//
// Batch EP: by default L-BFGS on the hyperparameters, with the sites
// converged by damped parallel sweeps at each value (so that the gradient
// of the evidence is exact); or (EpSettings::inner) the paper's "inner"
// scheme: every iteration refines all sites in parallel (damped), takes one
// Adam step on the hyperparameters along the gradient of the EP log
// evidence, then rebuilds q from the committed sites.  Distributed EP runs the same passes over shards held
// elsewhere: `reduce` returns the summed accumulator of a pass wherever the
// rows live.
#pragma once
#include <limits>

#include "ep_minibatch.hpp"

namespace scalegp {

// `reduce(kind, rho, sites)` runs a pass over all rows and returns the
// summed accumulator (Ep::reduce_local in one process).
template <class Reduce>
class EpBatch {
 public:
  EpBatch(Ep& ep, Reduce reduce) : ep_(ep), reduce_(std::move(reduce)), rho_(ep.opt.damping > 0 ? ep.opt.damping : 0.5) {}

  // n_total: the number of rows (held here or on the workers of a cluster).
  // By default L-BFGS on the evidence of EP converged at each value of the
  // hyperparameters (fit_profile()); with opt.inner the paper's scheme of one
  // damped sweep and one Adam step per iteration (fit_loop()).
  template <class Monitor>
  FitInfo fit(std::size_t n_total, Rng& rng, Monitor monitor) {
    if (!ep_.opt.inner) return fit_profile(*this, ep_.set, static_cast<double>(n_total), monitor);
    Sampler sampler(Sampler::Mode::full, n_total, 0, rng);
    warmup_ = static_cast<int>(std::ceil(5.0 / rho_));  // sweeps before the first hyperparameter step
    return fit_loop(*this, sampler, ep_.set, monitor);
  }

  // ---- the engine interface of fit_profile() -------------------------------------
  // The inner state is the sites: profile() runs damped parallel sweeps until
  // no site moves by more than 1e-8 (at most 500), then returns the evidence
  // and its gradient (exact at the fixed point) and saves the sites;
  // restore() loads them.
  void bounds(VectorXd& lo, VectorXd& hi) const {
    lo.resize(ep_.n_hyper());
    hi.resize(ep_.n_hyper());
    ep_.hyper_bounds(lo, hi);
  }
  void start() { ep_.set_q(reduce_(Ep::Pass::q, 0.0, Ep::Sites::keep)); }
  // (the workers of a cluster hold their own settings: never staged here)
  bool fix_inducing() { return false; }
  // Where the sweeps end does not depend on their damping, only how fast
  // they get there.  With automatic damping they start undamped.  Two sweeps
  // running that move the sites back along the move before (ratio r of the
  // projection below -0.9) show an oscillating mode whose rate lambda under
  // undamped sweeps follows from r = rho (1 / rho_before + lambda - 1); the
  // damping becomes 1 / (1 - lambda), which removes that mode (damped sweeps
  // multiply it by 1 - rho + rho lambda).  A sweep that leaves an invalid
  // cavity is taken back and the damping halved.  The damping stays for
  // later evaluations.
  Step profile() {
    ep_.refresh_prior();
    ep_.set_q(reduce_(Ep::Pass::q, 0.0, Ep::Sites::keep));
    const bool adapt = !(ep_.opt.damping > 0);
    constexpr double kMinRho = 1.0 / 64;
    double last_rho = 0;  // damping of the last sweep committed here (0: none yet)
    double last_r = 0;    // r of that sweep
    for (int k = 0; k < 500; ++k) {
      const EpAccum a = reduce_(Ep::Pass::sweep, sweep_rho_, Ep::Sites::keep);
      if (!std::isfinite(ep_.log_evidence(a))) {
        if (!adapt || last_rho == 0 || sweep_rho_ <= kMinRho) throw numerical_error("a non-finite EP evidence");
        sweep_rho_ = std::max(kMinRho, 0.5 * sweep_rho_);
        ep_.set_q(reduce_(Ep::Pass::q, 0.0, Ep::Sites::restore));
        last_rho = last_r = 0;
        continue;
      }
      ep_.set_q(reduce_(Ep::Pass::q, 0.0, Ep::Sites::commit));
      last_change_ = a.change;
      if (a.change < 1e-8) break;
      const double rho = sweep_rho_;
      const double r = last_rho > 0 && a.last_sq > 0 ? a.turn / a.last_sq : 0.0;
      if (adapt && r < -0.9 && last_r < -0.9) {
        const double lambda = 1.0 + r / rho - 1.0 / last_rho;
        if (lambda < 0) sweep_rho_ = std::max(kMinRho, std::min(rho, 1.0 / (1.0 - lambda)));
      }
      last_r = r;
      last_rho = rho;
    }
    const bool grad = ep_.n_hyper() > 0;
    const EpAccum a = reduce_(grad ? Ep::Pass::sweep_grad : Ep::Pass::sweep, 0.0, Ep::Sites::save);
    Step st;
    st.gradient = grad ? ep_.hyper_gradient(a.PtPb, a.grad, 1.0) : VectorXd();
    st.objective = ep_.log_evidence(a) + ep_.log_prior(grad ? &st.gradient : nullptr);
    return st;
  }
  // The fit maximised the evidence plus the log prior: report them apart.
  void finish_profile(FitInfo& info) const {
    info.q_change = last_change_;
    info.log_prior = ep_.log_prior();
    info.objective -= info.log_prior;
  }

  // ---- the engine interface of fit_loop() ---------------------------------------
  struct Snapshot {
    VectorXd theta;
    long commits;
  };
  int warmup() const { return warmup_; }
  int stop_warmup() const { return warmup_; }
  // without hyperparameters to learn, EP stops when no site moves by 1e-8
  bool own_stop() const { return ep_.n_hyper() == 0; }
  Index n_theta() const { return ep_.n_hyper(); }
  VectorXd pack() const { return ep_.hyper(); }
  void unpack(const VectorXd& th) { ep_.unpack_hyper(th); }
  void back_off() { rho_ *= 0.5; }
  Snapshot snapshot() const { return {pack(), commits_}; }

  void initialise(const Sampler&) { ep_.set_q(reduce_(Ep::Pass::q, 0.0, Ep::Sites::keep)); }

  Step step(const Sampler&, bool grad) {
    const EpAccum a = reduce_(grad ? Ep::Pass::sweep_grad : Ep::Pass::sweep, rho_, Ep::Sites::keep);
    Step st;
    st.done = a.change < 1e-8;
    if (grad) st.gradient = ep_.hyper_gradient(a.PtPb, a.grad, 1.0);
    st.objective = ep_.log_evidence(a) + ep_.log_prior(grad ? &st.gradient : nullptr);
    return st;
  }

  void update(const Step& st) {
    if (st.gradient.size()) ep_.refresh_prior();
    ++commits_;
    ep_.set_q(reduce_(Ep::Pass::q, 0.0, Ep::Sites::commit));
  }

  // Back to the parameters and sites of a snapshot: in the inner scheme the
  // sites committed since it are undone; with L-BFGS the sites saved by the
  // last profile() are loaded.
  void restore(const Snapshot& s) {
    unpack(s.theta);
    ep_.refresh_prior();
    const Ep::Sites sites = !ep_.opt.inner ? Ep::Sites::load
                            : commits_ > s.commits ? Ep::Sites::restore
                                                   : Ep::Sites::keep;
    commits_ = s.commits;
    ep_.set_q(reduce_(Ep::Pass::q, 0.0, sites));
  }

  void finish(FitInfo& info) {
    ep_.report(reduce_(ep_.n_hyper() > 0 ? Ep::Pass::sweep_grad : Ep::Pass::sweep, 0.0, Ep::Sites::keep), info);
  }

 private:
  Ep& ep_;
  Reduce reduce_;
  double rho_;
  double sweep_rho_ = ep_.opt.damping > 0 ? rho_ : 1.0;  // damping of profile()'s sweeps
  int warmup_ = 0;
  long commits_ = 0;
  double last_change_ = 0;
};

template <class Reduce>
EpBatch<Reduce> ep_batch(Ep& ep, Reduce reduce) {
  return EpBatch<Reduce>(ep, std::move(reduce));
}

// EP on the rows held by `ep`: batch EP, or minibatch EP when
// set.batch_size is below the number of rows.
template <class Monitor>
FitInfo fit_ep(Ep& ep, const ParallelFor& pfor, Rng& rng, Monitor monitor) {
  if (ep.set.batch_size == 0 || ep.set.batch_size >= ep.n()) {
    auto driver = ep_batch(ep, [&](Ep::Pass k, double rho, Ep::Sites s) { return ep.reduce_local(k, rho, s, pfor); });
    return driver.fit(ep.n(), rng, monitor);
  }
  EpMinibatch driver(ep, pfor);
  return driver.fit(rng, monitor);
}

}  // namespace scalegp
