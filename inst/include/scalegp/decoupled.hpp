// Decoupled variational GP (Cheng and Boots 2017, "Variational inference for
// Gaussian process models with linear complexity", NeurIPS) in the hybrid
// parametrisation of their Appendix A.3: the mean has the M_beta inducing
// inputs Z of the SVGP engine plus M_a further mean bases A, the covariance
// only Z.  In whitened coordinates (phi(x) = L^{-1} k(Z, x), K_ZZ = L L'),
//   mean  mu(x) = phi(x)' m + k(x, A) a + offset
//   var   s2(x) = k(x, x) - |phi(x)|^2 + phi(x)' S phi(x)
//   KL    = KL(N(m, S) || N(0, I)) + m_g' c + a' K_AA a / 2,   c = L^{-1} K_ZA a
// (their eq. 14 with its factor 1/2 on the log-determinant corrected;
// m_g is the block of m of the GP component).  With M_a = 0 this is the SVGP
// engine; with M_beta = 0 the mean is kernel ridge regression on A.  The
// cost of an iteration is O(N_b M_a d) for the mean bases (evaluated in
// chunks, never stored whole) plus the SVGP engine's O(N_b M_beta^2).
//
// The model is one stationary GP component (any number of inputs) plus
// parametric blocks.  Decoupled composes the parts of the SVGP engine: q(v)
// = N(m, S) and its natural-gradient updates (NaturalQ, natural_q.hpp; the
// linear KL term shifts the prior mean, so every step goes towards
// P* = I - 2 s Q, h* = s (r - 2 Q m) - c: shifted_step()), the row pass of
// DataPass (data_pass.hpp) with the mean bases as a per-row shift, and the
// drivers of fit_loop.hpp.  A Gaussian fit over all rows (or the closed
// form) whose gp() term has few distinct values (at most half the rows,
// after the rounding of discrete.hpp; `discrete` in the options) passes
// over those values instead: DataPass's discretised pass with the mean
// bases as a shift by value (evaluate_values()), the bases' gradient and
// the mean system (mean_system()) over the values with their counts.
//   All rows (any likelihood): all mean bases are placed at the start, and
//   L-BFGS/BFGS (fit_profile()) moves a, A, Z, the kernel hyperparameters
//   and the noise with q optimal at each value (Gaussian: a natural step of
//   size 1 is exact; other likelihoods: optimise_q()'s damped steps).
//   Minibatches: natural steps on q, and Adam steps
//   on a, A, Z, the kernel hyperparameters and the noise with the paper's
//   step size lr / (1 + rate_decay sqrt(t)) (rate_decay: 0.1 from R).  Mean
//   bases are added `add` per iteration at data rows drawn without
//   replacement (the online growth of their Algorithm 1) with a = 0, so q
//   is unchanged when they arrive.  The quadratic a' K_AA a is estimated
//   from a window of `kl_columns` columns (a random start, wrapping),
//   scaled by M_a / columns: unbiased; the gradient is the exact one of
//   that estimate.  With solve_mean (Gaussian), a and q's mean end at their
//   joint optimum (solve_mean_and_noise()).
//   Gaussian likelihood with the kernel, noise and inducing inputs fixed
//   (closed_form): no iterations, the joint optimum of a and q.
//
// Parametrisation: a = a0 * rate_ratio / (sigma_f^2 sqrt(M_a)) (the Jacobi
// preconditioner of their Appendix A.1, a scale for M_a and a step size of
// its own); Adam moves a0.
#pragma once
#include "fit_loop.hpp"
#include "natural_q.hpp"
#include <set>

namespace scalegp {

struct DecoupledSettings {
  Index mean_basis = 0;   // M_a: mean bases beyond the inducing inputs
  Index add = 128;        // bases added per iteration until M_a
  Index kl_columns = 0;   // columns of K_AA per iteration (0 or >= M_a: all, exact)
  double rate_ratio = 1;  // Adam step of the coefficients a relative to the other parameters
  // Gaussian likelihood on minibatches: at the end, a and the mean of q are set
  // to their joint optimum at the final hyperparameters (solve_mean()).
  bool solve_mean = false;
  // Gaussian likelihood, kernel, noise and inducing inputs given (not
  // learned): no iterations; all mean bases are placed, a set to the optimal
  // mean and q to its optimum (closed_form_fit()).
  bool closed_form = false;
  double rate_decay = 0;  // Adam step learning_rate / (1 + rate_decay sqrt(t)) (0: constant)
};

// k(x, A) a for the rows of Xs (inputs already divided by the lengthscales,
// as As), in row blocks (parallel) and chunks of A (fixed order).
inline VectorXd basis_mean(const Kernel& k, const MatrixXd& Xs, const MatrixXd& As, const VectorXd& a,
                           const ParallelFor& pfor, Index chunk = 512) {
  VectorXd out = VectorXd::Zero(Xs.rows());
  blocked_for(static_cast<std::size_t>(Xs.rows()), pfor, [&](std::size_t begin, std::size_t end) {
    const Index nb = static_cast<Index>(end - begin);
    const MatrixXd Xb = Xs.middleRows(static_cast<Index>(begin), nb);
    VectorXd acc = VectorXd::Zero(nb);
    MatrixXd K, D;
    for (Index j = 0; j < As.rows(); j += chunk) {
      const Index nj = std::min(chunk, As.rows() - j);
      k.cross(Xb, As.middleRows(j, nj), K, D);
      acc.noalias() += K * a.segment(j, nj);
    }
    out.segment(static_cast<Index>(begin), nb) = acc;
  });
  return out;
}

class Decoupled : public NaturalQ {
 public:
  DecoupledSettings dopt;
  MatrixXd A;   // mean-basis locations (M_a x d; component inputs on the internal scale)
  VectorXd a0;  // their coefficients: a = a0 * precond()
  Index active = 0;  // bases added so far (the first `active` rows of A)

