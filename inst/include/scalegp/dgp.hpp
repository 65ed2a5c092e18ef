// Deep Gaussian processes trained by approximate expectation propagation
// (Bui, Hernandez-Lobato, Hernandez-Lobato, Li and Turner 2016).
//
// A network of L GP layers; layer l maps h_{l-1} (D_{l-1} columns; h_0 = x)
// to h_l (D_l columns) by D_l independent FITC GPs that share one SE-ARD
// kernel (lengthscales, variance) and one noise variance per layer, each GP
// with its own M inducing inputs Z_{l,d}.  The posterior over the inducing
// outputs is q(u) = prod_{l,d} p(u_ld) g_ld(u_ld)^N with one tied Gaussian
// factor per (layer, output GP), stored as its total natural parameters
// Lambda = R'R (R upper triangular, log diagonal; vector rho in column-major
// upper-triangle order) and tau.  The cavity is the prior times g^(N-1).
//
// What this header computes:
//   - the minibatch energy E_B = sum_ld [log|K|/2 + (N-1) phi(q) - N phi(cavity)]
//     - (N/|B|) sum_{n in B} log Z_n, with log Z_n by forward moment
//     propagation (exact psi-statistics of the SE-ARD kernel, log space), and
//     its gradient w.r.t. every parameter by a hand-derived backward pass;
//   - the fit: Adam on all parameters jointly, minibatches from the shared
//     generator, the authors' initialisation; a step to a non-finite energy
//     is undone and the step size halved (train()).  Parameters can be held
//     at their initial values (Settings::learn_inducing: every layer's
//     inducing inputs; Settings::learn_noise: the output layer's noise;
//     Options::learn_kernel: every layer's lengthscales and kernel variance):
//     their gradient is zeroed, so Adam leaves them where they are;
//   - a layer's latent variance that rounding makes negative is set to 0
//     (its noise variance remains), with no adjoint through it;
//   - prediction: the same forward pass with q in place of the cavity
//     (mean and variance of every layer's Gaussian).
// Output likelihoods: Gaussian (log Z_n exact given the last layer's
// Gaussian; optional row weights w_n divide the output noise variance, as
// prior weights do in gpgam()), and probit in closed form, log Z_n = log Phi(y m / sqrt(1 + v))
// with y in {-1, +1} and no noise in the last layer (its log_sn is unused).
// Minibatch points are reduced with thread-local accumulators through
// parallel.hpp (bit-identical for any thread count).
#pragma once
#include "fit_loop.hpp"
#include "inducing.hpp"
#include "likelihoods.hpp"
#include "linalg.hpp"
#include "optim.hpp"
#include "parallel.hpp"
#include "settings.hpp"
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace scalegp {
namespace dgp {

// One GP layer: kernel and noise shared by its output GPs, per-output Z, rho, tau.
struct Layer {
  VectorXd log_ell;  // log ARD lengthscales (D_{l-1})
  double log_sf = 0;  // log kernel standard deviation
  double log_sn = 0;  // log noise standard deviation
  std::vector<MatrixXd> Z;    // per output GP: M x D_{l-1} inducing inputs
  std::vector<VectorXd> rho;  // per output GP: upper triangle of R (log diagonal)
  std::vector<VectorXd> tau;  // per output GP: shift of the tied factor (total over N)
  Index din() const { return log_ell.size(); }
  Index dout() const { return static_cast<Index>(Z.size()); }
};

// This engine's own options (R: dgp_options() and gp_control(fixed = )).
struct Options {
  bool learn_kernel = true;  // false: log_ell and log_sf of every layer stay at their initial values
  double noise_sd = 0.1;     // initial noise sd of the hidden layers (standardised scale)
  double output_noise_sd = 0.1;  // initial noise sd of the output layer
  // train(): N of the energy (0: the rows of X; data read in chunks: the
  // rows of all chunks, X one chunk), and whether to end with the energy on
  // all of X's rows (info.objective; NaN when not).
  double total_rows = 0;
  bool final_energy = true;
};

struct Net {
  std::vector<Layer> layers;
  double jitter = 1e-6;  // added to the diagonal of K_uu (no gradient)
  bool probit = false;   // probit output (targets -1/+1, no output noise); else Gaussian
};

// R from rho: column-major upper triangle, exp on the diagonal.
inline MatrixXd r_of(const VectorXd& rho, Index M) {
  MatrixXd R = MatrixXd::Zero(M, M);
  Index k = 0;
  for (Index j = 0; j < M; ++j)
    for (Index i = 0; i <= j; ++i, ++k) R(i, j) = i == j ? std::exp(rho[k]) : rho[k];
  return R;
}

// SE-ARD kernel matrix between the rows of A and B.
inline MatrixXd se_kernel(const MatrixXd& A, const MatrixXd& B, const VectorXd& ell2, double sf2) {
  MatrixXd K(A.rows(), B.rows());
  for (Index i = 0; i < A.rows(); ++i)
    for (Index j = 0; j < B.rows(); ++j)
      K(i, j) = sf2 * std::exp(-0.5 * ((A.row(i) - B.row(j)).array().square() / ell2.transpose().array()).sum());
  return K;
}

// The same of the rows of Z with themselves (symmetric: one exp per pair).
inline MatrixXd se_kernel(const MatrixXd& Z, const VectorXd& ell2, double sf2) {
  MatrixXd K(Z.rows(), Z.rows());
  for (Index j = 0; j < Z.rows(); ++j)
    for (Index i = 0; i <= j; ++i)
      K(i, j) = K(j, i) = sf2 * std::exp(-0.5 * ((Z.row(i) - Z.row(j)).array().square() / ell2.transpose().array()).sum());
  return K;
}

// psi1_m = E k(z_m, h), h ~ N(mu, diag(s)); s = 0 gives the kernel vector.
inline VectorXd psi1(const VectorXd& mu, const VectorXd& s, const MatrixXd& Z, const VectorXd& ell2, double sf2) {
  const Eigen::ArrayXd a = ell2.array() + s.array();
  const double lc = std::log(sf2) + 0.5 * (ell2.array() / a).log().sum();
  VectorXd p(Z.rows());
  for (Index m = 0; m < Z.rows(); ++m)
    p[m] = std::exp(lc - 0.5 * ((mu.transpose() - Z.row(m)).array().square() / a.transpose()).sum());
  return p;
}

// E0_mm' = sum_q (z_mq - z_m'q)^2 / (4 ell2_q): the part of log Psi2 that
// does not depend on the input distribution.
inline MatrixXd psi2_base(const MatrixXd& Z, const VectorXd& ell2) {
  const Index M = Z.rows();
  MatrixXd E0(M, M);
  for (Index j = 0; j < M; ++j)
    for (Index i = 0; i <= j; ++i) {
      double e = 0;
      for (Index q = 0; q < Z.cols(); ++q) {
        const double dz = Z(i, q) - Z(j, q);
        e += dz * dz / (4 * ell2[q]);
      }
      E0(i, j) = E0(j, i) = e;
    }
  return E0;
}

// Psi2_mm' = E k(z_m, h) k(h, z_m'), h ~ N(mu, diag(s)), in log space:
// log Psi2 = lc - E0 - sum_q ((z_mq + z_m'q) / 2 - mu_q)^2 / b_q with
// b = ell2 + 2 s, written as lc - E0 - |a_m + a_m'|^2 / 2 with the rows
// a_m = (z_m - mu) / sqrt(2 b), so that the M x M exponent is one small
// matrix product and one exp per pair (Psi2 is symmetric).
inline MatrixXd psi2(const VectorXd& mu, const VectorXd& s, const MatrixXd& Z, const VectorXd& ell2, double sf2,
                     const MatrixXd& E0) {
  const Eigen::ArrayXd b = ell2.array() + 2 * s.array();
  const double lc = 2 * std::log(sf2) + 0.5 * (ell2.array() / b).log().sum();
  const MatrixXd As = (Z.rowwise() - mu.transpose()) * (2 * b).rsqrt().matrix().asDiagonal();
  const VectorXd nrm = As.rowwise().squaredNorm();
  const MatrixXd G = As * As.transpose();
  const Index M = Z.rows();
  MatrixXd E(M, M);
  for (Index j = 0; j < M; ++j)
    for (Index i = 0; i <= j; ++i) E(i, j) = E(j, i) = std::exp(lc - E0(i, j) - 0.5 * (nrm[i] + nrm[j]) - G(i, j));
  return E;
}

inline MatrixXd psi2(const VectorXd& mu, const VectorXd& s, const MatrixXd& Z, const VectorXd& ell2, double sf2) {
  return psi2(mu, s, Z, ell2, sf2, psi2_base(Z, ell2));
}

// Per-(layer, output) quantities shared by all points of a pass: K and its
// inverse, q (S, m), the cavity (Sh, mh) and the forward-pass weights
// A = K^-1 mean, B = K^-1 C K^-1 - K^-1 of the distribution propagated
// (the cavity in training, q in prediction); C = cov (+ mean mean' after layer 1).
struct Shared {
  MatrixXd K, Ki, S, Sh, C, KiC, B, E0;  // KiC = K^-1 C; E0: psi2_base (layers after the first)
  VectorXd m, mh, A;
  double logdetK = 0, phi_post = 0, phi_cav = 0;
};

inline double beta_of(double N) { return (N - 1) / N; }

// Inverse and log-determinant of a symmetric positive definite matrix.
inline MatrixXd spd_inverse(const MatrixXd& A, double* logdet, const char* what) {
  Eigen::LLT<MatrixXd> llt(A);
  if (llt.info() != Eigen::Success) throw numerical_error(std::string("dgp: ") + what + " is not positive definite");
  if (logdet) *logdet = 2 * llt.matrixLLT().diagonal().array().log().sum();
  return llt.solve(MatrixXd::Identity(A.rows(), A.cols()));
}

inline Shared make_shared(const Net& net, std::size_t l, std::size_t d, double N, bool use_posterior) {
  const Layer& ly = net.layers[l];
  const Index M = ly.Z[d].rows();
  const VectorXd ell2 = (2 * ly.log_ell.array()).exp();
  const double sf2 = std::exp(2 * ly.log_sf), beta = beta_of(N);
  Shared q;
  q.K = se_kernel(ly.Z[d], ell2, sf2);
  q.K.diagonal().array() += net.jitter;
  q.Ki = spd_inverse(q.K, &q.logdetK, "K_uu");
  const MatrixXd R = r_of(ly.rho[d], M);
  const MatrixXd Lam = R.transpose() * R;
  double ld = 0;
  q.S = spd_inverse(q.Ki + Lam, &ld, "the posterior precision");
  q.m = q.S * ly.tau[d];
  q.phi_post = -0.5 * ld + 0.5 * ly.tau[d].dot(q.m);
  q.Sh = spd_inverse(q.Ki + beta * Lam, &ld, "the cavity precision");
  q.mh = q.Sh * (beta * ly.tau[d]);
  q.phi_cav = -0.5 * ld + 0.5 * beta * ly.tau[d].dot(q.mh);
  const MatrixXd& V = use_posterior ? q.S : q.Sh;
  const VectorXd& mean = use_posterior ? q.m : q.mh;
  q.C = V;
  if (l > 0) q.C += mean * mean.transpose();
  q.A = q.Ki * mean;
  q.KiC = q.Ki * q.C;
  q.B = q.KiC * q.Ki - q.Ki;
  if (l > 0) q.E0 = psi2_base(ly.Z[d], ell2);
  return q;
}

using SharedSet = std::vector<std::vector<Shared>>;

inline SharedSet make_shared_all(const Net& net, double N, bool use_posterior) {
  SharedSet out(net.layers.size());
  for (std::size_t l = 0; l < net.layers.size(); ++l)
    for (Index d = 0; d < net.layers[l].dout(); ++d)
      out[l].push_back(make_shared(net, l, static_cast<std::size_t>(d), N, use_posterior));
  return out;
}

// The forward pass of one point: each layer's input Gaussian (mu, s) and
// output Gaussian (m, v), with the psi-statistics used.
struct Pass {
  std::vector<VectorXd> mu, s, m, v;
  std::vector<std::vector<char>> clamped;  // per (layer, output): latent variance rounded below 0, set to 0
  std::vector<std::vector<VectorXd>> p1;
  std::vector<std::vector<MatrixXd>> P2;
};

// `wn`: the row's weight, dividing the output layer's noise variance (Gaussian).
inline void forward(const Net& net, const SharedSet& sh, const VectorXd& x, Pass& ps, double wn = 1.0) {
  const std::size_t L = net.layers.size();
  ps.mu.resize(L), ps.s.resize(L), ps.m.resize(L), ps.v.resize(L), ps.p1.resize(L), ps.P2.resize(L);
  ps.clamped.resize(L);
  VectorXd mu = x, s = VectorXd::Zero(x.size());
  for (std::size_t l = 0; l < L; ++l) {
    const Layer& ly = net.layers[l];
    const VectorXd ell2 = (2 * ly.log_ell.array()).exp();
    const double sf2 = std::exp(2 * ly.log_sf),
                 sn2 = net.probit && l + 1 == L ? 0.0 : std::exp(2 * ly.log_sn) / (l + 1 == L ? wn : 1.0);
    const Index D = ly.dout();
    ps.mu[l] = mu, ps.s[l] = s;
    ps.m[l].resize(D), ps.v[l].resize(D);
    ps.clamped[l].assign(static_cast<std::size_t>(D), 0);
    ps.p1[l].resize(static_cast<std::size_t>(D));
    ps.P2[l].resize(l == 0 ? 0 : static_cast<std::size_t>(D));
    for (Index d = 0; d < D; ++d) {
      const Shared& q = sh[l][static_cast<std::size_t>(d)];
      const std::size_t ud = static_cast<std::size_t>(d);
      if (l == 0) {  // deterministic input: k, exact moments
        ps.p1[l][ud] = psi1(mu, s, ly.Z[ud], ell2, sf2);
        const VectorXd& k = ps.p1[l][ud];
        ps.m[l][d] = k.dot(q.A);
        const double lat = sf2 + k.dot(q.B * k);
        ps.clamped[l][ud] = lat < 0;
        ps.v[l][d] = sn2 + std::max(lat, 0.0);
      } else {  // Gaussian input: psi-statistics, moment matching
        ps.p1[l][ud] = psi1(mu, s, ly.Z[ud], ell2, sf2);
        ps.P2[l][ud] = psi2(mu, s, ly.Z[ud], ell2, sf2, q.E0);
        const double md = ps.p1[l][ud].dot(q.A);
        ps.m[l][d] = md;
        const double lat = sf2 + (q.B.array() * ps.P2[l][ud].array()).sum() - md * md;
        ps.clamped[l][ud] = lat < 0;
        ps.v[l][d] = sn2 + std::max(lat, 0.0);
      }
    }
    mu = ps.m[l], s = ps.v[l];
  }
}

// Gaussian log Z_n of the last layer's Gaussian and its adjoints w.r.t. (m, v).
inline double gaussian_logz(const VectorXd& y, const VectorXd& m, const VectorXd& v, VectorXd* gm, VectorXd* gv) {
  const double log2pi = std::log(2 * kPi);
  double lz = 0;
  if (gm) gm->resize(m.size()), gv->resize(m.size());
  for (Index d = 0; d < m.size(); ++d) {
    const double r = y[d] - m[d];
    lz += -0.5 * (log2pi + std::log(v[d])) - 0.5 * r * r / v[d];
    if (gm) (*gm)[d] = r / v[d], (*gv)[d] = -0.5 / v[d] + 0.5 * r * r / (v[d] * v[d]);
  }
  return lz;
}

// Probit log Z_n = sum_d log Phi(y_d m_d / sqrt(1 + v_d)) (y_d in {-1, +1})
// and its adjoints w.r.t. (m, v).
inline double probit_logz(const VectorXd& y, const VectorXd& m, const VectorXd& v, VectorXd* gm, VectorXd* gv) {
  double lz = 0;
  if (gm) gm->resize(m.size()), gv->resize(m.size());
  for (Index d = 0; d < m.size(); ++d) {
    const double c = std::sqrt(1 + v[d]), z = y[d] * m[d] / c;
    lz += log_Phi(z);
    if (gm) {
      const double lam = mills(z);
      (*gm)[d] = lam * y[d] / c, (*gv)[d] = -0.5 * lam * z / (1 + v[d]);
    }
  }
  return lz;
}

// log Z_n of the net's likelihood.
inline double output_logz(const Net& net, const VectorXd& y, const VectorXd& m, const VectorXd& v, VectorXd* gm,
                          VectorXd* gv) {
  return net.probit ? probit_logz(y, m, v, gm, gv) : gaussian_logz(y, m, v, gm, gv);
}

// Sums over the points of a minibatch: log Z, the adjoints of the shared
// A and B per (layer, output), and the direct adjoints of ell^2, sf^2, sn^2, Z.
struct Acc {
  double logz = 0;
  std::vector<std::vector<VectorXd>> GA;
  std::vector<std::vector<MatrixXd>> GB, gZ;
  std::vector<VectorXd> gell2;
  std::vector<double> gsf2, gsn2;

  explicit Acc(const Net& net) {
    for (const Layer& ly : net.layers) {
      GA.emplace_back(), GB.emplace_back(), gZ.emplace_back();
      for (Index d = 0; d < ly.dout(); ++d) {
        const Index M = ly.Z[static_cast<std::size_t>(d)].rows();
        GA.back().push_back(VectorXd::Zero(M));
        GB.back().push_back(MatrixXd::Zero(M, M));
        gZ.back().push_back(MatrixXd::Zero(M, ly.din()));
      }
      gell2.push_back(VectorXd::Zero(ly.din()));
      gsf2.push_back(0), gsn2.push_back(0);
    }
  }
  Acc& operator+=(const Acc& o) {
    logz += o.logz;
    for (std::size_t l = 0; l < GA.size(); ++l) {
      for (std::size_t d = 0; d < GA[l].size(); ++d) GA[l][d] += o.GA[l][d], GB[l][d] += o.GB[l][d], gZ[l][d] += o.gZ[l][d];
      gell2[l] += o.gell2[l], gsf2[l] += o.gsf2[l], gsn2[l] += o.gsn2[l];
    }
    return *this;
  }
};

// Backward pass of one point (after forward()): adds the adjoints of log Z_n
// given its adjoints gm, gv w.r.t. the last layer's (m, v).
inline void backward(const Net& net, const SharedSet& sh, const Pass& ps, VectorXd gm, VectorXd gv, Acc& acc,
                     double wn = 1.0) {
  for (std::size_t l = net.layers.size(); l-- > 0;) {
    const Layer& ly = net.layers[l];
    const VectorXd ell2 = (2 * ly.log_ell.array()).exp();
    const double sf2 = std::exp(2 * ly.log_sf);
    const Index Q = ly.din();
    const VectorXd& mu = ps.mu[l];
    const VectorXd& s = ps.s[l];
    VectorXd gmu = VectorXd::Zero(Q), gs = VectorXd::Zero(Q);
    for (Index d = 0; d < ly.dout(); ++d) {
      const std::size_t ud = static_cast<std::size_t>(d);
      const Shared& q = sh[l][ud];
      const MatrixXd& Z = ly.Z[ud];
      const Index M = Z.rows();
      const VectorXd& p1 = ps.p1[l][ud];
      if (!(net.probit && l + 1 == net.layers.size())) acc.gsn2[l] += l + 1 == net.layers.size() ? gv[d] / wn : gv[d];
      // the latent part of the variance: no adjoint where forward() clamped it at 0
      const double gvl = ps.clamped[l][ud] ? 0.0 : gv[d];
      acc.gsf2[l] += gvl;  // psi0 = sf2
      if (l == 0) {
        acc.GA[l][ud] += gm[d] * p1;
        acc.GB[l][ud] += gvl * p1 * p1.transpose();
        const VectorXd gk = gm[d] * q.A + 2 * gvl * (q.B * p1);
        for (Index m = 0; m < M; ++m) {
          const double w = gk[m] * p1[m];
          for (Index j = 0; j < Q; ++j) {
            const double dx = mu[j] - Z(m, j);
            acc.gZ[l][ud](m, j) += w * dx / ell2[j];
            acc.gell2[l][j] += w * dx * dx / (2 * ell2[j] * ell2[j]);
          }
          acc.gsf2[l] += w / sf2;
        }
      } else {
        const MatrixXd& P2 = ps.P2[l][ud];
        const double g = gm[d] - 2 * gvl * ps.m[l][d];
        acc.GA[l][ud] += g * p1;
        acc.GB[l][ud] += gvl * P2;
        const Eigen::ArrayXd a = ell2.array() + s.array(), b = ell2.array() + 2 * s.array();
        double wsum = 0, Wsum = 0;
        for (Index m = 0; m < M; ++m) {  // psi1 terms
          const double w = g * q.A[m] * p1[m];
          wsum += w;
          for (Index j = 0; j < Q; ++j) {
            const double dz = Z(m, j) - mu[j];
            gmu[j] += w * dz / a[j];
            gs[j] += w * (-0.5 / a[j] + 0.5 * dz * dz / (a[j] * a[j]));
            acc.gell2[l][j] += w * (0.5 / ell2[j] - 0.5 / a[j] + 0.5 * dz * dz / (a[j] * a[j]));
            acc.gZ[l][ud](m, j) -= w * dz / a[j];
          }
        }
        // psi2 terms: with W = gv B o Psi2 (symmetric), r = W 1, the rows
        // a_m = z_m - mu and WA = W A, every sum over pairs (m, m') reduces to
        // c1 = A' r, c2 = (A o A)' r and c3_q = a_q' W a_q (columns q of A).
        const MatrixXd Wm = gvl * q.B.cwiseProduct(P2);
        const VectorXd r = Wm.rowwise().sum();
        Wsum = r.sum();
        const MatrixXd Am = Z.rowwise() - mu.transpose();
        const MatrixXd WA = Wm * Am;
        const Eigen::ArrayXd c1 = Am.transpose() * r, c2 = Am.array().square().matrix().transpose() * r,
                             c3 = Am.cwiseProduct(WA).colwise().sum().transpose();
        const Eigen::ArrayXd e2 = 0.5 * (c2 + c3);  // sum W e_q^2, e = mu - (z_m + z_m') / 2
        const Eigen::ArrayXd d2 = 2 * (c2 - c3);    // sum W (z_mq - z_m'q)^2
        const Eigen::ArrayXd l2 = ell2.array();
        gmu += (2 * c1 / b).matrix();
        gs += (-Wsum / b + 2 * e2 / b.square()).matrix();
        acc.gell2[l] += (Wsum * (0.5 / l2 - 0.5 / b) + d2 / (4 * l2.square()) + e2 / b.square()).matrix();
        const MatrixXd rA = r.asDiagonal() * Am;
        acc.gZ[l][ud] -= (rA - WA) * l2.inverse().matrix().asDiagonal();
        acc.gZ[l][ud] -= (rA + WA) * b.inverse().matrix().asDiagonal();
        acc.gsf2[l] += (wsum + 2 * Wsum) / sf2;
      }
    }
    gm = gmu, gv = gs;
  }
}

// The minibatch energy E_B over rows idx (all rows: the full energy, minus the
// approximate log marginal likelihood) of targets Y (n x D_L); with `grad`,
// its gradient in a Net of the same shape.
inline double energy(const Net& net, const MatrixXd& X, const MatrixXd& Y, const std::vector<std::size_t>& idx,
                     double N, Net* grad, const ParallelFor& pfor, const VectorXd* w = nullptr) {
  const SharedSet sh = make_shared_all(net, N, false);
  const std::size_t L = net.layers.size();
  const double beta = beta_of(N), sc = N / static_cast<double>(idx.size());
  double E = 0;
  for (std::size_t l = 0; l < L; ++l)
    for (const Shared& q : sh[l]) E += 0.5 * q.logdetK + (N - 1) * q.phi_post - N * q.phi_cav;
  const Acc acc = deterministic_reduce<Acc>(
      idx.size(), pfor, [&] { return Acc(net); },
      [&](Acc& a, std::size_t b0, std::size_t b1) {
        Pass ps;
        VectorXd gm, gv;
        for (std::size_t i = b0; i < b1; ++i) {
          const Index n = static_cast<Index>(idx[i]);
          const double wn = w ? (*w)[n] : 1.0;
          forward(net, sh, X.row(n).transpose(), ps, wn);
          a.logz += output_logz(net, Y.row(n).transpose(), ps.m[L - 1], ps.v[L - 1], grad ? &gm : nullptr, &gv);
          if (grad) backward(net, sh, ps, gm, gv, a, wn);
        }
      });
  E -= sc * acc.logz;
  if (!grad) return E;
  *grad = net;
  for (std::size_t l = 0; l < L; ++l) {
    const Layer& ly = net.layers[l];
    Layer& gl = grad->layers[l];
    const VectorXd ell2 = (2 * ly.log_ell.array()).exp();
    const double sf2 = std::exp(2 * ly.log_sf), sn2 = std::exp(2 * ly.log_sn);
    VectorXd gell2 = -sc * acc.gell2[l];
    double gsf2 = -sc * acc.gsf2[l];
    for (Index d = 0; d < ly.dout(); ++d) {
      const std::size_t ud = static_cast<std::size_t>(d);
      const Shared& q = sh[l][ud];
      const MatrixXd& Z = ly.Z[ud];
      const Index M = Z.rows();
      const VectorXd& tau = ly.tau[ud];
      const MatrixXd& GA_ = acc.GA[l][ud];
      const MatrixXd& GB = acc.GB[l][ud];
      // chain of sum log Z to the cavity, the natural parameters and K^-1
      const MatrixXd dSh = q.Ki * GB * q.Ki;
      VectorXd dmh = q.Ki * GA_;
      if (l > 0) dmh += 2 * dSh * q.mh;
      const MatrixXd dPh = -q.Sh * (dSh + beta * dmh * tau.transpose()) * q.Sh;
      const MatrixXd& KiC = q.KiC;
      const MatrixXd dKi_lz = dPh + GA_ * q.mh.transpose() + GB * KiC + KiC.transpose() * GB - GB;
      const MatrixXd Spmm = q.S + q.m * q.m.transpose(), Shmm = q.Sh + q.mh * q.mh.transpose();
      const MatrixXd dLam = -(N - 1) / 2 * Spmm + N * beta / 2 * Shmm - sc * beta * dPh;
      gl.tau[ud] = (N - 1) * q.m - N * beta * q.mh - sc * beta * q.Sh * dmh;
      const MatrixXd dKi = -0.5 * q.K - (N - 1) / 2 * Spmm + N / 2 * Shmm - sc * dKi_lz;
      MatrixXd dK = -q.Ki * dKi * q.Ki;
      dK = 0.5 * (dK + dK.transpose()).eval();
      MatrixXd K0 = q.K;
      K0.diagonal().array() -= net.jitter;
      const MatrixXd W = dK.cwiseProduct(K0);
      gsf2 += W.sum() / sf2;
      // sum_ab W_ab (z_aj - z_bj)^2 = 2 (sum_a r_a z_aj^2 - z_j' W z_j) and
      // sum_b W_ab (z_aj - z_bj) = r_a z_aj - (W Z)_aj, with r = W 1 (W symmetric)
      const VectorXd rw = W.rowwise().sum();
      const MatrixXd WZ = W * Z, rZ = rw.asDiagonal() * Z;
      const Eigen::ArrayXd d2 = 2 * (Z.cwiseProduct(rZ - WZ).colwise().sum().transpose().array());
      gell2 += (d2 / (2 * ell2.array().square())).matrix();
      gl.Z[ud] = -sc * acc.gZ[l][ud] - 2 * (rZ - WZ) * ell2.cwiseInverse().asDiagonal();
      const MatrixXd R = r_of(ly.rho[ud], M);
      MatrixXd dR = R * (dLam + dLam.transpose());
      VectorXd grho(ly.rho[ud].size());
      Index k = 0;
      for (Index c = 0; c < M; ++c)
        for (Index r = 0; r <= c; ++r, ++k) grho[k] = r == c ? dR(r, c) * R(r, c) : dR(r, c);
      gl.rho[ud] = grho;
    }
    gl.log_ell = gell2.cwiseProduct(2 * ell2);
    gl.log_sf = gsf2 * 2 * sf2;
    gl.log_sn = -sc * acc.gsn2[l] * 2 * sn2;
  }
  return E;
}

// ---- packing: per layer log_ell, log_sf, log_sn, then per output Z (column-major), rho, tau

inline Index n_params(const Net& net) {
  Index n = 0;
  for (const Layer& ly : net.layers) {
    n += ly.din() + 2;
    for (Index d = 0; d < ly.dout(); ++d) {
      const std::size_t ud = static_cast<std::size_t>(d);
      n += ly.Z[ud].size() + ly.rho[ud].size() + ly.tau[ud].size();
    }
  }
  return n;
}

inline VectorXd pack(const Net& net) {
  VectorXd th(n_params(net));
  Index k = 0;
  const auto put = [&](const double* p, Index n) { for (Index i = 0; i < n; ++i) th[k++] = p[i]; };
  for (const Layer& ly : net.layers) {
    put(ly.log_ell.data(), ly.din());
    put(&ly.log_sf, 1), put(&ly.log_sn, 1);
    for (std::size_t d = 0; d < ly.Z.size(); ++d)
      put(ly.Z[d].data(), ly.Z[d].size()), put(ly.rho[d].data(), ly.rho[d].size()), put(ly.tau[d].data(), ly.tau[d].size());
  }
  return th;
}

inline void unpack(Net& net, const VectorXd& th) {
  Index k = 0;
  const auto get = [&](double* p, Index n) { for (Index i = 0; i < n; ++i) p[i] = th[k++]; };
  for (Layer& ly : net.layers) {
    get(ly.log_ell.data(), ly.din());
    get(&ly.log_sf, 1), get(&ly.log_sn, 1);
    for (std::size_t d = 0; d < ly.Z.size(); ++d)
      get(ly.Z[d].data(), ly.Z[d].size()), get(ly.rho[d].data(), ly.rho[d].size()), get(ly.tau[d].data(), ly.tau[d].size());
  }
}

// ---- initialisation (the authors' code, notes of Bui et al. 2016)

// A standard normal draw (Box-Muller on the shared generator: portable).
inline double std_normal(Rng& rng) {
  const double u1 = 1.0 - uniform01(rng), u2 = uniform01(rng);
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * kPi * u2);
}

// Median of the pairwise Euclidean distances (upper triangle with the zero
// diagonal) of the rows of X, on at most `cap` random rows.
inline double median_distance(const MatrixXd& X, Rng& rng, std::size_t cap) {
  std::vector<std::size_t> rows(static_cast<std::size_t>(X.rows()));
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  if (rows.size() > cap) {
    shuffle(rows, rng);
    rows.resize(cap);
  }
  std::vector<double> dist;
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t j = i; j < rows.size(); ++j)
      dist.push_back((X.row(static_cast<Index>(rows[i])) - X.row(static_cast<Index>(rows[j]))).norm());
  std::nth_element(dist.begin(), dist.begin() + static_cast<std::ptrdiff_t>(dist.size() / 2), dist.end());
  return dist[dist.size() / 2];
}

