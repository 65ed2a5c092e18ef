// Tests of likelihoods.hpp: Gauss-Hermite rule, expected log-likelihoods and
// their derivatives against independent numerical integration, tail-accurate
// log Phi / Mills ratio, predictive densities and response moments.
#include <catch2/catch.hpp>
#include "fixtures.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

using namespace scalegp;
using fixtures::central_difference;

namespace {

// Composite Simpson rule with `intervals` (even) sub-intervals.
template <class F>
double simpson(F&& f, double a, double b, int intervals = 20000) {
  const double h = (b - a) / intervals;
  double s = f(a) + f(b);
  for (int i = 1; i < intervals; ++i) s += (i % 2 ? 4.0 : 2.0) * f(a + i * h);
  return s * h / 3.0;
}

double normal_pdf(double f, double m, double s2) {
  return std::exp(-0.5 * (f - m) * (f - m) / s2) / std::sqrt(2.0 * kPi * s2);
}

// E[h(f)], f ~ N(m, s2), by Simpson on [m - 12 sd, m + 12 sd] (20001 points).
template <class F>
double normal_expect(double m, double s2, F&& h) {
  const double sd = std::sqrt(s2);
  return simpson([&](double f) { return h(f) * normal_pdf(f, m, s2); }, m - 12 * sd, m + 12 * sd);
}

// v, dv/dm = E[l'] and dv/ds2 = E[l''] / 2 of lik's log-likelihood by the
// Gauss-Hermite rule r.
Expectation by_rule(const Likelihood& lik, const GaussHermite& r, double y, double w, double m, double s2) {
  auto at = [&](double f, int k) {
    double l, d1, d2;
    lik.loglik(y, w, f, l, d1, d2);
    return k == 0 ? l : (k == 1 ? d1 : 0.5 * d2);
  };
  Expectation e;
  e.v = r.expect(m, s2, [&](double f) { return at(f, 0); });
  e.dm = r.expect(m, s2, [&](double f) { return at(f, 1); });
  e.dv = r.expect(m, s2, [&](double f) { return at(f, 2); });
  return e;
}

// |a - b| relative to 1 + |b|, and its largest value over v, dm and dv.
double rel(double a, double b) { return std::abs(a - b) / (1 + std::abs(b)); }
double rel_err(const Expectation& e, const Expectation& r) {
  return std::max({rel(e.v, r.v), rel(e.dm, r.dm), rel(e.dv, r.dv)});
}

// Reference log Phi, computed in long double (no tail switch).
double ref_log_Phi(double z) {
  const long double zl = z;
  return static_cast<double>(std::log(0.5L * std::erfc(-zl / std::sqrt(2.0L))));
}
// log Phi(z) for z << 0 from the asymptotic series with 25 terms, in long
// double (used where even long double erfc underflows).
double ref_log_Phi_series(double z) {
  const long double zl = z, z2 = zl * zl;
  long double term = 1.0L, sum = 1.0L;
  for (int k = 1; k <= 25; ++k) {
    term *= -(2.0L * k - 1.0L) / z2;
    sum += term;
  }
  return static_cast<double>(-0.5L * z2 - std::log(-zl) -
                             0.5L * std::log(2.0L * 3.14159265358979323846264338327950288L) + std::log(sum));
}
// phi(z) / Phi(z) = -z / sum_k (-1)^k (2k-1)!! / z^{2k} for z << 0.
double ref_mills_series(double z) {
  const long double zl = z, z2 = zl * zl;
  long double term = 1.0L, sum = 1.0L;
  for (int k = 1; k <= 25; ++k) {
    term *= -(2.0L * k - 1.0L) / z2;
    sum += term;
  }
  return static_cast<double>(-zl / sum);
}
double ref_mills(double z) {
  const long double zl = z;
  const long double lphi = -0.5L * zl * zl - 0.5L * std::log(2.0L * 3.14159265358979323846264338327950288L);
  const long double lPhi = std::log(0.5L * std::erfc(-zl / std::sqrt(2.0L)));
  return static_cast<double>(std::exp(lphi - lPhi));
}

// Independent log-likelihoods (the documented conventions of the R front end:
// Gaussian weights are precision weights, binomial weights are trials with y a
// proportion, Poisson and negative binomial weights multiply the
// log-likelihood, Gamma weights multiply the shape, scaled t weights divide
// its squared scale).  `noise_var` is the likelihood's own parameter:
// Gaussian noise variance, Gamma shape, negative binomial theta, the t's
// squared scale (its df fixed at 4).
double ref_loglik(Family fam, double y, double w, double f, double noise_var) {
  switch (fam) {
    case Family::gamma: {  // y ~ Gamma(shape a = k w, mean e^f)
      const double a = noise_var * w, mu = std::exp(f);
      return a * std::log(a / mu) - std::lgamma(a) + (a - 1) * std::log(y) - a * y / mu;
    }
    case Family::negbin: {  // P(y) = G(y + th) / (G(th) y!) (th / (th + mu))^th (mu / (th + mu))^y
      const double th = noise_var, mu = std::exp(f);
      return w * (std::lgamma(y + th) - std::lgamma(th) - std::lgamma(y + 1.0) + th * std::log(th / (th + mu)) +
                  y * std::log(mu / (th + mu)));
    }
    case Family::gaussian: return -0.5 * std::log(2.0 * kPi * noise_var / w) - 0.5 * w * (y - f) * (y - f) / noise_var;
    case Family::scat: {  // scaled t, df 4 (Likelihood's default log_df 0 over min_df 3), squared scale noise_var / w
      const double nu = 4.0, a = nu * noise_var / w;
      return std::lgamma(2.5) - std::lgamma(2.0) - 0.5 * std::log(kPi * a) - 2.5 * std::log1p((y - f) * (y - f) / a);
    }
    case Family::poisson: return w * (y * f - std::exp(f) - std::lgamma(y + 1.0));
    case Family::probit: {
      // below -30 long double erfc loses its digits: the asymptotic series
      auto lPhi = [](double z) { return z > -30 ? ref_log_Phi(z) : ref_log_Phi_series(z); };
      return w * (y * lPhi(f) + (1 - y) * lPhi(-f));
    }
    case Family::logit: {
      // log sigma(f) = -log(1 + e^{-f}), log(1 - sigma(f)) = -log(1 + e^{f})
      const double lp = f > 0 ? -std::log1p(std::exp(-f)) : f - std::log1p(std::exp(f));
      const double lq = f > 0 ? -f - std::log1p(std::exp(-f)) : -std::log1p(std::exp(f));
      return w * (y * lp + (1 - y) * lq);
    }
  }
  return 0.0;
}

struct Ref {
  double v, dm, dv;
};

// v = E[l], dv/dm = E[l (f - m)] / s2, dv/ds2 = E[l ((f - m)^2 - s2)] / (2 s2^2):
// derivatives of the Gaussian density, so no derivative of l is involved.
Ref reference(Family fam, double y, double w, double m, double s2, double nv) {
  auto l = [&](double f) { return ref_loglik(fam, y, w, f, nv); };
  Ref r;
  r.v = normal_expect(m, s2, l);
  r.dm = normal_expect(m, s2, [&](double f) { return l(f) * (f - m) / s2; });
  r.dv = normal_expect(m, s2, [&](double f) { return l(f) * ((f - m) * (f - m) - s2) / (2 * s2 * s2); });
  return r;
}

// log int Poisson(y | e^f) N(f; m, s2) df by Simpson on [-30, 30] (300000
// intervals), with the value of the log integrand at its grid maximum factored out.
double ref_log_predictive_poisson(double y, double m, double s2) {
  const double lg = std::lgamma(y + 1.0);
  auto lf = [&](double f) { return y * f - std::exp(f) - lg - 0.5 * (f - m) * (f - m) / s2 - 0.5 * std::log(2 * kPi * s2); };
  double c = -std::numeric_limits<double>::infinity();
  for (double f = -30; f <= 30; f += 1e-3) c = std::max(c, lf(f));
  return c + std::log(simpson([&](double f) { return std::exp(lf(f) - c); }, -30.0, 30.0, 300000));
}

struct Pt {
  double y, w, m, s2;
};

}  // namespace

