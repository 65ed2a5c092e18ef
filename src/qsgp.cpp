// Rcpp glue of the QSGP engine (inst/include/scalegp/qsgp.hpp): R component
// specs <-> feature blocks, the fit, the per-component prediction at new
// rows, the features of one block, and the ELBO estimator averaged over
// draws (for the tests); the same four (.qsgp_gram_*) for basis =
// "inducing" (QsgpGram).  Returns plain lists.
#include "glue.h"

// [[Rcpp::depends(RcppEigen, RcppParallel)]]

using namespace scalegp;
using namespace glue;

namespace {

// The options of inference = "qsgp" (R: qsgp_options(), qsgp_core_options()).
QsgpSettings qsgp_settings_from(const Rcpp::List& o) {
  QsgpSettings s;
  s.features = Rcpp::as<int>(o["features"]);
  s.feature_batch = Rcpp::as<int>(o["feature_batch"]);
  s.variational_rate = Rcpp::as<double>(o["variational_rate"]);
  s.final_rate = Rcpp::as<double>(o["final_rate"]);
  s.freeze = Rcpp::as<double>(o["freeze"]);
  s.control_rows = static_cast<std::size_t>(Rcpp::as<double>(o["control_variate"]));
  s.dense_columns = Rcpp::as<int>(o["dense_columns"]);
  return s;
}

// One block per component: a stationary gp() term becomes features/2 random
// frequencies (those stored in its spec as `eps`, else drawn from rng and,
// with `sort` (the chevron), ordered by |omega| at the starting
// lengthscales), the parametric block its columns.
std::vector<QsgpBlock> blocks_from(const Rcpp::List& specs, Index features, Rng* rng, bool sort = false) {
  std::vector<QsgpBlock> out;
  for (R_xlen_t i = 0; i < specs.size(); ++i) {
    const Rcpp::List s = specs[i];
    const std::string kind = Rcpp::as<std::string>(s["kind"]);
    QsgpBlock b;
    for (int j : Rcpp::as<std::vector<int>>(s["cols"])) b.cols.push_back(j);
    if (kind == "linear") {
      b.rff = false;
      b.prior_sd = Rcpp::as<Eigen::VectorXd>(s["prior_sd"]);
    } else if (kind == "stationary") {
      b.type = kernel_from_string(Rcpp::as<std::string>(s["kernel"]));
      b.log_var = Rcpp::as<double>(s["log_var"]);
      b.log_ls = Rcpp::as<Eigen::VectorXd>(s["log_ls"]);
      b.learn_kernel = Rcpp::as<bool>(s["learn_kernel"]);
      if (s.containsElementNamed("eps")) {
        b.eps = Rcpp::as<Eigen::MatrixXd>(s["eps"]);
      } else {
        if (!rng) throw std::invalid_argument("a gp() component has no stored frequencies");
        b.eps = rff_frequencies(b.type, features / 2, b.dim(), *rng);
        if (sort) b.eps = sort_frequencies(b.eps, b.log_ls);
      }
    } else {
      throw std::invalid_argument("inference = \"qsgp\" cannot fit a component of kind '" + kind + "'");
    }
    out.push_back(std::move(b));
  }
  return out;
}

// The specs with the fitted kernel hyperparameters and the frequencies.
Rcpp::List specs_to(const std::vector<QsgpBlock>& blocks, const Rcpp::List& specs) {
  Rcpp::List out = Rcpp::clone(specs);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (!blocks[i].rff) continue;
    Rcpp::List s = out[static_cast<R_xlen_t>(i)];
    s["log_var"] = blocks[i].log_var;
    s["log_ls"] = Rcpp::wrap(blocks[i].log_ls);
    s["eps"] = Rcpp::wrap(blocks[i].eps);
    out[static_cast<R_xlen_t>(i)] = s;
  }
  return out;
}

// The chevron's dense columns from R (a list of matrices, one per block).
std::vector<Eigen::MatrixXd> dense_from(const Rcpp::List& dense) {
  std::vector<Eigen::MatrixXd> out;
  for (R_xlen_t i = 0; i < dense.size(); ++i) out.push_back(Rcpp::as<Eigen::MatrixXd>(dense[i]));
  return out;
}

