// Sparse variational GP (SVGP; Hensman et al. 2013, 2015) for the additive
// predictor of model.hpp, with one coupled Gaussian q(v) over the whitened
// inducing variables of all components (the coupled posterior of Adam,
// Durrande and John 2018, "Scalable GAM using sparse variational Gaussian
// processes", full rank), or block-diagonal (`meanfield`, Saul et
// al. 2016), or with a low-rank precision (`rank`).  q is updated by
// natural-gradient steps (a step of 1 on the full data of a Gaussian model
// gives the optimal q); kernel hyperparameters, inducing inputs and the noise
// variance by Adam in the shared fit loop (fit_loop.hpp).
//
// In whitened coordinates, with Q = Phi' diag(gamma) Phi, r = Phi' g and the
// per-row derivatives g = dE/dmu, gamma = dE/ds2 of the expected
// log-likelihood, the natural-gradient target is
//   P* = I - 2 s Q,  h* = s (r - 2 Q m),
// and the gradient of the ELBO w.r.t. the features is
//   Phibar = g m' + 2 diag(gamma) (Phi S - Phi)   (Hensman et al. 2015, eqs. 8-9, whitened).
#pragma once
#include "discrete.hpp"
#include "fit_loop.hpp"
#include "gaussian_q.hpp"
#include "likelihoods.hpp"
#include <functional>
#include <memory>

namespace scalegp {

struct DiscreteRowParts;
struct RowGroupSums;
using RemoteRows = std::function<std::vector<RowGroupSums>(const DiscreteRowParts&, bool stats, bool gradient)>;

struct SvgpSettings {
  double natgrad_step = -1;  // <= 0: 1 (Gaussian, full batch), 0.5 (other families, full batch), 0.1 (minibatches)
  bool meanfield = false;    // block-diagonal q over components
  int rank = 0;              // > 0: P = I + W W' with W of this many columns
  bool lbfgs = true;         // full batch: L-BFGS with q optimal at each step (else Adam steps)
  // Full batch: products over distinct (rounded) values of each component
  // (discrete.hpp); the R default decides (vi_discrete()).
  bool discrete = false;
  double bins = 1000;  // values per gp() input (<= 0: exact values)
};

// ---- the pass over the rows of a discretised fit (likelihoods other than Gaussian) ----
// A row's latent mean and variance are sums over its values: per component
// c its mean mv[c] and variance vd[c] by value, per pair of components q the
// covariance term vp[q] by observed pair.  A row is known by its `keys`: per
// stream (components first, then pairs) its value, or its entry of the
// pair's observed pairs.  The pass sums, per group of rows (group_bounds()),
// the expected log-likelihood and, by key of every stream, the derivatives
// of the rows' terms; the groups are added in order (add_row_groups()), so
// the sums are the same for any thread count and wherever the groups were
// computed (threads of one process or the workers of a cluster, R:
// engine-vi.R).

struct DiscreteRowParts {
  std::vector<VectorXd> mv, vd, vp;
  bool var = false, pairs = false;
};

// The rows' keys (row-indexed arrays) of one process: its rows [0, n).
struct RowKeys {
  std::size_t C = 0;                  // the first C streams are components
  std::vector<const int*> key;        // per stream
};

// Row i's latent mean (offset o included) and variance.
inline void row_latent_moments(const DiscreteRowParts& p, const RowKeys& k, double o, std::size_t i, std::size_t n,
                                 double& mu, double& s2) {
  mu = o;
  s2 = 0;
  for (std::size_t c = 0; c < p.mv.size(); ++c) {
    const int a = k.key[c][i];
    mu += p.mv[c](a);
    if (p.var) s2 += p.vd[c](a);
  }
  if (p.pairs) {
    // (the pairs' entries of the rows to come, ahead: these reads go all
    // over arrays of up to one entry per row, and would each wait for memory)
    const std::size_t ahead = i + kPrefetchRows;
    for (std::size_t q = 0; q < p.vp.size(); ++q) {
      const int* pos = k.key[k.C + q];
      if (ahead < n) prefetch(p.vp[q].data() + pos[ahead]);
      s2 += p.vp[q](pos[i]);
    }
  }
  if (p.var) s2 = std::max(s2, 1e-12);
}

// Per group of rows and stream, the distinct keys of its rows (ascending)
// and each row's place among them (built once per fit: the sums of a group
// then go to a short array of its own).
struct RowGroupIndex {
  std::vector<std::size_t> bounds;
  std::vector<std::vector<int>> loc;               // [stream][row]
  std::vector<std::vector<std::vector<int>>> idx;  // [group][stream]
};

inline RowGroupIndex row_group_index(const RowKeys& k, const std::vector<std::size_t>& bounds, const ParallelFor& pfor) {
  RowGroupIndex gi;
  gi.bounds = bounds;
  const std::size_t S = k.key.size(), G = bounds.size() - 1, n = bounds.back();
  gi.loc.assign(S, std::vector<int>(n));
  gi.idx.assign(G, std::vector<std::vector<int>>(S));
  pfor(G * S, [&](std::size_t t0, std::size_t t1) {
    for (std::size_t t = t0; t < t1; ++t) {
      const std::size_t g = t / S, s = t % S;
      std::vector<int>& idx = gi.idx[g][s];
      idx.assign(k.key[s] + bounds[g], k.key[s] + bounds[g + 1]);
      std::sort(idx.begin(), idx.end());
      idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
      for (std::size_t i = bounds[g]; i < bounds[g + 1]; ++i)
        gi.loc[s][i] = static_cast<int>(std::lower_bound(idx.begin(), idx.end(), k.key[s][i]) - idx.begin());
    }
  });
  return gi;
}

// Per group and stream the number of distinct keys.
inline std::vector<std::vector<Index>> row_group_sizes(const RowGroupIndex& gi) {
  std::vector<std::vector<Index>> size(gi.idx.size());
  for (std::size_t g = 0; g < gi.idx.size(); ++g)
    for (const std::vector<int>& ix : gi.idx[g]) size[g].push_back(static_cast<Index>(ix.size()));
  return size;
}

// One group's sums: the expected log-likelihood and its noise derivative,
// and (with `stats`) per stream, at the group's keys, the sums of the rows'
// dE/dmu (components only), of min(dE/ds2, 0) and, for the gradient when a
// row of the group has dE/ds2 > 0, of dE/ds2 itself.
struct RowGroupSums {
  double v = 0, dn = 0;
  bool positive = false;
  std::vector<VectorXd> g, gq, raw;
  VectorXd row_g, row_gam;  // (the rows' derivatives: room reused between passes)
};

// The sums of group `g` of a process's rows (y, w, o: row-indexed), with
// `loc` and `size` (per stream the row's place and the group's number of
// keys) from a RowGroupIndex of the same rows.
// (`s` is overwritten; its vectors are reused when they have the sizes.)
inline void row_group_sums(const DiscreteRowParts& p, const RowKeys& k, const std::vector<const int*>& loc,
                           const std::vector<Index>& size, std::size_t begin, std::size_t end, std::size_t n,
                           const Likelihood& lik, const double* y, const double* w, const double* o, bool stats,
                           bool gradient, RowGroupSums& s) {
  s.v = s.dn = 0;
  s.positive = false;
  const std::size_t nr = end - begin, S = k.key.size();
  VectorXd& g = s.row_g;
  VectorXd& gam = s.row_gam;
  g.resize(static_cast<Index>(nr));
  gam.resize(static_cast<Index>(nr));
  for (std::size_t i = begin; i < end; ++i) {
    double mu, s2;
    row_latent_moments(p, k, o[i], i, n, mu, s2);
    const Expectation e = lik.expect(y[i], w[i], mu, s2);
    s.v += e.v;
    s.dn += e.dlognoise;
    g(static_cast<Index>(i - begin)) = e.dm;
    gam(static_cast<Index>(i - begin)) = e.dv;
  }
  if (!stats) {
    s.g.clear();
    s.gq.clear();
    s.raw.clear();
    return;
  }
  s.positive = gradient && (gam.array() > 0.0).any();
  s.g.resize(k.C);
  s.gq.resize(S);
  s.raw.resize(s.positive ? S : 0);
  for (std::size_t t = 0; t < S; ++t) {
    const int* l = loc[t] + begin;
    s.gq[t].setZero(size[t]);
    for (std::size_t r = 0; r < nr; ++r) s.gq[t](l[r]) += std::min(gam(static_cast<Index>(r)), 0.0);
    if (t < k.C) {
      s.g[t].setZero(size[t]);
      for (std::size_t r = 0; r < nr; ++r) s.g[t](l[r]) += g(static_cast<Index>(r));
    }
    if (s.positive) {
      s.raw[t].setZero(size[t]);
      for (std::size_t r = 0; r < nr; ++r) s.raw[t](l[r]) += gam(static_cast<Index>(r));
    }
  }
}

// All groups of a process's rows (as row_group_sums(), into `out`).
inline void row_groups_sums(const DiscreteRowParts& p, const RowKeys& k, const std::vector<const int*>& loc,
                            const std::vector<std::vector<Index>>& size, const std::vector<std::size_t>& bounds,
                            const Likelihood& lik, const double* y, const double* w, const double* o, bool stats,
                            bool gradient, const ParallelFor& pfor, std::vector<RowGroupSums>& out) {
  out.resize(bounds.size() - 1);
  pfor(out.size(), [&](std::size_t g0, std::size_t g1) {
    for (std::size_t g = g0; g < g1; ++g)
      row_group_sums(p, k, loc, size[g], bounds[g], bounds[g + 1], bounds.back(), lik, y, w, o, stats, gradient,
                     out[g]);
  });
}

// The totals of the groups' sums, added in group order at each group's keys
// (idx: the RowGroupIndex of all rows): per stream sums over all rows by key
// (D: the streams' numbers of keys).  `raw` totals (for the gradient) are
// made when a row has dE/ds2 > 0: from groups without one, their gq.
struct RowTotals {
  double v = 0, dn = 0;
  bool positive = false;
  std::vector<VectorXd> g, gq, raw;
};

inline RowTotals add_row_groups(const std::vector<RowGroupSums>& groups,
                                const std::vector<std::vector<std::vector<int>>>& idx, std::size_t C,
                                const std::vector<Index>& D, bool stats, const ParallelFor& pfor) {
  RowTotals t;
  for (const RowGroupSums& s : groups) {
    t.v += s.v;
    t.dn += s.dn;
    t.positive = t.positive || s.positive;
  }
  if (!stats) return t;
  const std::size_t S = D.size();
  t.g.resize(C);
  t.gq.resize(S);
  for (std::size_t s = 0; s < S; ++s) {
    t.gq[s] = VectorXd::Zero(D[s]);
    if (s < C) t.g[s] = VectorXd::Zero(D[s]);
  }
  if (t.positive) {
    t.raw.resize(S);
    for (std::size_t s = 0; s < S; ++s) t.raw[s] = VectorXd::Zero(D[s]);
  }
  if (groups.size() != idx.size()) throw std::invalid_argument("row sums for a different number of groups");
  for (std::size_t gr = 0; gr < groups.size(); ++gr)
    for (std::size_t st = 0; st < S; ++st)
      if (groups[gr].gq.size() != S || groups[gr].gq[st].size() != static_cast<Index>(idx[gr][st].size()))
        throw std::invalid_argument("row sums of a group do not match its keys");
  pfor(S, [&](std::size_t s0, std::size_t s1) {  // (streams apart; in each, the groups in order)
    for (std::size_t st = s0; st < s1; ++st)
      for (std::size_t gr = 0; gr < groups.size(); ++gr) {
        const RowGroupSums& s = groups[gr];
        const std::vector<int>& ix = idx[gr][st];
        for (std::size_t j = 0; j < ix.size(); ++j) {
          const Index a = ix[j], jj = static_cast<Index>(j);
          t.gq[st](a) += s.gq[st](jj);
          if (st < C) t.g[st](a) += s.g[st](jj);
          if (t.positive) t.raw[st](a) += s.positive ? s.raw[st](jj) : s.gq[st](jj);
        }
      }
  });
  return t;
}

class Svgp : public WhitenedGaussianModel {
 public:
  Likelihood lik;
  SvgpSettings opt;

