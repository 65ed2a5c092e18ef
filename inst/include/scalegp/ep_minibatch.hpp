// Minibatch EP (stochastic updates of per-row sites, the minibatch scheme of
// Hernandez-Lobato and Hernandez-Lobato 2016) and minibatch EP with one tied
// site (stochastic EP, Li et al. 2015), as engines of the shared fit loop.
//
// Fixed blocks of rows (the data permuted once) are visited in random order
// each epoch.  Per block: refine its sites against the current q and put
// them into q (P, h: rank-|block| updates), then one Adam step with the
// gradient of the block scaled by N / |block|.  A site enters q with its
// features at the hyperparameters of its last refinement; instead of storing
// those features (O(NM) memory, as the paper does) a block keeps the packed
// hyperparameters of its last visit and recomputes them.  With tied sites
// all rows share one average site (precision Lbar, shift hbar).
#pragma once
#include "ep_model.hpp"
#include "fit_loop.hpp"

namespace scalegp {

class EpMinibatch {
 public:
  EpMinibatch(Ep& ep, const ParallelFor& pfor)
      : ep_(ep), pfor_(pfor), rho_(ep.opt.damping > 0 ? ep.opt.damping : 0.99) {}

  template <class Monitor>
  FitInfo fit(Rng& rng, Monitor monitor) {
    Sampler sampler(Sampler::Mode::blocks, ep_.n(), ep_.set.batch_size, rng);
    prepare(sampler);
    return fit_loop(*this, sampler, ep_.set, monitor);
  }

  // The driver's state for the blocks of `sampler` (done by fit()).
  void prepare(const Sampler& sampler) {
    nblocks_ = sampler.per_epoch();
    scale_ = sampler.scale();
    // blocks refined before the first hyperparameter step (the paper steps
    // from the first block; waiting for a whole epoch slows it down)
    warmup_ = static_cast<int>(std::min<double>(static_cast<double>(nblocks_), std::ceil(5.0 / rho_)));
    if (!ep_.opt.tied) {
      theta_at_.assign(nblocks_, VectorXd());
      visited_.assign(nblocks_, 0);
    }
    const Index Mt = ep_.total_size();
    Lbar_ = MatrixXd::Zero(Mt, Mt);
    hbar_ = VectorXd::Zero(Mt);
  }

  // ---- the engine interface of fit_loop() ---------------------------------------
  struct Snapshot {
    MatrixXd P, Lbar;
    VectorXd h, hbar, theta;
    long steps;
  };
  int warmup() const { return warmup_; }
  int stop_warmup() const { return static_cast<int>(nblocks_); }
  bool own_stop() const { return false; }
  Index n_theta() const { return ep_.n_hyper(); }
  VectorXd pack() const { return ep_.hyper(); }
  void unpack(const VectorXd& th) { ep_.unpack_hyper(th); }
  void initialise(const Sampler&) {}
  void back_off() { rho_ *= 0.5; }

  Snapshot snapshot() const { return {ep_.P, Lbar_, ep_.h, hbar_, pack(), steps_}; }

  // Back to a snapshot.  One taken before the current block's step: the
  // block's sites are put back as they were; one taken after it: the block
  // keeps its new sites, which carry its features at the restored parameters.
  void restore(const Snapshot& s) {
    if (pending_ && s.steps != steps_) {
      for (Index i = 0; i < nu0_.size(); ++i) {
        ep_.nu(idx_[static_cast<std::size_t>(i)]) = nu0_(i);
        ep_.mu(idx_[static_cast<std::size_t>(i)]) = mu0_(i);
      }
    } else if (pending_ && !ep_.opt.tied) {
      theta_at_[block_] = theta0_;
      visited_[block_] = 1;
    }
    pending_ = false;
    ep_.P = s.P;
    ep_.h = s.h;
    Lbar_ = s.Lbar;
    hbar_ = s.hbar;
    unpack(s.theta);
    ep_.refresh();
  }

