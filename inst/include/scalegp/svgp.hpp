// Sparse variational GP (SVGP; Hensman et al. 2013, 2015) for an additive
// predictor  f(x) = sum_c f_c(x_[c]) + offset  whose components (GPs with
// their own inputs and inducing points, factor random effects, parametric
// blocks; components.hpp) share one likelihood.  All inducing variables are
// whitened, u = L v with L = blockdiag(L_c), and q(v) = N(m, S) is one coupled
// Gaussian over all components (seed 004's coupled posterior, full rank), or
// block-diagonal (`meanfield`), held in natural parameters (precision
// P = S^{-1}, shift h = P m).  q is updated by natural-gradient
// steps (step 1 on the full data of a Gaussian model gives the optimal q);
// kernel hyperparameters, inducing inputs and the noise variance by Adam.
// Notation and gradient formulas: shared/notes/seeds/004_gam_svgp.md, 3.5-3.10.
#pragma once
#include "components.hpp"
#include "inducing.hpp"
#include "likelihoods.hpp"
#include "optim.hpp"
#include "parallel.hpp"
#include <chrono>
#include <vector>

namespace scalegp {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Settings {
  double rel_jitter = 1e-6;
  std::size_t batch_size = 0;  // 0: full batch
  int max_iter = 1000;
  double learning_rate = 0.01;
  double tol = 1e-5;           // per observation and epoch
  int patience = 10;
  double natgrad_step = -1;    // <= 0: automatic
  bool learn_inducing = true;
  bool learn_noise = true;
  bool meanfield = false;      // block-diagonal q over components
  int rank = 0;                // > 0: P = I + W W' with W of this many columns (seed 004's B)
};

struct FitInfo {
  std::vector<double> trace;  // ELBO estimate per iteration
  int iterations = 0;
  bool converged = false;
  double elbo = 0;            // final ELBO on all data
  double seconds_init = 0, seconds_iter = 0, seconds_final = 0;  // wall time by phase
};

// Per-block work space and derived quantities (rows of one chunk).
struct Block {
  MatrixXd X, Phi;
  VectorXd y, w, o, resid;
  std::vector<ComponentRows> rows;  // per component
};

class Svgp {
 public:
  std::vector<Component> comps;
  Likelihood lik;
  Settings set;
  VectorXd h, m;  // natural shift and mean of q(v)
  MatrixXd P, S;  // precision and covariance of q(v)

  Svgp(std::vector<Component> components, Likelihood likelihood, Settings settings,
       const double* X, std::size_t n, std::size_t p, const double* y, const double* w,
       const double* offset)
      : comps(std::move(components)), lik(std::move(likelihood)), set(settings),
        X_(X, n, p), y_(y, n), w_(w, n), o_(offset, n) {
    offsets_.push_back(0);
    for (const auto& c : comps) offsets_.push_back(offsets_.back() + c.size());
    const Index Mt = offsets_.back();
    P = MatrixXd::Identity(Mt, Mt);
    h = VectorXd::Zero(Mt);
    refresh();
  }

  Index total_size() const { return offsets_.back(); }
  std::size_t n() const { return static_cast<std::size_t>(X_.rows()); }

  // ---- derived state -------------------------------------------------------
  // Recompute the Cholesky factors of the prior blocks and q's moments.
  void refresh() {
    prior_.clear();
    for (const Component& k : comps) prior_.push_back(component_prior(k, set.rel_jitter));
    LP_ = jitter_cholesky(P, 0.0, "the variational precision", 3);
    S = chol_inverse(LP_);
    m = S * h;
    logdet_P_ = logdet_chol(LP_);
  }

  double kl() const {
    return 0.5 * (S.trace() + m.squaredNorm() - static_cast<double>(total_size()) + logdet_P_);
  }

  // Whitened features Phi = [phi_1 | ... | phi_C] of the rows in `b.X`, and
  // resid = the prior variance the inducing points do not explain.
  void features(Block& b) const {
    const Index nb = b.X.rows();
    b.Phi.resize(nb, total_size());
    b.resid = VectorXd::Zero(nb);
    b.rows.resize(comps.size());
    for (std::size_t c = 0; c < comps.size(); ++c) {
      const Component& k = comps[c];
      MatrixXd Xc(nb, k.dim());
      for (Index j = 0; j < k.dim(); ++j) Xc.col(j) = b.X.col(k.cols[j]);
      ComponentRows& r = b.rows[c];
      r.resid = VectorXd::Zero(nb);
      component_features(k, prior_[c], Xc, b.Phi.middleCols(offsets_[c], k.size()), r.resid, r);
      b.resid += r.resid;
    }
  }