Rcpp::List dense_to(const std::vector<Eigen::MatrixXd>& L) {
  Rcpp::List out(static_cast<R_xlen_t>(L.size()));
  for (std::size_t b = 0; b < L.size(); ++b) out[static_cast<R_xlen_t>(b)] = Rcpp::wrap(L[b]);
  return out;
}

// basis = "inducing": the one gp() component and the parametric block
// (none when absent) of `specs` as a QsgpGram on the training design X.
QsgpGram gram_from(const Rcpp::List& specs, const Eigen::Map<Eigen::MatrixXd>& X, const double* y, const double* w,
                   const double* offset, double log_noise, const Settings& set, const QsgpSettings& qs) {
  Kernel k;
  std::vector<Index> gcols, pcols;
  Eigen::VectorXd psd;
  int terms = 0;
  for (R_xlen_t i = 0; i < specs.size(); ++i) {
    const Rcpp::List s = specs[i];
    const std::string kind = Rcpp::as<std::string>(s["kind"]);
    std::vector<Index> cols;
    for (int j : Rcpp::as<std::vector<int>>(s["cols"])) cols.push_back(j);
    if (kind == "linear") {
      pcols = cols;
      psd = Rcpp::as<Eigen::VectorXd>(s["prior_sd"]);
    } else if (kind == "stationary") {
      ++terms;
      gcols = cols;
      k.type = kernel_from_string(Rcpp::as<std::string>(s["kernel"]));
      k.log_var = Rcpp::as<double>(s["log_var"]);
      k.log_ls = Rcpp::as<Eigen::VectorXd>(s["log_ls"]);
    } else {
      throw std::invalid_argument("inference = \"qsgp\" cannot fit a component of kind '" + kind + "'");
    }
  }
  if (terms != 1) throw std::invalid_argument("basis = \"inducing\" needs exactly one gp() component");
  return QsgpGram(k, gcols, pcols, psd, log_noise, set, qs, X.data(), static_cast<std::size_t>(X.rows()),
                  static_cast<std::size_t>(X.cols()), y, w, offset);
}

}  // namespace

