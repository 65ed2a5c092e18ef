// Likelihoods of a latent f with prior weights w: Gaussian (identity link),
// Bernoulli (probit, logit; y may be a proportion in [0, 1]), Poisson (log),
// Gamma (log), negative binomial (log) and the scaled Student-t (identity;
// mgcv's scat()).
// For q(f) = N(m, s2) they give the expected log-likelihood
//   v = E[log p(y | f)],  dv/dm,  dv/ds2 (= E[l''] / 2, Price's theorem)
// and its derivative in the likelihood's own parameter (Likelihood::log_noise:
// the Gaussian log noise variance, the Gamma log shape, the negative
// binomial log theta, the Student-t log squared scale) and, for the
// Student-t, in its second parameter Likelihood::log_df (log(df - min_df)),
// in closed form where one exists and by quadrature otherwise, plus
// predictive densities and response moments.
//
// The Student-t's log density is not concave in f: E[l''] / 2 (dv) is
// positive for rows far from the mean (|y - f| > sqrt(df) scale), and the
// callers keep its sign.  Its expectations use expect_t()'s own rules (the
// log density has poles at y +- i sqrt(df scale^2), not a transition at 0).
//
// Quadrature (binomial, negative binomial): for s2 <= 1 Gauss-Hermite with nodes
// m + sqrt(2 s2) t_i, whose derivatives in m and s2 are those of the rule
// itself, so a gradient of the ELBO is the derivative of the ELBO computed
// (with fewer nodes for small variances: 6 up to s2 = 0.01, 8 up to 0.04,
// 10 up to 0.1, 14 up to 0.25, each accurate there to about 3e-12 relative;
// the value jumps by that much at the switches); for larger variances, where
// the likelihood's transition near f = 0 is narrow compared with sd and no
// Gauss-Hermite rule of modest size resolves it, a composite Gauss-Legendre
// rule over t = (f - m) / sd in [-10, 10] with panels of width 1 in t and at
// most 2 in f where |f| < 12 (probit).  Both are accurate to about 1e-10
// (tests/cpp/test_likelihoods.cpp).  The logit and the negative binomial
// are linear in the softplus sp(g) = log(1 + e^g) (the negative binomial's
// log(theta + e^f) is log(theta) + sp(g) with g = f - log(theta), its
// transition moved to f = log(theta)), and use its expectation instead: up
// to s2 = 0.01 a Taylor series in s2 (softplus_series()), above s2 = 1
// max(g, 0) in closed form plus a rule fixed in g for the rest
// (SoftplusWideRule), both within 1e-11 of references, with derivatives
// those of the value computed; in between the Gauss-Hermite rules.
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
// 1 in t, split to width at most `width` in f in the zone
// |f - centre| < half (by default |f| < 12, width 2: the transition of the
// binomial and negative binomial likelihoods).
template <class Add>
void composite_normal_rule(const GaussLegendre& gl, double m, double s2, Add&& add, double centre = 0.0,
                           double half = 12.0, double width = 2.0) {
  const double sd = std::sqrt(s2);
  const double z0 = (centre - half - m) / sd, z1 = (centre + half - m) / sd;  // the zone, in t
  const double cst = 1.0 / std::sqrt(2.0 * kPi);
  for (int k = -10; k < 10; ++k) {
    double a = k, b = k + 1.0;
    // up to three pieces: below, inside and above the zone
    const double cuts[4] = {a, std::min(b, std::max(a, z0)), std::max(a, std::min(b, z1)), b};
    for (int p = 0; p < 3; ++p) {
      const double lo = cuts[p], hi = cuts[p + 1];
      if (!(hi > lo)) continue;
      const double panel = p == 1 ? std::min(1.0, width / sd) : 1.0;
      const int pieces = std::max(1, static_cast<int>(std::ceil((hi - lo) / panel - 1e-12)));
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

// E[sp(f)], E[p(f)] = dE[sp]/dm and dE[sp]/ds2 for f ~ N(m, s2) with
// s2 >= 1, sp(f) = log(1 + e^f), p = logistic: sp = max(f, 0) + r(f) with
// r(f) = log1p(e^-|f|), so
//   E max(f, 0) = m Phi(m / s) + s phi(m / s)   (d/dm: Phi(m / s); d/ds2: phi(m / s) / (2 s)),
//   E r(f) = int r(f) N(f; m, s2) df
// by a composite Gauss-Legendre rule in f fixed once: panels of width 2 on
// [0, 30] and their mirror images (r is even and analytic on each side of
// its kink at 0, within pi of the real line; r(30) = 9e-14), r times the
// weight stored at each node.  Its derivatives in m and s2 are those of
// N at the nodes.  On each side the densities come from one exp() per node
// of a panel and a recurrence over the panels (exp(-(x + h)^2 / (2 s2)) =
// exp(-x^2 / (2 s2)) rho, rho multiplied by exp(-h^2 / s2) a panel),
// outwards from the panel nearest the mean, so nothing overflows; about 60
// exp() a row against the composite rule's 660 transcendentals.
struct SoftplusWideRule {
  static constexpr double kWidth = 2.0;
  static constexpr int kPanels = 15;
  VectorXd c;   // node offsets in a panel (0, kWidth)
  MatrixXd rw;  // rw(j, k): weight times r at node j of panel k
  explicit SoftplusWideRule(const GaussLegendre& gl) : c(0.5 * kWidth * (gl.t.array() + 1.0)), rw(gl.t.size(), kPanels) {
    for (Index k = 0; k < kPanels; ++k)
      for (Index j = 0; j < c.size(); ++j)
        rw(j, k) = 0.5 * kWidth * gl.w(j) * std::log1p(std::exp(-(k * kWidth + c(j))));
  }
  struct Sums {
    double s0 = 0, s1 = 0, s2 = 0;  // sum of rw e, rw e x, rw e x^2 (x = f - mu, e = exp(-x^2 / (2 var)))
  };
  // The sums over the nodes f >= 0 for the mean mu.
  Sums half(double mu, double var) const {
    Sums out;
    const double q = std::exp(-kWidth * kWidth / var);
    // (clamped before the cast: no float-to-integer overflow for any mu)
    const Index k0 = static_cast<Index>(std::min<double>(kPanels - 1, std::max(0.0, std::floor(mu / kWidth))));
    for (Index j = 0; j < c.size(); ++j) {
      const double x0 = k0 * kWidth + c(j) - mu, e0 = std::exp(-0.5 * x0 * x0 / var);
      double e = e0, rho = std::exp(-(2.0 * x0 * kWidth + kWidth * kWidth) / (2.0 * var)), x = x0;
      for (Index k = k0; k < kPanels; ++k) {  // upwards
        const double t = rw(j, k) * e;
        out.s0 += t;
        out.s1 += t * x;
        out.s2 += t * x * x;
        e *= rho;
        rho *= q;
        x += kWidth;
      }
      e = e0;
      rho = std::exp((2.0 * x0 * kWidth - kWidth * kWidth) / (2.0 * var));
      x = x0;
      for (Index k = k0 - 1; k >= 0; --k) {  // downwards
        e *= rho;
        rho *= q;
        x -= kWidth;
        const double t = rw(j, k) * e;
        out.s0 += t;
        out.s1 += t * x;
        out.s2 += t * x * x;
      }
    }
    return out;
  }
  struct Moments {
    double sp, p, dsp;  // E sp(f), E p(f), dE sp / ds2
  };
  Moments expect(double m, double s2) const {
    const double s = std::sqrt(s2), z = m / s;
    const double phi = std::exp(-0.5 * z * z) / std::sqrt(2.0 * kPi), Phi = 0.5 * std::erfc(-z / std::sqrt(2.0));
    const Sums a = half(m, s2), b = half(-m, s2);  // f >= 0, and f <= 0 as -f >= 0 (mean -m)
    const double cn = 1.0 / std::sqrt(2.0 * kPi * s2);
    Moments r;
    r.sp = m * Phi + s * phi + cn * (a.s0 + b.s0);
    r.p = Phi + cn * (a.s1 - b.s1) / s2;
    r.dsp = phi / (2.0 * s) + cn * ((a.s2 + b.s2) / (2.0 * s2 * s2) - (a.s0 + b.s0) / (2.0 * s2));
    return r;
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
// The logit's log-likelihood l = w (y f - log(1 + e^f)), its derivative
// d1 = w (y - p) and p = logistic(f), from one exp and one log1p
// (log(1 + e^f) = max(f, 0) + log1p(e^-|f|)); e = e^-|f| (Likelihood::loglik()
// and expect_softplus()).
struct LogitTerms {
  double l, d1, p, e;
};
inline LogitTerms logit_terms(double y, double w, double f) {
  const double e = std::exp(-std::abs(f)), a = std::log1p(e);
  const double p = f >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
  return {-w * (f >= 0 ? y * a + (1 - y) * (f + a) : y * (a - f) + (1 - y) * a), w * (y - p), p, e};
}
inline double logistic(double x) { return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)); }

// digamma(x) = d log Gamma(x) / dx for x > 0: the recurrence
// psi(x) = psi(x + 1) - 1 / x up to x >= 10, then the asymptotic series
// log x - 1 / (2x) - sum_k B_2k / (2k x^2k) to k = 6 (absolute error below
// 1e-15 there).
inline double digamma(double x) {
  if (!(x > 0)) return std::numeric_limits<double>::quiet_NaN();
  double r = 0;
  while (x < 10.0) {
    r -= 1.0 / x;
    x += 1.0;
  }
  const double z = 1.0 / (x * x);
  const double series =
      z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760))))));
  return r + std::log(x) - 0.5 / x - series;
}

