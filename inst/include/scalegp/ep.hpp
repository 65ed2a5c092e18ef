// Expectation propagation for GP classification with a probit likelihood
// (seed 001: Hernandez-Lobato and Hernandez-Lobato 2016, "Scalable Gaussian
// process classification via expectation propagation").  Notation and the
// corrected equations: shared/notes/seeds/001_sep_gpc.md, sections 3.2-3.9.
//
// The model of sparse.hpp, with the FITC likelihood of a row
//   phi_i(v) = Phi(y_i (u_i + o_i) / sqrt(1 + s_i)),  u_i = w_i' v,
// (w_i the whitened features, s_i = k(x_i, x_i) - |w_i|^2, y_i = +-1) and one
// rank-one Gaussian site per row, exp(-nu_i u_i^2 / 2 + mu_i u_i), so that
//   P = I + sum_i nu_i w_i w_i',  h = sum_i mu_i w_i.
// In whitened coordinates the prior does not depend on the hyperparameters:
// a site keeps its scalars (nu_i, mu_i) and q is rebuilt with the current
// w_i (the notes' "cleaner alternative" of 3.7).  The gradient of the EP
// estimate log Z_q is the sum of the direct terms d log Z_i / d(w_i, s_i)
// with the cavities held fixed (exact at an EP fixed point, the paper's
// approximation before it).
//
// Modes: batch (all sites refined in parallel, damped, then one Adam step
// on the hyperparameters: the paper's "inner" scheme); distributed (the same
// passes over shards held elsewhere, see fit_batch's `reduce`); minibatch
// (the sites of one block refined, q updated, one stochastic gradient step);
// minibatch with one tied site (Li et al. 2015; O(M^2) memory).
#pragma once
#include "likelihoods.hpp"
#include "sparse.hpp"
#include <limits>

namespace scalegp {

// One probit site for latent u with cavity N(a, c), FITC residual s, offset o
// and label y = +-1 (notes 3.3, with the errata of Eqs. 20 and 23 applied):
//   log Z = log Phi(z),  z = y (a + o) / sqrt(b),  b = 1 + s + c.
struct ProbitSite {
  double log_z = 0, alpha = 0, beta = 0, gamma = 0;  // log Z, d/da, -d2/da2, d/db
  double nu = 0, mu = 0;                             // the moment-matched site
};

inline ProbitSite probit_site(double y, double a, double c, double s, double o) {
  ProbitSite r;
  const double b = 1.0 + s + c, sb = std::sqrt(b), ao = a + o, z = y * ao / sb;
  const double ratio = mills(z);  // phi(z) / Phi(z), log space
  r.log_z = log_Phi(z);
  r.alpha = y * ratio / sb;
  r.beta = ratio * (ratio + z) / b;  // in (0, 1 / b)
  r.gamma = -0.5 * r.alpha * ao / b;
  const double den = 1.0 - r.beta * c;  // > (1 + s) / b > 0
  r.nu = r.beta / den;
  r.mu = (r.alpha + r.beta * a) / den;
  return r;
}

// Sums over rows of the EP passes (one per group of rows; added in order).
struct EpAccum {
  double log_z = 0;   // sum of the site terms log Z~_i of log Z_q
  double change = 0;  // largest change of a site parameter proposed
  MatrixXd Q;         // q pass: sum nu_i w_i w_i' (lower triangle)
  VectorXd r;         // q pass: sum mu_i w_i
  MatrixXd PtPb;      // gradient: sum w_i Phibar_i'
  GradAccum grad;
  EpAccum& operator+=(const EpAccum& a) {
    log_z += a.log_z;
    change = std::max(change, a.change);
    Q += a.Q;
    r += a.r;
    PtPb += a.PtPb;
    grad += a.grad;
    return *this;
  }
};

class Ep : public SparseModel {
 public:
  // What a pass over rows computes:
  //   q      the natural parameters of q from the committed sites;
  //   sweep  log Z_q's site terms at the committed sites and proposed
  //          (damped) new sites; sweep_grad also the gradient;
  //   tied   sites from the shared cavity of the tied-site mode, committed.
  enum class Pass { q, sweep, sweep_grad, tied };
  // Before a pass: keep the sites, commit the proposed ones (keeping the
  // previous ones), or restore the previous ones (undoing a failed update).
  enum class Sites { keep, commit, restore };

