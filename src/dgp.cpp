// Rcpp glue of the deep-GP engine (inst/include/scalegp/dgp.hpp, Bui et al.
// 2016): the network <-> an R list, the fit (on RcppParallel, with the R
// progress monitor), the initialisation and the chunk-by-chunk training of
// data read in chunks (with Adam's state carried between calls),
// prediction, and the energy with its gradient (tests; without it, the
// chunks' share of the objective).
#include "glue.h"
#include <scalegp/dgp.hpp>

// [[Rcpp::depends(RcppEigen, RcppParallel)]]

using namespace scalegp;
using namespace glue;

// A network as an R list: jitter and layers, each with log_ell, log_sf,
// log_sn and per output GP lists Z, rho, tau.
static Rcpp::List net_to(const dgp::Net& net) {
  Rcpp::List layers(net.layers.size());
  for (std::size_t l = 0; l < net.layers.size(); ++l) {
    const dgp::Layer& ly = net.layers[l];
    Rcpp::List Z(ly.Z.size()), rho(ly.Z.size()), tau(ly.Z.size());
    for (std::size_t d = 0; d < ly.Z.size(); ++d)
      Z[d] = Rcpp::wrap(ly.Z[d]), rho[d] = Rcpp::wrap(ly.rho[d]), tau[d] = Rcpp::wrap(ly.tau[d]);
    layers[l] = Rcpp::List::create(Rcpp::Named("log_ell") = Rcpp::wrap(ly.log_ell), Rcpp::Named("log_sf") = ly.log_sf,
                                   Rcpp::Named("log_sn") = ly.log_sn, Rcpp::Named("Z") = Z, Rcpp::Named("rho") = rho,
                                   Rcpp::Named("tau") = tau);
  }
  return Rcpp::List::create(Rcpp::Named("jitter") = net.jitter, Rcpp::Named("probit") = net.probit,
                            Rcpp::Named("layers") = layers);
}

static dgp::Net net_from(const Rcpp::List& r) {
  dgp::Net net;
  net.jitter = Rcpp::as<double>(r["jitter"]);
  net.probit = r.containsElementNamed("probit") && Rcpp::as<bool>(r["probit"]);
  const Rcpp::List layers = r["layers"];
  for (R_xlen_t l = 0; l < layers.size(); ++l) {
    const Rcpp::List x = layers[l];
    dgp::Layer ly;
    ly.log_ell = Rcpp::as<VectorXd>(x["log_ell"]);
    ly.log_sf = Rcpp::as<double>(x["log_sf"]);
    ly.log_sn = Rcpp::as<double>(x["log_sn"]);
    const Rcpp::List Z = x["Z"], rho = x["rho"], tau = x["tau"];
    for (R_xlen_t d = 0; d < Z.size(); ++d) {
      ly.Z.push_back(Rcpp::as<MatrixXd>(Z[d]));
      ly.rho.push_back(Rcpp::as<VectorXd>(rho[d]));
      ly.tau.push_back(Rcpp::as<VectorXd>(tau[d]));
      const Index M = ly.Z.back().rows();
      if (ly.Z.back().cols() != ly.log_ell.size() || ly.rho.back().size() != M * (M + 1) / 2 ||
          ly.tau.back().size() != M)
        Rcpp::stop("dgp: inconsistent network (layer %d, output %d)", static_cast<int>(l + 1), static_cast<int>(d + 1));
    }
    net.layers.push_back(ly);
  }
  return net;
}

static Rcpp::List prediction_to(const dgp::Prediction& p) {
  Rcpp::List mean(p.mean.size()), var(p.var.size());
  for (std::size_t l = 0; l < p.mean.size(); ++l) mean[l] = Rcpp::wrap(p.mean[l]), var[l] = Rcpp::wrap(p.var[l]);
  return Rcpp::List::create(Rcpp::Named("mean") = mean, Rcpp::Named("var") = var);
}

// The engine's own options from the R settings list (dgp(): learn_kernel,
// noise_sd, output_noise_sd).
static dgp::Options options_from(const Rcpp::List& c) {
  dgp::Options o;
  o.learn_kernel = Rcpp::as<bool>(c["learn_kernel"]);
  o.noise_sd = Rcpp::as<double>(c["noise_sd"]);
  o.output_noise_sd = Rcpp::as<double>(c["output_noise_sd"]);
  return o;
}

