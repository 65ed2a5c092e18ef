// The state and the passes of EP for GP classification (Hernandez-Lobato
// and Hernandez-Lobato 2016): the sparse model of gaussian_q.hpp with the
// FITC likelihood of a row
//   phi_i(v) = Phi(y_i (u_i + o_i) / sqrt(1 + s_i)),  u_i = w_i' v,
// (w_i the whitened features, s_i = k(x_i, x_i) - |w_i|^2, y_i = +-1) and one
// rank-one Gaussian site per row, exp(-nu_i u_i^2 / 2 + mu_i u_i), so that
//   P = I + sum_i nu_i w_i w_i',  h = sum_i mu_i w_i.
// In whitened coordinates the prior does not depend on the hyperparameters:
// a site keeps its scalars (nu_i, mu_i) and q is rebuilt with the current
// w_i.  The EP estimate of the log marginal likelihood is
//   log Z_q = -log|P| / 2 + h' m / 2 + sum_i log Z~_i
// (log Z~_i: the site's normaliser relative to its cavity), and its gradient
// is the sum of the direct terms d log Z~_i / d(w_i, s_i) with the cavities
// held fixed (exact at an EP fixed point).  The drivers that run EP are in
// ep.hpp (batch, distributed) and ep_minibatch.hpp (minibatch, tied sites).
#pragma once
#include "ep_site.hpp"
#include "gaussian_q.hpp"
#include <limits>

namespace scalegp {

struct EpSettings {
  double damping = -1;  // <= 0: automatic (0.5 batch, 0.99 minibatches)
  bool tied = false;    // minibatch EP with one tied site (O(M^2) memory)
  bool inner = false;   // batch EP: one Adam step per sweep (the paper's scheme) instead of L-BFGS
};

// Sums over rows of the EP passes (one per group of rows; added in order).
struct EpAccum {
  double log_z = 0;   // sum of the site terms log Z~_i of log Z_q
  double change = 0;  // largest change of a site parameter proposed
  // sweeps: sum over sites of (proposed - committed) * (committed - before
  // the last commit), and of the square of the latter (their ratio shows
  // whether successive sweeps move the sites back and forth)
  double turn = 0, last_sq = 0;
  MatrixXd Q;         // q pass: sum nu_i w_i w_i' (lower triangle)
  VectorXd r;         // q pass: sum mu_i w_i
  MatrixXd PtPb;      // gradient: sum w_i Phibar_i'
  GradAccum grad;
  EpAccum& operator+=(const EpAccum& a) {
    log_z += a.log_z;
    change = std::max(change, a.change);
    turn += a.turn;
    last_sq += a.last_sq;
    Q += a.Q;
    r += a.r;
    PtPb += a.PtPb;
    grad += a.grad;
    return *this;
  }
};

class Ep : public WhitenedGaussianModel {
 public:
  // What a pass over rows computes:
  //   q      the natural parameters of q from the committed sites;
  //   sweep  log Z_q's site terms at the committed sites and proposed
  //          (damped) new sites; sweep_grad also the gradient;
  //   tied   sites from the shared cavity of the tied-site mode, committed.
  enum class Pass { q, sweep, sweep_grad, tied };
  // Before a pass: keep the sites, commit the proposed ones (keeping the
  // previous ones), restore the previous ones (undoing a failed update),
  // save the sites, or load the saved ones.
  enum class Sites { keep, commit, restore, save, load };

  EpSettings opt;
  VectorXd nu, mu;          // committed sites of the rows held
  VectorXd nu_new, mu_new;  // proposed by the last sweep
  VectorXd nu_old, mu_old;  // committed before the last commit
  VectorXd nu_saved, mu_saved;  // saved by Sites::save