  VectorXd nu, mu;          // committed sites of the rows held
  VectorXd nu_new, mu_new;  // proposed by the last sweep
  VectorXd nu_old, mu_old;  // committed before the last commit

  Ep(std::vector<Component> components, Settings settings, const double* X, std::size_t n, std::size_t p,
     const double* y, const double* w, const double* offset)
      : SparseModel(std::move(components), settings, X, n, p, y, w, offset),
        nu(VectorXd::Zero(n)), mu(VectorXd::Zero(n)), nu_new(nu), mu_new(nu), nu_old(nu), mu_old(nu) {}

  EpAccum make_accum(Pass pass) const {
    EpAccum a;
    const Index Mt = total_size();
    a.Q = MatrixXd::Zero(pass == Pass::q ? Mt : 0, pass == Pass::q ? Mt : 0);
    a.r = VectorXd::Zero(pass == Pass::q ? Mt : 0);
    a.PtPb = MatrixXd::Zero(pass == Pass::sweep_grad ? Mt : 0, pass == Pass::sweep_grad ? Mt : 0);
    a.grad = make_grad();
    return a;
  }

  // The pass over the groups [bounds[g], bounds[g+1]) of the rows held, one
  // accumulator per group.
  std::vector<EpAccum> pass(Pass kind, double rho, Sites sites, const std::vector<std::size_t>& bounds,
                            const ParallelFor& pfor) {
    if (sites == Sites::commit) {
      nu_old.swap(nu);
      mu_old.swap(mu);
      nu = nu_new;
      mu = mu_new;
    } else if (sites == Sites::restore) {
      nu = nu_old;
      mu = mu_old;
    }
    // Batch EP makes two passes at the same hyperparameters (a q pass, then a
    // sweep): when the rows' features are small enough they are kept between them.
    const bool cache = n() * static_cast<std::size_t>(total_size()) <= kCacheEntries;
    const bool valid = cache && cache_version_ == prior_version();
    if (cache) cache_.resize((n() + kChunkRows - 1) / kChunkRows);
    std::vector<EpAccum> out = group_reduce<EpAccum>(
        bounds, pfor, [&] { return make_accum(kind); },
        [&](EpAccum& acc, std::size_t begin, std::size_t end) {
          Block local;
          Block& b = cache ? cache_[begin / kChunkRows] : local;
          if (!valid) {
            gather(b, nullptr, begin, end);
            features(b);
          }
          if (kind == Pass::q)
            add_sites(b, nullptr, begin, nu, mu, 1.0, acc.Q, acc.r);
          else
            site_terms(b, nullptr, begin, acc, kind == Pass::tied ? 1.0 : rho, kind == Pass::sweep_grad,
                       kind == Pass::tied);
        });
    if (cache) cache_version_ = prior_version();
    return out;
  }

  EpAccum reduce_local(Pass kind, double rho, Sites sites, const ParallelFor& pfor) {
    return sum_groups(pass(kind, rho, sites, group_bounds(n()), pfor), [&] { return make_accum(kind); });
  }

  // P = I + Q, h = r from a q pass.
  void set_q(const EpAccum& a) {
    P = a.Q.selfadjointView<Eigen::Lower>();
    P.diagonal().array() += 1.0;
    h = a.r;
    refresh_q();
  }

  // log Z_q = -log|P| / 2 + h' m / 2 + sum of the site terms (notes 3.5).
  double log_evidence(const EpAccum& a) const { return -0.5 * logdet_P_ + 0.5 * h.dot(m) + a.log_z; }

