// QSGP: quadruply stochastic variational inference for a Gaussian process in
// weight space (Evans and Nair 2018), here on random Fourier features (class
// Qsgp) and, at the end of this file, on inducing points at every training
// row (class QsgpGram, the paper's m = n variant).
//
// Model (internal scale): f(x) = sum over blocks b of phi_b(x)' w_b.  A gp()
// term is a block of m_b = 2 nf random Fourier features
//   phi(x) = nf^{-1/2} [cos(omega_k' x), k = 1..nf; sin(omega_k' x), k = 1..nf],
// omega_k = eps_k / ell (elementwise; ell the ARD lengthscales), with eps_k
// drawn once from the kernel's spectral density at unit lengthscale (SE:
// N(0, I); Matern nu: multivariate t with 2 nu degrees of freedom), and prior
// w_b ~ N(0, sigma_f^2 I), i.e. prior precision s_b = 1 / sigma_f^2, so that
// phi(x)' phi(z) sigma_f^2 approximates the kernel.  The parametric columns
// are one block with features X_p diag(prior_sd) and prior N(0, I).
// Likelihood: Gaussian, y_l - offset_l ~ N(f(x_l), sigma^2 / w_l); or
// binomial (logit, probit; y_l a proportion of w_l trials) or Poisson (log
// link) with latent predictor offset_l + f(x_l) (likelihoods.hpp).
//
// Posterior: q(w) = N(mu, C C') with C diagonal (mean field, QSGP-0),
// c_i = exp(rho_i), or, per gp() term, the chevron factor of Challis and
// Barber (QSGP-kappa; see "Chevron" below).
// ELBO = sum_l E_q log p(y_l | w) - KL(q || p) with
//   E_q log p(y_l | w) = -1/2 log(2 pi sigma^2 / w_l) - w_l Q_l / (2 sigma^2),
//   Q_l = (r_l - a_l)^2 + v_l,  a_l = phi_l' mu,  v_l = sum_i phi_li^2 c_i^2,
// (eq. 1-2 of the paper, row by row).  Per iteration the estimator samples,
// uniformly with replacement, n~ rows and, per gp() term, two independent
// sets I, J of m~ feature indices (the parametric block is always used in
// full); with alpha = m_b / m~ the block-wise unbiased estimates
//   u_l = sum_b alpha sum_{i in I} phi_li mu_i,  w_l = the same over J,
//   d_l = sum_b alpha sum_{i in I} phi_li^2 c_i^2
// give the unbiased Q^_l = r^2 - r (u + w) + u w + d (u and w independent:
// E[u w] = a^2), so that (n / n~) sum_l E^_l - KL^ (KL estimated over I) is
// unbiased for the ELBO (Theorems 1-2 of the paper, with the single-index
// estimator for the diagonal terms that a diagonal C and diagonal prior
// precision allow).  Its gradient in mu, rho and the hyperparameters (log
// kernel variances, log lengthscales, log noise) is unbiased too.  A block
// whose feature batch is all its features, and a batch of all rows, are used
// in full (I = J = all), so that the estimator is then exact.  An iteration
// costs O(n~ m~ d) per term, independent of n and m.
//
// Chevron (QsgpSettings::dense_columns = kappa > 0): per gp() term the
// first kappa columns of C, in the chevron order pos(i) = 2 (i mod nf) +
// [i is a sine] (the cosine and sine of a frequency side by side; the glue
// sorts the frequencies by |omega| at the starting lengthscales, so that the
// dense columns belong to the smoothest features), are dense below the
// diagonal: column r < kappa has entries c_ir = L_b(i, r) at the rows with
// pos(i) > r, its diagonal exp(rho) at pos(i) = r, zeros above; the other
// columns are diagonal.  Then phi' Sigma phi = sum_{r<kappa} (phi' c_r)^2 +
// sum_{pos(i)>=kappa} phi_i^2 c_i^2, and per row and term q = z_I' z_J with
// z_I = alpha C_{I,:}' phi_I, z_J the same over J (independent: E q = the
// dense part), added to d, whose sum is then over pos(i) >= kappa only; the
// KL's trace term over I adds each sampled row's |L_b(i, :)|^2.  Unbiased
// as before; an iteration costs O(n~ m~ kappa) more per term.  Memory
// 2 kappa m_b (L_b and its AdaGrad accumulator).  fit() starts L at 0 (the
// mean field) and steps it by AdaGrad in units of each column's diagonal.
//
// Control variate (Gaussian likelihood; the paper's eq. 3, Proposition 3 and
// Appendix F): a fixed set P of nbar support rows, drawn once, and the
// features phi0 at the hyperparameters of the start of the iterations give
// the zero-mean correction (n / nbar) sum_{p in P} w_p [u0_p w0_p - a_p^2] /
// (2 sigma^2), u0, w0 estimated from the same I, J as u, w, and a = Phi0_P mu
// tracked under the sparse updates in O(nbar m~) per iteration; it cancels
// most of the feature-sampling noise of the u w term (control_variate()).
// Chevron: one more per dense column r of each term (the paper's App. I.1:
// QSGP-100 had 101), (n / nbar) sum_p w_p [z0_Ip,r z0_Jp,r - beta_pr^2] /
// (2 sigma^2) with z0 as z above at the frozen features and beta_b =
// Phi0_{P,b} times the block's dense columns, tracked like a (O(nbar m~
// kappa) per iteration); it cancels much of the noise of the dense part q.
//
// Non-Gaussian likelihoods: E_q log p(y_l | w) = F_l(a_l, sqrt(v_l)) with
// F_l(a, s) = E_{z ~ N(0, 1)} log p(y_l | offset_l + a + s z), jointly
// concave in (a, s) for a log-concave likelihood and non-increasing in
// |s|.  The paper's Theorem 3 (eq. 5) as printed puts z v_l where
// z sqrt(v_l) is meant, and is not a lower bound when v_l < 1; it is not
// used.  Instead the tangent-line bound (implementation notes, section
// 3.5): with a^_l = (u_l + w_l) / 2 (unbiased for a_l), d_l as above
// (unbiased for v_l, >= 0) and a tangent point t_l > 0 that does not depend
// on the draw, s^_l = (d_l + t_l) / (2 sqrt(t_l)) has E s^_l >= sqrt(v_l)
// (AM-GM), so by Jensen E F_l(a^_l, s^_l) <= F_l(a_l, sqrt(v_l)): the
// estimate (n / n~) sum_l F_l(a^_l, s^_l) - KL^ is in expectation a lower
// bound on the ELBO, whatever t.  t_l = sum over blocks of: the block's
// exact variance at row l when it is used in full (the parametric block
// always), else the mean of its c_i^2 (for random features with
// phi_k^2 + phi_{k+nf}^2 = 1 / nf this is the block's variance at every x
// up to (1 / 2nf) sum_k cos(2 omega_k' x) (c_k^2 - c_{k+nf}^2); t only sets
// the tightness, the gap being second order in sqrt(t) - sqrt(v)); fit()
// tracks these means under the sparse updates.  The means are held
// constant in the gradient (which then flows through a^, d and the blocks
// used in full only: sparse); so the gradient is the exact gradient of the
// estimate at fixed means.  With all rows and features t_l = v_l and the
// estimate is the exact ELBO (and its gradient the exact gradient, as
// d s^ / d t = 0 at t = v).  F and its derivatives
// are Likelihood::expect() (likelihoods.hpp's series and quadrature rules
// for logit and probit, closed form for Poisson, exp() capped there against
// overflow).
//
// Optimisation: mu starts at 0 and each c_i at its optimum for a diagonal C
// (the paper's Proposition 1; non-Gaussian: with the log-likelihood's
// curvature at f = offset in place of w_l / sigma^2) at the initial
// hyperparameters, estimated from a sample of rows; then AdaGrad on mu and rho (sparse: only the sampled
// coordinates move; the parametric block's mu in units of its coefficients, i.e. its
// whitened weights' steps divided by prior_sd), Adam on the hyperparameters, frozen for the first `freeze` fraction
// of iterations; both step sizes decay exponentially to `final_rate` times
// their start at the last iteration.  Rows are reduced in fixed groups
// (parallel.hpp), so a fit is bit-identical for any number of threads.
#pragma once
#include "inducing.hpp"
#include "kernels.hpp"
#include "likelihoods.hpp"
#include "optim.hpp"
#include "parallel.hpp"
#include "settings.hpp"
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>
#include <vector>

namespace scalegp {

struct QsgpSettings {
  Index features = 8192;          // features per gp() term (even: cos and sin of features / 2 frequencies)
  Index feature_batch = 512;      // features sampled per term, per index set, per iteration
  double variational_rate = 0.1;  // AdaGrad step of mu and rho
  double adagrad_init = 0.1;      // AdaGrad's initial accumulator
  double final_rate = 0.1;        // step sizes at the last iteration, as a fraction of the first
  double freeze = 0.1;            // fraction of iterations with the hyperparameters frozen
  std::size_t init_rows = 2000;   // rows that estimate phi_i' W phi_i for the initial c_i (init_diagonal)
  std::size_t control_rows = 0;   // support rows of the control variate (Gaussian; 0: none)
  Index dense_columns = 0;        // chevron: dense columns of C per gp() term (0: mean field)
};

// Per block of a draw: which entries of I and of J are the first occurrence
// of their index in (I, J) (I first), and the number of distinct indices |U|.
inline Index first_occurrences(const std::vector<Index>& I, const std::vector<Index>& J, std::vector<char>& fI,
                               std::vector<char>& fJ) {
  std::vector<std::pair<Index, std::size_t>> all;
  all.reserve(I.size() + J.size());
  for (std::size_t e = 0; e < I.size(); ++e) all.emplace_back(I[e], e);
  for (std::size_t e = 0; e < J.size(); ++e) all.emplace_back(J[e], I.size() + e);
  std::sort(all.begin(), all.end());
  fI.assign(I.size(), 0);
  fJ.assign(J.size(), 0);
  Index distinct = 0;
  for (std::size_t k = 0; k < all.size(); ++k) {
    if (k > 0 && all[k].first == all[k - 1].first) continue;
    ++distinct;
    const std::size_t pos = all[k].second;
    if (pos < I.size())
      fI[pos] = 1;
    else
      fJ[pos - I.size()] = 1;
  }
  return distinct;
}

// The rows of one iteration: `batch` of the n rows uniformly with
// replacement, or all of them in order when batch is 0 or >= n; `scale`
// becomes n / (rows drawn).
inline std::vector<std::size_t> draw_rows(std::size_t batch, std::size_t n, Rng& rng, double& scale) {
  const std::size_t nb = batch == 0 || batch >= n ? n : batch;
  std::vector<std::size_t> rows(nb);
  for (std::size_t k = 0; k < nb; ++k) rows[k] = nb == n ? k : uniform_index(rng, n);
  scale = static_cast<double>(n) / static_cast<double>(nb);
  return rows;
}

// Two independent sets I, J of mt of the indices 0..m-1, uniformly with
// replacement (I first); all of them, with I = J, when mt >= m.
inline void draw_index_pair(Index m, Index mt, Rng& rng, std::vector<Index>& I, std::vector<Index>& J) {
  if (mt >= m) {
    I.resize(static_cast<std::size_t>(m));
    for (Index i = 0; i < m; ++i) I[static_cast<std::size_t>(i)] = i;
    J = I;
    return;
  }
  I.resize(static_cast<std::size_t>(mt));
  J.resize(static_cast<std::size_t>(mt));
  for (auto& i : I) i = static_cast<Index>(uniform_index(rng, static_cast<std::size_t>(m)));
  for (auto& j : J) j = static_cast<Index>(uniform_index(rng, static_cast<std::size_t>(m)));
}

// A control variate's support rows: `rows` of the n rows without
// replacement (a partial Fisher-Yates shuffle), sorted; all when rows >= n.
inline std::vector<std::size_t> support_rows(std::size_t rows, std::size_t n, Rng& rng) {
  std::vector<std::size_t> idx(n);
  for (std::size_t l = 0; l < n; ++l) idx[l] = l;
  if (rows >= n) return idx;
  for (std::size_t k = 0; k < rows; ++k) std::swap(idx[k], idx[k + uniform_index(rng, n - k)]);
  idx.resize(rows);
  std::sort(idx.begin(), idx.end());
  return idx;
}

// A standard normal by Box-Muller from the core's generator (portable: the
// same numbers on every platform, unlike std::normal_distribution).
inline double standard_normal(Rng& rng) {
  double u1 = uniform01(rng);
  while (u1 <= 0) u1 = uniform01(rng);
  const double u2 = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * kPi * u2);
}

