// The probit EP site of GP classification with the FITC likelihood
// (Hernandez-Lobato and Hernandez-Lobato 2016, "Scalable Gaussian process
// classification via expectation propagation", section 3; with the
// corrections of their Eqs. 20 and 23 derived below).
//
// For latent u with cavity N(a, c), FITC residual s, offset o and label
// y = +-1 the tilted normaliser is
//   Z = int Phi(y (u + o) / sqrt(1 + s)) N(u; a, c) du = Phi(z),
//   z = y (a + o) / sqrt(b),  b = 1 + s + c,
// with alpha = d log Z / da = y lambda(z) / sqrt(b) (lambda = phi / Phi),
// beta = -d^2 log Z / da^2 = lambda (lambda + z) / b in (0, 1 / b),
// gamma = d log Z / db = -alpha (a + o) / (2 b), and the moment-matched site
// exp(-nu u^2 / 2 + mu u) with nu = beta / (1 - beta c),
// mu = (alpha + beta a) / (1 - beta c).
#pragma once
#include "likelihoods.hpp"
#include <limits>

namespace scalegp {

struct ProbitSite {
  double log_z = 0, alpha = 0, beta = 0, gamma = 0;  // log Z, d/da, -d2/da2, d/db
  double nu = 0, mu = 0;                             // the moment-matched site
};

// A negative residual s (rounding in k(x, x) - |phi|^2) is taken as 0; an
// invalid cavity (c < 0 or not finite) gives a site with a NaN log Z, which
// the engines report as a non-finite evidence (and undo).
inline ProbitSite probit_site(double y, double a, double c, double s, double o) {
  ProbitSite r;
  s = std::max(s, 0.0);
  if (!(c >= 0) || !std::isfinite(a + o) || !std::isfinite(c)) {
    r.log_z = std::numeric_limits<double>::quiet_NaN();
    return r;
  }
  const double b = 1.0 + s + c, sb = std::sqrt(b), ao = a + o, z = y * ao / sb;
  const double ratio = mills(z);  // phi(z) / Phi(z), log space
  r.log_z = log_Phi(z);
  r.alpha = y * ratio / sb;
  r.beta = ratio * (ratio + z) / b;  // in (0, 1 / b)
  r.gamma = -0.5 * r.alpha * ao / b;
  // 1 - beta c > 1 - c / b = (1 + s) / b > 0 in exact arithmetic; the
  // floor keeps a rounding error in beta from flipping its sign
  const double den = std::max(1.0 - r.beta * c, (1.0 + s) / b * 1e-12);
  r.nu = r.beta / den;
  r.mu = (r.alpha + r.beta * a) / den;
  return r;
}

}  // namespace scalegp