// The fit: initialisation (seeded), Adam on the energy, the final energy on
// all rows and the prediction at the data.  Y: n x D_L (standardised; -1/+1
// with `probit`).
// [[Rcpp::export(.dgp_fit)]]
Rcpp::List dgp_fit(Eigen::Map<Eigen::MatrixXd> X, Eigen::Map<Eigen::MatrixXd> Y, Eigen::Map<Eigen::VectorXd> w,
                   Rcpp::IntegerVector hidden, Rcpp::IntegerVector inducing, Rcpp::List control, double jitter, bool probit, int threads, double seed,
                   Rcpp::Function monitor) {
  try {
    const Settings set = settings_from(control);
    const dgp::Options opt = options_from(control);
    Rng rng(static_cast<std::uint64_t>(seed));
    const MatrixXd Xm = X, Ym = Y;
    const VectorXd wv = w;
    dgp::Net net = dgp::initialise(Xm, Ym.cols(), Rcpp::as<std::vector<int>>(hidden),
                                   std::vector<Eigen::Index>(inducing.begin(), inducing.end()), rng, jitter, opt);
    net.probit = probit;
    const ParallelFor pfor = make_pfor(threads);
    const FitInfo info = dgp::train(net, Xm, Ym, set, rng, pfor, monitor_from(monitor), &wv, opt);
    Rcpp::List out = info_result(info);
    out["net"] = net_to(net);
    out["fitted"] = prediction_to(dgp::predict(net, Xm, static_cast<double>(Xm.rows()), pfor));
    return out;
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}

// Data read in chunks (R: dgp_chunked()): the initial network from a sample
// of the rows, then Adam steps on one chunk at a time from the network and
// the Adam state (`adam`: an empty list at the first chunk, then the
// `adam` entry of the last result) the last chunk left, N =
// control$total_rows.  No final energy (R sums it over the chunks with
// .dgp_energy()).
// [[Rcpp::export(.dgp_init)]]
Rcpp::List dgp_init(Eigen::Map<Eigen::MatrixXd> X, int dout, Rcpp::IntegerVector hidden, Rcpp::IntegerVector inducing,
                    Rcpp::List control, double jitter, bool probit, double seed) {
  try {
    Rng rng(static_cast<std::uint64_t>(seed));
    dgp::Net net = dgp::initialise(MatrixXd(X), dout, Rcpp::as<std::vector<int>>(hidden),
                                   std::vector<Eigen::Index>(inducing.begin(), inducing.end()), rng, jitter,
                                   options_from(control));
    net.probit = probit;
    return net_to(net);
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}

// [[Rcpp::export(.dgp_train)]]
Rcpp::List dgp_train(Rcpp::List net, Eigen::Map<Eigen::MatrixXd> X, Eigen::Map<Eigen::MatrixXd> Y,
                     Eigen::Map<Eigen::VectorXd> w, Rcpp::List control, int threads, double seed,
                     Rcpp::Function monitor, Rcpp::List adam) {
  try {
    const Settings set = settings_from(control);
    dgp::Options opt = options_from(control);
    opt.total_rows = Rcpp::as<double>(control["total_rows"]);
    opt.final_energy = false;
    Rng rng(static_cast<std::uint64_t>(seed));
    dgp::Net nt = net_from(net);
    const VectorXd wv = w;
    Adam::State carry;
    if (adam.size()) {
      carry.lr = Rcpp::as<double>(adam["lr"]);
      carry.m = Rcpp::as<VectorXd>(adam["m"]);
      carry.v = Rcpp::as<VectorXd>(adam["v"]);
      carry.t = Rcpp::as<int>(adam["t"]);
      carry.steps = static_cast<long>(Rcpp::as<double>(adam["steps"]));
    }
    const FitInfo info = dgp::train(nt, MatrixXd(X), MatrixXd(Y), set, rng, make_pfor(threads), monitor_from(monitor),
                                    &wv, opt, &carry);
    Rcpp::List out = info_result(info);
    out["net"] = net_to(nt);
    out["adam"] = Rcpp::List::create(Rcpp::Named("lr") = carry.lr, Rcpp::Named("m") = Rcpp::wrap(carry.m),
                                     Rcpp::Named("v") = Rcpp::wrap(carry.v), Rcpp::Named("t") = carry.t,
                                     Rcpp::Named("steps") = static_cast<double>(carry.steps));
    return out;
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}

// Prediction at the rows of X with the posterior of a network fitted to N rows.
// [[Rcpp::export(.dgp_predict)]]
Rcpp::List dgp_predict(Rcpp::List net, Eigen::Map<Eigen::MatrixXd> X, double N, int threads) {
  try {
    return prediction_to(dgp::predict(net_from(net), MatrixXd(X), N, make_pfor(threads)));
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}

// The energy of rows idx (1-based) of a network for N rows (row weights w;
// empty: all 1), with its gradient
// (a network-shaped list); for tests against an independent implementation.
// [[Rcpp::export(.dgp_energy)]]
Rcpp::List dgp_energy(Rcpp::List net, Eigen::Map<Eigen::MatrixXd> X, Eigen::Map<Eigen::MatrixXd> Y,
                      Rcpp::IntegerVector idx, double N, int threads, Eigen::Map<Eigen::VectorXd> w,
                      bool gradient = true) {
  try {
    const dgp::Net nt = net_from(net);
    const VectorXd wv = w;
    std::vector<std::size_t> rows;
    for (int i : idx) rows.push_back(static_cast<std::size_t>(i - 1));
    dgp::Net g;
    const double E = dgp::energy(nt, MatrixXd(X), MatrixXd(Y), rows, N, gradient ? &g : nullptr, make_pfor(threads),
                                 w.size() ? &wv : nullptr);
    if (!gradient) return Rcpp::List::create(Rcpp::Named("energy") = E);
    return Rcpp::List::create(Rcpp::Named("energy") = E, Rcpp::Named("gradient") = net_to(g));
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}