  Decoupled(std::vector<Component> components, Likelihood likelihood, Settings settings, SvgpSettings options,
            DecoupledSettings dset, const double* X, std::size_t n, std::size_t p, const double* y,
            const double* w, const double* offset)
      : NaturalQ(std::move(components), std::move(likelihood), settings, options, X, n, p, y, w, offset),
        dopt(dset) {
    for (std::size_t c = 0; c < comps.size(); ++c) {
      if (comps[c].kind == Kind::linear) continue;
      if (comps[c].kind != Kind::stationary || comps[c].by_col >= 0 || cg_ != kNone)
        throw std::invalid_argument(
            "the decoupled engine fits one gp() term (stationary kernel, no 'by') plus parametric terms");
      cg_ = c;
    }
    if (cg_ == kNone) throw std::invalid_argument("the decoupled engine needs a gp() term");
    if (dopt.mean_basis < 0) throw std::invalid_argument("mean_basis must be >= 0");
    A = MatrixXd::Zero(dopt.mean_basis, comps[cg_].dim());
    a0 = VectorXd::Zero(dopt.mean_basis);
  }

  std::size_t gp_component() const { return cg_; }
  const Kernel& kernel() const { return comps[cg_].kernel; }
  Index n_basis() const { return dopt.mean_basis; }
  // a = a0 * precond(): Jacobi (1 / sigma_f^2, their Appendix A.1), a scale
  // 1 / sqrt(M_a) that keeps an Adam step's change of the mean from growing
  // with M_a, and the ratio of a's step size to that of the other parameters.
  double precond() const {
    return dopt.rate_ratio / (kernel().variance() * std::sqrt(static_cast<double>(std::max<Index>(1, n_basis()))));
  }
  // The coefficients of the active bases.
  VectorXd coef() const { return a0.head(active) * precond(); }

  // Puts the first `k` rows of `locations` in as active bases with coefficients a.
  void set_basis(const MatrixXd& locations, const VectorXd& a) {
    if (locations.rows() > n_basis() || locations.cols() != A.cols() || a.size() != locations.rows())
      throw std::invalid_argument("set_basis(): sizes do not match");
    active = locations.rows();
    A.topRows(active) = locations;
    a0.setZero();
    a0.head(active) = a / precond();
  }

  // The component's inputs of rows idx (all rows when null), divided by the lengthscales.
  MatrixXd scaled_inputs(const std::vector<std::size_t>* idx) const {
    const Component& k = comps[cg_];
    const std::size_t nb = idx ? idx->size() : n();
    MatrixXd Xc(static_cast<Index>(nb), k.dim());
    for (std::size_t i = 0; i < nb; ++i)
      for (Index j = 0; j < k.dim(); ++j) Xc(static_cast<Index>(i), j) = X_(static_cast<Index>(idx ? (*idx)[i] : i), k.cols[j]);
    return kernel().scale(Xc);
  }

  // All rows pass through the distinct values of the gp component
  // (use_values()).
  bool by_value() const { return data_.discrete(); }

  // The gp component's inputs of a pass, divided by the lengthscales: of
  // rows idx, or of all rows (by value when by_value()).
  MatrixXd pass_inputs(const std::vector<std::size_t>* idx) const {
    if (idx || !by_value()) return scaled_inputs(idx);
    const Component& k = comps[cg_];
    const MatrixXd& V = data_.discrete_component(cg_).X;
    MatrixXd Xc(V.rows(), k.dim());
    for (Index j = 0; j < k.dim(); ++j) Xc.col(j) = V.col(k.cols[j]);
    return kernel().scale(Xc);
  }

  // k(x, A) a over a pass (pass_inputs()).
  VectorXd basis_pass(const std::vector<std::size_t>* idx, const ParallelFor& pfor) const {
    const MatrixXd Xs = pass_inputs(idx);
    if (active == 0) return VectorXd::Zero(Xs.rows());
    return basis_mean(kernel(), Xs, kernel().scale(A.topRows(active)), coef(), pfor);
  }
  // The average over all rows of t, the pass of all rows' basis_pass().
  double rows_mean(const VectorXd& t) const {
    if (by_value()) return data_.discrete_component(cg_).rows.dot(t) / static_cast<double>(std::max<std::size_t>(1, n()));
    return t.size() ? t.mean() : 0.0;
  }

