// Likelihoods of a latent f with prior weights w: Gaussian (identity link),
// Bernoulli (probit, logit; y may be a proportion in [0, 1]) and Poisson (log).
// For q(f) = N(m, s2) they give the expected log-likelihood
//   v = E[log p(y | f)],  dv/dm,  dv/ds2 (= E[l''] / 2, Price's theorem)
// in closed form where one exists and by Gauss-Hermite quadrature otherwise,
// plus predictive densities and response moments.
#pragma once
#include "linalg.hpp"
#include <Eigen/Eigenvalues>
#include <limits>

namespace scalegp {

constexpr double kLog2Pi = 1.8378770664093454836;
constexpr double kPi = 3.14159265358979323846;

// Gauss-Hermite rule for the weight exp(-t^2), by the Golub-Welsch algorithm.
struct GaussHermite {
  VectorXd t, w;
  explicit GaussHermite(int n = 20) {
    MatrixXd J = MatrixXd::Zero(n, n);
    for (int i = 1; i < n; ++i) J(i, i - 1) = J(i - 1, i) = std::sqrt(i / 2.0);
    Eigen::SelfAdjointEigenSolver<MatrixXd> es(J);
    t = es.eigenvalues();
    w = std::sqrt(kPi) * es.eigenvectors().row(0).transpose().array().square();
  }
  // E[h(f)] for f ~ N(m, s2): sum_i w_i / sqrt(pi) * h(m + sqrt(2 s2) t_i).
  template <class F>
  double expect(double m, double s2, F&& h) const {
    const double sd = std::sqrt(2.0 * std::max(s2, 0.0));
    double acc = 0.0;
    for (Index i = 0; i < t.size(); ++i) acc += w(i) * h(m + sd * t(i));
    return acc / std::sqrt(kPi);
  }
};

// log Phi(z), accurate in both tails.
inline double log_Phi(double z) {
  if (z > -30.0) return std::log(0.5 * std::erfc(-z / std::sqrt(2.0)));
  const double z2 = z * z;  // asymptotic series of the Mills ratio
  return -0.5 * z2 - std::log(-z) - 0.5 * kLog2Pi +
         std::log1p(-1.0 / z2 + 3.0 / (z2 * z2) - 15.0 / (z2 * z2 * z2));
}
// lambda(z) = phi(z) / Phi(z) (inverse Mills ratio), in log space.
inline double mills(double z) {
  if (z > -30.0) return std::exp(-0.5 * z * z - 0.5 * kLog2Pi - log_Phi(z));
  const double z2 = z * z;
  return -z / (1.0 - 1.0 / z2 + 3.0 / (z2 * z2) - 15.0 / (z2 * z2 * z2));
}
inline double log1pexp(double x) { return x > 35 ? x : (x < -35 ? std::exp(x) : std::log1p(std::exp(x))); }
inline double logistic(double x) { return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)); }

enum class Family { gaussian, probit, logit, poisson };

inline Family family_from_string(const std::string& s) {
  if (s == "gaussian") return Family::gaussian;
  if (s == "probit") return Family::probit;
  if (s == "logit") return Family::logit;
  if (s == "poisson") return Family::poisson;
  throw std::invalid_argument("unknown likelihood '" + s + "'");
}

struct Expectation {
  double v = 0, dm = 0, dv = 0;  // E log p, d/dm, d/ds2
  double dlognoise = 0;          // d/d log(noise variance), Gaussian only
};

class Likelihood {
 public:
  Family family;
  double log_noise = 0.0;                  // Gaussian: log(noise variance - floor)
  static constexpr double kNoiseFloor = 1e-6;
  GaussHermite gh;

  explicit Likelihood(Family f = Family::gaussian, int gh_points = 20) : family(f), gh(gh_points) {}

  double noise_var() const { return kNoiseFloor + std::exp(log_noise); }
  bool has_noise() const { return family == Family::gaussian; }

  // log p(y | f) and its first two derivatives in f, weight w.
  void loglik(double y, double w, double f, double& l, double& d1, double& d2) const {
    switch (family) {
      case Family::gaussian: {  // precision weight: noise variance s2 / w
        const double s2 = noise_var();
        l = w > 0 ? -0.5 * (kLog2Pi + std::log(s2 / w)) - 0.5 * w * (y - f) * (y - f) / s2 : 0.0;
        d1 = w * (y - f) / s2;
        d2 = -w / s2;
        return;
      }
      case Family::probit: {
        const double lp = mills(f), ln = mills(-f);
        l = w * (y * log_Phi(f) + (1 - y) * log_Phi(-f));
        d1 = w * (y * lp - (1 - y) * ln);
        d2 = -w * (y * lp * (f + lp) + (1 - y) * ln * (-f + ln));
        return;
      }
      case Family::logit: {
        const double p = logistic(f);
        l = w * (y * -log1pexp(-f) + (1 - y) * -log1pexp(f));
        d1 = w * (y - p);
        d2 = -w * p * (1 - p);
        return;
      }
      case Family::poisson: {
        const double mu = std::exp(f);
        l = w * (y * f - mu - std::lgamma(y + 1.0));
        d1 = w * (y - mu);
        d2 = -w * mu;
        return;
      }
    }
  }

