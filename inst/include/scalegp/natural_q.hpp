// q(v) of the variational engines (svgp.hpp, decoupled.hpp) and how it is
// updated.  NaturalQ extends the whitened Gaussian q of gaussian_q.hpp with
// what both engines share: the likelihood, the pass over the data
// (data_pass.hpp, a member), the parameters besides q (the
// hyperparameters, then the likelihood's own parameter Likelihood::log_noise
// -- Gaussian log noise variance, Gamma log shape, negative binomial log
// theta, Student-t log squared scale -- when it has one and it is learned,
// then the Student-t's Likelihood::log_df when learned: n_theta(), pack(),
// unpack(), gradient(), bounds()), and the updates of q:
//   natural_step()       a natural-gradient step towards a pass's target,
//                        P* = I - 2 s Q, h* = s (r - 2 Q m), mean field
//                        (block-diagonal) or truncated to a low rank;
//   gaussian_meanfield_optimum()  the optimal mean-field q (Gaussian);
//   keep_weights()       q moved with the hyperparameters;
//   initial_q()          the first step, IRLS's first iteration from glm's
//                        start (Likelihood::start_expect());
//   optimise_q()         damped natural steps to q's optimum (the inner loop
//                        of a profile fit), mixed by Anderson acceleration
//                        once they converge slowly, to the tolerance of
//                        inner_accuracy(); settle_q() the few that end a
//                        fit on minibatches;
// and the state of a fit that the drivers of fit_loop.hpp read (the
// executor, the natural step size, the warm-up, the snapshot).
#pragma once
#include "data_pass.hpp"
#include "fit_loop.hpp"
#include "gaussian_q.hpp"
#include "likelihoods.hpp"
#include <algorithm>
#include <limits>
#include <vector>

namespace scalegp {

// The options of the variational engines (R: vi_options(); the decoupled
// engine's glue sets its own).
struct SvgpSettings {
  double natgrad_step = -1;  // <= 0: 1 (Gaussian, full batch), 0.5 (other families, full batch), 0.1 (minibatches)
  bool meanfield = false;    // block-diagonal q over components
  int rank = 0;              // > 0: P = I + W W' with W of this many columns
  bool lbfgs = true;         // full batch: L-BFGS with q optimal at each step (else Adam steps)
  // Full batch: products over distinct (rounded) values of each component
  // (discrete.hpp); the R default decides (vi_discrete()).
  bool discrete = false;
  double bins = 1000;  // values per gp() input (<= 0: exact values)
  // Gaussian, all rows, no inducing points: the profile objective from the
  // fixed design's statistics, formed once (svgp.hpp); false: by passes.
  bool fixed_design = true;
  // Full natural steps of optimise_q() mixed with the last ones (Anderson
  // acceleration) over this many differences; 0: plain steps.
  int anderson = 3;
};

// Anderson acceleration (type II, Walker and Ni 2011) of the fixed-point
// map x -> G(x) of full natural steps, x = (P, h) in natural parameters:
// with the residuals f_k = G(x_k) - x_k of the last steps, the next point is
// G(x_k) - (dX + dF) gamma, gamma minimising |f_k - dF gamma| (dX, dF the
// differences of successive x and f).  A mix is a linear combination of
// symmetric precisions (block-diagonal ones stay block-diagonal); whether it
// is a valid q and raises the ELBO is the caller's test, with the plain step
// as the fallback.  On gamSim(1) binary data the plain steps converged at a
// ratio of 0.8 per pass along a direction that leaves the ELBO unchanged.
class Anderson {
 public:
  explicit Anderson(int depth) : depth_(std::max(depth, 0)) {}
  // After a plain step from (P0, h0) to (P, h): records it and, when
  // `apply` and with at least one earlier step, replaces (P, h) by the mix
  // (true).
  bool mix(const MatrixXd& P0, const VectorXd& h0, MatrixXd& P, VectorXd& h, bool apply) {
    if (depth_ == 0) return false;
    const Index Mt = P.rows(), N = Mt * Mt + Mt;
    VectorXd x(N), g(N);
    x << Eigen::Map<const VectorXd>(P0.data(), Mt * Mt), h0;
    g << Eigen::Map<const VectorXd>(P.data(), Mt * Mt), h;
    g_ = g;
    xs_.push_back(std::move(x));
    fs_.push_back(g - xs_.back());
    if (static_cast<int>(xs_.size()) > depth_ + 1) {
      xs_.erase(xs_.begin());
      fs_.erase(fs_.begin());
    }
    const Index k = static_cast<Index>(xs_.size()) - 1;
    if (k < 1 || !apply) return false;
    MatrixXd dX(N, k), dF(N, k);
    for (Index j = 0; j < k; ++j) {
      const std::size_t u = static_cast<std::size_t>(j);
      dX.col(j) = xs_[u + 1] - xs_[u];
      dF.col(j) = fs_[u + 1] - fs_[u];
    }
    const VectorXd gamma = dF.colPivHouseholderQr().solve(fs_.back());
    if (!gamma.allFinite()) return false;
    const VectorXd a = g - (dX + dF) * gamma;
    P = Eigen::Map<const MatrixXd>(a.data(), Mt, Mt);
    P = 0.5 * (P + P.transpose());
    h = a.tail(Mt);
    return true;
  }
  // Back to the plain step of the last mix().
  void plain(MatrixXd& P, VectorXd& h) const {
    const Index Mt = h.size();
    P = Eigen::Map<const MatrixXd>(g_.data(), Mt, Mt);
    h = g_.tail(Mt);
  }
  void clear() {
    xs_.clear();
    fs_.clear();
  }

