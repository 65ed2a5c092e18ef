# inference = "qsgp": quadruply stochastic variational inference for a GP in
# weight space on random Fourier features (Evans and Nair 2018; core:
# qsgp.hpp, glue: qsgp.cpp).  The posterior is a Gaussian over the feature
# weights, mean field or with the chevron factor (dense first columns per
# gp() term); this file implements every posterior generic of the engine
# contract (R/engine.R) for class "gpgam_qsgp"; features at given rows are
# computed block by block from the stored frequencies, never as an n x m
# matrix.  qsgp_options(basis = "inducing"): the paper's m = n variant, one
# weight per training row (the kernel at that row) for a single gp() term,
# hyperparameters fixed (QsgpGram; the fit keeps the training design for
# prediction; the same methods, branching where the basis differs).

#' @include engine.R engine-vi.R engine-ep.R engine-decoupled.R
NULL

#' Options of the quadruply stochastic GP engine
#'
#' Options of `gpgam(inference = "qsgp")`, quadruply stochastic variational
#' inference for Gaussian processes (QSGP; Evans and Nair 2018) on random
#' Fourier features.  Pass them to [gp_control()] by name, e.g.
#' `gp_control(features = 4096)`.
#'
#' Each `gp()` term \eqn{f_c(x) = \phi_c(x)^\top w_c}{f_c(x) = phi_c(x)' w_c}
#' has `features` random Fourier features (Rahimi and Recht 2007): the
#' cosines and sines of `features / 2` frequencies drawn once, with the
#' fit's seed, from the spectral density of the term's kernel (squared
#' exponential: normal; Matern 3/2 and 5/2: Student t with 3 and 5 degrees
#' of freedom) and divided by the term's (ARD) lengthscales; the weights have
#' prior \eqn{N(0, \sigma_f^2 I)}{N(0, sigma_f^2 I)} with the term's own
#' variance.  The frequencies are stored in the fit.  The parametric terms
#' are a small block of their own.  The posterior of the weights is a
#' Gaussian with a diagonal covariance (`covariance = "meanfield"`, the
#' default; the paper's QSGP-0) or, per `gp()` term, the chevron factor of
#' Challis and Barber (2013) (`covariance = "chevron"`, the paper's
#' QSGP-\eqn{\kappa}{kappa}): the covariance is \eqn{C C^\top}{C C'} with
#' the first `dense_columns` columns of the lower-triangular \eqn{C}{C} dense
#' below the diagonal and the others diagonal, so that the posterior
#' correlations of those weights with all others are kept at
#' O(`dense_columns` x `features`) memory.  The order of the weights
#' matters for it: the frequencies are sorted by their length at the
#' starting lengthscales and the dense columns are the cosines and sines of
#' the `dense_columns / 2` lowest, the smoothest features.  The parametric
#' block stays mean field.  The dense columns' entries below the diagonal
#' start at 0 (the mean field) and take AdaGrad steps in units of their
#' column's diagonal entry, divided by `features / feature_batch`.
#' With random features the posterior correlations are spread over all the
#' weights, so a few dense columns recover little of the mean field's error
#' in the latent variance, and their sampled gradients are noisy: the
#' chevron is an option, not the default (`bench/qsgp_chevron.R` in the
#' sources measures both).
#'
#' A Gaussian fit under either covariance estimates the noise too large and
#' the kernel variances too small.  The ELBO's expected residual adds, per
#' weight, its posterior variance times its feature's sum of squares; with
#' a diagonal covariance each of the thousands of correlated features counts
#' up to one "degree of freedom" there, where the coupled posterior counts
#' the term's effective degrees of freedom.  At a fixed kernel the noise
#' that maximises the ELBO is then the residual variance divided by
#' (rows - features counted) instead of (rows - edf).  The fit lowers the
#' kernel variances to count fewer features.  The posterior means are much
#' less affected.  For a Gaussian model `inference = "vi"` has no such bias.
#'
#' Each iteration samples, uniformly with replacement, `batch_size` rows
#' ([gp_control()]; 500 by default) and, per `gp()` term, two independent
#' sets of `feature_batch` features; the paper's unbiased estimator of the
#' ELBO (its Theorems 1 and 2, with the single-index estimator of the
#' diagonal terms that a diagonal covariance allows) and of its gradient
#' then costs O(`batch_size` x `feature_batch` x inputs) per term
#' (chevron: O(`batch_size` x `feature_batch` x (inputs + `dense_columns`))),
#' independent of the number of rows and of `features`.  The posterior means
#' start at 0 and the standard deviations at their optimum for a diagonal
#' covariance at the initial hyperparameters (the paper's Proposition 1,
#' \eqn{c_i^2 = 1 / (\phi_i^\top W \phi_i / \sigma^2 + 1 / \sigma_f^2)}{c_i^2 = 1 / (phi_i' W phi_i / sigma^2 + 1 / sigma_f^2)},
#' with \eqn{\phi_i^\top W \phi_i}{phi_i' W phi_i} estimated from 2000 random
#' rows).  The posterior means
#' and log standard deviations of the sampled weights (and the chevron
#' entries of their rows of \eqn{C}{C}, which start at 0) take AdaGrad steps
#' (`variational_rate`; the parametric coefficients, which have a N(0,
#' 100^2) prior on the internal scale of standardised columns, step in
#' their own units there, not in units of 100); the log lengthscales, log variances and log noise
#' variance take Adam steps (`gp_control(learning_rate = )`), after the
#' first `freeze` fraction of the iterations, during which they are held at
#' their initial values (from the pilot fit, see `pilot`); both step sizes decay exponentially to `final_rate`
#' times their start at the last iteration.  With `feature_batch` equal to
#' `features` and `batch_size` equal to the number of rows the estimator is
#' the exact ELBO.  Rows are reduced in fixed groups, so a fit does not
#' depend on the number of threads.
#'
#' Gaussian models add the paper's control variate (its eq. 3 and
#' Proposition 3; `control_variate`, 500 rows by default): on a fixed set
#' of support rows the sampled features, at the hyperparameters of the
#' start of the iterations, estimate the same quadratic term as the
#' minibatch does, and the difference from its exact value, kept up to
#' date under the sparse updates, is subtracted; the estimate stays
#' unbiased and the feature-sampling noise of the means' gradient mostly
#' cancels.  With the chevron covariance each dense column gets its own
#' control variate of the same kind for its part of the latent variance
#' (the paper's QSGP-100 used 101: the mean's and one per dense column).
#' `fit$control_variate` holds the number of support rows and the largest
#' error of the tracked values after the fit.
#'
#' A stochastic fit has no stationary-point test: it runs
#' `gp_control(iterations = )` iterations and reports `converged = FALSE`;
#' `summary()` shows the mean stochastic gradient of the hyperparameters
#' over the last tenth of the iterations.  After the iterations one pass
#' over all rows and features (O(n x `features`) per term) gives the
#' fitted values and the exact ELBO of the feature model, which [logLik()]
#' returns.
#'
#' The edf of a `gp()` term ([summary.gpgam()], the term tests, R-sq.(adj))
#' is that of the exact GP with the term's fitted kernel on the data,
#' \eqn{tr(K (K + W^{-1})^{-1})}{tr(K (K + W^-1)^-1)} with \eqn{W}{W} the
#' working weights (Gaussian: prior weights over \eqn{\sigma^2}{sigma^2};
#' binomial and poisson: the glm weights at the fitted predictor), by a
#' Nystrom approximation on up to 300 distinct input values of the term
#' and at most 20000 rows; the term is taken alone, without the others.
#' The mean-field posterior's own \eqn{tr(I - S \Sigma)}{tr(I - S Sigma)}
#' would count hundreds of weights for a smooth curve, because its
#' variances shrink every weight alike.
#'
#' Families: gaussian, binomial (logit and probit links) and poisson (log
#' link).  For binomial and poisson the expected log-likelihood of a row,
#' \eqn{E_{z \sim N(0,1)} \log p(y_l \mid a_l + \sqrt{v_l} z)}{E_z log p(y_l | a_l + sqrt(v_l) z)}
#' (\eqn{a_l}{a_l} and \eqn{v_l}{v_l} the posterior mean and variance of the
#' latent predictor), is not linear in them, so unbiased estimates of
#' \eqn{a_l}{a_l} and \eqn{v_l}{v_l} plugged in do not give an unbiased
#' estimate of it; each iteration instead estimates the tangent-line bound:
#' the unbiased estimates
#' \eqn{\hat a_l}{a_l^} and \eqn{\hat v_l}{v_l^} of the sampled features
#' give the latent sd \eqn{\hat s_l = (\hat v_l + t_l) / (2 \sqrt{t_l})}{s_l^ = (v_l^ + t_l) / (2 sqrt(t_l))}
#' with a tangent point \eqn{t_l}{t_l} that does not depend on the draw (per
#' sampled `gp()` term the mean of the posterior variances of its weights,
#' which for random Fourier features is close to the term's latent variance
#' at every row; the exact variance of the parametric block and of terms
#' used in full), and the expectation at
#' \eqn{(\hat a_l, \hat s_l)}{(a_l^, s_l^)} is computed as for
#' `inference = "vi"` (Gauss-Hermite quadrature, a Taylor series at small
#' latent variances for the logit and, above 1, a composite rule for the
#' probit and a closed form plus a fixed rule for the logit; in closed form
#' for poisson).  Since
#' \eqn{E \hat s_l \ge \sqrt{v_l}}{E s_l^ >= sqrt(v_l)} and the expectation is
#' jointly concave in the mean and sd and decreasing in the sd, the
#' estimate is, on average over the draws, a valid lower bound on the ELBO
#' (equal to it with all rows and features); its gradient flows through the
#' sampled weights only.  Evans and Nair (2018)'s Theorem 3 (their eq. 5)
#' as printed uses \eqn{z v}{z v} where \eqn{z \sqrt{v}}{z sqrt(v)} is meant
#' and is not a lower bound (it lies above the expected log-likelihood when
#' \eqn{v < 1}{v < 1}); it is not used.  The bound's remaining gap (from the
#' variance of \eqn{\hat a_l}{a_l^}) shrinks as `feature_batch` grows; it
#' is largest for poisson, where it pulls the fitted rates down while
#' `feature_batch` is much smaller than `features`.  The
#' standard deviations start at the paper's Proposition 1 with the
#' log-likelihood's curvature at the prior mean in place of
#' \eqn{1 / \sigma^2}{1 / sigma^2}.  [logLik()] is the exact ELBO of the
#' feature model after the fit (one pass over all rows), a lower bound on its
#' log marginal likelihood; fitted values and `predict(type = "response")`
#' are posterior means of the mean response through the inverse link.
#'
#' This version fits `gp()` terms of numeric
#' inputs without `by` (each with a stationary kernel; terms are reported
#' centred over the data, with the means carried by the intercept), with no
#' priors on the hyperparameters (`gp_control(priors = )`, the inducing
#' points of `gp(k = , inducing = )` and `gp_control(inducing = )` act on
#' the pilot fit only).  The mean-field posterior ignores
#' the posterior correlations of the weights, so its standard errors can be
#' too small (the paper's QSGP-0 results) or, far from convergence, much too
#' large (the chevron keeps the correlations of the dense columns' weights
#' only), and as it over-states the latent variance the ELBO can push the
#' kernel variances down (in simulated binomial and poisson examples to a
#' tenth or less of `"vi"`'s), flattening the fitted curve; this version is
#' not yet competitive with `inference = "vi"`.
#'
#' @param features number of random features per `gp()` term (even: a cosine
#'   and a sine per frequency).  More features approximate the kernel better
#'   but need more iterations to learn their weights.  The final pass and every prediction cost
#'   O(rows x `features`) per term.
#' @param feature_batch features sampled per term, twice, per iteration (at
#'   most `features`; equal to it: all features, exactly); `NULL` (default):
#'   512, or `features` when that is smaller.
#' @param variational_rate AdaGrad step size of the posterior means and log
#'   standard deviations of the weights (the paper's 0.1; `basis =
#'   "inducing"`: of the term's means in units of their starting sd).
#' @param final_rate the step sizes decay exponentially, reaching this
#'   fraction of their start at the last iteration (in (0, 1]; 1: constant).
#' @param freeze fraction of the iterations at the start during which the
#'   hyperparameters are held at their initial values (the paper's 0.1), in
#'   \[0, 1).
#' @param pilot rows of the pilot fit that gives the starting
#'   hyperparameters: the kernel variance and lengthscales of every `gp()`
#'   term (unless given in `gp()` or fixed) and the noise of a Gaussian model
#'   (unless given or fixed) start where a full-batch `inference = "vi"` fit
#'   of `pilot` rows drawn with the fit's seed (all rows when there are
#'   fewer) puts them, with the terms' inducing points of that engine (the
#'   paper starts from an exact GP fitted to 1000 random rows; this pilot is
#'   a sparse one).  A term given `variance` but not `lengthscale` (or the
#'   reverse) takes the other from the pilot.  No pilot is fitted when
#'   nothing would be taken from it.  0: the package's default starting
#'   values.
#' @param covariance the posterior covariance of each `gp()` term's
#'   weights: `"meanfield"` (diagonal; the paper's QSGP-0) or `"chevron"`
#'   (`dense_columns` dense first columns of its Cholesky factor).
#' @param dense_columns for `covariance = "chevron"`: dense columns per
#'   `gp()` term, at most `features`; `NULL` (default): 20, or `features`
#'   when that is smaller (the paper's QSGP-100 uses 100 on a GPU).  Given
#'   alone, a positive value selects the chevron.  Each
#'   iteration costs about `dense_columns` times `batch_size` x
#'   `feature_batch` more, memory 2 x `dense_columns` x `features` numbers
#'   per term, every prediction O(`dense_columns` x `features`) per row.
#' @param control_variate support rows of the control variate (Gaussian
#'   models; the paper's Proposition 3, with its 500 rows): a fixed set of
#'   rows (all rows when there are fewer), drawn once with the fit's seed, on which the features of the
#'   sampled weights at the starting hyperparameters give a zero-mean
#'   correction that cancels much of the noise the sampled features add
#'   to the gradient of the data-fit term (chevron: also one per dense
#'   column, for the latent variance).  Each iteration costs about this
#'   many rows more (chevron: times `dense_columns + 1`).  0: none.
#'   Ignored for other families.
#' @param basis `"fourier"` (default): random Fourier features as above.
#'   `"inducing"`: the paper's variant with inducing points at every
#'   training row (its Table 3): the single `gp()` term of a Gaussian model
#'   is \eqn{f(x) = \sum_i k(x, x_i) w_i}{f(x) = sum_i k(x, x_i) w_i} over the
#'   \eqn{n}{n} training inputs with prior
#'   \eqn{w \sim N(0, K^{-1})}{w ~ N(0, K^-1)} (\eqn{K}{K} the training
#'   kernel matrix), so that the prior of \eqn{f}{f} at the training rows
#'   is the exact GP's.  Each iteration samples `feature_batch` of the
#'   \eqn{n}{n} weights twice (`features` is not used) and costs
#'   O((`batch_size` + `feature_batch`) x `feature_batch` x inputs);
#'   \eqn{\mu^\top K \mu}{mu' K mu} in the KL divergence is estimated from
#'   the two sets.  The kernel hyperparameters and the noise stay at their
#'   starting values (the pilot's; the paper fixes them too, as
#'   \eqn{\log |K|}{log |K|} would cost O(\eqn{n^3}{n^3})), the posterior is
#'   mean field, and the control variate (`control_variate` support rows
#'   \eqn{U}{U}) also covers \eqn{\mu^\top K \mu}{mu' K mu} by its Nystrom
#'   approximation on \eqn{U}{U} (the paper's Appendix F.2).  The means of
#'   the term's weights take their AdaGrad steps in units of their starting
#'   posterior sd (Proposition 1's \eqn{c_i}{c_i}, about
#'   \eqn{\sigma / |K_{\cdot i}|}{sigma / |K_.i|}): neighbouring weights,
#'   sampled together, move \eqn{f}{f} jointly, and steps of
#'   `variational_rate` in absolute units made the fit diverge on kin40k.
#'   The weights are strongly coupled through \eqn{K}{K}, so the fit
#'   converges slowly (the paper ran its Table 3 for hours on a GPU).  The final pass
#'   costs O(\eqn{n^2}{n^2}), every predicted row O(\eqn{n}{n}); predictions at
#'   new rows add the paper's Proposition 4 variance (a basis function at
#'   the new point, with its optimal mean-field variance), so that far from
#'   the data the variance returns to the prior's.  [logLik()] is `NA` (the
#'   ELBO needs \eqn{\log |K|}{log |K|}); `fit$elbo_without_logdet` holds the
#'   ELBO without its term \eqn{\log |K| / 2}{log |K| / 2}.  Gaussian models
#'   with one `gp()` term only.
#' @return A list of the options.
#' @references Evans and Nair (2018) Quadruply stochastic Gaussian
#'   processes. arXiv:2006.03015.  Rahimi and Recht (2007) Random features
#'   for large-scale kernel machines. NeurIPS.  Challis and Barber (2013)
#'   Gaussian Kullback-Leibler approximate inference. JMLR.
#' @seealso [gp_control()], [vi_options()]
#' @examples
#' qsgp_options()
#' gp_control(features = 2048, feature_batch = 256, iterations = 500)
#' set.seed(1)
#' d <- data.frame(x = runif(500, -2, 2))
#' d$y <- sin(2 * d$x) + rnorm(500, sd = 0.2)
#' fit <- gpgam(y ~ gp(x), data = d, inference = "qsgp",
#'              control = gp_control(features = 512, feature_batch = 128, iterations = 500,
#'                                   threads = 1, verbose = FALSE))
#' logLik(fit)
#' # binary data, logit link
#' d$b <- rbinom(500, 1, plogis(2 * sin(2 * d$x)))
#' fb <- gpgam(b ~ gp(x), data = d, family = binomial(), inference = "qsgp",
#'             control = gp_control(features = 512, feature_batch = 128, iterations = 500,
#'                                  threads = 1, verbose = FALSE))
#' head(fitted(fb))
#' # inducing points at every training row, hyperparameters from the pilot fit
#' fi <- gpgam(y ~ gp(x), data = d, inference = "qsgp",
#'             control = gp_control(basis = "inducing", feature_batch = 100, iterations = 300,
#'                                  threads = 1, verbose = FALSE))
#' fi$elbo_without_logdet
#' @export
qsgp_options <- function(features = 2048, feature_batch = NULL, variational_rate = 0.1, final_rate = 0.1,
                         freeze = 0.1, pilot = 1000, control_variate = 500,
                         covariance = c("meanfield", "chevron"), dense_columns = NULL,
                         basis = c("fourier", "inducing")) {
  basis <- check_choice(basis, "basis", eval(formals(qsgp_options)$basis))
  if (basis == "inducing" && (identical(covariance, "chevron") || isTRUE(dense_columns > 0)))
    stop_arg("covariance", "must be \"meanfield\" with basis = \"inducing\" (the paper's QSGP-0)")
  check_count(features, "features")
  if (features %% 2 != 0) stop_arg("features", "must be even (a cosine and a sine per frequency), not ", features)
  feature_batch <- feature_batch %||% min(512, features)
  check_count(feature_batch, "feature_batch")
  if (basis == "fourier" && feature_batch > features)
    stop_arg("feature_batch", "(", feature_batch, ") must be at most 'features' (", features, ")")
  check_positive(variational_rate, "variational_rate")
  check_positive(final_rate, "final_rate")
  if (final_rate > 1) stop_arg("final_rate", "must be in (0, 1], not ", final_rate)
  if (!is.numeric(freeze) || length(freeze) != 1 || !is.finite(freeze) || freeze < 0 || freeze >= 1)
    stop_arg("freeze", "must be a single number in [0, 1), not ", deparse1(freeze))
  check_count(pilot, "pilot", zero = TRUE)
  if (pilot > 0 && pilot < 50) stop_arg("pilot", "must be 0 (no pilot fit) or at least 50 rows, not ", pilot)
  check_count(control_variate, "control_variate", zero = TRUE)
  if (!is.null(dense_columns)) check_count(dense_columns, "dense_columns", zero = TRUE)
  # (dense_columns > 0 alone asks for the chevron)
  covariance <- if (missing(covariance) && isTRUE(dense_columns > 0)) "chevron"
                else check_choice(covariance, "covariance", eval(formals(qsgp_options)$covariance))
  if (covariance == "meanfield") {
    if (isTRUE(dense_columns > 0))
      stop_arg("dense_columns", "applies to covariance = \"chevron\" only (covariance is \"meanfield\")")
    dense_columns <- 0L
  } else {
    dense_columns <- dense_columns %||% min(20, features)
    if (dense_columns < 1) stop_arg("dense_columns", "must be at least 1 for covariance = \"chevron\"")
    if (dense_columns > features)
      stop_arg("dense_columns", "(", dense_columns, ") must be at most 'features' (", features, ")")
    if (dense_columns * features > 2.5e8)
      stop_arg("dense_columns", "x 'features' (", format(dense_columns * features, big.mark = ","),
               ") must be at most 2.5e8: the chevron stores two numbers per entry, 4 GB at that size")
  }
  list(features = as.integer(features), feature_batch = as.integer(feature_batch),
       variational_rate = variational_rate, final_rate = final_rate, freeze = freeze, pilot = as.integer(pilot),
       control_variate = as.integer(control_variate), covariance = covariance,
       dense_columns = as.integer(dense_columns), basis = basis)
}

