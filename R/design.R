# Families, response checks, standardisation and the internal design:
# one numeric matrix whose columns are the standardised gp() inputs followed
# by the standardised parametric design, shared by fitting and prediction.

supported_families <- function() {
  paste("gaussian(identity), binomial(probit), binomial(logit), poisson(log), Gamma(link = \"log\"),",
        "negative binomial (log): mgcv::nb() (theta estimated) or MASS::negative.binomial(theta) or",
        "mgcv::negbin(theta) (theta given),",
        "scaled t (identity): mgcv::scat(), location-scale Gaussian: mgcv::gaulss() with a list of two formulas")
}

# Maps a stats family object (or mgcv's nb(), MASS's negative.binomial(),
# mgcv's scat()) to the C++ likelihood name: list(family, lik, theta,
# theta_start).  `theta`: the negative binomial theta, or the scaled t's
# c(df, sigma), when the family gives it (fixed in the fit), else NULL;
# `theta_start`: start values for an estimated theta (mgcv's nb(theta = -t),
# scat(theta = -c(df, sigma))), else NULL; for the scaled t also `min_df`.
likelihood_name <- function(family) {
  if (is.character(family) && length(family) == 1)
    family <- get0(family, mode = "function", envir = asNamespace("stats")) %||%
      stop_arg("family", "\"", family, "\" is not a family; supported: ", supported_families())
  if (is.function(family)) family <- tryCatch(family(), error = function(e) NULL)
  if (!inherits(family, "family"))
    stop_arg("family", "must be a family object such as binomial(); supported: ", supported_families())
  if (identical(family$family, "gaulss"))
    stop_arg("family", "gaulss() needs a list of two formulas: list(y ~ <mean terms>, ~ <log-sd terms>)")
  if (is.character(family$family) && length(family$family) > 1 &&
      all(startsWith(family$family, "Negative Binomial(")))  # mgcv's negbin(c(lo, hi))
    stop_arg("family", "gives the negative binomial theta as a range (", paste(family$family, collapse = " to "),
             "); use mgcv::nb() (theta estimated) or MASS::negative.binomial(theta) (theta given)")
  if (!is.character(family$family) || length(family$family) != 1 || !is.character(family$link) ||
      length(family$link) != 1)
    stop_arg("family", "'", paste(family$family, collapse = ", "), "' is not supported; supported: ",
             supported_families())
  nb <- identical(family$family, "negative binomial") || startsWith(family$family, "Negative Binomial(")
  key <- paste(if (nb) "negbin" else family$family, family$link)
  name <- switch(key, "gaussian identity" = "gaussian", "binomial probit" = "probit",
                 "binomial logit" = "logit", "poisson log" = "poisson", "Gamma log" = "gamma",
                 "negbin log" = "negbin", "scaled t identity" = "scat", NULL)
  if (is.null(name) && family$family == "scaled t")
    stop_arg("family", "scat() with link '", family$link, "' is not supported (use scat(link = \"identity\")); ",
             "supported: ", supported_families())
  if (is.null(name) && family$family == "Gamma")
    stop_arg("family", "Gamma with link '", family$link, "' is not supported (use Gamma(link = \"log\")); ",
             "supported: ", supported_families())
  if (is.null(name))
    stop_arg("family", "'", family$family, "' with link '", family$link, "' is not supported; ",
             "supported: ", supported_families())
  out <- list(family = family, lik = name, theta = NULL, theta_start = NULL)
  if (nb) out[c("theta", "theta_start")] <- negbin_theta(family)
  if (name == "scat") out[c("theta", "theta_start", "min_df")] <- scat_theta(family)
  out
}

