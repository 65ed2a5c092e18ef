// Rcpp glue of the EP engine (inst/include/scalegp/ep.hpp): reads the
// engine's options; the fit in one process, the master loop of a distributed
// fit (passes run by an R callback on the workers of a cluster) and the
// workers' pass over their shard.
#include "glue.h"

// [[Rcpp::depends(RcppEigen, RcppParallel)]]

using namespace scalegp;
using namespace glue;

namespace {

const char* pass_name(Ep::Pass p) {
  switch (p) {
    case Ep::Pass::q: return "q";
    case Ep::Pass::sweep: return "sweep";
    case Ep::Pass::sweep_grad: return "sweep_grad";
    case Ep::Pass::tied: return "tied";
  }
  return "";
}

Ep::Pass pass_from(const std::string& s) {
  if (s == "q") return Ep::Pass::q;
  if (s == "sweep") return Ep::Pass::sweep;
  if (s == "sweep_grad") return Ep::Pass::sweep_grad;
  throw std::invalid_argument("unknown EP pass '" + s + "'");
}

const char* sites_name(Ep::Sites s) {
  switch (s) {
    case Ep::Sites::keep: return "keep";
    case Ep::Sites::commit: return "commit";
    case Ep::Sites::restore: return "restore";
    case Ep::Sites::save: return "save";
    case Ep::Sites::load: return "load";
  }
  return "";
}

Ep::Sites sites_from(const std::string& s) {
  if (s == "keep") return Ep::Sites::keep;
  if (s == "commit") return Ep::Sites::commit;
  if (s == "restore") return Ep::Sites::restore;
  if (s == "save") return Ep::Sites::save;
  if (s == "load") return Ep::Sites::load;
  throw std::invalid_argument("unknown EP site action '" + s + "'");
}

Rcpp::List accum_to_list(const EpAccum& a) {
  Rcpp::List gk(a.grad.g_kern.size()), gz(a.grad.g_Z.size());
  for (std::size_t c = 0; c < a.grad.g_kern.size(); ++c) {
    gk[c] = a.grad.g_kern[c];
    gz[c] = a.grad.g_Z[c];
  }
  return Rcpp::List::create(Rcpp::Named("log_z") = a.log_z, Rcpp::Named("change") = a.change,
                            Rcpp::Named("turn") = a.turn, Rcpp::Named("last_sq") = a.last_sq,
                            Rcpp::Named("Q") = a.Q, Rcpp::Named("r") = a.r, Rcpp::Named("PtPb") = a.PtPb,
                            Rcpp::Named("g_kern") = gk, Rcpp::Named("g_Z") = gz);
}

EpAccum accum_from_list(const Rcpp::List& l) {
  EpAccum a;
  a.log_z = Rcpp::as<double>(l["log_z"]);
  a.change = Rcpp::as<double>(l["change"]);
  a.turn = Rcpp::as<double>(l["turn"]);
  a.last_sq = Rcpp::as<double>(l["last_sq"]);
  a.Q = Rcpp::as<Eigen::MatrixXd>(l["Q"]);
  a.r = Rcpp::as<Eigen::VectorXd>(l["r"]);
  a.PtPb = Rcpp::as<Eigen::MatrixXd>(l["PtPb"]);
  const Rcpp::List gk = l["g_kern"], gz = l["g_Z"];
  for (R_xlen_t c = 0; c < gk.size(); ++c) {
    a.grad.g_kern.push_back(Rcpp::as<Eigen::VectorXd>(gk[c]));
    a.grad.g_Z.push_back(Rcpp::as<Eigen::MatrixXd>(gz[c]));
  }
  return a;
}

// The options of inference = "ep" (R: ep_options()).
EpSettings ep_settings_from(const Rcpp::List& o) {
  EpSettings s;
  s.damping = Rcpp::as<double>(o["damping"]);
  s.tied = Rcpp::as<bool>(o["tied"]);
  s.inner = Rcpp::as<bool>(o["inner"]);
  return s;
}

}  // namespace