 private:
  int depth_;
  std::vector<VectorXd> xs_, fs_;
  VectorXd g_;
};

class NaturalQ : public WhitenedGaussianModel {
 public:
  Likelihood lik;
  SvgpSettings opt;

  NaturalQ(std::vector<Component> components, Likelihood likelihood, Settings settings, SvgpSettings options,
           const double* X, std::size_t n, std::size_t p, const double* y, const double* w, const double* offset)
      : WhitenedGaussianModel(std::move(components), settings, X, n, p, y, w, offset),
        lik(std::move(likelihood)),
        opt(options) {}
  // (a copy's data pass reads the copy)
  NaturalQ(const NaturalQ& o)
      : WhitenedGaussianModel(o),
        lik(o.lik),
        opt(o.opt),
        data_(o.data_, *this, lik),
        rank_loss_(o.rank_loss_),
        pfor_(o.pfor_),
        rho_(o.rho_),
        q_change_(o.q_change_),
        full_(o.full_),
        dummy_rng_(o.dummy_rng_),
        warmup_(o.warmup_) {}
  NaturalQ& operator=(const NaturalQ&) = delete;

  // ---- the pass over the data (data_pass.hpp) ----------------------------------
  DataPass& data() { return data_; }
  const DataPass& data() const { return data_; }
  PassSums evaluate(const std::vector<std::size_t>* idx, Pass pass, const ParallelFor& pfor) const {
    return data_.evaluate(idx, pass, pfor);
  }
  PassSums evaluate(const std::vector<std::size_t>* idx, bool grad, const ParallelFor& pfor) const {
    return data_.evaluate(idx, grad, pfor);
  }

  // ---- parameters moved by the optimiser: the hyperparameters, then the likelihood's own ----
  bool learns_noise() const { return lik.has_noise() && set.learn_noise; }
  bool learns_df() const { return lik.has_df() && set.learn_df; }
  Index n_theta() const { return n_hyper() + learns_noise() + learns_df(); }

  VectorXd pack() const {
    VectorXd th(n_theta());
    pack_hyper(th.head(n_hyper()));
    if (learns_noise()) th(n_hyper()) = lik.log_noise;
    if (learns_df()) th(n_theta() - 1) = lik.log_df;
    return th;
  }

