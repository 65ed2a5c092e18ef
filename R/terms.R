# gp() terms and their arguments, and the parsing of a gpgam formula into
# gp() specs and the parametric part (mgcv's s(), te(), ti() map to gp()).

#' Gaussian-process terms in a gpgam formula
#'
#' `gp()` declares a Gaussian-process component over one or more numeric
#' inputs; it is only meaningful inside the formula of [gpgam()], which reads it
#' from the unevaluated formula, so it never clashes with `mgcv::s()`.
#'
#' **mgcv's terms.**  In a gpgam formula `s()` and `te()` are read as `gp()`
#' over the same inputs (a GP over several inputs plays the role of a tensor
#' product smooth; `k` of `te()` and `ti()` is per input, as in mgcv, so
#' that `te(x, z, k = 5)` has 25 inducing points and `k = c(5, 8)` 40),
#' and `ti(x1, x2)` as the pure interaction of its inputs (their main effects
#' removed from the kernel, whatever else is in the formula); `ti(x1)` of one
#' input is its main effect, as in mgcv's `y ~ ti(x1) + ti(x2) + ti(x1, x2)`.  `by =` works as
#' in mgcv: a numeric `by = z` gives the varying-coefficient term
#' f(x) z (not centred; `plot()` shows f), a factor `by = g` one
#' curve per level, each centred as mgcv centres it (to average zero over
#' the inputs of all rows) when the formula has the factor as a parametric
#' term (as mgcv advises; its coefficients then carry the curves' levels and
#' compare the levels averaged over the data's inputs; without an intercept,
#' `y ~ 0 + f + gp(x, by = f)`, each level's coefficient is its level).  mgcv's arguments that have no meaning for a GP
#' (`bs`, `m`, `fx`, `sp`, `id`, `xt`, `pc`, `d`, `mp`, `np`) are ignored
#' with a warning that names them and says what `gp()` does instead.
#'
#' **Several terms.** With more than one `gp()` term the components are
#' centred (an "ANOVA" kernel; Durrande et al. 2013): along every input the
#' 1-D kernel is conditioned to average to zero over the empirical
#' distribution of that input (40 quantiles), so each main effect has mean
#' zero over the data, as mgcv's sum-to-zero constraints do.  A term over
#' several inputs contains every interaction of them except those already
#' modelled by other terms over subsets of its inputs: next to `gp(x1)` and
#' `gp(x2)`, `gp(x1, x2)` is a pure interaction like mgcv's `ti()`.  A term of
#' a factor, `gp(f)`, is an i.i.d. Gaussian random effect (a delta kernel;
#' mgcv's `s(f, bs = "re")`) with an estimated variance; its inducing points
#' are all levels, so it is exact; [predict.gpgam()] gives a level not
#' seen in the fit the effect's prior (mean 0).  mgcv's basis arguments (`bs`, `m`, `sp`,
#' ...) are errors in `gp()` that say what to use instead; in `s()`, `te()`
#' and `ti()` they are dropped with a warning.
#'
#' Inputs are standardised internally (centred, and divided by their standard
#' deviation with `ard = TRUE`, or by one pooled standard deviation with
#' `ard = FALSE`, so that an isotropic kernel measures distance in the units of
#' the data); lengthscales are reported on the scale of the data.
#'
#' **Hilbert-space basis.** `basis = "hilbert"` (terms of one to three
#' numeric inputs, `inference = "vi"`) replaces the inducing points by the
#' reduced-rank basis of Solin and Sarkka (2020) as Riutort-Mayol et al.
#' (2023) use it: on a box around the data, the Laplacian's eigenfunctions
#' \eqn{\phi_j(x) = \prod_k L_k^{-1/2} \sin(\pi j_k (x_k - c_k + L_k) / (2 L_k))}
#' (a full grid of `m` sines per input) are fixed, and the kernel (SE,
#' Matern 3/2 or 5/2, ARD or not) enters only through its spectral density
#' \eqn{S(\omega_j)}, the prior variance of the weight of \eqn{\phi_j}; the
#' term's covariance is \eqn{\sum_j S(\omega_j)\phi_j(x)\phi_j(x')}, which
#' tends to the kernel as the box and the basis grow.  The box is chosen
#' from the data, per input (on the standardised scale): centred at the
#' midpoint of the input's range, of half-width \eqn{L = c S} with \eqn{S}
#' the half-range and \eqn{c = \max(1.2, a_1 l/S, 1 + r_{0.01} l/(2S))} at
#' \eqn{l = S} (one or two inputs) or \eqn{S/2} (three), with \eqn{a_1 =}
#' 3.2, 4.5, 4.1 (SE, Matern 3/2, 5/2; Riutort-Mayol et al., section 4.3) and
#' \eqn{r_{0.01}} the distance (in lengthscales) at which the correlation
#' falls to 0.01, so that the approximation holds up to the edges of the data
#' and not only in their middle: \eqn{c} = 3.2 / 1.76 (SE), 4.5 / 2.25
#' (Matern 3/2), 4.1 / 2.05 (Matern 5/2) for one or two / three inputs.  `k` sets the
#' number of sines per input (default for one input 32, or 64 when another
#' `gp(basis = "hilbert")` term of the model has several inputs, since a refit
#' costs a whole fit, which that term dominates; for two or three,
#' enough for lengthscales down to 0.5 or 0.4 of the half-range, at most 24
#' or 12: 11 or 8 for SE, 22 or 12 for Matern 5/2, 24 or 12 for Matern 3/2;
#' the refits below add sines where a fitted lengthscale needs them); the
#' shortest lengthscale they represent is
#' \eqn{l_{min} = 2 c S q / (\pi m)}, \eqn{q} the 0.995 quantile of the
#' spectral density's margin (normal for SE, \eqn{t_{2\nu}} for Matern), so that
#' at most 1\% of the spectral mass is lost.  Lengthscales are bounded below
#' by \eqn{l_{min}/2} during the fit.  As Riutort-Mayol et al. (section 4.4)
#' advise, the fit is then checked per input: a fitted lengthscale below
#' \eqn{1.1 l_{min}} halves the input's \eqn{l_{min}} (the box narrows to
#' the rule's value at \eqn{1.375 l_{min}} where that is narrower, and the
#' input gets the sines for \eqn{l_{min}/2} on it: twice as many on an
#' unchanged box), one too long for the
#' box (\eqn{c} below the rule's value at that lengthscale) widens the box to
#' the rule's value at 1.25 times the lengthscale (at most 8 half-ranges),
#' with more sines only where half the fitted lengthscale needs them, and the model is refitted
#' from the fitted hyperparameters and inducing inputs (at most 4 times, up to 2000 basis
#' functions per term; `fit$hilbert_refits` counts them, a verbose fit
#' prints a line before each saying what changes, and the iterations,
#' evaluations and times a fit reports cover all of them); a warning names the
#' term and input when that does not suffice, and one warning per term
#' advises `basis = "inducing"` when the refit would need more than 2000
#' basis functions (terms of several inputs; except for a lengthscale too
#' long for the widest box, on which a flat or linear direction is still
#' represented over the data; [gp_check()] lists every input).  The basis vanishes outside the box, so far beyond the
#' data's range the term is its level alone: minus its mean over the data, as
#' centred, with that level's uncertainty (an inducing-point term reverts to
#' zero with its prior variance).  A Hilbert term whose prior must leave out
#' what other terms model, `ti(x1, x2)` or a term beside terms over all but
#' one of its inputs (`gp(x1) + gp(x2) + gp(x1, x2)`: the pure interaction;
#' `gp(x1) + gp(x1, x2)`: all but the main effect of `x1`), has its sines
#' centred along those inputs: each 1-D sine less its mean over the data, so
#' that the term averages to zero along each such input over the data's
#' values (the inducing basis conditions its kernel instead, on 40
#' quantiles); beyond the box's walls along such an input the term stays as
#' it is at the wall.  As for the inducing basis, a term with `by` or
#' `centre = FALSE` is not centred (unless it is a `ti()`).  Other overlaps, such as `gp(x1)` beside `gp(x1, x2, x3)`,
#' are refused: no centring of products of sines removes exactly what the
#' smaller term models there.  Not supported yet: other engines; the prior
#' of a term without such overlaps is not centred (its reported curve is,
#' as for `centre = NULL`).
#'
#' With the basis fixed, a Gaussian model whose `gp()` terms all use
#' `basis = "hilbert"` (beside random effects and parametric terms) is a
#' Bayesian linear model: the fit forms the crossproducts of its design with
#' the weights once, and maximises the exact log marginal likelihood (no
#' variational gap) by Newton steps with its exact gradient and Hessian in
#' the hyperparameters and the noise, each costing \eqn{O(M^3)} in the total
#' number of basis functions \eqn{M} and no pass over the data.  Other
#' families pass over the data at each inner step, as with inducing points,
#' and cost more than the default basis per pass (more basis functions):
#' with a term of two or three inputs such a fit can take many times as long
#' as with the default basis (see the package's bench/README.md).
#'
#' @param ... the input variables (names or expressions such as `log(x)`).
#' @param kernel `"matern52"` (Matern with smoothness 5/2, the default),
#'   `"se"` (squared exponential) or `"matern32"`.  The squared exponential
#'   assumes an infinitely differentiable function: on smooth truths its
#'   estimates are a little more accurate, but where the truth is less smooth
#'   than that its bands are too narrow.  Matern 5/2 (twice differentiable;
#'   Stein 1999) gives bands that cover at about their nominal level or above
#'   on the simulated designs compared in `bench/README.md` of the source
#'   repository, at some cost in time; Matern 3/2 assumes less smoothness
#'   still.
#' @param k number of inducing points (default `gp_control()$inducing`); with
#'   `basis = "hilbert"`, the number of basis functions per input (default
#'   32 or 64 for one input, see Details), or one number per input.
#' @param ard one lengthscale per input (`TRUE`) or one shared lengthscale.
#' @param inducing optional matrix (or vector, for one input) of inducing
#'   locations on the scale of the data; overrides `k`.
#' @param lengthscale,variance optional initial values (on the scale of the
#'   data and of the response); kept fixed with `gp_control(fixed = "kernel")`.
#' @param by a numeric variable (varying-coefficient term) or a factor (one
#'   term per level), as in mgcv; an ordered factor gives no term for its
#'   first level (as in mgcv: with `gp(x) + gp(x, by = o)` the terms of the
#'   other levels are their differences from the first; add `o` as a
#'   parametric term for the levels' means).  The levels' means belong to
#'   the factor as a parametric term (`g + gp(x, by = g)`, any contrasts), or
#'   as a random effect with curves whose kernel is centred,
#'   `gp(x, by = g, centre = TRUE) + gp(g)` (the analogue of mgcv's
#'   `s(x, g, bs = "fs")`): without either, each level's curve carries its
#'   level, and a `gp(g)` beside it is not identified.
#' @param centre identifiability of the term.  `NULL` (default) or `TRUE`:
#'   the term is reported centred over the data (its values at the rows used
#'   for fitting sum to zero, as mgcv constrains every smooth), so its bands
#'   show the uncertainty of its shape and the intercept carries its level;
#'   the fitted predictor is the same.  `TRUE` also uses the centred (ANOVA)
#'   kernel, which `NULL` uses when the formula has more than one `gp()`
#'   term.  `FALSE`: the stationary kernel and the raw GP (its level is
#'   confounded with the intercept).
#' @param basis `"inducing"` (default): inducing points; `"hilbert"`: the
#'   reduced-rank Hilbert-space basis (see Details; terms of 1 to 3 inputs,
#'   `inference = "vi"`).
#' @references Stein (1999) Interpolation of Spatial Data: Some Theory for
#'   Kriging. Springer.
#'   Solin and Sarkka (2020) Hilbert space methods for reduced-rank
#'   Gaussian process regression. Statistics and Computing 30, 419-446.
#'   Riutort-Mayol, Burkner, Andersen, Solin and Vehtari (2023) Practical
#'   Hilbert space approximate Bayesian Gaussian processes for probabilistic
#'   programming. Statistics and Computing 33, 17.
#' @return A `gp_spec` object describing the term.
#' @examples
#' gp(x1, x2, kernel = "matern52", k = 50)
#' gp(x, basis = "hilbert")
#' @export
gp <- function(..., kernel = c("matern52", "se", "matern32"), k = NULL, ard = TRUE,
               inducing = NULL, lengthscale = NULL, variance = NULL, by = NULL, centre = NULL,
               basis = c("inducing", "hilbert")) {
  by <- substitute(by)
  by <- if (is.null(by)) NULL else deparse1(by)
  vars <- as.list(substitute(list(...)))[-1]
  if (length(vars) == 0) stop("gp() needs at least one input variable", call. = FALSE)
  if (!is.null(names(vars)) && any(names(vars) != "")) {
    bad <- setdiff(names(vars), "")
    known <- intersect(bad, names(mgcv_ignored))
    if (length(known))  # mgcv's arguments: say what gp() has instead
      stop(sprintf("gp(): '%s' is an argument of mgcv's smooths, not of gp(): %s", known[1],
                   mgcv_reason(known[1], vars[[known[1]]])), call. = FALSE)
    stop("gp(): unknown argument(s) ", paste0("'", bad, "'", collapse = ", "), call. = FALSE)
  }
  labels <- vapply(vars, deparse1, "")
  if (anyDuplicated(labels)) stop("gp(): input '", labels[duplicated(labels)][1], "' is repeated", call. = FALSE)
  kernels <- eval(formals(gp)$kernel)
  if (identical(kernel, kernels)) kernel <- kernels[1]
  if (!is.character(kernel) || length(kernel) != 1 || !kernel %in% kernels)
    stop_arg("kernel", "must be one of ", paste0("\"", kernels, "\"", collapse = ", "))
  d <- length(labels)
  bases <- eval(formals(gp)$basis)
  if (identical(basis, bases)) basis <- bases[1]
  if (!is.character(basis) || length(basis) != 1 || !basis %in% bases)
    stop_arg("basis", "must be one of ", paste0("\"", bases, "\"", collapse = ", "))
  if (!is.null(k)) {
    if (basis == "hilbert" && d > 1 && length(k) == d) {  # (sines per input, as te()'s k)
      for (kk in k) check_count(kk, "k")
    } else if (basis == "hilbert" && d > 1 && length(k) > 1) {
      stop_arg("k", "of a Hilbert term must be one number or one per input (", d, "), not ", length(k))
    } else check_count(k, "k")
    if (any(k < 2)) stop_arg("k", "must be at least 2 (one inducing point cannot represent a curve)")
  }
  if (!is.logical(ard) || length(ard) != 1 || is.na(ard)) stop_arg("ard", "must be TRUE or FALSE")
  if (basis == "hilbert") {
    if (d > 3)
      stop_arg("basis", "= \"hilbert\" serves gp() terms of 1 to 3 inputs; gp(", paste(labels, collapse = ", "),
               ") has ", d, " (use basis = \"inducing\" for it)")
    if (!is.null(inducing))
      stop_arg("inducing", "has no meaning with basis = \"hilbert\" (a Hilbert basis has no inducing points; ",
               "set its size with k)")
  }
  if (!is.null(inducing)) {
    inducing <- as.matrix(inducing)
    if (!is.numeric(inducing) || ncol(inducing) != d || any(!is.finite(inducing)))
      stop_arg("inducing", "must be a finite numeric matrix with ", d, " column(s)")
    if (nrow(inducing) < 2) {
      hint <- if (length(inducing) == 1 && inducing >= 2 && inducing == round(inducing)) inducing else 20
      stop_arg("inducing", "gives the locations of the inducing points, at least 2 of them (",
               nrow(inducing), " given); for their number use k = (e.g. gp(",
               paste(labels, collapse = ", "), ", k = ", hint, "))")
    }
  }
  if (!is.null(lengthscale)) {
    if (!is.numeric(lengthscale) || !(length(lengthscale) %in% c(1, if (ard) d)) ||
        any(!is.finite(lengthscale) | lengthscale <= 0))
      stop_arg("lengthscale", "must be positive, of length 1", if (ard && d > 1) paste(" or", d))
  }
  if (!is.null(variance)) check_positive(variance, "variance")
  if (!is.null(centre) && (!is.logical(centre) || length(centre) != 1 || is.na(centre)))
    stop_arg("centre", "must be TRUE, FALSE or NULL")
  if (!is.null(by) && by %in% labels) stop_arg("by", "'", by, "' is also an input of the term")
  structure(list(vars = labels, kernel = kernel, k = k, basis = basis, ard = ard, inducing = inducing,
                 lengthscale = lengthscale, variance = variance, by = by, centre = centre, pure = FALSE,
                 label = paste0("gp(", paste(labels, collapse = ", "), ")", if (!is.null(by)) paste0(":", by))),
            class = "gp_spec")
}

