// Rcpp glue of the decoupled engine (inst/include/scalegp/decoupled.hpp):
// reads the engine's options, runs the fit on RcppParallel, returns a plain
// list; the mean bases' part of the predictor at new rows.
#include "glue.h"

// [[Rcpp::depends(RcppEigen, RcppParallel)]]

using namespace scalegp;
using namespace glue;

namespace {

// The options of inference = "decoupled" (R: decoupled_options(), passed on by engine-decoupled.R).
DecoupledSettings decoupled_settings_from(const Rcpp::List& o) {
  DecoupledSettings s;
  s.mean_basis = Rcpp::as<int>(o["mean_basis"]);
  s.add = Rcpp::as<int>(o["add_basis"]);
  s.kl_columns = Rcpp::as<int>(o["kl_columns"]);
  s.rate_ratio = Rcpp::as<double>(o["rate_ratio"]);
  s.solve_mean = Rcpp::as<bool>(o["mean_solve"]);
  s.closed_form = o.containsElementNamed("closed_form") && Rcpp::as<bool>(o["closed_form"]);
  s.rate_decay = Rcpp::as<double>(o["rate_decay"]);
  return s;
}

SvgpSettings natural_settings_from(const Rcpp::List& o) {
  SvgpSettings s;
  s.natgrad_step = Rcpp::as<double>(o["natgrad_step"]);
  s.lbfgs = true;  // (all rows per iteration: L-BFGS with q optimal at each step)
  s.discrete = Rcpp::as<bool>(o["discrete"]);  // (the engine keeps it only for few distinct values)
  s.bins = Rcpp::as<double>(o["bins"]);
  return s;
}

}  // namespace

// [[Rcpp::export(.decoupled_fit)]]
Rcpp::List decoupled_fit(Eigen::Map<Eigen::MatrixXd> X, Eigen::Map<Eigen::VectorXd> y,
                         Eigen::Map<Eigen::VectorXd> w, Eigen::Map<Eigen::VectorXd> offset, Rcpp::List specs,
                         std::string family, double log_noise, Rcpp::List control, Rcpp::List options, int threads,
                         double seed, Rcpp::Function monitor) {
  try {
    Decoupled model(components_from(specs), likelihood_from(family, control, log_noise), settings_from(control),
                    natural_settings_from(options), decoupled_settings_from(options),
                    X.data(), static_cast<std::size_t>(X.rows()), static_cast<std::size_t>(X.cols()), y.data(),
                    w.data(), offset.data());
    Rng rng(static_cast<std::uint64_t>(seed));
    const ParallelFor pfor = make_pfor(threads);
    const FitInfo info = model.fit(pfor, rng, monitor_from(monitor));
    Rcpp::List out = fit_result(model, info, specs);
    out["log_noise"] = model.lik.log_noise;
    out["kl"] = model.kl();
    out["basis"] = Rcpp::wrap(Eigen::MatrixXd(model.A.topRows(model.active)));
    out["coef"] = Rcpp::wrap(Eigen::VectorXd(model.coef()));
    out["basis_mean"] = model.basis_data_mean();
    // distinct values of the gp term the passes over all rows went through (0: the rows)
    out["values"] = model.by_value() ? static_cast<double>(model.data().discrete_component(model.gp_component()).X.rows()) : 0.0;
    out["learn_inducing"] = model.set.learn_inducing;  // (false once a full-data fit stopped moving them)
    // (the feature means only: the fitted values add the mean bases in R)
    add_row_summaries(out, model, X, R_NilValue, false, pfor);
    return out;
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}

// k(x, A) a at the rows of X (the gp component's columns given by `spec`).
// [[Rcpp::export(.decoupled_mean)]]
Eigen::VectorXd decoupled_mean(Rcpp::List spec, Eigen::Map<Eigen::MatrixXd> basis, Eigen::Map<Eigen::VectorXd> coef,
                               Eigen::Map<Eigen::MatrixXd> X, int threads) {
  try {
    const std::vector<Component> comps = components_from(Rcpp::List::create(spec));
    const Component& k = comps[0];
    if (basis.rows() == 0) return Eigen::VectorXd::Zero(X.rows());
    Eigen::MatrixXd Xc(X.rows(), k.dim());
    for (Index j = 0; j < k.dim(); ++j) Xc.col(j) = X.col(k.cols[j]);
    return basis_mean(k.kernel, k.kernel.scale(Xc), k.kernel.scale(basis), coef, make_pfor(threads));
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}