  void unpack(const VectorXd& th) {
    unpack_hyper(th.head(n_hyper()));
    if (learns_noise()) lik.log_noise = Likelihood::clamp_log_noise(th(n_hyper()));
    if (learns_df()) lik.log_df = Likelihood::clamp_log_df(th(n_theta() - 1));
  }

  // Full gradient of the ELBO estimate in the packed layout, given the
  // accumulated data statistics of a batch with scale s = N / |batch|.
  VectorXd gradient(const PassSums& acc, double s) const {
    VectorXd gr(n_theta());
    const Index Mt = total_size();
    MatrixXd Q = acc.Q.selfadjointView<Eigen::Lower>();
    // Phi' Phibar = r m' + 2 Q (S - I)
    const MatrixXd PtPb = acc.r * m.transpose() + 2.0 * Q * (S - MatrixXd::Identity(Mt, Mt));
    gr.head(n_hyper()) = hyper_gradient(PtPb, acc.grad, s);
    if (learns_noise()) gr(n_hyper()) = s * acc.dlognoise;
    if (learns_df()) gr(n_theta() - 1) = s * acc.dlogdf;
    return gr;
  }

  // Natural-gradient step of size rho on q(v) towards the target of the batch:
  //   P* = I - 2 s Q,   h* = s (r - 2 Q m)        (Q = Phi' diag(gamma) Phi)
  // For the mean-field family both are restricted to the diagonal blocks
  // (h*_c = s (r_c - 2 Q_cc m_c)).
  void natural_step(const PassSums& acc, double s, double rho) {
    const Index Mt = total_size();
    MatrixXd Q = acc.Q.selfadjointView<Eigen::Lower>();
    if (opt.meanfield) {
      MatrixXd Qb = MatrixXd::Zero(Mt, Mt);
      for (std::size_t c = 0; c < comps.size(); ++c) {
        const Index o = offsets_[c], M = comps[c].size();
        Qb.block(o, o, M, M) = Q.block(o, o, M, M);
      }
      Q = std::move(Qb);
    }
    MatrixXd Pt = -2.0 * s * Q;
    Pt.diagonal().array() += 1.0;
    P = (1.0 - rho) * P + rho * Pt;
    h = (1.0 - rho) * h + rho * s * (acc.r - 2.0 * Q * m);
    if (opt.rank > 0 && opt.rank < Mt) truncate_rank();
  }

  // The optimal mean-field q for a Gaussian likelihood on all rows: the
  // posterior of v is Gaussian with precision P* = I - 2 Q and mean
  // m* = P*^{-1} (r - 2 Q m) (r - 2 Q m does not depend on m), and the
  // block-diagonal Gaussian closest to it in KL(q || p) keeps that mean with
  // the diagonal blocks of P* as precisions (Bishop 2006, section 10.1.2).
  // The simultaneous block updates of natural_step() reach the same point,
  // but slowly when components are strongly correlated.
  void gaussian_meanfield_optimum(const PassSums& acc) {
    const Index Mt = total_size();
    const MatrixXd Q = acc.Q.selfadjointView<Eigen::Lower>();
    MatrixXd Pf = -2.0 * Q;
    Pf.diagonal().array() += 1.0;
    const Eigen::LLT<MatrixXd> llt(Pf);
    if (llt.info() != Eigen::Success) throw numerical_error("the posterior precision is not positive definite");
    const VectorXd mean = llt.solve(acc.r - 2.0 * Q * m);
    P = MatrixXd::Zero(Mt, Mt);
    for (std::size_t c = 0; c < comps.size(); ++c) {
      const Index o = offsets_[c], M = comps[c].size();
      P.block(o, o, M, M) = Pf.block(o, o, M, M);
    }
    h = P * mean;
  }

