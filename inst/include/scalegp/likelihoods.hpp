// Likelihoods of a latent f with prior weights w: Gaussian (identity link),
// Bernoulli (probit, logit; y may be a proportion in [0, 1]) and Poisson (log).
// For q(f) = N(m, s2) they give the expected log-likelihood
//   v = E[log p(y | f)],  dv/dm,  dv/ds2 (= E[l''] / 2, Price's theorem)
// in closed form where one exists and by quadrature otherwise, plus
// predictive densities and response moments.
//
// Quadrature (binomial): for s2 <= 1 Gauss-Hermite with nodes
// m + sqrt(2 s2) t_i, whose derivatives in m and s2 are those of the rule
// itself, so a gradient of the ELBO is the derivative of the ELBO computed
// (with fewer nodes for small variances: 6 up to s2 = 0.01, 8 up to 0.04,
// 10 up to 0.1, 14 up to 0.25, each accurate there to about 3e-12 relative;
// the value jumps by that much at the switches);
// for larger variances, where the likelihood's transition near f = 0 is
// narrow compared with sd and no Gauss-Hermite rule of modest size resolves
// it, a composite Gauss-Legendre rule over t = (f - m) / sd in [-10, 10]
// with panels of width 1 in t and at most 2 in f where |f| < 12.  Both are
// accurate to about 1e-10 (tests/cpp/test_likelihoods.cpp).
#pragma once
#include "linalg.hpp"
#include <algorithm>
#include <Eigen/Eigenvalues>
#include <limits>
#include <vector>

namespace scalegp {

constexpr double kLog2Pi = 1.8378770664093454836;
constexpr double kPi = 3.14159265358979323846;

// Gauss-Legendre rule on [-1, 1], by the Golub-Welsch algorithm.
struct GaussLegendre {
  VectorXd t, w;
  explicit GaussLegendre(int n = 10) {
    MatrixXd J = MatrixXd::Zero(n, n);
    for (int i = 1; i < n; ++i) J(i, i - 1) = J(i - 1, i) = i / std::sqrt(4.0 * i * i - 1.0);
    Eigen::SelfAdjointEigenSolver<MatrixXd> es(J);
    t = es.eigenvalues();
    w = 2.0 * es.eigenvectors().row(0).transpose().array().square();
  }
};

// Calls add(f, weight) for the nodes of a composite Gauss-Legendre rule for
// E[h(f)], f ~ N(m, s2): over t = (f - m) / sd in [-10, 10], panels of width
// 1 in t, split to width at most 2 in f where |f| < 12.
template <class Add>
void composite_normal_rule(const GaussLegendre& gl, double m, double s2, Add&& add) {
  const double sd = std::sqrt(s2);
  const double z0 = (-12.0 - m) / sd, z1 = (12.0 - m) / sd;  // the zone |f| < 12, in t
  const double cst = 1.0 / std::sqrt(2.0 * kPi);
  for (int k = -10; k < 10; ++k) {
    double a = k, b = k + 1.0;
    // up to three pieces: below, inside and above the zone
    const double cuts[4] = {a, std::min(b, std::max(a, z0)), std::max(a, std::min(b, z1)), b};
    for (int p = 0; p < 3; ++p) {
      const double lo = cuts[p], hi = cuts[p + 1];
      if (!(hi > lo)) continue;
      const double width = p == 1 ? std::min(1.0, 2.0 / sd) : 1.0;
      const int pieces = std::max(1, static_cast<int>(std::ceil((hi - lo) / width - 1e-12)));
      const double step = (hi - lo) / pieces;
      for (int q = 0; q < pieces; ++q) {
        const double c = lo + (q + 0.5) * step, half = 0.5 * step;
        for (Index i = 0; i < gl.t.size(); ++i) {
          const double t = c + half * gl.t(i);
          add(m + sd * t, half * gl.w(i) * cst * std::exp(-0.5 * t * t));
        }
      }
    }
  }
}

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
  // Bounds of log_noise in every fit (the search's box, and the closed-form
  // noise rounds of the decoupled engine).
  static constexpr double kMinLogNoise = -20.0, kMaxLogNoise = 10.0;
  static double clamp_log_noise(double v) { return std::min(kMaxLogNoise, std::max(kMinLogNoise, v)); }
  static constexpr double kMaxGhVar = 1.0;   // Gauss-Hermite up to this latent variance
  static constexpr double kMaxLogRate = 700.0;  // Poisson: exp() arguments are capped here (finite, huge)
  GaussHermite gh;
  GaussLegendre gl;