# The parameters of mgcv's scat(theta, min.df): list(theta = c(df, sigma)
# when both are given as positive numbers (held in the fit), theta_start =
# c(df, sigma) when given as negative numbers (start values, as mgcv), or
# NULL, min_df = min.df).  scat() keeps them in the environment of its
# functions (.Theta: log(df - min.df), log(sigma); n.theta 0 when given).
scat_theta <- function(family) {
  env <- environment(family$getTheta)
  min_df <- get0(".min.df", envir = env, inherits = FALSE)
  if (!is.numeric(min_df) || length(min_df) != 1 || !is.finite(min_df) || min_df <= 0)
    stop_arg("family", "scat() has min.df ", format(min_df), "; it must be a positive number")
  th <- family$getTheta(TRUE)  # c(df, sigma)
  if (!is.numeric(th) || length(th) != 2 || any(!is.finite(th)) || th[1] <= min_df || th[2] <= 0)
    stop_arg("family", "scat() has theta ", paste(format(th), collapse = ", "),
             "; it must give df above min.df and a positive scale")
  th <- stats::setNames(as.numeric(th), c("df", "sigma"))
  given <- identical(as.numeric(family$n.theta), 0)
  # (scat()'s own start without a theta, df = min.df + exp(-2): gp_setup() starts from its own instead)
  start <- if (!given && !isTRUE(all.equal(unname(th), c(min_df + exp(-2), exp(-1))))) th
  list(theta = if (given) th, theta_start = start, min_df = min_df)
}

# The theta of a negative binomial family object: list(theta = the given
# theta or NULL, theta_start = a start value or NULL).  mgcv's nb() (an
# extended family): n.theta = 0 when theta is given (getTheta(TRUE) is it);
# nb(theta = -t) starts an estimated theta at t.  MASS's
# negative.binomial(theta) and mgcv's negbin(theta) (plain families; negbin's
# getTheta() takes no argument): theta in the environment of its functions
# (`.Theta`).
negbin_theta <- function(family) {
  if (inherits(family, "extended.family") && is.function(family$getTheta)) {
    th <- family$getTheta(TRUE)
    if (identical(as.numeric(family$n.theta), 0)) return(list(theta = check_theta(th), theta_start = NULL))
    # (nb()'s own start without a theta is 1: the moments of y start it instead)
    ok <- is.numeric(th) && length(th) == 1 && is.finite(th) && th > 0 && th != 1
    return(list(theta = NULL, theta_start = if (ok) th))
  }
  th <- get0(".Theta", envir = environment(family$variance), inherits = FALSE)
  if (length(th) != 1)
    stop_arg("family", "gives the negative binomial theta as a range (", family$family,
             "); use mgcv::nb() (theta estimated) or MASS::negative.binomial(theta) (theta given)")
  list(theta = check_theta(th), theta_start = NULL)
}

check_theta <- function(th) {
  if (!is.numeric(th) || length(th) != 1 || !is.finite(th) || th <= 0)
    stop_arg("family", "has theta ", format(th), "; the negative binomial theta must be a positive number")
  as.numeric(th)
}

# The family object of a fit for glm-style computations (deviance residuals,
# the null deviance, link functions): stats' families, and for the negative
# binomial a glm family at theta (as MASS::negative.binomial(theta)).
glm_family <- function(lik, theta = NULL) {
  switch(lik, gaussian = stats::gaussian(), probit = stats::binomial("probit"),
         logit = stats::binomial("logit"), poisson = stats::poisson(), gamma = stats::Gamma("log"),
         negbin = negbin_family(theta), scat = scat_family(theta))
}

# The scaled t at theta = c(df, sigma) as a glm-style family, weights as
# precision weights (the scale of a row sigma / sqrt(w), as the fit's):
# mgcv's scat() deviance (df + 1) log(1 + w (y - mu)^2 / (df sigma^2)) per
# row; the variance function 1, as gaussian()'s (the scale is in theta).
scat_family <- function(theta) {
  force(theta)
  nu <- theta[[1]]
  s2 <- theta[[2]]^2
  lk <- stats::make.link("identity")
  structure(list(family = sprintf("scaled t(%s,%s)", format(round(nu, 3)), format(signif(theta[[2]], 4))),
                 link = "identity", linkfun = lk$linkfun, linkinv = lk$linkinv,
                 variance = function(mu) rep(1, length(mu)),
                 initialize = expression({
                   n <- rep(1, nobs)
                   mustart <- y
                 }),
                 dev.resids = function(y, mu, wt) (nu + 1) * log1p(wt * (y - mu)^2 / (nu * s2)),
                 aic = function(y, n, mu, wt, dev) {
                   ok <- wt > 0
                   -2 * sum(lgamma((nu + 1) / 2) - lgamma(nu / 2) - 0.5 * log(nu * pi * s2 / wt[ok]) -
                              0.5 * (nu + 1) * log1p(wt[ok] * (y[ok] - mu[ok])^2 / (nu * s2)))
                 },
                 mu.eta = lk$mu.eta, validmu = function(mu) TRUE, valideta = lk$valideta, theta = theta),
            class = "family")
}