  // Projects P onto {I + W W' : W with `rank` columns} (the low-rank precision
  // of Adam, Durrande and John 2018, eq. 7, whitened) by keeping the largest
  // eigenvalues of P - I, and keeps the mean of the full-rank step
  // (h = P_R m); rank_loss() is the share of the effective degrees of freedom
  // (sum of l / (1 + l) over the eigenvalues l of P - I) the truncation drops.
  void truncate_rank() {
    const Index Mt = total_size();
    const Eigen::LLT<MatrixXd> llt(P);
    if (llt.info() != Eigen::Success) throw numerical_error("the posterior precision is not positive definite");
    const VectorXd mean = llt.solve(h);
    MatrixXd D = P;
    D.diagonal().array() -= 1.0;
    Eigen::SelfAdjointEigenSolver<MatrixXd> es(D);
    const VectorXd ev = es.eigenvalues().cwiseMax(0.0);  // ascending
    const Index R = opt.rank;
    const VectorXd edf = ev.array() / (1.0 + ev.array());
    const double total = edf.sum();
    rank_loss_ = total > 0 ? edf.head(Mt - R).sum() / total : 0.0;
    const MatrixXd V = es.eigenvectors().rightCols(R);
    P = V * ev.tail(R).asDiagonal() * V.transpose();
    P.diagonal().array() += 1.0;
    h = P * mean;
  }
  double rank_loss() const { return rank_loss_; }

  void bounds(VectorXd& lo, VectorXd& hi) const {
    lo.resize(n_theta());
    hi.resize(n_theta());
    hyper_bounds(lo.head(n_hyper()), hi.head(n_hyper()));
    if (learns_noise()) {
      lo(n_hyper()) = Likelihood::kMinLogNoise;
      hi(n_hyper()) = Likelihood::kMaxLogNoise;
    }
    if (learns_df()) {
      lo(n_theta() - 1) = Likelihood::kMinLogDf;
      hi(n_theta() - 1) = Likelihood::kMaxLogDf;
    }
  }

  // Initial q: one full natural step (a Newton step from the prior mean) on
  // the rows of `sampler` with the likelihood evaluated at the mean.  Far
  // better than the prior for vague parametric priors and non-Gaussian
  // likelihoods.
  void initial_q(const Sampler& sampler) {
    data_.plug_in = true;
    natural_step(evaluate(sampler.rows(), false, *pfor_), sampler.scale(), 1.0);
    data_.plug_in = false;
    refresh();
  }

