// Rcpp glue for the variational engine: converts R lists to the C++ core
// (inst/include/scalegp), runs it on RcppParallel, returns plain lists.
#include "glue.h"

// [[Rcpp::depends(RcppEigen, RcppParallel)]]

using namespace scalegp;
using namespace glue;

namespace {

// Builds the model; q is set from `state` (list(P, h)) when it is not NULL.
Svgp make_model(const Rcpp::List& specs, const std::string& family, double log_noise, const Rcpp::List& control,
                const Eigen::Map<Eigen::MatrixXd>& X, const Eigen::Map<Eigen::VectorXd>& y,
                const Eigen::Map<Eigen::VectorXd>& w, const Eigen::Map<Eigen::VectorXd>& offset,
                SEXP state) {
  Likelihood lik(family_from_string(family), Rcpp::as<int>(control["gh_points"]));
  lik.log_noise = log_noise;
  Svgp model(components_from(specs), lik, settings_from(control), X.data(), X.rows(), X.cols(), y.data(),
             w.data(), offset.data());
  if (!Rf_isNull(state)) {
    const Rcpp::List st(state);
    model.P = Rcpp::as<Eigen::MatrixXd>(st["P"]);
    model.h = Rcpp::as<Eigen::VectorXd>(st["h"]);
    model.refresh();
  }
  return model;
}

}  // namespace

// [[Rcpp::export(.svgp_fit)]]
Rcpp::List svgp_fit(Eigen::Map<Eigen::MatrixXd> X, Eigen::Map<Eigen::VectorXd> y,
                    Eigen::Map<Eigen::VectorXd> w, Eigen::Map<Eigen::VectorXd> offset, Rcpp::List specs,
                    std::string family, double log_noise, Rcpp::List control, int threads, double seed,
                    Rcpp::Function monitor) {
  try {
    Svgp model = make_model(specs, family, log_noise, control, X, y, w, offset, R_NilValue);
    Rng rng(static_cast<std::uint64_t>(seed));
    const ParallelFor pfor = make_pfor(threads);
    const FitInfo info = model.fit(pfor, rng, [&](int it, double obj) {
      Rcpp::checkUserInterrupt();
      return Rcpp::as<bool>(monitor(it, obj));
    });
    return Rcpp::List::create(
        Rcpp::Named("specs") = components_to(model.comps, specs),
        Rcpp::Named("log_noise") = model.lik.log_noise,
        Rcpp::Named("state") = Rcpp::List::create(Rcpp::Named("P") = model.P, Rcpp::Named("h") = model.h),
        Rcpp::Named("m") = model.m, Rcpp::Named("S") = model.S,
        Rcpp::Named("trace") = info.trace, Rcpp::Named("iterations") = info.iterations,
        Rcpp::Named("converged") = info.converged, Rcpp::Named("elbo") = info.objective,
        Rcpp::Named("kl") = model.kl(), Rcpp::Named("rank_loss") = model.rank_loss(),
        Rcpp::Named("seconds") = Rcpp::NumericVector::create(
            Rcpp::Named("init") = info.seconds_init, Rcpp::Named("iterations") = info.seconds_iter,
            Rcpp::Named("final") = info.seconds_final));
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}

// [[Rcpp::export(.svgp_predict)]]
Rcpp::List svgp_predict(Rcpp::List specs, std::string family, double log_noise, Rcpp::List control,
                        Rcpp::List state, Eigen::Map<Eigen::MatrixXd> Xnew, Eigen::Map<Eigen::VectorXd> offset,
                        bool terms, int threads) {
  try {
    Eigen::VectorXd none(0);
    const Eigen::Map<Eigen::VectorXd> empty(none.data(), 0);
    const Eigen::Map<Eigen::MatrixXd> X0(none.data(), 0, Xnew.cols());
    const Svgp model = make_model(specs, family, log_noise, control, X0, empty, empty, empty, state);
    Eigen::VectorXd mean, var;
    Eigen::MatrixXd tm, tv;
    model.predict(Xnew, offset, mean, var, terms ? &tm : nullptr, terms ? &tv : nullptr, make_pfor(threads));
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