qsgp_engine <- function() {
  new_engine("qsgp", label = "quadruply stochastic GP (random Fourier features)", objective = "ELBO",
             objective_note = "a lower bound on the log marginal likelihood of the random-feature model",
             options = qsgp_options, basis = "random features", basis_column = "features", stationary_test = FALSE,
             compare_warning = paste0(
               "inference = \"qsgp\": the ELBO of its posterior over random features, which is not coupled over all ",
               "their weights, is biased by an amount that differs between models (a Gaussian fit's sigma comes out ",
               "too large; ?qsgp_options), so its differences do not compare models; compare fits of inference = ",
               "\"vi\", or by held-out predictions"))
}

register_engine("qsgp", qsgp_engine)

# Minibatches of 500 rows (the paper's) beyond 500 rows.
default_batch_size.engine_qsgp <- function(engine, n, family, opts) min(n, 500L)

# The components the core fits: gp() terms of numeric inputs without `by` (a
# centred ANOVA kernel becomes its stationary base kernel: the terms are
# centred when reported), the parametric block; families gaussian, binomial
# (logit, probit) and poisson.
qsgp_components <- function(setup, basis = "fourier") {
  if (!setup$lik %in% c("gaussian", "logit", "probit", "poisson"))
    stop_arg("family", "must be gaussian(), binomial(link = \"logit\" or \"probit\") or poisson() ",
             "for inference = \"qsgp\"")
  labels <- gp_labels(setup$terms)
  if (basis == "inducing") {
    if (setup$lik != "gaussian")
      stop_arg("family", "must be gaussian() for inference = \"qsgp\" with basis = \"inducing\"")
    if (length(setup$terms$gp) != 1)
      stop_arg("formula", "must have exactly one gp() term for inference = \"qsgp\" with basis = \"inducing\", not ",
               length(setup$terms$gp))
  }
  lapply(seq_along(setup$comps), function(i) {
    k <- setup$comps[[i]]
    if (k$kind == "linear") return(k[c("kind", "cols", "prior_sd")])
    if (k$kind == "factor")
      stop_arg("formula", "has the random effect ", labels[i], "; inference = \"qsgp\" fits gp() terms of numeric inputs")
    if (!is.null(k$by_col))
      stop_arg("formula", "has ", labels[i], " with 'by'; inference = \"qsgp\" does not support 'by'")
    list(kind = "stationary", cols = k$cols, kernel = k$kernel, log_var = k$log_var, log_ls = k$log_ls,
         learn_kernel = k$learn_kernel)
  })
}