# mgcv's s(), te() and ti() as gp() terms: the call `e` of one of them,
# turned into a gp() call (arguments gp() knows pass through; mgcv's others
# are dropped with a warning naming them), evaluated in env.
mgcv_ignored <- c(
  bs = "a gp() term is a Gaussian process; choose its kernel with kernel = \"se\", \"matern32\" or \"matern52\"",
  m = "choose the kernel's smoothness with kernel = \"matern32\" or \"matern52\"",
  fx = "the smoothness of a gp() term (its lengthscales and variance) is always estimated",
  sp = "the smoothness of a gp() term (its lengthscales and variance) is always estimated",
  id = "terms cannot share smoothing parameters; each gp() term has its own hyperparameters",
  xt = "it has no meaning for a gp() term", pc = "gp() terms are centred over the data (see 'centre')",
  d = "a gp() term over several inputs has one lengthscale per input (ard = TRUE)",
  mp = "it has no meaning for a gp() term", np = "it has no meaning for a gp() term")

# Whether mgcv's argument `a`, given as the expression `value`, is bs = "re".
is_bs_re <- function(a, value) {
  a == "bs" && identical(tryCatch(eval(value, baseenv()), error = function(e) NULL), "re")
}

# Why mgcv's argument `a` (given as the expression `value`) has no
# counterpart in gp(); bs = "re" gets its own reason.
mgcv_reason <- function(a, value) {
  if (is_bs_re(a, value))
    return("gp() of a factor is already an i.i.d. Gaussian random effect (gp(f), mgcv's s(f, bs = \"re\")); of a numeric input it is a smooth GP term")
  mgcv_ignored[[a]]
}

