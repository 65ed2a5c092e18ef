// Rcpp glue for the variational engine: converts R lists to the C++ core
// (inst/include/scalegp), runs it on RcppParallel, returns plain lists.
#include <RcppEigen.h>
#include <RcppParallel/TBB.h>  // the TBB back end only (RcppParallel.h adds R-vector wrappers we do not use)
#include <scalegp/scalegp.hpp>

// [[Rcpp::depends(RcppEigen, RcppParallel)]]

using namespace scalegp;

namespace {

// Runs a RangeBody on TBB threads; the body never touches the R API.
struct RangeWorker : RcppParallel::Worker {
  const RangeBody& body;
  explicit RangeWorker(const RangeBody& b) : body(b) {}
  void operator()(std::size_t begin, std::size_t end) override { body(begin, end); }
};

ParallelFor make_pfor(int threads) {
  return [threads](std::size_t n, const RangeBody& body) {
    if (threads <= 1 || n <= 1) return serial_for(n, body);
    RangeWorker w(body);
    RcppParallel::tbbParallelFor(0, n, w, 1, threads);
  };
}

Kind kind_from_string(const std::string& s) {
  if (s == "stationary") return Kind::stationary;
  if (s == "centred") return Kind::centred;
  if (s == "factor") return Kind::factor;
  if (s == "linear") return Kind::linear;
  throw std::invalid_argument("unknown component kind '" + s + "'");
}

std::vector<Component> components_from(const Rcpp::List& specs) {
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
    if (c.kind == Kind::factor) {
      c.levels = Rcpp::as<int>(s["levels"]);
      c.kernel = k;
      out.push_back(std::move(c));
      continue;
    }
    k.type = kernel_from_string(Rcpp::as<std::string>(s["kernel"]));
    k.log_ls = Rcpp::as<Eigen::VectorXd>(s["log_ls"]);
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

Rcpp::List components_to(const std::vector<Component>& comps, const Rcpp::List& specs) {
  Rcpp::List out = Rcpp::clone(specs);
  for (std::size_t i = 0; i < comps.size(); ++i) {
    if (!comps[i].has_kernel()) continue;
    Rcpp::List s = out[i];
    s["log_var"] = comps[i].hyper().log_var;
    if (comps[i].has_inducing()) {
      s["log_ls"] = Rcpp::wrap(comps[i].hyper().log_ls);
      s["Z"] = Rcpp::wrap(comps[i].Z);
    }
    out[i] = s;
  }
  return out;
}

Settings settings_from(const Rcpp::List& c) {
  Settings s;
  s.rel_jitter = Rcpp::as<double>(c["jitter"]);
  s.batch_size = static_cast<std::size_t>(Rcpp::as<double>(c["batch_size"]));
  s.max_iter = Rcpp::as<int>(c["iterations"]);
  s.learning_rate = Rcpp::as<double>(c["learning_rate"]);
  s.tol = Rcpp::as<double>(c["tol"]);
  s.patience = Rcpp::as<int>(c["patience"]);
  s.natgrad_step = Rcpp::as<double>(c["natgrad_step"]);
  s.learn_inducing = Rcpp::as<bool>(c["learn_inducing"]);
  s.learn_noise = Rcpp::as<bool>(c["learn_noise"]);
  s.meanfield = Rcpp::as<bool>(c["meanfield"]);
  s.rank = Rcpp::as<int>(c["rank"]);
  return s;
}

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
        Rcpp::Named("converged") = info.converged, Rcpp::Named("elbo") = info.elbo,
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