  // ---- batch and distributed EP -------------------------------------------------
  // `reduce(kind, rho, sites)` runs a pass over all N rows wherever they are
  // held and returns the summed accumulator; `monitor(it, log Z_q)` as in Svgp.
  template <class Reduce, class Monitor>
  FitInfo fit_batch(std::size_t N, Reduce reduce, Monitor monitor) {
    FitInfo info;
    auto clock = std::chrono::steady_clock::now();
    double rho = set.damping > 0 ? set.damping : 0.5;
    const bool learn = n_hyper() > 0;
    const int warmup = static_cast<int>(std::ceil(5.0 / rho));  // sweeps before the first hyperparameter step
    Adam adam(set.learning_rate);
    Stopper stop(set.tol, set.patience, static_cast<double>(N));
    VectorXd theta(n_hyper()), prev(n_hyper());
    pack_hyper(theta);
    prev = theta;
    set_q(reduce(Pass::q, 0.0, Sites::keep));
    info.seconds_init = seconds_since(clock);
    clock = std::chrono::steady_clock::now();
    for (int it = 0; it < set.max_iter; ++it) {
      const bool step = learn && it >= warmup;
      bool ok = true;
      double lz = 0, change = 0;
      try {
        const EpAccum a = reduce(step ? Pass::sweep_grad : Pass::sweep, rho, Sites::keep);
        lz = log_evidence(a);
        change = a.change;
        ok = std::isfinite(lz);
        if (ok && step) {
          const VectorXd g = hyper_gradient(a.PtPb, a.grad, 1.0);
          ok = g.allFinite();
          if (ok) {
            prev = theta;
            adam.step(theta, g);
            unpack_hyper(theta);
            refresh_prior();
          }
        }
        if (ok) set_q(reduce(Pass::q, 0.0, Sites::commit));
      } catch (const numerical_error&) {
        ok = false;
      }
      if (!ok) {
        // undo: back to the sites and hyperparameters of the last successful
        // sweep; damping and learning rate halved
        back_off(info, rho, adam);
        theta = prev;
        unpack_hyper(theta);
        refresh_prior();
        set_q(reduce(Pass::q, 0.0, Sites::restore));
        continue;
      }
      info.trace.push_back(lz);
      info.iterations = it + 1;
      const bool done = learn ? (it >= warmup && stop.add_epoch(lz)) : change < 1e-8;
      if (!monitor(it + 1, lz)) break;
      if (done) {
        info.converged = true;
        break;
      }
    }
    info.seconds_iter = seconds_since(clock);
    clock = std::chrono::steady_clock::now();
    info.objective = log_evidence(reduce(Pass::sweep, 0.0, Sites::keep));
    info.seconds_final = seconds_since(clock);
    return info;
  }

  template <class Monitor>
  FitInfo fit(const ParallelFor& pfor, Rng& rng, Monitor monitor) {
    if (set.batch_size == 0 || set.batch_size >= n())
      return fit_batch(n(), [&](Pass k, double rho, Sites st) { return reduce_local(k, rho, st, pfor); }, monitor);
    return fit_minibatch(pfor, rng, monitor);
  }

