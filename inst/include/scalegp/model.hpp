// The model every engine shares: an additive latent predictor
//   f(x) = sum_c f_c(x_[c]) + offset
// whose components (GPs with their own inputs and inducing points, factor
// random effects, parametric blocks; components.hpp) have whitened inducing
// variables u_c = L_c v_c, v_c ~ N(0, I).  A row's predictor is phi' v +
// offset with whitened features phi and a prior variance
// resid = k(x, x) - |phi|^2 that the inducing points do not explain.
// This class holds the data, the components and their hyperparameters, the
// features of a block of rows, and the gradient of an objective through the
// features and the whitening.  What the engines put on v lives elsewhere
// (the Gaussian q of gaussian_q.hpp for the variational and EP engines).
#pragma once
#include "components.hpp"
#include "inducing.hpp"
#include "parallel.hpp"
#include "settings.hpp"
#include <limits>
#include <vector>

namespace scalegp {

// Per-block work space and derived quantities (rows of one chunk).
struct Block {
  MatrixXd X, Phi;
  VectorXd y, w, o, resid;
  std::vector<ComponentRows> rows;  // per component
};

// Data part of the hyperparameter gradient, per component.
struct GradAccum {
  std::vector<VectorXd> g_kern;  // d/d[log var, log ls]
  std::vector<MatrixXd> g_Z;     // d/dZ
  GradAccum& operator+=(const GradAccum& a) {
    for (std::size_t c = 0; c < g_kern.size(); ++c) {
      g_kern[c] += a.g_kern[c];
      g_Z[c] += a.g_Z[c];
    }
    return *this;
  }
};

class AdditiveModel {
 public:
  std::vector<Component> comps;
  Settings set;

  AdditiveModel(std::vector<Component> components, Settings settings, const double* X, std::size_t n,
                std::size_t p, const double* y, const double* w, const double* offset)
      : comps(std::move(components)), set(settings), X_(X, n, p), y_(y, n), w_(w, n), o_(offset, n) {
    offsets_.push_back(0);
    for (const auto& c : comps) offsets_.push_back(offsets_.back() + c.size());
    refresh_prior();
  }

  // Stops moving the inducing inputs (they leave the packed parameters);
  // false when they were not moving.
  bool fix_inducing() {
    if (!set.learn_inducing) return false;
    set.learn_inducing = false;
    return true;
  }

  Index total_size() const { return offsets_.back(); }
  std::size_t n() const { return static_cast<std::size_t>(X_.rows()); }
  Index offset_of(std::size_t c) const { return offsets_[c]; }
  // The rows: inputs (n x p), responses, weights and offsets.
  const Eigen::Map<const MatrixXd>& x_rows() const { return X_; }
  const Eigen::Map<const VectorXd>& y_rows() const { return y_; }
  const Eigen::Map<const VectorXd>& w_rows() const { return w_; }
  const Eigen::Map<const VectorXd>& o_rows() const { return o_; }

  // Cholesky factors of the prior blocks (after a hyperparameter change).
  void refresh_prior() {
    prior_.clear();
    for (const Component& k : comps) prior_.push_back(component_prior(k, set.rel_jitter));
    ++prior_version_;
  }
  // The map from component c's whitened v_c to its weights, u_c = W v_c:
  // the Cholesky factor of K_uu (inducing kinds), the diagonal of the
  // weights' prior sds (hilbert: the sines' weights; factor: the levels'
  // effects), empty for a linear component (its scale is fixed).
  MatrixXd whitening(std::size_t c) const {
    const Component& k = comps[c];
    if (k.has_inducing()) return prior_[c].L;
    if (k.kind == Kind::hilbert) return prior_[c].sd.asDiagonal();
    if (k.kind == Kind::factor) return MatrixXd(VectorXd::Constant(k.levels, std::sqrt(k.kernel.variance())).asDiagonal());
    return MatrixXd();
  }

  // Changes whenever the features of a row may have changed.
  long prior_version() const { return prior_version_; }