# The starting hyperparameters (the paper's initialisation, its section 5):
# a vi_pilot_fit() of min(n, pilot) rows drawn with the fit's seed, with the
# terms' inducing points of the setup.  Its fitted log variance and log
# lengthscales replace the defaults of every gp() term whose kernel is
# learned and was not given in gp(variance = , lengthscale = ); its noise
# replaces the default unless gp_control(sigma = ) or fixed = "sigma".
# Returns the setup and what the pilot did (NULL with pilot = 0).
qsgp_pilot <- function(setup, control) {
  rows <- min(setup$n, control$options$pilot)
  # (nothing to take from a pilot: every kernel fixed or given, the noise fixed, given or absent)
  takes <- vapply(seq_along(setup$terms$gp), function(i) {
    spec <- setup$terms$gp[[i]]$spec
    isTRUE(setup$comps[[i]]$learn_kernel) && (is.null(spec$variance) || is.null(spec$lengthscale))
  }, TRUE)
  noise <- setup$lik == "gaussian" && is.null(control$sigma) && !"sigma" %in% control$fixed
  if (rows == 0 || !(any(takes) || noise)) return(list(setup = setup))
  t0 <- proc.time()[["elapsed"]]
  if (isTRUE(control$verbose))
    inform("QSGP: starting hyperparameters from an inference = \"vi\" fit of ", rows,
           if (rows < setup$n) " random", " rows (qsgp_options(pilot = ); 0 for the package's defaults).")
  res <- vi_pilot_fit(subset_setup(setup, seeded_sample(setup$n, rows, control$seed)), control)
  for (i in seq_along(setup$terms$gp)) {
    k <- setup$comps[[i]]
    spec <- setup$terms$gp[[i]]$spec
    if (!isTRUE(k$learn_kernel)) next
    if (is.null(spec$variance)) k$log_var <- res$specs[[i]]$log_var
    if (is.null(spec$lengthscale)) k$log_ls <- res$specs[[i]]$log_ls
    setup$comps[[i]] <- k
  }
  if (noise) setup$log_noise <- res$log_noise
  list(setup = setup, pilot = list(rows = rows, iterations = res$iterations, converged = isTRUE(res$converged),
                                   seconds = proc.time()[["elapsed"]] - t0))
}