mgcv_term <- function(e, env) {
  fun <- as.character(e[[1]])
  args <- as.list(e)[-1]
  nm <- names(args) %||% rep("", length(args))
  re <- FALSE
  for (a in intersect(nm, names(mgcv_ignored))) {
    # bs = "re" is what gp() of a factor is: no warning here; gp_component()
    # warns if the input turns out to be numeric (mgcv's random slope)
    is_re <- is_bs_re(a, args[[a]])
    re <- re || is_re
    if (!is_re) warning(warningCondition(sprintf("%s(): mgcv's '%s' is ignored: %s", fun, a, mgcv_reason(a, args[[a]])),
                                         class = "scalegp_mgcv_ignored"))
    args[[a]] <- NULL
    nm <- names(args) %||% rep("", length(args))
  }
  if (fun %in% c("te", "ti") && "k" %in% nm) {
    # mgcv's k of te() and ti() is per input (margin), one number recycled:
    # prod(k) inducing points (a Hilbert basis takes k per input itself)
    k <- eval(args$k, env)
    hs <- "basis" %in% nm && identical(eval(args$basis, env), "hilbert")
    d <- sum(nm == "")  # (the inputs: the unnamed arguments)
    if (is.numeric(k) && length(k) > 1 && length(k) != d)
      stop_arg("k", "of ", fun, "() must be one number or one per input (", d, "), not ", length(k))
    if (is.numeric(k) && any(!is.na(k) & k < 2))
      stop_arg("k", "of ", fun, "() must be at least 2 per input (", fun, "(..., k = ", deparse1(k),
               ") has a margin with fewer than 2, which cannot represent a curve)")
    if (is.numeric(k) && !hs && d > 1) args$k <- prod(if (length(k) == 1) rep(k, d) else k)
  }
  spec <- eval(as.call(c(list(gp), args)), env)
  if (re) spec$mgcv_re <- TRUE
  if (fun == "ti") {
    # ti() of one input is its main effect (mgcv's y ~ ti(x) + ti(z) + ti(x, z));
    # of several, the pure interaction
    if (length(spec$vars) > 1) spec$pure <- TRUE
    spec$label <- sub("^gp\\(", "ti(", spec$label)
  }
  spec
}
#' @export
print.gp_spec <- function(x, ...) {
  cat(x$label, ": ", x$kernel, " kernel", if (length(x$vars) > 1) if (x$ard) ", ARD" else ", isotropic",
      if (identical(x$basis, "hilbert")) ", Hilbert basis", if (!is.null(x$k)) paste0(", k = ", paste(x$k, collapse = " x ")), "\n", sep = "")
  invisible(x)
}

