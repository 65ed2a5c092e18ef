// The whitened Gaussian posterior that the variational and EP engines put on
// the inducing variables of the additive model (model.hpp): one coupled
// q(v) = N(m, S) over all components, held in natural parameters
// (precision P = S^{-1}, shift h = P m), and the predictions it implies.
// The engines differ only in how they set P, h and the hyperparameters:
// natural-gradient steps (natural_q.hpp, for svgp.hpp and decoupled.hpp) or EP
// sites (ep.hpp).
#pragma once
#include "model.hpp"

namespace scalegp {

class WhitenedGaussianModel : public AdditiveModel {
 public:
  VectorXd h, m;  // natural shift and mean of q(v)
  MatrixXd P, S;  // precision and covariance of q(v)

  WhitenedGaussianModel(std::vector<Component> components, Settings settings, const double* X, std::size_t n,
                        std::size_t p, const double* y, const double* w, const double* offset)
      : AdditiveModel(std::move(components), settings, X, n, p, y, w, offset) {
    const Index Mt = total_size();
    P = MatrixXd::Identity(Mt, Mt);
    h = VectorXd::Zero(Mt);
    refresh_q();
  }

  // Moments of q from its natural parameters (after a change of P, h).  A
  // precision that is not positive definite is an invalid state (a diverged
  // step or an invalid EP site), never patched with jitter: it throws, and
  // the fit loop undoes the step that made it.
  void refresh_q() {
    Eigen::LLT<MatrixXd> llt(P);
    if (llt.info() != Eigen::Success || !P.allFinite())
      throw numerical_error("the posterior precision is not positive definite");
    LP_ = llt.matrixL();
    S = chol_inverse(LP_);
    m = S * h;
    logdet_P_ = logdet_chol(LP_);
  }
  void refresh() {
    refresh_prior();
    refresh_q();
  }
  // q's moments as refresh_q() left them, to be put back together with the
  // natural parameters they came from (restore_moments(): no factorisation,
  // which costs O(M^3) for M weights).
  struct Moments {
    VectorXd m;
    MatrixXd S, LP;
    double logdet_P = 0;
  };
  Moments moments() const { return {m, S, LP_, logdet_P_}; }
  void restore_moments(const Moments& q) {
    m = q.m;
    S = q.S;
    LP_ = q.LP;
    logdet_P_ = q.logdet_P;
  }
  // The moments of q computed elsewhere (by the master of a distributed
  // fit): mean, covariance and the Cholesky factor of the precision.
  const MatrixXd& chol_P() const { return LP_; }
  void set_moments(VectorXd mean, MatrixXd cov, MatrixXd chol_precision) {
    m = std::move(mean);
    S = std::move(cov);
    LP_ = std::move(chol_precision);
  }

  // KL(q || N(0, I)).
  double kl() const {
    return 0.5 * (S.trace() + m.squaredNorm() - static_cast<double>(total_size()) + logdet_P_);
  }
  double logdet_P() const { return logdet_P_; }

  // Features phi(x) - center (component by component; times z for a `by`
  // component: f(x) z - phibar z).
  void center_features(Block& b, const VectorXd& center) const {
    for (std::size_t c = 0; c < comps.size(); ++c) {
      const Index o = offsets_[c], M = comps[c].size();
      if (comps[c].by_col < 0)
        b.Phi.middleCols(o, M).rowwise() -= center.segment(o, M).transpose();
      else
        b.Phi.middleCols(o, M) -= b.rows[c].by * center.segment(o, M).transpose();
    }
  }

  // Column means of the features over all rows of the data.
  VectorXd feature_means(const ParallelFor& pfor) const {
    const VectorXd sum = deterministic_reduce<VectorXd>(
        n(), pfor, [this] { return VectorXd::Zero(total_size()); },
        [&](VectorXd& acc, std::size_t begin, std::size_t end) {
          Block b;
          gather(b, nullptr, begin, end);
          features(b);
          acc += b.Phi.colwise().sum().transpose();
        });
    return sum / static_cast<double>(std::max<std::size_t>(1, n()));
  }

  // Variance of the predictor beyond the Nystrom residual: rows of Phi S Phi'.
  // Computed as |L_P^{-1} phi|^2 (a triangular solve, half the flops of Phi S).
  VectorXd q_variance(const MatrixXd& Phi) const {
    MatrixXd W = Phi;
    solve_right_LT(LP_, W);
    return W.rowwise().squaredNorm();
  }

  // Latent mean and variance of the predictor at new rows Xnew (n x p), and
  // per component (columns of term_mean / term_var) when those are non-null.
  // With `center` (a vector of total_size()) component c's part is that of
  // the features phi_c(x) - center_c: the component minus a linear function
  // of v, e.g. its average over the data (identifiable terms; the intercept
  // carries the average).  Without `variance` (and terms) var is left zero.
  void predict(const Eigen::Ref<const MatrixXd>& Xnew, const Eigen::Ref<const VectorXd>& offset,
               VectorXd& mean, VectorXd& var, MatrixXd* term_mean, MatrixXd* term_var,
               const ParallelFor& pfor, const VectorXd* center = nullptr, bool variance = true) const {
    const Index nn = Xnew.rows();
    mean.resize(nn);
    var.resize(nn);
    if (term_mean && !term_var) throw std::invalid_argument("predict(): term_var is needed with term_mean");
    if (term_mean) term_mean->resize(nn, comps.size());
    if (term_var) term_var->resize(nn, comps.size());
    blocked_for(static_cast<std::size_t>(nn), pfor, [&](std::size_t begin, std::size_t end) {
      Block b;
      b.X = Xnew.middleRows(begin, end - begin);
      if (!variance && !term_mean) {  // the mean alone: no features (component_block_mean())
        VectorXd mu = offset.segment(begin, end - begin);
        for (std::size_t c = 0; c < comps.size(); ++c)
          mu += component_block_mean(c, b.X, m.segment(offsets_[c], comps[c].size()));
        mean.segment(begin, end - begin) = mu;
        var.segment(begin, end - begin).setZero();
        return;
      }
      features(b);
      mean.segment(begin, end - begin) = b.Phi * m + offset.segment(begin, end - begin);
      var.segment(begin, end - begin) =
          variance || term_mean ? VectorXd((b.resid + q_variance(b.Phi)).cwiseMax(0.0)) : VectorXd::Zero(b.X.rows());
      if (!term_mean) return;
      if (center) center_features(b, *center);
      for (std::size_t c = 0; c < comps.size(); ++c) {
        const Index o = offsets_[c], M = comps[c].size();
        const auto Phic = b.Phi.middleCols(o, M);
        term_mean->col(c).segment(begin, end - begin) = Phic * m.segment(o, M);
        const VectorXd v = ((Phic * S.block(o, o, M, M)).array() * Phic.array()).rowwise().sum();
        term_var->col(c).segment(begin, end - begin) = (v + b.rows[c].resid).cwiseMax(0.0);
      }
    });
  }

 protected:
  MatrixXd LP_;  // Cholesky factor of P
  double logdet_P_ = 0;
};

}  // namespace scalegp