TEST_CASE("family_from_string", "[likelihoods]") {
  CHECK(family_from_string("gaussian") == Family::gaussian);
  CHECK(family_from_string("probit") == Family::probit);
  CHECK(family_from_string("logit") == Family::logit);
  CHECK(family_from_string("poisson") == Family::poisson);
  CHECK(family_from_string("gamma") == Family::gamma);
  CHECK(family_from_string("negbin") == Family::negbin);
  CHECK_THROWS_AS(family_from_string("tweedie"), std::invalid_argument);
}

TEST_CASE("Gauss-Hermite nodes and weights", "[likelihoods][gh]") {
  SECTION("5-point rule against tabulated values") {
    const GaussHermite gh(5);
    const double t[5] = {-2.0201828704560856, -0.9585724646138185, 0.0, 0.9585724646138185, 2.0201828704560856};
    const double w[5] = {0.019953242059045913, 0.39361932315224116, 0.9453087204829419, 0.39361932315224116,
                         0.019953242059045913};
    for (int i = 0; i < 5; ++i) {
      CHECK(gh.t(i) == Approx(t[i]).margin(1e-14));
      CHECK(gh.w(i) == Approx(w[i]).epsilon(1e-12));
    }
  }
  SECTION("20-point rule: moments") {
    const GaussHermite gh(20);
    REQUIRE(gh.t.size() == 20);
    CHECK(gh.w.sum() == Approx(std::sqrt(kPi)).epsilon(1e-14));
    CHECK((gh.w.array() > 0).all());
    // symmetric nodes, sorted
    for (int i = 0; i < 20; ++i) CHECK(gh.t(i) == Approx(-gh.t(19 - i)).margin(1e-13));
    for (int i = 1; i < 20; ++i) CHECK(gh.t(i) > gh.t(i - 1));
    auto moment = [&](int k) { return (gh.w.array() * gh.t.array().pow(k)).sum(); };
    CHECK(moment(2) == Approx(std::sqrt(kPi) / 2).epsilon(1e-14));
    // int t^38 exp(-t^2) dt = Gamma(19.5): exact for degree <= 2n - 1 = 39
    const double g195 = static_cast<double>(std::tgamma(19.5L));
    CHECK(moment(38) == Approx(g195).epsilon(1e-9));
    CHECK(std::abs(moment(37)) < 1e-9 * (gh.w.array() * gh.t.array().abs().pow(37)).sum());
    // degree 40 is not exact: the Gauss-Hermite remainder is n! sqrt(pi) / 2^n
    const double g205 = static_cast<double>(std::tgamma(20.5L));
    const double remainder = static_cast<double>(std::tgamma(21.0L)) * std::sqrt(kPi) / std::pow(2.0, 20);
    CHECK(g205 - moment(40) == Approx(remainder).epsilon(1e-3));
  }
  SECTION("expect() integrates Gaussian moments") {
    const GaussHermite gh(20);
    CHECK(gh.expect(0.7, 2.0, [](double f) { return f * f; }) == Approx(0.49 + 2.0).epsilon(1e-14));
    CHECK(gh.expect(0.7, 2.0, [](double f) { return f * f * f * f; }) ==
          Approx(std::pow(0.7, 4) + 6 * 0.49 * 2.0 + 3 * 4.0).epsilon(1e-13));
    CHECK(gh.expect(-0.2, 0.3, [](double f) { return std::exp(f); }) == Approx(std::exp(-0.2 + 0.15)).epsilon(1e-14));
    // s2 = 0 (and slightly negative from round-off) is a point mass
    CHECK(gh.expect(1.3, 0.0, [](double f) { return f * f; }) == Approx(1.69).epsilon(1e-14));
    CHECK(gh.expect(1.3, -1e-18, [](double f) { return f * f; }) == Approx(1.69).epsilon(1e-14));
  }
}

TEST_CASE("log_Phi and mills are accurate in the far tail", "[likelihoods][tail]") {
  // known value log Phi(-40) = -804.608442013753788...
  CHECK(log_Phi(-40.0) == Approx(-804.608442013753788).epsilon(1e-13));
  CHECK(ref_log_Phi(-40.0) == Approx(-804.608442013753788).epsilon(1e-15));
  CHECK(ref_log_Phi_series(-40.0) == Approx(-804.608442013753788).epsilon(1e-15));
  for (double z : {-200.0, -1e3, -1e5}) {
    CHECK(log_Phi(z) == Approx(ref_log_Phi_series(z)).epsilon(1e-14));
    CHECK(mills(z) == Approx(ref_mills_series(z)).epsilon(1e-14));
  }
  const std::vector<double> zs = {-60.0, -40.0, -35.0, -30.5, -30.0, -29.5, -25.0, -10.0, -3.0, -0.5,
                                  0.0,    0.5,   3.0,   8.0,   20.0};
  for (double z : zs) {
    CHECK(log_Phi(z) == Approx(ref_log_Phi(z)).epsilon(1e-12).margin(1e-15));
    CHECK(mills(z) == Approx(ref_mills(z)).epsilon(1e-9));
    CHECK(std::isfinite(log_Phi(z)));
  }
  // where the naive formula underflows to -inf, the series is still right
  CHECK(std::log(0.5 * std::erfc(40.0 / std::sqrt(2.0))) == -std::numeric_limits<double>::infinity());
  // mills(z) -> -z in the lower tail, phi(z) in the upper tail
  CHECK(mills(-1e4) == Approx(1e4).epsilon(1e-8));
  CHECK(mills(10.0) == Approx(std::exp(-50.0) / std::sqrt(2 * kPi)).epsilon(1e-9));
}

TEST_CASE("log_Phi and mills are continuous at the switch z = -30", "[likelihoods][tail]") {
  for (double d : {1e-12, 1e-9, 1e-6}) {
    const double lo = log_Phi(-30.0 - d), hi = log_Phi(-30.0 + d);
    // the true difference is about 30 * 2d
    CHECK(std::abs((lo - hi) - (ref_log_Phi(-30.0 - d) - ref_log_Phi(-30.0 + d))) < 1e-9);
    CHECK(std::abs((mills(-30.0 - d) - mills(-30.0 + d)) - (ref_mills(-30.0 - d) - ref_mills(-30.0 + d))) < 1e-9 * 30);
  }
}