enum class Family { gaussian, probit, logit, poisson, gamma, negbin, scat };

inline Family family_from_string(const std::string& s) {
  if (s == "gaussian") return Family::gaussian;
  if (s == "probit") return Family::probit;
  if (s == "logit") return Family::logit;
  if (s == "poisson") return Family::poisson;
  if (s == "gamma") return Family::gamma;
  if (s == "negbin") return Family::negbin;
  if (s == "scat") return Family::scat;
  throw std::invalid_argument("unknown likelihood '" + s + "'");
}

struct Expectation {
  double v = 0, dm = 0, dv = 0;  // E log p, d/dm, d/ds2
  // d/d Likelihood::log_noise, the likelihood's own parameter: the Gaussian
  // log noise variance, the Gamma log shape, the negative binomial log theta,
  // the Student-t log squared scale (0 for the families without one)
  double dlognoise = 0;
  double dlogdf = 0;  // d/d Likelihood::log_df (Student-t; else 0)
};

class Likelihood {
 public:
  Family family;
  // The likelihood's own parameter, on the log scale (has_noise()):
  // Gaussian: log(noise variance - kNoiseFloor); Gamma: log shape k
  // (variance mu^2 / k); negative binomial: log theta (variance
  // mu + mu^2 / theta); Student-t: log(scale^2 - kNoiseFloor).  Unused by
  // the other families.
  double log_noise = 0.0;
  // The Student-t's degrees of freedom df = min_df + exp(log_df) (mgcv's
  // scat(): df above min.df, by default 3, where the variance is finite).
  double log_df = 0.0, min_df = 3.0;
  static constexpr double kMinLogDf = -15.0, kMaxLogDf = 12.0;
  static double clamp_log_df(double v) { return std::min(kMaxLogDf, std::max(kMinLogDf, v)); }
  static constexpr double kNoiseFloor = 1e-6;
  // Bounds of log_noise in every fit (the search's box, and the closed-form
  // noise rounds of the decoupled engine).
  static constexpr double kMinLogNoise = -20.0, kMaxLogNoise = 10.0;
  static double clamp_log_noise(double v) { return std::min(kMaxLogNoise, std::max(kMinLogNoise, v)); }
  static constexpr double kMaxGhVar = 1.0;   // Gauss-Hermite up to this latent variance
  static constexpr double kSeriesVar = 0.01;  // logit, negative binomial: a Taylor series up to this one (softplus_series())
  static constexpr double kMaxLogRate = 700.0;  // Poisson: exp() arguments are capped here (finite, huge)
  GaussHermite gh;
  GaussLegendre gl;
  SoftplusWideRule wide{gl};