// nf x d frequencies at unit lengthscale from the kernel's spectral density:
// SE N(0, I); Matern 3/2 and 5/2 multivariate t with 3 and 5 degrees of
// freedom (z sqrt(dof / g), g ~ chi^2_dof).
inline MatrixXd rff_frequencies(KernelType type, Index nf, Index d, Rng& rng) {
  MatrixXd eps(nf, d);
  const int dof = type == KernelType::matern32 ? 3 : type == KernelType::matern52 ? 5 : 0;
  for (Index k = 0; k < nf; ++k) {
    for (Index j = 0; j < d; ++j) eps(k, j) = standard_normal(rng);
    if (dof > 0) {
      double g = 0;
      for (int q = 0; q < dof; ++q) {
        const double z = standard_normal(rng);
        g += z * z;
      }
      eps.row(k) *= std::sqrt(dof / g);
    }
  }
  return eps;
}

// The rows of eps reordered by |eps_k / ell| ascending (stable; log_ls one
// per column or a single one): the chevron's dense columns then belong to
// the smoothest features.
inline MatrixXd sort_frequencies(const MatrixXd& eps, const VectorXd& log_ls) {
  VectorXd norm(eps.rows());
  for (Index k = 0; k < eps.rows(); ++k) {
    double s = 0;
    for (Index d = 0; d < eps.cols(); ++d) {
      const double o = eps(k, d) / std::exp(log_ls.size() == 1 ? log_ls(0) : log_ls(d));
      s += o * o;
    }
    norm(k) = s;
  }
  std::vector<Index> ord(static_cast<std::size_t>(eps.rows()));
  for (Index k = 0; k < eps.rows(); ++k) ord[static_cast<std::size_t>(k)] = k;
  std::stable_sort(ord.begin(), ord.end(), [&](Index a, Index b) { return norm(a) < norm(b); });
  MatrixXd out(eps.rows(), eps.cols());
  for (Index k = 0; k < eps.rows(); ++k) out.row(k) = eps.row(ord[static_cast<std::size_t>(k)]);
  return out;
}

// One block of the weight vector: a gp() term's random features, or the parametric columns.
struct QsgpBlock {
  bool rff = true;
  std::vector<Index> cols;  // columns of the design
  KernelType type = KernelType::se;
  double log_var = 0;  // log sigma_f^2 (rff)
  VectorXd log_ls;     // log lengthscales: one per input or a single one (rff)
  bool learn_kernel = true;
  MatrixXd eps;       // nf x d frequencies at unit lengthscale (rff)
  VectorXd prior_sd;  // parametric: the columns' prior sd
  Index start = 0;    // position of the block in the weight vector

  Index nf() const { return eps.rows(); }
  Index size() const { return rff ? 2 * eps.rows() : prior_sd.size(); }
  Index dim() const { return static_cast<Index>(cols.size()); }
  // The chevron order of feature i (head comment): cosine and sine of a frequency side by side.
  Index pos(Index i) const { return rff ? 2 * (i % nf()) + (i >= nf() ? 1 : 0) : i; }
  // The feature at chevron position r.
  Index at(Index r) const { return rff ? (r % 2 ? nf() + r / 2 : r / 2) : r; }
  double ls(Index d) const { return std::exp(log_ls.size() == 1 ? log_ls(0) : log_ls(d)); }
  double precision() const { return rff ? std::exp(-log_var) : 1.0; }
  Index n_hyper() const { return rff && learn_kernel ? 1 + log_ls.size() : 0; }
};

// The row and feature indices of one iteration.
struct QsgpDraw {
  std::vector<std::size_t> rows;         // sampled rows
  std::vector<std::vector<Index>> I, J;  // per block: sampled feature indices (within the block)
  std::vector<double> alpha;             // per block: m_b / m~_b (1 when used in full)
  std::vector<char> full;                // per block: used in full (I = J = all its features)
  double row_scale = 1;                  // n / n~
};

// The ELBO estimate of one draw and its gradient: per block, per entry of I
// (mu, rho) and of J (mu); the hyperparameters (per gp() term its log
// variance and log lengthscales, then the log noise variance: all of them,
// learned or not).
struct QsgpEstimate {
  double value = 0;
  std::vector<VectorXd> gmuI, grhoI, gmuJ;
  std::vector<VectorXd> grhoJ;           // chevron: per block, the J entries' log sds (diagonals of dense columns)
  std::vector<MatrixXd> gLI, gLJ;        // chevron: per block, per entry of I (J) its row of L (structural zeros 0)
  VectorXd ghyper;
  std::vector<MatrixXd> cvI, cvJ;  // control variate: per block the frozen features of the support rows at I, J
};

// The exact ELBO on all rows and features, the latent mean and variance of
// every row, and the feature means over the rows (for centring).
struct QsgpExact {
  double elbo = 0;
  VectorXd mean, var, feature_means;
};

class Qsgp {
 public:
  std::vector<QsgpBlock> blocks;
  double log_noise = 0;
  VectorXd mu, rho;  // q(w) = N(mu, C C'), diagonal of C exp(rho)
  // Chevron: per block its dense columns below the diagonal, m_b x kappa_b
  // (entry (i, r) used where pos(i) > r; 0 columns: mean field).
  std::vector<MatrixXd> L;
  Settings set;
  QsgpSettings qs;
  bool learn_noise = true;
  // The control variate (Gaussian likelihood; cv_init()): support rows,
  // per block the log lengthscales frozen at cv_init(), a = Phi0_P mu.
  std::vector<std::size_t> cv_rows;
  std::vector<VectorXd> cv_log_ls;
  VectorXd cv_a;
  std::vector<MatrixXd> cv_b;  // chevron: per block Phi0_{P,b} times its dense columns (nbar x kappa_b)
  // The likelihood: Gaussian (the unbiased estimator above, with this
  // class's log_noise) or, through lik.expect(), logit, probit or Poisson
  // (the tangent-line bound; lik.log_noise is not used).
  Likelihood lik{Family::gaussian};
  static constexpr double kMinTangent = 1e-12;  // floor of a tangent point t_l
  static constexpr int kTangentRefresh = 1000;  // fit(): tangent points recomputed in full this often

  Qsgp(std::vector<QsgpBlock> b, double log_noise_, const Settings& s, const QsgpSettings& q, const double* X,
       std::size_t n, std::size_t p, const double* y, const double* w, const double* offset)
      : blocks(std::move(b)), log_noise(log_noise_), set(s), qs(q), X_(X), n_(n), p_(p), y_(y), w_(w), o_(offset) {
    Index m = 0;
    for (QsgpBlock& bl : blocks) {
      bl.start = m;
      m += bl.size();
      for (Index c : bl.cols)
        if (c < 0 || static_cast<std::size_t>(c) >= p_) throw std::invalid_argument("a block's column is out of range");
    }
    mu = VectorXd::Zero(m);
    rho = VectorXd::Zero(m);
    if (qs.dense_columns < 0) throw std::invalid_argument("dense_columns must be >= 0");
    for (const QsgpBlock& bl : blocks)
      L.push_back(MatrixXd::Zero(bl.size(), bl.rff ? std::min(qs.dense_columns, bl.size()) : 0));
    // q starts at the prior: mu = 0, c_i = prior sd
    for (const QsgpBlock& bl : blocks) rho.segment(bl.start, bl.size()).setConstant(-0.5 * std::log(bl.precision()));
  }

  Index total_size() const { return mu.size(); }
  Index kappa(std::size_t b) const { return L[b].cols(); }