TEST_CASE("loglik derivatives match finite differences", "[likelihoods]") {
  const std::vector<Family> fams = {Family::gaussian, Family::probit, Family::logit, Family::poisson};
  for (Family fam : fams) {
    Likelihood lik(fam);
    lik.log_noise = -0.7;
    for (double f : {-3.0, -0.4, 0.0, 1.1, 2.5}) {
      const double y = fam == Family::poisson ? 2.0 : (fam == Family::gaussian ? 0.3 : 0.7);
      const double w = 1.5, h = 1e-3;
      double l, d1, d2;
      lik.loglik(y, w, f, l, d1, d2);
      // derivative k (0: l, 1: d1) of the log-likelihood at f + t
      auto at = [&](int k) {
        return [&, k](double t) {
          double a, b, c;
          lik.loglik(y, w, f + t, a, b, c);
          return k == 0 ? a : b;
        };
      };
      CHECK(d1 == Approx(central_difference(at(0), h)).epsilon(1e-9).margin(1e-11));
      CHECK(d2 == Approx(central_difference(at(1), h)).epsilon(1e-9).margin(1e-11));
      if (fam != Family::gaussian) CHECK(l == Approx(ref_loglik(fam, y, w, f, 0.0)).epsilon(1e-12));
    }
  }
  // probit far in the tail: the log-likelihood stays finite, d1 ~ -f
  Likelihood pr(Family::probit);
  double l, d1, d2;
  pr.loglik(1.0, 1.0, -50.0, l, d1, d2);
  CHECK(std::isfinite(l));
  CHECK(l == Approx(ref_log_Phi(-50.0)).epsilon(1e-12));
  CHECK(d1 == Approx(ref_mills(-50.0)).epsilon(1e-9));
  CHECK(d2 == Approx(-1.0).epsilon(1e-3));
}

TEST_CASE("Gaussian expectation: closed form vs quadrature and finite differences", "[likelihoods][expect]") {
  Likelihood lik(Family::gaussian);
  lik.log_noise = std::log(0.3);
  const double nv = lik.noise_var();
  CHECK(nv == Approx(0.3 + 1e-6).epsilon(1e-15));
  const std::vector<Pt> pts = {{0.7, 1.0, -0.3, 0.5}, {2.0, 1.0, 1.5, 0.01}, {-1.2, 1.0, 0.4, 2.0}, {0.0, 1.0, 3.0, 1e-4}};
  for (const Pt& p : pts) {
    const Expectation e = lik.expect(p.y, p.w, p.m, p.s2);
    const Ref r = reference(Family::gaussian, p.y, p.w, p.m, p.s2, nv);
    CHECK(e.v == Approx(r.v).epsilon(1e-9));
    CHECK(e.dm == Approx(r.dm).epsilon(1e-9));
    CHECK(e.dv == Approx(r.dv).epsilon(1e-9));
    // closed form written out
    CHECK(e.v == Approx(-0.5 * std::log(2 * kPi * nv) - 0.5 * ((p.y - p.m) * (p.y - p.m) + p.s2) / nv).epsilon(1e-14));
  }
}

TEST_CASE("Gaussian expectation derivatives (incl. dlognoise) match finite differences", "[likelihoods][expect]") {
  for (double w : {1.0, 2.5}) {  // self-consistency of v and its derivatives for any weight
    Likelihood lik(Family::gaussian);
    lik.log_noise = -1.1;
    const double y = 0.4, m = -0.2, s2 = 0.3, h = 1e-3;
    const Expectation e = lik.expect(y, w, m, s2);
    CHECK(e.dm == Approx(central_difference([&](double t) { return lik.expect(y, w, m + t, s2).v; }, h)).epsilon(1e-10));
    CHECK(e.dv == Approx(central_difference([&](double t) { return lik.expect(y, w, m, s2 + t).v; }, h)).epsilon(1e-10));
    const double fd = central_difference(
        [&](double t) {
          Likelihood lt = lik;
          lt.log_noise += t;
          return lt.expect(y, w, m, s2).v;
        },
        h);
    CHECK(e.dlognoise == Approx(fd).epsilon(1e-10));
    CHECK(e.dlognoise != 0.0);
  }
  // the noise floor: d/dlog_noise carries the factor (nv - floor)
  Likelihood lik(Family::gaussian);
  lik.log_noise = -12.0;
  const Expectation e = lik.expect(0.1, 1.0, 0.0, 1e-7);
  const double fd = central_difference(
      [&](double t) {
        Likelihood lt = lik;
        lt.log_noise += t;
        return lt.expect(0.1, 1.0, 0.0, 1e-7).v;
      },
      1e-3);
  CHECK(e.dlognoise == Approx(fd).epsilon(1e-8));
}

// Gaussian prior weights are precision weights (?gpgam: "Gaussian: precision
// weights"): v = -1/2 log(2 pi s_e^2 / w) - w [(y - mu)^2 + s2] / (2 s_e^2).
TEST_CASE("Gaussian expectation with precision weights w != 1", "[likelihoods][expect]") {
  Likelihood lik(Family::gaussian);
  lik.log_noise = std::log(0.3);
  const double nv = lik.noise_var(), h = 1e-5;
  for (double w : {0.4, 2.5}) {
    const double y = 0.7, m = -0.3, s2 = 0.5;
    const Expectation e = lik.expect(y, w, m, s2);
    const Ref r = reference(Family::gaussian, y, w, m, s2, nv);
    CHECK(e.dm == Approx(r.dm).epsilon(1e-9));
    CHECK(e.dv == Approx(r.dv).epsilon(1e-9));
    CHECK(e.v == Approx(r.v).epsilon(1e-9));
    // d/dlog_noise of the reference v (finite differences in log(nv - floor))
    const double fd = central_difference(
        [&](double t) {
          return reference(Family::gaussian, y, w, m, s2, Likelihood::kNoiseFloor + std::exp(lik.log_noise + t)).v;
        },
        100 * h);
    CHECK(e.dlognoise == Approx(fd).epsilon(1e-8));
    double l, d1, d2;
    lik.loglik(y, w, m, l, d1, d2);
    CHECK(l == Approx(ref_loglik(Family::gaussian, y, w, m, nv)).epsilon(1e-12));
  }
  // precision weight 2 is the same as halving the noise variance
  Likelihood half = lik;
  half.log_noise = std::log((nv - Likelihood::kNoiseFloor) / 2 - Likelihood::kNoiseFloor / 2);
  REQUIRE(half.noise_var() == Approx(nv / 2).epsilon(1e-14));
  CHECK(lik.expect(0.2, 2.0, 0.9, 0.3).v == Approx(half.expect(0.2, 1.0, 0.9, 0.3).v).epsilon(1e-13));
}

TEST_CASE("a zero weight removes the observation", "[likelihoods][expect]") {
  for (Family fam : {Family::gaussian, Family::probit, Family::logit, Family::poisson}) {
    Likelihood lik(fam);
    const Expectation e = lik.expect(fam == Family::poisson ? 3.0 : 1.0, 0.0, 0.4, 0.6);
    CHECK(e.v == 0.0);
    CHECK(e.dm == 0.0);
    CHECK(e.dv == 0.0);
    CHECK(e.dlognoise == 0.0);
    double l, d1, d2;
    lik.loglik(1.0, 0.0, 0.4, l, d1, d2);
    CHECK(l == 0.0);
    CHECK(d1 == 0.0);
    CHECK(d2 == 0.0);
  }
}