  // ---- parameters moved by Adam: [hyperparameters, noise | a0 | A] --------------------
  Index n_theta() const { return NaturalQ::n_theta() + n_basis() + (set.learn_inducing ? A.size() : 0); }
  VectorXd pack() const {
    VectorXd th(n_theta());
    const Index k = NaturalQ::n_theta();
    th.head(k) = NaturalQ::pack();
    th.segment(k, n_basis()) = a0;
    if (set.learn_inducing) th.tail(A.size()) = Eigen::Map<const VectorXd>(A.data(), A.size());
    return th;
  }
  void unpack(const VectorXd& th) {
    const Index k = NaturalQ::n_theta();
    NaturalQ::unpack(th.head(k));
    a0 = th.segment(k, n_basis());
    if (set.learn_inducing) Eigen::Map<VectorXd>(A.data(), A.size()) = th.tail(A.size());
  }

  // ---- the objective ---------------------------------------------------------------------
  // What one evaluation keeps for the natural step that follows it.
  struct Eval {
    PassSums acc;
    VectorXd c;  // L^{-1} K_ZA a
    double scale = 1;
  };

  // The ELBO (estimate) on rows idx with scale s, using a window of columns
  // of K_AA from `start` (`exact`: all columns), and its gradient in the
  // packed layout when grad.  The log prior of the hyperparameters is not included.
  // `shift_in`: k(x_i, A) a of those rows when already known.
  Step objective(const std::vector<std::size_t>* idx, double s, bool grad, bool exact, Index start, Eval& ev,
                 const VectorXd* shift_in = nullptr) const {
    const ParallelFor& pfor = *pfor_;
    const Kernel& ker = kernel();
    const Component& comp = comps[cg_];
    const ComponentPrior& pr = prior_[cg_];
    const Index Mg = comp.size(), og = offset_of(cg_), d = comp.dim();
    const MatrixXd As = ker.scale(A.topRows(active));
    const VectorXd a = coef();
    // the data: the mean bases' part of every row (or value), then the SVGP pass
    const MatrixXd Xs = pass_inputs(idx);
    const VectorXd shift = shift_in ? *shift_in : active > 0 ? basis_mean(ker, Xs, As, a, pfor) : VectorXd::Zero(Xs.rows());
    VectorXd g;
    const Pass pass = grad ? Pass::gradient : Pass::natural;
    if (!idx && by_value())
      ev.acc = data_.evaluate_values(pass, pfor, ValueShift{cg_, shift}, grad ? &g : nullptr);
    else
      ev.acc = data_.evaluate(idx, pass, pfor, &shift, grad ? &g : nullptr);
    ev.scale = s;
    // KL: cross term m_g' c and the quadratic a' K_AA a / 2 (estimated from columns)
    MatrixXd KZA, DZA;
    ev.c = VectorXd::Zero(Mg);
    if (active > 0) {
      ker.cross(pr.Zs, As, KZA, DZA);
      ev.c = KZA * a;
      pr.L.triangularView<Eigen::Lower>().solveInPlace(ev.c);
    }
    const VectorXd mg = m.segment(og, Mg);
    const Index ncol = exact || dopt.kl_columns <= 0 || dopt.kl_columns >= active ? active : dopt.kl_columns;
    const double cS = ncol > 0 ? static_cast<double>(active) / static_cast<double>(ncol) : 0.0;
    std::vector<Index> cols(static_cast<std::size_t>(ncol));
    for (Index j = 0; j < ncol; ++j) cols[static_cast<std::size_t>(j)] = ncol == active ? j : (start + j) % active;
    // row blocks of A against the window: value, and gradients w.r.t. a, A and the kernel
    const Index nblk = (active + kBlock - 1) / kBlock;
    struct Part {
      double value = 0, glogvar = 0;
      VectorXd glogls, ga_cols;
      MatrixXd gA_cols;
    };
    std::vector<Part> part(static_cast<std::size_t>(nblk));
    VectorXd ga = VectorXd::Zero(active);
    MatrixXd gA = MatrixXd::Zero(active, d);
    MatrixXd AsS(ncol, d);
    VectorXd aS(ncol);
    for (Index j = 0; j < ncol; ++j) {
      AsS.row(j) = As.row(cols[static_cast<std::size_t>(j)]);
      aS(j) = a(cols[static_cast<std::size_t>(j)]);
    }
    const bool sym = ncol == active;  // all columns: K_AA symmetric, rows own their gradient
    pfor(static_cast<std::size_t>(nblk), [&](std::size_t b0, std::size_t b1) {
      MatrixXd K, D;
      for (std::size_t b = b0; b < b1; ++b) {
        Part& p = part[b];
        const Index i0 = static_cast<Index>(b) * kBlock, ni = std::min(kBlock, active - i0);
        ker.cross(As.middleRows(i0, ni), AsS, K, D);
        const VectorXd KaS = K * aS;
        p.value = 0.5 * cS * a.segment(i0, ni).dot(KaS);
        if (!grad) continue;
        p.glogls = VectorXd::Zero(ker.log_ls.size());
        p.glogvar = -p.value;
        if (sym) {
          ga.segment(i0, ni) = -cS * KaS;  // d/da of -a'K a / 2
          const MatrixXd E = (-0.5 * cS * a.segment(i0, ni) * aS.transpose()).cwiseProduct(D);
          MatrixXd gAi = MatrixXd::Zero(ni, d);
          cross_gradient(ker, As.middleRows(i0, ni), AsS, E, p.glogls, &gAi, nullptr);
          gA.middleRows(i0, ni) = 2.0 * gAi;  // the row and the column role of each basis
        } else {
          ga.segment(i0, ni) = -0.5 * cS * KaS;
          p.ga_cols = -0.5 * cS * K.transpose() * a.segment(i0, ni);
          const MatrixXd E = (-0.5 * cS * a.segment(i0, ni) * aS.transpose()).cwiseProduct(D);
          MatrixXd gAi = MatrixXd::Zero(ni, d);
          p.gA_cols = MatrixXd::Zero(ncol, d);
          cross_gradient(ker, As.middleRows(i0, ni), AsS, E, p.glogls, &gAi, &p.gA_cols);
          gA.middleRows(i0, ni) = gAi;
        }
      }
    });
    double quad = 0;
    for (const Part& p : part) quad += p.value;
    Step st;
    st.objective = s * ev.acc.sum_v - kl() - mg.dot(ev.c) - quad;
    if (!grad) return st;

    // gradient: the SVGP part (hyperparameters through the features, noise)
    st.gradient = VectorXd::Zero(n_theta());
    const Index k0 = NaturalQ::n_theta();
    st.gradient.head(k0) = NaturalQ::gradient(ev.acc, s);
    GradAccum extra = make_grad();
    VectorXd& gk = extra.g_kern[cg_];  // [log var, log ls]
    for (const Part& p : part) {
      gk(0) += p.glogvar;
      gk.tail(ker.log_ls.size()) += p.glogls;
    }
    if (!sym)  // the window's column role
      for (std::size_t b = 0; b < part.size(); ++b)
        for (Index j = 0; j < ncol; ++j) {
          const Index t = cols[static_cast<std::size_t>(j)];
          ga(t) += part[b].ga_cols(j);
          gA.row(t) += part[b].gA_cols.row(j);
        }
    // the data through the mean bases: d/da = s K_bA' g, and A, kernel via the adjoint s g a'
    if (active > 0) {
      const Index nchunk = (active + kBlock - 1) / kBlock;
      std::vector<VectorXd> cg_ls(static_cast<std::size_t>(nchunk), VectorXd::Zero(ker.log_ls.size()));
      std::vector<double> cg_var(static_cast<std::size_t>(nchunk), 0.0);
      const VectorXd gs = s * g;
      pfor(static_cast<std::size_t>(nchunk), [&](std::size_t c0, std::size_t c1) {
        MatrixXd K, D;
        for (std::size_t c = c0; c < c1; ++c) {
          const Index j0 = static_cast<Index>(c) * kBlock, nj = std::min(kBlock, active - j0);
          const auto Aj = As.middleRows(j0, nj);
          VectorXd gaj = VectorXd::Zero(nj);
          MatrixXd gAj = MatrixXd::Zero(nj, d);
          for (Index r = 0; r < Xs.rows(); r += kRows) {
            const Index nr = std::min(kRows, Xs.rows() - r);
            ker.cross(Xs.middleRows(r, nr), Aj, K, D);
            gaj.noalias() += K.transpose() * gs.segment(r, nr);
            const MatrixXd E = (gs.segment(r, nr) * a.segment(j0, nj).transpose()).cwiseProduct(D);
            cross_gradient(ker, Xs.middleRows(r, nr), Aj, E, cg_ls[c], nullptr, &gAj);
          }
          cg_var[c] = a.segment(j0, nj).dot(gaj);
          ga.segment(j0, nj) += gaj;
          gA.middleRows(j0, nj) += gAj;
        }
      });
      for (Index c = 0; c < nchunk; ++c) {
        gk(0) += cg_var[static_cast<std::size_t>(c)];
        gk.tail(ker.log_ls.size()) += cg_ls[static_cast<std::size_t>(c)];
      }
      // the cross term -m_g' L^{-1} K_ZA a: d/da = -K_AZ u with u = L^{-T} m_g; K_ZA's
      // adjoint -u a'; through L as a feature row c' with adjoint -m_g'
      VectorXd u = mg;
      pr.L.transpose().triangularView<Eigen::Upper>().solveInPlace(u);
      ga.noalias() -= KZA.transpose() * u;
      gk(0) -= u.dot(KZA * a);
      const MatrixXd E = (-u * a.transpose()).cwiseProduct(DZA);
      MatrixXd gZ = MatrixXd::Zero(Mg, d);
      cross_gradient(ker, pr.Zs, As, E, gk.tail(ker.log_ls.size()), &gZ, &gA);
      if (set.learn_inducing) extra.g_Z[cg_] += gZ;
      MatrixXd PtPb = MatrixXd::Zero(total_size(), total_size());
      PtPb.block(og, og, Mg, Mg) = -ev.c * mg.transpose();
      // the preconditioner a = a0 / (sigma_f^2 ...): d a / d log var = -a
      gk(0) -= a.dot(ga);
      if (comp.learn_kernel || set.learn_inducing)
        st.gradient.head(n_hyper()) += hyper_gradient(PtPb, extra, 1.0);
      st.gradient.segment(k0, active) = precond() * ga;
      if (set.learn_inducing)
        for (Index j = 0; j < d; ++j) st.gradient.segment(k0 + n_basis() + j * n_basis(), active) = gA.col(j);
    }
    return st;
  }

