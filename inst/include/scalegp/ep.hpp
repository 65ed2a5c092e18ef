// Expectation propagation for GP classification with a probit likelihood
// (Hernandez-Lobato and Hernandez-Lobato 2016, "Scalable Gaussian process
// classification via expectation propagation").  The engine's parts:
//   ep_site.hpp       the probit site (tilted moments, derivatives)
//   ep_model.hpp      the sites, q and the passes over rows
//   ep_minibatch.hpp  minibatch EP, per-row or tied sites
//   this file         batch EP, in one process or distributed, and fit_ep()
//
// Batch EP: every iteration refines all sites in parallel (damped), then
// takes one Adam step on the hyperparameters along the gradient of the EP
// log evidence (the paper's "inner" scheme), then rebuilds q from the
// committed sites.  Distributed EP runs the same passes over shards held
// elsewhere: `reduce` returns the summed accumulator of a pass wherever the
// rows live.
#pragma once
#include "ep_minibatch.hpp"

namespace scalegp {

// `reduce(kind, rho, sites)` runs a pass over all rows and returns the
// summed accumulator (Ep::reduce_local in one process).
template <class Reduce>
class EpBatch {
 public:
  EpBatch(Ep& ep, Reduce reduce) : ep_(ep), reduce_(std::move(reduce)), rho_(ep.opt.damping > 0 ? ep.opt.damping : 0.5) {}

  // n_total: the number of rows (held here or on the workers of a cluster).
  template <class Monitor>
  FitInfo fit(std::size_t n_total, Rng& rng, Monitor monitor) {
    Sampler sampler(Sampler::Mode::full, n_total, 0, rng);
    warmup_ = static_cast<int>(std::ceil(5.0 / rho_));  // sweeps before the first hyperparameter step
    return fit_loop(*this, sampler, ep_.set, monitor);
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
    st.objective = ep_.log_evidence(a);
    st.done = a.change < 1e-8;
    if (grad) st.gradient = ep_.hyper_gradient(a.PtPb, a.grad, 1.0);
    return st;
  }

  void update(const Step& st) {
    if (st.gradient.size()) ep_.refresh_prior();
    ++commits_;
    ep_.set_q(reduce_(Ep::Pass::q, 0.0, Ep::Sites::commit));
  }

  // Back to the parameters and sites of a snapshot (the sites committed
  // since it are undone).
  void restore(const Snapshot& s) {
    unpack(s.theta);
    ep_.refresh_prior();
    const Ep::Sites sites = commits_ > s.commits ? Ep::Sites::restore : Ep::Sites::keep;
    commits_ = s.commits;
    ep_.set_q(reduce_(Ep::Pass::q, 0.0, sites));
  }

  void finish(FitInfo& info) {
    const bool grad = ep_.n_hyper() > 0;
    const EpAccum a = reduce_(grad ? Ep::Pass::sweep_grad : Ep::Pass::sweep, 0.0, Ep::Sites::keep);
    info.objective = ep_.log_evidence(a);
    if (grad) info.gradient = ep_.hyper_gradient(a.PtPb, a.grad, 1.0);
  }

 private:
  Ep& ep_;
  Reduce reduce_;
  double rho_;
  int warmup_ = 0;
  long commits_ = 0;
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