  explicit Likelihood(Family f = Family::gaussian, int gh_points = 20) : family(f), gh(gh_points), gl(10) {
    for (const auto& r : kLadder)
      if (r.nodes < gh_points) ladder_.push_back({r.max_var, GaussHermite(r.nodes)});
  }

  // The Gaussian noise variance, the Student-t squared scale.
  double noise_var() const { return kNoiseFloor + std::exp(log_noise); }
  // Whether the family has its own parameter in log_noise (estimated unless
  // Settings::learn_noise is false).
  bool has_noise() const {
    return family == Family::gaussian || family == Family::gamma || family == Family::negbin ||
           family == Family::scat;
  }
  // Whether it has a second one in log_df (the Student-t; estimated unless
  // Settings::learn_df is false).
  bool has_df() const { return family == Family::scat; }
  // Whether log p(y | f) is concave in f (all but the Student-t): then a
  // positive E[l''] / 2 is quadrature rounding, and the passes over the data
  // drop it from the natural steps' Q (so their precision stays positive
  // definite); otherwise they keep its sign.
  bool log_concave() const { return family != Family::scat; }
  double df() const { return min_df + std::exp(log_df); }
  // The Gamma shape k, the negative binomial theta: exp(log_noise).
  double param() const { return std::exp(log_noise); }
  // The shift of the quadrature variable, g = f - shift(): log theta for the
  // negative binomial (its transition sits at f = log theta), else 0.
  double shift() const { return family == Family::negbin ? log_noise : 0.0; }