  Expectation expect(double y, double w, double m, double s2) const {
    Expectation e;
    switch (family) {
      case Family::gaussian: {
        if (w <= 0) return e;  // a zero weight removes the row
        const double nv = noise_var(), r2 = (y - m) * (y - m) + s2;
        e.v = -0.5 * (kLog2Pi + std::log(nv / w)) - 0.5 * w * r2 / nv;
        e.dm = w * (y - m) / nv;
        e.dv = -0.5 * w / nv;
        e.dlognoise = (nv - kNoiseFloor) * (-0.5 / nv + 0.5 * w * r2 / (nv * nv));
        return e;
      }
      case Family::poisson: {
        const double mu = std::exp(m + 0.5 * s2);
        e.v = w * (y * m - mu - std::lgamma(y + 1.0));
        e.dm = w * (y - mu);
        e.dv = -0.5 * w * mu;
        return e;
      }
      default: {
        const double sd = std::sqrt(2.0 * std::max(s2, 0.0));
        for (Index i = 0; i < gh.t.size(); ++i) {
          double l, d1, d2;
          loglik(y, w, m + sd * gh.t(i), l, d1, d2);
          e.v += gh.w(i) * l;
          e.dm += gh.w(i) * d1;
          e.dv += gh.w(i) * d2;
        }
        const double c = 1.0 / std::sqrt(kPi);
        e.v *= c;
        e.dm *= c;
        e.dv *= 0.5 * c;
        return e;
      }
    }
  }

  // log of the predictive density p(y*) = int p(y* | f) N(f; m, s2) df (w = 1).
  double log_predictive(double y, double m, double s2) const {
    switch (family) {
      case Family::gaussian: {
        const double v = s2 + noise_var();
        return -0.5 * (kLog2Pi + std::log(v) + (y - m) * (y - m) / v);
      }
      case Family::probit: {
        const double z = m / std::sqrt(1.0 + s2);
        return y * log_Phi(z) + (1 - y) * log_Phi(-z);
      }
      default:
        return log_integral(y, m, s2);
    }
  }

  // log int p(y | f) N(f; m, s2) df by Gauss-Hermite quadrature centred at the
  // mode of the integrand (adaptive: accurate also when p(y | f) is peaked far
  // from m, e.g. large counts).
  double log_integral(double y, double m, double s2) const {
    s2 = std::max(s2, 1e-300);
    // Newton with backtracking on the concave h(f) = log p(y|f) - (f - m)^2 / (2 s2)
    auto h = [&](double f, double& d1, double& d2) {
      double l;
      loglik(y, 1.0, f, l, d1, d2);
      d1 -= (f - m) / s2;
      d2 -= 1.0 / s2;
      return l - 0.5 * (f - m) * (f - m) / s2;
    };
    double f = m, l, d1, d2;
    double hf = h(f, d1, d2);
    for (int it = 0; it < 200; ++it) {
      const double step = -d1 / d2;
      double t = 1.0, e1, e2, hn = h(f + step, e1, e2);
      while (!(hn >= hf) && t > 1e-12) {
        t *= 0.5;
        hn = h(f + t * step, e1, e2);
      }
      f += t * step;
      hf = hn;
      d1 = e1;
      d2 = e2;
      if (std::abs(t * step) < 1e-10 * (1.0 + std::abs(f))) break;
    }
    loglik(y, 1.0, f, l, d1, d2);
    const double sd = std::sqrt(1.0 / (1.0 / s2 - d2));
    VectorXd a(gh.t.size());
    for (Index i = 0; i < gh.t.size(); ++i) {
      const double fi = f + std::sqrt(2.0) * sd * gh.t(i);
      loglik(y, 1.0, fi, l, d1, d2);
      // weight ratio N(fi; m, s2) / N(fi; f, sd^2), in logs
      const double lr = -0.5 * (fi - m) * (fi - m) / s2 - 0.5 * std::log(s2) + gh.t(i) * gh.t(i) + std::log(sd);
      a(i) = std::log(gh.w(i) / std::sqrt(kPi)) + l + lr;
    }
    const double amax = a.maxCoeff();
    return amax + std::log((a.array() - amax).exp().sum());
  }

  // Inverse link.
  double inv_link(double f) const {
    switch (family) {
      case Family::gaussian: return f;
      case Family::probit: return 0.5 * std::erfc(-f / std::sqrt(2.0));
      case Family::logit: return logistic(f);
      case Family::poisson: return std::exp(f);
    }
    return f;
  }

  // Posterior mean and sd of the mean response g^{-1}(f), f ~ N(m, s2).
  void response_moments(double m, double s2, double& mean, double& sd) const {
    switch (family) {
      case Family::gaussian:
        mean = m;
        sd = std::sqrt(s2);
        return;
      case Family::poisson:
        mean = std::exp(m + 0.5 * s2);
        sd = mean * std::sqrt(std::max(std::expm1(s2), 0.0));
        return;
      default: {
        mean = gh.expect(m, s2, [this](double f) { return inv_link(f); });
        const double m2 = gh.expect(m, s2, [this](double f) { const double p = inv_link(f); return p * p; });
        if (family == Family::probit) mean = 0.5 * std::erfc(-m / std::sqrt(2.0 * (1.0 + s2)));
        sd = std::sqrt(std::max(m2 - mean * mean, 0.0));
        return;
      }
    }
  }
};

}  // namespace scalegp