engine_fit.engine_qsgp <- function(engine, setup, control) {
  o <- control$options
  qsgp_components(setup, o$basis)  # (refuses what the core does not fit, before the pilot)
  start <- qsgp_pilot(setup, control)
  setup <- start$setup
  comps <- qsgp_components(setup, o$basis)
  res <- if (o$basis == "inducing") qsgp_gram_fit(setup, control, comps)
         else qsgp_features_fit(engine, setup, control, comps)
  res$pilot <- start$pilot
  if (!is.null(start$pilot)) res$seconds[["init"]] <- res$seconds[["init"]] + start$pilot$seconds
  res$term_edf <- qsgp_term_edf(setup, res)
  res
}

# Per gp() term its effective degrees of freedom: those of the exact GP
# with the term's fitted kernel on the data, tr(K (K + W^-1)^-1), W the
# working weights (Gaussian: w / sigma^2; binomial and poisson: the glm
# weights w mu'(eta)^2 / V(mu) at the fitted predictor), by the Nystrom
# approximation of K on up to 300 evenly spaced distinct input values U of
# the term: sum_j lambda_j / (1 + lambda_j), lambda the eigenvalues of
# R^-T K_UX W K_XU R^-1 (R'R = K_UU), over at most 20000 evenly spaced
# rows X with W scaled by n / rows (exact for up to 300 distinct values and
# 20000 rows).  The mean-field posterior's own tr(I - S Sigma) is far
# larger: its variances stay near Proposition 1's, which for random
# features and for the training-row basis shrink every weight alike, so it
# counts hundreds of weights for a smooth curve (567 for a sine with 2048
# features in a trial).  O(rows x |U| x (inputs + |U|)) per term.
qsgp_term_edf <- function(setup, res) {
  X <- setup$X
  n <- nrow(X)
  eta <- res$row_mean + setup$offset
  W <- if (setup$lik == "gaussian") setup$w / (1e-6 + exp(res$log_noise)) else {
    fam <- setup$family
    setup$w * fam$mu.eta(eta)^2 / pmax(fam$variance(fam$linkinv(eta)), 1e-12)
  }
  rows <- if (n > 20000) unique(round(seq(1, n, length.out = 20000))) else seq_len(n)
  Wr <- W[rows] * n / length(rows)
  vapply(res$specs, function(s) {
    if (s$kind == "linear") return(NA_real_)
    distinct <- rows[!duplicated(X[rows, s$cols + 1L, drop = FALSE])]
    U <- distinct[unique(round(seq(1, length(distinct), length.out = min(length(distinct), 300))))]
    spec <- list(list(kind = "stationary", cols = s$cols, kernel = s$kernel, log_var = s$log_var, log_ls = s$log_ls,
                      learn_kernel = FALSE))
    Kxu <- .qsgp_gram_features(spec, X[U, , drop = FALSE], 0L, length(U), X[rows, , drop = FALSE])
    R <- chol(Kxu[match(U, rows), , drop = FALSE] + diag(1e-8 * exp(s$log_var), length(U)))
    B <- backsolve(R, t(Kxu * sqrt(Wr)), transpose = TRUE)
    lam <- pmax(eigen(tcrossprod(B), symmetric = TRUE, only.values = TRUE)$values, 0)
    sum(lam / (1 + lam))
  }, 0)
}