  // The start of q after the hyperparameters changed: q(v) moved so that
  // q of each component's weights stays as it was.  Per component, the
  // weights are u_c = W_c v_c with W_c = whitening(c): the Cholesky factor
  // L_c of K_uu (the values at the inducing points; when the inducing inputs
  // moved too, q(u) at the old inputs becomes q(u) at the new ones), or the
  // diagonal of the weights' prior sds (hilbert: the sines' weights; factor:
  // the levels' effects).  The optimum of q is a function of the data, which
  // q(u) describes directly; the whitened v drifts with the kernel variance
  // and lengthscales.  With old_W before the change: v_c -> W_c^-1 old_W_c v_c,
  // in natural parameters, with T = diag(old_W_c^-1 W_c): P -> T' P T,
  // h -> T' h.  Linear components, and a diagonal with a zero sd, keep theirs.
  // (T is block-diagonal: each moved component's block is applied to its
  // columns of P, then to its rows and h; a diagonal block as a scaling.)
  void keep_weights(const std::vector<MatrixXd>& old_W) {
    if (old_W.size() != comps.size()) return;
    std::vector<MatrixXd> T(comps.size());  // per component: its block, a column (diagonal), or none
    bool moved = false;
    for (std::size_t c = 0; c < comps.size(); ++c) {
      const MatrixXd W = whitening(c);
      const Index M = comps[c].size();
      if (W.size() == 0 || old_W[c].rows() != M || W.rows() != M || old_W[c] == W) continue;
      if (comps[c].has_inducing()) {
        T[c] = old_W[c].triangularView<Eigen::Lower>().solve(W);
      } else {
        const VectorXd a = old_W[c].diagonal(), b = W.diagonal();
        if (!(a.minCoeff() > 0) || !(b.minCoeff() > 0)) continue;
        T[c] = b.cwiseQuotient(a);
      }
      moved = true;
    }
    if (!moved) return;
    const MatrixXd P0 = P;
    const VectorXd h0 = h;
    for (std::size_t c = 0; c < comps.size(); ++c) {
      const Index o = offsets_[c], M = comps[c].size();
      if (T[c].size() == 0) continue;
      if (T[c].cols() == 1) {
        P.middleCols(o, M) = P.middleCols(o, M) * T[c].col(0).asDiagonal();
      } else {
        const MatrixXd Pc = P.middleCols(o, M) * T[c];
        P.middleCols(o, M) = Pc;
      }
    }
    for (std::size_t c = 0; c < comps.size(); ++c) {
      const Index o = offsets_[c], M = comps[c].size();
      if (T[c].size() == 0) continue;
      if (T[c].cols() == 1) {
        P.middleRows(o, M) = T[c].col(0).asDiagonal() * P.middleRows(o, M);
        h.segment(o, M) = T[c].col(0).cwiseProduct(h.segment(o, M));
      } else {
        const MatrixXd Pr = T[c].transpose() * P.middleRows(o, M);
        P.middleRows(o, M) = Pr;
        h.segment(o, M) = T[c].transpose() * h.segment(o, M);
      }
    }
    P = 0.5 * (P + P.transpose());
    try {
      refresh_q();
    } catch (const numerical_error&) {
      P = P0;
      h = h0;
      refresh_q();
    }
  }


  // How tightly optimise_q() solves for the mean: within 1e-6 (tight) times
  // `ratio`, the outer gradient over its tolerance, at most 1e-4 (fit_profile()
  // sets it at each iteration, has_inner_accuracy).  The ELBO's tolerance
  // does not change.  Far from a stationary point the gradient need not be
  // exact; on gamSim(1) binary data the mean crawled along a direction that
  // leaves the ELBO unchanged to 1e-10 (ratio 0.8 per step), so the tight
  // tolerance cost over half the passes of a fit.
  // inner_tight(): the current q was not solved loosely (it came from a
  // closed form, or from optimise_q() at the tight tolerance).
  void inner_accuracy(double ratio) {
    tol_mean_ = std::isfinite(ratio) ? std::min(kLooseMean, std::max(kTightMean, kTightMean * ratio)) : kLooseMean;
  }
  bool inner_tight() const { return !loose_; }

