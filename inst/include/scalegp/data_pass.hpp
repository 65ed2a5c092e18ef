// The pass over the data of the variational engines (svgp.hpp,
// decoupled.hpp): what the likelihood's terms of a set of rows sum to at the
// current q and hyperparameters (PassSums: the expected log-likelihood, the
// statistics of a natural step, the data part of the hyperparameter
// gradient), computed by DataPass from one of three sources behind one call,
// evaluate():
//   rows         the rows themselves (any subset; optionally a per-row shift
//                of the mean, the decoupled engine's mean bases);
//   discretised  all rows through the distinct values of each component
//                (discrete.hpp): Gaussian likelihood in closed form from the
//                sums by value (optionally with a shift by value of one
//                component, evaluate_values(): the decoupled engine's mean
//                bases), others by one pass over the rows' keys
//                (discrete_rows.hpp);
//   remote       that pass over the rows' keys on the workers of a cluster
//                (set_remote_rows()), or the Gaussian sums assembled from
//                the shards of a cluster (use_discrete_data()).
// Every source sums in a fixed order: the same result for any thread count.
#pragma once
#include "discrete.hpp"
#include "discrete_rows.hpp"
#include "gaussian_q.hpp"
#include "likelihoods.hpp"
#include <memory>

namespace scalegp {

// What a pass over the data computes.
enum class Pass { elbo, natural, gradient };

// A shift of the predictor's mean that depends only on the value of one
// component (evaluate_values()): t, one entry per distinct value of `comp`.
struct ValueShift {
  std::size_t comp = 0;
  VectorXd t;
};

// The sums of one pass over a set of rows (unscaled).
struct PassSums {
  double sum_v = 0, dlognoise = 0, dlogdf = 0;
  VectorXd r;      // Phi' g
  MatrixXd Q;      // Phi' diag(gamma) Phi (lower triangle)
  GradAccum grad;  // data part of the hyperparameter gradient
  PassSums& operator+=(const PassSums& a) {
    sum_v += a.sum_v;
    dlognoise += a.dlognoise;
    dlogdf += a.dlogdf;
    r += a.r;
    Q += a.Q;
    grad += a.grad;
    return *this;
  }
};

class DataPass {
 public:
  // The pass over the data of the model `q` (its features, m and S), with
  // likelihood `lik`; both are read at every call and must outlive the pass
  // (it is a member of the engine that holds them; a copy of the engine
  // makes its own with the copy constructor below).  `meanfield`:
  // q is block-diagonal (the rows' variances need no pairs of components);
  // `discrete`, `bins`: the options of use_discrete().
  DataPass(const WhitenedGaussianModel& q, const Likelihood& lik, bool meanfield, bool discrete, double bins)
      : q_(&q), lik_(&lik), meanfield_(meanfield), discrete_(discrete), bins_(bins) {}
  // A copy of `other` (its options and discretisation) that reads the model
  // q with likelihood lik: the pass of a copy of its engine.
  DataPass(const DataPass& other, const WhitenedGaussianModel& q, const Likelihood& lik) : DataPass(other) {
    q_ = &q;
    lik_ = &lik;
  }
  DataPass& operator=(const DataPass&) = delete;

  // The initial step of q: variances set to zero and the likelihood
  // expanded at glm's start (Likelihood::start_expect()).
  bool plug_in = false;


  PassSums make_accum() const {
    PassSums a;
    const Index Mt = q_->total_size();
    a.r = VectorXd::Zero(Mt);
    a.Q = MatrixXd::Zero(Mt, Mt);
    a.grad = q_->make_grad();
    return a;
  }


  // Sums over the rows idx (all rows when null) of the expected log-likelihood
  // and, from Pass::natural on, the statistics of the natural-gradient step
  // and, for Pass::gradient, the data part of the hyperparameter gradient
  // (all unscaled).
  // `shift` (optional, one entry per row of the pass) is added to the
  // predictor's mean (the decoupled engine's mean bases outside q); `g_rows`
  // (optional) receives the per-row dE/dmu.
  PassSums evaluate(const std::vector<std::size_t>* idx, Pass pass, const ParallelFor& pfor,
                 const VectorXd* shift = nullptr, VectorXd* g_rows = nullptr) const {
    ++passes_;
    if (!idx && disc_ && !shift && !g_rows)
      return lik_->family == Family::gaussian ? evaluate_discrete(pass, pfor) : evaluate_discrete_rows(pass, pfor);
    const std::size_t nrows = idx ? idx->size() : q_->n();
    if (g_rows) g_rows->resize(static_cast<Index>(nrows));
    return deterministic_reduce<PassSums>(
        nrows, pfor, [this] { return make_accum(); },
        [&](PassSums& acc, std::size_t begin, std::size_t end) { accumulate(acc, idx, begin, end, pass, shift, g_rows); });
  }
  PassSums evaluate(const std::vector<std::size_t>* idx, bool grad, const ParallelFor& pfor) const {
    return evaluate(idx, grad ? Pass::gradient : Pass::natural, pfor);
  }