  // Components and priors at other hyperparameters (see features()).
  struct Hyper {
    std::vector<Component> comps;
    std::vector<ComponentPrior> prior;
  };
  Hyper at(const VectorXd& theta) const {
    Hyper o{comps, {}};
    unpack_into(o.comps, theta);
    for (const Component& k : o.comps) o.prior.push_back(component_prior(k, set.rel_jitter));
    return o;
  }

  // Whitened features Phi = [phi_1 | ... | phi_C] of the rows in `b.X`, and
  // resid = the prior variance the inducing points do not explain; at other
  // hyperparameters when `other` (made by at()) is given.
  void features(Block& b, const Hyper* other = nullptr) const {
    const std::vector<Component>& cs = other ? other->comps : comps;
    const std::vector<ComponentPrior>& pr = other ? other->prior : prior_;
    const Index nb = b.X.rows();
    b.Phi.resize(nb, total_size());
    b.resid = VectorXd::Zero(nb);
    b.rows.resize(cs.size());
    for (std::size_t c = 0; c < cs.size(); ++c) {
      component_block(cs[c], pr[c], b.X, b.Phi.middleCols(offsets_[c], cs[c].size()), b.rows[c]);
      b.resid += b.rows[c].resid;
    }
  }

  // The columns of X (all columns of the data) that component k reads.
  static MatrixXd component_columns(const Component& k, const MatrixXd& X) {
    MatrixXd Xc(X.rows(), k.dim());
    for (Index j = 0; j < k.dim(); ++j) Xc.col(j) = X.col(k.cols[j]);
    return Xc;
  }
  // Features of one component at rows X (all columns of the data) into Phic,
  // its unexplained prior variance into r.resid.
  static void component_block(const Component& k, const ComponentPrior& p, const MatrixXd& X,
                              Eigen::Ref<MatrixXd> Phic, ComponentRows& r) {
    const Index nb = X.rows();
    const MatrixXd Xc = component_columns(k, X);
    r.resid = VectorXd::Zero(nb);
    component_features(k, p, Xc, Phic, r.resid, r);
    if (k.by_col >= 0) {  // f(x) z: features times z, prior variance times z^2
      r.by = X.col(k.by_col);
      Phic.array().colwise() *= r.by.array();
      r.resid.array() *= r.by.array().square();
    }
  }
  void component_block(std::size_t c, const MatrixXd& X, Eigen::Ref<MatrixXd> Phic, ComponentRows& r) const {
    component_block(comps[c], prior_[c], X, Phic, r);
  }
  // The lower triangle of Phic' diag(w) Phic at rows X (all columns of the
  // data) from the component's structure (component_gram_lower(); a by
  // column scales the weights by its square); false when it has none.
  bool component_gram_lower(std::size_t c, const MatrixXd& X, const VectorXd& w, MatrixXd& G) const {
    const Component& k = comps[c];
    const MatrixXd Xc = component_columns(k, X);
    if (k.by_col < 0) return scalegp::component_gram_lower(k, prior_[c], Xc, w, G);
    return scalegp::component_gram_lower(k, prior_[c], Xc, w.cwiseProduct(X.col(k.by_col).cwiseAbs2()), G);
  }
  // diag(Phic S Phic') at rows X (all columns of the data) from the
  // component's structure (component_quadratic_diag(); a by column scales
  // it by its square); false when it has none.
  template <class ForGroups>
  bool component_quadratic_diag(std::size_t c, const MatrixXd& X, const MatrixXd& S, VectorXd& v,
                                ForGroups for_groups) const {
    const Component& k = comps[c];
    if (!scalegp::component_quadratic_diag(k, prior_[c], component_columns(k, X), S, v, for_groups)) return false;
    if (k.by_col >= 0) v.array() *= X.col(k.by_col).array().square();
    return true;
  }
  // The product form of component c's features at rows X (all columns of
  // the data; a by column as the rows' scale) when it has one
  // (component_tensor()).
  bool component_tensor(std::size_t c, const MatrixXd& X, HilbertTensor& t) const {
    const Component& k = comps[c];
    return scalegp::component_tensor(k, prior_[c], component_columns(k, X),
                                     k.by_col >= 0 ? VectorXd(X.col(k.by_col)) : VectorXd(), t);
  }
  // Phic m_c at rows X (all columns of the data) without the features
  // (component_mean()).
  VectorXd component_block_mean(std::size_t c, const MatrixXd& X, const VectorXd& mc) const {
    const Component& k = comps[c];
    ComponentRows r;
    VectorXd mean = component_mean(k, prior_[c], component_columns(k, X), mc, r);
    if (k.by_col >= 0) mean.array() *= X.col(k.by_col).array();
    return mean;
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

  // ---- hyperparameters ----------------------------------------------------------
  GradAccum make_grad() const {
    GradAccum a;
    for (const auto& k : comps) {
      a.g_kern.push_back(VectorXd::Zero(k.n_kernel_params()));
      a.g_Z.push_back(MatrixXd::Zero(k.has_inducing() ? k.size() : 0, k.has_inducing() ? k.dim() : 0));
    }
    return a;
  }

  // Adds the data part of the gradient of an objective whose adjoints w.r.t.
  // the features of block b are Phibar and w.r.t. its prior variances gam.
  void row_gradient(const Block& b, const MatrixXd& Phibar, const VectorXd& gam, GradAccum& acc) const {
    for (std::size_t c = 0; c < comps.size(); ++c)
      component_gradient(c, b.rows[c], Phibar.middleCols(offsets_[c], comps[c].size()), gam, acc.g_kern[c],
                         acc.g_Z[c]);
  }

  // The same for component c alone, at rows r with feature adjoints Phibar_c.
  void component_gradient(std::size_t c, const ComponentRows& r, const Eigen::Ref<const MatrixXd>& Phibar_c,
                          const VectorXd& gam, Eigen::Ref<VectorXd> g_kern, MatrixXd& g_Z) const {
    const Component& k = comps[c];
    if (!k.learn_kernel && !(k.has_inducing() && set.learn_inducing)) return;
    MatrixXd* gZ = k.has_inducing() && set.learn_inducing ? &g_Z : nullptr;
    if (k.by_col < 0) {
      component_row_gradient(k, prior_[c], r, Phibar_c, gam, g_kern, gZ);
    } else {  // through the scaling by z: adjoints of the unscaled features and variances
      const VectorXd& z = r.by;
      const MatrixXd Pb = z.asDiagonal() * Phibar_c;
      const VectorXd gz = gam.cwiseProduct(z.cwiseAbs2());
      component_row_gradient(k, prior_[c], r, Pb, gz, g_kern, gZ);
    }
  }

  // Whether the gradient of component c reads its features' adjoint (it
  // learns something, and of a kind whose row gradient reads it:
  // scalegp::reads_feature_adjoint()); when not, component_gradient() takes
  // a Phibar_c of no columns.
  bool reads_feature_adjoint(std::size_t c) const {
    const Component& k = comps[c];
    return (k.learn_kernel || (k.has_inducing() && set.learn_inducing)) && scalegp::reads_feature_adjoint(k);
  }

  // Number of kernel hyperparameters and inducing coordinates being learned.
  Index n_hyper() const {
    Index k = 0;
    for (const auto& c : comps)
      k += (c.learn_kernel ? c.n_kernel_params() : 0) + (c.has_inducing() && set.learn_inducing ? c.Z.size() : 0);
    return k;
  }

  VectorXd hyper() const {
    VectorXd th(n_hyper());
    pack_hyper(th);
    return th;
  }

  void pack_hyper(Eigen::Ref<VectorXd> th) const {
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
  }

  // Log density of the priors of the hyperparameters (components.hpp), in
  // the packed (log) parameters, and its gradient added to g.head(n_hyper())
  // when g is non-null:
  //   log variance v:   log p = -e^v / (2 s^2) + v / 2   (sd ~ half-normal(0, s^2))
  //   log lengthscale t: log p = -a t - b e^{-t}         (lengthscale ~ inverse-gamma(a, b))
  // (up to constants).  Zero without priors.
  double log_prior(VectorXd* g = nullptr) const {
    double lp = 0;
    Index i = 0;
    for (const auto& c : comps) {
      if (c.learn_kernel && c.has_kernel()) {
        const Kernel& k = c.hyper();
        if (c.sd_prior > 0) {
          const double s2 = c.sd_prior * c.sd_prior, e = std::exp(k.log_var);
          lp += -e / (2 * s2) + 0.5 * k.log_var;
          if (g) (*g)(i) += -e / (2 * s2) + 0.5;
        }
        ++i;
        if (c.kind != Kind::factor)
          for (Index j = 0; j < k.log_ls.size(); ++j, ++i) {
            if (c.ls_a.size() == 0) continue;
            const double t = k.log_ls(j), a = c.ls_a(j), b = c.ls_b(j);
            lp += -a * t - b * std::exp(-t);
            if (g) (*g)(i) += -a + b * std::exp(-t);
          }
      }
      if (c.has_inducing() && set.learn_inducing) i += c.Z.size();
    }
    return lp;
  }

  // Bounds of the packed hyperparameters (those unpack_hyper() clamps to).
  void hyper_bounds(Eigen::Ref<VectorXd> lo, Eigen::Ref<VectorXd> hi) const {
    Index i = 0;
    const double inf = std::numeric_limits<double>::infinity();
    for (const auto& c : comps) {
      if (c.learn_kernel && c.has_kernel()) {
        lo(i) = -14.0;
        hi(i++) = 14.0;
        if (c.kind != Kind::factor)
          for (Index j = 0; j < c.hyper().log_ls.size(); ++j) {
            lo(i) = c.ls_lower(j);
            hi(i++) = 7.0;
          }
      }
      if (c.has_inducing() && set.learn_inducing)
        for (Index j = 0; j < c.Z.size(); ++j) {
          lo(i) = -inf;
          hi(i++) = inf;
        }
    }
  }

  // Sets the hyperparameters (log variances and lengthscales clamped to
  // [-14, 14] and [-7, 7], or a component's own lower bound of the log
  // lengthscales, Component::ls_lower()); the prior is refreshed separately.
  void unpack_hyper(const Eigen::Ref<const VectorXd>& th) { unpack_into(comps, th); }

  void unpack_into(std::vector<Component>& cs, const Eigen::Ref<const VectorXd>& th) const {
    Index i = 0;
    for (auto& c : cs) {
      if (c.learn_kernel && c.has_kernel()) {
        Kernel& k = c.hyper();
        k.log_var = std::min(14.0, std::max(-14.0, th(i++)));
        if (c.kind != Kind::factor)
          for (Index j = 0; j < k.log_ls.size(); ++j) k.log_ls(j) = std::min(7.0, std::max(c.ls_lower(j), th(i++)));
      }
      if (c.has_inducing() && set.learn_inducing)
        for (Index j = 0; j < c.Z.size(); ++j) c.Z.data()[j] = th(i++);
    }
  }

  // Gradient w.r.t. the packed hyperparameters, given the data statistics of
  // a batch with scale s = N / |batch|: PtPb = Phi' Phibar (summed over the
  // rows; it carries the dependence through the whitening L) and the row parts.
  VectorXd hyper_gradient(const MatrixXd& PtPb, const GradAccum& acc, double s) const {
    VectorXd gr(n_hyper());
    Index i = 0;
    for (std::size_t c = 0; c < comps.size(); ++c) {
      const Component& k = comps[c];
      VectorXd gk = s * acc.g_kern[c];
      MatrixXd gZ = s * acc.g_Z[c];
      const Index M = k.size(), o = offsets_[c];
      component_prior_gradient(k, prior_[c], s * PtPb.block(o, o, M, M).transpose(), gk, gZ);
      if (k.learn_kernel)
        for (Index j = 0; j < gk.size(); ++j) gr(i++) = gk(j);
      if (k.has_inducing() && set.learn_inducing)
        for (Index j = 0; j < gZ.size(); ++j) gr(i++) = gZ.data()[j];
    }
    return gr;
  }

 protected:
  Eigen::Map<const MatrixXd> X_;
  Eigen::Map<const VectorXd> y_, w_, o_;
  std::vector<Index> offsets_;
  std::vector<ComponentPrior> prior_;
  long prior_version_ = 0;
};

}  // namespace scalegp