  Svgp(std::vector<Component> components, Likelihood likelihood, Settings settings, SvgpSettings options,
       const double* X, std::size_t n, std::size_t p, const double* y, const double* w, const double* offset)
      : WhitenedGaussianModel(std::move(components), settings, X, n, p, y, w, offset),
        lik(std::move(likelihood)),
        opt(options) {}

  // ---- one pass over a set of rows --------------------------------------------
  struct Accum {
    double sum_v = 0, dlognoise = 0;
    VectorXd r;      // Phi' g
    MatrixXd Q;      // Phi' diag(gamma) Phi (lower triangle)
    GradAccum grad;  // data part of the hyperparameter gradient
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
  // `shift` (optional, one entry per row of the pass) is added to the
  // predictor's mean (the decoupled engine's mean bases outside q); `g_rows`
  // (optional) receives the per-row dE/dmu.
  Accum evaluate(const std::vector<std::size_t>* idx, Pass pass, const ParallelFor& pfor,
                 const VectorXd* shift = nullptr, VectorXd* g_rows = nullptr) const {
    if (!idx && disc_ && !shift && !g_rows)
      return lik.family == Family::gaussian ? evaluate_discrete(pass, pfor) : evaluate_discrete_rows(pass, pfor);
    const std::size_t nrows = idx ? idx->size() : n();
    if (g_rows) g_rows->resize(static_cast<Index>(nrows));
    return deterministic_reduce<Accum>(
        nrows, pfor, [this] { return make_accum(); },
        [&](Accum& acc, std::size_t begin, std::size_t end) { accumulate(acc, idx, begin, end, pass, shift, g_rows); });
  }
  Accum evaluate(const std::vector<std::size_t>* idx, bool grad, const ParallelFor& pfor) const {
    return evaluate(idx, grad ? Pass::gradient : Pass::natural, pfor);
  }

