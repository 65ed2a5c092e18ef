// Rcpp glue shared by the engines: latent prediction from a whitened
// Gaussian posterior (the VI and EP engines), likelihood helpers used by the
// R methods and tests, k-means for initial inducing inputs, and the fixed row
// groups of a deterministic pass, and the allocator setting of a fit.
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

// Expected log-likelihood E[log p(y | f)], f ~ N(m, s2), and its derivatives
// (columns v, dm, ds2), for tests against numerical integration.
// [[Rcpp::export(.lik_expect)]]
Rcpp::NumericMatrix lik_expect(std::string family, Rcpp::NumericVector y, Rcpp::NumericVector w,
                               Rcpp::NumericVector m, Rcpp::NumericVector s2, double noise_var, int gh_points) {
  Likelihood lik(family_from_string(family), gh_points);
  lik.log_noise = std::log(noise_var - Likelihood::kNoiseFloor);
  Rcpp::NumericMatrix out(y.size(), 3);
  for (R_xlen_t i = 0; i < y.size(); ++i) {
    const Expectation e = lik.expect(y[i], w[i], m[i], s2[i]);
    out(i, 0) = e.v;
    out(i, 1) = e.dm;
    out(i, 2) = e.dv;
  }
  return out;
}

// Predictive log density and response moments for latent N(m, s2).
// [[Rcpp::export(.lik_predictive)]]
Rcpp::NumericMatrix lik_predictive(std::string family, Rcpp::NumericVector y, Rcpp::NumericVector m,
                                   Rcpp::NumericVector s2, double noise_var, int gh_points) {
  Likelihood lik(family_from_string(family), gh_points);
  lik.log_noise = std::log(std::max(noise_var - Likelihood::kNoiseFloor, 1e-300));
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

// quantile(x, probs, type = 7) for increasing probs, by selection.
// [[Rcpp::export(.quantiles7)]]
std::vector<double> quantiles7(std::vector<double> x, std::vector<double> probs) {
  return quantiles_type7(std::move(x), probs);
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