  Ep(std::vector<Component> components, Settings settings, EpSettings options, const double* X, std::size_t n,
     std::size_t p, const double* y, const double* w, const double* offset)
      : WhitenedGaussianModel(std::move(components), settings, X, n, p, y, w, offset),
        opt(options),
        nu(VectorXd::Zero(n)),
        mu(VectorXd::Zero(n)),
        nu_new(nu),
        mu_new(nu),
        nu_old(nu),
        mu_old(nu),
        nu_saved(nu),
        mu_saved(nu) {}

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
    } else if (sites == Sites::save) {
      nu_saved = nu;
      mu_saved = mu;
    } else if (sites == Sites::load) {
      nu = nu_saved;
      mu = mu_saved;
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

  // log Z_q = -log|P| / 2 + h' m / 2 + sum of the site terms.
  double log_evidence(const EpAccum& a) const { return -0.5 * logdet_P_ + 0.5 * h.dot(m) + a.log_z; }

  // What a fit reports from its last pass on all rows (a sweep, with the
  // gradient statistics when there are hyperparameters): the evidence, the
  // log prior and the gradient of their sum.
  void report(const EpAccum& a, FitInfo& info) const {
    info.objective = log_evidence(a);
    info.log_prior = log_prior();
    if (n_hyper() > 0) {
      info.gradient = hyper_gradient(a.PtPb, a.grad, 1.0);
      log_prior(&info.gradient);
    }
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
  // (`shared`: from the tied cavity of set_cavity(), and committed) and, with
  // `grad`, the gradient statistics.
  //   per-row cavity of u_i: c = d / (1 - nu d), a = (e - d mu) / (1 - nu d),
  //   with d = w' S w, e = w' m;
  //   d log Z_i / d w_i = alpha mu^{\i} + 2 gamma S^{\i} w_i
  //                     = alpha m + kappa S w_i  (kappa = alpha delta + 2 gamma / (1 - nu d)),
  //   d log Z_i / d s_i = gamma, and s_i = k(x, x) - |w_i|^2.
  void site_terms(const Block& b, const std::vector<std::size_t>* idx, std::size_t begin, EpAccum& acc, double rho,
                  bool grad, bool shared) {
    const Index nb = b.Phi.rows();
    const MatrixXd& Sq = shared ? Sc_ : S;
    const VectorXd& mq = shared ? mc_ : m;
    // d = rows of Phi Sq Phi'; T = Phi Sq only for the gradient (else d by a
    // triangular solve, half the flops)
    MatrixXd T;
    VectorXd d;
    if (grad || shared) {
      T = b.Phi * Sq;
      d = (T.array() * b.Phi.array()).rowwise().sum();
    } else {
      d = q_variance(b.Phi);
    }
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
      if (!shared) {
        const double dn = nv - nu_old(row), dm = mt - mu_old(row);
        acc.turn += (nn - nv) * dn + (mn - mt) * dm;
        acc.last_sq += dn * dn + dm * dm;
      }
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
  // and put back; q is updated (the old/new-feature cavity of minibatch EP,
  // in whitened form):
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
      if (!(den > 0)) throw numerical_error("an invalid EP cavity in minibatch EP; try a smaller learning_rate");
      const double c = dnn(i) + nv / den * dno(i) * dno(i), a = en(i) + (nv * eo(i) - mt) / den * dno(i);
      const double y = b.y(i) > 0.5 ? 1.0 : -1.0;
      const ProbitSite st = probit_site(y, a, c, b.resid(i), b.o(i));
      if (!std::isfinite(st.log_z)) throw numerical_error("an invalid EP cavity in minibatch EP");
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

  // ---- tied sites (Li et al. 2015): q = prior x N copies of one average
  // site (precision Lbar, shift hbar); the cavity of a row is N - 1 copies.
  // Sets the shared cavity P_c = I + k Lbar, h_c = k hbar (used by
  // site_terms with `shared`) and returns g(q) - g(cavity) for the current
  // q = the cavity times one more copy, where g = -log|P| / 2 + h' S h / 2 is
  // a Gaussian's log normaliser.  The difference is formed without
  // subtracting the two O(N) normalisers:
  //   log|P_q| - log|P_c| = log|I + L_c^{-1} Lbar L_c^{-T}|,
  //   h_q' m_q - h_c' m_c = h_c' (m_q - m_c) + hbar' m_q,  m_q - m_c = S_q (hbar - Lbar m_c).
  double set_cavity(const MatrixXd& Lbar, const VectorXd& hbar, double k) {
    MatrixXd Pc = k * Lbar;
    Pc.diagonal().array() += 1.0;
    const Eigen::LLT<MatrixXd> llt(Pc);
    if (llt.info() != Eigen::Success) throw numerical_error("the tied-site cavity precision is not positive definite");
    const MatrixXd L = llt.matrixL();
    Sc_ = chol_inverse(L);
    const VectorXd hc = k * hbar;
    mc_ = Sc_ * hc;
    MatrixXd A = Lbar;
    L.triangularView<Eigen::Lower>().solveInPlace(A);  // L^{-1} Lbar
    solve_right_LT(L, A);                              // L^{-1} Lbar L^{-T}
    A.diagonal().array() += 1.0;
    const Eigen::LLT<MatrixXd> la(A);
    if (la.info() != Eigen::Success) throw numerical_error("the tied-site precision is not positive definite");
    const double dlogdet = logdet_chol(la.matrixL());
    const VectorXd dm = S * (hbar - Lbar * mc_);
    return -0.5 * dlogdet + 0.5 * (hc.dot(dm) + hbar.dot(m));
  }

 private:
  static constexpr std::size_t kCacheEntries = std::size_t(1) << 22;  // rows x features kept (about 100 MB)
  std::vector<Block> cache_;  // features per chunk of rows, at prior version cache_version_
  long cache_version_ = -1;
  MatrixXd Sc_;  // shared cavity of the tied mode
  VectorXd mc_;

  static std::size_t row_of(const std::vector<std::size_t>* idx, std::size_t begin, Index i) {
    return idx ? (*idx)[begin + static_cast<std::size_t>(i)] : begin + static_cast<std::size_t>(i);
  }
};

}  // namespace scalegp