  void accumulate(Accum& acc, const std::vector<std::size_t>* idx, std::size_t begin, std::size_t end,
                  Pass pass, const VectorXd* shift = nullptr, VectorXd* g_rows = nullptr) const {
    const bool grad = pass == Pass::gradient;
    Block b;
    gather(b, idx, begin, end);
    features(b);
    const Index nb = b.X.rows();
    VectorXd mu = b.Phi * m + b.o;
    if (shift) mu += shift->segment(static_cast<Index>(begin), nb);
    MatrixXd T;
    if (grad) T.noalias() = b.Phi * S;
    // plug_in_: variances set to zero (the initial Newton steps for q)
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
    if (g_rows) g_rows->segment(static_cast<Index>(begin), nb) = g;
    if (pass == Pass::elbo) return;
    acc.r.noalias() += b.Phi.transpose() * g;
    const MatrixXd U = b.Phi.transpose() * (-gam.array()).max(0.0).sqrt().matrix().asDiagonal();
    acc.Q.selfadjointView<Eigen::Lower>().rankUpdate(U, -1.0);
    if (!grad) return;
    MatrixXd Phibar = g * m.transpose();
    Phibar.noalias() += 2.0 * gam.asDiagonal() * (T - b.Phi);
    row_gradient(b, Phibar, gam, acc.grad);
  }

  // ---- the same sums from discretised covariates (Gaussian likelihood) -----------
  // With F_c the features at component c's distinct values, n_c their
  // weighted counts, C_cl the counts of value pairs, A = Phi' W Phi (blocks
  // F_c' C_cl F_l) and b = Phi' W (y - o) (blocks F_c' wy_c):
  //   sum w ((y - mu)^2 + s2) = wyy - 2 m'b + m'A m + tr(A S) + sum_c n_c' resid_c,
  //   r = Phi' g = (b - A m) / s^2,  Q = Phi' diag(gamma) Phi = -A / (2 s^2),
  // and the feature adjoints summed over the rows of each value,
  //   Phibar_c = (wy_c m_c' - sum_l C_cl F_l (S + m m')_lc + diag(n_c) F_c) / s^2,
  // with variance adjoints gamma_c = -n_c / (2 s^2).
  struct DiscreteFeatures {
    MatrixXd F;
    MatrixXd FT;                      // F' (rows of F as contiguous columns)
    std::vector<ComponentRows> rows;  // per block of kChunkRows values
  };

  DiscreteFeatures discrete_features(std::size_t c, const ParallelFor& pfor) const {
    const MatrixXd& X = disc_->comp[c].X;
    const std::size_t D = static_cast<std::size_t>(X.rows());
    DiscreteFeatures f;
    f.F.resize(static_cast<Index>(D), comps[c].size());
    f.FT.resize(comps[c].size(), static_cast<Index>(D));
    f.rows.resize((D + kChunkRows - 1) / kChunkRows);
    blocked_for(D, pfor, [&](std::size_t begin, std::size_t end) {
      const Index nb = static_cast<Index>(end - begin);
      const MatrixXd Xb = X.middleRows(static_cast<Index>(begin), nb);
      component_block(c, Xb, f.F.middleRows(static_cast<Index>(begin), nb), f.rows[begin / kChunkRows]);
      f.FT.middleCols(static_cast<Index>(begin), nb) = f.F.middleRows(static_cast<Index>(begin), nb).transpose();
    });
    return f;
  }

  // What evaluate_discrete() computes from the hyperparameters alone (kept
  // between the passes of one profile() and reused while prior_version()
  // does not change).
  struct DiscreteCache {
    long version = -1;
    std::vector<DiscreteFeatures> f;
    std::vector<VectorXd> resid;           // by value of each component
    // Gaussian: per pair c < l (P[c][l - c - 1]) its counts times the
    // features of one side, C_cl F_l (D_c x M_l) when contract_left(), else
    // C_cl' F_c (D_l x M_c)
    std::vector<std::vector<MatrixXd>> P;
    MatrixXd A;                            // Gaussian: Phi' W Phi
    VectorXd bw;                           // Gaussian: Phi' W (y - o)
    double resid_w = 0;                    // Gaussian: sum of w * resid
  };

  const DiscreteCache& discrete_cache(const ParallelFor& pfor) const {
    DiscreteCache& k = cache_;
    if (k.version == prior_version()) return k;
    const DiscreteData& dd = *disc_;
    const std::size_t C = comps.size();
    const Index Mt = total_size();
    k.f.clear();
    k.resid.assign(C, VectorXd());
    for (std::size_t c = 0; c < C; ++c) {
      k.f.push_back(discrete_features(c, pfor));
      k.resid[c].resize(k.f[c].F.rows());
      for (std::size_t b = 0; b < k.f[c].rows.size(); ++b)
        k.resid[c].segment(static_cast<Index>(b * kChunkRows), k.f[c].rows[b].resid.size()) = k.f[c].rows[b].resid;
    }
    k.version = prior_version();
    if (lik.family != Family::gaussian) return k;
    k.P.assign(C, std::vector<MatrixXd>());
    for (std::size_t c = 0; c < C; ++c)
      for (std::size_t l = c + 1; l < C; ++l) {
        const DiscretePair& pr = dd.pair[c][l - c - 1];
        k.P[c].push_back(contract_left(c, l, k) ? pr.times(k.f[l].F, k.f[l].FT, pfor)
                                                : pr.trans_times(k.f[c].F, k.f[c].FT, pfor));
      }
    k.A.resize(Mt, Mt);
    k.bw.resize(Mt);
    k.resid_w = 0;
    for (std::size_t c = 0; c < C; ++c) {
      const Index o = offsets_[c], M = comps[c].size();
      const DiscreteComponent& dc = dd.comp[c];
      const MatrixXd& F = k.f[c].F;
      k.A.block(o, o, M, M) = weighted_gram_lower(F, dc.count, pfor);
      k.A.block(o, o, M, M).triangularView<Eigen::StrictlyUpper>() = k.A.block(o, o, M, M).transpose();
      for (std::size_t l = c + 1; l < C; ++l) {
        const Index ol = offsets_[l], Ml = comps[l].size();
        const MatrixXd& Pcl = k.P[c][l - c - 1];
        if (contract_left(c, l, k))  // F_c' (C_cl F_l)
          k.A.block(o, ol, M, Ml) = weighted_crossprod(F, VectorXd(), Pcl, pfor);
        else  // (F_l' (C_cl' F_c))'
          k.A.block(o, ol, M, Ml) = weighted_crossprod(k.f[l].F, VectorXd(), Pcl, pfor).transpose();
        k.A.block(ol, o, Ml, M) = k.A.block(o, ol, M, Ml).transpose();
      }
      k.bw.segment(o, M).noalias() = F.transpose() * dc.wy;
      k.resid_w += dc.count.dot(k.resid[c]);
    }
    return k;
  }