# The progress monitor of a qsgp fit: no priors here, so the bar shows the
# objective (`label`) alone; its final line is drawn when the caller's frame
# (`envir`) returns.
qsgp_monitor <- function(control, label, setup, envir = parent.frame()) {
  control$priors <- FALSE
  progress_monitor(control, label, objective_shift(setup), envir = envir)
}

# basis = "fourier": the fit on random Fourier features (Qsgp).
qsgp_features_fit <- function(engine, setup, control, comps) {
  o <- control$options
  if (isTRUE(control$verbose))
    inform("QSGP: ", o$features, " random features per gp() term, ", o$feature_batch, " sampled twice and ",
           control$batch_size, " rows per iteration; ", control$iterations, " iterations",
           if (o$dense_columns > 0) paste0("; chevron covariance with ", o$dense_columns, " dense columns"), ".")
  res <- .qsgp_fit(setup$X, setup$y, setup$w, setup$offset, comps, setup$lik, setup$log_noise, common_settings(control),
                   unclass(o), control$threads, control$seed, qsgp_monitor(control, engine$objective, setup))
  # the setup's specs with the fitted hyperparameters and the frequencies (no inducing inputs)
  res$specs <- Map(function(full, fitted) {
    if (full$kind == "linear") return(full)
    full$Z <- NULL
    utils::modifyList(full, c(list(kind = "stationary"), fitted[c("log_var", "log_ls", "eps")]))
  }, setup$comps, res$specs)
  res
}