  // Replaces the chevron columns (per block m_b x kappa_b, kappa_b <= m_b,
  // none for the parametric block); entries at structural zeros are cleared.
  void set_dense(const std::vector<MatrixXd>& dense) {
    if (dense.size() != blocks.size()) throw std::invalid_argument("one dense-column matrix per block is needed");
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      const QsgpBlock& bl = blocks[b];
      if (dense[b].rows() != bl.size() || dense[b].cols() > bl.size() || (!bl.rff && dense[b].cols() > 0))
        throw std::invalid_argument("a dense-column matrix does not match its block");
      L[b] = dense[b];
      for (Index i = 0; i < bl.size(); ++i)
        for (Index r = std::min(bl.pos(i), L[b].cols()); r < L[b].cols(); ++r) L[b](i, r) = 0;
    }
  }

  // The latent variance of block b at features f (its segment), with c2 the
  // block's exp(2 rho): f' C_b C_b' f (head comment).  O(m_b kappa_b).
  double block_variance(std::size_t b, const Eigen::Ref<const VectorXd>& f, const Eigen::Ref<const VectorXd>& c2) const {
    double v = f.cwiseAbs2().dot(c2);
    const Index k = kappa(b);
    if (k == 0) return v;
    VectorXd z = L[b].transpose() * f;
    for (Index r = 0; r < k; ++r) {
      const Index i = blocks[b].at(r);
      v -= f(i) * f(i) * c2(i);
      z(r) += f(i) * std::sqrt(c2(i));
    }
    return v + z.squaredNorm();
  }
  // Row i of block b's dense columns of C (kappa_b entries): L_b(i, r) for
  // r < pos(i), exp(rho_i) at r = pos(i), zeros above (head comment).
  Eigen::RowVectorXd dense_row(std::size_t b, Index i) const {
    const Index k = kappa(b), p = blocks[b].pos(i);
    Eigen::RowVectorXd c = Eigen::RowVectorXd::Zero(k);
    for (Index r = 0; r < std::min(p, k); ++r) c(r) = L[b](i, r);
    if (p < k) c(p) = std::exp(rho(blocks[b].start + i));
    return c;
  }
  // A gradient in the rows of block b's dense columns of C at the entries
  // `idx` (entries x kappa_b) as a gradient in the parameters: the diagonal
  // entry (pos(i) < kappa_b) goes to its log sd, grho(e) += g exp(rho_i),
  // and it and the structural zeros above it are cleared, leaving the
  // gradient in L_b's entries.
  void dense_to_params(std::size_t b, const std::vector<Index>& idx, MatrixXd& gC, VectorXd& grho) const {
    const Index k = kappa(b);
    for (Index e = 0; e < gC.rows(); ++e) {
      const Index i = idx[static_cast<std::size_t>(e)], p = blocks[b].pos(i);
      if (p >= k) continue;
      grho(e) += gC(e, p) * std::exp(rho(blocks[b].start + i));
      gC.row(e).tail(k - p).setZero();
    }
  }
  std::size_t n() const { return n_; }
  double noise_var() const { return Likelihood::kNoiseFloor + std::exp(log_noise); }
  Index n_hyper() const {
    Index h = 0;
    for (const QsgpBlock& b : blocks) h += b.rff ? 1 + b.log_ls.size() : 0;
    return h + 1;
  }

  // Draws n~ rows (all when batch_size >= n) and, per gp() term, I and J of
  // m~ features each (all, with I = J, when m~ >= m_b), uniformly with replacement.
  QsgpDraw draw(Rng& rng) const {
    QsgpDraw dr;
    dr.rows = draw_rows(set.batch_size, n_, rng, dr.row_scale);
    for (const QsgpBlock& b : blocks) {
      const Index mb = b.size(), mt = b.rff ? std::min(qs.feature_batch, mb) : mb;
      std::vector<Index> I, J;
      draw_index_pair(mb, mt, rng, I, J);
      dr.alpha.push_back(static_cast<double>(mb) / static_cast<double>(mt));
      dr.full.push_back(mt == mb);
      dr.I.push_back(std::move(I));
      dr.J.push_back(std::move(J));
    }
    return dr;
  }

  // Per block the mean of the diagonal of C_b C_b' (tr / m_b; mean field: of
  // c_i^2): the tangent point of a block sampled in part (non-Gaussian
  // likelihoods; see the head comment).  O(kappa m).
  std::vector<double> tangent_means() const {
    std::vector<double> out;
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      const QsgpBlock& bl = blocks[b];
      out.push_back(((2.0 * rho.segment(bl.start, bl.size())).array().exp().sum() + L[b].squaredNorm()) /
                    static_cast<double>(bl.size()));
    }
    return out;
  }

  // The ELBO estimate of draw `dr` and its gradient (see the head comment):
  // unbiased for the Gaussian likelihood, a lower bound in expectation for
  // the others, with tangent points tangent_means() (O(m)).
  QsgpEstimate estimate(const QsgpDraw& dr, const ParallelFor& pfor) const {
    return estimate(dr, pfor, lik.family == Family::gaussian ? std::vector<double>() : tangent_means());
  }

  // The same with the per-block tangent points `tmean` (used for the blocks
  // sampled in part, non-Gaussian likelihoods only; held constant in the gradient).
  QsgpEstimate estimate(const QsgpDraw& dr, const ParallelFor& pfor, const std::vector<double>& tmean) const {
    const std::size_t B = blocks.size();
    const bool gauss = lik.family == Family::gaussian;
    if (!gauss && tmean.size() != B) throw std::invalid_argument("QSGP: one tangent point per block is needed");
    // the sampled entries of each block: frequencies omega (rff) or the
    // column's prior sd (parametric), whether a sine, mu, c^2 of the
    // diagonal columns (0 at the chevron's dense ones) and the rows of the
    // dense columns C (entries x kappa: L, the diagonal exp(rho), zeros)
    struct Side {
      MatrixXd om, C;
      std::vector<char> sine;
      VectorXd mu, c2;
    };
    std::vector<Side> sI(B), sJ(B);
    auto side = [&](std::size_t b, const std::vector<Index>& idx, Side& sd) {
      const QsgpBlock& bl = blocks[b];
      const Index ne = static_cast<Index>(idx.size()), k = kappa(b);
      sd.om.resize(ne, bl.rff ? bl.dim() : 1);
      sd.sine.assign(idx.size(), 0);
      sd.mu.resize(ne);
      sd.c2.resize(ne);
      sd.C = MatrixXd::Zero(ne, k);
      for (Index e = 0; e < ne; ++e) {
        const Index i = idx[static_cast<std::size_t>(e)];
        if (bl.rff) {
          for (Index d = 0; d < bl.dim(); ++d) sd.om(e, d) = bl.eps(i % bl.nf(), d) / bl.ls(d);
          sd.sine[static_cast<std::size_t>(e)] = i >= bl.nf();
        } else {
          sd.om(e, 0) = bl.prior_sd(i);
        }
        sd.mu(e) = mu(bl.start + i);
        sd.c2(e) = std::exp(2.0 * rho(bl.start + i));
        if (k > 0) sd.C.row(e) = dense_row(b, i);
        if (bl.pos(i) < k) sd.c2(e) = 0;  // (its variance is in the dense column)
      }
    };
    for (std::size_t b = 0; b < B; ++b) {
      side(b, dr.I[b], sI[b]);
      side(b, dr.J[b], sJ[b]);
    }
    // accumulator layout: [0] sum of E_l, [1] d/d sigma^2, then per block
    // gmuI, grhoI, gmuJ, d/d log ell, and (chevron) the gradients of the
    // rows of C at I, then at J (column-major, entries x kappa)
    std::vector<Index> off(B), offC(B);
    Index len = 2;
    for (std::size_t b = 0; b < B; ++b) {
      off[b] = len;
      len += 2 * static_cast<Index>(dr.I[b].size()) + static_cast<Index>(dr.J[b].size()) +
             (blocks[b].rff ? blocks[b].log_ls.size() : 0);
      offC[b] = len;
      len += kappa(b) * static_cast<Index>(dr.I[b].size() + dr.J[b].size());
    }
    const double s2 = noise_var();
    // random features of the entries of one side at the row's block inputs xb (t: the arguments omega' x)
    auto features = [](const QsgpBlock& bl, const Side& sd, const VectorXd& xb, VectorXd& phi, VectorXd& t) {
      t.noalias() = sd.om * xb;
      const double sq = 1.0 / std::sqrt(static_cast<double>(bl.nf()));
      for (Index e = 0; e < t.size(); ++e)
        phi(e) = (sd.sine[static_cast<std::size_t>(e)] ? std::sin(t(e)) : std::cos(t(e))) * sq;
    };
    auto work = [&](VectorXd& acc, std::size_t begin, std::size_t end) {
      std::vector<VectorXd> phiI(B), phiJ(B), tI(B), tJ(B), xb(B), zI(B), zJ(B), yI(B), yJ(B);
      for (std::size_t b = 0; b < B; ++b) {
        phiI[b].resize(static_cast<Index>(dr.I[b].size()));
        tI[b].resize(phiI[b].size());
        phiJ[b].resize(static_cast<Index>(dr.J[b].size()));
        tJ[b].resize(phiJ[b].size());
        xb[b].resize(blocks[b].rff ? blocks[b].dim() : 1);
      }
      // the row's gradient in block b, given the derivatives of its term in
      // u, d and v (Gaussian: k (v - r), k, k (u - r) with k = -w / (2 s^2);
      // the bound: dE/du, dE/dd (plus dE/dt where t moves with the block),
      // dE/dv): means and log sds of the entries of I, means of J, and the
      // lengthscales through the features (d t / d log ell_d = -omega_d x_d,
      // cos' = -sin, sin' = cos)
      // (chevron: the dense part q = z_I' z_J of the variance carries gd
      // as d does: d q / d C_I = alpha phi_I z_J', d q / d phi_I = alpha C_I z_J)
      auto scatter = [&](std::size_t b, double gu, double gd, double gv) {
        const QsgpBlock& bl = blocks[b];
        const double al = dr.alpha[b];
        const Index nI = phiI[b].size(), nJ = phiJ[b].size(), k = kappa(b);
        const Index oI = off[b], oR = off[b] + nI, oJ = off[b] + 2 * nI, oL = off[b] + 2 * nI + nJ;
        acc.segment(oI, nI) += (gu * al) * phiI[b];
        acc.segment(oR, nI) += (2.0 * gd * al) * phiI[b].cwiseAbs2().cwiseProduct(sI[b].c2);
        acc.segment(oJ, nJ) += (gv * al) * phiJ[b];
        if (k > 0) {
          Eigen::Map<MatrixXd>(acc.data() + offC[b], nI, k).noalias() += (gd * al) * phiI[b] * zJ[b].transpose();
          Eigen::Map<MatrixXd>(acc.data() + offC[b] + nI * k, nJ, k).noalias() +=
              (gd * al) * phiJ[b] * zI[b].transpose();
        }
        if (!(bl.rff && bl.learn_kernel)) return;
        if (k > 0) {
          yI[b].noalias() = sI[b].C * zJ[b];
          yJ[b].noalias() = sJ[b].C * zI[b];
        }
        const double sq = 1.0 / std::sqrt(static_cast<double>(bl.nf()));
        const bool iso = bl.log_ls.size() == 1;
        for (int side_j = 0; side_j < 2; ++side_j) {
          const Side& sd = side_j == 0 ? sI[b] : sJ[b];
          const VectorXd& phi = side_j == 0 ? phiI[b] : phiJ[b];
          const VectorXd& t = side_j == 0 ? tI[b] : tJ[b];
          for (Index e = 0; e < phi.size(); ++e) {
            double de = side_j == 0 ? al * (gu * sd.mu(e) + 2.0 * gd * phi(e) * sd.c2(e)) : al * gv * sd.mu(e);
            if (k > 0) de += al * gd * (side_j == 0 ? yI[b](e) : yJ[b](e));
            const double dphi = (sd.sine[static_cast<std::size_t>(e)] ? std::cos(t(e)) : -std::sin(t(e))) * sq;
            const double c = de * dphi;
            for (Index d = 0; d < bl.dim(); ++d) acc(oL + (iso ? 0 : d)) -= c * sd.om(e, d) * xb[b](d);
          }
        }
      };
      for (std::size_t p = begin; p < end; ++p) {
        const std::size_t l = dr.rows[p];
        const double wt = w_[l];
        if (!(wt > 0)) continue;
        const double r = y_[l] - o_[l];
        double u = 0, v = 0, dd = 0, tl = 0;
        for (std::size_t b = 0; b < B; ++b) {
          const QsgpBlock& bl = blocks[b];
          const double al = dr.alpha[b];
          if (bl.rff) {
            for (Index d = 0; d < bl.dim(); ++d) xb[b](d) = X_[l + n_ * static_cast<std::size_t>(bl.cols[d])];
            features(bl, sI[b], xb[b], phiI[b], tI[b]);
            features(bl, sJ[b], xb[b], phiJ[b], tJ[b]);
          } else {  // (each entry its own column)
            for (std::size_t e = 0; e < dr.I[b].size(); ++e)
              phiI[b](static_cast<Index>(e)) =
                  X_[l + n_ * static_cast<std::size_t>(bl.cols[dr.I[b][e]])] * sI[b].om(static_cast<Index>(e), 0);
            for (std::size_t e = 0; e < dr.J[b].size(); ++e)
              phiJ[b](static_cast<Index>(e)) =
                  X_[l + n_ * static_cast<std::size_t>(bl.cols[dr.J[b][e]])] * sJ[b].om(static_cast<Index>(e), 0);
          }
          u += al * phiI[b].dot(sI[b].mu);
          double q = 0;  // chevron: q = z_I' z_J (in full, al = 1 and I = J: the exact dense part)
          if (kappa(b) > 0) {
            zI[b].noalias() = al * (sI[b].C.transpose() * phiI[b]);
            zJ[b].noalias() = al * (sJ[b].C.transpose() * phiJ[b]);
            q = zI[b].dot(zJ[b]);
          }
          const double db = phiI[b].cwiseAbs2().dot(sI[b].c2);
          dd += al * db + q;
          v += al * phiJ[b].dot(sJ[b].mu);
          if (!gauss) tl += dr.full[b] ? db + q : tmean[b];
        }
        if (!gauss) {
          // the tangent-line bound (head comment): a^ = (u + v) / 2,
          // s^ = (d + t) / (2 sqrt t) with t = tl, E_z log p(y | o + a^ + s^ z)
          const bool floor = tl < kMinTangent;
          tl = std::max(tl, kMinTangent);
          const double rt = std::sqrt(tl), sh = (dd + tl) / (2.0 * rt);
          const Expectation e = lik.expect(y_[l], wt, o_[l] + 0.5 * (u + v), sh * sh);
          acc(0) += e.v;
          // d E / d u = d E / d v = ga; d E / d d = gv; d E / d t = gt (the
          // part of t from the blocks used in full moves with their c and
          // phi; the means of the others are held constant)
          const double ga = 0.5 * e.dm, gv = e.dv * sh / rt;
          const double gt = floor ? 0.0 : e.dv * sh * (tl - dd) / (2.0 * tl * rt);
          for (std::size_t b = 0; b < B; ++b) scatter(b, ga, dr.full[b] ? gv + gt : gv, ga);  // (al = 1 in full)
          continue;
        }
        const double Q = r * r - r * (u + v) + u * v + dd;
        acc(0) += -0.5 * (kLog2Pi + std::log(s2 / wt)) - 0.5 * wt * Q / s2;
        acc(1) += -0.5 / s2 + 0.5 * wt * Q / (s2 * s2);
        const double k = -0.5 * wt / s2;
        for (std::size_t b = 0; b < B; ++b) scatter(b, k * (v - r), k, k * (u - r));
      }
    };
    const VectorXd acc = deterministic_reduce<VectorXd>(dr.rows.size(), pfor,
                                                        [len] { return VectorXd::Zero(len).eval(); }, work);
    QsgpEstimate est;
    const double sc = dr.row_scale;
    est.value = sc * acc(0);
    est.ghyper = VectorXd::Zero(n_hyper());
    Index h = 0;
    for (std::size_t b = 0; b < B; ++b) {
      const QsgpBlock& bl = blocks[b];
      const Index nI = static_cast<Index>(dr.I[b].size()), nJ = static_cast<Index>(dr.J[b].size());
      VectorXd gmuI = sc * acc.segment(off[b], nI), grhoI = sc * acc.segment(off[b] + nI, nI);
      const VectorXd gmuJ = sc * acc.segment(off[b] + 2 * nI, nJ);
      const Index k = kappa(b);
      MatrixXd gLI = sc * Eigen::Map<const MatrixXd>(acc.data() + offC[b], nI, k);
      MatrixXd gLJ = sc * Eigen::Map<const MatrixXd>(acc.data() + offC[b] + nI * k, nJ, k);
      // KL(q || p) = 1/2 sum_i [s (mu_i^2 + |row i of C|^2) - 2 rho_i - log s - 1],
      // estimated over I (|row i of C|^2 = c_i^2 + |L_b(i, :)|^2)
      const double s = bl.precision(), al = dr.alpha[b];
      double dkl_dlogs = 0;
      for (Index e = 0; e < nI; ++e) {
        const Index i = dr.I[b][static_cast<std::size_t>(e)], g = bl.start + i;
        const double m2 = mu(g) * mu(g), c2 = std::exp(2.0 * rho(g));
        const double l2 = k > 0 ? L[b].row(i).squaredNorm() : 0.0;
        est.value -= al * 0.5 * (s * (m2 + c2 + l2) - 2.0 * rho(g) - std::log(s) - 1.0);
        gmuI(e) -= al * s * mu(g);
        grhoI(e) -= al * (s * c2 - 1.0);
        if (k > 0) gLI.row(e) -= (al * s) * L[b].row(i);
        dkl_dlogs += al * 0.5 * (s * (m2 + c2 + l2) - 1.0);
      }
      // chevron: a dense column's diagonal entry is exp(rho) (to its log sd);
      // the entries above it are structural zeros
      VectorXd grhoJ;
      if (k > 0) {
        grhoJ = VectorXd::Zero(nJ);
        dense_to_params(b, dr.I[b], gLI, grhoI);
        dense_to_params(b, dr.J[b], gLJ, grhoJ);
      }
      if (bl.rff) {
        est.ghyper(h) = dkl_dlogs;  // d ELBO / d log sigma_f^2 = d KL / d log s
        est.ghyper.segment(h + 1, bl.log_ls.size()) = sc * acc.segment(off[b] + 2 * nI + nJ, bl.log_ls.size());
        h += 1 + bl.log_ls.size();
      }
      est.gmuI.push_back(std::move(gmuI));
      est.grhoI.push_back(std::move(grhoI));
      est.gmuJ.push_back(gmuJ);
      est.grhoJ.push_back(std::move(grhoJ));
      est.gLI.push_back(std::move(gLI));
      est.gLJ.push_back(std::move(gLJ));
    }
    est.ghyper(h) = sc * acc(1) * std::exp(log_noise);
    if (gauss && !cv_rows.empty()) control_variate(dr, sI, sJ, features, pfor, est);
    return est;
  }

  // The control variate of the Gaussian likelihood's quadratic term (the
  // paper's eq. 3, Proposition 3 and Appendix F): with the support rows P
  // (cv_init()) and their features phi0 at the hyperparameters frozen there,
  // the estimate gains
  //   (n / nbar) sum_{p in P} w_p [u0_p w0_p - a_p^2] / (2 sigma^2),
  // u0_p, w0_p the draw's estimates of a_p = phi0_p' mu from I and J (as
  // u_l, w_l above) and a = Phi0_P mu tracked by fit(); its mean over the
  // draw is 0, so the estimator stays unbiased, and it cancels much of the
  // feature-sampling noise of -(n / n~) sum_l w_l u_l w_l / (2 sigma^2).
  // The gradient of the a_p^2 part is dense in mu; per block it is kept on
  // the distinct sampled indices U only and scaled by m_b / |U| (unbiased,
  // Appendix F.1).  Chevron: each dense column r adds the same with
  // z0_Ip,r z0_Jp,r - beta_pr^2 (head comment), its gradient in C_b kept on
  // U the same way.  Fills est.cvI, est.cvJ (nbar x m~ per block) for the
  // tracking of a and beta.  O(nbar m~ (d + kappa)) per term.
  template <class Side, class Features>
  void control_variate(const QsgpDraw& dr, const std::vector<Side>& sI, const std::vector<Side>& sJ,
                       const Features& features, const ParallelFor& pfor, QsgpEstimate& est) const {
    const std::size_t B = blocks.size(), nbar = cv_rows.size();
    std::vector<Side> cI(sI), cJ(sJ);  // the sampled entries with the frozen frequencies
    std::vector<Index> off(B);
    Index len = 1;
    for (std::size_t b = 0; b < B; ++b) {
      const QsgpBlock& bl = blocks[b];
      if (bl.rff)
        for (int side_j = 0; side_j < 2; ++side_j) {
          Side& sd = side_j == 0 ? cI[b] : cJ[b];
          const std::vector<Index>& idx = side_j == 0 ? dr.I[b] : dr.J[b];
          for (Index e = 0; e < sd.om.rows(); ++e)
            for (Index d = 0; d < bl.dim(); ++d)
              sd.om(e, d) = bl.eps(idx[static_cast<std::size_t>(e)] % bl.nf(), d) *
                            std::exp(-cv_log_ls[b](cv_log_ls[b].size() == 1 ? 0 : d));
        }
      est.cvI.emplace_back(static_cast<Index>(nbar), static_cast<Index>(dr.I[b].size()));
      est.cvJ.emplace_back(static_cast<Index>(nbar), static_cast<Index>(dr.J[b].size()));
      off[b] = len;
      len += 2 * static_cast<Index>(dr.I[b].size() + dr.J[b].size());
    }
    // accumulator: [0] sum_p w_p (u0 w0 - a^2); per block: d/d mu_I and d/d
    // mu_J of sum_p w_p u0 w0 / 2, then sum_p w_p a_p phi0_p at I and at J
    auto work = [&](VectorXd& acc, std::size_t begin, std::size_t end) {
      std::vector<VectorXd> phiI(B), phiJ(B), tI(B), tJ(B), xb(B);
      for (std::size_t b = 0; b < B; ++b) {
        phiI[b].resize(static_cast<Index>(dr.I[b].size()));
        tI[b].resize(phiI[b].size());
        phiJ[b].resize(static_cast<Index>(dr.J[b].size()));
        tJ[b].resize(phiJ[b].size());
        xb[b].resize(blocks[b].rff ? blocks[b].dim() : 1);
      }
      for (std::size_t q = begin; q < end; ++q) {
        const std::size_t l = cv_rows[q];
        const Index qi = static_cast<Index>(q);
        const double wt = w_[l], a = cv_a(qi);
        double u = 0, v = 0;
        for (std::size_t b = 0; b < B; ++b) {
          const QsgpBlock& bl = blocks[b];
          if (bl.rff) {
            for (Index d = 0; d < bl.dim(); ++d) xb[b](d) = X_[l + n_ * static_cast<std::size_t>(bl.cols[d])];
            features(bl, cI[b], xb[b], phiI[b], tI[b]);
            features(bl, cJ[b], xb[b], phiJ[b], tJ[b]);
          } else {
            for (std::size_t e = 0; e < dr.I[b].size(); ++e)
              phiI[b](static_cast<Index>(e)) =
                  X_[l + n_ * static_cast<std::size_t>(bl.cols[dr.I[b][e]])] * cI[b].om(static_cast<Index>(e), 0);
            for (std::size_t e = 0; e < dr.J[b].size(); ++e)
              phiJ[b](static_cast<Index>(e)) =
                  X_[l + n_ * static_cast<std::size_t>(bl.cols[dr.J[b][e]])] * cJ[b].om(static_cast<Index>(e), 0);
          }
          // (rows written by one worker each)
          est.cvI[b].row(qi) = phiI[b].transpose();
          est.cvJ[b].row(qi) = phiJ[b].transpose();
          u += dr.alpha[b] * phiI[b].dot(cI[b].mu);
          v += dr.alpha[b] * phiJ[b].dot(cJ[b].mu);
        }
        if (!(wt > 0)) continue;
        acc(0) += wt * (u * v - a * a);
        for (std::size_t b = 0; b < B; ++b) {
          const Index nI = phiI[b].size(), nJ = phiJ[b].size(), o = off[b];
          acc.segment(o, nI) += (0.5 * wt * dr.alpha[b] * v) * phiI[b];
          acc.segment(o + nI, nJ) += (0.5 * wt * dr.alpha[b] * u) * phiJ[b];
          acc.segment(o + nI + nJ, nI) += (wt * a) * phiI[b];
          acc.segment(o + 2 * nI + nJ, nJ) += (wt * a) * phiJ[b];
        }
      }
    };
    const VectorXd acc =
        deterministic_reduce<VectorXd>(nbar, pfor, [len] { return VectorXd::Zero(len).eval(); }, work);
    // chevron, from the support rows' frozen features (matrix products):
    // z0_I = alpha Phi0_{P,I} C_I, z0_J the same over J, the sum over rows of
    // w_p (z0_I' z0_J - |beta_p|^2), the gradient of its half in C_I
    // (alpha Phi0_{P,I}' W z0_J) and C_J, and Phi0' W beta at I and at J
    VectorXd wv(static_cast<Index>(nbar));
    for (std::size_t q = 0; q < nbar; ++q) wv(static_cast<Index>(q)) = w_[cv_rows[q]] > 0 ? w_[cv_rows[q]] : 0.0;
    double dense = 0;
    std::vector<MatrixXd> gCI(B), gCJ(B), HI(B), HJ(B);
    for (std::size_t b = 0; b < B; ++b) {
      if (kappa(b) == 0) continue;
      const double al = dr.alpha[b];
      const MatrixXd ZI = al * (est.cvI[b] * cI[b].C), ZJ = al * (est.cvJ[b] * cJ[b].C);
      dense += wv.dot((ZI.cwiseProduct(ZJ) - cv_b[b].cwiseAbs2()).rowwise().sum());
      gCI[b].noalias() = (0.5 * al) * est.cvI[b].transpose() * (wv.asDiagonal() * ZJ);
      gCJ[b].noalias() = (0.5 * al) * est.cvJ[b].transpose() * (wv.asDiagonal() * ZI);
      const MatrixXd WB = wv.asDiagonal() * cv_b[b];
      HI[b].noalias() = est.cvI[b].transpose() * WB;
      HJ[b].noalias() = est.cvJ[b].transpose() * WB;
    }
    const double s2 = noise_var(), scv = static_cast<double>(n_) / static_cast<double>(nbar);
    const double sum = acc(0) + dense;
    est.value += 0.5 * scv * sum / s2;
    est.ghyper(est.ghyper.size() - 1) -= 0.5 * scv * sum / (s2 * s2) * std::exp(log_noise);
    std::vector<char> fI, fJ;
    for (std::size_t b = 0; b < B; ++b) {
      const Index nI = static_cast<Index>(dr.I[b].size()), nJ = static_cast<Index>(dr.J[b].size()), o = off[b];
      est.gmuI[b] += (scv / s2) * acc.segment(o, nI);
      est.gmuJ[b] += (scv / s2) * acc.segment(o + nI, nJ);
      // - (n / nbar) sum_p w_p a_p^2 / (2 sigma^2): its gradient at the distinct indices, times m_b / |U|
      const Index distinct = first_occurrences(dr.I[b], dr.J[b], fI, fJ);
      const double k = static_cast<double>(blocks[b].size()) / static_cast<double>(distinct) * scv / s2;
      for (Index e = 0; e < nI; ++e)
        if (fI[static_cast<std::size_t>(e)]) est.gmuI[b](e) -= k * acc(o + nI + nJ + e);
      for (Index e = 0; e < nJ; ++e)
        if (fJ[static_cast<std::size_t>(e)]) est.gmuJ[b](e) -= k * acc(o + 2 * nI + nJ + e);
      // chevron: the same for the dense columns, z0_I' z0_J - |beta_p|^2 in place of u0 w0 - a_p^2
      if (kappa(b) == 0) continue;
      gCI[b] *= scv / s2;
      gCJ[b] *= scv / s2;
      for (Index e = 0; e < nI; ++e)
        if (fI[static_cast<std::size_t>(e)]) gCI[b].row(e) -= k * HI[b].row(e);
      for (Index e = 0; e < nJ; ++e)
        if (fJ[static_cast<std::size_t>(e)]) gCJ[b].row(e) -= k * HJ[b].row(e);
      dense_to_params(b, dr.I[b], gCI[b], est.grhoI[b]);
      dense_to_params(b, dr.J[b], gCJ[b], est.grhoJ[b]);
      est.gLI[b] += gCI[b];
      est.gLJ[b] += gCJ[b];
    }
  }

  // The control variate's support rows: `rows` rows drawn without
  // replacement (all when rows >= n; none for non-Gaussian likelihoods or
  // rows = 0), the hyperparameters frozen now, a = Phi0_P mu and (chevron)
  // beta_b = Phi0_{P,b} C_b's dense columns (O(rows m (d + kappa)) unless
  // mu = 0 and there are no dense columns).
  void cv_init(std::size_t rows, Rng& rng, const ParallelFor& pfor) {
    cv_rows.clear();
    cv_log_ls.clear();
    cv_b.clear();
    if (rows == 0 || lik.family != Family::gaussian) return;
    cv_rows = support_rows(rows, n_, rng);
    const Index nbar = static_cast<Index>(cv_rows.size());
    bool dense = false;
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      cv_log_ls.push_back(blocks[b].log_ls);
      cv_b.push_back(MatrixXd::Zero(nbar, kappa(b)));
      dense = dense || kappa(b) > 0;
    }
    cv_a = VectorXd::Zero(nbar);
    if (!mu.isZero(0) || dense) cv_exact(pfor, cv_a, cv_b);  // (fit(): mu = 0)
  }

  // Phi0_P mu and, per block, Phi0_{P,b} times its dense columns, in full at
  // the frozen hyperparameters.  O(nbar m (d + kappa)).
  void cv_exact(const ParallelFor& pfor, VectorXd& a, std::vector<MatrixXd>& beta) const {
    std::vector<MatrixXd> om, D;
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      MatrixXd o = blocks[b].eps;
      for (Index d = 0; d < o.cols(); ++d) o.col(d) *= std::exp(-cv_log_ls[b](cv_log_ls[b].size() == 1 ? 0 : d));
      om.push_back(std::move(o));
      MatrixXd Db = L[b];  // the dense columns of C_b: L_b with the diagonal entries
      for (Index r = 0; r < kappa(b); ++r) Db(blocks[b].at(r), r) = std::exp(rho(blocks[b].start + blocks[b].at(r)));
      D.push_back(std::move(Db));
    }
    const Index nbar = static_cast<Index>(cv_rows.size()), m = total_size();
    a = VectorXd::Zero(nbar);
    beta.clear();
    for (std::size_t b = 0; b < blocks.size(); ++b) beta.push_back(MatrixXd::Zero(nbar, kappa(b)));
    blocked_for(cv_rows.size(), pfor, [&](std::size_t begin, std::size_t end) {
      VectorXd phi(m);
      for (std::size_t q = begin; q < end; ++q) {
        const Index qi = static_cast<Index>(q);
        row_features(X_ + cv_rows[q], n_, om, phi);
        a(qi) = phi.dot(mu);
        for (std::size_t b = 0; b < blocks.size(); ++b)
          if (kappa(b) > 0)
            beta[b].row(qi).noalias() = phi.segment(blocks[b].start, blocks[b].size()).transpose() * D[b];
      }
    });
  }

  // How far the tracked a and beta are from their values in full (the
  // largest absolute difference; fit() tracks them under sparse updates).
  double cv_drift(const ParallelFor& pfor) const {
    VectorXd a;
    std::vector<MatrixXd> beta;
    cv_exact(pfor, a, beta);
    double out = (a - cv_a).cwiseAbs().maxCoeff();
    for (std::size_t b = 0; b < beta.size(); ++b)
      if (beta[b].size() > 0) out = std::max(out, (beta[b] - cv_b[b]).cwiseAbs().maxCoeff());
    return out;
  }

  // The exact ELBO (all rows, all features), the latent mean and variance
  // at every row, and the means of the features over the rows.  O(n m d).
  QsgpExact exact(const ParallelFor& pfor) const {
    QsgpExact ex;
    ex.mean.resize(static_cast<Index>(n_));
    ex.var.resize(static_cast<Index>(n_));
    const Index m = total_size();
    const VectorXd c2 = (2.0 * rho).array().exp().matrix();
    const double s2 = noise_var();
    const bool gauss = lik.family == Family::gaussian;
    const std::vector<MatrixXd> om = frequencies();
    auto work = [&](VectorXd& acc, std::size_t begin, std::size_t end) {
      VectorXd phi(m);
      for (std::size_t l = begin; l < end; ++l) {
        row_features(X_ + l, n_, om, phi);
        const double a = phi.dot(mu);
        double v = 0;
        for (std::size_t b = 0; b < blocks.size(); ++b) {
          const Index s = blocks[b].start, z = blocks[b].size();
          v += block_variance(b, phi.segment(s, z), c2.segment(s, z));
        }
        ex.mean(static_cast<Index>(l)) = a;
        ex.var(static_cast<Index>(l)) = v;
        acc.tail(m) += phi;
        const double wt = w_[l];
        if (wt > 0 && !gauss) acc(0) += lik.expect(y_[l], wt, o_[l] + a, v).v;
        if (wt > 0 && gauss) {
          const double r = y_[l] - o_[l];
          acc(0) += -0.5 * (kLog2Pi + std::log(s2 / wt)) - 0.5 * wt * ((r - a) * (r - a) + v) / s2;
        }
      }
    };
    const VectorXd acc = deterministic_reduce<VectorXd>(n_, pfor, [m] { return VectorXd::Zero(m + 1).eval(); }, work);
    ex.elbo = acc(0) - kl();
    ex.feature_means = acc.tail(m) / static_cast<double>(n_);
    return ex;
  }

  // KL(q || p) in full (O(m + kappa m)).
  double kl() const {
    double out = 0;
    for (std::size_t bi = 0; bi < blocks.size(); ++bi) {
      const QsgpBlock& b = blocks[bi];
      const double s = b.precision();
      for (Index i = b.start; i < b.start + b.size(); ++i)
        out += 0.5 * (s * (mu(i) * mu(i) + std::exp(2.0 * rho(i))) - 2.0 * rho(i) - std::log(s) - 1.0);
      out += 0.5 * s * L[bi].squaredNorm();
    }
    return out;
  }

  // Per block its frequencies omega = eps / ell (nf x d; empty for the parametric block).
  std::vector<MatrixXd> frequencies() const {
    std::vector<MatrixXd> om;
    for (const QsgpBlock& b : blocks) {
      MatrixXd o = b.eps;
      for (Index d = 0; d < o.cols(); ++d) o.col(d) /= b.ls(d);
      om.push_back(std::move(o));
    }
    return om;
  }

  // All features of the design row at x (x[k * ld] = entry of column k),
  // with om = frequencies(), into phi (size m).
  void row_features(const double* x, std::size_t ld, const std::vector<MatrixXd>& om, VectorXd& phi) const {
    for (std::size_t bi = 0; bi < blocks.size(); ++bi) {
      const QsgpBlock& b = blocks[bi];
      if (!b.rff) {
        for (Index i = 0; i < b.size(); ++i) phi(b.start + i) = x[ld * static_cast<std::size_t>(b.cols[i])] * b.prior_sd(i);
        continue;
      }
      const double sq = 1.0 / std::sqrt(static_cast<double>(b.nf()));
      for (Index k = 0; k < b.nf(); ++k) {
        double t = 0;
        for (Index d = 0; d < b.dim(); ++d) t += om[bi](k, d) * x[ld * static_cast<std::size_t>(b.cols[d])];
        phi(b.start + k) = std::cos(t) * sq;
        phi(b.start + b.nf() + k) = std::sin(t) * sq;
      }
    }
  }

  // Per block at the nrow rows of X (column-major, leading dimension nrow):
  // the mean and variance of its part of f, uncentred (mean, var) and with
  // the features centred by `center` (size m; cmean, cvar).  Rows in blocks
  // of kChunkRows, in parallel (independent outputs).
  void predict(const double* X, std::size_t nrow, const VectorXd& center, MatrixXd& mean, MatrixXd& var,
               MatrixXd& cmean, MatrixXd& cvar, const ParallelFor& pfor) const {
    const Index B = static_cast<Index>(blocks.size()), m = total_size();
    mean.resize(static_cast<Index>(nrow), B);
    var.resizeLike(mean);
    cmean.resizeLike(mean);
    cvar.resizeLike(mean);
    const VectorXd c2 = (2.0 * rho).array().exp().matrix();
    const std::vector<MatrixXd> om = frequencies();
    blocked_for(nrow, pfor, [&](std::size_t begin, std::size_t end) {
      VectorXd phi(m);
      for (std::size_t l = begin; l < end; ++l) {
        row_features(X + l, nrow, om, phi);
        const Index li = static_cast<Index>(l);
        for (Index b = 0; b < B; ++b) {
          const Index s = blocks[static_cast<std::size_t>(b)].start, z = blocks[static_cast<std::size_t>(b)].size();
          const auto f = phi.segment(s, z);
          mean(li, b) = f.dot(mu.segment(s, z));
          var(li, b) = block_variance(static_cast<std::size_t>(b), f, c2.segment(s, z));
          const VectorXd fc = f - center.segment(s, z);
          cmean(li, b) = fc.dot(mu.segment(s, z));
          cvar(li, b) = block_variance(static_cast<std::size_t>(b), fc, c2.segment(s, z));
        }
      }
    });
  }

  // Features first..first+count-1 of block b at the nrow rows of X (nrow x count).
  MatrixXd block_features(std::size_t b, const double* X, std::size_t nrow, Index first, Index count) const {
    const QsgpBlock& bl = blocks[b];
    if (first < 0 || count < 0 || first + count > bl.size()) throw std::invalid_argument("feature range out of the block");
    MatrixXd F(static_cast<Index>(nrow), count);
    const double sq = bl.rff ? 1.0 / std::sqrt(static_cast<double>(bl.nf())) : 0.0;
    for (Index c = 0; c < count; ++c) {
      const Index i = first + c;
      for (std::size_t l = 0; l < nrow; ++l) {
        const Index li = static_cast<Index>(l);
        if (!bl.rff) {
          F(li, c) = X[l + nrow * static_cast<std::size_t>(bl.cols[i])] * bl.prior_sd(i);
          continue;
        }
        double t = 0;
        for (Index d = 0; d < bl.dim(); ++d)
          t += bl.eps(i % bl.nf(), d) / bl.ls(d) * X[l + nrow * static_cast<std::size_t>(bl.cols[d])];
        F(li, c) = (i < bl.nf() ? std::cos(t) : std::sin(t)) * sq;
      }
    }
    return F;
  }

  // Sets each c_i to its ELBO-optimal value for a diagonal C (Proposition 1
  // of the paper), c_i^2 = 1 / (phi_i' W phi_i / sigma^2 + s_i), with
  // phi_i' W phi_i = sum_l w_l phi_li^2 estimated from `rows` rows drawn
  // uniformly with replacement (all rows when rows >= n).  Other
  // likelihoods: w_l / sigma^2 becomes the curvature -l''(f) of row l's
  // log-likelihood at the prior mean f = offset_l (a Laplace-style start).
  // O(rows m d).
  void init_diagonal(std::size_t rows, Rng& rng, const ParallelFor& pfor) {
    const std::size_t k = std::min(rows, n_);
    std::vector<std::size_t> idx(k);
    for (std::size_t j = 0; j < k; ++j) idx[j] = k == n_ ? j : uniform_index(rng, n_);
    const Index m = total_size();
    const bool gauss = lik.family == Family::gaussian;
    const std::vector<MatrixXd> om = frequencies();
    const VectorXd ss = deterministic_reduce<VectorXd>(
        k, pfor, [m] { return VectorXd::Zero(m).eval(); },
        [&](VectorXd& acc, std::size_t begin, std::size_t end) {
          VectorXd phi(m);
          for (std::size_t j = begin; j < end; ++j) {
            row_features(X_ + idx[j], n_, om, phi);
            double wt = w_[idx[j]];
            if (!gauss) {  // the curvature -l''(f) at the prior mean f = offset
              double l, d1, d2;
              lik.loglik(y_[idx[j]], wt, o_[idx[j]], l, d1, d2);
              wt = -d2;
            }
            acc += wt * phi.cwiseAbs2();
          }
        });
    const double scale = static_cast<double>(n_) / static_cast<double>(k), s2 = gauss ? noise_var() : 1.0;
    for (const QsgpBlock& b : blocks)
      for (Index i = b.start; i < b.start + b.size(); ++i) rho(i) = -0.5 * std::log(scale * ss(i) / s2 + b.precision());
  }

  // The packed learned hyperparameters (per gp() term with learn_kernel its
  // log variance and log lengthscales; then the log noise when learned) and
  // the matching entries of a full hyperparameter gradient.
  bool noise_learned() const { return learn_noise && lik.family == Family::gaussian; }
  VectorXd pack_hyper() const {
    std::vector<double> v;
    for (const QsgpBlock& b : blocks)
      if (b.n_hyper()) {
        v.push_back(b.log_var);
        for (Index d = 0; d < b.log_ls.size(); ++d) v.push_back(b.log_ls(d));
      }
    if (noise_learned()) v.push_back(log_noise);
    return Eigen::Map<VectorXd>(v.data(), static_cast<Index>(v.size()));
  }
  void unpack_hyper(const VectorXd& h) {
    Index k = 0;
    for (QsgpBlock& b : blocks)
      if (b.n_hyper()) {
        b.log_var = h(k++);
        for (Index d = 0; d < b.log_ls.size(); ++d) b.log_ls(d) = h(k++);
      }
    if (noise_learned()) log_noise = h(k++);
  }
  VectorXd learned_gradient(const VectorXd& full) const {
    std::vector<double> v;
    Index k = 0;
    for (const QsgpBlock& b : blocks) {
      if (!b.rff) continue;
      const Index nh = 1 + b.log_ls.size();
      if (b.learn_kernel)
        for (Index j = 0; j < nh; ++j) v.push_back(full(k + j));
      k += nh;
    }
    if (noise_learned()) v.push_back(full(k));
    return Eigen::Map<VectorXd>(v.data(), static_cast<Index>(v.size()));
  }

  // init_diagonal(), then set.max_iter iterations of AdaGrad on (mu, rho) and Adam on the learned
  // hyperparameters (after the frozen start); monitor(t, estimate) returns
  // false to stop.  The gradient reported is the mean stochastic gradient of
  // the learned hyperparameters over the last tenth of the iterations.
  template <class Monitor>
  FitInfo fit(const ParallelFor& pfor, Rng& rng, Monitor monitor) {
    FitInfo info;
    const auto t0 = Clock::now();
    const int T = set.max_iter;
    const int frozen = static_cast<int>(std::ceil(qs.freeze * T));
    const double gamma = std::pow(qs.final_rate, 1.0 / std::max(1, T - 1));
    const Index m = total_size();
    VectorXd acc_mu = VectorXd::Constant(m, qs.adagrad_init), acc_rho = acc_mu;
    VectorXd g_mu = VectorXd::Zero(m), g_rho = VectorXd::Zero(m);
    std::vector<char> mark(static_cast<std::size_t>(m), 0);
    std::vector<Index> touched;
    Adam adam(set.learning_rate);
    VectorXd hyper = pack_hyper(), gsum = VectorXd::Zero(hyper.size());
    const int tail = std::max(1, T / 10);
    double rate = qs.variational_rate;
    init_diagonal(qs.init_rows, rng, pfor);
    cv_init(qs.control_rows, rng, pfor);
    // chevron: AdaGrad accumulators of L, and per block the touched rows of
    // L with their summed gradients (slot: row of the staging matrix, or -1)
    std::vector<MatrixXd> acc_L, stage(blocks.size());
    std::vector<std::vector<Index>> slot(blocks.size()), staged(blocks.size());
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      acc_L.push_back(MatrixXd::Constant(L[b].rows(), L[b].cols(), qs.adagrad_init));
      if (kappa(b) > 0) slot[b].assign(static_cast<std::size_t>(blocks[b].size()), -1);
    }
    // the parametric block's means step in units of the coefficients (on the
    // internal scale of standardised columns), not of their whitened weights:
    // a step of the weight moves the coefficient prior_sd (100) times as far,
    // and at that scale AdaGrad's noisy steps left Poisson and logit
    // intercepts far from their optimum at the last iteration
    VectorXd unit = VectorXd::Ones(m);
    for (const QsgpBlock& bl : blocks)
      if (!bl.rff) unit.segment(bl.start, bl.size()) = bl.prior_sd.cwiseInverse();
    const bool cv = !cv_rows.empty();
    std::vector<std::vector<char>> fI(blocks.size()), fJ(blocks.size());
    std::vector<VectorXd> dI(blocks.size()), dJ(blocks.size());
    std::vector<MatrixXd> DI(blocks.size()), DJ(blocks.size());
    // Non-Gaussian likelihoods: the tangent points, per block the mean of
    // c_i^2, tracked under the sparse updates in O(touched) per iteration
    // (and recomputed every kTangentRefresh iterations against drift).
    const bool gauss = lik.family == Family::gaussian;
    std::vector<double> tmean(blocks.size());
    std::vector<std::size_t> block_of;
    if (!gauss) {
      block_of.resize(static_cast<std::size_t>(m));
      for (std::size_t b = 0; b < blocks.size(); ++b)
        for (Index i = 0; i < blocks[b].size(); ++i) block_of[static_cast<std::size_t>(blocks[b].start + i)] = b;
    }
    info.seconds_init = seconds_since(t0);
    const auto t1 = Clock::now();
    info.stop = "iteration limit (stochastic fit: no stationary-point test)";
    for (int t = 1; t <= T; ++t) {
      if (!gauss && (t - 1) % kTangentRefresh == 0) tmean = tangent_means();
      const QsgpDraw dr = draw(rng);
      const QsgpEstimate est = gauss ? estimate(dr, pfor) : estimate(dr, pfor, tmean);
      if (!std::isfinite(est.value) || !est.ghyper.allFinite())
        throw numerical_error("QSGP: the ELBO estimate is not finite at iteration " + std::to_string(t) +
                              "; try a smaller learning_rate or variational_rate");
      info.trace.push_back(est.value);
      touched.clear();
      for (std::size_t b = 0; b < blocks.size(); ++b) {
        const Index s = blocks[b].start;
        for (std::size_t e = 0; e < dr.I[b].size(); ++e) {
          const Index g = s + dr.I[b][e];
          g_mu(g) += est.gmuI[b](static_cast<Index>(e));
          g_rho(g) += est.grhoI[b](static_cast<Index>(e));
          if (!mark[static_cast<std::size_t>(g)]) mark[static_cast<std::size_t>(g)] = 1, touched.push_back(g);
        }
        for (std::size_t e = 0; e < dr.J[b].size(); ++e) {
          const Index g = s + dr.J[b][e];
          g_mu(g) += est.gmuJ[b](static_cast<Index>(e));
          if (kappa(b) > 0) g_rho(g) += est.grhoJ[b](static_cast<Index>(e));
          if (!mark[static_cast<std::size_t>(g)]) mark[static_cast<std::size_t>(g)] = 1, touched.push_back(g);
        }
        if (kappa(b) > 0) {  // the rows of L at I and J, summed per distinct index
          const Index k = kappa(b);
          stage[b].setZero(static_cast<Index>(dr.I[b].size() + dr.J[b].size()), k);
          staged[b].clear();
          for (int side_j = 0; side_j < 2; ++side_j) {
            const std::vector<Index>& idx = side_j == 0 ? dr.I[b] : dr.J[b];
            const MatrixXd& gL = side_j == 0 ? est.gLI[b] : est.gLJ[b];
            for (std::size_t e = 0; e < idx.size(); ++e) {
              Index& sl = slot[b][static_cast<std::size_t>(idx[e])];
              if (sl < 0) sl = static_cast<Index>(staged[b].size()), staged[b].push_back(idx[e]);
              stage[b].row(sl) += gL.row(static_cast<Index>(e));
            }
          }
        }
      }
      if (cv)  // the steps of mu at the first occurrences, for the tracking of a below: -mu before
        for (std::size_t b = 0; b < blocks.size(); ++b) {
          first_occurrences(dr.I[b], dr.J[b], fI[b], fJ[b]);
          const Index s = blocks[b].start;
          dI[b] = VectorXd::Zero(static_cast<Index>(dr.I[b].size()));
          dJ[b] = VectorXd::Zero(static_cast<Index>(dr.J[b].size()));
          for (std::size_t e = 0; e < fI[b].size(); ++e)
            if (fI[b][e]) dI[b](static_cast<Index>(e)) = -mu(s + dr.I[b][e]);
          for (std::size_t e = 0; e < fJ[b].size(); ++e)
            if (fJ[b][e]) dJ[b](static_cast<Index>(e)) = -mu(s + dr.J[b][e]);
          if (kappa(b) > 0) {  // chevron: minus the rows of the dense columns before
            DI[b] = MatrixXd::Zero(static_cast<Index>(dr.I[b].size()), kappa(b));
            DJ[b] = MatrixXd::Zero(static_cast<Index>(dr.J[b].size()), kappa(b));
            for (std::size_t e = 0; e < fI[b].size(); ++e)
              if (fI[b][e]) DI[b].row(static_cast<Index>(e)) = -dense_row(b, dr.I[b][e]);
            for (std::size_t e = 0; e < fJ[b].size(); ++e)
              if (fJ[b][e]) DJ[b].row(static_cast<Index>(e)) = -dense_row(b, dr.J[b][e]);
          }
        }
      for (Index g : touched) {  // AdaGrad ascent on the touched coordinates only
        const double c2_old = gauss ? 0.0 : std::exp(2.0 * rho(g));
        acc_mu(g) += g_mu(g) * g_mu(g);
        acc_rho(g) += g_rho(g) * g_rho(g);
        mu(g) += rate * unit(g) * g_mu(g) / std::sqrt(acc_mu(g));
        rho(g) += rate * g_rho(g) / std::sqrt(acc_rho(g));
        g_mu(g) = g_rho(g) = 0;
        mark[static_cast<std::size_t>(g)] = 0;
        if (!gauss) {
          const std::size_t b = block_of[static_cast<std::size_t>(g)];
          tmean[b] += (std::exp(2.0 * rho(g)) - c2_old) / static_cast<double>(blocks[b].size());
        }
      }
      // chevron: AdaGrad on the touched rows of L in units of their column's
      // diagonal (entries b = L / c_rr: steps scale with the posterior sd,
      // not the fixed variational_rate), the step divided by m_b / m~ (the
      // scale of a sampled entry's gradient), against the noise of the
      // sampled gradients (absolute AdaGrad steps on L lowered the ELBO)
      for (std::size_t b = 0; b < blocks.size(); ++b)
        for (std::size_t q = 0; q < staged[b].size(); ++q) {
          const Index i = staged[b][q], kr = std::min(blocks[b].pos(i), kappa(b));
          for (Index r = 0; r < kr; ++r) {
            const double crr = std::exp(rho(blocks[b].start + blocks[b].at(r)));
            const double gb = stage[b](static_cast<Index>(q), r) * crr, old = L[b](i, r);
            acc_L[b](i, r) += gb * gb;
            L[b](i, r) += crr * rate / dr.alpha[b] * gb / std::sqrt(acc_L[b](i, r));
            if (!gauss) tmean[b] += (L[b](i, r) * L[b](i, r) - old * old) / static_cast<double>(blocks[b].size());
          }
          slot[b][static_cast<std::size_t>(i)] = -1;
        }
      if (cv)  // a += Phi0_{P,U} (mu_U - mu_U before) (Proposition 3)
        for (std::size_t b = 0; b < blocks.size(); ++b) {
          const Index s = blocks[b].start;
          for (std::size_t e = 0; e < fI[b].size(); ++e)
            if (fI[b][e]) dI[b](static_cast<Index>(e)) += mu(s + dr.I[b][e]);
          for (std::size_t e = 0; e < fJ[b].size(); ++e)
            if (fJ[b][e]) dJ[b](static_cast<Index>(e)) += mu(s + dr.J[b][e]);
          cv_a.noalias() += est.cvI[b] * dI[b];
          cv_a.noalias() += est.cvJ[b] * dJ[b];
          if (kappa(b) == 0) continue;  // chevron: beta_b += Phi0_{P,U} (C_U - C_U before)
          for (std::size_t e = 0; e < fI[b].size(); ++e)
            if (fI[b][e]) DI[b].row(static_cast<Index>(e)) += dense_row(b, dr.I[b][e]);
          for (std::size_t e = 0; e < fJ[b].size(); ++e)
            if (fJ[b][e]) DJ[b].row(static_cast<Index>(e)) += dense_row(b, dr.J[b][e]);
          cv_b[b].noalias() += est.cvI[b] * DI[b];
          cv_b[b].noalias() += est.cvJ[b] * DJ[b];
        }
      const VectorXd gh = learned_gradient(est.ghyper);
      if (t > T - tail) gsum += gh;
      if (t > frozen && hyper.size() > 0) {
        adam.step(hyper, gh);
        unpack_hyper(hyper);
      }
      rate *= gamma;
      adam.scale_rate(gamma);
      info.iterations = t;
      if (!monitor(t, est.value)) {
        info.stop = "stopped by the monitor";
        break;
      }
    }
    info.seconds_iter = seconds_since(t1);
    info.gradient = gsum / static_cast<double>(std::max(1, std::min(tail, info.iterations)));
    info.converged = false;
    return info;
  }

 private:
  const double* X_;
  std::size_t n_, p_;
  const double* y_;
  const double* w_;
  const double* o_;
};