// The network for inputs X (n x D), output width dout, hidden widths
// `hidden` and Ms[l] inducing points per GP of layer l: layer 1's Z by k-means on X (the
// same for every output), lengthscales the median distance; later layers Z
// on the diagonal of [-1, 1]^D, lengthscales e; kernel sd 1; noise sd
// opt.noise_sd in the hidden layers and opt.output_noise_sd in the output
// layer (the authors: 0.1 in both); rho and tau N(0, 1) in layer 1 and
// N(0, 0.1^2) after it.
inline Net initialise(const MatrixXd& X, Index dout, const std::vector<int>& hidden, const std::vector<Index>& Ms,
                      Rng& rng, double jitter = 1e-6, const Options& opt = Options()) {
  Net net;
  net.jitter = jitter;
  std::vector<Index> dims{X.cols()};
  for (int h : hidden) dims.push_back(h);
  dims.push_back(dout);
  if (Ms.size() != dims.size() - 1) throw std::invalid_argument("initialise: one inducing count per layer needed");
  const Index M1 = Ms[0];
  const MatrixXd Z1 = kmeans(X, M1, rng);
  const double med = median_distance(X, rng, X.rows() < 10000 ? static_cast<std::size_t>(X.rows())
                                                                : static_cast<std::size_t>(5 * M1));
  for (std::size_t l = 0; l + 1 < dims.size(); ++l) {
    Layer ly;
    const Index din = dims[l], D = dims[l + 1], M = Ms[l];
    ly.log_ell = VectorXd::Constant(din, l == 0 ? std::log(std::max(med, 1e-3)) : 1.0);
    ly.log_sf = 0;
    ly.log_sn = std::log(l + 2 == dims.size() ? opt.output_noise_sd : opt.noise_sd);
    const double sd = l == 0 ? 1.0 : 0.1;
    for (Index d = 0; d < D; ++d) {
      MatrixXd Z(M, din);
      if (l == 0) Z = Z1;
      else
        for (Index m = 0; m < M; ++m) Z.row(m).setConstant(M == 1 ? 0.0 : -1.0 + 2.0 * m / static_cast<double>(M - 1));
      ly.Z.push_back(Z);
      VectorXd rho(M * (M + 1) / 2), tau(M);
      for (Index i = 0; i < rho.size(); ++i) rho[i] = sd * std_normal(rng);
      for (Index i = 0; i < M; ++i) tau[i] = sd * std_normal(rng);
      ly.rho.push_back(rho), ly.tau.push_back(tau);
    }
    net.layers.push_back(ly);
  }
  return net;
}