# basis = "inducing" (the paper's m = n variant): one weight per training
# row for the gp() term, the hyperparameters and the noise fixed at their
# starting values (the pilot's); the training design and weights are kept
# for prediction.  The exact ELBO lacks (1/2) log |K| (O(n^3)), so the
# objective is NA and `elbo_without_logdet` holds the rest.
qsgp_gram_fit <- function(setup, control, comps) {
  o <- control$options
  spec <- setup$terms$gp[[1]]$spec
  if (o$pilot == 0 && isTRUE(setup$comps[[1]]$learn_kernel) && (is.null(spec$variance) || is.null(spec$lengthscale)))
    warning("'pilot' = 0 with basis = \"inducing\": the kernel hyperparameters are not learned, so they stay at ",
            "the package's starting values; give gp(variance = , lengthscale = ) or a pilot fit", call. = FALSE)
  if (isTRUE(control$verbose))
    inform("QSGP: inducing points at all ", setup$n, " rows, ", min(o$feature_batch, setup$n), " sampled twice and ",
           control$batch_size, " rows per iteration; ", control$iterations,
           " iterations; hyperparameters fixed at their starting values.")
  # (in a frame of its own, whose result the progress bar's final line reports)
  res <- (function() .qsgp_gram_fit(setup$X, setup$y, setup$w, setup$offset, comps, setup$log_noise,
                                    common_settings(control), unclass(o), control$threads, control$seed,
                                    qsgp_monitor(control, "ELBO without log|K| / 2", setup)))()
  res$elbo_without_logdet <- res$objective - objective_shift(setup)  # (on the data scale, as the objective of any fit)
  res$objective <- NA_real_
  res$gradient <- numeric()
  res$specs <- Map(function(full, k) {
    if (full$kind == "linear") return(full)
    full$Z <- NULL
    utils::modifyList(full, list(kind = "stationary", log_var = k$log_var, log_ls = k$log_ls, gram = TRUE,
                                 learn_kernel = FALSE))
  }, setup$comps, comps)
  res$X_train <- setup$X
  res$w_train <- setup$w
  res
}

engine_collect.engine_qsgp <- function(engine, fit, res) {
  if (!is.null(res$X_train)) {  # basis = "inducing"
    fit$elbo_without_logdet <- res$elbo_without_logdet
    fit$engine$basis <- "inducing points (the training rows)"
    fit$engine$basis_column <- "inducing"
    fit$engine$objective_note <- "not available: it needs log|K|, O(n^3); see fit$elbo_without_logdet"
  }
  fit$pilot <- res$pilot
  # the control variate's support rows and the largest error of its tracked
  # Phi0_P mu after the iterations (NA when not checked: rows x weights > 5e7)
  if (res$control_rows > 0) fit$control_variate <- list(rows = res$control_rows, drift = res$cv_drift)
  fit
}

# ---- the posterior contract for a Gaussian over feature weights ----

# Indices of the components' blocks in the weight vector (gp() terms, then the parametric block).
qsgp_blocks <- function(st) {
  sz <- vapply(st$specs, function(s) if (s$kind == "linear") length(s$cols)
               else if (isTRUE(s$gram)) nrow(st$X_train) else 2L * nrow(s$eps), 1L)
  Map(function(start, size) start + seq_len(size), cumsum(sz) - sz, sz)
}

# The specs as the core reads them (components_from() is not used: no inducing inputs).
qsgp_core_specs <- function(st) {
  lapply(st$specs, function(k) {
    if (k$kind == "linear") k[c("kind", "cols", "prior_sd")]
    else list(kind = "stationary", cols = k$cols, kernel = k$kernel, log_var = k$log_var, log_ls = k$log_ls,
              learn_kernel = FALSE, eps = k$eps)
  })
}

# c2 = exp(2 rho), the squared diagonal of C; dense = per component the
# chevron's entries below the diagonal (0 columns: mean field).
posterior_state.gpgam_qsgp <- function(fit, res) {
  list(specs = res$specs, log_noise = res$log_noise, mu = res$mu, c2 = exp(2 * res$rho), rho = res$rho,
       dense = res$dense, X_train = res$X_train, w_train = res$w_train, term_edf = res$term_edf)
}

# basis = "inducing": the gp() term's weights are one per training row.
qsgp_gram <- function(st) isTRUE(st$specs[[1]]$gram)

