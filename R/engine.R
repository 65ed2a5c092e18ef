# The engine contract.  An inference engine is an object made by
# new_engine() with class c("engine_<name>", "scalegp_engine"), registered by
# name with register_engine() (one line in the engine's own file; a package
# or a test can register more); gpgam(inference = <name>) looks it up and
# calls the generics below.  A fit made by engine <name> has class
# c("gpgam_<name>", "gpgam", "scalegp"): methods written once for "gpgam" or
# "scalegp" serve every engine, and an engine overrides what differs.
# ARCHITECTURE.md draws the layers and lists the steps to add an engine.
#
# Generics on the engine object:
#   engine_fit(engine, setup, control)  fits; returns the engine's raw result: a list
#       with at least specs (the components with their fitted hyperparameters),
#       log_noise, objective, trace, iterations, converged, stop, gradient,
#       seconds, and whatever its posterior methods read
#   engine_collect(engine, fit, res)    adds the engine's own entries to the fit (default: none)
#   default_batch_size(engine, n, family, opts)  rows per iteration when not given
#
# The posterior contract: generics on the fit, all that the shared layers
# (fit.R, summary.R, predict.R, plot.R, anova.R, check.R, methods.R) know of
# a posterior.  The methods for class "gpgam" (R/posterior-whitened.R) are
# those of a Gaussian over whitened inducing variables (vi, ep, decoupled);
# an engine with another posterior implements each of these:
#   posterior_state(fit, res)       the posterior kept in fit$state, from the raw result
#   term_basis(fit)                 per gp() term: size of its basis (and inducing inputs, if any)
#   component_edf(fit)              effective degrees of freedom per component (gp() terms first)
#   centre_terms(fit, setup, res)   the fit with its gp() terms centred over the data
#                                   (the terms centre_mask() selects; the intercept, or a factor's coefficients, carry the means)
#   param_posterior(fit)            posterior mean and covariance of the parametric coefficients (data scale)
#   latent_predict(fit, X, offset, terms, se)  link-scale mean and se at internal design rows X (per term)
#   fitted_latent(fit, setup, res)  link-scale mean and se at the data rows (from the result when it has them)
#   term_projection(fit, X)         per gp() term, its centred posterior mean and covariance at rows X
#                                   projected on an orthonormal basis of their span (term tests), and
#                                   optionally null_cov, that mean's covariance over repeated data when
#                                   the term is zero (term_tests())
#   latent_draws(fit, X, nsim)      posterior draws of the latent predictor at rows X (internal scale, no offset)
#   weight_posterior(fit, X = NULL, by_term = FALSE) mean and covariance of all weights (parametric, then gp() terms'; data scale); at rows X the gp() lpmatrix columns and the variance they leave out (by_term: per term too, basis_term and resid_terms)
#   parameter_names(fit, n)         names of the n entries of the fit's gradient
#   engine_label(fit)               one line naming the engine and its mode
#   engine_notes(fit)               warnings for summary()
# The objective's name and meaning are fields of the engine object.

# The registered engines: inference = name -> engine constructor.
engines <- new.env(parent = emptyenv())

#' Register an inference engine
#'
#' Makes `inference = name` available in [gpgam()].  Each engine of the
#' package registers itself this way; another package (or a test) can add an
#' engine the same way, with the S3 methods of the engine contract described
#' in the package's ARCHITECTURE.md: methods of `engine_fit()` for its engine
#' class `engine_<name>` and of the posterior generics for its fit class
#' `gpgam_<name>`, passed in `methods` when they are not registered
#' otherwise.
#'
#' @param name the value of `inference` that selects the engine.
#' @param constructor a function of no arguments returning the engine object
#'   (made by the package's internal `new_engine()`); `NULL` removes the
#'   engine `name`.
#' @param methods a named list of S3 methods to register, named
#'   `"generic.class"` (for example `"engine_fit.engine_foo"`).
#' @return The names of the registered engines, invisibly.
#' @examples
#' names(scalegp:::engine_registry())
#' @keywords internal
#' @export
register_engine <- function(name, constructor, methods = list()) {
  if (!is.character(name) || length(name) != 1 || !nzchar(name)) stop_arg("name", "must be a single string")
  if (is.null(constructor)) {
    if (exists(name, envir = engines, inherits = FALSE)) rm(list = name, envir = engines)
    engines$.order <- setdiff(engines$.order, name)
    return(invisible(names(engine_registry())))
  }
  if (!is.function(constructor)) stop_arg("constructor", "must be a function returning the engine object")
  ns <- if (length(methods)) asNamespace("scalegp")
  for (nm in names(methods)) {
    generic <- sub("\\..*$", "", nm)
    registerS3method(generic, substring(nm, nchar(generic) + 2L), methods[[nm]], envir = ns)
  }
  assign(name, constructor, envir = engines)
  engines$.order <- union(engines$.order, name)
  invisible(names(engine_registry()))
}

# inference = name -> engine constructor, in the order of registration.
engine_registry <- function() mget(engines$.order %||% character(), envir = engines)

# The engine object of `inference`.
get_engine <- function(inference) {
  reg <- engine_registry()
  if (!is.character(inference) || length(inference) != 1 || !inference %in% names(reg))
    stop_arg("inference", "must be one of ",
             paste0("\"", names(reg), "\" (", vapply(reg, function(e) e()$label, ""), ")", collapse = ", "))
  reg[[inference]]()
}