  // The sums over all rows of a discretised fit with a Gaussian likelihood
  // when the predictor's mean is shifted by vs.t by value of component
  // vs.comp; `g_values` (optional) receives dE/dmu summed by that value.
  PassSums evaluate_values(Pass pass, const ParallelFor& pfor, const ValueShift& vs, VectorXd* g_values = nullptr) const {
    if (!disc_ || lik_->family != Family::gaussian)
      throw std::logic_error("a shift by value needs a discretised fit with a Gaussian likelihood");
    ++passes_;
    return evaluate_discrete(pass, pfor, &vs, g_values);
  }

  void accumulate(PassSums& acc, const std::vector<std::size_t>* idx, std::size_t begin, std::size_t end,
                  Pass pass, const VectorXd* shift = nullptr, VectorXd* g_rows = nullptr) const {
    const bool grad = pass == Pass::gradient;
    Block b;
    q_->gather(b, idx, begin, end);
    q_->features(b);
    const Index nb = b.X.rows();
    VectorXd mu = b.Phi * q_->m + b.o;
    if (shift) mu += shift->segment(static_cast<Index>(begin), nb);
    MatrixXd T;
    if (grad) T.noalias() = b.Phi * q_->S;
    // plug_in: variances set to zero, the likelihood at glm's start (the initial step of q)
    VectorXd s2 = VectorXd::Zero(nb);
    if (!plug_in)
      s2 = (b.resid + (grad ? VectorXd((T.array() * b.Phi.array()).rowwise().sum()) : q_->q_variance(b.Phi)))
               .cwiseMax(1e-12);
    VectorXd g(nb), gam(nb);
    for (Index i = 0; i < nb; ++i) {
      const Expectation e = plug_in ? lik_->start_expect(b.y(i), b.w(i), mu(i)) : lik_->expect(b.y(i), b.w(i), mu(i), s2(i));
      acc.sum_v += e.v;
      acc.dlognoise += e.dlognoise;
      acc.dlogdf += e.dlogdf;
      g(i) = e.dm;
      gam(i) = e.dv;
    }
    if (g_rows) g_rows->segment(static_cast<Index>(begin), nb) = g;
    if (pass == Pass::elbo) return;
    acc.r.noalias() += b.Phi.transpose() * g;
    const MatrixXd U = b.Phi.transpose() * (-gam.array()).max(0.0).sqrt().matrix().asDiagonal();
    acc.Q.selfadjointView<Eigen::Lower>().rankUpdate(U, -1.0);
    if (!lik_->log_concave() && (gam.array() > 0).any()) {  // (Student-t) rows where E[l''] > 0: their part, signed
      const MatrixXd Up = b.Phi.transpose() * gam.array().max(0.0).sqrt().matrix().asDiagonal();
      acc.Q.selfadjointView<Eigen::Lower>().rankUpdate(Up, 1.0);
    }
    if (!grad) return;
    MatrixXd Phibar = g * q_->m.transpose();
    Phibar.noalias() += 2.0 * gam.asDiagonal() * (T - b.Phi);
    q_->row_gradient(b, Phibar, gam, acc.grad);
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
    f.F.resize(static_cast<Index>(D), q_->comps[c].size());
    f.FT.resize(q_->comps[c].size(), static_cast<Index>(D));
    f.rows.resize((D + kChunkRows - 1) / kChunkRows);
    blocked_for(D, pfor, [&](std::size_t begin, std::size_t end) {
      const Index nb = static_cast<Index>(end - begin);
      const MatrixXd Xb = X.middleRows(static_cast<Index>(begin), nb);
      q_->component_block(c, Xb, f.F.middleRows(static_cast<Index>(begin), nb), f.rows[begin / kChunkRows]);
      f.FT.middleCols(static_cast<Index>(begin), nb) = f.F.middleRows(static_cast<Index>(begin), nb).transpose();
    });
    return f;
  }

  // What evaluate_discrete() computes from the hyperparameters alone (kept
  // between the passes of one profile() and reused while prior_version()
  // does not change): the features by value always, the Gaussian sums (P, A,
  // bw, resid_w) only for a caller that asks for them (`sums`), as they cost
  // far more than the features when a component has many basis functions.
  struct DiscreteCache {
    long version = -1;
    long sums_version = -1;                // the version of P, A, bw and resid_w
    std::vector<DiscreteFeatures> f;
    std::vector<VectorXd> resid;           // by value of each component
    // other likelihoods: each component's features in product form, when
    // it has one (AdditiveModel::component_tensor(); empty otherwise)
    std::vector<HilbertTensor> tensor;
    // Gaussian: per pair c < l (P[c][l - c - 1]) its counts times the
    // features of one side, C_cl F_l (D_c x M_l) when contract_left(), else
    // C_cl' F_c (D_l x M_c)
    std::vector<std::vector<MatrixXd>> P;
    MatrixXd A;                            // Gaussian: Phi' W Phi
    VectorXd bw;                           // Gaussian: Phi' W (y - o)
    double resid_w = 0;                    // Gaussian: sum of w * resid
  };