TEST_CASE("Poisson expectation: closed form vs quadrature and finite differences", "[likelihoods][expect]") {
  Likelihood lik(Family::poisson);
  const std::vector<Pt> pts = {{3.0, 1.0, 0.8, 0.4}, {0.0, 2.0, -1.0, 1.0}, {7.0, 0.5, 2.0, 0.2}, {1.0, 1.0, 0.1, 3.0}};
  for (const Pt& p : pts) {
    const Expectation e = lik.expect(p.y, p.w, p.m, p.s2);
    const Ref r = reference(Family::poisson, p.y, p.w, p.m, p.s2, 0.0);
    CHECK(e.v == Approx(r.v).epsilon(1e-9));
    CHECK(e.dm == Approx(r.dm).epsilon(1e-9));
    CHECK(e.dv == Approx(r.dv).epsilon(1e-9));
    CHECK(e.dlognoise == 0.0);
    const double h = 1e-3;
    CHECK(e.dm == Approx(central_difference([&](double t) { return lik.expect(p.y, p.w, p.m + t, p.s2).v; }, h)).epsilon(1e-10));
    CHECK(e.dv == Approx(central_difference([&](double t) { return lik.expect(p.y, p.w, p.m, p.s2 + t).v; }, h)).epsilon(1e-10));
  }
}

TEST_CASE("probit and logit expectations (Gauss-Hermite) vs quadrature", "[likelihoods][expect]") {
  const std::vector<Pt> pts = {{1.0, 1.0, -2.0, 0.05}, {0.0, 1.0, 0.5, 0.5}, {1.0, 1.0, 1.7, 1.0},
                               {0.3, 5.0, -0.4, 0.8},  {0.0, 1.0, -3.0, 1.0}, {1.0, 2.0, 0.0, 0.2}};
  for (Family fam : {Family::probit, Family::logit}) {
    Likelihood lik(fam);
    for (const Pt& p : pts) {
      const Expectation e = lik.expect(p.y, p.w, p.m, p.s2);
      const Ref r = reference(fam, p.y, p.w, p.m, p.s2, 0.0);
      CHECK(e.v == Approx(r.v).epsilon(1e-6));
      CHECK(e.dm == Approx(r.dm).epsilon(1e-6));
      CHECK(e.dv == Approx(r.dv).epsilon(1e-6));
      CHECK(e.dv < 0.0);  // log-concave
      CHECK(e.dlognoise == 0.0);
    }
    // s2 = 0: the plug-in log-likelihood
    double l, d1, d2;
    lik.loglik(1.0, 1.0, 0.3, l, d1, d2);
    const Expectation e0 = lik.expect(1.0, 1.0, 0.3, 0.0);
    CHECK(e0.v == Approx(l).epsilon(1e-13));
    CHECK(e0.dm == Approx(d1).epsilon(1e-13));
    CHECK(e0.dv == Approx(0.5 * d2).epsilon(1e-13));
  }
}

// The logit's Taylor series in s2 (expect_softplus(), up to
// kSeriesVar = 0.01) agrees with a 60-node Gauss-Hermite rule to 5e-12
// relative in v, dv/dm and dv/ds2 over means, responses and weights
// (measured 1.1e-12 in dv/ds2 at s2 = 0.01, m = 0, where the series' last
// term moves dv/ds2 by 1e-10, its s2^4 term v by 3e-11 and its s2^3 term v
// by 5e-9), its dv/dm and dv/ds2 are the derivatives of its v
// (central differences inside the series' range), and it meets the
// Gauss-Hermite rule above it (8 nodes) to within that rule's own 3e-12.
TEST_CASE("logit expectations: a Taylor series at small variances", "[likelihoods][expect]") {
  const GaussHermite gh60(60);
  const Likelihood lik(Family::logit);
  double worst = 0, worst_fd = 0;
  for (double s2 : {0.0, 1e-8, 1e-5, 1e-3, 0.004, 0.008, 0.01})
    for (double m = -14.0; m <= 14.0; m += 0.25)
      for (double y : {0.0, 1.0, 0.3})
        for (double w : {1.0, 2.5}) {
          const Expectation e = lik.expect(y, w, m, s2);
          worst = std::max(worst, rel_err(e, by_rule(lik, gh60, y, w, m, s2)));
          if (s2 < 1e-3) continue;
          const double h = 1e-5, hv = 1e-3, c = s2 * (1 - hv);  // (s2 + hv s2 would leave the series' range)
          const double fm = (lik.expect(y, w, m + h, s2).v - lik.expect(y, w, m - h, s2).v) / (2 * h);
          const double fv = (lik.expect(y, w, m, s2).v - lik.expect(y, w, m, s2 * (1 - 2 * hv)).v) / (2 * hv * s2);
          worst_fd = std::max({worst_fd, rel(fm, e.dm), rel(fv, lik.expect(y, w, m, c).dv)});
        }
  CAPTURE(worst, worst_fd);
  CHECK(worst < 5e-12);
  CHECK(worst_fd < 1e-8);
  // s2 = 0: the log-likelihood itself
  double l, d1, d2;
  lik.loglik(0.3, 2.0, -1.7, l, d1, d2);
  const Expectation e0 = lik.expect(0.3, 2.0, -1.7, 0.0);
  CHECK(e0.v == Approx(l).epsilon(1e-15));
  CHECK(e0.dm == Approx(d1).epsilon(1e-15));
  CHECK(e0.dv == Approx(0.5 * d2).epsilon(1e-15));
  // across the switch to the 8-node rule
  const double below = Likelihood::kSeriesVar, above = below * (1 + 1e-9);
  for (double m : {-3.0, 0.0, 0.4, 5.0}) {
    const Expectation a = lik.expect(1.0, 1.0, m, below), b = lik.expect(1.0, 1.0, m, above);
    CAPTURE(m);
    CHECK(rel(a.v, b.v) < 3e-12);
    CHECK(rel(a.dm, b.dm) < 3e-12);
    CHECK(rel(a.dv, b.dv) < 5e-12);
  }
}