// ---- Inducing points at every training row (the paper's m = n variant, Table 3)
//
// QsgpGram: one gp() term whose basis functions are the kernel centred at
// the n training inputs, phi_i(x) = k(x, x_i), with prior precision S = K
// (the training Gram matrix), so that f = K w, w ~ N(0, K^{-1}), is the
// exact GP prior at the training rows (Phi = S = K; the paper's Appendix G
// and I.2); plus the parametric columns as in Qsgp (features X_p
// diag(prior_sd), prior N(0, I)).  Weights: n for the term (index i = row i),
// then one per parametric column.  Posterior mean field, c_i = exp(rho_i).
// Gaussian likelihood only; the hyperparameters and the noise are fixed
// (log |K| would cost O(n^3): the paper performs no empirical Bayes here).
// The ELBO without its constant (1/2) log |K|:
//   sum_l [-1/2 log(2 pi sigma^2 / w_l) - w_l Q_l / (2 sigma^2)] - KL',
//   Q_l = (r_l - a_l)^2 + v_l, a_l = K_l. mu + p_l, v_l = sum_i K_li^2 c_i^2 + d_l,
//   KL' = 1/2 [sigma_f^2 sum_i c_i^2 + mu' K mu - sum_i (2 rho_i + 1)] + KL(parametric)
// (p_l, d_l the parametric block's mean and variance at row l).  Per
// iteration: n~ rows and two independent sets I, J of m~ of the n weights
// (uniformly with replacement; all, with I = J, when m~ >= n), alpha = n / m~;
// u_l = alpha K_lI mu_I + p_l, v'_l = the same over J, d^_l = alpha sum_{i in I}
// K_li^2 c_i^2 + d_l, Q^_l = r^2 - r (u + v') + u v' + d^, the trace and log
// terms of KL' over I (times alpha), mu' K mu by alpha^2 mu_I' K_IJ mu_J:
// unbiased for the ELBO above, as is its gradient in (mu, rho).  Cost
// O((n~ + m~) m~ d) per iteration.
// Control variate (the paper's Proposition 3 and Appendix F.2, on one set
// U of nbar support rows drawn once): with h_I = K_UI mu_I, h_J = K_UJ mu_J,
// a = K_U. mu (tracked under the sparse updates) and
//   M = (n / nbar) diag(w_U) / sigma^2 + K_UU^{-1}
// the estimate gains (1/2) [alpha^2 h_I' M h_J - a' M a], of mean zero; its
// first part estimates, as the main terms do, the data term's u v' (rows
// U standing for all rows) and mu' K mu (by its Nystrom approximation
// K_.U K_UU^{-1} K_U.), so that much of the sampling noise of both cancels.
// The gradient of -a' M a / 2 (dense in mu) is kept on the distinct
// sampled indices and scaled by n / |U| (unbiased; Appendix F.1).
// Prediction at x (predict()): mean k(x, X) mu + p, variance
// sum_i k(x, x_i)^2 c_i^2 + d plus the paper's augmentation (its
// Proposition 4): a basis function k(., x) with its Proposition-1 variance
// c^2 = sigma^2 / (k' W k + sigma^2 k(x, x)) adds k(x, x)^2 c^2 (reverting to
// the prior variance far from the data).  Each predicted row costs O(n d).

