// Rcpp glue shared by the engines: latent prediction from a whitened
// Gaussian posterior (the VI and EP engines), likelihood helpers used by the
// R methods and tests, k-means for initial inducing inputs, and the fixed row
// groups of a deterministic pass, the allocator setting of a fit, and
// column helpers of the model setup (standardising, checks).
#include "glue.h"

#include <cstdlib>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

// [[Rcpp::depends(RcppEigen, RcppParallel)]]

using namespace scalegp;
using namespace glue;

namespace {

// The model `specs` over the rows X, without a response (for features and
// predictions).
struct RowsModel {
  Eigen::VectorXd none;
  WhitenedGaussianModel model;
  RowsModel(const Rcpp::List& specs, const Eigen::Map<Eigen::MatrixXd>& X, double jitter)
      : none(Eigen::VectorXd::Zero(X.rows())),
        model(components_from(specs), jitter_settings(jitter), X.data(), static_cast<std::size_t>(X.rows()),
              static_cast<std::size_t>(X.cols()), none.data(), none.data(), none.data()) {}
  static Settings jitter_settings(double jitter) {
    Settings set;
    set.rel_jitter = jitter;
    return set;
  }
};

}  // namespace

// Latent mean and variance at new rows (and per component with `terms`) of a
// model with components `specs` and posterior state list(P, h).
// With `center` (NULL or a vector), the per-component parts are centred by it
// (see WhitenedGaussianModel::predict).
// [[Rcpp::export(.gp_predict)]]
Rcpp::List gp_predict(Rcpp::List specs, Rcpp::List state, Eigen::Map<Eigen::MatrixXd> Xnew,
                      Eigen::Map<Eigen::VectorXd> offset, bool terms, double jitter, int threads,
                      Rcpp::Nullable<Rcpp::NumericVector> center = R_NilValue, bool variance = true) {
  try {
    RowsModel rm(specs, Xnew, jitter);
    WhitenedGaussianModel& model = rm.model;
    model.P = Rcpp::as<Eigen::MatrixXd>(state["P"]);
    model.h = Rcpp::as<Eigen::VectorXd>(state["h"]);
    model.refresh_q();
    Eigen::VectorXd mean, var;
    Eigen::MatrixXd tm, tv;
    Eigen::VectorXd ctr;
    if (center.isNotNull()) ctr = Rcpp::as<Eigen::VectorXd>(center.get());
    model.predict(Xnew, offset, mean, var, terms ? &tm : nullptr, terms ? &tv : nullptr, make_pfor(threads),
                  center.isNotNull() ? &ctr : nullptr, variance);
    Rcpp::List out = Rcpp::List::create(Rcpp::Named("mean") = mean, Rcpp::Named("var") = var);
    if (terms) {
      out["term_mean"] = tm;
      out["term_var"] = tv;
    }
    return out;
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}

// Column means of the whitened features of the model `specs` over the rows X.
// [[Rcpp::export(.gp_feature_means)]]
Eigen::VectorXd gp_feature_means(Rcpp::List specs, Eigen::Map<Eigen::MatrixXd> X, double jitter, int threads) {
  try {
    const RowsModel rm(specs, X, jitter);
    return rm.model.feature_means(make_pfor(threads));
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}

// The whitened features of the model `specs` at the rows X (n x total size),
// centred by `center` as in prediction, and the prior variance the inducing
// points leave (resid, per row).
// [[Rcpp::export(.gp_features)]]
Rcpp::List gp_features(Rcpp::List specs, Eigen::Map<Eigen::MatrixXd> X, double jitter,
                       Rcpp::Nullable<Rcpp::NumericVector> center = R_NilValue) {
  try {
    const RowsModel rm(specs, X, jitter);
    const WhitenedGaussianModel& model = rm.model;
    Block b;
    model.gather(b, nullptr, 0, static_cast<std::size_t>(X.rows()));
    model.features(b);
    if (center.isNotNull()) model.center_features(b, Rcpp::as<Eigen::VectorXd>(center.get()));
    return Rcpp::List::create(Rcpp::Named("Phi") = b.Phi, Rcpp::Named("resid") = b.resid);
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}

namespace {

// The likelihood `family` with its own parameter given on its natural
// scale: the Gaussian noise variance, the Gamma shape, the negative binomial
// theta, the Student-t squared scale (ignored by the other families); for
// the Student-t, param[1] its degrees of freedom and param[2] their lower
// bound min_df.
Likelihood likelihood_at(const std::string& family, const Rcpp::NumericVector& param, int gh_points) {
  Likelihood lik(family_from_string(family), gh_points);
  const bool var = lik.family == Family::gaussian || lik.family == Family::scat;
  lik.log_noise = var ? std::log(std::max(param[0] - Likelihood::kNoiseFloor, 1e-300)) : std::log(param[0]);
  if (lik.has_df()) {
    if (param.size() < 3) throw std::invalid_argument("the Student-t needs its scale^2, df and min_df");
    lik.min_df = param[2];
    lik.log_df = std::log(std::max(param[1] - param[2], 1e-300));
  }
  return lik;
}

}  // namespace

// Expected log-likelihood E[log p(y | f)], f ~ N(m, s2), and its derivatives
// (columns v, dm, ds2), for tests against numerical integration; `noise_var`
// is the likelihood's own parameter (likelihood_at(); for the Student-t
// c(scale^2, df, min_df)).
// [[Rcpp::export(.lik_expect)]]
Rcpp::NumericMatrix lik_expect(std::string family, Rcpp::NumericVector y, Rcpp::NumericVector w,
                               Rcpp::NumericVector m, Rcpp::NumericVector s2, Rcpp::NumericVector noise_var,
                               int gh_points) {
  const Likelihood lik = likelihood_at(family, noise_var, gh_points);
  Rcpp::NumericMatrix out(y.size(), 3);
  for (R_xlen_t i = 0; i < y.size(); ++i) {
    const Expectation e = lik.expect(y[i], w[i], m[i], s2[i]);
    out(i, 0) = e.v;
    out(i, 1) = e.dm;
    out(i, 2) = e.dv;
  }
  return out;
}

// As .lik_expect() with the likelihood's own parameter on the log scale as
// the fit moves it (Likelihood::log_noise: the Gaussian log(noise variance -
// 1e-6), the Gamma log shape, the negative binomial log theta, the
// Student-t log(scale^2 - 1e-6)), and a fourth column, the derivative in it;
// for the Student-t `df` = c(log_df, min_df) (Likelihood::log_df) and a
// fifth column, the derivative in log_df.
// [[Rcpp::export(.lik_expect_param)]]
Rcpp::NumericMatrix lik_expect_param(std::string family, Rcpp::NumericVector y, Rcpp::NumericVector w,
                                     Rcpp::NumericVector m, Rcpp::NumericVector s2, double log_param, int gh_points,
                                     Rcpp::Nullable<Rcpp::NumericVector> df = R_NilValue) {
  Likelihood lik(family_from_string(family), gh_points);
  lik.log_noise = log_param;
  if (df.isNotNull()) {
    const Rcpp::NumericVector d(df.get());
    if (d.size() != 2) throw std::invalid_argument("df must be c(log_df, min_df)");
    lik.log_df = d[0];
    lik.min_df = d[1];
  }
  Rcpp::NumericMatrix out(y.size(), lik.has_df() ? 5 : 4);
  for (R_xlen_t i = 0; i < y.size(); ++i) {
    const Expectation e = lik.expect(y[i], w[i], m[i], s2[i]);
    out(i, 0) = e.v;
    out(i, 1) = e.dm;
    out(i, 2) = e.dv;
    out(i, 3) = e.dlognoise;
    if (lik.has_df()) out(i, 4) = e.dlogdf;
  }
  return out;
}

// The range of the likelihood's own parameter on the log scale
// (Likelihood::kMinLogNoise, kMaxLogNoise): the fits keep it inside, and
// summary() says when a negative binomial log theta reached the top.
// [[Rcpp::export(.lik_log_noise_range)]]
Rcpp::NumericVector lik_log_noise_range() {
  return Rcpp::NumericVector::create(Likelihood::kMinLogNoise, Likelihood::kMaxLogNoise);
}

// The digamma function of the C++ core (likelihoods.hpp), for tests.
// [[Rcpp::export(.digamma)]]
Rcpp::NumericVector digamma_cpp(Rcpp::NumericVector x) {
  Rcpp::NumericVector out(x.size());
  for (R_xlen_t i = 0; i < x.size(); ++i) out[i] = scalegp::digamma(x[i]);
  return out;
}

// Predictive log density and response moments for latent N(m, s2);
// `noise_var` is the likelihood's own parameter (likelihood_at()).
// [[Rcpp::export(.lik_predictive)]]
Rcpp::NumericMatrix lik_predictive(std::string family, Rcpp::NumericVector y, Rcpp::NumericVector m,
                                   Rcpp::NumericVector s2, Rcpp::NumericVector noise_var, int gh_points) {
  const Likelihood lik = likelihood_at(family, noise_var, gh_points);
  Rcpp::NumericMatrix out(m.size(), 3);
  for (R_xlen_t i = 0; i < m.size(); ++i) {
    double mean, sd;
    lik.response_moments(m[i], s2[i], mean, sd);
    out(i, 0) = y.size() ? lik.log_predictive(y[i], m[i], s2[i]) : NA_REAL;
    out(i, 1) = mean;
    out(i, 2) = sd;
  }
  return out;
}

// [[Rcpp::export(.kmeans)]]
Eigen::MatrixXd kmeans_centres(Eigen::Map<Eigen::MatrixXd> X, int k, double seed) {
  Rng rng(static_cast<std::uint64_t>(seed));
  return kmeans(X, k, rng);
}

// (X[, j] - center[j]) / scale[j] for every column, in a new matrix with X's
// dimnames (one pass, no temporaries of the size of X).
// [[Rcpp::export(.standardise)]]
Rcpp::NumericMatrix standardise_cols(Rcpp::NumericMatrix X, Rcpp::NumericVector center, Rcpp::NumericVector scale) {
  const R_xlen_t n = X.nrow(), d = X.ncol();
  if (center.size() < d || scale.size() < d) Rcpp::stop("standardise: center and scale need one value per column");
  Rcpp::NumericMatrix out(n, d);
  for (R_xlen_t j = 0; j < d; ++j) {
    const double* x = &X[j * n];
    double* o = &out[j * n];
    const double c = center[j], s = scale[j];
    for (R_xlen_t i = 0; i < n; ++i) o[i] = (x[i] - c) / s;
  }
  SEXP dn = Rf_getAttrib(X, R_DimNamesSymbol);
  if (!Rf_isNull(dn)) Rf_setAttrib(out, R_DimNamesSymbol, dn);
  return out;
}

// Per column of X: mean, sd, min and max (rows of the result), with R's
// arithmetic (colMeans(), sd(): long double sums, the mean corrected by a
// second pass).
// [[Rcpp::export(.col_summary)]]
Rcpp::NumericMatrix col_summary(Rcpp::NumericMatrix X) {
  const R_xlen_t n = X.nrow(), d = X.ncol();
  Rcpp::NumericMatrix out(4, d);
  for (R_xlen_t j = 0; j < d; ++j) {
    const double* x = &X[j * n];
    long double s = 0;
    double lo = R_PosInf, hi = R_NegInf;
    for (R_xlen_t i = 0; i < n; ++i) {
      s += x[i];
      lo = std::min(lo, x[i]);
      hi = std::max(hi, x[i]);
    }
    long double tmp = s / n, corr = 0, ss = 0;  // (as R's cov.c)
    if (std::isfinite(static_cast<double>(tmp))) {
      for (R_xlen_t i = 0; i < n; ++i) corr += x[i] - tmp;
      tmp += corr / n;
    }
    const long double mean = static_cast<double>(tmp);
    for (R_xlen_t i = 0; i < n; ++i) ss += (x[i] - mean) * (x[i] - mean);
    out(0, j) = static_cast<double>(s / n);
    out(1, j) = n > 1 ? std::sqrt(static_cast<double>(ss / (n - 1))) : NA_REAL;
    out(2, j) = lo;
    out(3, j) = hi;
  }
  Rcpp::List dn = Rcpp::List::create(Rcpp::CharacterVector::create("mean", "sd", "min", "max"), R_NilValue);
  SEXP cn = Rf_getAttrib(X, R_DimNamesSymbol);
  if (!Rf_isNull(cn)) dn[1] = VECTOR_ELT(cn, 1);
  out.attr("dimnames") = dn;
  return out;
}

// Whether a double vector has an infinite value (without a logical vector
// of its length).
// [[Rcpp::export(.any_infinite)]]
bool any_infinite(Rcpp::NumericVector x) {
  for (R_xlen_t i = 0; i < x.size(); ++i)
    if (std::isinf(x[i])) return true;
  return false;
}

// quantile(x, probs, type = 7) of every column of X, by selection (a list,
// one vector per column).
// [[Rcpp::export(.col_quantiles7)]]
Rcpp::List col_quantiles7(Eigen::Map<Eigen::MatrixXd> X, std::vector<double> probs) {
  Rcpp::List out(X.cols());
  for (Eigen::Index j = 0; j < X.cols(); ++j)
    out[j] = quantiles_type7(X.col(j).data(), static_cast<std::size_t>(X.rows()), probs);
  return out;
}

// 0-based boundaries of the fixed row groups of a pass over n rows.
// [[Rcpp::export(.group_bounds)]]
std::vector<double> group_bounds_r(double n) {
  std::vector<double> out;
  for (std::size_t b : group_bounds(static_cast<std::size_t>(n))) out.push_back(static_cast<double>(b));
  return out;
}

// glibc's malloc (Linux) hands blocks above a dynamic threshold (128 KB at
// first) to mmap and returns them to the system when freed, and trims the
// top of its heaps once 2x that threshold is free: a fit, which allocates and
// frees matrices of some MB in every iteration, then spends a large part of
// its time in page faults.  This keeps blocks up to 32 MB in the heaps and up
// to 64 MB of free memory in each, once per session.  True when it changed
// the settings (glibc only).
// [[Rcpp::export(.tune_malloc)]]
bool tune_malloc() {
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
  static bool done = false;
  if (done) return false;
  done = mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, 64 << 20) == 1;
  return done;
#else
  return false;
#endif
}