  // The inner loop of profile() for likelihoods without a closed-form q:
  // natural steps of size 1, halved after a step that lowers the ELBO (or
  // leaves q invalid; the step is undone), doubled again after two accepted
  // steps in a row (a step that had to be shortened far from the optimum
  // need not stay short near it), until the ELBO is within 1e-10 relative
  // of its optimum and the mean within the tolerance of inner_accuracy()
  // (1e-6 unless set; at most 500 steps).  After two full steps in a row
  // that each changed the mean by more than half the change before, full
  // steps are mixed with the earlier ones (Anderson; up to 1200 weights), a
  // mix that lowers the ELBO or leaves q invalid replaced by the plain step.  Full steps
  // converge linearly: with three in a row, the larger of the last two
  // ratios of successive changes (of the mean, of the ELBO), r < 1/2, bounds
  // what is left by the last change times r / (1 - r); otherwise the last
  // change itself must be below the tolerances.  When that bound, applied once more, says the next step will
  // end the loop, its evaluation is asked for the gradient as well.
  // `value(E&, bool gradient)` returns the ELBO at the current q and fills
  // what a step needs (and the gradient when asked); `take(const E&, rho)`
  // changes P and h (refresh_q() follows).  On return `cur` is the
  // evaluation at the final q and `cur_gradient` says whether it has the
  // gradient.  Returns the mean before the last accepted step.
  template <class E, class Value, class Take>
  VectorXd optimise_q(Value value_of, Take take, E& cur, bool& cur_gradient) {
    constexpr double kTolValue = 1e-10, kMaxRate = 0.5;
    const double tol_m = tol_mean_;
    double rho = 1.0;
    cur_gradient = false;
    double last = value_of(cur, false);
    VectorXd m0 = m;
    int accepted_run = 0;
    // the last accepted step's changes (full steps; < 0: none) and the
    // larger of the last two ratios of successive full steps' changes (< 0:
    // fewer than three full steps in a row)
    double dm_last = -1, gain_last = -1, rate_m = -1, rate_v = -1, ratio_m = -1, ratio_v = -1;
    // what is left after a change d converging at rate r
    const auto left = [](double d, double r) { return r >= 0 && r < kMaxRate ? d * r / (1.0 - r) : d; };
    Anderson anderson(opt.anderson);
    int slow_run = 0;  // full steps in a row whose mean changed by more than half the last change (then: mixed)
    // a step is kept when it does not lower the ELBO (beyond rounding)
    const auto raises = [&](double value) { return value >= last - 1e-12 * std::abs(last); };
    const auto reset = [&] { dm_last = gain_last = rate_m = rate_v = ratio_m = ratio_v = -1; };
    for (int k = 0; k < 500; ++k) {
      const MatrixXd P0 = P;
      const VectorXd h0 = h, mk = m;
      const double step = rho;
      const double tol_v = kTolValue * (1.0 + std::abs(last));
      // the next full step, predicted at the last rates, leaves too little to continue
      const bool ask = step == 1.0 && rate_m >= 0 && rate_m < kMaxRate && rate_v >= 0 && rate_v < kMaxRate &&
                       left(dm_last * rate_m, rate_m) <= tol_m && left(std::max(gain_last, 0.0) * rate_v, rate_v) <= tol_v;
      bool better = false;
      E next;
      double value = -std::numeric_limits<double>::infinity();
      try {
        take(cur, rho);
        bool mixed = false;
        if (step == 1.0 && opt.rank == 0 && P.rows() <= kAndersonMaxSize && anderson.mix(P0, h0, P, h, slow_run >= 2)) {
          try {
            refresh_q();
            value = value_of(next, ask);
            mixed = raises(value);
          } catch (const numerical_error&) {
          }
          if (!mixed) {  // the plain step instead
            anderson.plain(P, h);
            anderson.clear();
            slow_run = 0;
          }
        }
        if (!mixed) {
          refresh_q();
          value = value_of(next, ask);
        }
        better = raises(value);
      } catch (const numerical_error&) {
        better = false;
      }
      if (!better) {
        anderson.clear();
        slow_run = 0;
        accepted_run = 0;
        reset();
        P = P0;
        h = h0;
        refresh_q();
        rho *= 0.5;
        if (rho < 1e-3) break;
        continue;
      }
      m0 = mk;
      if (++accepted_run >= 2) rho = std::min(1.0, 2.0 * rho);
      const double gain = value - last, dm = (m - m0).lpNorm<Eigen::Infinity>();
      last = value;
      cur = std::move(next);
      cur_gradient = ask;
      if (step == 1.0) {
        const double rm = dm_last > 0 ? dm / dm_last : -1, rv = gain_last > 0 ? std::max(gain, 0.0) / gain_last : -1;
        rate_m = rm >= 0 && ratio_m >= 0 ? std::max(rm, ratio_m) : -1;
        rate_v = rv >= 0 && ratio_v >= 0 ? std::max(rv, ratio_v) : -1;
        if (slow_run < 2) slow_run = rm >= kMaxRate ? slow_run + 1 : 0;
        ratio_m = rm;
        ratio_v = rv;
        dm_last = dm;
        gain_last = gain;
      } else {
        reset();
      }
      const bool small = gain <= kTolValue * (1.0 + std::abs(value)) && dm <= tol_m;
      const bool bounded = rate_m >= 0 && rate_v >= 0 && left(dm, rate_m) <= tol_m &&
                           left(std::max(gain, 0.0), rate_v) <= kTolValue * (1.0 + std::abs(value));
      if (small || bounded) break;
    }
    loose_ = tol_m > kTightMean;
    return m0;
  }