struct QsgpGramDraw {
  std::vector<std::size_t> rows;
  std::vector<Index> I, J;
  double alpha = 1, row_scale = 1;
  bool full = false;
};

struct QsgpGramEstimate {
  double value = 0;
  VectorXd gmuI, grhoI, gmuJ, gmuP, grhoP;  // the term's weights at I (mu, rho), J (mu); the parametric block
  MatrixXd KUI, KUJ;                        // control variate: K_UI, K_UJ (for the tracking of a)
};

class QsgpGram {
 public:
  Kernel kern;
  std::vector<Index> gcols, pcols;  // the term's input columns; the parametric columns
  VectorXd prior_sd;                // the parametric columns' prior sd
  double log_noise = 0;
  VectorXd mu, rho;  // n term weights, then the parametric block
  Settings set;
  QsgpSettings qs;
  std::vector<std::size_t> cv_rows;  // support rows U of the control variate
  MatrixXd cv_M;                     // (n / nbar) diag(w_U) / sigma^2 + K_UU^{-1}
  VectorXd cv_a;                     // K_U. mu (the term's weights)

  QsgpGram(const Kernel& k, std::vector<Index> g, std::vector<Index> pc, VectorXd psd, double log_noise_,
           const Settings& s, const QsgpSettings& q, const double* X, std::size_t n, std::size_t p, const double* y,
           const double* w, const double* offset)
      : kern(k), gcols(std::move(g)), pcols(std::move(pc)), prior_sd(std::move(psd)), log_noise(log_noise_), set(s),
        qs(q), n_(n), y_(y), w_(w), o_(offset) {
    if (pcols.size() != static_cast<std::size_t>(prior_sd.size()))
      throw std::invalid_argument("one prior sd per parametric column is needed");
    for (Index c : gcols)
      if (c < 0 || static_cast<std::size_t>(c) >= p) throw std::invalid_argument("a column is out of range");
    for (Index c : pcols)
      if (c < 0 || static_cast<std::size_t>(c) >= p) throw std::invalid_argument("a column is out of range");
    Xs_.resize(static_cast<Index>(n), static_cast<Index>(gcols.size()));
    for (std::size_t d = 0; d < gcols.size(); ++d)
      for (std::size_t l = 0; l < n; ++l)
        Xs_(static_cast<Index>(l), static_cast<Index>(d)) = X[l + n * static_cast<std::size_t>(gcols[d])];
    Xs_ = kern.scale(Xs_);
    xx_ = Xs_.rowwise().squaredNorm();
    P_.resize(static_cast<Index>(n), prior_sd.size());
    for (Index k2 = 0; k2 < prior_sd.size(); ++k2)
      for (std::size_t l = 0; l < n; ++l)
        P_(static_cast<Index>(l), k2) = X[l + n * static_cast<std::size_t>(pcols[static_cast<std::size_t>(k2)])] *
                                        prior_sd(k2);
    mu = VectorXd::Zero(static_cast<Index>(n) + prior_sd.size());
    rho = VectorXd::Zero(mu.size());
  }