  explicit Likelihood(Family f = Family::gaussian, int gh_points = 20) : family(f), gh(gh_points), gl(10) {
    for (const auto& r : kLadder)
      if (r.nodes < gh_points) ladder_.push_back({r.max_var, GaussHermite(r.nodes)});
  }

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
      case Family::logit: {  // one exp and one log1p: log(1 + e^f) = max(f, 0) + log1p(e^-|f|)
        const double e = std::exp(-std::abs(f)), a = std::log1p(e);
        const double p = f >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
        l = -w * (f >= 0 ? y * a + (1 - y) * (f + a) : y * (a - f) + (1 - y) * a);
        d1 = w * (y - p);
        d2 = -w * p * (1 - p);
        return;
      }
      case Family::poisson: {
        const double mu = std::exp(std::min(f, kMaxLogRate));
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
        const double mu = std::exp(std::min(m + 0.5 * s2, kMaxLogRate));
        e.v = w * (y * m - mu - std::lgamma(y + 1.0));
        e.dm = w * (y - mu);
        e.dv = -0.5 * w * mu;
        return e;
      }
      default:
        return s2 <= kMaxGhVar ? expect_gh(y, w, m, s2) : expect_composite(y, w, m, s2);
    }
  }

  // Gauss-Hermite: v = c sum_i w_i l(x_i), x_i = m + sd t_i, sd = sqrt(2 s2),
  // c = 1 / sqrt(pi); its derivatives dv/dm = c sum w_i l'(x_i) and
  // dv/ds2 = c sum w_i l'(x_i) t_i / sd (below s2 = 1e-10, where that ratio
  // loses digits, Price's c sum w_i l''(x_i) / 2, equal to it there).
  Expectation expect_gh(double y, double w, double m, double s2) const {
    Expectation e;
    s2 = std::max(s2, 0.0);
    const GaussHermite& rule = rule_for(s2);
    const double sd = std::sqrt(2.0 * s2);
    double dt = 0, d2sum = 0;
    for (Index i = 0; i < rule.t.size(); ++i) {
      double l, d1, d2;
      loglik(y, w, m + sd * rule.t(i), l, d1, d2);
      e.v += rule.w(i) * l;
      e.dm += rule.w(i) * d1;
      dt += rule.w(i) * d1 * rule.t(i);
      d2sum += rule.w(i) * d2;
    }
    const double c = 1.0 / std::sqrt(kPi);
    e.v *= c;
    e.dm *= c;
    e.dv = s2 > 1e-10 ? c * dt / sd : 0.5 * c * d2sum;
    return e;
  }

  // The Gauss-Hermite rule expect_gh() uses at latent variance s2: the
  // smallest of the ladder accurate there, else the gh_points rule.
  const GaussHermite& rule_for(double s2) const {
    for (const Rung& r : ladder_)
      if (s2 <= r.max_var) return r.rule;
    return gh;
  }

  // The composite rule of composite_normal_rule() for v, E[l'] and E[l''] / 2.
  Expectation expect_composite(double y, double w, double m, double s2) const {
    Expectation e;
    composite_normal_rule(gl, m, s2, [&](double f, double a) {
      double l, d1, d2;
      loglik(y, w, f, l, d1, d2);
      e.v += a * l;
      e.dm += a * d1;
      e.dv += 0.5 * a * d2;
    });
    return e;
  }

  // E[h(f)], f ~ N(m, s2), by the rule expect() uses for that variance.
  template <class F>
  double normal_expect(double m, double s2, F&& h) const {
    if (s2 <= kMaxGhVar) return gh.expect(m, s2, h);
    double acc = 0;
    composite_normal_rule(gl, m, s2, [&](double f, double a) { acc += a * h(f); });
    return acc;
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
      if (!std::isfinite(step)) break;
      double t = 1.0, e1, e2, hn = h(f + step, e1, e2);
      while (!(hn >= hf) && t > 1e-12) {
        t *= 0.5;
        hn = h(f + t * step, e1, e2);
      }
      if (!(hn >= hf)) break;  // no ascent along the Newton direction: at the mode to rounding
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
      case Family::poisson: return std::exp(std::min(f, kMaxLogRate));
    }
    return f;
  }

 private:
  // Nodes enough for E[log p], E[l'] and E[l' t] to about 3e-12 relative
  // for logit and probit up to the variance max_var (measured against a
  // 60-node rule over m in [-12, 12]; tests/cpp/test_likelihoods.cpp).
  struct LadderStep {
    int nodes;
    double max_var;
  };
  static constexpr LadderStep kLadder[4] = {{6, 0.01}, {8, 0.04}, {10, 0.1}, {14, 0.25}};
  struct Rung {
    double max_var;
    GaussHermite rule;
  };
  std::vector<Rung> ladder_;

 public:
  // Posterior mean and sd of the mean response g^{-1}(f), f ~ N(m, s2).
  void response_moments(double m, double s2, double& mean, double& sd) const {
    switch (family) {
      case Family::gaussian:
        mean = m;
        sd = std::sqrt(s2);
        return;
      case Family::poisson:
        mean = std::exp(std::min(m + 0.5 * s2, kMaxLogRate));
        sd = mean * std::sqrt(std::max(std::expm1(std::min(s2, kMaxLogRate)), 0.0));
        return;
      default: {
        mean = normal_expect(m, s2, [this](double f) { return inv_link(f); });
        const double m2 = normal_expect(m, s2, [this](double f) { const double p = inv_link(f); return p * p; });
        if (family == Family::probit) mean = 0.5 * std::erfc(-m / std::sqrt(2.0 * (1.0 + s2)));
        sd = std::sqrt(std::max(m2 - mean * mean, 0.0));
        return;
      }
    }
  }
};

}  // namespace scalegp
