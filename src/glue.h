// Shared by the Rcpp entry points: R lists <-> the C++ core's structures
// (components, the common settings, the likelihood of a fit), the
// RcppParallel executor, the monitor and the common part of a fit's result.
// An engine's own options are read by its glue file only.
#pragma once
#include <RcppEigen.h>
#include <RcppParallel/TBB.h>  // the TBB back end only (RcppParallel.h adds R-vector wrappers we do not use)
#include <scalegp/scalegp.hpp>

namespace glue {

using namespace scalegp;

// Runs a RangeBody on TBB threads; the body never touches the R API.  One
// task arena serves every parallel loop of the executor (a fit runs thousands
// of short loops; RcppParallel::tbbParallelFor would build an arena for each).
inline ParallelFor make_pfor(int threads) {
  if (threads <= 1) return serial_for;
  auto arena = std::make_shared<tbb::task_arena>(threads);
  return [arena](std::size_t n, const RangeBody& body) {
    if (n <= 1) return serial_for(n, body);
    arena->execute([&] {
      tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 1),
                        [&](const tbb::blocked_range<std::size_t>& r) { body(r.begin(), r.end()); });
    });
  };
}

inline Kind kind_from_string(const std::string& s) {
  if (s == "stationary") return Kind::stationary;
  if (s == "centred") return Kind::centred;
  if (s == "factor") return Kind::factor;
  if (s == "linear") return Kind::linear;
  if (s == "hilbert") return Kind::hilbert;
  throw std::invalid_argument("unknown component kind '" + s + "'");
}

inline std::vector<Component> components_from(const Rcpp::List& specs) {
  std::vector<Component> out;
  for (R_xlen_t i = 0; i < specs.size(); ++i) {
    const Rcpp::List s = specs[i];
    Component c;
    c.kind = kind_from_string(Rcpp::as<std::string>(s["kind"]));
    for (int j : Rcpp::as<std::vector<int>>(s["cols"])) c.cols.push_back(j);
    if (c.kind == Kind::linear) {
      c.prior_sd = Rcpp::as<Eigen::VectorXd>(s["prior_sd"]);
      c.learn_kernel = false;
      out.push_back(std::move(c));
      continue;
    }
    Kernel k;
    k.log_var = Rcpp::as<double>(s["log_var"]);
    c.learn_kernel = Rcpp::as<bool>(s["learn_kernel"]);
    if (s.containsElementNamed("sd_prior")) c.sd_prior = Rcpp::as<double>(s["sd_prior"]);
    if (s.containsElementNamed("by_col")) c.by_col = Rcpp::as<int>(s["by_col"]);
    if (s.containsElementNamed("ls_a")) {
      c.ls_a = Rcpp::as<Eigen::VectorXd>(s["ls_a"]);
      c.ls_b = Rcpp::as<Eigen::VectorXd>(s["ls_b"]);
    }
    if (c.kind == Kind::factor) {
      c.levels = Rcpp::as<int>(s["levels"]);
      c.kernel = k;
      out.push_back(std::move(c));
      continue;
    }
    k.type = kernel_from_string(Rcpp::as<std::string>(s["kernel"]));
    k.log_ls = Rcpp::as<Eigen::VectorXd>(s["log_ls"]);
    if (s.containsElementNamed("log_ls_min")) c.log_ls_min = Rcpp::as<Eigen::VectorXd>(s["log_ls_min"]);
    if (c.kind == Kind::hilbert) {
      c.kernel = k;
      c.basis.centre = Rcpp::as<Eigen::VectorXd>(s["hs_centre"]);
      c.basis.L = Rcpp::as<Eigen::VectorXd>(s["hs_L"]);
      for (int mk : Rcpp::as<std::vector<int>>(s["hs_m"])) c.basis.m.push_back(mk);
      if (s.containsElementNamed("hs_shift")) {
        const Rcpp::List sh = s["hs_shift"];
        for (R_xlen_t e = 0; e < sh.size(); ++e) c.basis.shift.push_back(Rcpp::as<Eigen::VectorXd>(sh[e]));
      }
      c.basis.check();
      if (static_cast<Index>(c.cols.size()) != c.basis.dim())
        throw std::invalid_argument("a Hilbert term needs one box side per input");
      out.push_back(std::move(c));
      continue;
    }
    c.Z = Rcpp::as<Eigen::MatrixXd>(s["Z"]);
    if (c.kind == Kind::centred) {
      c.centred.base = k;
      const Rcpp::List nodes = s["nodes"], weights = s["weights"];
      for (R_xlen_t e = 0; e < nodes.size(); ++e) {
        c.centred.nodes.push_back(Rcpp::as<Eigen::VectorXd>(nodes[e]));
        c.centred.weights.push_back(Rcpp::as<Eigen::VectorXd>(weights[e]));
      }
      const Rcpp::IntegerVector masks = s["masks"];
      const Rcpp::NumericVector coefs = s["coefs"];
      for (R_xlen_t j = 0; j < masks.size(); ++j)
        c.centred.products.push_back({static_cast<unsigned>(masks[j]), coefs[j]});
    } else {
      c.kernel = k;
    }
    out.push_back(std::move(c));
  }
  return out;
}

inline Rcpp::List components_to(const std::vector<Component>& comps, const Rcpp::List& specs) {
  Rcpp::List out = Rcpp::clone(specs);
  for (std::size_t i = 0; i < comps.size(); ++i) {
    if (!comps[i].has_kernel()) continue;
    Rcpp::List s = out[i];
    s["log_var"] = comps[i].hyper().log_var;
    if (comps[i].has_inducing()) {
      s["log_ls"] = Rcpp::wrap(comps[i].hyper().log_ls);
      s["Z"] = Rcpp::wrap(comps[i].Z);
    } else if (comps[i].kind == Kind::hilbert) {
      s["log_ls"] = Rcpp::wrap(comps[i].hyper().log_ls);
    }
    out[i] = s;
  }
  return out;
}

