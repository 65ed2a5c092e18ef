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
// A fixed design (every component hilbert, factor or linear; Gaussian, all
// rows, coupled full-rank q): a row's features are phi = d(theta) .* psi
// with psi fixed (the sines, a level's indicator, the parametric columns,
// times a by value), so the data enter only through G = sum w psi psi',
// b = sum w (y - o) psi and the totals of DataPass::gaussian_totals(),
// formed once per fit by one pass at unit scales (fixed_statistics()).  Each
// evaluation of the profile objective then passes over no data and costs
// O(M^3) in the number of weights M (fixed_profile()).
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
    fixed_.reset();
    if (full_ && opt.lbfgs && fixed_design()) fixed_ = std::make_shared<const FixedStatistics>(fixed_statistics());
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

  // (a fixed design: q follows in closed form in fixed_profile(), no pass)
  void start() {
    if (fixed_) return;
    Sampler all(Sampler::Mode::full, n(), 0, dummy_rng_);
    initialise(all);
  }

  // q optimal at the current hyperparameters, then the ELBO and its gradient.
  // Gaussian, full rank: exact in one step (coupled: a natural step of size
  // 1; mean field: gaussian_meanfield_optimum()).  Otherwise: damped
  // natural steps to convergence (optimise_q()).
  Step profile() {
    if (fixed_) return fixed_profile();
    std::vector<MatrixXd> old_W;
    for (std::size_t c = 0; c < comps.size(); ++c) old_W.push_back(whitening(c));
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
      if (opt.rank == 0) keep_weights(old_W);
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

  // ---- a fixed design (the file's head) ----------------------------------------------
  // True when the fixed-design path applies: Gaussian, coupled full-rank q
  // (SvgpSettings::fixed_design not switched off), and no component with
  // inducing points.
  bool fixed_design() const {
    if (lik.family != Family::gaussian || opt.rank != 0 || opt.meanfield || !opt.fixed_design) return false;
    for (const Component& k : comps)
      if (k.has_inducing()) return false;
    return true;
  }

  // Whether the last fit() took the fixed-design path: its q is then the
  // exact posterior, and the ELBO the log marginal likelihood itself.
  bool exact_objective() const { return static_cast<bool>(fixed_); }

  // The fixed design's statistics: G = sum w psi psi' (M x M), b = sum w (y - o) psi
  // and the totals.  One natural pass of a copy of the model at unit scales
  // (hilbert sd 1, factor variance 1, linear prior sd 1), q's mean zero and
  // its noise variance s2: that pass's Q = -G / (2 s2), r = b / s2.
  struct FixedStatistics {
    MatrixXd G;
    VectorXd b;
    DataPass::GaussianTotals totals;
  };
  FixedStatistics fixed_statistics() const {
    Svgp u(*this);
    for (Component& k : u.comps) {
      if (k.kind == Kind::factor) k.kernel.log_var = 0;
      if (k.kind == Kind::linear) k.prior_sd.setOnes();
    }
    u.refresh_prior();
    for (std::size_t c = 0; c < u.comps.size(); ++c)
      if (u.comps[c].kind == Kind::hilbert) u.prior_[c].sd.setOnes();
    u.m.setZero();
    const PassSums acc = u.evaluate(nullptr, Pass::natural, *pfor_);
    data_.count_passes(1);
    const double s2 = u.lik.noise_var();
    FixedStatistics st;
    st.G = -2.0 * s2 * MatrixXd(acc.Q.selfadjointView<Eigen::Lower>());
    st.b = s2 * acc.r;
    st.totals = data_.gaussian_totals();
    return st;
  }

  // The scale of each weight at the current hyperparameters, d (phi = d .* psi).
  VectorXd fixed_scales() const {
    VectorXd d(total_size());
    for (std::size_t c = 0; c < comps.size(); ++c) {
      const Component& k = comps[c];
      auto dc = d.segment(offsets_[c], k.size());
      switch (k.kind) {
        case Kind::hilbert: dc = prior_[c].sd; break;
        case Kind::factor: dc.setConstant(std::sqrt(k.kernel.variance())); break;
        case Kind::linear: dc = k.prior_sd; break;
        default: throw std::logic_error("fixed_scales(): a component with inducing points");
      }
    }
    return d;
  }

  // The profile objective of a fixed design from its statistics, q optimal:
  //   P = I + D G D / s2,  h = D b / s2  (m = S h, S = P^{-1}),
  //   e = wyy - 2 m'D b + m'D G D m + s2 (M - tr S)   (sum w ((y - o - mu)^2 + s2_i)),
  //   ELBO = -n+/2 log(2 pi s2) + sum log w / 2 - e / (2 s2) - KL(q || N(0, I)),
  // the exact log marginal likelihood (no residual variance).  Gradient: with
  // rho_j = log d_j^2, d ELBO / d rho_j = (S_jj + m_j^2 - 1) / 2 (mapped to
  // the kernel parameters: d rho / d theta of hilbert.hpp, a factor's
  // log variance is every rho_j of its levels), and
  // d ELBO / d s2 = -n+ / (2 s2) + e / (2 s2^2).
  Step fixed_profile() {
    const FixedStatistics& st = *fixed_;
    refresh_prior();
    const VectorXd d = fixed_scales(), m0 = m;
    const double s2 = lik.noise_var();
    const Index Mt = total_size();
    const MatrixXd Gs = d.asDiagonal() * st.G * d.asDiagonal();
    const VectorXd bs = d.cwiseProduct(st.b);
    P = Gs / s2;
    P.diagonal().array() += 1.0;
    h = bs / s2;
    refresh_q();
    q_change_ = (m - m0).lpNorm<Eigen::Infinity>();
    const double e = st.totals.wyy - 2.0 * m.dot(bs) + m.dot(Gs * m) + s2 * (static_cast<double>(Mt) - S.trace());
    Step out;
    out.objective = -0.5 * st.totals.n_pos * (kLog2Pi + std::log(s2)) + 0.5 * st.totals.sum_log_w - 0.5 * e / s2 - kl();
    const VectorXd grho = 0.5 * (S.diagonal() + m.cwiseAbs2() - VectorXd::Ones(Mt));
    out.gradient = VectorXd::Zero(n_theta());
    Index i = 0;
    for (std::size_t c = 0; c < comps.size(); ++c) {
      const Component& k = comps[c];
      if (!k.learn_kernel || !k.has_kernel()) continue;
      const auto gc = grho.segment(offsets_[c], k.size());
      if (k.kind == Kind::factor) {
        out.gradient(i++) = gc.sum();
      } else {
        out.gradient.segment(i, k.n_kernel_params()) = prior_[c].drho.transpose() * gc;
        i += k.n_kernel_params();
      }
    }
    if (lik.has_noise() && set.learn_noise)
      out.gradient(i) = (s2 - Likelihood::kNoiseFloor) * (-0.5 * st.totals.n_pos / s2 + 0.5 * e / (s2 * s2));
    out.objective += log_prior(&out.gradient);
    return out;
  }

  // The exact Hessian of the fixed design's profile objective in the packed
  // parameters at the current state (left by fixed_profile()), as the
  // inverse of -H made positive definite (absolute eigenvalues, at least
  // 1e-8 of the largest): the Newton steps of fit_profile().  False without
  // a fixed design.  With rho_j = log d_j^2, tau = log s2, g_j = d L / d rho_j,
  // rss = e - s2 (M - tr S) and edf = M - tr S:
  //   d2L / d rho d rho' = [S o S + 2 (m m') o S] / 2 - diag(S_jj + m_j^2) / 2,
  //   d2L / d rho_j d tau = [S_jj - (S^2)_jj - 2 m_j (S m)_j] / 2,
  //   d2L / d tau^2      = [tr (I - S)^2 - edf + 2 m'S m - rss / s2] / 2,
  // mapped to the packed parameters by J = d rho / d theta plus
  // sum_j g_j d2 rho_j / d theta^2 (hilbert_log_spectrum_hessian()), the
  // noise's tau(lambda) = log(e^lambda + floor), and the hyperpriors.
  bool exact_hessian(MatrixXd& Hinv) const {
    if (!fixed_) return false;
    const FixedStatistics& st = *fixed_;
    const Index Mt = total_size(), K = n_theta(), nh = n_hyper();
    const double s2 = lik.noise_var();
    const VectorXd d = fixed_scales(), bs = d.cwiseProduct(st.b);
    const MatrixXd Gs = d.asDiagonal() * st.G * d.asDiagonal();
    const double trS = S.trace(), edf = static_cast<double>(Mt) - trS;
    const double rss = st.totals.wyy - 2.0 * m.dot(bs) + m.dot(Gs * m);
    const VectorXd Sm = S * m, s2d = S.diagonal();
    const VectorXd grho = 0.5 * (s2d + m.cwiseAbs2() - VectorXd::Ones(Mt));
    MatrixXd Hrr = 0.5 * (S.cwiseProduct(S) + 2.0 * (m * m.transpose()).cwiseProduct(S));
    Hrr.diagonal() -= 0.5 * (s2d + m.cwiseAbs2());
    // J (Mt x nh) and the second derivatives of rho
    MatrixXd J = MatrixXd::Zero(Mt, nh), H = MatrixXd::Zero(K, K);
    Index i = 0;
    for (std::size_t c = 0; c < comps.size(); ++c) {
      const Component& k = comps[c];
      if (!k.learn_kernel || !k.has_kernel()) continue;
      const Index o = offsets_[c], M = k.size(), np = k.n_kernel_params();
      if (k.kind == Kind::factor) {
        J.block(o, i, M, 1).setOnes();
      } else {
        J.block(o, i, M, np) = prior_[c].drho;
        H.block(i, i, np, np) = hilbert_log_spectrum_hessian(k.basis, k.kernel, grho.segment(o, M));
      }
      i += np;
    }
    H.topLeftCorner(nh, nh) += J.transpose() * Hrr * J;
    if (lik.has_noise() && set.learn_noise) {
      const double kap = (s2 - Likelihood::kNoiseFloor) / s2;
      const VectorXd Hrt = 0.5 * (s2d - (S * S).diagonal() - 2.0 * m.cwiseProduct(Sm));
      const double Lt = 0.5 * (edf - st.totals.n_pos + rss / s2);
      const MatrixXd ImS = MatrixXd::Identity(Mt, Mt) - S;
      const double Htt = 0.5 * (ImS.cwiseProduct(ImS).sum() - edf + 2.0 * m.dot(Sm) - rss / s2);
      H.block(0, nh, nh, 1) = kap * J.transpose() * Hrt;
      H.block(nh, 0, 1, nh) = H.block(0, nh, nh, 1).transpose();
      H(nh, nh) = Htt * kap * kap + Lt * kap * (1.0 - kap);
    }
    // the hyperpriors (log_prior()): -e^v / (2 s^2) and -b e^{-t}
    i = 0;
    for (const Component& k : comps) {
      if (!k.learn_kernel || !k.has_kernel()) continue;
      if (k.sd_prior > 0) H(i, i) += -std::exp(k.hyper().log_var) / (2.0 * k.sd_prior * k.sd_prior);
      ++i;
      if (k.kind != Kind::factor)
        for (Index j = 0; j < k.hyper().log_ls.size(); ++j, ++i)
          if (k.ls_b.size()) H(i, i) += -k.ls_b(j) * std::exp(-k.hyper().log_ls(j));
    }
    if (!positive_inverse(-H, Hinv)) return false;
    last_hessian_ = H;
    return true;
  }
  // The Hessian of the last exact_hessian() (tests).
  const MatrixXd& last_hessian() const { return last_hessian_; }

 private:
  double scale_ = 1;
  PassSums acc_;
  mutable MatrixXd last_hessian_;
  std::shared_ptr<const FixedStatistics> fixed_;  // the fixed design's statistics (fit(); none: the passes)
};

}  // namespace scalegp