# The labels of the gp() terms of a fit's (or setup's) terms, in their order
# (the columns of predict(type = "terms") after the parametric terms).
gp_labels <- function(terms) vapply(terms$gp, function(g) g$spec$label, "")

# Two gp() terms may share inputs only when one's inputs are a subset of the
# other's (a main effect beside an interaction); identical sets are duplicates.
check_term_overlap <- function(specs) {
  for (i in seq_along(specs)) for (j in seq_along(specs)) {
    if (j <= i || !is.null(specs[[i]]$by) || !is.null(specs[[j]]$by)) next
    a <- specs[[i]]$vars
    b <- specs[[j]]$vars
    if (setequal(a, b)) stop_arg("formula", "has the gp() term over (", paste(a, collapse = ", "), ") twice: '",
                                 specs[[i]]$label, "' and '", specs[[j]]$label, "'")
    if (length(intersect(a, b)) && !all(a %in% b) && !all(b %in% a))
      stop_arg("formula", "'", specs[[i]]$label, "' and '", specs[[j]]$label, "' share input(s) ",
               paste0("'", intersect(a, b), "'", collapse = ", "), " without one containing the other; ",
               "an input may appear in a main effect and in interactions that contain it")
  }
  # a Hilbert term (without `by`, not centre = FALSE) within whose inputs other terms lie: its sines
  # centred along some inputs must remove exactly what those terms model (hilbert_centred_inputs(); a
  # term with `by` and centre = TRUE is checked when its component is made, hilbert_one())
  plain <- Filter(function(s) is.null(s$by), specs)
  for (i in seq_along(plain)) {
    s <- plain[[i]]
    if (!identical(s$basis, "hilbert") || (isFALSE(s$centre) && !isTRUE(s$pure))) next
    if (is.null(hilbert_centred_inputs(s$vars, lapply(plain[-i], `[[`, "vars"), isTRUE(s$pure))))
      stop_arg("basis", hilbert_overlap_message(s$label, s$vars, plain[-i]))
  }
}

