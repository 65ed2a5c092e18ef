// The pass over the rows of a discretised fit with a likelihood other than
// Gaussian, by groups of rows: a row's latent moments from the parts by
// value (DiscreteRowParts, RowKeys), the index of each group's keys
// (RowGroupIndex), one group's sums (row_group_sums()) and their totals
// added in group order (add_row_groups()).  The same functions run in the
// master (data_pass.hpp) and on the workers of a cluster (src/svgp.cpp,
// R: engine-vi.R), and RemoteRows is how the master asks the workers.
#pragma once
#include "likelihoods.hpp"
#include "parallel.hpp"
#include <algorithm>
#include <functional>
#include <stdexcept>
#include <vector>

namespace scalegp {
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

// (var false: the initial step of q, no variances and the likelihood at
// glm's start, Likelihood::start_expect())
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

// One group's sums: the expected log-likelihood and its derivatives in the
// likelihood's parameters (log_noise, log_df), and (with `stats`) per
// stream, at the group's keys, the sums of the rows' dE/dmu (components
// only), of min(dE/ds2, 0) (of dE/ds2 itself when the likelihood is not
// log-concave) and, for the gradient when a row of the group has
// dE/ds2 > 0, of dE/ds2 itself.
struct RowGroupSums {
  double v = 0, dn = 0, ddf = 0;
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
  s.v = s.dn = s.ddf = 0;
  s.positive = false;
  const std::size_t nr = end - begin, S = k.key.size();
  VectorXd& g = s.row_g;
  VectorXd& gam = s.row_gam;
  g.resize(static_cast<Index>(nr));
  gam.resize(static_cast<Index>(nr));
  for (std::size_t i = begin; i < end; ++i) {
    double mu, s2;
    row_latent_moments(p, k, o[i], i, n, mu, s2);
    const Expectation e = p.var ? lik.expect(y[i], w[i], mu, s2) : lik.start_expect(y[i], w[i], mu);
    s.v += e.v;
    s.dn += e.dlognoise;
    s.ddf += e.dlogdf;
    g(static_cast<Index>(i - begin)) = e.dm;
    gam(static_cast<Index>(i - begin)) = e.dv;
  }
  if (!stats) {
    s.g.clear();
    s.gq.clear();
    s.raw.clear();
    return;
  }
  // (a likelihood that is not log-concave keeps the sign in gq itself)
  const bool clamp = lik.log_concave();
  s.positive = clamp && gradient && (gam.array() > 0.0).any();
  s.g.resize(k.C);
  s.gq.resize(S);
  s.raw.resize(s.positive ? S : 0);
  for (std::size_t t = 0; t < S; ++t) {
    const int* l = loc[t] + begin;
    s.gq[t].setZero(size[t]);
    for (std::size_t r = 0; r < nr; ++r) s.gq[t](l[r]) += clamp ? std::min(gam(static_cast<Index>(r)), 0.0) : gam(static_cast<Index>(r));
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
  double v = 0, dn = 0, ddf = 0;
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
    t.ddf += s.ddf;
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

// Runs the row pass of a discretised fit elsewhere (R: the workers of a
// cluster): given the parts, stats and gradient flags as row_groups_sums(),
// returns the sums of all groups of rows of group_bounds(n()) in order.
using RemoteRows = std::function<std::vector<RowGroupSums>(const DiscreteRowParts&, bool stats, bool gradient)>;

}  // namespace scalegp