// The negative binomial's expectation at s2 <= kSeriesVar is the same
// series of the softplus (with weight w (y + theta), over g = m - log theta):
// within 1e-11 of a 60-node rule in v, dv/dm, dv/ds2 and dv/dlog theta, for
// counts up to 200 and theta from 0.4 to 150 (measured 8.8e-12, in dv/ds2
// at theta = 150, y = 200; the larger weight makes it less close than the
// logit's, and than the 6-node rule it replaces, 6e-14); its derivatives
// are those of its v (central differences); at the switch it meets the
// 8-node rule used above kSeriesVar to the same 1e-11.
TEST_CASE("negative binomial expectations: a Taylor series at small variances", "[likelihoods][expect]") {
  const GaussHermite gh60(60), gh8(8);
  double worst = 0, worst_fd = 0, worst_switch = 0;
  for (double lt : {-0.9, 1.1, 5.0}) {
    Likelihood lik(Family::negbin);
    lik.log_noise = lt;
    // v, dv/dm, dv/ds2 and dv/dlog theta by the rule r
    const auto rule = [&](const GaussHermite& r, double y, double w, double m, double s2) {
      Expectation e = by_rule(lik, r, y, w, m, s2);
      e.dlognoise = r.expect(m, s2, [&](double f) {
        double l, d1, d2, dp;
        lik.loglik(y, w, f, l, d1, d2, &dp);
        return dp;
      });
      return e;
    };
    for (double s2 : {0.0, 1e-6, 1e-3, 0.005, 0.01})
      for (double m = -6.0; m <= 8.0; m += 0.5)
        for (double y : {0.0, 1.0, 7.0, 200.0})
          for (double w : {1.0, 2.5}) {
            const Expectation e = lik.expect(y, w, m, s2), r = rule(gh60, y, w, m, s2);
            worst = std::max({worst, rel_err(e, r), rel(e.dlognoise, r.dlognoise)});
            if (s2 == Likelihood::kSeriesVar) {
              const Expectation a = rule(gh8, y, w, m, s2);
              worst_switch = std::max({worst_switch, rel_err(e, a), rel(e.dlognoise, a.dlognoise)});
            }
            if (s2 < 1e-3) continue;
            const double h = 1e-5, hv = 1e-3, c = s2 * (1 - hv);
            const double fm = (lik.expect(y, w, m + h, s2).v - lik.expect(y, w, m - h, s2).v) / (2 * h);
            const double fv = (lik.expect(y, w, m, s2).v - lik.expect(y, w, m, s2 * (1 - 2 * hv)).v) / (2 * hv * s2);
            Likelihood at = lik;
            at.log_noise = lt + h;
            const double up = at.expect(y, w, m, s2).v;
            at.log_noise = lt - h;
            const double ft = (up - at.expect(y, w, m, s2).v) / (2 * h);
            const double scale = 1 + std::abs(e.v);  // (differences of v lose digits relative to v)
            worst_fd = std::max({worst_fd, rel(fm, e.dm) / scale, rel(fv, lik.expect(y, w, m, c).dv) / scale,
                                 rel(ft, e.dlognoise) / scale});
          }
  }
  CAPTURE(worst, worst_fd, worst_switch);
  CHECK(worst < 1e-11);
  CHECK(worst_fd < 1e-8);
  CHECK(worst_switch < 1e-11);
}

// The smaller rules expect_gh() uses for small variances agree with a
// 60-node rule (exact to rounding there) to 5e-12 relative over a grid of
// means and variances, on both sides of every switch, and for probit the
// next smaller rule at the top of each rung would not (it misses by more
// than 5e-12).  (For the logit up to s2 = 0.01, expect() is the Taylor
// series of the test above, held here to the same tolerances.)
TEST_CASE("binomial expectations: fewer Gauss-Hermite nodes at small variances", "[likelihoods][expect]") {
  const GaussHermite gh60(60);
  for (Family fam : {Family::probit, Family::logit}) {
    const Likelihood lik(fam);
    CHECK(lik.rule_for(0.0).t.size() == 6);
    CHECK(lik.rule_for(0.01).t.size() == 6);
    CHECK(lik.rule_for(0.0101).t.size() == 8);
    CHECK(lik.rule_for(0.05).t.size() == 10);
    CHECK(lik.rule_for(0.2).t.size() == 14);
    CHECK(lik.rule_for(0.3).t.size() == 20);
    CHECK(Likelihood(fam, 8).rule_for(0.2).t.size() == 8);  // never more nodes than gh_points
    for (double s2 : {1e-6, 0.003, 0.01, 0.0100001, 0.03, 0.04, 0.0400001, 0.07, 0.1, 0.1000001, 0.2, 0.25, 0.2500001,
                      0.4, 0.8}) {
      // above 0.25 the 20-node rule (about 2e-9 at s2 = 1); at s2 = 1e-6 the
      // rule's dv/ds2 (a difference quotient in sd) keeps about 11 digits
      const double tol = s2 < 1e-3 ? 1e-10 : (s2 <= 0.25 ? 5e-12 : 5e-8);
      double worst = 0;
      for (double m = -12.0; m <= 12.0; m += 0.25)
        for (double y : {0.0, 1.0, 0.3})
          worst = std::max(worst, rel_err(lik.expect(y, 1.0, m, s2), by_rule(lik, gh60, y, 1.0, m, s2)));
      CAPTURE(static_cast<int>(fam), s2, worst);
      CHECK(worst < tol);
    }
    const std::vector<std::pair<int, double>> smaller = {{4, 0.01}, {6, 0.04}, {8, 0.1}, {10, 0.25}};
    for (const auto& sm : smaller) {
      if (fam != Family::probit) continue;  // (logit: 6 and 8 nodes come within 3.5e-12 at y = 1)
      const GaussHermite r(sm.first);
      double worst = 0;
      for (double m = -12.0; m <= 12.0; m += 0.25)
        worst = std::max(worst, rel_err(by_rule(lik, r, 1.0, 1.0, m, sm.second), by_rule(lik, gh60, 1.0, 1.0, m, sm.second)));
      CAPTURE(static_cast<int>(fam), sm.first, worst);
      CHECK(worst > 5e-12);
    }
  }
}

TEST_CASE("log_predictive", "[likelihoods][predictive]") {
  SECTION("probit: log Phi(m / sqrt(1 + s2))") {
    Likelihood lik(Family::probit);
    for (const Pt& p : std::vector<Pt>{{1, 1, 0.8, 0.5}, {0, 1, 0.8, 0.5}, {1, 1, -45.0, 0.5}, {0.3, 1, 1.2, 3.0}}) {
      const double z = p.m / std::sqrt(1 + p.s2);
      const double ref = p.y * ref_log_Phi(z) + (1 - p.y) * ref_log_Phi(-z);
      CHECK(lik.log_predictive(p.y, p.m, p.s2) == Approx(ref).epsilon(1e-12));
    }
    // the identity behind it, checked by quadrature: E[Phi(f)] = Phi(m / sqrt(1 + s2))
    const double q = normal_expect(0.8, 0.5, [](double f) { return std::exp(ref_log_Phi(f)); });
    CHECK(std::log(q) == Approx(lik.log_predictive(1.0, 0.8, 0.5)).epsilon(1e-10));
  }
  SECTION("logit: logistic-normal integral") {
    Likelihood lik(Family::logit);
    for (const Pt& p : std::vector<Pt>{{1, 1, 0.8, 0.5}, {0, 1, 0.8, 0.5}, {1, 1, -2.0, 1.0}, {0, 1, 3.0, 0.1}}) {
      const double q = normal_expect(p.m, p.s2, [&](double f) { return std::exp(ref_loglik(Family::logit, p.y, 1.0, f, 0)); });
      CHECK(lik.log_predictive(p.y, p.m, p.s2) == Approx(std::log(q)).epsilon(1e-6));
    }
  }
  SECTION("gaussian and poisson") {
    Likelihood g(Family::gaussian);
    g.log_noise = std::log(0.2);
    const double v = 0.4 + g.noise_var();
    CHECK(g.log_predictive(1.0, 0.3, 0.4) == Approx(-0.5 * std::log(2 * kPi * v) - 0.49 / (2 * v)).epsilon(1e-14));
    Likelihood p(Family::poisson);
    for (double y : {0.0, 2.0, 5.0}) {
      const double q = normal_expect(0.5, 0.3, [&](double f) { return std::exp(ref_loglik(Family::poisson, y, 1.0, f, 0)); });
      CHECK(p.log_predictive(y, 0.5, 0.3) == Approx(std::log(q)).epsilon(1e-6));
    }
  }
  SECTION("peaked far from the prior mean (large counts, confident logit)") {
    Likelihood p(Family::poisson);
    for (double y : {20.0, 40.0, 60.0}) {
      CAPTURE(y);
      CHECK(p.log_predictive(y, 0.0, 1.0) == Approx(ref_log_predictive_poisson(y, 0.0, 1.0)).epsilon(1e-6));
      CHECK(p.log_predictive(y, -2.0, 1.0) == Approx(ref_log_predictive_poisson(y, -2.0, 1.0)).epsilon(1e-6));
    }
    CHECK(p.log_predictive(150.0, 0.0, 0.1) == Approx(ref_log_predictive_poisson(150.0, 0.0, 0.1)).epsilon(1e-6));
    Likelihood lo(Family::logit);
    const double q = normal_expect(6.0, 1.0, [&](double f) { return std::exp(ref_loglik(Family::logit, 0.0, 1.0, f, 0)); });
    CHECK(lo.log_predictive(0.0, 6.0, 1.0) == Approx(std::log(q)).epsilon(1e-6));
  }
}