negbin_family <- function(theta) {
  force(theta)
  lk <- stats::make.link("log")
  dev.resids <- function(y, mu, wt)
    2 * wt * (y * log(pmax(1, y) / mu) - (y + theta) * log((y + theta) / (mu + theta)))
  aic <- function(y, n, mu, wt, dev) {
    term <- (y + theta) * log(mu + theta) - y * log(mu) + lgamma(y + 1) - theta * log(theta) + lgamma(theta) -
      lgamma(theta + y)
    2 * sum(term * wt)
  }
  structure(list(family = paste0("Negative Binomial(", format(round(theta, 4)), ")"), link = "log",
                 linkfun = lk$linkfun, linkinv = lk$linkinv, variance = function(mu) mu + mu^2 / theta,
                 dev.resids = dev.resids, aic = aic, mu.eta = lk$mu.eta,
                 initialize = expression({
                   if (any(y < 0)) stop("negative values not allowed for the negative binomial family")
                   n <- rep(1, nobs)
                   mustart <- y + (y == 0) / 6
                 }),
                 validmu = function(mu) all(mu > 0), valideta = lk$valideta, theta = theta),
            class = "family")
}

# Checks and codes the response for the likelihood; returns numeric y (with
# attribute "levels": the classes a binary factor or logical response had).
# `name`: the response as the formula writes it, for the messages.
prepare_response <- function(y, lik, name = "y") {
  if (is.matrix(y)) stop_arg("formula", "the response must be a vector (cbind(successes, failures) is for binomial())")
  lev <- NULL
  if (lik %in% c("probit", "logit")) {
    if (is.factor(y)) {
      if (nlevels(y) != 2) stop_arg(name, "is a factor with ", nlevels(y), " levels; binomial needs 2")
      lev <- levels(y)
      y <- as.numeric(y != levels(y)[1])
    } else if (is.logical(y)) {
      lev <- c("FALSE", "TRUE")
      y <- as.numeric(y)
    }
    if (!is.numeric(y) || any(y < 0 | y > 1))
      stop_arg(name, "must be 0/1, logical, a two-level factor or a proportion in [0, 1] for binomial()")
    if (all(y == y[1])) stop_arg(name, "has a single class (all values are ", y[1], "); binomial needs both")
  } else if (lik == "poisson") {
    if (!is.numeric(y) || any(y < 0)) stop_arg(name, "must be non-negative counts for poisson()")
    if (any(abs(y - round(y)) > 1e-8)) warning(sprintf("'%s' has non-integer values for poisson()", name), call. = FALSE)
    if (isTRUE(all(y == 0))) stop_arg(name, "is 0 in every row; poisson() needs a positive count to estimate a rate")
  } else if (lik == "gamma") {
    if (!is.numeric(y)) stop_arg(name, "must be numeric and positive for Gamma()")
    bad <- which(!is.na(y) & y <= 0)
    if (length(bad))
      stop_arg(name, "must be positive for Gamma(): ", length(bad), " value(s) <= 0 (the first, in row ", bad[1],
               ", is ", format(y[bad[1]]), ")")
  } else if (lik == "negbin") {
    if (!is.numeric(y)) stop_arg(name, "must be non-negative integer counts for the negative binomial")
    bad <- which(!is.na(y) & is.finite(y) & (y < 0 | abs(y - round(y)) > 1e-8))
    if (length(bad))
      stop_arg(name, "must be non-negative integer counts for the negative binomial: ", length(bad),
               " value(s) are not (the first, in row ", bad[1], ", is ", format(y[bad[1]]), ")")
    if (isTRUE(all(y == 0)))
      stop_arg(name, "is 0 in every row; the negative binomial needs a positive count to estimate a mean")
  } else {
    if (!is.numeric(y)) stop_arg(name, "must be numeric for ", if (lik == "scat") "scat()" else "gaussian()")
  }
  bad <- which(!is.finite(y))  # (Inf, -Inf; NA and NaN when na.action = na.pass kept them)
  if (length(bad))
    stop_arg(name, "has ", length(bad), " non-finite value(s) (the first, in row ", bad[1], ", is ", format(y[bad[1]]), ")")
  if (lik %in% c("gaussian", "scat", "gamma") && length(y) > 1 && all(y == y[1]))
    warning("'", name, "' is constant (every value is ", format(y[1]), "): there is no variation for the model to explain",
            call. = FALSE)
  structure(as.numeric(y), levels = lev)
}