  // ---- minibatch EP ---------------------------------------------------------------
  // Fixed blocks of rows (the data permuted once) visited in random order each
  // epoch.  Per block: refine its sites against the current q and put them
  // into q (P, h: rank-|block| updates), then one Adam step with the gradient
  // of the block scaled by N / |block|.  A site enters q with its features
  // at the hyperparameters of its last refinement; instead of storing those
  // features (O(NM) memory, as the paper does) a block keeps the packed
  // hyperparameters of its last visit and recomputes them.  With `tied`
  // sites all rows share one average site (no per-row state).  A block
  // update that fails (an invalid cavity, a failed factorisation, a
  // non-finite evidence or gradient) is undone as in batch EP.
  template <class Monitor>
  FitInfo fit_minibatch(const ParallelFor& pfor, Rng& rng, Monitor monitor) {
    FitInfo info;
    auto clock = std::chrono::steady_clock::now();
    const std::size_t N = n(), B = std::min(set.batch_size, N), nblocks = (N + B - 1) / B;
    const double s = static_cast<double>(N) / static_cast<double>(B);
    double rho = set.damping > 0 ? set.damping : 0.99;
    const bool learn = n_hyper() > 0;
    // blocks refined before the first hyperparameter step (as in batch EP; the
    // paper steps from the first block, waiting for a whole epoch slows it down)
    const int warmup = static_cast<int>(std::min<double>(static_cast<double>(nblocks), std::ceil(5.0 / rho)));
    const Index Mt = total_size();
    std::vector<std::size_t> perm(N), order(nblocks);
    for (std::size_t i = 0; i < N; ++i) perm[i] = i;
    for (std::size_t k = 0; k < nblocks; ++k) order[k] = k;
    shuffle(perm, rng);
    std::vector<VectorXd> snapshot(set.tied ? 0 : nblocks);
    std::vector<char> visited(nblocks, 0);
    MatrixXd Lbar = MatrixXd::Zero(Mt, Mt);  // tied site: average w w' nu and w mu
    VectorXd hbar = VectorXd::Zero(Mt);
    Adam adam(set.learning_rate);
    Stopper stop(set.tol, set.patience, static_cast<double>(N));
    VectorXd theta(n_hyper());
    pack_hyper(theta);
    std::size_t pos = nblocks;
    double epoch_sum = 0;
    info.seconds_init = seconds_since(clock);
    clock = std::chrono::steady_clock::now();
    for (int it = 0; it < set.max_iter; ++it) {
      if (pos == nblocks) {
        shuffle(order, rng);
        pos = 0;
      }
      const std::size_t k = order[pos++];
      std::vector<std::size_t> idx(perm.begin() + static_cast<std::ptrdiff_t>(k * B),
                                   perm.begin() + static_cast<std::ptrdiff_t>(std::min(N, (k + 1) * B)));
      Block b;
      gather(b, &idx, 0, idx.size());
      features(b);
      EpAccum acc = make_accum(Pass::sweep_grad);
      const bool step = learn && it >= warmup;
      // the state a failed update of this block returns to
      const MatrixXd P0 = P, Lbar0 = Lbar;
      const VectorXd h0 = h, hbar0 = hbar, theta0 = theta;
      VectorXd nu0(b.Phi.rows()), mu0(b.Phi.rows());
      for (Index i = 0; i < nu0.size(); ++i) {
        nu0(i) = nu(idx[static_cast<std::size_t>(i)]);
        mu0(i) = mu(idx[static_cast<std::size_t>(i)]);
      }
      double lz = 0;
      bool ok = true;
      try {
        if (set.tied) {
          // shared cavity: all but one copy of the tied site
          set_cavity(Lbar, hbar, static_cast<double>(N) - 1.0);
          site_terms(b, &idx, 0, acc, 1.0, step, true);
          const double g_q = -0.5 * logdet_P_ + 0.5 * h.dot(m), g_c = cavity_normaliser_;
          lz = (1.0 - static_cast<double>(N)) * g_q + static_cast<double>(N) * g_c + s * acc.log_z;
          const double eps = rho / static_cast<double>(nblocks);
          MatrixXd Qb = MatrixXd::Zero(Mt, Mt);
          VectorXd rb = VectorXd::Zero(Mt);
          add_sites(b, &idx, 0, nu, mu, 1.0, Qb, rb);
          Lbar = (1.0 - eps) * Lbar +
                 (eps / static_cast<double>(idx.size())) * MatrixXd(Qb.selfadjointView<Eigen::Lower>());
          hbar = (1.0 - eps) * hbar + (eps / static_cast<double>(idx.size())) * rb;
          P = static_cast<double>(N) * Lbar;
          P.diagonal().array() += 1.0;
          h = static_cast<double>(N) * hbar;
          refresh_q();
        } else {
          refine_block(b, idx, visited[k] ? &snapshot[k] : nullptr, rho);
          site_terms(b, &idx, 0, acc, 0.0, step, false);  // at the updated q; rho = 0 keeps the sites
          lz = -0.5 * logdet_P_ + 0.5 * h.dot(m) + s * acc.log_z;
        }
        ok = std::isfinite(lz);
        if (ok && step) {
          const VectorXd g = hyper_gradient(acc.PtPb, acc.grad, s);
          ok = g.allFinite();
          if (ok) {
            adam.step(theta, g);
            unpack_hyper(theta);
            refresh_prior();
          }
        }
      } catch (const numerical_error&) {
        ok = false;
      }
      if (!ok) {  // undo this block's update
        back_off(info, rho, adam);
        P = P0;
        h = h0;
        Lbar = Lbar0;
        hbar = hbar0;
        for (Index i = 0; i < nu0.size(); ++i) {
          nu(idx[static_cast<std::size_t>(i)]) = nu0(i);
          mu(idx[static_cast<std::size_t>(i)]) = mu0(i);
        }
        theta = theta0;
        unpack_hyper(theta);
        refresh_prior();
        refresh_q();
        continue;
      }
      if (!set.tied) {  // the block's sites now carry the features at theta0
        snapshot[k] = theta0;
        visited[k] = 1;
      }
      info.trace.push_back(lz);
      info.iterations = it + 1;
      bool done = false;
      if (it >= static_cast<int>(nblocks)) {
        epoch_sum += lz;
        if ((it + 1) % nblocks == 0) {
          done = stop.add_epoch(epoch_sum / static_cast<double>(nblocks));
          epoch_sum = 0;
        }
      }
      if (!monitor(it + 1, lz)) break;
      if (done) {
        info.converged = true;
        break;
      }
    }
    info.seconds_iter = seconds_since(clock);
    clock = std::chrono::steady_clock::now();
    // Final full-data passes at the final hyperparameters: per-row sites
    // (from the tied cavity), q rebuilt consistently, damped parallel sweeps
    // until no site moves by more than 1e-3 (at most 10), the evidence.
    if (set.tied) {
      set_cavity(Lbar, hbar, static_cast<double>(N) - 1.0);
      reduce_local(Pass::tied, 1.0, Sites::keep, pfor);
    }
    set_q(reduce_local(Pass::q, 0.0, Sites::keep, pfor));
    for (int k = 0; k < 10; ++k) {
      const EpAccum a = reduce_local(Pass::sweep, 0.5, Sites::keep, pfor);
      set_q(reduce_local(Pass::q, 0.0, Sites::commit, pfor));
      if (a.change < 1e-3) break;
    }
    info.objective = log_evidence(reduce_local(Pass::sweep, 0.0, Sites::keep, pfor));
    info.seconds_final = seconds_since(clock);
    return info;
  }