  // Gathers rows idx[begin, end) (or begin..end when idx is null) of the data.
  void gather(Block& b, const std::vector<std::size_t>* idx, std::size_t begin, std::size_t end) const {
    const Index nb = static_cast<Index>(end - begin);
    b.X.resize(nb, X_.cols());
    b.y.resize(nb);
    b.w.resize(nb);
    b.o.resize(nb);
    for (Index i = 0; i < nb; ++i) {
      const Index r = static_cast<Index>(idx ? (*idx)[begin + i] : begin + i);
      b.X.row(i) = X_.row(r);
      b.y(i) = y_(r);
      b.w(i) = w_(r);
      b.o(i) = o_(r);
    }
  }

  // ---- one pass over a set of rows --------------------------------------------
  struct Accum {
    double sum_v = 0, dlognoise = 0;
    VectorXd r;                      // Phi' g
    MatrixXd Q;                      // Phi' diag(gamma) Phi (lower triangle)
    std::vector<VectorXd> g_kern;    // per component: d/d[log var, log ls]
    std::vector<MatrixXd> g_Z;       // per component: d/dZ
    Accum& operator+=(const Accum& a) {
      sum_v += a.sum_v;
      dlognoise += a.dlognoise;
      r += a.r;
      Q += a.Q;
      for (std::size_t c = 0; c < g_kern.size(); ++c) {
        g_kern[c] += a.g_kern[c];
        g_Z[c] += a.g_Z[c];
      }
      return *this;
    }
  };

  Accum make_accum() const {
    Accum a;
    const Index Mt = total_size();
    a.r = VectorXd::Zero(Mt);
    a.Q = MatrixXd::Zero(Mt, Mt);
    for (const auto& k : comps) {
      a.g_kern.push_back(VectorXd::Zero(k.n_kernel_params()));
      a.g_Z.push_back(MatrixXd::Zero(k.has_inducing() ? k.size() : 0, k.has_inducing() ? k.dim() : 0));
    }
    return a;
  }

  // What a pass over the data computes.
  enum class Pass { elbo, natural, gradient };

  // Sums over the rows idx (all rows when null) of the expected log-likelihood
  // and, from Pass::natural on, the statistics of the natural-gradient step
  // and, for Pass::gradient, the data part of the hyperparameter gradient
  // (all unscaled).
  Accum evaluate(const std::vector<std::size_t>* idx, Pass pass, const ParallelFor& pfor) const {
    const std::size_t nrows = idx ? idx->size() : n();
    return deterministic_reduce<Accum>(
        nrows, pfor, [this] { return make_accum(); },
        [&](Accum& acc, std::size_t begin, std::size_t end) { accumulate(acc, idx, begin, end, pass); });
  }
  Accum evaluate(const std::vector<std::size_t>* idx, bool grad, const ParallelFor& pfor) const {
    return evaluate(idx, grad ? Pass::gradient : Pass::natural, pfor);
  }

  // Variance of the predictor beyond the Nystrom residual: rows of Phi S Phi'.
  // Computed as |L_P^{-1} phi|^2 (a triangular solve, half the flops of Phi S).
  VectorXd q_variance(const MatrixXd& Phi) const {
    MatrixXd W = Phi;
    solve_right_LT(LP_, W);
    return W.rowwise().squaredNorm();
  }