  std::size_t n() const { return n_; }
  Index n_param() const { return prior_sd.size(); }
  double noise_var() const { return Likelihood::kNoiseFloor + std::exp(log_noise); }

  // k(x, x_i) for a scaled input x (xs, its squared norm xn) and training row i.
  double k_at(const double* xs, double xn, std::size_t i) const {
    double dot = 0;
    for (Index d = 0; d < Xs_.cols(); ++d) dot += xs[d] * Xs_(static_cast<Index>(i), d);
    double c = 0, dc = 0;
    kern.profile(std::max(0.0, xn + xx_(static_cast<Index>(i)) - 2.0 * dot), c, dc);
    return kern.variance() * c;
  }
  // k(x_l, x_I) for training row l into out.
  void k_row(std::size_t l, const std::vector<Index>& idx, VectorXd& out) const {
    VectorXd xs = Xs_.row(static_cast<Index>(l)).transpose();
    for (std::size_t e = 0; e < idx.size(); ++e)
      out(static_cast<Index>(e)) = k_at(xs.data(), xx_(static_cast<Index>(l)), static_cast<std::size_t>(idx[e]));
  }

  QsgpGramDraw draw(Rng& rng) const {
    QsgpGramDraw dr;
    dr.rows = draw_rows(set.batch_size, n_, rng, dr.row_scale);
    const Index m = static_cast<Index>(n_), mt = std::min(qs.feature_batch, m);
    dr.full = mt == m;
    draw_index_pair(m, mt, rng, dr.I, dr.J);
    dr.alpha = static_cast<double>(m) / static_cast<double>(mt);
    return dr;
  }