 private:
  // After an update that failed or gave a non-finite value (and was undone):
  // count it, halve the damping and the learning rate; give up after 20.
  static void back_off(FitInfo& info, double& rho, Adam& adam) {
    if (++info.failures > 20)
      throw numerical_error("EP failed to make a finite update 20 times; try a smaller learning_rate or damping");
    rho *= 0.5;
    adam.scale_rate(0.5);
  }

  static constexpr std::size_t kCacheEntries = std::size_t(1) << 22;  // rows x features kept (about 100 MB)
  std::vector<Block> cache_;  // features per chunk of rows, at prior version cache_version_
  long cache_version_ = -1;
  MatrixXd Sc_;  // shared cavity of the tied mode
  VectorXd mc_;
  double cavity_normaliser_ = 0;  // its log normaliser g = -log|P_c| / 2 + h_c' m_c / 2

  std::size_t row_of(const std::vector<std::size_t>* idx, std::size_t begin, Index i) const {
    return idx ? (*idx)[begin + static_cast<std::size_t>(i)] : begin + static_cast<std::size_t>(i);
  }

  // Shared cavity P_c = I + k Lbar, h_c = k hbar.
  void set_cavity(const MatrixXd& Lbar, const VectorXd& hbar, double k) {
    MatrixXd Pc = k * Lbar;
    Pc.diagonal().array() += 1.0;
    const MatrixXd L = jitter_cholesky(Pc, 0.0, "the cavity precision", 3);
    Sc_ = chol_inverse(L);
    mc_ = Sc_ * (k * hbar);
    cavity_normaliser_ = -0.5 * logdet_chol(L) + 0.5 * (k * hbar).dot(mc_);
  }