// Fits by EP.  With `remote` (an R function) the rows live on the workers of a
// cluster: every pass is remote(kind, rho, sites, state), which returns the
// accumulators of all groups of rows in order (see R/engine-ep.R); X then
// has no rows and n_total gives N.
// [[Rcpp::export(.ep_fit)]]
Rcpp::List ep_fit(Eigen::Map<Eigen::MatrixXd> X, Eigen::Map<Eigen::VectorXd> y, Eigen::Map<Eigen::VectorXd> w,
                  Eigen::Map<Eigen::VectorXd> offset, Rcpp::List specs, Rcpp::List control, Rcpp::List options,
                  int threads, double seed, Rcpp::Function monitor, Rcpp::Nullable<Rcpp::Function> remote,
                  double n_total, Rcpp::Nullable<Rcpp::NumericVector> fitted_offset = R_NilValue) {
  try {
    Ep model(components_from(specs), settings_from(control), ep_settings_from(options), X.data(),
             static_cast<std::size_t>(X.rows()), static_cast<std::size_t>(X.cols()), y.data(), w.data(),
             offset.data());
    Rng rng(static_cast<std::uint64_t>(seed));
    FitInfo info;
    if (remote.isNull()) {
      info = fit_ep(model, make_pfor(threads), rng, monitor_from(monitor));
    } else {
      Rcpp::Function call(remote.get());
      auto reduce = [&](Ep::Pass kind, double rho, Ep::Sites sites) {
        const Rcpp::List state = Rcpp::List::create(Rcpp::Named("specs") = components_to(model.comps, specs),
                                                    Rcpp::Named("m") = model.m, Rcpp::Named("S") = model.S,
                                                    Rcpp::Named("L") = model.chol_P());
        const Rcpp::List groups = call(pass_name(kind), rho, sites_name(sites), state);
        std::vector<EpAccum> parts;
        for (R_xlen_t g = 0; g < groups.size(); ++g) parts.push_back(accum_from_list(groups[g]));
        return sum_groups(parts, [&] { return model.make_accum(kind); });
      };
      auto driver = ep_batch(model, reduce);
      info = driver.fit(static_cast<std::size_t>(n_total), rng, monitor_from(monitor));
    }
    Rcpp::List out = fit_result(model, info, specs);
    if (remote.isNull()) add_row_summaries(out, model, X, fitted_offset, true, make_pfor(threads));
    return out;
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}

// A worker's pass over its shard: `sites` is list(nu, mu, nu_new, mu_new,
// nu_old, mu_old, nu_saved, mu_saved) of its rows, `bounds` the 0-based group boundaries within
// the shard; returns list(groups = per-group accumulators, sites = updated).
// [[Rcpp::export(.ep_shard_pass)]]
Rcpp::List ep_shard_pass(Eigen::Map<Eigen::MatrixXd> X, Eigen::Map<Eigen::VectorXd> y,
                         Eigen::Map<Eigen::VectorXd> w, Eigen::Map<Eigen::VectorXd> offset, Rcpp::List control,
                         Rcpp::List options, Rcpp::List sites, std::vector<double> bounds, std::string kind, double rho,
                         std::string action, Rcpp::List state, int threads) {
  try {
    Ep model(components_from(state["specs"]), settings_from(control), ep_settings_from(options), X.data(),
             static_cast<std::size_t>(X.rows()), static_cast<std::size_t>(X.cols()), y.data(), w.data(),
             offset.data());
    model.set_moments(Rcpp::as<Eigen::VectorXd>(state["m"]), Rcpp::as<Eigen::MatrixXd>(state["S"]),
                      Rcpp::as<Eigen::MatrixXd>(state["L"]));
    Eigen::VectorXd* v[] = {&model.nu,     &model.mu,     &model.nu_new,   &model.mu_new,
                            &model.nu_old, &model.mu_old, &model.nu_saved, &model.mu_saved};
    for (int k = 0; k < 8; ++k) *v[k] = Rcpp::as<Eigen::VectorXd>(sites[k]);
    std::vector<std::size_t> b;
    for (double x : bounds) b.push_back(static_cast<std::size_t>(x));
    const Ep::Pass p = pass_from(kind);
    const std::vector<EpAccum> parts = model.pass(p, rho, sites_from(action), b, make_pfor(threads));
    Rcpp::List groups(parts.size());
    for (std::size_t g = 0; g < parts.size(); ++g) groups[g] = accum_to_list(parts[g]);
    Rcpp::List out_sites(8);
    for (int k = 0; k < 8; ++k) out_sites[k] = *v[k];
    return Rcpp::List::create(Rcpp::Named("groups") = groups, Rcpp::Named("sites") = out_sites);
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}