  // log p(y | f) and its first two derivatives in f, weight w; with dp, also
  // the derivative in log_noise at fixed f (the families with their own
  // parameter other than Gaussian: Gamma, negative binomial).
  void loglik(double y, double w, double f, double& l, double& d1, double& d2, double* dp = nullptr) const {
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
        const LogitTerms t = logit_terms(y, w, f);
        l = t.l;
        d1 = t.d1;
        d2 = -w * t.p * (1 - t.p);
        return;
      }
      case Family::poisson: {
        const double mu = std::exp(std::min(f, kMaxLogRate));
        l = w * (y * f - mu - std::lgamma(y + 1.0));
        d1 = w * (y - mu);
        d2 = -w * mu;
        return;
      }
      case Family::gamma: {  // shape a = k w (precision weight, as glm's Gamma), mean e^f
        const double a = param() * w;
        if (!(a > 0)) {
          l = d1 = d2 = 0;
          if (dp) *dp = 0;
          return;
        }
        const double ye = y * std::exp(std::min(-f, kMaxLogRate));
        l = a * std::log(a) - std::lgamma(a) + (a - 1.0) * std::log(y) - a * f - a * ye;
        d1 = a * (ye - 1.0);
        d2 = -a * ye;
        if (dp) *dp = a * (std::log(a) + 1.0 - digamma(a) + std::log(y) - f - ye);
        return;
      }
      case Family::negbin: {  // w multiplies the log-likelihood (as Poisson's)
        // log p = lgamma(y + th) - lgamma(th) - lgamma(y + 1) + y g - (y + th) log(1 + e^g),
        // g = f - log th
        const double th = param(), g = f - log_noise;
        const double sp = log1pexp(g), p = logistic(g);
        l = w * (std::lgamma(y + th) - std::lgamma(th) - std::lgamma(y + 1.0) + y * g - (y + th) * sp);
        d1 = w * (y - (y + th) * p);
        d2 = -w * (y + th) * p * (1.0 - p);
        if (dp) *dp = w * (th * (digamma(y + th) - digamma(th) + 1.0 - sp) - (y + th) * (1.0 - p));
        return;
      }
      case Family::scat: {  // squared scale s2 / w (precision weight, as the Gaussian's)
        if (!(w > 0)) {
          l = d1 = d2 = 0;
          if (dp) *dp = 0;
          return;
        }
        const double nu = df(), sc2 = noise_var() / w, a = nu * sc2, r = y - f, q = a + r * r;
        l = t_constant(nu, sc2) - 0.5 * (nu + 1.0) * std::log1p(r * r / a);
        d1 = (nu + 1.0) * r / q;
        d2 = (nu + 1.0) * (r * r - a) / (q * q);
        if (dp) *dp = (noise_var() - kNoiseFloor) / noise_var() * (-0.5 + 0.5 * (nu + 1.0) * r * r / q);
        return;
      }
    }
  }

  // The Student-t's log normalising constant lgamma((nu + 1) / 2) -
  // lgamma(nu / 2) - log(nu pi sc2) / 2 (squared scale sc2).
  static double t_constant(double nu, double sc2) {
    return std::lgamma(0.5 * (nu + 1.0)) - std::lgamma(0.5 * nu) - 0.5 * std::log(nu * kPi * sc2);
  }

  // Calls add(f, weight, t) for a rule for E[h(f)], f ~ N(m, s2), that
  // resolves the Student-t's log density around y (poles at y +- i sqrt(a),
  // a = df scale^2): the gh_points Gauss-Hermite rule (t its node, for
  // derivatives of the rule) while s2 <= a / 8, where it is accurate to
  // about 1e-10 relative; else the composite rule with panels at most
  // sqrt(a) wide within 12 sqrt(a) of y (t = NaN).
  template <class Add>
  void t_rule(double y, double a, double m, double s2, Add&& add) const {
    if (s2 <= a / 8.0) {
      const double sd = std::sqrt(2.0 * s2), c = 1.0 / std::sqrt(kPi);
      for (Index i = 0; i < gh.t.size(); ++i) add(m + sd * gh.t(i), c * gh.w(i), gh.t(i));
      return;
    }
    const double ra = std::sqrt(a);
    composite_normal_rule(gl, m, s2, [&](double f, double wt) { add(f, wt, std::numeric_limits<double>::quiet_NaN()); },
                          y, 12.0 * ra, ra);
  }

  // E[log p(y | f)] of the Student-t and its derivatives: with
  // u = (y - f)^2 / a, a = df scale^2 / w, the expectations E log1p(u),
  // E[u / (1 + u)], E[l'] and E[l' t] (Gauss-Hermite) or E[l''] (composite)
  // give v, dm, dv and the derivatives in log_noise and log_df.
  Expectation expect_t(double y, double w, double m, double s2) const {
    Expectation e;
    if (!(w > 0)) return e;  // a zero weight removes the row
    s2 = std::max(s2, 0.0);
    const double nu = df(), sc2 = noise_var() / w, a = nu * sc2;
    double L = 0, U = 0, D1 = 0, DT = 0, D2 = 0;
    bool gauss_hermite = true;
    t_rule(y, a, m, s2, [&](double f, double wt, double t) {
      const double r = y - f, q = a + r * r, d1 = (nu + 1.0) * r / q;
      L += wt * std::log1p(r * r / a);
      U += wt * r * r / q;
      D1 += wt * d1;
      D2 += wt * (nu + 1.0) * (r * r - a) / (q * q);
      if (std::isnan(t)) gauss_hermite = false; else DT += wt * d1 * t;
    });
    e.v = t_constant(nu, sc2) - 0.5 * (nu + 1.0) * L;
    e.dm = D1;
    e.dv = gauss_hermite && s2 > 1e-10 ? DT / std::sqrt(2.0 * s2) : 0.5 * D2;
    e.dlognoise = (noise_var() - kNoiseFloor) / noise_var() * (-0.5 + 0.5 * (nu + 1.0) * U);
    e.dlogdf = (nu - min_df) * (0.5 * digamma(0.5 * (nu + 1.0)) - 0.5 * digamma(0.5 * nu) - 0.5 / nu - 0.5 * L +
                                0.5 * (nu + 1.0) / nu * U);
    return e;
  }

  // The latent value a row starts from, as glm's mustart: the link of y
  // moved inside the mean's range (Poisson, negative binomial: y + 0.1;
  // Gamma: y; binomial: (w y + 0.5) / (w + 1), for probit through the
  // logit scaled by 1 / 1.702); Gaussian: y.
  double start_value(double y, double w) const {
    switch (family) {
      case Family::poisson:
      case Family::negbin: return std::log(std::max(y, 0.0) + 0.1);
      case Family::gamma: return std::log(std::max(y, 1e-300));
      case Family::scat: return y;
      case Family::logit:
      case Family::probit: {
        const double p = (std::max(w, 0.0) * y + 0.5) / (std::max(w, 0.0) + 1.0), f = std::log(p / (1.0 - p));
        return family == Family::logit ? f : f / 1.702;
      }
      case Family::gaussian: break;
    }
    return y;
  }

  // What the first natural step of q (size 1, variances zero) reads from a
  // row whose latent mean is m: the likelihood expanded at start_value(),
  // not at m, with dE/dm moved to the working response there,
  // dm = l'(f0) + l''(f0) (m - f0), dv = l''(f0) / 2.  The step is then the
  // first iteration of IRLS from glm's start, whatever q's mean (before, it
  // was a Newton step from q's mean: from m = 0 that step aims a Poisson row
  // with y = 33 at f = 32, e^32 = 8e13; glm starts from the data instead).
  Expectation start_expect(double y, double w, double m) const {
    if (family == Family::gaussian) return expect(y, w, m, 0.0);
    const double f0 = start_value(y, w);
    Expectation e = expect(y, w, f0, 0.0);
    e.dm += 2.0 * e.dv * (m - f0);
    return e;
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
      case Family::gamma: {  // E e^{-f} = e^{-m + s2 / 2}
        const double a = param() * w;
        if (!(a > 0)) return e;
        const double ye = y * std::exp(std::min(-m + 0.5 * s2, kMaxLogRate));
        e.v = a * std::log(a) - std::lgamma(a) + (a - 1.0) * std::log(y) - a * m - a * ye;
        e.dm = a * (ye - 1.0);
        e.dv = -0.5 * a * ye;
        e.dlognoise = a * (std::log(a) + 1.0 - digamma(a) + std::log(y) - m - ye);
        return e;
      }
      case Family::scat:
        return expect_t(y, w, m, s2);
      case Family::logit:
      case Family::negbin:
        return s2 <= kSeriesVar || s2 > kMaxGhVar ? expect_softplus(y, w, m, s2) : expect_gh(y, w, m, s2);
      default:
        return s2 <= kMaxGhVar ? expect_gh(y, w, m, s2) : expect_composite(y, w, m, s2);
    }
  }

  // Logit and negative binomial at s2 <= kSeriesVar (the rows of large
  // fits) or s2 > kMaxGhVar, through the softplus sp(g) = log(1 + e^g):
  // the logit's l(f) = w (y f - sp(f)), the negative binomial's
  // l(f) = w (c + y g - (y + th) sp(g)) with g = f - log th.  With W the
  // softplus' weight (w; w (y + th)) and d the departures of E sp, E p and
  // dE sp / ds2 from sp(g), p(g) and 0 (softplus_series() up to kSeriesVar,
  // SoftplusWideRule above kMaxGhVar):
  //   v = l(m) - W d.v,  dv/dm = l'(m) - W d.dm,  dv/ds2 = -W d.dv,
  // and the negative binomial's dv/dlog th (loglik()'s dp, where sp and p
  // enter linearly) dp(m) - w th d.v + W d.dm.  The logit's series costs
  // one exp and one log1p a row, the negative binomial's one lgamma triple
  // and one digamma pair (the 6-node rule: six of each).
  Expectation expect_softplus(double y, double w, double m, double s2) const {
    Expectation e;
    const bool nb = family == Family::negbin;
    double l, d1, d2, dp = 0, g = m, ex, W = w, th = 0;
    if (nb) {
      loglik(y, w, m, l, d1, d2, &dp);
      g = m - log_noise;
      th = param();
      W = w * (y + th);
      ex = std::exp(-std::abs(g));
    } else {
      const LogitTerms t = logit_terms(y, w, m);
      l = t.l;
      d1 = t.d1;
      ex = t.e;
    }
    SoftplusSeries d;
    if (s2 <= kSeriesVar) {
      d = softplus_series(g, ex, s2);
    } else {
      const SoftplusWideRule::Moments r = wide.expect(g, s2);
      const double p = g >= 0 ? 1.0 / (1.0 + ex) : ex / (1.0 + ex);
      d = {r.sp - (std::max(g, 0.0) + std::log1p(ex)), r.p - p, r.dsp};
    }
    e.v = l - W * d.v;
    e.dm = d1 - W * d.dm;
    e.dv = -W * d.dv;
    if (nb) e.dlognoise = dp - w * th * d.v + W * d.dm;
    return e;
  }

  // For z ~ N(0, 1) and 0 <= s2 <= kSeriesVar, with sp(g) = log(1 + e^g):
  // v = E sp(g + sqrt(s2) z) - sp(g), dm = dv/dg = E p(g + sqrt(s2) z) - p(g),
  // dv = dv/ds2, by the Taylor series sum_k sp^(2k)(g) s2^k / (2^k k!) to
  // k = 5 (dm, dv: its exact derivatives).  With p = logistic(g),
  // u = p (1 - p), a = 1 - 2 p (a^2 = 1 - 4 u), the derivatives
  // sp^(k) = logistic^(k-1) for k = 2..11 are u, u a, u (1 - 6 u),
  // u a (1 - 12 u), u (1 - 30 u + 120 u^2), u a (1 - 60 u + 360 u^2),
  // u (1 - 126 u + 1680 u^2 - 5040 u^3), u a (1 - 252 u + 5040 u^2 - 20160 u^3),
  // u (1 - 510 u + 17640 u^2 - 151200 u^3 + 362880 u^4),
  // u a (1 - 1020 u + 52920 u^2 - 604800 u^3 + 1814400 u^4).  What the
  // series leaves out is below 3e-12 relative in the logit's expectations
  // and their derivatives up to kSeriesVar, 9e-12 in the negative
  // binomial's (weight w (y + theta); tests/cpp/test_likelihoods.cpp).
  // ex = e^-|g|.
  struct SoftplusSeries {
    double v, dm, dv;
  };
  static SoftplusSeries softplus_series(double g, double ex, double s2) {
    s2 = std::max(s2, 0.0);
    const double u = ex / ((1.0 + ex) * (1.0 + ex)), a = (g >= 0 ? ex - 1.0 : 1.0 - ex) / (1.0 + ex);
    const double h2 = u, h3 = u * a, h4 = u * (1.0 - 6.0 * u), h5 = u * a * (1.0 - 12.0 * u);
    const double h6 = u * (1.0 + u * (-30.0 + 120.0 * u)), h7 = u * a * (1.0 + u * (-60.0 + 360.0 * u));
    const double h8 = u * (1.0 + u * (-126.0 + u * (1680.0 - 5040.0 * u)));
    const double h9 = u * a * (1.0 + u * (-252.0 + u * (5040.0 - 20160.0 * u)));
    const double h10 = u * (1.0 + u * (-510.0 + u * (17640.0 + u * (-151200.0 + 362880.0 * u))));
    const double h11 = u * a * (1.0 + u * (-1020.0 + u * (52920.0 + u * (-604800.0 + 1814400.0 * u))));
    SoftplusSeries r;
    r.v = s2 * (0.5 * h2 + s2 * (h4 / 8.0 + s2 * (h6 / 48.0 + s2 * (h8 / 384.0 + s2 * h10 / 3840.0))));
    r.dm = s2 * (0.5 * h3 + s2 * (h5 / 8.0 + s2 * (h7 / 48.0 + s2 * (h9 / 384.0 + s2 * h11 / 3840.0))));
    r.dv = 0.5 * h2 + s2 * (0.25 * h4 + s2 * (h6 / 16.0 + s2 * (h8 / 96.0 + s2 * h10 / 768.0)));
    return r;
  }

  // Gauss-Hermite: v = c sum_i w_i l(x_i), x_i = m + sd t_i, sd = sqrt(2 s2),
  // c = 1 / sqrt(pi); its derivatives dv/dm = c sum w_i l'(x_i) and
  // dv/ds2 = c sum w_i l'(x_i) t_i / sd (below s2 = 1e-10, where that ratio
  // loses digits, Price's c sum w_i l''(x_i) / 2, equal to it there); the
  // derivative in log_noise (negative binomial) c sum w_i dl/dlog_noise(x_i).
  Expectation expect_gh(double y, double w, double m, double s2) const {
    Expectation e;
    s2 = std::max(s2, 0.0);
    const GaussHermite& rule = rule_for(s2);
    const double sd = std::sqrt(2.0 * s2);
    const bool par = family == Family::negbin;
    double dt = 0, d2sum = 0;
    for (Index i = 0; i < rule.t.size(); ++i) {
      double l, d1, d2, dp = 0;
      loglik(y, w, m + sd * rule.t(i), l, d1, d2, par ? &dp : nullptr);
      e.v += rule.w(i) * l;
      e.dm += rule.w(i) * d1;
      dt += rule.w(i) * d1 * rule.t(i);
      d2sum += rule.w(i) * d2;
      e.dlognoise += rule.w(i) * dp;
    }
    const double c = 1.0 / std::sqrt(kPi);
    e.v *= c;
    e.dm *= c;
    e.dv = s2 > 1e-10 ? c * dt / sd : 0.5 * c * d2sum;
    e.dlognoise *= c;
    return e;
  }

  // The Gauss-Hermite rule expect_gh() uses at latent variance s2: the
  // smallest of the ladder accurate there, else the gh_points rule.
  const GaussHermite& rule_for(double s2) const {
    for (const Rung& r : ladder_)
      if (s2 <= r.max_var) return r.rule;
    return gh;
  }

  // The composite rule of composite_normal_rule() for v, E[l'] and E[l''] / 2
  // (and E[dl/dlog_noise], negative binomial), over g = f - shift().
  Expectation expect_composite(double y, double w, double m, double s2) const {
    Expectation e;
    const double sh = shift();
    const bool par = family == Family::negbin;
    composite_normal_rule(gl, m - sh, s2, [&](double g, double a) {
      double l, d1, d2, dp = 0;
      loglik(y, w, g + sh, l, d1, d2, par ? &dp : nullptr);
      e.v += a * l;
      e.dm += a * d1;
      e.dv += 0.5 * a * d2;
      e.dlognoise += a * dp;
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
      case Family::scat: {  // by expect_t()'s rule (the density has heavy tails: no underflow)
        const double nu = df(), sc2 = noise_var(), a = nu * sc2, c = t_constant(nu, sc2);
        double p = 0;
        t_rule(y, a, m, std::max(s2, 0.0), [&](double f, double wt, double) {
          p += wt * std::exp(c - 0.5 * (nu + 1.0) * std::log1p((y - f) * (y - f) / a));
        });
        return std::log(p);
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
      case Family::gaussian:
      case Family::scat: return f;
      case Family::probit: return 0.5 * std::erfc(-f / std::sqrt(2.0));
      case Family::logit: return logistic(f);
      case Family::poisson:
      case Family::gamma:
      case Family::negbin: return std::exp(std::min(f, kMaxLogRate));
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
      case Family::scat:
        mean = m;
        sd = std::sqrt(s2);
        return;
      case Family::poisson:
      case Family::gamma:
      case Family::negbin:  // log link: a log-normal mean
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