  Accum evaluate_discrete(Pass pass, const ParallelFor& pfor) const {
    const DiscreteData& dd = *disc_;
    const std::size_t C = comps.size();
    const double nv = lik.noise_var();
    const DiscreteCache& k = discrete_cache(pfor);
    const auto& f = k.f;
    const MatrixXd& A = k.A;
    const VectorXd& bw = k.bw;
    double explained = dd.wyy + k.resid_w;  // sum w ((y - o - mu)^2 + s2)
    const VectorXd Am = A * m;
    explained += -2.0 * m.dot(bw) + m.dot(Am) + (A.cwiseProduct(S)).sum();
    Accum acc = make_accum();
    acc.sum_v = -0.5 * dd.n_pos * (kLog2Pi + std::log(nv)) + 0.5 * dd.sum_log_w - 0.5 * explained / nv;
    acc.dlognoise = (nv - Likelihood::kNoiseFloor) * (-0.5 * dd.n_pos / nv + 0.5 * explained / (nv * nv));
    if (pass == Pass::elbo) return acc;
    acc.r = (bw - Am) / nv;
    acc.Q = -0.5 / nv * A;
    if (pass != Pass::gradient) return acc;
    const MatrixXd S2 = S + m * m.transpose();
    // cross[c] = sum_{l != c} C_cl F_l S2_lc (D_c x M_c), from the cached
    // product of each pair and one more product with its counts
    std::vector<MatrixXd> cross(C);
    for (std::size_t c = 0; c < C; ++c) cross[c] = MatrixXd::Zero(f[c].F.rows(), comps[c].size());
    for (std::size_t c = 0; c < C; ++c)
      for (std::size_t l = c + 1; l < C; ++l)
        pair_cross(dd.pair[c][l - c - 1], k.P[c][l - c - 1], contract_left(c, l, k), f[c], f[l],
                   S2.block(offsets_[c], offsets_[l], comps[c].size(), comps[l].size()), cross[c], cross[l], pfor);
    for (std::size_t c = 0; c < C; ++c) {
      const Index o = offsets_[c], M = comps[c].size();
      const DiscreteComponent& dc = dd.comp[c];
      const MatrixXd Scc = S2.block(o, o, M, M);
      const VectorXd mc = m.segment(o, M);
      // per block of values, in order (the same sums for any thread count);
      // each block forms its own rows of the feature adjoints
      //   Fbar = (wy m_c' + diag(n_c) F_c (I - S2_cc) - sum_{l != c} T_cl S2_lc) / s^2
      const std::size_t nblocks = f[c].rows.size();
      std::vector<GradAccum> part(nblocks, make_grad());
      pfor(nblocks, [&](std::size_t b0, std::size_t b1) {
        for (std::size_t b = b0; b < b1; ++b) {
          const Index begin = static_cast<Index>(b * kChunkRows), nb = f[c].rows[b].resid.size();
          const auto Fb = f[c].F.middleRows(begin, nb);
          MatrixXd Fbar = Fb;
          Fbar.noalias() -= Fb * Scc;
          Fbar = dc.count.segment(begin, nb).asDiagonal() * Fbar;
          Fbar.noalias() += dc.wy.segment(begin, nb) * mc.transpose();
          Fbar -= cross[c].middleRows(begin, nb);
          Fbar /= nv;
          const VectorXd gam = -0.5 / nv * dc.count.segment(begin, nb);
          component_gradient(c, f[c].rows[b], Fbar, gam, part[b].g_kern[c], part[b].g_Z[c]);
        }
      });
      for (const GradAccum& g : part) {
        acc.grad.g_kern[c] += g.g_kern[c];
        acc.grad.g_Z[c] += g.g_Z[c];
      }
    }
    return acc;
  }

  // ---- the same sums from discretised covariates (other likelihoods) ----------------
  // A row's latent mean and variance are sums over its values a_c:
  //   mu_i = o_i + sum_c (F_c m_c)[a_c],
  //   s2_i = sum_c (resid_c + diag(F_c S_cc F_c'))[a_c] + 2 sum_{c<l} (F_c S_cl F_l')[a_c, a_l],
  // (the pair terms only at observed pairs).  With g_i, gamma_i the
  // likelihood derivatives, their sums by value (G_c, Gamma_c) and by pair of
  // values (the matrices Gamma_cl, on the observed pairs):
  //   r_c = F_c' G_c,   Q_cc = F_c' diag(Gamma_c) F_c,   Q_cl = F_c' Gamma_cl F_l,
  //   Phibar_c = G_c m_c' + 2 (diag(Gamma_c) F_c S_cc + sum_{l != c} Gamma_cl F_l S_lc)
  //              - 2 diag(Gamma_c) F_c,
  // with variance adjoints Gamma_c (the row formulas of accumulate(), summed
  // over the rows of each value).
  // Work of the two ways to contract a pair (c, l) of components through
  // their value pairs (the observed pairs, or the stored counts:
  // DiscretePair::entries()): first taking F_c (D_c x M_c) to the
  // M_l-space, then one entry of length M_l per value pair, or the other
  // way round.  True when the first costs no more.  (pair_variance(),
  // the Q blocks and pair_cross() all cost in this proportion.)
  bool contract_left(std::size_t c, std::size_t l, const DiscreteCache& k) const {
    const double nnz = disc_->pair[c][l - c - 1].entries();
    const double Dc = static_cast<double>(k.f[c].F.rows()), Dl = static_cast<double>(k.f[l].F.rows());
    const double Mc = static_cast<double>(comps[c].size()), Ml = static_cast<double>(comps[l].size());
    return Dc * Mc * Ml + nnz * Ml <= Dl * Ml * Mc + nnz * Mc;
  }

  // The two cross terms of a pair (c, l) in the feature adjoints, given W,
  // the pair's weights (the counts C_cl, or a likelihood's sums by observed
  // pair), and its product P with one side's features (left: P = W F_l,
  // else P = W' F_c):
  //   xc += W F_l S_lc (D_c x M_c),   xl += W' F_c S_cl (D_l x M_l),
  // one from P and S, the other by one more product with W, so every
  // product with W is by the features of the same side (contract_left()
  // picks the cheaper).  Blocks of rows as DiscretePair's products (the
  // same sums for any thread count).
  template <class W>
  static void pair_cross(const W& w, const MatrixXd& P, bool left, const DiscreteFeatures& fc,
                         const DiscreteFeatures& fl, const Eigen::Ref<const MatrixXd>& Scl, MatrixXd& xc,
                         MatrixXd& xl, const ParallelFor& pfor) {
    if (left) {
      xc += DiscretePair::dense_times(P, Scl.transpose(), pfor);
      const MatrixXd R = DiscretePair::dense_times(fc.F, Scl, pfor);  // F_c S_cl
      xl += w.trans_times(R, R.transpose(), pfor);
    } else {
      xl += DiscretePair::dense_times(P, Scl, pfor);
      const MatrixXd R = DiscretePair::dense_times(fl.F, Scl.transpose(), pfor);  // F_l S_lc
      xc += w.times(R, R.transpose(), pfor);
    }
  }

  // (2 F_c S_cl F_l')[a, b] at the observed pairs (contract_left(): the
  // product with S on the side of c).
  VectorXd pair_variance(std::size_t c, std::size_t l, const DiscreteCache& k, const ParallelFor& pfor) const {
    const DiscretePair& pr = disc_->pair[c][l - c - 1];
    const MatrixXd& Fc = k.f[c].F;
    const MatrixXd& Fl = k.f[l].F;
    const auto Scl = S.block(offsets_[c], offsets_[l], comps[c].size(), comps[l].size());
    const bool left = contract_left(c, l, k);
    // left: H' = (F_c S_cl)' against F_l'; else H' = (F_l S_cl')' against F_c'
    const MatrixXd HT = left ? MatrixXd((Fc * Scl).transpose()) : MatrixXd((Fl * Scl.transpose()).transpose());
    const MatrixXd& GT = left ? k.f[l].FT : k.f[c].FT;
    // columns by value of component c (A) and of component l (B)
    const MatrixXd& A = left ? HT : GT;
    const MatrixXd& B = left ? GT : HT;
    VectorXd v(pr.pattern.nonZeros());
    const int* outer = pr.pattern.outerIndexPtr();
    const int* inner = pr.pattern.innerIndexPtr();
    blocked_for(static_cast<std::size_t>(pr.pattern.rows()), pfor, [&](std::size_t b, std::size_t e) {
      for (std::size_t a = b; a < e; ++a) {
        const auto Aa = A.col(static_cast<Index>(a));
        for (int j = outer[a]; j < outer[a + 1]; ++j) v(j) = 2.0 * Aa.dot(B.col(inner[j]));
      }
    });
    return v;
  }