  // The estimate of the ELBO (without (1/2) log |K|) for draw dr, and its gradient (head comment).
  QsgpGramEstimate estimate(const QsgpGramDraw& dr, const ParallelFor& pfor) const {
    const Index nI = static_cast<Index>(dr.I.size()), nJ = static_cast<Index>(dr.J.size()), np = n_param();
    const double al = dr.alpha, s2 = noise_var(), sf2 = kern.variance();
    VectorXd muI(nI), c2I(nI), muJ(nJ);
    for (Index e = 0; e < nI; ++e) {
      muI(e) = mu(dr.I[static_cast<std::size_t>(e)]);
      c2I(e) = std::exp(2.0 * rho(dr.I[static_cast<std::size_t>(e)]));
    }
    for (Index e = 0; e < nJ; ++e) muJ(e) = mu(dr.J[static_cast<std::size_t>(e)]);
    const VectorXd muP = mu.tail(np), c2P = (2.0 * rho.tail(np)).array().exp().matrix();
    // accumulator: [0] sum of E_l, gmuI, grhoI, gmuJ, gmuP, grhoP
    const Index len = 1 + 2 * nI + nJ + 2 * np;
    auto work = [&](VectorXd& acc, std::size_t begin, std::size_t end) {
      VectorXd kI(nI), kJ(nJ);
      for (std::size_t q = begin; q < end; ++q) {
        const std::size_t l = dr.rows[q];
        const double wt = w_[l];
        if (!(wt > 0)) continue;
        k_row(l, dr.I, kI);
        k_row(l, dr.J, kJ);
        const auto pl = P_.row(static_cast<Index>(l));
        const double r = y_[l] - o_[l], pm = pl.dot(muP), pd = pl.cwiseAbs2().dot(c2P);
        const double u = al * kI.dot(muI) + pm, v = al * kJ.dot(muJ) + pm;
        const double dd = al * kI.cwiseAbs2().dot(c2I) + pd;
        const double Q = r * r - r * (u + v) + u * v + dd, k = -0.5 * wt / s2;
        acc(0) += -0.5 * (kLog2Pi + std::log(s2 / wt)) - 0.5 * wt * Q / s2;
        acc.segment(1, nI) += (k * (v - r) * al) * kI;
        acc.segment(1 + nI, nI) += (2.0 * k * al) * kI.cwiseAbs2().cwiseProduct(c2I);
        acc.segment(1 + 2 * nI, nJ) += (k * (u - r) * al) * kJ;
        acc.segment(1 + 2 * nI + nJ, np) += (k * (u + v - 2.0 * r)) * pl.transpose();
        acc.segment(1 + 2 * nI + nJ + np, np) += (2.0 * k) * pl.transpose().cwiseAbs2().cwiseProduct(c2P);
      }
    };
    const VectorXd acc =
        deterministic_reduce<VectorXd>(dr.rows.size(), pfor, [len] { return VectorXd::Zero(len).eval(); }, work);
    const double sc = dr.row_scale;
    QsgpGramEstimate est;
    est.value = sc * acc(0);
    est.gmuI = sc * acc.segment(1, nI);
    est.grhoI = sc * acc.segment(1 + nI, nI);
    est.gmuJ = sc * acc.segment(1 + 2 * nI, nJ);
    est.gmuP = sc * acc.segment(1 + 2 * nI + nJ, np);
    est.grhoP = sc * acc.segment(1 + 2 * nI + nJ + np, np);
    // KL': the trace and log terms over I, mu' K mu by alpha^2 mu_I' K_IJ mu_J
    for (Index e = 0; e < nI; ++e) {
      est.value -= al * 0.5 * (sf2 * c2I(e) - 2.0 * rho(dr.I[static_cast<std::size_t>(e)]) - 1.0);
      est.grhoI(e) -= al * (sf2 * c2I(e) - 1.0);
    }
    const MatrixXd KIJ = cross(dr.I, dr.J, pfor);
    const VectorXd KmuJ = KIJ * muJ, KmuI = KIJ.transpose() * muI;
    est.value -= 0.5 * al * al * muI.dot(KmuJ);
    est.gmuI -= (0.5 * al * al) * KmuJ;
    est.gmuJ -= (0.5 * al * al) * KmuI;
    for (Index k = 0; k < np; ++k) {
      est.value -= 0.5 * (muP(k) * muP(k) + c2P(k) - 2.0 * rho(mu.size() - np + k) - 1.0);
      est.gmuP(k) -= muP(k);
      est.grhoP(k) -= c2P(k) - 1.0;
    }
    if (!cv_rows.empty()) {  // the control variate (head comment)
      est.KUI = cross(cv_rows, dr.I, pfor);
      est.KUJ = cross(cv_rows, dr.J, pfor);
      const VectorXd hI = est.KUI * muI, hJ = est.KUJ * muJ, MhI = cv_M * hI, MhJ = cv_M * hJ, Ma = cv_M * cv_a;
      est.value += 0.5 * (al * al * hI.dot(MhJ) - cv_a.dot(Ma));
      est.gmuI.noalias() += (0.5 * al * al) * (est.KUI.transpose() * MhJ);
      est.gmuJ.noalias() += (0.5 * al * al) * (est.KUJ.transpose() * MhI);
      std::vector<char> fI, fJ;
      const double k = static_cast<double>(n_) / static_cast<double>(first_occurrences(dr.I, dr.J, fI, fJ));
      const VectorXd gI = est.KUI.transpose() * Ma, gJ = est.KUJ.transpose() * Ma;
      for (Index e = 0; e < nI; ++e)
        if (fI[static_cast<std::size_t>(e)]) est.gmuI(e) -= k * gI(e);
      for (Index e = 0; e < nJ; ++e)
        if (fJ[static_cast<std::size_t>(e)]) est.gmuJ(e) -= k * gJ(e);
    }
    return est;
  }

  // K(rows A, rows B) among the training rows, in parallel over the rows of A.
  template <class IA, class IB>
  MatrixXd cross(const std::vector<IA>& A, const std::vector<IB>& B, const ParallelFor& pfor) const {
    MatrixXd K(static_cast<Index>(A.size()), static_cast<Index>(B.size()));
    blocked_for(A.size(), pfor, [&](std::size_t begin, std::size_t end) {
      for (std::size_t a = begin; a < end; ++a) {
        const std::size_t l = static_cast<std::size_t>(A[a]);
        VectorXd xs = Xs_.row(static_cast<Index>(l)).transpose();
        for (std::size_t b = 0; b < B.size(); ++b)
          K(static_cast<Index>(a), static_cast<Index>(b)) =
              k_at(xs.data(), xx_(static_cast<Index>(l)), static_cast<std::size_t>(B[b]));
      }
    });
    return K;
  }

  // The support rows (`rows` drawn without replacement; all when rows >= n;
  // none when 0), M and a = K_U. mu (O(nbar n d) unless mu = 0).
  void cv_init(std::size_t rows, Rng& rng, const ParallelFor& pfor) {
    cv_rows.clear();
    if (rows == 0) return;
    cv_rows = support_rows(rows, n_, rng);
    const Index nbar = static_cast<Index>(cv_rows.size());
    MatrixXd Kuu = cross(cv_rows, cv_rows, pfor);
    Kuu.diagonal().array() += set.rel_jitter * kern.variance();
    Eigen::LLT<MatrixXd> llt(Kuu);
    if (llt.info() != Eigen::Success) throw numerical_error("QSGP: the support rows' kernel matrix is not positive definite");
    cv_M = llt.solve(MatrixXd::Identity(nbar, nbar));
    const double scv = static_cast<double>(n_) / static_cast<double>(nbar) / noise_var();
    for (Index q = 0; q < nbar; ++q) cv_M(q, q) += scv * w_[cv_rows[static_cast<std::size_t>(q)]];
    cv_a = VectorXd::Zero(nbar);
    if (!mu.head(static_cast<Index>(n_)).isZero(0)) cv_a = cv_exact(pfor);
  }
  VectorXd cv_exact(const ParallelFor& pfor) const {
    std::vector<std::size_t> all(n_);
    for (std::size_t l = 0; l < n_; ++l) all[l] = l;
    return cross(cv_rows, all, pfor) * mu.head(static_cast<Index>(n_));
  }