  // ---- the optimal mean (Gaussian likelihood) ---------------------------------------------
  // With a Gaussian likelihood the ELBO is quadratic in theta = [m; a]: the
  // KL's mean part is theta' Lambda theta / 2 with Lambda = [I, C; C', K_AA]
  // (C = L^{-1} K_ZA in the gp block's rows), the data part
  // -(theta' G theta - 2 theta' b) / (2 sigma^2) with G = Phi~' W Phi~,
  // b = Phi~' W (y - o) and Phi~ = [Phi, k(x, A)] (W: the precision weights).
  // So at the current hyperparameters, bases and inducing inputs the optimal
  // mean solves (Lambda + G / sigma^2) theta = b / sigma^2; q's covariance
  // does not enter.  MeanSystem holds Lambda, G and b (lower triangles), which
  // do not depend on the noise: one pass over the rows serves every noise
  // value.
  struct MeanSystem {
    MatrixXd Lambda, G;
    VectorXd b;
  };
  // The pass: rows kSolveRows at a time (their features in parallel by
  // blocks); each tile of G's lower triangle is summed by one thread with the
  // rows in order, so the result is bit-identical for any thread count.
  // Memory O(T^2 + kSolveRows T), time O(n T^2) for T = M + M_a.  (Not
  // DataPass::weighted_gram_lower(): it needs the features of all rows at once
  // and keeps one T x T sum per group of rows, too much at T in the thousands.)
  // by_value(): the same over the D distinct values of the gp component,
  // kSolveRows values at a time, time O(D M_a^2) for the bases' blocks.
  MeanSystem mean_system() const {
    const ParallelFor& pfor = *pfor_;
    const Kernel& ker = kernel();
    const ComponentPrior& pr = prior_[cg_];
    const Index Mt = total_size(), Ma = active, T = Mt + Ma, Mg = comps[cg_].size(), og = offset_of(cg_);
    const MatrixXd As = ker.scale(A.topRows(Ma));
    MeanSystem s;
    s.Lambda = MatrixXd::Zero(T, T);
    s.Lambda.topLeftCorner(Mt, Mt).diagonal().setOnes();
    if (Ma > 0) {
      MatrixXd KZA, D;
      ker.cross(pr.Zs, As, KZA, D);
      pr.L.triangularView<Eigen::Lower>().solveInPlace(KZA);
      s.Lambda.block(Mt, og, Ma, Mg) = KZA.transpose();
      const Index nblk = (Ma + kBlock - 1) / kBlock;
      pfor(static_cast<std::size_t>(nblk), [&](std::size_t b0, std::size_t b1) {
        MatrixXd K, Db;
        for (std::size_t b = b0; b < b1; ++b) {
          const Index i0 = static_cast<Index>(b) * kBlock, ni = std::min(kBlock, Ma - i0);
          ker.cross(As.middleRows(i0, ni), As.topRows(i0 + ni), K, Db);
          s.Lambda.block(Mt + i0, Mt, ni, i0 + ni) = K;
        }
      });
    }
    s.G = MatrixXd::Zero(T, T);
    s.b = VectorXd::Zero(T);
    // G's lower triangle from columns `first`.. of G: += U' U over the rows of
    // U (columns first..T-1), by tiles, each summed by one thread
    const auto add_gram = [&](const MatrixXd& U, Index first) {
      const Index ntile = (T - first + kBlock - 1) / kBlock;
      std::vector<std::pair<Index, Index>> tiles;
      for (Index I = 0; I < ntile; ++I)
        for (Index J = 0; J <= I; ++J) tiles.emplace_back(I, J);
      pfor(tiles.size(), [&](std::size_t t0, std::size_t t1) {
        for (std::size_t t = t0; t < t1; ++t) {
          const Index I = tiles[t].first * kBlock, J = tiles[t].second * kBlock;
          const Index ni = std::min(kBlock, T - first - I), nj = std::min(kBlock, T - first - J);
          s.G.block(first + I, first + J, ni, nj).noalias() += U.middleCols(I, ni).transpose() * U.middleCols(J, nj);
        }
      });
    };
    if (by_value()) {
      // all rows through the values of the gp component: Phi' W Phi and
      // Phi' W (y - o) from the discretised sums; the bases' blocks value by
      // value, E = k(x, A) with the counts n and sums wy by value:
      // Phi' W E = H' E (features_by_value()), E' diag(n) E, E' wy
      s.G.topLeftCorner(Mt, Mt) = data_.gaussian_gram(pfor);
      s.b.head(Mt) = data_.gaussian_b(pfor);
      if (Ma == 0) return s;
      const DiscreteComponent& dc = data_.discrete_component(cg_);
      const MatrixXd H = data_.features_by_value(cg_, pfor);
      const MatrixXd Xv = pass_inputs(nullptr);
      MatrixXd E;
      for (Index v0 = 0; v0 < Xv.rows(); v0 += static_cast<Index>(kSolveRows)) {
        const Index nv = std::min(static_cast<Index>(kSolveRows), Xv.rows() - v0);
        E.resize(nv, Ma);
        blocked_for(static_cast<std::size_t>(nv), pfor, [&](std::size_t begin, std::size_t end) {
          MatrixXd K, D;
          const Index i0 = static_cast<Index>(begin), nb = static_cast<Index>(end - begin);
          ker.cross(Xv.middleRows(v0 + i0, nb), As, K, D);
          E.middleRows(i0, nb) = K;
        });
        s.b.tail(Ma).noalias() += E.transpose() * dc.wy.segment(v0, nv);
        s.G.block(Mt, 0, Ma, Mt).noalias() += E.transpose() * H.middleRows(v0, nv);
        E.array().colwise() *= dc.count.segment(v0, nv).array().max(0.0).sqrt();
        add_gram(E, Mt);
      }
      return s;
    }
    MatrixXd U;
    VectorXd r, sw;
    for (std::size_t r0 = 0; r0 < n(); r0 += kSolveRows) {
      const std::size_t r1 = std::min(n(), r0 + kSolveRows), nr = r1 - r0;
      U.resize(static_cast<Index>(nr), T);
      r.resize(static_cast<Index>(nr));
      sw.resize(static_cast<Index>(nr));
      blocked_for(nr, pfor, [&](std::size_t begin, std::size_t end) {
        Block b;
        gather(b, nullptr, r0 + begin, r0 + end);
        features(b);
        const Index i0 = static_cast<Index>(begin), nb = b.X.rows();
        U.block(i0, 0, nb, Mt) = b.Phi;
        if (Ma > 0) {
          MatrixXd K, D;
          ker.cross(ker.scale(component_columns(comps[cg_], b.X)), As, K, D);
          U.block(i0, Mt, nb, Ma) = K;
        }
        for (Index i = 0; i < nb; ++i) {
          const double w = std::max(0.0, b.w(i));
          r(i0 + i) = w * (b.y(i) - b.o(i));
          sw(i0 + i) = std::sqrt(w);
        }
      });
      s.b.noalias() += U.transpose() * r;
      U.array().colwise() *= sw.array();  // rows of Phi~ times sqrt(w)
      add_gram(U, 0);
    }
    return s;
  }
  // Sets a to its part of the optimal mean at the current noise variance;
  // false (nothing changed) when the system cannot be solved.  Close mean
  // bases make H singular in directions that leave the mean function
  // unchanged (up to rounding): then a relative jitter from 1e-12 of the mean
  // diagonal, times 100 up to 1e-4, picks one optimum.  q's mean follows by a
  // full natural step (the caller's).
  bool solve_mean(const MeanSystem& s) {
    const double nv = lik.noise_var();
    MatrixXd H = s.Lambda + s.G / nv;
    const double scale = H.diagonal().mean();
    double added = 0;
    for (double jitter = 0; jitter <= 1e-4 * scale; jitter = jitter > 0 ? 100 * jitter : 1e-12 * scale) {
      H.diagonal().array() += jitter - added;
      added = jitter;
      const Eigen::LLT<MatrixXd> llt(H.selfadjointView<Eigen::Lower>());
      if (llt.info() != Eigen::Success) continue;
      const VectorXd theta = llt.solve(s.b / nv);
      if (!theta.allFinite()) return false;
      a0.head(active) = theta.tail(active) / precond();
      return true;
    }
    return false;
  }