# Centre/scale of each gp() input block: per column (ARD) or pooled
# (isotropic), from the inputs' column summary (.col_summary()).
input_scaling <- function(st, spec) {
  ctr <- st["mean", ]
  sds <- st["sd", ]
  const <- !is.finite(sds) | sds <= 1e-12 * pmax(1, abs(ctr))
  if (any(const)) {
    j <- which(const)[1]
    if (is.finite(sds[j]) && sds[j] > 0)
      stop_arg(spec$label, "has an input whose spread is below the numerical resolution of its values: '",
               spec$vars[j], "' has sd ", format(sds[j], digits = 2), " around ", format(ctr[j], digits = 6),
               "; it is constant for the fit")
    stop_arg(spec$label, "has a constant input: '", spec$vars[j], "'")
  }
  scl <- if (spec$ard) sds else rep(sqrt(mean(sds^2)), length(sds))
  list(center = ctr, scale = scl)
}

standardise <- function(X, sc) {
  if (!is.matrix(X)) X <- as.matrix(X)
  if (!is.double(X)) storage.mode(X) <- "double"
  .standardise(X, sc$center, sc$scale)
}

# Standardisation of the parametric design: non-intercept columns are scaled
# (and centred when there is an intercept); coefficients map back through
# beta = A beta_std.
param_scaling <- function(Xp) {
  int <- colnames(Xp) == "(Intercept)"
  st <- .col_summary(Xp)
  ctr <- ifelse(int | !any(int), 0, st["mean", ])
  scl <- ifelse(int, 1, st["sd", ])
  if (nrow(Xp) < 2) scl[] <- 1
  const <- !int & (!is.finite(scl) | scl <= 1e-12)
  if (any(const)) stop_arg("formula", "the parametric column '", colnames(Xp)[const][1], "' is constant")
  if (!any(int)) {
    scl <- ifelse(int, 1, sqrt(colMeans(Xp^2)))
  }
  A <- diag(1 / scl, ncol(Xp))
  if (any(int)) A[int, !int] <- -ctr[!int] / scl[!int]
  dimnames(A) <- list(colnames(Xp), colnames(Xp))
  list(center = ctr, scale = scl, A = A)
}

# The parametric scaling without the aliased columns `drop` (indexes of the
# model matrix): they leave the internal design (internal_design() keeps the
# columns `keep`), and A keeps a row for every model-matrix column but
# columns only for the kept coefficients, so the dropped ones map to 0.
drop_param_columns <- function(psc, drop) {
  psc$keep <- setdiff(seq_len(ncol(psc$A)), drop)
  psc$A <- psc$A[, psc$keep, drop = FALSE]
  psc
}
# The model-matrix columns of the parametric terms that the fit estimates
# (all but the aliased ones); integer(0) without parametric terms.
param_kept <- function(terms) {
  psc <- if (is.list(terms)) terms$param_scaling
  if (is.null(psc)) integer(0) else psc$keep %||% seq_len(nrow(psc$A))
}

check_finite_columns <- function(mf, vars, what) {
  for (v in vars) {
    x <- mf[[v]]
    if (is.double(x) && .any_infinite(x)) stop_arg(v, "has infinite values (", what, ")")
  }
}

