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
#include "likelihoods.hpp"
#include "sparse.hpp"

namespace scalegp {

class Svgp : public SparseModel {
 public:
  Likelihood lik;

  Svgp(std::vector<Component> components, Likelihood likelihood, Settings settings,
       const double* X, std::size_t n, std::size_t p, const double* y, const double* w,
       const double* offset)
      : SparseModel(std::move(components), settings, X, n, p, y, w, offset), lik(std::move(likelihood)) {}

  double kl() const {
    return 0.5 * (S.trace() + m.squaredNorm() - static_cast<double>(total_size()) + logdet_P_);
  }

  // ---- one pass over a set of rows --------------------------------------------
  struct Accum {
    double sum_v = 0, dlognoise = 0;
    VectorXd r;                      // Phi' g
    MatrixXd Q;                      // Phi' diag(gamma) Phi (lower triangle)
    GradAccum grad;                  // data part of the hyperparameter gradient
    Accum& operator+=(const Accum& a) {
      sum_v += a.sum_v;
      dlognoise += a.dlognoise;
      r += a.r;
      Q += a.Q;
      grad += a.grad;
      return *this;
    }
  };

  Accum make_accum() const {
    Accum a;
    const Index Mt = total_size();
    a.r = VectorXd::Zero(Mt);
    a.Q = MatrixXd::Zero(Mt, Mt);
    a.grad = make_grad();
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
    row_gradient(b, Phibar, gam, acc.grad);
  }

  // ---- gradients and updates -------------------------------------------------
  // Number of free parameters moved by Adam: the hyperparameters, then the noise.
  Index n_theta() const { return n_hyper() + (lik.has_noise() && set.learn_noise ? 1 : 0); }

  VectorXd pack() const {
    VectorXd th(n_theta());
    pack_hyper(th.head(n_hyper()));
    if (lik.has_noise() && set.learn_noise) th(n_hyper()) = lik.log_noise;
    return th;
  }

  void unpack(const VectorXd& th) {
    unpack_hyper(th.head(n_hyper()));
    if (lik.has_noise() && set.learn_noise) lik.log_noise = std::min(10.0, std::max(-20.0, th(n_hyper())));
  }

  // Full gradient of the ELBO estimate in the packed layout, given the
  // accumulated data statistics of a batch with scale s = N / |batch|.
  VectorXd gradient(const Accum& acc, double s) const {
    VectorXd gr(n_theta());
    const Index Mt = total_size();
    MatrixXd Q = acc.Q.selfadjointView<Eigen::Lower>();
    // Phi' Phibar = r m' + 2 Q (S - I)
    const MatrixXd PtPb = acc.r * m.transpose() + 2.0 * Q * (S - MatrixXd::Identity(Mt, Mt));
    gr.head(n_hyper()) = hyper_gradient(PtPb, acc.grad, s);
    if (lik.has_noise() && set.learn_noise) gr(n_hyper()) = s * acc.dlognoise;
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
    info.objective = elbo(pfor);
    info.seconds_final = seconds_since(clock);
    return info;
  }

 private:
  bool plug_in_ = false;
  double rank_loss_ = 0;
};

}  // namespace scalegp