  // Gaussian likelihood after minibatches: the optimal mean (solve_mean())
  // and q's optimum, alternating with the noise variance that maximises the
  // ELBO given them (closed form: the weighted mean of (y - mu)^2 + s2 over the
  // rows of positive weight), at most kNoiseRounds times, until the log noise
  // variance moves less than 1e-3.  (The noise learned beside Adam's
  // coefficients a absorbs what their unfinished fit leaves, so it is refitted
  // with the mean it goes with.)  Each round raises the ELBO.
  void solve_mean_and_noise() {
    double rows = 0;
    for (std::size_t i = 0; i < n(); ++i) rows += w_(static_cast<Index>(i)) > 0 ? 1.0 : 0.0;
    const MeanSystem sys = mean_system();
    for (int k = 0; k < kNoiseRounds; ++k) {
      if (!solve_mean(sys)) return;
      const VectorXd shift = basis_pass(nullptr, *pfor_);
      full_natural_step(1.0, &shift);
      if (!set.learn_noise || k + 1 == kNoiseRounds || rows <= 0) return;
      // the expected log-likelihood summed is -rows/2 log(2 pi nv) - R / (2 nv)
      // (weights aside); its derivative in log_noise gives R
      Eval ev;
      objective(nullptr, 1.0, false, true, 0, ev, &shift);
      const double nv = lik.noise_var(), ex = std::exp(lik.log_noise);
      const double R = nv * nv * 2.0 * ev.acc.dlognoise / ex + nv * rows;
      const double target = std::log(std::max(R / rows - Likelihood::kNoiseFloor, 1e-12));
      const double next = Likelihood::clamp_log_noise(target);
      if (std::abs(next - lik.log_noise) < 1e-3) return;
      lik.log_noise = next;
    }
  }