// The settings every engine reads (R: common_settings()).
inline Settings settings_from(const Rcpp::List& c) {
  Settings s;
  s.rel_jitter = Rcpp::as<double>(c["jitter"]);
  s.batch_size = static_cast<std::size_t>(Rcpp::as<double>(c["batch_size"]));
  s.max_iter = Rcpp::as<int>(c["iterations"]);
  s.learning_rate = Rcpp::as<double>(c["learning_rate"]);
  s.tol = Rcpp::as<double>(c["tol"]);
  s.patience = Rcpp::as<int>(c["patience"]);
  s.learn_inducing = Rcpp::as<bool>(c["learn_inducing"]);
  if (c.containsElementNamed("inducing_iterations")) s.inducing_iterations = Rcpp::as<int>(c["inducing_iterations"]);
  s.learn_noise = Rcpp::as<bool>(c["learn_noise"]);
  if (c.containsElementNamed("learn_df")) s.learn_df = Rcpp::as<bool>(c["learn_df"]);
  return s;
}

// The likelihood of a fit: `family` with control$gh_points Gauss-Hermite
// nodes (R: common_settings()) and its own parameter `log_noise`
// (Likelihood::log_noise: the Gaussian log noise variance, the Gamma log
// shape, the negative binomial log theta, the Student-t log squared scale);
// the Student-t's log_df and min_df from control$log_df, control$min_df
// (R: lik_settings()).
inline Likelihood likelihood_from(const std::string& family, const Rcpp::List& control, double log_noise) {
  Likelihood lik(family_from_string(family), Rcpp::as<int>(control["gh_points"]));
  lik.log_noise = log_noise;
  if (control.containsElementNamed("log_df")) lik.log_df = Rcpp::as<double>(control["log_df"]);
  if (control.containsElementNamed("min_df")) lik.min_df = Rcpp::as<double>(control["min_df"]);
  return lik;
}

// The monitor of a fit: interrupts and the R progress callback, on the main thread.
inline auto monitor_from(Rcpp::Function& monitor) {
  return [&monitor](int it, double obj) {
    Rcpp::checkUserInterrupt();
    return Rcpp::as<bool>(monitor(it, obj));
  };
}

inline Rcpp::NumericVector seconds_of(const FitInfo& info) {
  return Rcpp::NumericVector::create(Rcpp::Named("init") = info.seconds_init,
                                     Rcpp::Named("iterations") = info.seconds_iter,
                                     Rcpp::Named("final") = info.seconds_final);
}

// What every fit returns, whatever its posterior (R: collect_fit()): how the
// fit went.  An engine adds its posterior and its own entries.
inline Rcpp::List info_result(const FitInfo& info) {
  return Rcpp::List::create(
      Rcpp::Named("trace") = info.trace, Rcpp::Named("iterations") = info.iterations,
      Rcpp::Named("converged") = info.converged, Rcpp::Named("objective") = info.objective,
      Rcpp::Named("log_prior") = info.log_prior, Rcpp::Named("failures") = info.failures,
      Rcpp::Named("evaluations") = info.evaluations, Rcpp::Named("gradient") = info.gradient,
      Rcpp::Named("q_change") = info.q_change, Rcpp::Named("stop") = info.stop,
      Rcpp::Named("seconds") = seconds_of(info));
}

// The posterior of an engine with a whitened Gaussian over inducing variables
// (R: posterior_state.gpgam()): the components with their fitted kernels and
// inducing inputs, the precision form P, h and the moments m, S.
inline void add_whitened_posterior(Rcpp::List& out, const WhitenedGaussianModel& model, const Rcpp::List& specs) {
  out["specs"] = components_to(model.comps, specs);
  out["state"] = Rcpp::List::create(Rcpp::Named("P") = model.P, Rcpp::Named("h") = model.h);
  out["m"] = model.m;
  out["S"] = model.S;
}

// What R would otherwise ask for in more passes over the rows after a fit
// (R: centre_terms.gpgam(), fitted_latent.gpgam()): the column means of the
// features over the fit's rows and, given `offset` (the user's offset on the
// internal scale), the latent predictor at those rows without the response's
// centre and scale, with its variance when `variance`.  The prior factors and
// the moments of q are first recomputed from the fitted hyperparameters and
// P, h, as .gp_feature_means() and .gp_predict() compute them.
inline void add_row_summaries(Rcpp::List& out, WhitenedGaussianModel& model, const Eigen::Map<Eigen::MatrixXd>& X,
                              const Rcpp::Nullable<Rcpp::NumericVector>& offset, bool variance,
                              const ParallelFor& pfor) {
  model.refresh_prior();
  out["feature_means"] = model.feature_means(pfor);
  if (offset.isNull()) return;
  model.refresh_q();
  const Eigen::VectorXd off = Rcpp::as<Eigen::VectorXd>(offset.get());
  Eigen::VectorXd mean, var;
  model.predict(X, off, mean, var, nullptr, nullptr, pfor, nullptr, variance);
  out["row_fit"] = mean;
  out["row_fit_var"] = var;
}

// info_result() with the whitened posterior: what the vi, ep and decoupled
// engines return before their own entries.
inline Rcpp::List fit_result(const WhitenedGaussianModel& model, const FitInfo& info, const Rcpp::List& specs) {
  Rcpp::List out = info_result(info);
  add_whitened_posterior(out, model, specs);
  return out;
}

}  // namespace glue