  // diag(F S F') for a symmetric positive definite S: the squared row norms
  // of F L (S = L L'; a triangular product, half the work of F S), by blocks
  // of rows (the same result for any thread count).
  static VectorXd diag_quadratic(const MatrixXd& F, const Eigen::Ref<const MatrixXd>& Sb, const ParallelFor& pfor) {
    VectorXd v(F.rows());
    const Eigen::LLT<MatrixXd> llt(Sb);
    const bool chol = llt.info() == Eigen::Success;
    const MatrixXd L = chol ? MatrixXd(llt.matrixL()) : MatrixXd(Sb);
    blocked_for(static_cast<std::size_t>(F.rows()), pfor, [&](std::size_t b, std::size_t e) {
      const Index bb = static_cast<Index>(b), nb = static_cast<Index>(e - b);
      if (chol) {
        const MatrixXd FL = F.middleRows(bb, nb) * L.triangularView<Eigen::Lower>();
        v.segment(bb, nb) = FL.rowwise().squaredNorm();
      } else {
        v.segment(bb, nb) = (F.middleRows(bb, nb) * L).cwiseProduct(F.middleRows(bb, nb)).rowwise().sum();
      }
    });
    return v;
  }

  // The lower triangle of F' diag(d) F (upper triangle zero), summed by
  // groups of rows in a fixed order.
  static MatrixXd weighted_gram_lower(const MatrixXd& F, const VectorXd& d, const ParallelFor& pfor) {
    const auto make = [&] { return MatrixXd(MatrixXd::Zero(F.cols(), F.cols())); };
    return deterministic_reduce<MatrixXd>(static_cast<std::size_t>(F.rows()), pfor, make,
                                          [&](MatrixXd& acc, std::size_t b, std::size_t e) {
                                            const Index bb = static_cast<Index>(b), nb = static_cast<Index>(e - b);
                                            const MatrixXd G = d.segment(bb, nb).asDiagonal() * F.middleRows(bb, nb);
                                            acc.triangularView<Eigen::Lower>() += F.middleRows(bb, nb).transpose() * G;
                                          });
  }

  // A' diag(d) B (A' B when d is empty) over the rows of A and B, summed by
  // groups of rows in a fixed order (the same result for any thread count).
  static MatrixXd weighted_crossprod(const MatrixXd& A, const VectorXd& d, const MatrixXd& B, const ParallelFor& pfor) {
    const auto make = [&] { return MatrixXd(MatrixXd::Zero(A.cols(), B.cols())); };
    return deterministic_reduce<MatrixXd>(static_cast<std::size_t>(A.rows()), pfor, make,
                                          [&](MatrixXd& acc, std::size_t b, std::size_t e) {
                                            const Index bb = static_cast<Index>(b), nb = static_cast<Index>(e - b);
                                            if (d.size() == 0)
                                              acc.noalias() += A.middleRows(bb, nb).transpose() * B.middleRows(bb, nb);
                                            else
                                              acc.noalias() += A.middleRows(bb, nb).transpose() *
                                                               (d.segment(bb, nb).asDiagonal() * B.middleRows(bb, nb));
                                          });
  }

  // What the latent mean and variance of a row are summed from: per
  // component its mean and variance by value, per pair of components its
  // covariance term by observed pair (with `pairs`).
  struct RowParts : DiscreteRowParts {
    std::vector<const DiscretePair*> pp;
    std::vector<std::pair<std::size_t, std::size_t>> pc;
  };

  RowParts row_parts(const DiscreteCache& k, bool var, bool pairs, const ParallelFor& pfor) const {
    const std::size_t C = comps.size();
    RowParts p;
    p.var = var;
    p.pairs = var && pairs;
    p.mv.resize(C);
    p.vd.resize(C);
    for (std::size_t c = 0; c < C; ++c) {
      const Index o = offsets_[c], M = comps[c].size();
      const MatrixXd& F = k.f[c].F;
      p.mv[c].noalias() = F * m.segment(o, M);
      if (var) p.vd[c] = k.resid[c] + diag_quadratic(F, S.block(o, o, M, M), pfor);
      for (std::size_t l = c + 1; l < C; ++l) {
        p.pp.push_back(&disc_->pair[c][l - c - 1]);
        p.pc.emplace_back(c, l);
        if (p.pairs) p.vp.push_back(pair_variance(c, l, k, pfor));
      }
    }
    return p;
  }

  // The rows' keys (RowKeys): their values of each component, then their
  // entries of the observed pairs of each pair of components.
  RowKeys row_keys() const {
    RowKeys k;
    k.C = comps.size();
    for (std::size_t c = 0; c < comps.size(); ++c) k.key.push_back(disc_->id[c].data());
    for (std::size_t c = 0; c < comps.size(); ++c)
      for (std::size_t l = c + 1; l < comps.size(); ++l) k.key.push_back(disc_->pair[c][l - c - 1].pos.data());
    return k;
  }

  // The latent mean and (with `var`) variance of every row of a discretised
  // fit from its values (the rows' own when discrete_rows()).  Needs the
  // rows' values (not a fit from shards); the variance needs the
  // observed pairs (row-level data: likelihoods other than Gaussian) unless
  // the posterior is mean field.
  void discrete_row_moments(bool var, VectorXd& mean, VectorXd& variance, const ParallelFor& pfor) const {
    if (!disc_ || disc_->id.empty()) throw std::logic_error("row moments need the rows' discretised values");
    const bool pairs = !opt.meanfield;
    if (var && pairs && comps.size() > 1 && disc_->pair[0][0].pos.empty())
      throw std::logic_error("row variances need the observed value pairs");
    const RowParts p = row_parts(discrete_cache(pfor), var, pairs, pfor);
    const RowKeys keys = row_keys();
    const std::size_t N = n();
    mean.resize(static_cast<Index>(N));
    variance.resize(var ? static_cast<Index>(N) : 0);
    blocked_for(N, pfor, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) {
        double mu, s2;
        row_latent_moments(p, keys, o_(static_cast<Index>(i)), i, N, mu, s2);
        mean(static_cast<Index>(i)) = mu;
        if (var) variance(static_cast<Index>(i)) = s2;
      }
    });
  }