// [[Rcpp::export(.qsgp_fit)]]
Rcpp::List qsgp_fit(Eigen::Map<Eigen::MatrixXd> X, Eigen::Map<Eigen::VectorXd> y, Eigen::Map<Eigen::VectorXd> w,
                    Eigen::Map<Eigen::VectorXd> offset, Rcpp::List specs, std::string lik, double log_noise,
                    Rcpp::List control, Rcpp::List options, int threads, double seed, Rcpp::Function monitor) {
  try {
    const Settings set = settings_from(control);
    const QsgpSettings qs = qsgp_settings_from(options);
    Rng rng(static_cast<std::uint64_t>(seed));
    Qsgp model(blocks_from(specs, qs.features, &rng, qs.dense_columns > 0), log_noise, set, qs, X.data(),
               static_cast<std::size_t>(X.rows()),
               static_cast<std::size_t>(X.cols()), y.data(), w.data(), offset.data());
    model.lik = likelihood_from(lik, control, log_noise);
    model.learn_noise = set.learn_noise && model.lik.family == Family::gaussian;
    const ParallelFor pfor = make_pfor(threads);
    FitInfo info = model.fit(pfor, rng, monitor_from(monitor));
    const auto t0 = Clock::now();
    const QsgpExact ex = model.exact(pfor);
    // the tracked a = Phi0_P mu (and the chevron's beta) against a direct computation (when that is cheap)
    double cv_drift = NA_REAL;
    if (!model.cv_rows.empty() && static_cast<double>(model.cv_rows.size()) * model.total_size() <= 5e7)
      cv_drift = model.cv_drift(pfor);
    info.seconds_final = seconds_since(t0);
    return Rcpp::List::create(
        Rcpp::Named("specs") = specs_to(model.blocks, specs), Rcpp::Named("log_noise") = model.log_noise,
        Rcpp::Named("mu") = model.mu, Rcpp::Named("rho") = model.rho, Rcpp::Named("dense") = dense_to(model.L),
        Rcpp::Named("trace") = info.trace,
        Rcpp::Named("iterations") = info.iterations, Rcpp::Named("converged") = info.converged,
        Rcpp::Named("stop") = info.stop, Rcpp::Named("objective") = ex.elbo, Rcpp::Named("gradient") = info.gradient,
        Rcpp::Named("failures") = 0, Rcpp::Named("seconds") = seconds_of(info), Rcpp::Named("row_mean") = ex.mean,
        Rcpp::Named("row_var") = ex.var, Rcpp::Named("feature_means") = ex.feature_means,
        Rcpp::Named("control_rows") = static_cast<double>(model.cv_rows.size()), Rcpp::Named("cv_drift") = cv_drift);
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}

// Per component at the rows of X: the mean and variance of its part of the
// latent predictor, uncentred and with features centred by `center`
// (posterior mu, rho and the chevron's dense columns, one matrix per block).
// [[Rcpp::export(.qsgp_predict)]]
Rcpp::List qsgp_predict(Rcpp::List specs, Eigen::Map<Eigen::VectorXd> mu, Eigen::Map<Eigen::VectorXd> rho,
                        Rcpp::List dense, Eigen::Map<Eigen::VectorXd> center, Eigen::Map<Eigen::MatrixXd> X,
                        int threads) {
  try {
    const double dummy = 0;
    Qsgp model(blocks_from(specs, 0, nullptr), 0.0, Settings(), QsgpSettings(), X.data(),
               static_cast<std::size_t>(X.rows()), static_cast<std::size_t>(X.cols()), &dummy, &dummy, &dummy);
    if (model.total_size() != mu.size() || mu.size() != rho.size() || center.size() != mu.size())
      throw std::invalid_argument("the posterior does not match the feature blocks");
    model.mu = mu;
    model.rho = rho;
    model.set_dense(dense_from(dense));
    Eigen::MatrixXd mean, var, cmean, cvar;
    model.predict(X.data(), static_cast<std::size_t>(X.rows()), center, mean, var, cmean, cvar, make_pfor(threads));
    return Rcpp::List::create(Rcpp::Named("mean") = mean, Rcpp::Named("var") = var, Rcpp::Named("cmean") = cmean,
                              Rcpp::Named("cvar") = cvar);
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}

// Features first + 1, ..., first + count of component `block` (1-based) at the rows of X.
// [[Rcpp::export(.qsgp_features)]]
Eigen::MatrixXd qsgp_features(Rcpp::List specs, int block, int first, int count, Eigen::Map<Eigen::MatrixXd> X) {
  try {
    const double dummy = 0;
    Qsgp model(blocks_from(specs, 0, nullptr), 0.0, Settings(), QsgpSettings(), X.data(),
               static_cast<std::size_t>(X.rows()), static_cast<std::size_t>(X.cols()), &dummy, &dummy, &dummy);
    if (block < 1 || static_cast<std::size_t>(block) > model.blocks.size()) throw std::invalid_argument("no such block");
    return model.block_features(static_cast<std::size_t>(block - 1), X.data(), static_cast<std::size_t>(X.rows()),
                                first, count);
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}

// The ELBO estimator at a given posterior and hyperparameters: its mean and
// the mean of its gradient (mu, rho, then per gp() component its log
// variance and log lengthscales, then the log noise) over `reps` draws, their
// standard errors, and the exact ELBO; likelihood `lik` (non-Gaussian: the
// tangent-line bound, tangent points at the posterior given); with `control_rows` > 0 (Gaussian) the
// control variate on that many support rows drawn first; `dense` (a list,
// one matrix per block; NULL: mean field) the chevron's dense columns, whose
// mean gradient (the blocks' matrices stacked column-major) and its standard
// error are `gradient_dense`, `gradient_dense_se`.  For the tests.
// [[Rcpp::export(.qsgp_estimate)]]
Rcpp::List qsgp_estimate(Eigen::Map<Eigen::MatrixXd> X, Eigen::Map<Eigen::VectorXd> y, Eigen::Map<Eigen::VectorXd> w,
                         Eigen::Map<Eigen::VectorXd> offset, Rcpp::List specs, double log_noise,
                         Eigen::Map<Eigen::VectorXd> mu, Eigen::Map<Eigen::VectorXd> rho, double batch_size,
                         int feature_batch, int reps, double seed, std::string lik = "gaussian",
                         int gh_points = 20, double control_rows = 0,
                         Rcpp::Nullable<Rcpp::List> dense = R_NilValue) {
  try {
    Settings set;
    set.batch_size = static_cast<std::size_t>(batch_size);
    QsgpSettings qs;
    qs.feature_batch = feature_batch;
    Qsgp model(blocks_from(specs, 0, nullptr), log_noise, set, qs, X.data(), static_cast<std::size_t>(X.rows()),
               static_cast<std::size_t>(X.cols()), y.data(), w.data(), offset.data());
    model.lik = Likelihood(family_from_string(lik), gh_points);
    const Index m = model.total_size();
    if (mu.size() != m || rho.size() != m) throw std::invalid_argument("mu and rho must have one entry per feature");
    model.mu = mu;
    model.rho = rho;
    if (dense.isNotNull()) model.set_dense(dense_from(Rcpp::List(dense)));
    Index nL = 0;
    for (const Eigen::MatrixXd& Lb : model.L) nL += Lb.size();
    Rng rng(static_cast<std::uint64_t>(seed));
    model.cv_init(static_cast<std::size_t>(control_rows), rng, serial_for);
    const Index len = 2 * m + model.n_hyper();
    Eigen::VectorXd gs = Eigen::VectorXd::Zero(len), gss = gs, ls = Eigen::VectorXd::Zero(nL), lss = ls;
    double s = 0, ss = 0;
    for (int r = 0; r < reps; ++r) {
      const QsgpDraw dr = model.draw(rng);
      const QsgpEstimate est = model.estimate(dr, serial_for);
      Eigen::VectorXd g = Eigen::VectorXd::Zero(len);
      for (std::size_t b = 0; b < model.blocks.size(); ++b) {
        const Index st = model.blocks[b].start;
        for (std::size_t e = 0; e < dr.I[b].size(); ++e) {
          g(st + dr.I[b][e]) += est.gmuI[b](static_cast<Index>(e));
          g(m + st + dr.I[b][e]) += est.grhoI[b](static_cast<Index>(e));
        }
        for (std::size_t e = 0; e < dr.J[b].size(); ++e) {
          g(st + dr.J[b][e]) += est.gmuJ[b](static_cast<Index>(e));
          if (model.kappa(b) > 0) g(m + st + dr.J[b][e]) += est.grhoJ[b](static_cast<Index>(e));
        }
      }
      g.tail(model.n_hyper()) = est.ghyper;
      Eigen::VectorXd gl = Eigen::VectorXd::Zero(nL);
      for (std::size_t b = 0, o = 0; b < model.blocks.size(); o += static_cast<std::size_t>(model.L[b].size()), ++b) {
        const Index rows = model.L[b].rows();
        for (int side_j = 0; side_j < 2; ++side_j) {
          const std::vector<Index>& idx = side_j == 0 ? dr.I[b] : dr.J[b];
          const Eigen::MatrixXd& gL = side_j == 0 ? est.gLI[b] : est.gLJ[b];
          for (std::size_t e = 0; e < idx.size(); ++e)
            for (Index r = 0; r < gL.cols(); ++r)
              gl(static_cast<Index>(o) + r * rows + idx[e]) += gL(static_cast<Index>(e), r);
        }
      }
      ls += gl;
      lss += gl.cwiseAbs2();
      s += est.value;
      ss += est.value * est.value;
      gs += g;
      gss += g.cwiseAbs2();
    }
    const double mean = s / reps;
    const Eigen::VectorXd gm = gs / reps, lm = ls / reps;
    return Rcpp::List::create(
        Rcpp::Named("value") = mean, Rcpp::Named("value_se") = std::sqrt(std::max(0.0, ss / reps - mean * mean) / reps),
        Rcpp::Named("gradient") = gm,
        Rcpp::Named("gradient_se") = Eigen::VectorXd(((gss / reps - gm.cwiseAbs2()).cwiseMax(0.0) / reps).cwiseSqrt()),
        Rcpp::Named("gradient_dense") = lm,
        Rcpp::Named("gradient_dense_se") =
            Eigen::VectorXd(((lss / reps - lm.cwiseAbs2()).cwiseMax(0.0) / reps).cwiseSqrt()),
        Rcpp::Named("exact") = model.exact(serial_for).elbo);
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}

// basis = "inducing" (QsgpGram, the paper's m = n variant): the fit on the
// training design X, with the hyperparameters of `specs` and the noise fixed;
// `objective` is the exact ELBO without (1/2) log |K|.
// [[Rcpp::export(.qsgp_gram_fit)]]
Rcpp::List qsgp_gram_fit(Eigen::Map<Eigen::MatrixXd> X, Eigen::Map<Eigen::VectorXd> y, Eigen::Map<Eigen::VectorXd> w,
                         Eigen::Map<Eigen::VectorXd> offset, Rcpp::List specs, double log_noise, Rcpp::List control,
                         Rcpp::List options, int threads, double seed, Rcpp::Function monitor) {
  try {
    const Settings set = settings_from(control);
    QsgpGram model = gram_from(specs, X, y.data(), w.data(), offset.data(), log_noise, set, qsgp_settings_from(options));
    Rng rng(static_cast<std::uint64_t>(seed));
    const ParallelFor pfor = make_pfor(threads);
    FitInfo info = model.fit(pfor, rng, monitor_from(monitor));
    const auto t0 = Clock::now();
    const QsgpExact ex = model.exact(pfor);
    double cv_drift = NA_REAL;
    if (!model.cv_rows.empty() && static_cast<double>(model.cv_rows.size()) * static_cast<double>(model.n()) <= 5e7)
      cv_drift = (model.cv_exact(pfor) - model.cv_a).cwiseAbs().maxCoeff();
    info.seconds_final = seconds_since(t0);
    return Rcpp::List::create(
        Rcpp::Named("log_noise") = model.log_noise, Rcpp::Named("mu") = model.mu, Rcpp::Named("rho") = model.rho,
        Rcpp::Named("trace") = info.trace, Rcpp::Named("iterations") = info.iterations,
        Rcpp::Named("converged") = info.converged, Rcpp::Named("stop") = info.stop,
        Rcpp::Named("objective") = ex.elbo, Rcpp::Named("gradient") = info.gradient, Rcpp::Named("failures") = 0,
        Rcpp::Named("seconds") = seconds_of(info), Rcpp::Named("row_mean") = ex.mean,
        Rcpp::Named("row_var") = ex.var, Rcpp::Named("feature_means") = ex.feature_means,
        Rcpp::Named("control_rows") = static_cast<double>(model.cv_rows.size()), Rcpp::Named("cv_drift") = cv_drift);
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}

// basis = "inducing": per block (the term, the parametric block) at the rows
// of X the mean and variance, uncentred and centred by `center` (size n),
// with the paper's Proposition-4 augmentation of the term's variance when
// `augment`; Xtrain, wtrain the training design and weights.
// [[Rcpp::export(.qsgp_gram_predict)]]
Rcpp::List qsgp_gram_predict(Rcpp::List specs, Eigen::Map<Eigen::MatrixXd> Xtrain, Eigen::Map<Eigen::VectorXd> wtrain,
                             double log_noise, Eigen::Map<Eigen::VectorXd> mu, Eigen::Map<Eigen::VectorXd> rho,
                             Eigen::Map<Eigen::VectorXd> center, Eigen::Map<Eigen::MatrixXd> X, bool augment,
                             int threads) {
  try {
    if (wtrain.size() != Xtrain.rows() || X.cols() != Xtrain.cols())
      throw std::invalid_argument("the training design does not match");
    QsgpGram model = gram_from(specs, Xtrain, wtrain.data(), wtrain.data(), wtrain.data(), log_noise, Settings(),
                               QsgpSettings());
    if (mu.size() != model.mu.size() || rho.size() != mu.size() || center.size() != Xtrain.rows())
      throw std::invalid_argument("the posterior does not match the basis");
    model.mu = mu;
    model.rho = rho;
    Eigen::MatrixXd mean, var, cmean, cvar;
    model.predict(X.data(), static_cast<std::size_t>(X.rows()), center, augment, mean, var, cmean, cvar,
                  make_pfor(threads));
    return Rcpp::List::create(Rcpp::Named("mean") = mean, Rcpp::Named("var") = var, Rcpp::Named("cmean") = cmean,
                              Rcpp::Named("cvar") = cvar);
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}

// basis = "inducing": k(rows of X, training rows first + 1, ..., first + count).
// [[Rcpp::export(.qsgp_gram_features)]]
Eigen::MatrixXd qsgp_gram_features(Rcpp::List specs, Eigen::Map<Eigen::MatrixXd> Xtrain, int first, int count,
                                   Eigen::Map<Eigen::MatrixXd> X) {
  try {
    if (X.cols() != Xtrain.cols()) throw std::invalid_argument("the training design does not match");
    const Eigen::VectorXd one = Eigen::VectorXd::Ones(Xtrain.rows());
    QsgpGram model = gram_from(specs, Xtrain, one.data(), one.data(), one.data(), 0.0, Settings(), QsgpSettings());
    return model.features(X.data(), static_cast<std::size_t>(X.rows()), first, count);
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}

// basis = "inducing": the estimator's mean and the mean of its gradient (mu,
// then rho) over `reps` draws, their standard errors, and the exact ELBO
// without (1/2) log |K|; `control_rows` support rows for the control
// variate (drawn first).  For the tests.
// [[Rcpp::export(.qsgp_gram_estimate)]]
Rcpp::List qsgp_gram_estimate(Eigen::Map<Eigen::MatrixXd> X, Eigen::Map<Eigen::VectorXd> y,
                              Eigen::Map<Eigen::VectorXd> w, Eigen::Map<Eigen::VectorXd> offset, Rcpp::List specs,
                              double log_noise, Eigen::Map<Eigen::VectorXd> mu, Eigen::Map<Eigen::VectorXd> rho,
                              double batch_size, int feature_batch, int reps, double seed, double control_rows = 0) {
  try {
    Settings set;
    set.batch_size = static_cast<std::size_t>(batch_size);
    QsgpSettings qs;
    qs.feature_batch = feature_batch;
    QsgpGram model = gram_from(specs, X, y.data(), w.data(), offset.data(), log_noise, set, qs);
    const Index m = model.mu.size(), n = static_cast<Index>(model.n()), np = model.n_param();
    if (mu.size() != m || rho.size() != m) throw std::invalid_argument("mu and rho must have one entry per weight");
    model.mu = mu;
    model.rho = rho;
    Rng rng(static_cast<std::uint64_t>(seed));
    model.cv_init(static_cast<std::size_t>(control_rows), rng, serial_for);
    Eigen::VectorXd gs = Eigen::VectorXd::Zero(2 * m), gss = gs;
    double s = 0, ss = 0;
    for (int r = 0; r < reps; ++r) {
      const QsgpGramDraw dr = model.draw(rng);
      const QsgpGramEstimate est = model.estimate(dr, serial_for);
      Eigen::VectorXd g = Eigen::VectorXd::Zero(2 * m);
      for (std::size_t e = 0; e < dr.I.size(); ++e) {
        g(dr.I[e]) += est.gmuI(static_cast<Index>(e));
        g(m + dr.I[e]) += est.grhoI(static_cast<Index>(e));
      }
      for (std::size_t e = 0; e < dr.J.size(); ++e) g(dr.J[e]) += est.gmuJ(static_cast<Index>(e));
      g.segment(n, np) += est.gmuP;
      g.segment(m + n, np) += est.grhoP;
      s += est.value;
      ss += est.value * est.value;
      gs += g;
      gss += g.cwiseAbs2();
    }
    const double mean = s / reps;
    const Eigen::VectorXd gm = gs / reps;
    return Rcpp::List::create(
        Rcpp::Named("value") = mean, Rcpp::Named("value_se") = std::sqrt(std::max(0.0, ss / reps - mean * mean) / reps),
        Rcpp::Named("gradient") = gm,
        Rcpp::Named("gradient_se") = Eigen::VectorXd(((gss / reps - gm.cwiseAbs2()).cwiseMax(0.0) / reps).cwiseSqrt()),
        Rcpp::Named("exact") = model.exact(serial_for).elbo);
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}
