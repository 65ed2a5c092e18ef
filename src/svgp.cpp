// Rcpp glue of the variational engine (inst/include/scalegp/svgp.hpp): reads
// the engine's options, runs the fit on RcppParallel, returns a plain list.
#include "glue.h"

// [[Rcpp::depends(RcppEigen, RcppParallel)]]

using namespace scalegp;
using namespace glue;

// The options of inference = "vi" (R: vi_options()).
static SvgpSettings svgp_settings_from(const Rcpp::List& o) {
  SvgpSettings s;
  s.natgrad_step = Rcpp::as<double>(o["natgrad_step"]);
  s.meanfield = Rcpp::as<bool>(o["meanfield"]);
  s.rank = Rcpp::as<int>(o["rank"]);
  s.lbfgs = Rcpp::as<bool>(o["lbfgs"]);
  s.discrete = Rcpp::as<bool>(o["discrete"]);
  s.bins = Rcpp::as<double>(o["bins"]);
  return s;
}

// [[Rcpp::export(.svgp_fit)]]
Rcpp::List svgp_fit(Eigen::Map<Eigen::MatrixXd> X, Eigen::Map<Eigen::VectorXd> y,
                    Eigen::Map<Eigen::VectorXd> w, Eigen::Map<Eigen::VectorXd> offset, Rcpp::List specs,
                    std::string family, double log_noise, Rcpp::List control, Rcpp::List options, int threads,
                    double seed, Rcpp::Function monitor) {
  try {
    Likelihood lik(family_from_string(family), Rcpp::as<int>(control["gh_points"]));
    lik.log_noise = log_noise;
    Svgp model(components_from(specs), lik, settings_from(control), svgp_settings_from(options), X.data(),
               static_cast<std::size_t>(X.rows()), static_cast<std::size_t>(X.cols()), y.data(), w.data(),
               offset.data());
    Rng rng(static_cast<std::uint64_t>(seed));
    const FitInfo info = model.fit(make_pfor(threads), rng, monitor_from(monitor));
    Rcpp::List out = fit_result(model, info, specs);
    out["log_noise"] = model.lik.log_noise;
    out["kl"] = model.kl();
    out["rank_loss"] = model.rank_loss();
    out["discrete"] = model.discrete();
    if (model.discrete()) out["feature_means"] = model.discrete_feature_means(make_pfor(threads));
    return out;
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}