# Number of gp()/s() calls in a formula's right-hand side (terms() silently
# drops duplicated terms, so duplicates are counted here).
count_gp_calls <- function(e) {
  if (is_gp_call(e)) return(1L)
  if (is.call(e)) return(sum(vapply(as.list(e)[-1], count_gp_calls, 1L)))
  0L
}

gp_functions <- c("gp", "s", "te", "ti")

is_gp_call <- function(e) is.call(e) && as.character(e[[1]])[1] %in% gp_functions

# Splits a formula into gp() specs and the parametric part; `data` expands
# a '.' in the formula (all other columns as parametric terms, as lm() does).
parse_gpgam_formula <- function(formula, data = NULL) {
  if (!inherits(formula, "formula") || length(formula) != 3)
    stop_arg("formula", "must be a two-sided formula such as y ~ gp(x1, x2) + z")
  env <- environment(formula) %||% parent.frame()
  tt <- tryCatch(terms(formula, specials = gp_functions, data = data), error = function(e)
    stop_arg("formula", conditionMessage(e)))
  labels <- attr(tt, "term.labels")
  other <- grepl("^t2\\(", labels)
  if (any(other))
    stop_arg("formula", "term '", labels[other][1], "': mgcv's t2() is not supported; write te() (read as ",
             "gp() over its inputs) or gp(x1, x2, ...)")
  exprs <- lapply(labels, str2lang)
  smooth <- vapply(exprs, is_gp_call, TRUE)
  bad <- !smooth & grepl("\\b(gp|s|te|ti)\\(", labels)
  if (any(bad)) stop_arg("formula", "term '", labels[bad][1], "' combines gp() with other terms; ",
                         "interactions of gp() terms are not supported")
  # (mgcv's ignored arguments: each warning once, however many terms repeat it)
  seen <- character()
  specs <- withCallingHandlers(lapply(exprs[smooth], function(e) {
    if (as.character(e[[1]]) == "gp") eval(e, env) else mgcv_term(e, env)
  }), scalegp_mgcv_ignored = function(w) {
    if (conditionMessage(w) %in% seen) invokeRestart("muffleWarning")
    seen <<- c(seen, conditionMessage(w))
  })
  n_calls <- count_gp_calls(formula[[3]])
  if (n_calls > length(specs)) stop_arg("formula", "has a gp() term twice (", n_calls, " gp() calls, ",
                                        length(specs), " distinct terms)")
  check_term_overlap(specs)
  offsets <- if (!is.null(attr(tt, "offset")))
    vapply(as.list(attr(tt, "variables"))[-1][attr(tt, "offset")], deparse1, "") else character()
  param_labels <- c(labels[!smooth], offsets)
  response <- formula[[2]]
  intercept <- attr(tt, "intercept") == 1
  param <- if (length(param_labels)) reformulate(param_labels, response = NULL, intercept = intercept)
           else if (intercept) ~1 else ~0
  environment(param) <- env
  gp_vars <- unique(unlist(lapply(specs, function(sp) c(sp$vars, sp$by))))
  all_labels <- unique(c(labels[!smooth], offsets, gp_vars))
  full <- if (length(all_labels)) reformulate(all_labels, response = response) else
    as.formula(call("~", response, 1))
  environment(full) <- env
  list(specs = specs, param = param, full = full, response = response, intercept = intercept)
}