  void accumulate(Accum& acc, const std::vector<std::size_t>* idx, std::size_t begin, std::size_t end,
                  Pass pass) const {
    const bool grad = pass == Pass::gradient;
    Block b;
    gather(b, idx, begin, end);
    features(b);
    const Index nb = b.X.rows();
    const VectorXd mu = b.Phi * m + b.o;
    MatrixXd T;
    if (grad) T.noalias() = b.Phi * S;
    // plug_in_: variances set to zero (used once, to initialise q by a Newton step)
    VectorXd s2 = VectorXd::Zero(nb);
    if (!plug_in_)
      s2 = (b.resid + (grad ? VectorXd((T.array() * b.Phi.array()).rowwise().sum()) : q_variance(b.Phi)))
               .cwiseMax(1e-12);
    VectorXd g(nb), gam(nb);
    for (Index i = 0; i < nb; ++i) {
      const Expectation e = lik.expect(b.y(i), b.w(i), mu(i), s2(i));
      acc.sum_v += e.v;
      acc.dlognoise += e.dlognoise;
      g(i) = e.dm;
      gam(i) = e.dv;
    }
    if (pass == Pass::elbo) return;
    acc.r.noalias() += b.Phi.transpose() * g;
    const MatrixXd U = b.Phi.transpose() * (-gam.array()).max(0.0).sqrt().matrix().asDiagonal();
    acc.Q.selfadjointView<Eigen::Lower>().rankUpdate(U, -1.0);
    if (!grad) return;
    // adjoint of Phi:  g m' + 2 diag(gamma) (Phi S - Phi)
    MatrixXd Phibar = g * m.transpose();
    Phibar.noalias() += 2.0 * gam.asDiagonal() * (T - b.Phi);
    for (std::size_t c = 0; c < comps.size(); ++c) {
      const Component& k = comps[c];
      if (!k.learn_kernel && !(k.has_inducing() && set.learn_inducing)) continue;
      component_row_gradient(k, prior_[c], b.rows[c], Phibar.middleCols(offsets_[c], k.size()), gam, acc.g_kern[c],
                             k.has_inducing() && set.learn_inducing ? &acc.g_Z[c] : nullptr);
    }
  }

  // ---- gradients and updates -------------------------------------------------
  // Number of free parameters moved by Adam.
  Index n_theta() const {
    Index k = 0;
    for (const auto& c : comps)
      k += (c.learn_kernel ? c.n_kernel_params() : 0) + (c.has_inducing() && set.learn_inducing ? c.Z.size() : 0);
    return k + (lik.has_noise() && set.learn_noise ? 1 : 0);
  }

  VectorXd pack() const {
    VectorXd th(n_theta());
    Index i = 0;
    for (const auto& c : comps) {
      if (c.learn_kernel && c.has_kernel()) {
        th(i++) = c.hyper().log_var;
        if (c.kind != Kind::factor)
          for (Index j = 0; j < c.hyper().log_ls.size(); ++j) th(i++) = c.hyper().log_ls(j);
      }
      if (c.has_inducing() && set.learn_inducing)
        for (Index j = 0; j < c.Z.size(); ++j) th(i++) = c.Z.data()[j];
    }
    if (lik.has_noise() && set.learn_noise) th(i++) = lik.log_noise;
    return th;
  }

  void unpack(const VectorXd& th) {
    Index i = 0;
    for (auto& c : comps) {
      if (c.learn_kernel && c.has_kernel()) {
        Kernel& k = c.hyper();
        k.log_var = std::min(14.0, std::max(-14.0, th(i++)));
        if (c.kind != Kind::factor)
          for (Index j = 0; j < k.log_ls.size(); ++j) k.log_ls(j) = std::min(7.0, std::max(-7.0, th(i++)));
      }
      if (c.has_inducing() && set.learn_inducing)
        for (Index j = 0; j < c.Z.size(); ++j) c.Z.data()[j] = th(i++);
    }
    if (lik.has_noise() && set.learn_noise) lik.log_noise = std::min(10.0, std::max(-20.0, th(i++)));
  }

  // Full gradient of the ELBO estimate in the packed layout, given the
  // accumulated data statistics of a batch with scale s = N / |batch|.
  VectorXd gradient(const Accum& acc, double s) const {
    VectorXd gr(n_theta());
    const Index Mt = total_size();
    MatrixXd Q = acc.Q.selfadjointView<Eigen::Lower>();
    // Phi' Phibar = s (r m' + 2 Q (S - I))
    const MatrixXd PtPb = s * (acc.r * m.transpose() + 2.0 * Q * (S - MatrixXd::Identity(Mt, Mt)));
    Index i = 0;
    for (std::size_t c = 0; c < comps.size(); ++c) {
      const Component& k = comps[c];
      VectorXd gk = s * acc.g_kern[c];
      MatrixXd gZ = s * acc.g_Z[c];
      const Index M = k.size(), o = offsets_[c];
      component_prior_gradient(k, prior_[c], PtPb.block(o, o, M, M).transpose(), gk, gZ);
      if (k.learn_kernel)
        for (Index j = 0; j < gk.size(); ++j) gr(i++) = gk(j);
      if (k.has_inducing() && set.learn_inducing)
        for (Index j = 0; j < gZ.size(); ++j) gr(i++) = gZ.data()[j];
    }
    if (lik.has_noise() && set.learn_noise) gr(i++) = s * acc.dlognoise;
    return gr;
  }