  // Q += sum scale nu_i w_i w_i' (lower triangle), r += sum scale mu_i w_i over the rows of b.
  void add_sites(const Block& b, const std::vector<std::size_t>* idx, std::size_t begin, const VectorXd& nus,
                 const VectorXd& mus, double scale, MatrixXd& Q, VectorXd& r) const {
    const Index nb = b.Phi.rows();
    VectorXd sq(nb), mr(nb);
    for (Index i = 0; i < nb; ++i) {
      const std::size_t row = row_of(idx, begin, i);
      sq(i) = std::sqrt(std::max(0.0, nus(row)));
      mr(i) = mus(row);
    }
    const MatrixXd U = b.Phi.transpose() * sq.asDiagonal();
    Q.selfadjointView<Eigen::Lower>().rankUpdate(U, scale);
    r.noalias() += scale * (b.Phi.transpose() * mr);
  }

  // The EP quantities of the rows of block b (features computed): cavities,
  // log Z_q's site terms, proposed sites (damped by rho) in nu_new / mu_new
  // (`shared`: from the tied cavity, and committed) and, with `grad`, the
  // gradient statistics.
  //   per-row cavity of u_i: c = d / (1 - nu d), a = (e - d mu) / (1 - nu d),
  //   with d = w' S w, e = w' m (notes 3.3);
  //   d log Z_i / d w_i = alpha mu^{\i} + 2 gamma S^{\i} w_i
  //                     = alpha m + kappa S w_i  (kappa = alpha delta + 2 gamma / (1 - nu d)),
  //   d log Z_i / d s_i = gamma, and s_i = k(x, x) - |w_i|^2.
  void site_terms(const Block& b, const std::vector<std::size_t>* idx, std::size_t begin, EpAccum& acc, double rho,
                  bool grad, bool shared) {
    const Index nb = b.Phi.rows();
    const MatrixXd& Sq = shared ? Sc_ : S;
    const VectorXd& mq = shared ? mc_ : m;
    const MatrixXd T = b.Phi * Sq;
    const VectorXd d = (T.array() * b.Phi.array()).rowwise().sum();
    const VectorXd e = b.Phi * mq;
    VectorXd alpha(nb), kappa(nb), gam(nb);
    for (Index i = 0; i < nb; ++i) {
      const std::size_t row = row_of(idx, begin, i);
      const double y = b.y(i) > 0.5 ? 1.0 : -1.0;
      const double nv = shared ? 0.0 : nu(row), mt = shared ? 0.0 : mu(row);
      const double den = 1.0 - nv * d(i);
      if (!(den > 0)) {  // invalid cavity: reported through a non-finite evidence
        acc.log_z = std::numeric_limits<double>::quiet_NaN();
        alpha(i) = kappa(i) = gam(i) = 0;
        continue;
      }
      const double c = d(i) / den, a = (e(i) - d(i) * mt) / den, delta = (nv * e(i) - mt) / den;
      const ProbitSite st = probit_site(y, a, c, b.resid(i), b.o(i));
      acc.log_z += st.log_z + (shared ? 0.0 : -0.5 * std::log(den) +
                                                0.5 * (nv * e(i) * e(i) - 2 * mt * e(i) + mt * mt * d(i)) / den);
      const double nn = rho * st.nu + (1 - rho) * nv, mn = rho * st.mu + (1 - rho) * mt;
      acc.change = std::max(acc.change, std::max(std::abs(nn - nv), std::abs(mn - mt)));
      nu_new(row) = nn;
      mu_new(row) = mn;
      if (shared) {
        nu(row) = nn;
        mu(row) = mn;
      }
      alpha(i) = st.alpha;
      gam(i) = st.gamma;
      kappa(i) = st.alpha * delta + 2.0 * st.gamma / den;
    }
    if (!grad) return;
    MatrixXd Phibar = alpha * mq.transpose();
    Phibar.noalias() += kappa.asDiagonal() * T;
    Phibar.noalias() -= 2.0 * gam.asDiagonal() * b.Phi;
    acc.PtPb.noalias() += b.Phi.transpose() * Phibar;
    row_gradient(b, Phibar, gam, acc.grad);
  }