# Component i's covariance C C' = diag(d) + H H': d its c^2 with the dense
# columns' diagonals zeroed, H (weights x kappa) the dense columns with
# their diagonals exp(rho) (NULL: mean field).  The chevron order puts the
# cosine (0-based feature r / 2) and sine (nf + r / 2) of a frequency side by side.
qsgp_factor <- function(st, i, idx) {
  d <- st$c2[idx]
  H <- st$dense[[i]]
  if (is.null(H) || ncol(H) == 0) return(list(d = d, H = NULL))
  r <- seq_len(ncol(H)) - 1L
  at <- ifelse(r %% 2L == 1L, nrow(H) / 2 + r %/% 2L, r %/% 2L) + 1L
  H[cbind(at, r + 1L)] <- sqrt(d[at])
  d[at] <- 0
  list(d = d, H = H)
}

term_basis.gpgam_qsgp <- function(fit) {
  bl <- qsgp_blocks(fit$state)
  lapply(seq_along(fit$terms$gp), function(i) list(size = length(bl[[i]]), inducing = NULL))
}

# Effective degrees of freedom: per gp() term qsgp_term_edf()'s, from the
# fit; the parametric block sum(1 - Sigma_ii / prior variance) (the
# shrinkage of each coefficient).
component_edf.gpgam_qsgp <- function(fit) {
  st <- fit$state
  bl <- qsgp_blocks(st)
  vapply(seq_along(bl), function(i) {
    if (st$specs[[i]]$kind != "linear") return(st$term_edf[i])
    f <- qsgp_factor(st, i, bl[[i]])
    sum(1 - (f$d + if (is.null(f$H)) 0 else rowSums(f$H^2)))
  }, 0)
}

# Centred terms: their features minus the features' means over the data
# (from the fit's final pass), so that the intercept carries the means.
centre_terms.gpgam_qsgp <- function(fit, setup, res) {
  bl <- qsgp_blocks(fit$state)
  ctr <- numeric(length(fit$state$mu))
  for (i in which(centre_mask(fit))) ctr[bl[[i]]] <- res$feature_means[bl[[i]]]
  fit$state$center <- ctr
  fit
}

param_posterior.gpgam_qsgp <- function(fit, ...) {
  if (is.null(fit$terms$param)) return(list(coef = numeric(), vcov = matrix(0, 0, 0)))
  st <- fit$state
  k <- length(st$specs)
  bl <- qsgp_blocks(st)
  ysc <- fit$scaling$y
  A <- fit$terms$param_scaling$A * ysc$scale
  L <- matrix(0, nrow(A), length(st$mu))
  L[, bl[[k]]] <- A %*% diag(st$specs[[k]]$prior_sd, length(bl[[k]]))
  if (fit$intercept) L[1, ] <- L[1, ] + ysc$scale * st$center
  b <- drop(L %*% st$mu)
  if (fit$intercept) b[1] <- b[1] + ysc$center
  # V = L Sigma L', Sigma block-diagonal with blocks diag(d) + H H' (qsgp_factor())
  V <- matrix(0, nrow(L), nrow(L))
  for (i in seq_along(bl)) {
    cf <- qsgp_factor(st, i, bl[[i]])
    Li <- L[, bl[[i]], drop = FALSE]
    V <- V + Li %*% (cf$d * t(Li))
    if (!is.null(cf$H)) V <- V + tcrossprod(Li %*% cf$H)
  }
  names(b) <- rownames(A)
  dimnames(V) <- list(names(b), names(b))
  list(coef = b, vcov = V)
}

latent_predict.gpgam_qsgp <- function(fit, X, offset, terms = FALSE, se = TRUE) {
  st <- fit$state
  r <- if (qsgp_gram(st))
    .qsgp_gram_predict(qsgp_core_specs(st), st$X_train, st$w_train, st$log_noise, st$mu, st$rho,
                       st$center[qsgp_blocks(st)[[1]]], X, TRUE, fit$control$threads)
  else .qsgp_predict(qsgp_core_specs(st), st$mu, st$rho, qsgp_dense(st), st$center, X, fit$control$threads)
  ysc <- fit$scaling$y
  out <- list(fit = ysc$center + ysc$scale * rowSums(r$mean) + offset, se = ysc$scale * sqrt(rowSums(r$var)))
  if (terms) {
    g <- seq_along(fit$terms$gp)
    out$term_fit <- ysc$scale * r$cmean[, g, drop = FALSE]
    out$term_se <- ysc$scale * sqrt(r$cvar[, g, drop = FALSE])
  }
  out
}

# From the fit's final pass over the rows (internal scale, without offset).
fitted_latent.gpgam_qsgp <- function(fit, setup, res) {
  list(fit = to_data_scale(setup, res$row_mean), se = fit$scaling$y$scale * sqrt(res$row_var))
}

# Features first + 1..first + count of block i at rows X (basis =
# "inducing": the kernel at training rows first + 1..first + count), and
# the same minus their centre.
qsgp_features_at <- function(st, specs, i, first, count, X) {
  s <- st$specs[[i]]
  k <- first + seq_len(count)
  if (s$kind == "linear") X[, s$cols[k] + 1L, drop = FALSE] %*% diag(s$prior_sd[k], count)
  else if (isTRUE(s$gram)) .qsgp_gram_features(specs, st$X_train, first, count, X)
  else .qsgp_features(specs, i, first, count, X)
}
qsgp_feature_chunk <- function(st, specs, i, first, count, X, idx) {
  sweep(qsgp_features_at(st, specs, i, first, count, X), 2, st$center[idx[first + seq_len(count)]])
}

# The chevron's dense columns as the core reads them (0 columns: mean field).
qsgp_dense <- function(st) {
  bl <- qsgp_blocks(st)
  lapply(seq_along(bl), function(i) st$dense[[i]] %||% matrix(0, length(bl[[i]]), 0))
}