  // ---- the fit (fit_loop.hpp) ---------------------------------------------------------
  template <class Monitor>
  FitInfo fit(const ParallelFor& pfor, Rng& rng, Monitor monitor) {
    rng_ = &rng;
    Sampler sampler = begin_fit(pfor, rng);
    use_values(full_ || dopt.closed_form);
    if (dopt.closed_form && lik.family == Family::gaussian) return closed_form_fit();
    if (full_ && opt.lbfgs) return fit_profile(*this, set, static_cast<double>(n()), monitor);
    return fit_loop(*this, sampler, set, monitor, dopt.rate_decay);
  }

  // Gaussian likelihood with the kernel, noise and inducing inputs held
  // fixed: the ELBO's only free parts are a and q, whose joint optimum is
  // closed form.  All mean bases are placed (at distinct rows in a random
  // order), a solves the mean system (mean_system(), solve_mean()); then
  // finish() as after iterations: q takes one natural step of size 1 on all
  // rows, and the fit reports the exact ELBO and its gradient in a (zero up
  // to rounding: a stationary point).
  FitInfo closed_form_fit() {
    bool fixed = !set.learn_noise && !set.learn_inducing;
    for (const Component& k : comps) fixed = fixed && !k.learn_kernel;
    if (!fixed) throw std::invalid_argument("the closed-form decoupled fit needs the kernel, noise and inducing inputs fixed");
    FitInfo info;
    auto clock = Clock::now();
    start();
    refresh_prior();
    info.seconds_init = seconds_since(clock);
    clock = Clock::now();
    if (!solve_mean(mean_system())) throw std::runtime_error("the system of the optimal mean could not be solved");
    info.seconds_iter = seconds_since(clock);
    clock = Clock::now();
    info.converged = true;
    info.stop = "closed form at the given kernel, noise and inducing inputs";
    finish(info);
    info.q_change = 0;  // (q is at its optimum: another step of size 1 leaves it)
    info.trace.push_back(info.objective + info.log_prior);
    info.seconds_final = seconds_since(clock);
    return info;
  }