  Step step(const Sampler& sampler, bool grad) {
    ++steps_;
    block_ = sampler.block();
    idx_ = *sampler.rows();
    Block b;
    ep_.gather(b, &idx_, 0, idx_.size());
    ep_.features(b);
    nu0_.resize(b.Phi.rows());
    mu0_.resize(b.Phi.rows());
    for (Index i = 0; i < nu0_.size(); ++i) {
      nu0_(i) = ep_.nu(idx_[static_cast<std::size_t>(i)]);
      mu0_(i) = ep_.mu(idx_[static_cast<std::size_t>(i)]);
    }
    theta0_ = pack();
    pending_ = true;
    EpAccum acc = ep_.make_accum(Ep::Pass::sweep_grad);
    const double N = static_cast<double>(ep_.n());
    Step st;
    if (ep_.opt.tied) {
      // shared cavity: all but one copy of the tied site
      const double gap = ep_.set_cavity(Lbar_, hbar_, N - 1.0);  // g(q) - g(cavity)
      ep_.site_terms(b, &idx_, 0, acc, 1.0, grad, true);
      const double g_q = -0.5 * ep_.logdet_P() + 0.5 * ep_.h.dot(ep_.m);
      // (1 - N) g(q) + N g(cavity) + the scaled site terms
      st.objective = g_q - N * gap + scale_ * acc.log_z;
      const double eps = rho_ / static_cast<double>(nblocks_);
      const Index Mt = ep_.total_size();
      MatrixXd Qb = MatrixXd::Zero(Mt, Mt);
      VectorXd rb = VectorXd::Zero(Mt);
      ep_.add_sites(b, &idx_, 0, ep_.nu, ep_.mu, 1.0, Qb, rb);
      Lbar_ = (1.0 - eps) * Lbar_ +
              (eps / static_cast<double>(idx_.size())) * MatrixXd(Qb.selfadjointView<Eigen::Lower>());
      hbar_ = (1.0 - eps) * hbar_ + (eps / static_cast<double>(idx_.size())) * rb;
      ep_.P = N * Lbar_;
      ep_.P.diagonal().array() += 1.0;
      ep_.h = N * hbar_;
      ep_.refresh_q();
    } else {
      ep_.refine_block(b, idx_, visited_[block_] ? &theta_at_[block_] : nullptr, rho_);
      ep_.site_terms(b, &idx_, 0, acc, 0.0, grad, false);  // at the updated q; rho = 0 keeps the sites
      st.objective = -0.5 * ep_.logdet_P() + 0.5 * ep_.h.dot(ep_.m) + scale_ * acc.log_z;
    }
    if (grad) st.gradient = ep_.hyper_gradient(acc.PtPb, acc.grad, scale_);
    st.objective += ep_.log_prior(grad ? &st.gradient : nullptr);
    return st;
  }

  void update(const Step& st) {
    if (st.gradient.size()) ep_.refresh_prior();
    if (!ep_.opt.tied) {  // the block's sites now carry the features at theta0
      theta_at_[block_] = theta0_;
      visited_[block_] = 1;
    }
    pending_ = false;
  }

  // Final full-data passes at the final hyperparameters: per-row sites
  // (from the tied cavity), q rebuilt consistently, damped parallel sweeps
  // until no site moves by more than 1e-3 (at most 10), the evidence.
  void finish(FitInfo& info) {
    using Pass = Ep::Pass;
    using Sites = Ep::Sites;
    if (ep_.opt.tied) {
      ep_.set_cavity(Lbar_, hbar_, static_cast<double>(ep_.n()) - 1.0);
      ep_.reduce_local(Pass::tied, 1.0, Sites::keep, pfor_);
    }
    ep_.set_q(ep_.reduce_local(Pass::q, 0.0, Sites::keep, pfor_));
    for (int k = 0; k < 10; ++k) {
      const EpAccum a = ep_.reduce_local(Pass::sweep, 0.5, Sites::keep, pfor_);
      ep_.set_q(ep_.reduce_local(Pass::q, 0.0, Sites::commit, pfor_));
      if (a.change < 1e-3) break;
    }
    ep_.report(ep_.reduce_local(ep_.n_hyper() > 0 ? Pass::sweep_grad : Pass::sweep, 0.0, Sites::keep, pfor_), info);
  }

 private:
  Ep& ep_;
  const ParallelFor& pfor_;
  double rho_, scale_ = 1;
  std::size_t nblocks_ = 1;
  int warmup_ = 0;
  std::vector<VectorXd> theta_at_;  // per block: the parameters of its sites' features
  std::vector<char> visited_;
  MatrixXd Lbar_;  // tied site: average of nu w w' and of mu w
  VectorXd hbar_;
  // the block of the current step, for undoing it
  long steps_ = 0;
  bool pending_ = false;
  std::size_t block_ = 0;
  std::vector<std::size_t> idx_;
  VectorXd nu0_, mu0_, theta0_;
};

}  // namespace scalegp