// The same number M of inducing points in every layer.
inline Net initialise(const MatrixXd& X, Index dout, const std::vector<int>& hidden, Index M, Rng& rng,
                      double jitter = 1e-6) {
  return initialise(X, dout, hidden, std::vector<Index>(hidden.size() + 1, M), rng, jitter);
}

// ---- the fit

// Zeroes, in a gradient g, the entries of the parameters a fit holds at
// their initial values (see the head of this file).
inline void hold_fixed(Net& g, const Settings& set, const Options& opt) {
  for (Layer& ly : g.layers) {
    if (!opt.learn_kernel) ly.log_ell.setZero(), ly.log_sf = 0;
    if (!set.learn_inducing)
      for (MatrixXd& Z : ly.Z) Z.setZero();
  }
  if (!set.learn_noise && !g.layers.empty()) g.layers.back().log_sn = 0;
}

// Adam on all parameters jointly (minimising the energy), but those held
// (hold_fixed()), minibatches of
// set.batch_size rows (0 or >= n: all rows) from `rng`, set.max_iter
// iterations.  monitor(iteration, objective estimate) returns false to stop.
// A stochastic fit: it stops after max_iter iterations (or when the monitor
// stops it); `converged` stays false.  info.objective is -E on all rows
// (opt.final_energy).  Called once per chunk for data read in chunks, on the
// network and the Adam state (`carry`, read and written) the last call
// left, opt.total_rows the rows of all chunks.
template <class Monitor>
FitInfo train(Net& net, const MatrixXd& X, const MatrixXd& Y, const Settings& set, Rng& rng, const ParallelFor& pfor,
              Monitor monitor, const VectorXd* w = nullptr, const Options& opt = Options(),
              Adam::State* carry = nullptr) {
  FitInfo info;
  auto clock = Clock::now();
  const std::size_t n = static_cast<std::size_t>(X.rows());
  const double N = opt.total_rows > 0 ? opt.total_rows : static_cast<double>(n);
  Sampler sampler(Sampler::Mode::shuffled, n, set.batch_size, rng);
  std::vector<std::size_t> all(n);
  for (std::size_t i = 0; i < n; ++i) all[i] = i;
  Adam adam(set.learning_rate);
  if (carry) adam.restore(*carry);
  info.seconds_init = seconds_since(clock);
  clock = Clock::now();
  info.stop = "the iteration limit";
  // A step that leads to a non-finite energy or gradient (or a matrix that is
  // not positive definite) is undone: the parameters go back to the last
  // good point, Adam forgets its moments and halves its step size; after
  // kMaxFailures such steps the fit stops with an error.
  constexpr int kMaxFailures = 10;
  VectorXd good = pack(net);
  for (int it = 0; it < set.max_iter; ++it) {
    sampler.next();
    const std::vector<std::size_t>& rows = sampler.rows() ? *sampler.rows() : all;
    Net g;
    double E = 0;
    bool ok = true;
    try {
      E = energy(net, X, Y, rows, N, &g, pfor, w);
    } catch (const numerical_error&) {
      ok = false;
    }
    VectorXd gv;
    if (ok) {
      hold_fixed(g, set, opt);
      gv = pack(g);
    }
    if (!ok || !std::isfinite(E) || !gv.allFinite()) {
      if (++info.failures > kMaxFailures)
        throw numerical_error("dgp: the energy or its gradient is not finite at iteration " + std::to_string(it + 1) +
                              " after " + std::to_string(kMaxFailures) +
                              " steps undone with the learning rate halved each time; try a smaller learning_rate");
      unpack(net, good);
      adam.reset();
      adam.scale_rate(0.5);
      info.trace.push_back(info.trace.empty() ? std::numeric_limits<double>::quiet_NaN() : info.trace.back());
      info.iterations = it + 1;
      if (!monitor(it + 1, info.trace.back())) {
        info.stop = "the monitor (interrupted)";
        break;
      }
      continue;
    }
    info.trace.push_back(-E);
    good = pack(net);
    VectorXd th = good;
    adam.step(th, -gv);
    unpack(net, th);
    info.iterations = it + 1;
    if (!monitor(it + 1, -E)) {
      info.stop = "the monitor (interrupted)";
      break;
    }
  }
  info.seconds_iter = seconds_since(clock);
  if (carry) *carry = adam.state();
  clock = Clock::now();
  info.objective = opt.final_energy ? -energy(net, X, Y, all, N, nullptr, pfor, w)
                                    : std::numeric_limits<double>::quiet_NaN();
  info.seconds_final = seconds_since(clock);
  info.converged = false;
  return info;
}

// Prediction with q: per layer l, the means and variances (rows x D_l) of
// the Gaussian of h_l (the last layer's variance includes its noise, none
// with probit).
struct Prediction {
  std::vector<MatrixXd> mean, var;
};

inline Prediction predict(const Net& net, const MatrixXd& X, double N, const ParallelFor& pfor) {
  const SharedSet sh = make_shared_all(net, N, true);
  Prediction out;
  for (const Layer& ly : net.layers) {
    out.mean.push_back(MatrixXd(X.rows(), ly.dout()));
    out.var.push_back(MatrixXd(X.rows(), ly.dout()));
  }
  blocked_for(static_cast<std::size_t>(X.rows()), pfor, [&](std::size_t b0, std::size_t b1) {
    Pass ps;
    for (std::size_t i = b0; i < b1; ++i) {
      const Index n = static_cast<Index>(i);
      forward(net, sh, X.row(n).transpose(), ps);
      for (std::size_t l = 0; l < net.layers.size(); ++l) {
        out.mean[l].row(n) = ps.m[l].transpose();
        out.var[l].row(n) = ps.v[l].transpose();
      }
    }
  });
  return out;
}

}  // namespace dgp
}  // namespace scalegp