  // ---- the engine interface of fit_profile() (all rows; opt.lbfgs) ----------------------
  // All mean bases are placed at the start; L-BFGS moves the hyperparameters,
  // the noise, the coefficients a (and the bases and inducing inputs while
  // set.learn_inducing) with q optimal at each value.
  void start() {
    Sampler all(Sampler::Mode::full, n(), 0, dummy_rng_);
    initialise(all);
    while (active < n_basis() && next_ < order_.size()) grow();
  }
  void bounds(VectorXd& lo, VectorXd& hi) const {
    const Index k = NaturalQ::n_theta();
    lo = VectorXd::Constant(n_theta(), -std::numeric_limits<double>::infinity());
    hi = VectorXd::Constant(n_theta(), std::numeric_limits<double>::infinity());
    VectorXd l, h;
    NaturalQ::bounds(l, h);
    lo.head(k) = l.head(k);
    hi.head(k) = h.head(k);
  }
  // q optimal for the current parameters (Gaussian: one natural step of size
  // 1; otherwise optimise_q()), then the exact ELBO on all rows and
  // its gradient.
  Step profile() {
    refresh_prior();
    const VectorXd shift = basis_pass(nullptr, *pfor_);
    VectorXd m0 = m;
    if (lik.family == Family::gaussian) {
      full_natural_step(1.0, &shift);
    } else {
      Eval last;  // (no gradient asked: the gradient pass below is another objective())
      bool has_gradient = false;
      m0 = optimise_q<Eval>(
          [&](Eval& e, bool) { return objective(nullptr, 1.0, false, true, 0, e, &shift).objective; },
          [this](const Eval& e, double rho) { shifted_step(e, 1.0, rho); },
          last, has_gradient);
    }
    q_change_ = (m - m0).lpNorm<Eigen::Infinity>();
    Eval ev;
    Step st = objective(nullptr, 1.0, true, true, 0, ev, &shift);
    st.objective += log_prior(&st.gradient);
    return st;
  }
  void finish_profile(FitInfo& info) {
    basis_mean_ = rows_mean(basis_pass(nullptr, *pfor_));
    NaturalQ::finish_profile(info);
  }

  // The executor of objective() outside fit() (kept by value).
  void set_executor(ParallelFor pfor) {
    own_pfor_ = std::move(pfor);
    pfor_ = &own_pfor_;
  }

  Snapshot snapshot() const { return snapshot_with(pack()); }
  void restore(const Snapshot& s) {
    unpack(s.theta);
    restore_q(s);
  }

  void initialise(const Sampler& sampler) {
    initial_q(sampler);
    // candidate rows for the mean bases: a random order of the rows, distinct inputs only
    order_.resize(n());
    for (std::size_t i = 0; i < n(); ++i) order_[i] = i;
    shuffle(order_, *rng_);
    next_ = 0;
    seen_.clear();
    for (Index i = 0; i < active; ++i) seen_.insert(row_key(A.row(i)));
  }