  // Minibatch step for the rows idx of block b: each site is removed with the
  // features of its last refinement (at hyperparameters `old`; none on the
  // first visit), refined with the current features against that cavity
  // (notes 3.9, in whitened form) and put back; q is updated.
  //   cavity: c = d_nn + C1 d_no^2,  a = e_n + delta d_no,
  //   C1 = nu / (1 - nu d_oo),  delta = (nu e_o - mu) / (1 - nu d_oo).
  void refine_block(const Block& b, const std::vector<std::size_t>& idx, const VectorXd* old, double rho) {
    const Index nb = b.Phi.rows(), Mt = total_size();
    const MatrixXd T = b.Phi * S;
    const VectorXd dnn = (T.array() * b.Phi.array()).rowwise().sum(), en = b.Phi * m;
    Block bo;
    VectorXd doo = VectorXd::Zero(nb), dno = VectorXd::Zero(nb), eo = VectorXd::Zero(nb);
    if (old) {
      bo.X = b.X;
      const Hyper hyp = at(*old);
      features(bo, &hyp);
      const MatrixXd To = bo.Phi * S;
      doo = (To.array() * bo.Phi.array()).rowwise().sum();
      dno = (To.array() * b.Phi.array()).rowwise().sum();
      eo = bo.Phi * m;
    }
    VectorXd nn(nb), mn(nb);
    for (Index i = 0; i < nb; ++i) {
      const std::size_t row = idx[static_cast<std::size_t>(i)];
      const double nv = nu(row), mt = mu(row), den = 1.0 - nv * doo(i);
      if (!(den > 0))
        throw numerical_error("an invalid EP cavity in minibatch EP; try a smaller learning_rate");
      const double c = dnn(i) + nv / den * dno(i) * dno(i), a = en(i) + (nv * eo(i) - mt) / den * dno(i);
      const double y = b.y(i) > 0.5 ? 1.0 : -1.0;
      const ProbitSite st = probit_site(y, a, c, b.resid(i), b.o(i));
      nn(i) = rho * st.nu + (1 - rho) * nv;
      mn(i) = rho * st.mu + (1 - rho) * mt;
    }
    MatrixXd Q = MatrixXd::Zero(Mt, Mt);
    VectorXd r = VectorXd::Zero(Mt);
    if (old) add_sites(bo, &idx, 0, nu, mu, -1.0, Q, r);
    for (Index i = 0; i < nb; ++i) {
      nu(idx[static_cast<std::size_t>(i)]) = nn(i);
      mu(idx[static_cast<std::size_t>(i)]) = mn(i);
    }
    add_sites(b, &idx, 0, nu, mu, 1.0, Q, r);
    P += MatrixXd(Q.selfadjointView<Eigen::Lower>());
    h += r;
    refresh_q();
  }
};

}  // namespace scalegp