TEST_CASE("response_moments and inv_link", "[likelihoods][predictive]") {
  Likelihood po(Family::poisson);
  double mean, sd;
  po.response_moments(0.3, 0.8, mean, sd);
  CHECK(mean == Approx(std::exp(0.3 + 0.4)).epsilon(1e-14));
  const double e2 = normal_expect(0.3, 0.8, [](double f) { return std::exp(2 * f); });
  CHECK(sd == Approx(std::sqrt(e2 - mean * mean)).epsilon(1e-8));

  Likelihood pr(Family::probit);
  pr.response_moments(0.6, 0.7, mean, sd);
  const double m1 = normal_expect(0.6, 0.7, [](double f) { return std::exp(ref_log_Phi(f)); });
  const double m2 = normal_expect(0.6, 0.7, [](double f) { return std::exp(2 * ref_log_Phi(f)); });
  CHECK(mean == Approx(m1).epsilon(1e-10));
  CHECK(sd == Approx(std::sqrt(m2 - m1 * m1)).epsilon(1e-6));

  Likelihood lo(Family::logit);
  lo.response_moments(-0.9, 1.0, mean, sd);
  const double l1 = normal_expect(-0.9, 1.0, [](double f) { return 1 / (1 + std::exp(-f)); });
  const double l2 = normal_expect(-0.9, 1.0, [](double f) { return std::pow(1 / (1 + std::exp(-f)), 2); });
  CHECK(mean == Approx(l1).epsilon(1e-6));
  CHECK(sd == Approx(std::sqrt(l2 - l1 * l1)).epsilon(1e-5));

  Likelihood ga(Family::gaussian);
  ga.response_moments(1.5, 0.25, mean, sd);
  CHECK(mean == 1.5);
  CHECK(sd == Approx(0.5).epsilon(1e-15));

  CHECK(po.inv_link(0.5) == Approx(std::exp(0.5)).epsilon(1e-15));
  CHECK(lo.inv_link(-1.0) == Approx(1 / (1 + std::exp(1.0))).epsilon(1e-15));
  CHECK(pr.inv_link(-1.0) == Approx(0.15865525393145705).epsilon(1e-14));
  CHECK(ga.inv_link(-1.0) == -1.0);
  CHECK(logistic(-800.0) == Approx(0.0).margin(1e-300));
  CHECK(logistic(800.0) == 1.0);
  CHECK(log1pexp(50.0) == 50.0);
  CHECK(log1pexp(-50.0) == Approx(std::exp(-50.0)).epsilon(1e-14));
  CHECK(log1pexp(0.3) == Approx(std::log(1 + std::exp(0.3))).epsilon(1e-15));
}

// Regression test: an undamped Newton search for the mode, started at f = m,
// overshoots to f ~ m + s2 (y - e^m) / (1 + s2 e^m) for large counts (f ~ 75
// for y = 150, m = 0, s2 = 1) and gave about -1.2e11 instead of -18.385; the
// search now backtracks on the concave log integrand.
TEST_CASE("Poisson log_predictive for large counts far from the prior mean", "[likelihoods][predictive]") {
  Likelihood p(Family::poisson);
  for (double y : {80.0, 150.0, 500.0}) {
    CAPTURE(y);
    CHECK(p.log_predictive(y, 0.0, 1.0) == Approx(ref_log_predictive_poisson(y, 0.0, 1.0)).epsilon(1e-6));
    CHECK(p.log_predictive(y, -2.0, 1.0) == Approx(ref_log_predictive_poisson(y, -2.0, 1.0)).epsilon(1e-6));
  }
}

namespace {

// E[h(f)], f ~ N(m, s2), by Simpson on pieces split at -15 and 15 (where
// the binomial log-likelihoods bend), 60000 intervals each: a reference for
// any variance, also where the bend is narrow compared with sd.
template <class F>
double normal_expect_split(double m, double s2, F&& h) {
  const double sd = std::sqrt(s2), lo = m - 12 * sd, hi = m + 12 * sd;
  const double cuts[4] = {lo, std::min(hi, std::max(lo, -15.0)), std::max(lo, std::min(hi, 15.0)), hi};
  double acc = 0;
  for (int p = 0; p < 3; ++p)
    if (cuts[p + 1] > cuts[p])
      acc += simpson([&](double f) { return h(f) * normal_pdf(f, m, s2); }, cuts[p], cuts[p + 1], 60000);
  return acc;
}

// The negative binomial's log-likelihood at log theta = lt in a form that
// stays finite for any f (ref_loglik() overflows e^f beyond f = 709):
// th log(th / (th + mu)) + y log(mu / (th + mu)) = y g - (y + th) log(1 + e^g),
// g = f - lt.
double ref_loglik_nb(double y, double w, double f, double lt) {
  const double th = std::exp(lt), g = f - lt, sp = std::max(g, 0.0) + std::log1p(std::exp(-std::abs(g)));
  return w * (std::lgamma(y + th) - std::lgamma(th) - std::lgamma(y + 1.0) + y * g - (y + th) * sp);
}

}  // namespace

TEST_CASE("binomial expectations are accurate at every latent variance", "[likelihoods][expect][accuracy]") {
  // Gauss-Hermite up to s2 = 1, the composite rule above; the derivatives
  // against the reference through the Gaussian density (as in reference())
  const double vars[] = {0.05, 0.7, 1.0, 1.0001, 3.0, 30.0, 1e3, 1e4};
  const double means[] = {-3.0, 0.0, 2.5};
  struct Yw {
    double y, w;
  };
  const Yw yws[] = {{1.0, 1.0}, {0.0, 1.0}, {0.3, 5.0}};
  for (Family fam : {Family::probit, Family::logit}) {
    Likelihood lik(fam);
    for (double s2 : vars)
      for (double m : means)
        for (const Yw& yw : yws) {
          CAPTURE(static_cast<int>(fam), s2, m, yw.y);
          auto l = [&](double f) { return ref_loglik(fam, yw.y, yw.w, f, 0.0); };
          const double v = normal_expect_split(m, s2, l);
          const double dm = normal_expect_split(m, s2, [&](double f) { return l(f) * (f - m) / s2; });
          const double dv =
              normal_expect_split(m, s2, [&](double f) { return l(f) * ((f - m) * (f - m) - s2) / (2 * s2 * s2); });
          const Expectation e = lik.expect(yw.y, yw.w, m, s2);
          // absolute 1e-8 plus a relative part for the large values at large s2
          CHECK(std::abs(e.v - v) < 1e-8 * (1 + std::abs(v) * 1e-2));
          CHECK(std::abs(e.dm - dm) < 1e-8 * (1 + std::abs(dm)));
          CHECK(std::abs(e.dv - dv) < 1e-8 * (1 + std::abs(dv)));
        }
  }
}