# Per gp() term its centred posterior mean f and covariance V at the rows X
# themselves (the identity is an orthonormal basis of their span): with at
# most `max_rows` rows (evenly spaced among those given) V = P diag(d) P' +
# (P H)(P H)' (qsgp_factor()) costs O(max_rows^2 x features), accumulated
# over blocks of 1024 features.
term_projection.gpgam_qsgp <- function(fit, X, max_rows = 400, ...) {
  st <- fit$state
  if (nrow(X) > max_rows) X <- X[unique(round(seq(1, nrow(X), length.out = max_rows))), , drop = FALSE]
  specs <- qsgp_core_specs(st)
  bl <- qsgp_blocks(st)
  lapply(seq_along(fit$terms$gp), function(i) {
    idx <- bl[[i]]
    cf <- qsgp_factor(st, i, idx)
    f <- numeric(nrow(X))
    V <- matrix(0, nrow(X), nrow(X))
    PH <- matrix(0, nrow(X), NCOL(cf$H))
    for (first in seq(0, length(idx) - 1, by = 1024)) {
      count <- min(1024, length(idx) - first)
      P <- qsgp_feature_chunk(st, specs, i, first, count, X, idx)
      k <- first + seq_len(count)
      f <- f + drop(P %*% st$mu[idx[k]])
      V <- V + P %*% (cf$d[k] * t(P))
      if (!is.null(cf$H)) PH <- PH + P %*% cf$H[k, , drop = FALSE]
    }
    list(mean = f, cov = V + tcrossprod(PH))
  })
}

# nsim draws w = mu + C z of the weights (qsgp_factor(): sqrt(d) z1 + H z2),
# then Phi(X) w block by block (rows in blocks of 5000, features in blocks of 1024).
latent_draws.gpgam_qsgp <- function(fit, X, nsim) {
  st <- fit$state
  m <- length(st$mu)
  bl <- qsgp_blocks(st)
  cf <- lapply(seq_along(bl), function(i) qsgp_factor(st, i, bl[[i]]))
  W <- st$mu + sqrt(unlist(lapply(cf, `[[`, "d"))) * matrix(stats::rnorm(m * nsim), m, nsim)
  for (i in seq_along(bl))
    if (!is.null(cf[[i]]$H))
      W[bl[[i]], ] <- W[bl[[i]], ] + cf[[i]]$H %*% matrix(stats::rnorm(ncol(cf[[i]]$H) * nsim), ncol(cf[[i]]$H), nsim)
  specs <- qsgp_core_specs(st)
  eta <- matrix(0, nrow(X), nsim)
  for (rows in split(seq_len(nrow(X)), ceiling(seq_len(nrow(X)) / 5000))) {
    Xr <- X[rows, , drop = FALSE]
    for (i in seq_along(bl)) {
      idx <- bl[[i]]
      for (first in seq(0, length(idx) - 1, by = 1024)) {
        count <- min(1024, length(idx) - first)
        j <- idx[first + seq_len(count)]
        eta[rows, ] <- eta[rows, ] + qsgp_features_at(st, specs, i, first, count, Xr) %*% W[j, , drop = FALSE]
      }
    }
  }
  eta
}

# The learned hyperparameters in the core's order: per gp() term its log
# variance and log lengthscales, then the log noise variance.
parameter_names.gpgam_qsgp <- function(fit, n, ...) {
  out <- character()
  for (i in seq_along(fit$state$specs))
    if (fit$state$specs[[i]]$kind != "linear" && isTRUE(fit$state$specs[[i]]$learn_kernel))
      out <- c(out, kernel_parameter_names(fit, i))
  if (length(out) < n) out <- c(out, "log noise variance")
  if (length(out) != n) out <- paste0("parameter ", seq_len(n))
  out
}

engine_label.gpgam_qsgp <- function(fit) {
  o <- fit$control$options
  if (qsgp_gram(fit$state))
    return(sprintf("quadruply stochastic GP (inducing points at all %d rows, %d sampled twice per iteration), mean-field posterior, %s%s",
                   fit$n, min(o$feature_batch, fit$n),
                   if (fit$control$batch_size < fit$n) sprintf("minibatches of %d rows", fit$control$batch_size) else "all rows",
                   if (is.null(fit$control_variate)) ""
                   else sprintf(", control variate on %d support rows", as.integer(fit$control_variate$rows))))
  sprintf("%s, %d features per gp() term (%d sampled twice per iteration), %s posterior, %s%s",
          fit$engine$label, o$features, o$feature_batch,
          if (isTRUE(o$dense_columns > 0)) sprintf("chevron (%d dense columns)", o$dense_columns) else "mean-field",
          if (fit$control$batch_size < fit$n) sprintf("minibatches of %d rows", fit$control$batch_size) else "all rows",
          if (is.null(fit$control_variate)) ""
          else sprintf(", control variate on %d support rows", as.integer(fit$control_variate$rows)))
}

engine_notes.gpgam_qsgp <- function(fit) {
  if (qsgp_gram(fit$state))
    return(c(NextMethod(),
             "stochastic fit (Evans and Nair 2018): iterations run to the limit, with no stationary-point test",
             "inducing points at every training row (the paper's m = n variant): the kernel hyperparameters and the noise are held at their starting values (no empirical Bayes)",
             sprintf("ELBO not available (it needs log|K|, O(n^3)); without its term log|K| / 2 it is %.2f",
                     fit$elbo_without_logdet),
             "mean-field posterior over the weights; predictions at new rows add the paper's Proposition 4 variance (a basis function at the new point)"))
  c(NextMethod(),
    "stochastic fit (Evans and Nair 2018): iterations run to the limit, with no stationary-point test; the gradient shown is the mean stochastic gradient over the last tenth of the iterations",
    if (isTRUE(fit$control$options$dense_columns > 0))
      "chevron posterior over the feature weights: it keeps the posterior correlations of the dense columns' weights only"
    else "mean-field posterior over the feature weights: its standard errors, and the term tests built on them, ignore the weights' posterior correlations; the standard errors can be too small or too large, and too large ones cost the tests their power",
    if (fit$likelihood != "gaussian")
      "non-Gaussian likelihood: the iterations maximise a stochastic tangent-line lower bound on the ELBO; the ELBO shown is exact, from a final pass over all rows"
    else "Gaussian likelihood: with a posterior that is not coupled over all feature weights the ELBO counts each feature's posterior variance in the residual, so sigma comes out too large and the kernel variances too small (?qsgp_options); inference = \"vi\" has no such bias")
}
