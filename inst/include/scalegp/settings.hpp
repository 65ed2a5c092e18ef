// Settings every engine reads, and what every fit reports.  An engine's own
// options live in a struct of its own header (SvgpSettings in natural_q.hpp,
// shared by the variational engines; DecoupledSettings in decoupled.hpp;
// EpSettings in ep_model.hpp), read by that engine's glue only.
#pragma once
#include <Eigen/Dense>
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace scalegp {

struct Settings {
  double rel_jitter = 1e-6;    // jitter of K_uu relative to the kernel variance
  std::size_t batch_size = 0;  // rows per iteration; 0: all rows
  int max_iter = 1000;
  double learning_rate = 0.01;  // Adam step for the hyperparameters
  double tol = 1e-5;            // stopping rule: gain per observation and epoch
  int patience = 10;            // ... on this many consecutive epochs
  bool learn_inducing = true;
  int inducing_iterations = -1;  // full-data L-BFGS: the inducing inputs move in this many iterations only (-1: all)
  bool learn_noise = true;
  bool learn_df = true;  // the Student-t's degrees of freedom (Likelihood::log_df)
  int max_failures = 20;  // failed iterations undone before the fit gives up
  // A fit has converged when no gradient entry (projected on the bounds of
  // the parameters) exceeds tol * N: a stationary point of the objective.
};

struct FitInfo {
  std::vector<double> trace;  // objective (estimate) per iteration
  int iterations = 0;
  bool converged = false;
  double objective = 0;  // final objective on all data (ELBO, EP log evidence)
  double log_prior = 0;  // log density of the hyperparameters' priors there (maximised with the objective)
  double seconds_init = 0, seconds_iter = 0, seconds_final = 0;  // wall time by phase
  int failures = 0;  // iterations undone (rates halved each time)
  int evaluations = 0;  // full-data fits: evaluations of the objective and its gradient
  Eigen::VectorXd gradient;  // of the final objective on all data w.r.t. the packed parameters
  double q_change = 0;       // largest change of the posterior mean in the last update of q
  std::string stop;          // why the fit stopped
};

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace scalegp
