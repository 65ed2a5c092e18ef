// Sparse variational GP (SVGP; Hensman et al. 2013, 2015) for the additive
// predictor of model.hpp, with one coupled Gaussian q(v) over the whitened
// inducing variables of all components (the coupled posterior of Adam,
// Durrande and John 2018, "Scalable GAM using sparse variational Gaussian
// processes", full rank), or block-diagonal (`meanfield`, Saul et
// al. 2016), or with a low-rank precision (`rank`).  This file holds the
// engine: which driver of fit_loop.hpp runs the fit and what it calls.  All
// rows per iteration (the default): L-BFGS/BFGS on the hyperparameters and
// the noise with q optimal at each value (fit_profile(); profile()).
// Minibatches, or opt.lbfgs false: natural-gradient steps on q and Adam
// steps on the hyperparameters (fit_loop(); step(), update()).  q and its
// updates are NaturalQ's (natural_q.hpp), the pass over the data DataPass's
// (data_pass.hpp: rows, discretised values, or the workers of a cluster).
//
// In whitened coordinates, with Q = Phi' diag(gamma) Phi, r = Phi' g and the
// per-row derivatives g = dE/dmu, gamma = dE/ds2 of the expected
// log-likelihood, the natural-gradient target is
//   P* = I - 2 s Q,  h* = s (r - 2 Q m),
// and the gradient of the ELBO w.r.t. the features is
//   Phibar = g m' + 2 diag(gamma) (Phi S - Phi)   (Hensman et al. 2015, eqs. 8-9, whitened).
#pragma once
#include "fit_loop.hpp"
#include "natural_q.hpp"

namespace scalegp {

class Svgp : public NaturalQ {
 public:
  Svgp(std::vector<Component> components, Likelihood likelihood, Settings settings, SvgpSettings options,
       const double* X, std::size_t n, std::size_t p, const double* y, const double* w, const double* offset)
      : NaturalQ(std::move(components), std::move(likelihood), settings, options, X, n, p, y, w, offset) {}

  // ELBO on all rows at the current state.
  double elbo(const ParallelFor& pfor) const { return evaluate(nullptr, Pass::elbo, pfor).sum_v - kl(); }

  // ---- the fit (fit_loop.hpp) ---------------------------------------------------
  // `monitor(iteration, objective)` is called on the calling thread after every
  // iteration (interrupts, progress); returning false stops the fit.
  // Full batch: L-BFGS on the hyperparameters with q optimal at each value
  // (fit_profile()); minibatches (or opt.lbfgs false): natural-gradient
  // steps on q and Adam steps on the hyperparameters (fit_loop()).
  template <class Monitor>
  FitInfo fit(const ParallelFor& pfor, Rng& rng, Monitor monitor) {
    Sampler sampler = begin_fit(pfor, rng);
    data_.use_discrete(full_);
    if (full_ && opt.lbfgs) return fit_profile(*this, set, static_cast<double>(n()), monitor);
    return fit_loop(*this, sampler, set, monitor);
  }

  // ---- the engine interface of fit_loop() and fit_profile() ---------------------------
  Snapshot snapshot() const { return snapshot_with(pack()); }
  void restore(const Snapshot& s) {
    unpack(s.theta);
    restore_q(s);
  }
  void initialise(const Sampler& sampler) { initial_q(sampler); }

  void start() {
    Sampler all(Sampler::Mode::full, n(), 0, dummy_rng_);
    initialise(all);
  }

  // q optimal at the current hyperparameters, then the ELBO and its gradient.
  // Gaussian, full rank: exact in one step (coupled: a natural step of size
  // 1; mean field: gaussian_meanfield_optimum()).  Otherwise: damped
  // natural steps to convergence (optimise_q()).
  Step profile() {
    std::vector<MatrixXd> old_L;
    for (const ComponentPrior& p : prior_) old_L.push_back(p.L);
    refresh_prior();
    PassSums acc;
    if (lik.family == Family::gaussian && opt.rank == 0) {
      const VectorXd m0 = m;
      if (opt.meanfield)
        gaussian_meanfield_optimum(evaluate(nullptr, Pass::natural, *pfor_));
      else
        natural_step(evaluate(nullptr, Pass::natural, *pfor_), 1.0, 1.0);
      refresh_q();
      q_change_ = (m - m0).lpNorm<Eigen::Infinity>();
    } else {
      if (opt.rank == 0) keep_inducing_values(old_L);
      bool has_gradient = false;
      const VectorXd m0 = optimise_q<PassSums>(
          [this](PassSums& a, bool grad) {
            a = evaluate(nullptr, grad ? Pass::gradient : Pass::natural, *pfor_);
            return a.sum_v - kl();
          },
          [this](const PassSums& a, double rho) { natural_step(a, 1.0, rho); }, acc, has_gradient);
      q_change_ = (m - m0).lpNorm<Eigen::Infinity>();
      if (has_gradient) return profile_step(acc);
    }
    return profile_step(evaluate(nullptr, Pass::gradient, *pfor_));
  }

  // The result of profile() from a gradient pass at the final q.
  Step profile_step(const PassSums& acc) {
    Step st;
    st.gradient = gradient(acc, 1.0);
    st.objective = acc.sum_v - kl() + log_prior(&st.gradient);
    return st;
  }

  Step step(const Sampler& sampler, bool grad) {
    acc_ = evaluate(sampler.rows(), grad, *pfor_);
    Step st;
    if (grad) st.gradient = gradient(acc_, sampler.scale());
    st.objective = sampler.scale() * acc_.sum_v - kl() + log_prior(grad ? &st.gradient : nullptr);
    scale_ = sampler.scale();
    return st;
  }

  void update(const Step&) {
    natural_step(acc_, scale_, rho_);
    refresh();
  }

  // Gaussian: one full-data step gives the optimal q for the final
  // hyperparameters (a natural step of size 1; mean field:
  // gaussian_meanfield_optimum()).  Other likelihoods after minibatches: damped
  // full-data natural steps remove the minibatch noise from q (until the
  // ELBO gains less than tol per observation; at most 10).
  void finish(FitInfo& info) {
    if (lik.family == Family::gaussian) {
      const PassSums acc = evaluate(nullptr, false, *pfor_);
      if (opt.meanfield && opt.rank == 0)
        gaussian_meanfield_optimum(acc);
      else
        natural_step(acc, 1.0, 1.0);
      refresh();
    } else if (!full_) {
      settle_q<PassSums>(
          [this](PassSums& acc) {
            acc = evaluate(nullptr, false, *pfor_);
            return acc.sum_v - kl();
          },
          [this](const PassSums& acc, double rho) { natural_step(acc, 1.0, rho); });
    }
    info.objective = elbo(*pfor_);
    info.log_prior = log_prior();
    if (n_theta() > 0) {
      info.gradient = gradient(evaluate(nullptr, Pass::gradient, *pfor_), 1.0);
      log_prior(&info.gradient);
    }
  }

 private:
  double scale_ = 1;
  PassSums acc_;
};

}  // namespace scalegp