# Numeric matrix of the gp() inputs of spec from a model frame.
gp_inputs <- function(mf, spec, what = "data") {
  X <- matrix(0, nrow(mf), length(spec$vars), dimnames = list(NULL, spec$vars))
  for (j in seq_along(spec$vars)) {
    v <- spec$vars[j]
    x <- mf[[v]]
    if (is.null(x)) stop(what, " lacks the variable '", v, "' used in ", spec$label, call. = FALSE)
    if (is.factor(x) || is.character(x) || is.logical(x))
      stop_arg(v, "in ", spec$label, " must be numeric, not ", class(x)[1],
               if (length(spec$vars) > 1)
                 paste0(" (a curve per level, as mgcv's bs = \"fs\": gp(", paste(setdiff(spec$vars, v), collapse = ", "),
                        ", by = ", v, ", centre = TRUE) + gp(", v, "); random slopes are not available)")
               else " (use it as a parametric term instead)")
    if (is.numeric(x) && !is.null(dim(x)) && NCOL(x) != 1)
      stop_arg(v, "in ", spec$label, " is a matrix of ", NCOL(x), " columns; name each input: gp(",
               paste0(v, "[, ", seq_len(min(NCOL(x), 2)), "]", collapse = ", "), if (NCOL(x) > 2) ", ...", ")")
    if (!is.numeric(x))
      stop_arg(v, "in ", spec$label, " must be numeric, not ", class(x)[1],
               if (inherits(x, c("Date", "POSIXt", "difftime"))) paste0(" (write gp(as.numeric(", v, ")), in ",
                 if (inherits(x, "Date")) "days" else if (inherits(x, "POSIXt")) "seconds" else "its units", ")"))
    X[, j] <- as.numeric(x)
  }
  X
}

# Number of unique rows (with exact = FALSE, a lower bound from 50000 evenly
# spaced rows of larger inputs).
n_unique_rows <- function(X, exact = FALSE) {
  if (!exact && nrow(X) > 50000) X <- X[seq(1, nrow(X), length.out = 50000), , drop = FALSE]
  n <- nrow(X)
  if (ncol(X) == 0L) return(min(n, 1L))
  if (n < 2L) return(n)
  if (ncol(X) == 1L) return(sum(!duplicated(X[, 1L])))
  # rows in sorted order; a row is new when it differs from the one before
  # (as sum(!duplicated(X)), without duplicated.matrix's split into rows)
  Xs <- X[do.call(order, unname(lapply(seq_len(ncol(X)), function(j) X[, j]))), , drop = FALSE]
  1L + sum(rowSums(Xs[-1L, , drop = FALSE] != Xs[-n, , drop = FALSE]) > 0)
}

# 0-based codes of a random effect's factor `x` among the fit's `levels`:
# -1 for a level not among them (predict(): the effect's prior), NA for NA.
factor_codes <- function(x, levels) {
  code <- match(as.character(x), levels) - 1
  code[is.na(code) & !is.na(x)] <- -1
  code
}

# Internal design matrix for the stored terms and scalings (`Xs`: the
# standardised inputs of the gp terms where already at hand, in their order;
# `Xp`: the parametric model matrix when at hand).
internal_design <- function(mf, terms, Xs = list(), Xp = NULL) {
  blocks <- lapply(seq_along(terms$gp), function(i) {
    g <- terms$gp[[i]]
    if (g$type == "factor") return(matrix(factor_codes(mf[[g$spec$vars]], g$levels)))
    X <- if (i <= length(Xs) && !is.null(Xs[[i]])) Xs[[i]] else standardise(gp_inputs(mf, g$spec, "newdata"), g$scaling)
    if (is.null(g$by)) X else cbind(X, by_column(mf, g$by))
  })
  if (!is.null(terms$param)) {
    Xp <- Xp %||% stats::model.matrix(terms$param, mf, contrasts.arg = terms$contrasts)
    blocks <- c(blocks, list(standardise(Xp, terms$param_scaling)[, param_kept(terms), drop = FALSE]))
  }
  X <- do.call(cbind, blocks)
  if (is.null(X)) X <- matrix(0, nrow(mf), 0)
  X
}