// Above s2 = 1 the logit and the negative binomial take E sp(f) from
// max(f, 0) in closed form and r(f) = log1p(e^-|f|) by a rule fixed in f
// (SoftplusWideRule): within 1e-11 of Simpson references split at the bend
// in v, dv/dm, dv/ds2 (and dv/dlog theta), from s2 just above 1 to 1e4 and
// means out to +-40 (measured 5.7e-13; the composite rule it replaces was
// within 2e-8 of a finer reference there).
TEST_CASE("logit and negative binomial expectations at large variances: softplus split", "[likelihoods][expect][accuracy]") {
  double worst = 0;
  for (Family fam : {Family::logit, Family::negbin})
    for (double lt : {-0.7, 2.0}) {
      if (fam == Family::logit && lt > 0) continue;
      Likelihood lik(fam);
      lik.log_noise = lt;
      const double sh = fam == Family::negbin ? lt : 0.0;
      for (double s2 : {1.0001, 1.7, 6.0, 40.0, 1e4})
        for (double m = -40.0; m <= 40.0; m += 3.3)
          for (double y : {0.0, 1.0, 0.3, 9.0}) {
            if ((fam == Family::logit) == (y > 1)) continue;  // (logit: y in [0, 1]; negbin: counts)
            const double w = y == 0.3 ? 2.5 : 1.0;
            if (fam == Family::negbin && y == 0.3) continue;
            auto l = [&](double f) { return fam == Family::logit ? ref_loglik(fam, y, w, f, 0.0) : ref_loglik_nb(y, w, f, lt); };
            // the reference's bend is at f = log theta for the negative binomial
            auto ex = [&](auto&& h) { return normal_expect_split(m - sh, s2, [&](double g) { return h(g + sh); }); };
            const double v = ex(l);
            const double dm = ex([&](double f) { return l(f) * (f - m) / s2; });
            const double dv = ex([&](double f) { return l(f) * ((f - m) * (f - m) - s2) / (2 * s2 * s2); });
            const Expectation e = lik.expect(y, w, m, s2);
            const double err = std::max({rel(e.v, v), rel(e.dm, dm), rel(e.dv, dv)});
            CAPTURE(static_cast<int>(fam), lt, s2, m, y, e.v, v, e.dm, dm, e.dv, dv);
            CHECK(err < 1e-11);
            if (fam == Family::negbin) {  // E[dl/dlog theta] (loglik()'s, checked above by differences)
              const double dt = ex([&](double f) {
                double a, b, c, dp;
                lik.loglik(y, w, f, a, b, c, &dp);
                return dp;
              });
              CHECK(rel(e.dlognoise, dt) < 1e-11);
              worst = std::max(worst, rel(e.dlognoise, dt));
            }
            worst = std::max(worst, err);
          }
    }
  CAPTURE(worst);
  CHECK(worst > 0);  // (the references are not the rule itself)
}

TEST_CASE("binomial expectation derivatives are those of the rule computed", "[likelihoods][expect][gradient]") {
  // central differences of v itself, on both sides of the switch at s2 = 1
  for (Family fam : {Family::probit, Family::logit}) {
    Likelihood lik(fam);
    for (double s2 : {1e-6, 0.01, 0.4, 0.98, 1.05, 7.0, 300.0})
      for (double m : {-2.0, 0.3, 4.0}) {
        CAPTURE(static_cast<int>(fam), s2, m);
        const Expectation e = lik.expect(1.0, 2.0, m, s2);
        const double h = std::min(1e-3, 0.1 * s2);
        const double dm = fixtures::central_difference([&](double t) { return lik.expect(1.0, 2.0, m + t, s2).v; }, 1e-3);
        const double dv = fixtures::central_difference([&](double t) { return lik.expect(1.0, 2.0, m, s2 + t).v; }, h);
        CHECK(e.dm == Approx(dm).epsilon(1e-7).margin(1e-9));
        CHECK(e.dv == Approx(dv).epsilon(1e-6).margin(1e-9));
        CHECK(e.dv <= 0.0);
      }
  }
}

TEST_CASE("Poisson at large rates stays finite", "[likelihoods][poisson]") {
  Likelihood lik(Family::poisson);
  // a count near e^10 at its own rate, and a latent mean far beyond exp()'s range
  const Expectation e = lik.expect(22026.0, 1.0, 10.0, 0.01);
  CHECK(std::isfinite(e.v));
  CHECK(e.dm == Approx(22026.0 - std::exp(10.005)).epsilon(1e-12));
  const Expectation big = lik.expect(3.0, 1.0, 900.0, 1.0);
  CHECK(std::isfinite(big.v));
  CHECK(std::isfinite(big.dm));
  CHECK(big.v < -1e300);
  double l, d1, d2;
  lik.loglik(3.0, 1.0, 1000.0, l, d1, d2);
  CHECK(std::isfinite(l));
  CHECK(std::isfinite(d1));
  CHECK(std::isfinite(d2));
  // predictive quantities: finite, and the density of a huge count at its rate
  CHECK(std::isfinite(lik.log_predictive(3.0, 900.0, 1.0)));
  const double lp = lik.log_predictive(22026.0, 10.0, 1e-4);
  CHECK(lp == Approx(ref_log_predictive_poisson(22026.0, 10.0, 1e-4)).epsilon(1e-6));
  double mean, sd;
  lik.response_moments(900.0, 1.0, mean, sd);
  CHECK(std::isfinite(mean));
}

// ---- Gamma and negative binomial: the likelihood's own parameter ----------------

TEST_CASE("digamma against tabulated values and its recurrence", "[likelihoods][digamma]") {
  const double euler = 0.57721566490153286061;
  CHECK(std::abs(digamma(1.0) + euler) < 1e-14);
  CHECK(std::abs(digamma(0.5) + euler + 2.0 * std::log(2.0)) < 1e-14);
  CHECK(std::abs(digamma(2.0) - (1.0 - euler)) < 1e-14);
  // psi(n + 1/2) = -gamma - 2 log 2 + sum_{k=1}^n 2 / (2k - 1)
  double h = 0;
  for (int k = 1; k <= 30; ++k) h += 2.0 / (2.0 * k - 1.0);
  CHECK(std::abs(digamma(30.5) - (-euler - 2.0 * std::log(2.0) + h)) < 1e-13);
  // psi(x + 1) = psi(x) + 1 / x across the switch at 10 and far beyond it
  for (double x : {1e-8, 0.003, 0.7, 3.3, 9.25, 9.999, 10.0, 17.5, 250.0, 1e6}) {
    CAPTURE(x);
    CHECK(std::abs(digamma(x + 1.0) - digamma(x) - 1.0 / x) < 1e-13 * std::max(1.0, 1.0 / x));
  }
  // psi(x) ~ log x - 1 / (2x) for large x
  CHECK(std::abs(digamma(1e8) - (std::log(1e8) - 0.5e-8)) < 1e-15 * std::log(1e8) + 1e-17);
  CHECK(std::isnan(digamma(0.0)));
  CHECK(std::isnan(digamma(-1.5)));
}

