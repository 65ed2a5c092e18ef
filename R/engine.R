# The engine interface.  An inference engine is an object made by
# new_engine() with class c("engine_<name>", "scalegp_engine"); gpgam()
# looks it up by name in the registry below and calls the generics it
# implements.  A fit made by engine <name> has class
# c("gpgam_<name>", "gpgam", "scalegp"), so methods written once for "gpgam"
# or "scalegp" serve every engine, and an engine overrides only what differs.
#
# Adding an engine "foo": R/engine-foo.R (foo_options(), foo_engine(), its
# methods), src/foo.cpp (glue), inst/include/scalegp/foo.hpp (core), one line
# in engine_registry() and its tests.
#
# Generics on the engine object:
#   engine_fit(engine, setup, control)  fits; returns the engine's raw result:
#       a list with specs, state, m, S (the posterior of the inducing
#       variables), trace, iterations, converged, objective, seconds,
#       failures, and anything of its own
#   engine_collect(engine, fit, res)    adds the engine's own entries to the fit
# Generics on the fit (defaults for engines with a whitened Gaussian q):
#   latent_predict(fit, X, offset, terms)  link-scale mean and se (per term)
#   engine_label(fit)                       one line naming the engine and mode
#   engine_notes(fit)                       warnings for summary()
#   term_extra(fit, X)                      per gp() term, a part of its (centred)
#                                           mean outside q at rows X (default NULL)
# The objective's name and meaning are fields of the engine object.

# inference = name -> engine constructor.
engine_registry <- function() {
  list(
    vi = vi_engine,
    ep = ep_engine,
    decoupled = decoupled_engine
  )
}

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
# arguments are the names gp_control() accepts for it.
new_engine <- function(name, label, objective, objective_note, options) {
  structure(list(name = name, label = label, objective = objective, objective_note = objective_note,
                 options = options),
            class = c(paste0("engine_", name), "scalegp_engine"))
}

engine_fit <- function(engine, setup, control) UseMethod("engine_fit")

latent_predict <- function(fit, X, offset, terms = FALSE, se = TRUE) UseMethod("latent_predict")

engine_label <- function(fit) UseMethod("engine_label")

engine_label.scalegp <- function(fit) fit$engine$label

engine_notes <- function(fit) UseMethod("engine_notes")

term_extra <- function(fit, X) UseMethod("term_extra")

term_extra.scalegp <- function(fit, X) NULL

engine_notes.scalegp <- function(fit) {
  if (isTRUE(fit$failures > 0))
    sprintf("%d iteration(s) failed (a non-finite objective or an invalid posterior) and were undone, with the step sizes halved each time",
            fit$failures)
  else character()
}

# Names of the options of every registered engine (gp_control() accepts them).
engine_option_names <- function() {
  unique(unlist(lapply(engine_registry(), function(ctor) names(formals(ctor()$options)))))
}

# The options of `engine` in a control object: its option constructor
# applied to those set there (validated again, since a control object's
# fields can be changed by hand); an option of another engine is an error
# that names it.
engine_options <- function(engine, control) {
  given <- Filter(Negate(is.null), unclass(control)[intersect(names(control), engine_option_names())])
  mine <- names(formals(engine$options))
  other <- setdiff(names(given), mine)
  if (length(other)) {
    owner <- names(Filter(function(ctor) other[1] %in% names(formals(ctor()$options)), engine_registry()))
    stop_arg(other[1], "is an option of inference = \"", paste(owner, collapse = "\" or \""),
             "\", not of inference = \"", engine$name, "\"")
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