  // Proposition 1's c_i^2 = 1 / (sum_l w_l K_li^2 / sigma^2 + sigma_f^2), the
  // sum estimated from `rows` rows drawn with replacement (all when rows >=
  // n); the parametric block likewise with prior precision 1.  O(rows n d).
  void init_diagonal(std::size_t rows, Rng& rng, const ParallelFor& pfor) {
    const std::size_t k = std::min(rows, n_);
    std::vector<std::size_t> idx(k);
    for (std::size_t j = 0; j < k; ++j) idx[j] = k == n_ ? j : uniform_index(rng, n_);
    const Index m = mu.size(), np = n_param();
    std::vector<Index> all(n_);
    for (std::size_t i = 0; i < n_; ++i) all[i] = static_cast<Index>(i);
    const VectorXd ss = deterministic_reduce<VectorXd>(
        k, pfor, [m] { return VectorXd::Zero(m).eval(); },
        [&](VectorXd& acc, std::size_t begin, std::size_t end) {
          VectorXd kr(static_cast<Index>(n_));
          for (std::size_t j = begin; j < end; ++j) {
            k_row(idx[j], all, kr);
            acc.head(static_cast<Index>(n_)) += w_[idx[j]] * kr.cwiseAbs2();
            acc.tail(np) += w_[idx[j]] * P_.row(static_cast<Index>(idx[j])).transpose().cwiseAbs2();
          }
        });
    const double scale = static_cast<double>(n_) / static_cast<double>(k), s2 = noise_var();
    for (Index i = 0; i < m; ++i)
      rho(i) = -0.5 * std::log(scale * ss(i) / s2 + (i < static_cast<Index>(n_) ? kern.variance() : 1.0));
  }

  // At the nrow rows of X (column-major; the same design columns as the
  // training data): per block (the term, the parametric block) the mean and
  // variance, uncentred and with the term's basis centred by `center` (size
  // n; the parametric block is not centred); the term's variance with the
  // augmentation of the head comment when `augment`.  O(nrow n d).
  void predict(const double* X, std::size_t nrow, const VectorXd& center, bool augment, MatrixXd& mean,
               MatrixXd& var, MatrixXd& cmean, MatrixXd& cvar, const ParallelFor& pfor) const {
    mean.resize(static_cast<Index>(nrow), 2);
    var.resizeLike(mean);
    cmean.resizeLike(mean);
    cvar.resizeLike(mean);
    const Index np = n_param(), n = static_cast<Index>(n_);
    const VectorXd c2 = (2.0 * rho).array().exp().matrix();
    const double s2 = noise_var(), sf2 = kern.variance();
    blocked_for(nrow, pfor, [&](std::size_t begin, std::size_t end) {
      VectorXd xs(Xs_.cols()), kr(n);
      for (std::size_t l = begin; l < end; ++l) {
        const Index li = static_cast<Index>(l);
        for (Index d = 0; d < Xs_.cols(); ++d)
          xs(d) = X[l + nrow * static_cast<std::size_t>(gcols[static_cast<std::size_t>(d)])] / kern.ls(d);
        const double xn = xs.squaredNorm();
        double kwk = 0;
        for (Index i = 0; i < n; ++i) {
          kr(i) = k_at(xs.data(), xn, static_cast<std::size_t>(i));
          kwk += w_[i] * kr(i) * kr(i);
        }
        const double aug = augment ? sf2 * sf2 * s2 / (kwk + s2 * sf2) : 0.0;
        mean(li, 0) = kr.dot(mu.head(n));
        var(li, 0) = kr.cwiseAbs2().dot(c2.head(n)) + aug;
        kr -= center;
        cmean(li, 0) = kr.dot(mu.head(n));
        cvar(li, 0) = kr.cwiseAbs2().dot(c2.head(n)) + aug;
        double pm = 0, pv = 0;
        for (Index k = 0; k < np; ++k) {
          const double f = X[l + nrow * static_cast<std::size_t>(pcols[static_cast<std::size_t>(k)])] * prior_sd(k);
          pm += f * mu(n + k);
          pv += f * f * c2(n + k);
        }
        mean(li, 1) = cmean(li, 1) = pm;
        var(li, 1) = cvar(li, 1) = pv;
      }
    });
  }

  // k(X rows, training rows first..first+count-1): nrow x count.
  MatrixXd features(const double* X, std::size_t nrow, Index first, Index count) const {
    if (first < 0 || count < 0 || first + count > static_cast<Index>(n_))
      throw std::invalid_argument("feature range out of the block");
    MatrixXd F(static_cast<Index>(nrow), count);
    VectorXd xs(Xs_.cols());
    for (std::size_t l = 0; l < nrow; ++l) {
      for (Index d = 0; d < Xs_.cols(); ++d)
        xs(d) = X[l + nrow * static_cast<std::size_t>(gcols[static_cast<std::size_t>(d)])] / kern.ls(d);
      const double xn = xs.squaredNorm();
      for (Index c = 0; c < count; ++c)
        F(static_cast<Index>(l), c) = k_at(xs.data(), xn, static_cast<std::size_t>(first + c));
    }
    return F;
  }

  // The exact ELBO without (1/2) log |K| (O(n^2 d)), the latent mean and
  // variance at every training row, and the means of the term's basis
  // functions over the rows (for centring).
  QsgpExact exact(const ParallelFor& pfor) const {
    QsgpExact ex;
    const Index n = static_cast<Index>(n_), np = n_param();
    ex.mean.resize(n);
    ex.var.resize(n);
    const VectorXd c2 = (2.0 * rho).array().exp().matrix();
    const double s2 = noise_var();
    std::vector<Index> all(n_);
    for (std::size_t i = 0; i < n_; ++i) all[i] = static_cast<Index>(i);
    auto work = [&](VectorXd& acc, std::size_t begin, std::size_t end) {
      VectorXd kr(n);
      for (std::size_t l = begin; l < end; ++l) {
        k_row(l, all, kr);
        const auto pl = P_.row(static_cast<Index>(l));
        const double km = kr.dot(mu.head(n));
        const double a = km + pl.dot(mu.tail(np));
        const double v = kr.cwiseAbs2().dot(c2.head(n)) + pl.cwiseAbs2().dot(c2.tail(np));
        ex.mean(static_cast<Index>(l)) = a;
        ex.var(static_cast<Index>(l)) = v;
        acc.tail(n) += kr;
        acc(1) += mu(static_cast<Index>(l)) * km;  // mu' K mu
        const double wt = w_[l];
        if (wt > 0) {
          const double r = y_[l] - o_[l];
          acc(0) += -0.5 * (kLog2Pi + std::log(s2 / wt)) - 0.5 * wt * ((r - a) * (r - a) + v) / s2;
        }
      }
    };
    const VectorXd acc =
        deterministic_reduce<VectorXd>(n_, pfor, [n] { return VectorXd::Zero(n + 2).eval(); }, work);
    double kl = 0.5 * acc(1);
    for (Index i = 0; i < n; ++i) kl += 0.5 * (kern.variance() * c2(i) - 2.0 * rho(i) - 1.0);
    for (Index k = 0; k < np; ++k) kl += 0.5 * (mu(n + k) * mu(n + k) + c2(n + k) - 2.0 * rho(n + k) - 1.0);
    ex.elbo = acc(0) - kl;
    ex.feature_means = acc.tail(n) / static_cast<double>(n_);
    return ex;
  }

  // init_diagonal(), cv_init(), then set.max_iter iterations of AdaGrad on
  // the sampled weights' (mu, rho) and the parametric block's (the term's
  // means in units of their starting sd), the step decaying exponentially
  // to final_rate times its start; monitor(t,
  // estimate) returns false to stop.  No hyperparameters are learned.
  template <class Monitor>
  FitInfo fit(const ParallelFor& pfor, Rng& rng, Monitor monitor) {
    FitInfo info;
    const auto t0 = Clock::now();
    const int T = set.max_iter;
    const double gamma = std::pow(qs.final_rate, 1.0 / std::max(1, T - 1));
    const Index m = mu.size(), n = static_cast<Index>(n_), np = n_param();
    VectorXd acc_mu = VectorXd::Constant(m, qs.adagrad_init), acc_rho = acc_mu;
    VectorXd g_mu = VectorXd::Zero(m), g_rho = VectorXd::Zero(m);
    std::vector<char> mark(static_cast<std::size_t>(m), 0);
    std::vector<Index> touched;
    double rate = qs.variational_rate;
    init_diagonal(qs.init_rows, rng, pfor);
    cv_init(qs.control_rows, rng, pfor);
    // the term's means step in units of their starting sd (Proposition 1's
    // c_i, about sigma / |K_.i|), the parametric block's in units of the
    // coefficients (1 / prior_sd, as in Qsgp::fit()).  With absolute steps
    // the term's neighbouring weights, sampled together and
    // moved by about the same step, moved f by the step times the column
    // sums of K (the ELBO estimate diverged on kin40k at variational_rate 0.1)
    VectorXd unit = VectorXd::Ones(m);
    unit.head(n) = rho.head(n).array().exp().matrix();
    unit.tail(np) = prior_sd.cwiseInverse();
    std::vector<char> fI, fJ;
    info.seconds_init = seconds_since(t0);
    const auto t1 = Clock::now();
    info.stop = "iteration limit (stochastic fit: no stationary-point test)";
    for (int t = 1; t <= T; ++t) {
      const QsgpGramDraw dr = draw(rng);
      const QsgpGramEstimate est = estimate(dr, pfor);
      if (!std::isfinite(est.value))
        throw numerical_error("QSGP: the ELBO estimate is not finite at iteration " + std::to_string(t) +
                              "; try a smaller variational_rate");
      info.trace.push_back(est.value);
      touched.clear();
      auto touch = [&](Index g) {
        if (!mark[static_cast<std::size_t>(g)]) mark[static_cast<std::size_t>(g)] = 1, touched.push_back(g);
      };
      for (std::size_t e = 0; e < dr.I.size(); ++e) {
        g_mu(dr.I[e]) += est.gmuI(static_cast<Index>(e));
        g_rho(dr.I[e]) += est.grhoI(static_cast<Index>(e));
        touch(dr.I[e]);
      }
      for (std::size_t e = 0; e < dr.J.size(); ++e) {
        g_mu(dr.J[e]) += est.gmuJ(static_cast<Index>(e));
        touch(dr.J[e]);
      }
      for (Index k = 0; k < np; ++k) {
        g_mu(n + k) += est.gmuP(k);
        g_rho(n + k) += est.grhoP(k);
        touch(n + k);
      }
      VectorXd dI, dJ;  // the control variate: the steps of mu at the first occurrences
      if (!cv_rows.empty()) {
        first_occurrences(dr.I, dr.J, fI, fJ);
        dI = VectorXd::Zero(static_cast<Index>(dr.I.size()));
        dJ = VectorXd::Zero(static_cast<Index>(dr.J.size()));
        for (std::size_t e = 0; e < fI.size(); ++e)
          if (fI[e]) dI(static_cast<Index>(e)) = -mu(dr.I[e]);
        for (std::size_t e = 0; e < fJ.size(); ++e)
          if (fJ[e]) dJ(static_cast<Index>(e)) = -mu(dr.J[e]);
      }
      for (Index g : touched) {  // AdaGrad ascent on the touched coordinates only
        acc_mu(g) += g_mu(g) * g_mu(g);
        acc_rho(g) += g_rho(g) * g_rho(g);
        mu(g) += rate * unit(g) * g_mu(g) / std::sqrt(acc_mu(g));
        rho(g) += rate * g_rho(g) / std::sqrt(acc_rho(g));
        g_mu(g) = g_rho(g) = 0;
        mark[static_cast<std::size_t>(g)] = 0;
      }
      if (!cv_rows.empty()) {  // a += K_{U,I u J} (mu - mu before)
        for (std::size_t e = 0; e < fI.size(); ++e)
          if (fI[e]) dI(static_cast<Index>(e)) += mu(dr.I[e]);
        for (std::size_t e = 0; e < fJ.size(); ++e)
          if (fJ[e]) dJ(static_cast<Index>(e)) += mu(dr.J[e]);
        cv_a.noalias() += est.KUI * dI;
        cv_a.noalias() += est.KUJ * dJ;
      }
      rate *= gamma;
      info.iterations = t;
      if (!monitor(t, est.value)) {
        info.stop = "stopped by the monitor";
        break;
      }
    }
    info.seconds_iter = seconds_since(t1);
    info.gradient = VectorXd::Zero(0);
    info.converged = false;
    return info;
  }

 private:
  std::size_t n_;
  const double* y_;
  const double* w_;
  const double* o_;
  MatrixXd Xs_;  // the term's inputs at the training rows, divided by the lengthscales (n x d)
  VectorXd xx_;  // their squared norms
  MatrixXd P_;   // the parametric features X_p diag(prior_sd) (n x p)
};

}  // namespace scalegp