# name: the value of `inference`; label: what summary() calls it; objective,
# objective_note: the name and meaning of the objective it maximises (what
# logLik() returns); options: the constructor of its control options, whose
# arguments are the names gp_control() accepts for it; basis, basis_column:
# what print() and summary() call the basis of a gp() term; stationary_test:
# whether its fits end with the stationary-point test (FALSE: a stochastic
# fit that runs its iterations out, whose converged is always FALSE; neither
# gpgam() nor summary() then warns that it did not converge); compare_warning:
# NULL, or why its objectives do not compare models (anova() of its fits
# warns with it).
new_engine <- function(name, label, objective, objective_note, options, basis = "inducing points",
                       basis_column = "inducing", stationary_test = TRUE, compare_warning = NULL) {
  structure(list(name = name, label = label, objective = objective, objective_note = objective_note,
                 options = options, basis = basis, basis_column = basis_column, stationary_test = stationary_test,
                 compare_warning = compare_warning),
            class = c(paste0("engine_", name), "scalegp_engine"))
}

engine_fit <- function(engine, setup, control) UseMethod("engine_fit")

posterior_state <- function(fit, res) UseMethod("posterior_state")
term_basis <- function(fit) UseMethod("term_basis")
component_edf <- function(fit) UseMethod("component_edf")
centre_terms <- function(fit, setup, res) UseMethod("centre_terms")
param_posterior <- function(fit, ...) UseMethod("param_posterior")
latent_predict <- function(fit, X, offset, terms = FALSE, se = TRUE) UseMethod("latent_predict")
fitted_latent <- function(fit, setup, res) UseMethod("fitted_latent")
term_projection <- function(fit, X, ...) UseMethod("term_projection")
latent_draws <- function(fit, X, nsim) UseMethod("latent_draws")
weight_posterior <- function(fit, X = NULL, ...) UseMethod("weight_posterior")
parameter_names <- function(fit, n, ...) UseMethod("parameter_names")

engine_label <- function(fit) UseMethod("engine_label")

engine_label.scalegp <- function(fit) fit$engine$label

engine_notes <- function(fit) UseMethod("engine_notes")

# An engine without a weight_posterior() method of its own (and whose
# posterior is not the whitened Gaussian, see weight_posterior.gpgam()) has no
# basis weights to show: predict(type = "lpmatrix"), coef(full = TRUE) and
# vcov(full = TRUE) refuse, naming the engine.
weight_posterior.scalegp <- function(fit, X = NULL, ...) refuse_weights(fit)

refuse_weights <- function(fit) {
  msg <- sprintf(paste0("predict(type = \"lpmatrix\"), coef(full = TRUE) and vcov(full = TRUE) are not available for ",
                        "inference = \"%s\", the %s: the engine does not give the posterior of its basis weights ",
                        "(it has no weight_posterior() method); predict(se.fit = TRUE) and simulate() work"),
                 fit$engine$name, fit$engine$label)
  # (classed, so that predict(exclude = ) can turn this refusal, and only it, into its own)
  stop(structure(class = c("scalegp_no_weights", "error", "condition"), list(message = msg, call = NULL)))
}

engine_notes.scalegp <- function(fit) {
  if (isTRUE(fit$failures > 0))
    sprintf("%d iteration(s) failed (a non-finite objective or an invalid posterior) and were undone, with the step sizes halved each time",
            fit$failures)
  else character()
}

# Option sets of model functions other than gpgam() (dgp()): name ->
# option constructor.  gp_control() accepts their names as it accepts the
# engines'; each model function registers its own (register_model_options()).
model_options <- new.env(parent = emptyenv())

register_model_options <- function(name, options) {
  assign(name, options, envir = model_options)
  invisible(name)
}

# Every option constructor gp_control() knows, named by who reads it: the
# engines' by their `inference` value, then the model functions' ("dgp()").
option_constructors <- function() {
  models <- sort(ls(model_options))
  c(lapply(engine_registry(), function(ctor) ctor()$options),
    stats::setNames(mget(models, envir = model_options), paste0(models, "()")))
}

# How an error message names the owner of an option set.
option_owner_label <- function(owner) {
  if (endsWith(owner, "()")) owner else paste0("inference = \"", owner, "\"")
}

# Names of the options of every engine and model function (gp_control() accepts them).
engine_option_names <- function() unique(unlist(lapply(option_constructors(), function(f) names(formals(f)))))

# The options of `engine` in a control object: its option constructor
# applied to those set there (validated again, since a control object's
# fields can be changed by hand), over those it already holds for this
# engine (the control of a fit); an option of another engine is an error
# that names it.
engine_options <- function(engine, control) {
  held <- if (inherits(control$options, paste0(engine$name, "_options"))) unclass(control$options) else list()
  given <- Filter(Negate(is.null), unclass(control)[intersect(names(control), engine_option_names())])
  given <- c(given, Filter(Negate(is.null), held[setdiff(names(held), names(given))]))
  mine <- names(formals(engine$options))
  other <- setdiff(names(given), mine)
  if (length(other)) {
    owner <- names(Filter(function(f) other[1] %in% names(formals(f)), option_constructors()))
    stop_arg(other[1], "is an option of ", paste(vapply(owner, option_owner_label, ""), collapse = " or "),
             ", not of ", option_owner_label(engine$name))
  }
  do.call(engine$options, given)
}

# Rows per iteration when the user did not say (`opts`: the engine's options):
# all rows up to 20000, minibatches of 2000 beyond.
default_batch_size <- function(engine, n, family, opts) UseMethod("default_batch_size")
default_batch_size.default <- function(engine, n, family, opts) if (n <= 20000) n else 2000

# Adds the engine's own entries to a fit made by collect_fit() from the raw
# result `res` of engine_fit() (default: none).
engine_collect <- function(engine, fit, res) UseMethod("engine_collect")

engine_collect.scalegp_engine <- function(engine, fit, res) fit