  const DiscreteCache& discrete_cache(const ParallelFor& pfor, bool sums) const {
    DiscreteCache& k = cache_;
    const DiscreteData& dd = *disc_;
    const std::size_t C = q_->comps.size();
    const Index Mt = q_->total_size();
    if (k.version != q_->prior_version()) {
      k.f.clear();
      k.resid.assign(C, VectorXd());
      for (std::size_t c = 0; c < C; ++c) {
        k.f.push_back(discrete_features(c, pfor));
        k.resid[c].resize(k.f[c].F.rows());
        for (std::size_t b = 0; b < k.f[c].rows.size(); ++b)
          k.resid[c].segment(static_cast<Index>(b * kChunkRows), k.f[c].rows[b].resid.size()) = k.f[c].rows[b].resid;
      }
      k.tensor.assign(C, HilbertTensor());
      if (lik_->family != Family::gaussian)
        for (std::size_t c = 0; c < C; ++c) q_->component_tensor(c, dd.comp[c].X, k.tensor[c]);
      k.version = q_->prior_version();
      k.sums_version = -1;
    }
    if (!sums || lik_->family != Family::gaussian || k.sums_version == k.version) return k;
    k.sums_version = k.version;
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
      const Index o = q_->offset_of(c), M = q_->comps[c].size();
      const DiscreteComponent& dc = dd.comp[c];
      const MatrixXd& F = k.f[c].F;
      k.A.block(o, o, M, M) = component_gram_lower(c, dc.count, pfor);
      k.A.block(o, o, M, M).triangularView<Eigen::StrictlyUpper>() = k.A.block(o, o, M, M).transpose();
      for (std::size_t l = c + 1; l < C; ++l) {
        const Index ol = q_->offset_of(l), Ml = q_->comps[l].size();
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

  //
  // With a shift t of the predictor's mean that depends on the value of one
  // component c* (ValueShift; the decoupled engine's mean bases), the data
  // enter as y - o - t: wy_c becomes wy_c - C_cc* t (diag(n_c*) t for c*
  // itself), wyy becomes wyy - 2 t'wy_c* + t' diag(n_c*) t, b follows; and
  // `g_values` receives dE/dmu summed over the rows of each value of c*,
  //   G = (wy_c* - diag(n_c*) (t + F_c* m_c*) - sum_{l != c*} C_c*l F_l m_l) / s^2.
  PassSums evaluate_discrete(Pass pass, const ParallelFor& pfor, const ValueShift* vs = nullptr,
                             VectorXd* g_values = nullptr) const {
    const DiscreteData& dd = *disc_;
    const std::size_t C = q_->comps.size();
    const double nv = lik_->noise_var();
    const DiscreteCache& k = discrete_cache(pfor, true);
    const auto& f = k.f;
    const MatrixXd& A = k.A;
    VectorXd bw = k.bw;
    double wyy = dd.wyy;
    std::vector<VectorXd> wy(C);  // sum of w (y - o - t) by value of each component
    for (std::size_t c = 0; c < C; ++c) wy[c] = dd.comp[c].wy;
    if (vs) {
      const std::size_t cs = vs->comp;
      const VectorXd& t = vs->t;
      wyy += -2.0 * t.dot(dd.comp[cs].wy) + t.dot(dd.comp[cs].count.cwiseProduct(t));
      for (std::size_t c = 0; c < C; ++c) {
        const VectorXd d = by_value_of(c, cs, t, pfor);  // C_cc* t
        wy[c] -= d;
        bw.segment(q_->offset_of(c), q_->comps[c].size()).noalias() -= f[c].F.transpose() * d;
      }
    }
    double explained = wyy + k.resid_w;  // sum w ((y - o - t - mu)^2 + s2)
    const VectorXd Am = A * q_->m;
    explained += -2.0 * q_->m.dot(bw) + q_->m.dot(Am) + (A.cwiseProduct(q_->S)).sum();
    if (vs && g_values) {
      const std::size_t cs = vs->comp;
      VectorXd G = wy[cs] - dd.comp[cs].count.cwiseProduct(f[cs].F * q_->m.segment(q_->offset_of(cs), q_->comps[cs].size()));
      for (std::size_t l = 0; l < C; ++l)
        if (l != cs) G -= by_value_of(cs, l, f[l].F * q_->m.segment(q_->offset_of(l), q_->comps[l].size()), pfor);
      *g_values = G / nv;
    }
    PassSums acc = make_accum();
    acc.sum_v = -0.5 * dd.n_pos * (kLog2Pi + std::log(nv)) + 0.5 * dd.sum_log_w - 0.5 * explained / nv;
    acc.dlognoise = (nv - Likelihood::kNoiseFloor) * (-0.5 * dd.n_pos / nv + 0.5 * explained / (nv * nv));
    if (pass == Pass::elbo) return acc;
    acc.r = (bw - Am) / nv;
    acc.Q = -0.5 / nv * A;
    if (pass != Pass::gradient) return acc;
    const MatrixXd S2 = q_->S + q_->m * q_->m.transpose();
    // cross[c] = sum_{l != c} C_cl F_l S2_lc (D_c x M_c), from the cached
    // product of each pair and one more product with its counts
    std::vector<MatrixXd> cross = empty_cross(k);
    for (std::size_t c = 0; c < C; ++c)
      for (std::size_t l = c + 1; l < C; ++l)
        if (cross_of(cross, c) || cross_of(cross, l))
          pair_cross(dd.pair[c][l - c - 1], k.P[c][l - c - 1], contract_left(c, l, k), f[c], f[l],
                     S2.block(q_->offset_of(c), q_->offset_of(l), q_->comps[c].size(), q_->comps[l].size()),
                     cross_of(cross, c), cross_of(cross, l), pfor);
    for (std::size_t c = 0; c < C; ++c) {
      const Index o = q_->offset_of(c), M = q_->comps[c].size();
      const DiscreteComponent& dc = dd.comp[c];
      const MatrixXd Scc = S2.block(o, o, M, M);
      const VectorXd mc = q_->m.segment(o, M);
      // per block of values, in order (the same sums for any thread count);
      // each block forms its own rows of the feature adjoints
      //   Fbar = (wy m_c' + diag(n_c) F_c (I - S2_cc) - sum_{l != c} T_cl S2_lc) / s^2
      const std::size_t nblocks = f[c].rows.size();
      std::vector<GradAccum> part(nblocks, q_->make_grad());
      pfor(nblocks, [&](std::size_t b0, std::size_t b1) {
        for (std::size_t b = b0; b < b1; ++b) {
          const Index begin = static_cast<Index>(b * kChunkRows), nb = f[c].rows[b].resid.size();
          MatrixXd Fbar(nb, 0);  // (not read: reads_feature_adjoint())
          if (cross_of(cross, c)) {
            const auto Fb = f[c].F.middleRows(begin, nb);
            Fbar = Fb;
            Fbar.noalias() -= Fb * Scc;
            Fbar = dc.count.segment(begin, nb).asDiagonal() * Fbar;
            Fbar.noalias() += wy[c].segment(begin, nb) * mc.transpose();
            Fbar -= cross[c].middleRows(begin, nb);
            Fbar /= nv;
          }
          const VectorXd gam = -0.5 / nv * dc.count.segment(begin, nb);
          q_->component_gradient(c, f[c].rows[b], Fbar, gam, part[b].g_kern[c], part[b].g_Z[c]);
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
    const double Mc = static_cast<double>(q_->comps[c].size()), Ml = static_cast<double>(q_->comps[l].size());
    return Dc * Mc * Ml + nnz * Ml <= Dl * Ml * Mc + nnz * Mc;
  }

  // The side of a pair (c, l) whose features the row-level products take
  // in product form (a Hilbert term of several inputs: hilbert_tensor_times()
  // and hilbert_tensor_dots(), the other side's features times the pair's
  // weights first): 2 for l, 1 for c, 0 for neither (no product form, or
  // not less work than the cheaper way of contract_left(), its products by
  // scattered rows of F counted kScatterWork times their flops).
  static constexpr double kScatterWork = 2.0;
  int tensor_side(std::size_t c, std::size_t l, const DiscreteCache& k) const {
    if (k.tensor.empty() || (k.tensor[c].empty() && k.tensor[l].empty())) return 0;
    const double nnz = disc_->pair[c][l - c - 1].entries();
    const double Dc = static_cast<double>(k.f[c].F.rows()), Dl = static_cast<double>(k.f[l].F.rows());
    const double Mc = static_cast<double>(q_->comps[c].size()), Ml = static_cast<double>(q_->comps[l].size());
    double best = std::min(Dc * Mc * Ml + kScatterWork * nnz * Ml, Dl * Ml * Mc + kScatterWork * nnz * Mc);
    int side = 0;
    if (!k.tensor[l].empty() && hilbert_tensor_work(k.tensor[l], nnz, Dc) + Dc * Mc * Ml < best) {
      best = hilbert_tensor_work(k.tensor[l], nnz, Dc) + Dc * Mc * Ml;
      side = 2;
    }
    if (!k.tensor[c].empty() && hilbert_tensor_work(k.tensor[c], nnz, Dl) + Dl * Ml * Mc < best) side = 1;
    return side;
  }
  // Whether the row-level products of pair (c, l) take the features of l
  // (T = W F_l, by value of c; W the pair's weights), else those of c:
  // tensor_side(), else contract_left().
  bool pair_left(std::size_t c, std::size_t l, const DiscreteCache& k) const {
    const int t = tensor_side(c, l, k);
    return t == 0 ? contract_left(c, l, k) : t == 2;
  }
  // W F_l (pair_left()) or W' F_c, W the pair's observed pairs with values
  // v, through the product form when tensor_side() says so.
  MatrixXd pair_product(std::size_t c, std::size_t l, const DiscreteCache& k, const VectorXd& v,
                        const ParallelFor& pfor) const {
    const DiscretePair& pr = disc_->pair[c][l - c - 1];
    const int t = tensor_side(c, l, k);
    const auto blocks = [&](std::size_t n, const RangeBody& body) { blocked_for(n, pfor, body); };
    if (t == 2) return hilbert_tensor_times(k.tensor[l], pr.with_values(v), blocks);
    if (t == 1) return hilbert_tensor_times(k.tensor[c], pr.trans_with_values(v), blocks);
    return contract_left(c, l, k) ? DiscretePair::sparse_times_t(pr.with_values(v), k.f[l].FT, pfor)
                                  : DiscretePair::sparse_times_t(pr.trans_with_values(v), k.f[c].FT, pfor);
  }

  // Gaussian, discretised: Phi' W Phi (full) and Phi' W (y - o) over all rows.
  const MatrixXd& gaussian_gram(const ParallelFor& pfor) const { return discrete_cache(pfor, true).A; }
  const VectorXd& gaussian_b(const ParallelFor& pfor) const { return discrete_cache(pfor, true).bw; }
  // The rows' features times their weights, summed by value of component c
  // (D_c x total_size()): row a is the sum of w_i phi_i over the rows whose
  // value of c is a (block l: C_cl F_l; block c: diag(n_c) F_c).  With
  // columns E that depend on c's value only, Phi' W E = H' E.
  MatrixXd features_by_value(std::size_t c, const ParallelFor& pfor) const {
    const DiscreteCache& k = discrete_cache(pfor, false);
    const DiscreteData& dd = *disc_;
    MatrixXd H(k.f[c].F.rows(), q_->total_size());
    for (std::size_t l = 0; l < q_->comps.size(); ++l) {
      const Index o = q_->offset_of(l), M = q_->comps[l].size();
      if (l == c)
        H.middleCols(o, M) = dd.comp[c].count.asDiagonal() * k.f[c].F;
      else if (c < l)
        H.middleCols(o, M) = dd.pair[c][l - c - 1].times(k.f[l].F, k.f[l].FT, pfor);
      else
        H.middleCols(o, M) = dd.pair[l][c - l - 1].trans_times(k.f[l].F, k.f[l].FT, pfor);
    }
    return H;
  }

  // C_cl v (D_c): the weighted counts of component c's values against
  // component l's values times v (one entry per value of l); diag(n_c) v
  // when l = c.
  VectorXd by_value_of(std::size_t c, std::size_t l, const VectorXd& v, const ParallelFor& pfor) const {
    if (c == l) return disc_->comp[c].count.cwiseProduct(v);
    const MatrixXd V = v, VT = v.transpose();
    return c < l ? VectorXd(disc_->pair[c][l - c - 1].times(V, VT, pfor))
                 : VectorXd(disc_->pair[l][c - l - 1].trans_times(V, VT, pfor));
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
                         const DiscreteFeatures& fl, const Eigen::Ref<const MatrixXd>& Scl, MatrixXd* xc,
                         MatrixXd* xl, const ParallelFor& pfor) {
    if (left) {
      if (xc) *xc += DiscretePair::dense_times(P, Scl.transpose(), pfor);
      if (!xl) return;
      const MatrixXd R = DiscretePair::dense_times(fc.F, Scl, pfor);  // F_c S_cl
      *xl += w.trans_times(R, R.transpose(), pfor);
    } else {
      if (xl) *xl += DiscretePair::dense_times(P, Scl, pfor);
      if (!xc) return;
      const MatrixXd R = DiscretePair::dense_times(fl.F, Scl.transpose(), pfor);  // F_l S_lc
      *xc += w.times(R, R.transpose(), pfor);
    }
  }

  // The cross terms of the feature adjoints (pair_cross()) of the components
  // whose gradient reads them (AdditiveModel::reads_feature_adjoint(); a
  // Hilbert term's comes from Q and r): cross[c] empty for the others.
  std::vector<MatrixXd> empty_cross(const DiscreteCache& k) const {
    std::vector<MatrixXd> cross(q_->comps.size());
    for (std::size_t c = 0; c < cross.size(); ++c)
      if (q_->reads_feature_adjoint(c)) cross[c] = MatrixXd::Zero(k.f[c].F.rows(), q_->comps[c].size());
    return cross;
  }
  static MatrixXd* cross_of(std::vector<MatrixXd>& cross, std::size_t c) { return cross[c].size() ? &cross[c] : nullptr; }

  // (2 F_c S_cl F_l')[a, b] at the observed pairs (tensor_side(), else
  // contract_left(): the product with S on the side of c).
  VectorXd pair_variance(std::size_t c, std::size_t l, const DiscreteCache& k, const ParallelFor& pfor) const {
    const DiscretePair& pr = disc_->pair[c][l - c - 1];
    const MatrixXd& Fc = k.f[c].F;
    const MatrixXd& Fl = k.f[l].F;
    const auto Scl = q_->S.block(q_->offset_of(c), q_->offset_of(l), q_->comps[c].size(), q_->comps[l].size());
    const int t = tensor_side(c, l, k);
    if (t != 0) {  // H = F_c S_cl against l's product form, or F_l S_cl' against c's
      VectorXd v(pr.pattern.nonZeros());
      const auto blocks = [&](std::size_t n, const RangeBody& body) { blocked_for(n, pfor, body); };
      if (t == 2)
        hilbert_tensor_dots(k.tensor[l], MatrixXd(Fc * Scl), pr.pattern, nullptr, v, blocks);
      else
        hilbert_tensor_dots(k.tensor[c], MatrixXd(Fl * Scl.transpose()), pr.patternT, pr.tperm.data(), v, blocks);
      return v;
    }
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

  // diag(F_c S F_c') over component c's distinct values (F_c the cached
  // features): from the component's structure when it has one
  // (AdditiveModel::component_quadratic_diag(), a Hilbert term of several
  // inputs; its groups of values in parallel), else diag_quadratic().
  VectorXd component_quadratic_diag(std::size_t c, const Eigen::Ref<const MatrixXd>& S, const ParallelFor& pfor) const {
    VectorXd v;
    if (q_->component_quadratic_diag(c, disc_->comp[c].X, MatrixXd(S), v,
                                     [&](std::size_t U, const RangeBody& body) { pfor(U, body); }))
      return v;
    return diag_quadratic(cache_.f[c].F, S, pfor);
  }

  // The lower triangle of F_c' diag(d) F_c over component c's distinct values
  // (F_c the cached features): from the component's structure when it has
  // one (AdditiveModel::component_gram_lower(), a Hilbert term of several
  // inputs), else weighted_gram_lower().
  MatrixXd component_gram_lower(std::size_t c, const VectorXd& d, const ParallelFor& pfor) const {
    MatrixXd G;
    if (q_->component_gram_lower(c, disc_->comp[c].X, d, G)) return G;
    return weighted_gram_lower(cache_.f[c].F, d, pfor);
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
    const std::size_t C = q_->comps.size();
    RowParts p;
    p.var = var;
    p.pairs = var && pairs;
    p.mv.resize(C);
    p.vd.resize(C);
    for (std::size_t c = 0; c < C; ++c) {
      const Index o = q_->offset_of(c), M = q_->comps[c].size();
      const MatrixXd& F = k.f[c].F;
      p.mv[c].noalias() = F * q_->m.segment(o, M);
      if (var) p.vd[c] = k.resid[c] + component_quadratic_diag(c, q_->S.block(o, o, M, M), pfor);
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
    k.C = q_->comps.size();
    for (std::size_t c = 0; c < q_->comps.size(); ++c) k.key.push_back(disc_->id[c].data());
    for (std::size_t c = 0; c < q_->comps.size(); ++c)
      for (std::size_t l = c + 1; l < q_->comps.size(); ++l) k.key.push_back(disc_->pair[c][l - c - 1].pos.data());
    return k;
  }

  // The latent mean and (with `var`) variance of every row of a discretised
  // fit from its values (the rows' own when discrete_rows()).  Needs the
  // rows' values (not a fit from shards); the variance needs the
  // observed pairs (row-level data: likelihoods other than Gaussian) unless
  // the posterior is mean field.
  void discrete_row_moments(bool var, VectorXd& mean, VectorXd& variance, const ParallelFor& pfor) const {
    if (!disc_ || disc_->id.empty()) throw std::logic_error("row moments need the rows' discretised values");
    const bool pairs = !meanfield_;
    if (var && pairs && q_->comps.size() > 1 && disc_->pair[0][0].pos.empty())
      throw std::logic_error("row variances need the observed value pairs");
    const RowParts p = row_parts(discrete_cache(pfor, false), var, pairs, pfor);
    const RowKeys keys = row_keys();
    const std::size_t N = q_->n();
    mean.resize(static_cast<Index>(N));
    variance.resize(var ? static_cast<Index>(N) : 0);
    blocked_for(N, pfor, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) {
        double mu, s2;
        row_latent_moments(p, keys, q_->o_rows()(static_cast<Index>(i)), i, N, mu, s2);
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
    const std::size_t N = q_->n();
    const Index p = q_->x_rows().cols();
    VectorXd mean = q_->o_rows();
    for (std::size_t c = 0; c < q_->comps.size(); ++c) {
      const VectorXd mc = q_->m.segment(q_->offset_of(c), q_->comps[c].size());
      const KeyRule& r = disc_->rule[c];
      const bool grid_ok = r.rounded() && r.n_round <= 2 && r.dk() == static_cast<Index>(r.n_round) &&
                           std::all_of(r.step.begin(), r.step.end(), [](double h) { return h > 0; });
      if (!grid_ok) {
        blocked_for(N, pfor, [&](std::size_t begin, std::size_t end) {
          const Index nb = static_cast<Index>(end - begin);
          const MatrixXd Xb = q_->x_rows().middleRows(static_cast<Index>(begin), nb);
          mean.segment(static_cast<Index>(begin), nb) += q_->component_block_mean(c, Xb, mc);
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
        grid.segment(static_cast<Index>(begin), nb) = q_->component_block_mean(c, Xg.middleRows(static_cast<Index>(begin), nb), mc);
      });
      blocked_for(N, pfor, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
          Index k[2] = {0, 0};
          double wt[2][4] = {{1, 0, 0, 0}, {1, 0, 0, 0}};
          for (Index j = 0; j < d; ++j) {
            const std::size_t jj = static_cast<std::size_t>(j);
            const double t = (q_->x_rows()(static_cast<Index>(i), r.cols[jj]) - r.lo[jj]) / r.step[jj];
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

  PassSums evaluate_discrete_rows(Pass pass, const ParallelFor& pfor) const {
    const std::size_t C = q_->comps.size();
    const DiscreteCache& k = discrete_cache(pfor, false);
    const RowParts parts = row_parts(k, !plug_in, !meanfield_, pfor);
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
      row_groups_sums(parts, row_keys(), loc, row_group_sizes(gi), gi.bounds, *lik_, q_->y_rows().data(), q_->w_rows().data(), q_->o_rows().data(),
                      stats, gradient, pfor, row_sums_);
    }
    std::vector<Index> D;
    for (std::size_t c = 0; c < C; ++c) D.push_back(k.f[c].F.rows());
    for (const DiscretePair* q : pp) D.push_back(q->pattern.nonZeros());
    RowTotals tot = add_row_groups(remote_rows_ ? remote : row_sums_, gi.idx, C, D, stats, pfor);
    PassSums acc = make_accum();
    acc.sum_v = tot.v;
    acc.dlognoise = tot.dn;
    acc.dlogdf = tot.ddf;
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
    // F_l' (Gamma_cl' F_c) or, when pair_left(), (F_c' (Gamma_cl F_l))'), and for the
    // gradient the product of Q's block, T[c][l] = Gamma_cl F_l when
    // pair_left(), else T[l][c] = Gamma_cl' F_c (pair_product())
    std::vector<std::vector<MatrixXd>> T(C, std::vector<MatrixXd>(C));
    for (std::size_t c = 0; c < C; ++c) {
      const Index o = q_->offset_of(c), M = q_->comps[c].size();
      const MatrixXd& F = k.f[c].F;
      acc.r.segment(o, M).noalias() = F.transpose() * G[c];
      acc.Q.block(o, o, M, M) = component_gram_lower(c, Gam[c], pfor);
    }
    for (std::size_t q = 0; q < pp.size(); ++q) {
      const std::size_t c = pc[q].first, l = pc[q].second;
      auto block = acc.Q.block(q_->offset_of(l), q_->offset_of(c), q_->comps[l].size(), q_->comps[c].size());
      if (pair_left(c, l, k)) {
        T[c][l] = pair_product(c, l, k, Gp[q], pfor);
        block = weighted_crossprod(k.f[c].F, VectorXd(), T[c][l], pfor).transpose();
      } else {
        T[l][c] = pair_product(c, l, k, Gp[q], pfor);
        block = weighted_crossprod(k.f[l].F, VectorXd(), T[l][c], pfor);
      }
    }
    if (pass != Pass::gradient) return acc;
    // cross[c] = sum_{l != c} Gamma_cl F_l S_lc (pair_cross(); the product of
    // Q's block reused unless the gradient needs the raw gamma)
    std::vector<MatrixXd> cross = empty_cross(k);
    for (std::size_t q = 0; q < pp.size(); ++q) {
      const std::size_t c = pc[q].first, l = pc[q].second;
      if (!cross_of(cross, c) && !cross_of(cross, l)) continue;
      const ValuedPairs w{*pp[q], raw ? Gp_raw[q] : Gp[q]};
      const bool left = pair_left(c, l, k);
      MatrixXd& Pq = left ? T[c][l] : T[l][c];
      if (raw) Pq = pair_product(c, l, k, Gp_raw[q], pfor);
      pair_cross(w, Pq, left, k.f[c], k.f[l], q_->S.block(q_->offset_of(c), q_->offset_of(l), q_->comps[c].size(), q_->comps[l].size()),
                 cross_of(cross, c), cross_of(cross, l), pfor);
    }
    const std::vector<VectorXd>& Gg = raw ? Gam_raw : Gam;
    for (std::size_t c = 0; c < C; ++c) {
      const Index o = q_->offset_of(c), M = q_->comps[c].size();
      const MatrixXd& F = k.f[c].F;
      const std::size_t nblocks = k.f[c].rows.size();
      std::vector<GradAccum> part(nblocks, q_->make_grad());
      pfor(nblocks, [&](std::size_t b0, std::size_t b1) {
        for (std::size_t b = b0; b < b1; ++b) {  // (blocks of kChunkRows values)
          const Index begin = static_cast<Index>(b * kChunkRows), nb = k.f[c].rows[b].resid.size();
          MatrixXd Fbar(nb, 0);  // (not read: reads_feature_adjoint())
          if (cross_of(cross, c)) {
            const auto Fb = F.middleRows(begin, nb);
            Fbar = G[c].segment(begin, nb) * q_->m.segment(o, M).transpose();
            Fbar.noalias() += 2.0 * Gg[c].segment(begin, nb).asDiagonal() * (Fb * q_->S.block(o, o, M, M) - Fb);
            Fbar += 2.0 * cross[c].middleRows(begin, nb);
          }
          q_->component_gradient(c, k.f[c].rows[b], Fbar, Gg[c].segment(begin, nb), part[b].g_kern[c], part[b].g_Z[c]);
        }
      });
      for (const GradAccum& gp : part) {
        acc.grad.g_kern[c] += gp.g_kern[c];
        acc.grad.g_Z[c] += gp.g_Z[c];
      }
    }
    return acc;
  }

  // The sums of a Gaussian likelihood that no feature enters: the rows with
  // w > 0, the sum of log w over them and of w (y - o)^2 (from the
  // discretisation, or the rows in order).  Svgp's fixed-design path.
  struct GaussianTotals {
    double n_pos = 0, sum_log_w = 0, wyy = 0;
  };
  GaussianTotals gaussian_totals() const {
    GaussianTotals t;
    if (disc_) {
      t.n_pos = disc_->n_pos;
      t.sum_log_w = disc_->sum_log_w;
      t.wyy = disc_->wyy;
      return t;
    }
    const auto &y = q_->y_rows(), &w = q_->w_rows(), &o = q_->o_rows();
    for (Index i = 0; i < y.size(); ++i) {
      if (!(w(i) > 0)) continue;
      const double r = y(i) - o(i);
      t.n_pos += 1;
      t.sum_log_w += std::log(w(i));
      t.wyy += w(i) * r * r;
    }
    return t;
  }

  // Discretises the data for the fit when the options ask for it (all rows
  // per iteration); the number of distinct values.
  // (Data given by use_discrete_data() are used as they are.)
  std::size_t use_discrete(bool full, double dense_cells = kDenseCells) {
    if (given_) return disc_->n_distinct();
    disc_.reset();
    if (!discrete_ || !full) return 0;
    set_discrete(discretise(q_->comps, q_->x_rows(), q_->y_rows(), q_->w_rows(), q_->o_rows(), bins_, dense_cells, lik_->family != Family::gaussian));
    return disc_->n_distinct();
  }
  bool discrete() const { return static_cast<bool>(disc_); }
  // Passes so far (calls of evaluate() and evaluate_values(), any rows).
  std::size_t passes() const { return passes_; }
  // Counts k passes made elsewhere over these data (a copy of the model at other scales).
  void count_passes(std::size_t k) const { passes_ += k; }
  // The distinct values of component c (a discretised fit).
  const DiscreteComponent& discrete_component(std::size_t c) const { return disc_->comp[c]; }
  // Back to the rows (a discretisation that does not pay: too many values).
  void drop_discrete() {
    if (given_) return;
    disc_.reset();
    cache_ = DiscreteCache();
    row_index_.reset();
  }

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
    if (lik_->family != Family::gaussian) throw std::invalid_argument("discretised sums from shards need a Gaussian likelihood");
    set_discrete(std::move(d));
    given_ = true;
  }

  // Column means of the features over all rows (feature_means()), from the
  // distinct values of a discretised fit (at the rounded inputs).
  VectorXd discrete_feature_means(const ParallelFor& pfor) const {
    const DiscreteCache& k = discrete_cache(pfor, false);
    VectorXd mean(q_->total_size());
    for (std::size_t c = 0; c < q_->comps.size(); ++c)
      mean.segment(q_->offset_of(c), q_->comps[c].size()).noalias() = k.f[c].F.transpose() * disc_->comp[c].rows;
    return mean / static_cast<double>(std::max<std::size_t>(1, q_->n()));
  }


 private:
  DataPass(const DataPass&) = default;
  const WhitenedGaussianModel* q_;
  const Likelihood* lik_;
  bool meanfield_, discrete_;
  double bins_;
  std::shared_ptr<const DiscreteData> disc_;
  bool given_ = false;  // disc_ from use_discrete_data()
  mutable DiscreteCache cache_;
  mutable std::size_t passes_ = 0;  // (passes())
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
      row_index_ = std::make_shared<const RowGroupIndex>(row_group_index(row_keys(), group_bounds(q_->n()), pfor));
    return *row_index_;
  }
};

}  // namespace scalegp