TEST_CASE("Gamma and negative binomial loglik derivatives, in f and in the log parameter", "[likelihoods]") {
  for (Family fam : {Family::gamma, Family::negbin}) {
    for (double lp : {-1.2, 0.4, 3.0}) {
      Likelihood lik(fam);
      lik.log_noise = lp;
      for (double f : {-2.0, 0.0, 1.3, 4.0}) {
        const double y = fam == Family::gamma ? 2.7 : 5.0, w = 1.5, h = 1e-3;
        CAPTURE(static_cast<int>(fam), lp, f);
        double l, d1, d2, dp;
        lik.loglik(y, w, f, l, d1, d2, &dp);
        auto at = [&](int k) {
          return [&, k](double t) {
            double a, b, c;
            lik.loglik(y, w, f + t, a, b, c);
            return k == 0 ? a : b;
          };
        };
        CHECK(l == Approx(ref_loglik(fam, y, w, f, std::exp(lp))).epsilon(1e-12));
        CHECK(d1 == Approx(central_difference(at(0), h)).epsilon(1e-9).margin(1e-11));
        CHECK(d2 == Approx(central_difference(at(1), h)).epsilon(1e-9).margin(1e-11));
        const double dref =
            central_difference([&](double t) { return ref_loglik(fam, y, w, f, std::exp(lp + t)); }, h);
        CHECK(dp == Approx(dref).epsilon(1e-8).margin(1e-10));
      }
    }
  }
}

TEST_CASE("Gamma expectation: closed form vs quadrature and finite differences", "[likelihoods][expect]") {
  const std::vector<Pt> pts = {{2.0, 1.0, 0.8, 0.4}, {0.3, 2.0, -1.0, 1.0}, {7.5, 0.5, 2.0, 0.2}, {1.0, 1.0, 0.1, 3.0},
                               {0.05, 1.0, 1.5, 1e-6}};
  for (double lk : {-0.5, 1.6, 6.0}) {
    Likelihood lik(Family::gamma);
    lik.log_noise = lk;
    for (const Pt& p : pts) {
      CAPTURE(lk, p.y, p.w, p.m, p.s2);
      const Expectation e = lik.expect(p.y, p.w, p.m, p.s2);
      const Ref r = reference(Family::gamma, p.y, p.w, p.m, p.s2, std::exp(lk));
      CHECK(e.v == Approx(r.v).epsilon(1e-9));
      CHECK(e.dm == Approx(r.dm).epsilon(1e-8).margin(1e-9));
      if (p.s2 > 1e-3) CHECK(e.dv == Approx(r.dv).epsilon(1e-8));
      const double h = 1e-4;
      CHECK(e.dm == Approx(central_difference([&](double t) { return lik.expect(p.y, p.w, p.m + t, p.s2).v; }, h)).epsilon(1e-9));
      CHECK(e.dv == Approx(central_difference([&](double t) { return lik.expect(p.y, p.w, p.m, p.s2 + t).v; }, h)).epsilon(1e-9));
      Likelihood at = lik;
      const double dk = central_difference(
          [&](double t) {
            at.log_noise = lk + t;
            return at.expect(p.y, p.w, p.m, p.s2).v;
          },
          h);
      CHECK(e.dlognoise == Approx(dk).epsilon(1e-8).margin(1e-9));
    }
  }
  // a zero weight removes the row
  Likelihood lik(Family::gamma);
  const Expectation z = lik.expect(1.0, 0.0, 0.3, 0.2);
  CHECK(z.v == 0.0);
  CHECK(z.dm == 0.0);
  CHECK(z.dlognoise == 0.0);
}

TEST_CASE("negative binomial expectation vs quadrature and finite differences", "[likelihoods][expect]") {
  // small variances (Gauss-Hermite ladder), s2 <= 1 (20 nodes) and larger
  // (composite rule, over g = f - log theta)
  const std::vector<Pt> pts = {{0.0, 1.0, -1.0, 0.005}, {3.0, 1.0, 0.8, 0.03}, {1.0, 2.0, 0.1, 0.2},
                               {12.0, 0.5, 2.0, 0.6},   {40.0, 1.0, 3.0, 1.0},  {2.0, 1.0, 0.5, 2.5},
                               {0.0, 1.0, -3.0, 6.0},   {150.0, 1.0, 4.5, 0.1}};
  for (double lt : {-1.0, 1.1, 5.0}) {
    Likelihood lik(Family::negbin);
    lik.log_noise = lt;
    for (const Pt& p : pts) {
      CAPTURE(lt, p.y, p.w, p.m, p.s2);
      const Expectation e = lik.expect(p.y, p.w, p.m, p.s2);
      const Ref r = reference(Family::negbin, p.y, p.w, p.m, p.s2, std::exp(lt));
      const double scale = std::max(1.0, std::abs(r.v));
      CHECK(std::abs(e.v - r.v) < 1e-9 * scale);
      CHECK(e.dm == Approx(r.dm).epsilon(1e-7).margin(1e-8 * scale));
      CHECK(e.dv == Approx(r.dv).epsilon(1e-7).margin(1e-8 * scale));
      // the derivative in log theta is that of the rule computed
      Likelihood at = lik;
      const double h = 1e-4;
      const double dt = central_difference(
          [&](double t) {
            at.log_noise = lt + t;
            return at.expect(p.y, p.w, p.m, p.s2).v;
          },
          h);
      CHECK(e.dlognoise == Approx(dt).epsilon(1e-7).margin(1e-8 * scale));
      // and that of the exact expectation
      const double dref = central_difference(
          [&](double t) { return reference(Family::negbin, p.y, p.w, p.m, p.s2, std::exp(lt + t)).v; }, h);
      CHECK(e.dlognoise == Approx(dref).epsilon(1e-6).margin(1e-8 * scale));
    }
  }
  // a large theta is Poisson
  Likelihood nb(Family::negbin), po(Family::poisson);
  nb.log_noise = 9.5;
  const Expectation a = nb.expect(4.0, 1.0, 1.2, 0.3), b = po.expect(4.0, 1.0, 1.2, 0.3);
  CHECK(a.v == Approx(b.v).epsilon(1e-3));
  CHECK(std::abs(a.dm - b.dm) < 1e-3);
}

TEST_CASE("Gamma and negative binomial predictive densities and moments", "[likelihoods][predictive]") {
  for (Family fam : {Family::gamma, Family::negbin}) {
    Likelihood lik(fam);
    lik.log_noise = 0.9;
    const double k = std::exp(0.9);
    for (const Pt& p : std::vector<Pt>{{1.5, 1.0, 0.2, 0.3}, {8.0, 1.0, 1.0, 1.2}, {0.2, 1.0, 2.0, 0.05}}) {
      const double y = fam == Family::negbin ? std::round(p.y) : p.y;
      CAPTURE(static_cast<int>(fam), y, p.m, p.s2);
      const double ref = std::log(normal_expect(p.m, p.s2, [&](double f) { return std::exp(ref_loglik(fam, y, 1.0, f, k)); }));
      CHECK(lik.log_predictive(y, p.m, p.s2) == Approx(ref).epsilon(1e-8));
      double mean, sd;
      lik.response_moments(p.m, p.s2, mean, sd);
      CHECK(mean == Approx(std::exp(p.m + 0.5 * p.s2)).epsilon(1e-14));
      CHECK(sd == Approx(mean * std::sqrt(std::expm1(p.s2))).epsilon(1e-14));
      CHECK(lik.inv_link(p.m) == Approx(std::exp(p.m)).epsilon(1e-15));
    }
  }
}