  Step step(const Sampler& sampler, bool grad) {
    grow();
    const Index start = active > 0 ? static_cast<Index>(uniform_index(*rng_, static_cast<std::size_t>(active))) : 0;
    Step st = objective(sampler.rows(), sampler.scale(), grad, false, start, ev_);
    st.objective += log_prior(grad ? &st.gradient : nullptr);
    if (grad) last_gradient_ = st.gradient;
    return st;
  }

  void update(const Step&) {
    shifted_step(ev_, ev_.scale, rho_);
    refresh();
  }

  // The natural step of size rho towards the target of evaluation `ev` (at
  // scale s), with the linear KL term's shift of the prior mean of the gp
  // block: h*_g = s (r - 2 Q m)_g - c.
  void shifted_step(const Eval& ev, double s, double rho) {
    natural_step(ev.acc, s, rho);
    h.segment(offset_of(cg_), comps[cg_].size()) -= rho * ev.c;
  }

  // The natural step on all rows (size rho) at the current state
  // (`shift`: k(x_i, A) a of all rows when known).
  void full_natural_step(double rho, const VectorXd* shift = nullptr) {
    Eval ev;
    objective(nullptr, 1.0, false, true, 0, ev, shift);
    shifted_step(ev, 1.0, rho);
    refresh();
  }

  // Gaussian: one full-data natural step of size 1 makes q optimal for the
  // final mean bases and hyperparameters.  Other likelihoods after
  // minibatches: damped full-data steps (at most 10).  Then the exact ELBO
  // on all rows, and its gradient when the stopping rule was met (a fit
  // stopped by the iteration limit reports the last minibatch estimate:
  // the exact one costs two more passes over rows and bases).
  void finish(FitInfo& info) {
    if (dopt.solve_mean && !dopt.closed_form && lik.family == Family::gaussian && !full_) solve_mean_and_noise();
    const VectorXd shift = basis_pass(nullptr, *pfor_);  // unchanged by steps on q
    basis_mean_ = rows_mean(shift);
    const VectorXd m0 = m;
    if (lik.family == Family::gaussian) {
      full_natural_step(1.0, &shift);
    } else if (!full_) {
      settle_q<Eval>([&](Eval& ev) { return objective(nullptr, 1.0, false, true, 0, ev, &shift).objective; },
                     [this](const Eval& ev, double rho) { shifted_step(ev, 1.0, rho); });
    }
    info.q_change = (m - m0).lpNorm<Eigen::Infinity>();
    const bool grad = n_theta() > 0 && (info.converged || last_gradient_.size() == 0);
    Eval ev;
    Step st = objective(nullptr, 1.0, grad, true, 0, ev, &shift);
    info.objective = st.objective;
    info.log_prior = log_prior();
    if (grad) {
      info.gradient = st.gradient;
      log_prior(&info.gradient);
    } else {
      info.gradient = last_gradient_;
    }
  }

  // The average of k(x_i, A) a over the rows (after fit()).
  double basis_data_mean() const { return basis_mean_; }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  static constexpr Index kBlock = 256;  // bases per block
  static constexpr Index kRows = 2048;  // rows per block inside a block of bases
  static constexpr std::size_t kSolveRows = 2048;  // rows per pass of solve_mean()
  static constexpr int kNoiseRounds = 6;           // solve_mean_and_noise()
  std::size_t cg_ = kNone;
  Rng* rng_ = nullptr;
  ParallelFor own_pfor_;
  Eval ev_;
  VectorXd last_gradient_;
  double basis_mean_ = 0;
  std::vector<std::size_t> order_;
  std::size_t next_ = 0;
  std::set<std::vector<double>> seen_;

  // A Gaussian fit over all rows (`all`) with opt.discrete discretises the
  // data, and keeps it when the gp component has at most half as many
  // distinct values as there are rows (else the passes over the values
  // would not pay for their products over pairs of values).
  void use_values(bool all) {
    if (lik.family != Family::gaussian || data_.use_discrete(all) == 0) return;
    if (2 * static_cast<std::size_t>(data_.discrete_component(cg_).X.rows()) > n()) data_.drop_discrete();
  }

  static std::vector<double> row_key(const Eigen::Ref<const Eigen::RowVectorXd>& r) {
    return std::vector<double>(r.data(), r.data() + r.size());
  }

  // Algorithm 1's growth: up to `add` new bases at rows not used yet (distinct inputs).
  void grow() {
    const Component& k = comps[cg_];
    Index added = 0;
    while (active < n_basis() && added < std::max<Index>(1, dopt.add) && next_ < order_.size()) {
      const Index r = static_cast<Index>(order_[next_++]);
      Eigen::RowVectorXd x(k.dim());
      for (Index j = 0; j < k.dim(); ++j) x(j) = X_(r, k.cols[j]);
      if (!seen_.insert(row_key(x)).second) continue;
      A.row(active) = x;
      a0(active) = 0;
      ++active;
      ++added;
    }
  }
};

}  // namespace scalegp