  // Natural-gradient step of size rho on q(v) towards the target of the batch:
  //   P* = I - 2 s Q,   h* = s (r - 2 Q m)        (Q = Phi' diag(gamma) Phi)
  // For the mean-field family both are restricted to the diagonal blocks
  // (h*_c = s (r_c - 2 Q_cc m_c)).
  void natural_step(const Accum& acc, double s, double rho) {
    const Index Mt = total_size();
    MatrixXd Q = acc.Q.selfadjointView<Eigen::Lower>();
    if (set.meanfield) {
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
    if (set.rank > 0 && set.rank < Mt) truncate_rank();
  }

  // Projects P onto {I + W W' : W with `rank` columns} (the low-rank precision
  // of seed 004, eq. 7, whitened) by keeping the largest eigenvalues of P - I,
  // and keeps the mean of the full-rank step (h = P_R m);  rank_loss() is the
  // share of the effective degrees of freedom (sum of l / (1 + l) over the
  // eigenvalues l of P - I) that the truncation drops.
  void truncate_rank() {
    const Index Mt = total_size();
    const VectorXd mean = P.llt().solve(h);
    MatrixXd D = P;
    D.diagonal().array() -= 1.0;
    Eigen::SelfAdjointEigenSolver<MatrixXd> es(D);
    const VectorXd ev = es.eigenvalues().cwiseMax(0.0);  // ascending
    const Index R = set.rank;
    const VectorXd edf = ev.array() / (1.0 + ev.array());
    const double total = edf.sum();
    rank_loss_ = total > 0 ? edf.head(Mt - R).sum() / total : 0.0;
    const MatrixXd V = es.eigenvectors().rightCols(R);
    P = V * ev.tail(R).asDiagonal() * V.transpose();
    P.diagonal().array() += 1.0;
    h = P * mean;
  }
  double rank_loss() const { return rank_loss_; }

  // ELBO on all rows at the current state.
  double elbo(const ParallelFor& pfor) const { return evaluate(nullptr, Pass::elbo, pfor).sum_v - kl(); }

  // ---- the fit loop -----------------------------------------------------------
  // `monitor(iteration, objective)` is called on the calling thread after every
  // iteration (interrupts, progress); returning false stops the fit.
  template <class Monitor>
  FitInfo fit(const ParallelFor& pfor, Rng& rng, Monitor monitor) {
    FitInfo info;
    auto clock = std::chrono::steady_clock::now();
    const std::size_t N = n();
    const std::size_t batch = (set.batch_size == 0 || set.batch_size >= N) ? N : set.batch_size;
    const bool full = batch == N;
    const double s = static_cast<double>(N) / static_cast<double>(batch);
    const double rho = set.natgrad_step > 0 ? set.natgrad_step
                       : full ? (lik.family == Family::gaussian ? 1.0 : 0.5) : 0.1;
    const std::size_t per_epoch = (N + batch - 1) / batch;
    // Warm-up: with damped natural steps q needs a few iterations to approach
    // its optimum; hyperparameter gradients at a poor q are misleading (and
    // would dominate Adam's moment estimates), so Adam starts after them.
    const int warmup = rho >= 1.0 ? 0 : static_cast<int>(std::ceil(5.0 / rho));
    const bool learn = n_theta() > 0;
    std::vector<std::size_t> perm(N), idx;
    for (std::size_t i = 0; i < N; ++i) perm[i] = i;
    std::size_t pos = N;  // forces a shuffle at the start
    auto next_batch = [&]() {
      if (full) return;
      idx.clear();
      while (idx.size() < batch) {
        if (pos == N) { shuffle(perm, rng); pos = 0; }
        idx.push_back(perm[pos++]);
      }
    };
    // Initial q: one full natural step (a Newton step from the prior mean) on
    // the first batch with the likelihood evaluated at the mean.  Far better
    // than the prior for vague parametric priors and non-Gaussian likelihoods.
    next_batch();
    plug_in_ = true;
    natural_step(evaluate(full ? nullptr : &idx, false, pfor), s, 1.0);
    plug_in_ = false;
    refresh();
    info.seconds_init = seconds_since(clock);
    clock = std::chrono::steady_clock::now();
    Adam adam(set.learning_rate);
    Stopper stop(set.tol, set.patience, static_cast<double>(N));
    double epoch_sum = 0;
    for (int it = 0; it < set.max_iter; ++it) {
      if (it > 0) next_batch();
      const Accum acc = evaluate(full ? nullptr : &idx, learn && it >= warmup, pfor);
      const double obj = s * acc.sum_v - kl();
      if (!std::isfinite(obj))
        throw numerical_error("the objective became non-finite at iteration " + std::to_string(it + 1) +
                              "; try a smaller learning_rate");
      if (learn && it >= warmup) {
        const VectorXd g = gradient(acc, s);
        if (!g.allFinite())
          throw numerical_error("non-finite gradient at iteration " + std::to_string(it + 1) +
                                "; try a smaller learning_rate");
        VectorXd th = pack();
        adam.step(th, g);
        unpack(th);
      }
      natural_step(acc, s, rho);
      refresh();
      info.trace.push_back(obj);
      info.iterations = it + 1;
      bool done = false;
      const int k = it + 1 - warmup;  // iterations after the warm-up
      if (k > 0) epoch_sum += obj;
      if (k > 0 && k % per_epoch == 0) {
        done = stop.add_epoch(epoch_sum / static_cast<double>(per_epoch));
        epoch_sum = 0;
      }
      if (!monitor(it + 1, obj)) break;
      if (done) { info.converged = true; break; }
    }
    info.seconds_iter = seconds_since(clock);
    clock = std::chrono::steady_clock::now();
    // Gaussian: one full-data natural step of size 1 gives the optimal q for
    // the final hyperparameters.  Other likelihoods after minibatches: damped
    // full-data natural steps remove the minibatch noise from q (until the
    // ELBO gains less than tol per observation; at most 10).
    if (lik.family == Family::gaussian) {
      natural_step(evaluate(nullptr, false, pfor), 1.0, 1.0);
      refresh();
    } else if (!full) {
      double last = -std::numeric_limits<double>::infinity();
      for (int k = 0; k < 10; ++k) {
        const Accum acc = evaluate(nullptr, false, pfor);
        const double value = acc.sum_v - kl();
        if (value - last < set.tol * static_cast<double>(N)) break;
        last = value;
        natural_step(acc, 1.0, 0.5);
        refresh();
      }
    }
    info.elbo = elbo(pfor);
    info.seconds_final = seconds_since(clock);
    return info;
  }

  // ---- prediction ---------------------------------------------------------------
  // Latent mean and variance of the predictor at new rows Xnew (n x p), and
  // per component (columns of term_mean / term_var) when those are non-null.
  void predict(const Eigen::Ref<const MatrixXd>& Xnew, const Eigen::Ref<const VectorXd>& offset,
               VectorXd& mean, VectorXd& var, MatrixXd* term_mean, MatrixXd* term_var,
               const ParallelFor& pfor) const {
    const Index nn = Xnew.rows();
    mean.resize(nn);
    var.resize(nn);
    if (term_mean && !term_var) throw std::invalid_argument("predict(): term_var is needed with term_mean");
    if (term_mean) term_mean->resize(nn, comps.size());
    if (term_var) term_var->resize(nn, comps.size());
    blocked_for(static_cast<std::size_t>(nn), pfor, [&](std::size_t begin, std::size_t end) {
      Block b;
      b.X = Xnew.middleRows(begin, end - begin);
      features(b);
      mean.segment(begin, end - begin) = b.Phi * m + offset.segment(begin, end - begin);
      var.segment(begin, end - begin) = (b.resid + q_variance(b.Phi)).cwiseMax(0.0);
      if (!term_mean) return;
      for (std::size_t c = 0; c < comps.size(); ++c) {
        const Index o = offsets_[c], M = comps[c].size();
        const auto Phic = b.Phi.middleCols(o, M);
        term_mean->col(c).segment(begin, end - begin) = Phic * m.segment(o, M);
        const VectorXd v = ((Phic * S.block(o, o, M, M)).array() * Phic.array()).rowwise().sum();
        term_var->col(c).segment(begin, end - begin) = (v + b.rows[c].resid).cwiseMax(0.0);
      }
    });
  }

  Index offset_of(std::size_t c) const { return offsets_[c]; }

 private:
  Eigen::Map<const MatrixXd> X_;
  Eigen::Map<const VectorXd> y_, w_, o_;
  std::vector<Index> offsets_;
  std::vector<ComponentPrior> prior_;
  MatrixXd LP_;  // Cholesky factor of P
  double logdet_P_ = 0;
  bool plug_in_ = false;
  double rank_loss_ = 0;
};

}  // namespace scalegp