  // The latent mean of every row at its own inputs (not rounded) for a
  // discretised fit from rows (not from shards).  A component over one or
  // two rounded inputs without a by variable is evaluated on its rounding
  // grid, padded by one point at each end, and interpolated to the rows by
  // the cubic Lagrange rule through the 4 (4 x 4) grid points around each
  // row: the error is of order step^4 |f''''| (in the tests, at the default
  // grids: at most 1.3e-6, 1e-4 of the posterior sd), where taking the rows'
  // rounded values would err by up to step / 2 |f'| (there 0.48 sd on
  // average).  Other components are evaluated at the rows.
  VectorXd row_means_at_inputs(const ParallelFor& pfor) const {
    if (!disc_ || given_) throw std::logic_error("row means need the rows of a discretised fit");
    const std::size_t N = n();
    const Index p = X_.cols();
    VectorXd mean = o_;
    for (std::size_t c = 0; c < comps.size(); ++c) {
      const VectorXd mc = m.segment(offsets_[c], comps[c].size());
      const KeyRule& r = disc_->rule[c];
      const bool grid_ok = r.rounded() && r.n_round <= 2 && r.dk() == static_cast<Index>(r.n_round) &&
                           std::all_of(r.step.begin(), r.step.end(), [](double h) { return h > 0; });
      if (!grid_ok) {
        blocked_for(N, pfor, [&](std::size_t begin, std::size_t end) {
          const Index nb = static_cast<Index>(end - begin);
          const MatrixXd Xb = X_.middleRows(static_cast<Index>(begin), nb);
          mean.segment(static_cast<Index>(begin), nb) += component_block_mean(c, Xb, mc);
        });
        continue;
      }
      // the padded grid: values lo + (k - 1) step, k = 0..G+1, per input;
      // point (k0, k1) at k0 + (G + 2) k1
      const Index G = static_cast<Index>(r.grid), na = G + 2, d = static_cast<Index>(r.n_round);
      const Index pts = d == 1 ? na : na * na;
      MatrixXd Xg = MatrixXd::Zero(pts, p);
      for (Index t = 0; t < pts; ++t)
        for (Index j = 0, rest = t; j < d; ++j, rest /= na)
          Xg(t, r.cols[static_cast<std::size_t>(j)]) =
              r.lo[static_cast<std::size_t>(j)] + static_cast<double>(rest % na - 1) * r.step[static_cast<std::size_t>(j)];
      VectorXd grid(pts);
      blocked_for(static_cast<std::size_t>(pts), pfor, [&](std::size_t begin, std::size_t end) {
        const Index nb = static_cast<Index>(end - begin);
        grid.segment(static_cast<Index>(begin), nb) = component_block_mean(c, Xg.middleRows(static_cast<Index>(begin), nb), mc);
      });
      blocked_for(N, pfor, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
          Index k[2] = {0, 0};
          double wt[2][4] = {{1, 0, 0, 0}, {1, 0, 0, 0}};
          for (Index j = 0; j < d; ++j) {
            const std::size_t jj = static_cast<std::size_t>(j);
            const double t = (X_(static_cast<Index>(i), r.cols[jj]) - r.lo[jj]) / r.step[jj];
            const Index k0 = std::min<Index>(G - 2, std::max<Index>(0, static_cast<Index>(std::floor(t))));
            const double u = t - static_cast<double>(k0);  // nodes -1, 0, 1, 2 of the points k0 - 1 .. k0 + 2
            k[j] = k0;  // padded index of node -1
            wt[j][0] = -u * (u - 1) * (u - 2) / 6;
            wt[j][1] = (u + 1) * (u - 1) * (u - 2) / 2;
            wt[j][2] = -(u + 1) * u * (u - 2) / 2;
            wt[j][3] = (u + 1) * u * (u - 1) / 6;
          }
          double v = 0;
          if (d == 1) {
            for (Index a = 0; a < 4; ++a) v += wt[0][a] * grid(k[0] + a);
          } else {
            for (Index b = 0; b < 4; ++b) {
              double vb = 0;
              for (Index a = 0; a < 4; ++a) vb += wt[0][a] * grid(k[0] + a + na * (k[1] + b));
              v += wt[1][b] * vb;
            }
          }
          mean(static_cast<Index>(i)) += v;
        }
      });
    }
    return mean;
  }

  Accum evaluate_discrete_rows(Pass pass, const ParallelFor& pfor) const {
    const std::size_t C = comps.size();
    const DiscreteCache& k = discrete_cache(pfor);
    const RowParts parts = row_parts(k, !plug_in_, !opt.meanfield, pfor);
    const auto& pp = parts.pp;
    const auto& pc = parts.pc;
    // the pass over the rows, by group (here or on the workers of a cluster),
    // then the groups' sums by value and by observed pair, added in order
    const RowGroupIndex& gi = row_group_index_cached(pfor);
    const bool stats = pass != Pass::elbo, gradient = pass == Pass::gradient;
    std::vector<RowGroupSums> remote;
    if (remote_rows_) {
      remote = remote_rows_(parts, stats, gradient);
    } else {
      std::vector<const int*> loc;
      for (const std::vector<int>& l : gi.loc) loc.push_back(l.data());
      row_groups_sums(parts, row_keys(), loc, row_group_sizes(gi), gi.bounds, lik, y_.data(), w_.data(), o_.data(),
                      stats, gradient, pfor, row_sums_);
    }
    std::vector<Index> D;
    for (std::size_t c = 0; c < C; ++c) D.push_back(k.f[c].F.rows());
    for (const DiscretePair* q : pp) D.push_back(q->pattern.nonZeros());
    RowTotals tot = add_row_groups(remote_rows_ ? remote : row_sums_, gi.idx, C, D, stats, pfor);
    Accum acc = make_accum();
    acc.sum_v = tot.v;
    acc.dlognoise = tot.dn;
    if (pass == Pass::elbo) return acc;
    const bool raw = gradient && tot.positive;
    std::vector<VectorXd>& G = tot.g;
    // (moved, not copied: they have one entry per observed pair)
    const auto split = [C](std::vector<VectorXd>& v, std::vector<VectorXd>& comp, std::vector<VectorXd>& pair) {
      for (std::size_t s = 0; s < v.size(); ++s) (s < C ? comp : pair).push_back(std::move(v[s]));
    };
    std::vector<VectorXd> Gam, Gp, Gam_raw, Gp_raw;
    split(tot.gq, Gam, Gp);
    if (raw) split(tot.raw, Gam_raw, Gp_raw);
    // r, Q (lower triangle; block (l, c) = F_l' Gamma_cl' F_c, as
    // F_l' (Gamma_cl' F_c) or, when contract_left(), (F_c' (Gamma_cl F_l))'), and for the
    // gradient the product of Q's block, T[c][l] = Gamma_cl F_l when
    // contract_left(), else T[l][c] = Gamma_cl' F_c
    std::vector<std::vector<MatrixXd>> T(C, std::vector<MatrixXd>(C));
    for (std::size_t c = 0; c < C; ++c) {
      const Index o = offsets_[c], M = comps[c].size();
      const MatrixXd& F = k.f[c].F;
      acc.r.segment(o, M).noalias() = F.transpose() * G[c];
      acc.Q.block(o, o, M, M) = weighted_gram_lower(F, Gam[c], pfor);
    }
    for (std::size_t q = 0; q < pp.size(); ++q) {
      const std::size_t c = pc[q].first, l = pc[q].second;
      auto block = acc.Q.block(offsets_[l], offsets_[c], comps[l].size(), comps[c].size());
      if (contract_left(c, l, k)) {
        T[c][l] = DiscretePair::sparse_times_t(pp[q]->with_values(Gp[q]), k.f[l].FT, pfor);
        block = weighted_crossprod(k.f[c].F, VectorXd(), T[c][l], pfor).transpose();
      } else {
        T[l][c] = DiscretePair::sparse_times_t(pp[q]->trans_with_values(Gp[q]), k.f[c].FT, pfor);
        block = weighted_crossprod(k.f[l].F, VectorXd(), T[l][c], pfor);
      }
    }
    if (pass != Pass::gradient) return acc;
    // cross[c] = sum_{l != c} Gamma_cl F_l S_lc (pair_cross(); the product of
    // Q's block reused unless the gradient needs the raw gamma)
    std::vector<MatrixXd> cross(C);
    for (std::size_t c = 0; c < C; ++c) cross[c] = MatrixXd::Zero(k.f[c].F.rows(), comps[c].size());
    for (std::size_t q = 0; q < pp.size(); ++q) {
      const std::size_t c = pc[q].first, l = pc[q].second;
      const ValuedPairs w{*pp[q], raw ? Gp_raw[q] : Gp[q]};
      const bool left = contract_left(c, l, k);
      MatrixXd& Pq = left ? T[c][l] : T[l][c];
      if (raw) Pq = left ? w.times(k.f[l].F, k.f[l].FT, pfor) : w.trans_times(k.f[c].F, k.f[c].FT, pfor);
      pair_cross(w, Pq, left, k.f[c], k.f[l], S.block(offsets_[c], offsets_[l], comps[c].size(), comps[l].size()),
                 cross[c], cross[l], pfor);
    }
    const std::vector<VectorXd>& Gg = raw ? Gam_raw : Gam;
    for (std::size_t c = 0; c < C; ++c) {
      const Index o = offsets_[c], M = comps[c].size();
      const MatrixXd& F = k.f[c].F;
      const std::size_t nblocks = k.f[c].rows.size();
      std::vector<GradAccum> part(nblocks, make_grad());
      pfor(nblocks, [&](std::size_t b0, std::size_t b1) {
        for (std::size_t b = b0; b < b1; ++b) {  // (blocks of kChunkRows values)
          const Index begin = static_cast<Index>(b * kChunkRows), nb = k.f[c].rows[b].resid.size();
          const auto Fb = F.middleRows(begin, nb);
          MatrixXd Fbar = G[c].segment(begin, nb) * m.segment(o, M).transpose();
          Fbar.noalias() += 2.0 * Gg[c].segment(begin, nb).asDiagonal() * (Fb * S.block(o, o, M, M) - Fb);
          Fbar += 2.0 * cross[c].middleRows(begin, nb);
          component_gradient(c, k.f[c].rows[b], Fbar, Gg[c].segment(begin, nb), part[b].g_kern[c], part[b].g_Z[c]);
        }
      });
      for (const GradAccum& gp : part) {
        acc.grad.g_kern[c] += gp.g_kern[c];
        acc.grad.g_Z[c] += gp.g_Z[c];
      }
    }
    return acc;
  }

  // Discretises the data for the fit when the options ask for it (all rows
  // per iteration); the number of distinct values.
  // (Data given by use_discrete_data() are used as they are.)
  std::size_t use_discrete(bool full, double dense_cells = kDenseCells) {
    if (given_) return disc_->n_distinct();
    disc_.reset();
    if (!opt.discrete || !full) return 0;
    set_discrete(discretise(comps, X_, y_, w_, o_, opt.bins, dense_cells, lik.family != Family::gaussian));
    return disc_->n_distinct();
  }
  bool discrete() const { return static_cast<bool>(disc_); }

  // The pass over the rows of a discretised fit with a likelihood other than
  // Gaussian runs through `remote` (given the parts, stats and gradient
  // flags as row_groups_sums(), it returns the sums of all groups of rows of
  // group_bounds(n()) in order; R: the workers of a cluster).  Its rows' keys
  // are row_keys() once the fit has discretised them.
  void set_remote_rows(RemoteRows remote) { remote_rows_ = std::move(remote); }
  // Counts the discretisations of the data (row_keys() change with it).
  std::size_t discrete_version() const { return disc_version_; }
  // A discretised fit whose values are the rows' own (no input rounded) and
  // that knows each row's values (not one from shards).
  bool discrete_rows() const { return disc_ && disc_->exact && !disc_->id.empty(); }
  // Uses `d` (discretise()'s result for the data, assembled elsewhere: the
  // shards of a cluster) in the fit; Gaussian likelihood, all rows.
  void use_discrete_data(DiscreteData d) {
    if (lik.family != Family::gaussian) throw std::invalid_argument("discretised sums from shards need a Gaussian likelihood");
    set_discrete(std::move(d));
    given_ = true;
  }

  // Column means of the features over all rows (feature_means()), from the
  // distinct values of a discretised fit (at the rounded inputs).
  VectorXd discrete_feature_means(const ParallelFor& pfor) const {
    const DiscreteCache& k = discrete_cache(pfor);
    VectorXd mean(total_size());
    for (std::size_t c = 0; c < comps.size(); ++c)
      mean.segment(offsets_[c], comps[c].size()).noalias() = k.f[c].F.transpose() * disc_->comp[c].rows;
    return mean / static_cast<double>(std::max<std::size_t>(1, n()));
  }

  // ---- parameters moved by Adam: the hyperparameters, then the noise ----------------
  Index n_theta() const { return n_hyper() + (lik.has_noise() && set.learn_noise ? 1 : 0); }

  VectorXd pack() const {
    VectorXd th(n_theta());
    pack_hyper(th.head(n_hyper()));
    if (lik.has_noise() && set.learn_noise) th(n_hyper()) = lik.log_noise;
    return th;
  }

  void unpack(const VectorXd& th) {
    unpack_hyper(th.head(n_hyper()));
    if (lik.has_noise() && set.learn_noise) lik.log_noise = Likelihood::clamp_log_noise(th(n_hyper()));
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
  void gaussian_meanfield_optimum(const Accum& acc) {
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
    pfor_ = &pfor;
    Sampler sampler(Sampler::Mode::shuffled, n(), set.batch_size, rng);
    full_ = sampler.full();
    use_discrete(full_);
    if (full_ && opt.lbfgs) return fit_profile(*this, set, static_cast<double>(n()), monitor);
    rho_ = opt.natgrad_step > 0 ? opt.natgrad_step
           : sampler.full() ? (lik.family == Family::gaussian ? 1.0 : 0.5)
                            : 0.1;
    // Warm-up: with damped natural steps q needs a few iterations to approach
    // its optimum; hyperparameter gradients at a poor q are misleading (and
    // would dominate Adam's moment estimates), so Adam starts after them.
    warmup_ = rho_ >= 1.0 ? 0 : static_cast<int>(std::ceil(5.0 / rho_));
    return fit_loop(*this, sampler, set, monitor);
  }

  // The engine interface of fit_loop().
  struct Snapshot {
    VectorXd theta, h;
    MatrixXd P;
  };
  int warmup() const { return warmup_; }
  int stop_warmup() const { return warmup_; }
  bool own_stop() const { return false; }
  Snapshot snapshot() const { return {pack(), h, P}; }
  void restore(const Snapshot& s) {
    unpack(s.theta);
    P = s.P;
    h = s.h;
    refresh();
  }
  void back_off() { rho_ *= 0.5; }

  // ---- the engine interface of fit_profile() -------------------------------------
  void bounds(VectorXd& lo, VectorXd& hi) const {
    lo.resize(n_theta());
    hi.resize(n_theta());
    hyper_bounds(lo.head(n_hyper()), hi.head(n_hyper()));
    if (lik.has_noise() && set.learn_noise) {
      lo(n_hyper()) = Likelihood::kMinLogNoise;
      hi(n_hyper()) = Likelihood::kMaxLogNoise;
    }
  }

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
    Accum acc;
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
      const VectorXd m0 = optimise_q<Accum>(
          [this](Accum& a, bool grad) {
            a = evaluate(nullptr, grad ? Pass::gradient : Pass::natural, *pfor_);
            return a.sum_v - kl();
          },
          [this](const Accum& a, double rho) { natural_step(a, 1.0, rho); }, acc, has_gradient);
      q_change_ = (m - m0).lpNorm<Eigen::Infinity>();
      if (has_gradient) return profile_step(acc);
    }
    return profile_step(evaluate(nullptr, Pass::gradient, *pfor_));
  }
  // The start of q after the hyperparameters changed: q(v) moved so that
  // q(u) at the inducing points, u_c = L_c v_c, stays as it was (with the
  // Cholesky factors old_L before the change and L after it: v_c ->
  // L_c^-1 old_L_c v_c; when the inducing inputs moved too, q(u) at the old
  // inputs becomes q(u) at the new ones).  The optimum of q is a function of the data, which
  // q(u) describes directly; the whitened v drifts with the kernel variance
  // and lengthscales.  In natural parameters, with T = diag(old_L_c^-1 L_c):
  // P -> T' P T, h -> T' h.  Components without inducing points keep theirs.
  void keep_inducing_values(const std::vector<MatrixXd>& old_L) {
    if (old_L.size() != comps.size()) return;
    const Index Mt = total_size();
    MatrixXd T = MatrixXd::Identity(Mt, Mt);
    bool moved = false;
    for (std::size_t c = 0; c < comps.size(); ++c) {
      const MatrixXd& L = prior_[c].L;
      const Index o = offsets_[c], M = comps[c].size();
      if (L.size() == 0 || old_L[c].rows() != M || L.rows() != M || old_L[c] == L) continue;
      T.block(o, o, M, M) = old_L[c].triangularView<Eigen::Lower>().solve(L);
      moved = true;
    }
    if (!moved) return;
    const MatrixXd P0 = P;
    const VectorXd h0 = h;
    P = T.transpose() * P0 * T;
    P = 0.5 * (P + P.transpose());
    h = T.transpose() * h0;
    try {
      refresh_q();
    } catch (const numerical_error&) {
      P = P0;
      h = h0;
      refresh_q();
    }
  }

  // The result of profile() from a gradient pass at the final q.
  Step profile_step(const Accum& acc) {
    Step st;
    st.gradient = gradient(acc, 1.0);
    st.objective = acc.sum_v - kl() + log_prior(&st.gradient);
    return st;
  }

  // The inner loop of profile() for likelihoods without a closed-form q:
  // natural steps of size 1, halved after a step that lowers the ELBO (or
  // leaves q invalid; the step is undone), doubled again after two accepted
  // steps in a row (a step that had to be shortened far from the optimum
  // need not stay short near it), until the ELBO is within 1e-10 relative
  // of its optimum and the mean within 1e-6 (at most 500 steps).  Full steps
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
    constexpr double kTolMean = 1e-6, kTolValue = 1e-10, kMaxRate = 0.5;
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
    const auto reset = [&] { dm_last = gain_last = rate_m = rate_v = ratio_m = ratio_v = -1; };
    for (int k = 0; k < 500; ++k) {
      const MatrixXd P0 = P;
      const VectorXd h0 = h, mk = m;
      const double step = rho;
      const double tol_v = kTolValue * (1.0 + std::abs(last));
      // the next full step, predicted at the last rates, leaves too little to continue
      const bool ask = step == 1.0 && rate_m >= 0 && rate_m < kMaxRate && rate_v >= 0 && rate_v < kMaxRate &&
                       left(dm_last * rate_m, rate_m) <= kTolMean && left(std::max(gain_last, 0.0) * rate_v, rate_v) <= tol_v;
      bool better = false;
      E next;
      double value = -std::numeric_limits<double>::infinity();
      try {
        take(cur, rho);
        refresh_q();
        value = value_of(next, ask);
        better = value >= last - 1e-12 * std::abs(last);
      } catch (const numerical_error&) {
        better = false;
      }
      if (!better) {
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
        ratio_m = rm;
        ratio_v = rv;
        dm_last = dm;
        gain_last = gain;
      } else {
        reset();
      }
      const bool small = gain <= kTolValue * (1.0 + std::abs(value)) && dm <= kTolMean;
      const bool bounded = rate_m >= 0 && rate_v >= 0 && left(dm, rate_m) <= kTolMean &&
                           left(std::max(gain, 0.0), rate_v) <= kTolValue * (1.0 + std::abs(value));
      if (small || bounded) break;
    }
    return m0;
  }

  // The fit maximised the ELBO plus the log prior: report them apart.
  void finish_profile(FitInfo& info) const {
    info.q_change = q_change_;
    info.log_prior = log_prior();
    info.objective -= info.log_prior;
  }

  // Initial q: one full natural step (a Newton step from the prior mean) on
  // the first batch with the likelihood evaluated at the mean.  Far better
  // than the prior for vague parametric priors and non-Gaussian likelihoods.
  void initialise(const Sampler& sampler) {
    plug_in_ = true;
    natural_step(evaluate(sampler.rows(), false, *pfor_), sampler.scale(), 1.0);
    plug_in_ = false;
    refresh();
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
      const Accum acc = evaluate(nullptr, false, *pfor_);
      if (opt.meanfield && opt.rank == 0)
        gaussian_meanfield_optimum(acc);
      else
        natural_step(acc, 1.0, 1.0);
      refresh();
    } else if (!full_) {
      double last = -std::numeric_limits<double>::infinity();
      for (int k = 0; k < 10; ++k) {
        const Accum acc = evaluate(nullptr, false, *pfor_);
        const double value = acc.sum_v - kl();
        if (value - last < set.tol * static_cast<double>(n())) break;
        last = value;
        natural_step(acc, 1.0, 0.5);
        refresh();
      }
    }
    info.objective = elbo(*pfor_);
    info.log_prior = log_prior();
    if (n_theta() > 0) {
      info.gradient = gradient(evaluate(nullptr, Pass::gradient, *pfor_), 1.0);
      log_prior(&info.gradient);
    }
  }

 protected:  // (the decoupled engine, decoupled.hpp, extends this one)
  bool plug_in_ = false;
  double rank_loss_ = 0;
  // state of a fit
  const ParallelFor* pfor_ = nullptr;
  double rho_ = 1, scale_ = 1, q_change_ = 0;
  bool full_ = true;
  Rng dummy_rng_{0};  // (a full-data sampler draws nothing)
  int warmup_ = 0;
  Accum acc_;
  std::shared_ptr<const DiscreteData> disc_;
  bool given_ = false;  // disc_ from use_discrete_data()
  mutable DiscreteCache cache_;
  // the row pass of evaluate_discrete_rows(): its index (built once per
  // discretisation) and, on a cluster, where it runs
  mutable std::shared_ptr<const RowGroupIndex> row_index_;
  std::size_t disc_version_ = 0;          // discretisations so far
  mutable std::vector<RowGroupSums> row_sums_;  // (reused between passes: no two passes of a model at once)
  RemoteRows remote_rows_;

  // A new discretisation: what was derived from the old one goes.
  void set_discrete(DiscreteData d) {
    disc_ = std::make_shared<const DiscreteData>(std::move(d));
    cache_ = DiscreteCache();
    row_index_.reset();
    ++disc_version_;
  }

  const RowGroupIndex& row_group_index_cached(const ParallelFor& pfor) const {
    if (!row_index_)
      row_index_ = std::make_shared<const RowGroupIndex>(row_group_index(row_keys(), group_bounds(n()), pfor));
    return *row_index_;
  }
};

}  // namespace scalegp