  // Other likelihoods after minibatches: damped full-data natural steps
  // (size 0.5) remove the minibatch noise from q, until the ELBO gains less
  // than tol per observation (at most 10).  `value_of(E&)` evaluates all rows
  // at the current q (the ELBO, and what a step needs); `take(const E&,
  // rho)` changes P and h.
  template <class E, class Value, class Take>
  void settle_q(Value value_of, Take take) {
    double last = -std::numeric_limits<double>::infinity();
    for (int k = 0; k < 10; ++k) {
      E e;
      const double value = value_of(e);
      if (value - last < set.tol * static_cast<double>(n())) break;
      last = value;
      take(e, 0.5);
      refresh();
    }
  }

  // The fit maximised the ELBO plus the log prior: report them apart.
  void finish_profile(FitInfo& info) const {
    info.q_change = q_change_;
    info.log_prior = log_prior();
    info.objective -= info.log_prior;
  }

  // ---- the state of a fit (the drivers of fit_loop.hpp) ---------------------------
  // The start of a fit: the executor, the rows of each iteration (shuffled
  // minibatches of set.batch_size rows, or all rows), the natural step size
  // and the warm-up before the first parameter step (natural_rate(),
  // natural_warmup()).
  Sampler begin_fit(const ParallelFor& pfor, Rng& rng) {
    pfor_ = &pfor;
    Sampler sampler(Sampler::Mode::shuffled, n(), set.batch_size, rng);
    full_ = sampler.full();
    rho_ = natural_rate(opt.natgrad_step, full_, lik.family == Family::gaussian);
    warmup_ = natural_warmup(rho_);
    return sampler;
  }
  int warmup() const { return warmup_; }
  int stop_warmup() const { return warmup_; }
  bool own_stop() const { return false; }
  void back_off() { rho_ *= 0.5; }
  // A state to go back to: the packed parameters `theta` (the engine's
  // pack()), q's natural parameters and the moments computed from them.
  struct Snapshot {
    VectorXd theta, h;
    MatrixXd P;
    bool loose = false;
    Moments q;
  };
  Snapshot snapshot_with(VectorXd theta) const { return {std::move(theta), h, P, loose_, moments()}; }
  // Back to a snapshot, once the engine's unpack() has restored theta: the
  // prior at theta, q's natural parameters and their moments as they were
  // (not refactorised).
  void restore_q(const Snapshot& s) {
    P = s.P;
    h = s.h;
    loose_ = s.loose;
    refresh_prior();
    restore_moments(s.q);
  }

 protected:
  DataPass data_{*this, lik, opt.meanfield, opt.discrete, opt.bins};
  double rank_loss_ = 0;
  const ParallelFor* pfor_ = nullptr;
  double rho_ = 1, q_change_ = 0;
  static constexpr double kTightMean = 1e-6, kLooseMean = 1e-4;
  // Anderson's history holds about 15 vectors of Mt^2 + Mt numbers: with
  // more weights than this, plain steps (170 MB at this size).
  static constexpr Index kAndersonMaxSize = 1200;
  double tol_mean_ = kTightMean;  // (inner_accuracy())
  bool loose_ = false;            // (inner_tight())
  bool full_ = true;
  Rng dummy_rng_{0};  // (a full-data sampler draws nothing)
  int warmup_ = 0;
};

}  // namespace scalegp
