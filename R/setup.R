# Model setup shared by the front functions (gpgam() and dgp()), as
# mgcv's gam.setup serves gam() and bam(): formula -> model frame ->
# response, weights, offset, standardisation, term specs and the internal
# design.  Pipeline: parse_gpgam_formula() (terms.R), gp_model_frame(),
# resolve_control() (control.R), gp_setup(); an engine then fits the setup.

# The `data` argument of gpgam(), evaluated: an error doing so
# (a data frame that does not exist, a failing expression) names `data`.
eval_data_arg <- function(data) {
  tryCatch(data, error = function(e) stop_arg("data", "could not be evaluated: ", conditionMessage(e)))
}

# The model frame of a front function's call `call` (its match.call()),
# evaluated in `envir`, with the usual data / subset / weights / na.action
# semantics, for the variables of `formula`: `data` a data frame or a list
# of variables (as model.frame() takes); without `data`, the variables come
# from the formula's environment, as in lm() and mgcv's gam().
gp_model_frame <- function(call, envir, formula, evaluated = NULL) {
  if (!is.null(call$data)) {
    # (`evaluated`: list(data) when the caller has evaluated it, so that an
    # expression such as read.csv() runs once)
    data <- if (!is.null(evaluated)) evaluated[[1]] else eval(call$data, envir)
    if (!is.list(data) || is.function(data))
      stop_arg("data", "must be a data frame (or a list of variables)")
    lens <- lengths(data)
    if (!is.data.frame(data) && length(unique(lens)) > 1L)
      stop_arg("data", "is a list whose variables differ in length (", paste(unique(lens), collapse = ", "), ")")
  }
  mf <- call[c(1L, match(c("data", "subset", "weights", "na.action", "offset"), names(call), 0L))]
  if (!is.null(call$data)) mf$data <- data  # (the value, not the expression: evaluated once)
  mf$formula <- formula
  mf$drop.unused.levels <- TRUE
  mf[[1L]] <- quote(stats::model.frame)
  # Without missing values na.action has nothing to do, but na.omit() would
  # still copy the frame (seconds at 1e7 rows): build it with na.pass first.
  pass <- mf
  pass$na.action <- quote(stats::na.pass)
  frame <- tryCatch(eval(pass, envir), error = function(e) model_frame_error(e, call, formula))
  mf <- if (any(vapply(frame, anyNA, TRUE)))
    tryCatch(eval(mf, envir), error = function(e) stop_arg("na.action", "failed: ", conditionMessage(e))) else frame
  rm(frame)
  if (nrow(mf) < 2) stop_arg("data", "has ", nrow(mf), " usable row(s); at least 2 are needed")
  mf
}

# The error of a model frame that could not be built, naming the argument
# at fault (without the call, which would print the data): a variable not
# found names the formula or 'data', or the argument (subset, weights,
# offset) whose expression alone uses it; a weights or offset vector of the
# wrong length names that argument.
model_frame_error <- function(e, call, formula) {
  msg <- conditionMessage(e)
  if (grepl("not found", msg)) {
    var <- sub("^object '(.*)' not found$", "\\1", msg)
    extra <- c("subset", "weights", "offset")
    uses <- vapply(extra, function(a) !is.null(call[[a]]) && var %in% all.vars(call[[a]]), TRUE)
    if (!(var %in% all.vars(formula)) && any(uses))
      stop_arg(extra[uses][1], "names a variable that is neither in 'data' nor in the formula's environment: ", msg)
    stop_arg(if (is.null(call$data)) "formula" else "data",
             if (is.null(call$data)) "names a variable that is not in the formula's environment (and no 'data' was given): "
             else "lacks a variable of the formula (nor is it in the formula's environment): ", msg)
  }
  for (a in c("weights", "offset")) if (grepl(sprintf("(%s)", a), msg, fixed = TRUE))
    stop_arg(a, "does not match the rows of the data: ", msg)
  stop("the model frame could not be built: ", msg, call. = FALSE)
}

# Everything an engine needs, from the parsed formula, the model frame, the
# family (likelihood_name()) and a resolved control object: the internal
# design (standardised gp() inputs, then the standardised parametric
# design), the standardised response, weights and offset, the component
# specs the C++ core reads, and the term records predictions reuse.
gp_setup <- function(parsed, mf, fam, control) {
  n <- nrow(mf)
  w <- stats::model.weights(mf) %||% rep(1, n)
  if (!is.numeric(w) || any(!is.finite(w) | w < 0)) stop_arg("weights", "must be finite and non-negative")
  w <- as.numeric(w)
  if (n > 0 && !any(w > 0)) stop_arg("weights", "are all zero: no row would inform the fit")
  # the response as model.response() gives it, without the row names it
  # attaches (a million strings at 1e6 rows)
  y <- if (attr(attr(mf, "terms"), "response") > 0) mf[[1L]]
  yname <- if (is.null(y)) "y" else names(mf)[1L]  # (the response as the formula writes it, for messages)
  if (is.matrix(y) && ncol(y) == 1L) dim(y) <- NULL
  if (is.matrix(y) && fam$lik %in% c("probit", "logit")) {  # cbind(successes, failures), as in glm()
    if (ncol(y) != 2 || !is.numeric(y) || any(!is.finite(y) | y < 0))
      stop_arg(yname, "of binomial() as a matrix must be cbind(successes, failures) of non-negative counts")
    tot <- rowSums(y)
    w <- w * tot
    y <- ifelse(tot > 0, y[, 1] / pmax(tot, 1e-300), 0)
  }
  y <- prepare_response(y, fam$lik, yname)
  if (fam$lik %in% c("probit", "logit") && any(abs(w * y - round(w * y)) > 1e-3))  # (as glm()'s binomial)
    warning("'", yname, "': non-integer numbers of successes in a binomial model (a proportion needs its trials as ",
            "'weights', or write cbind(successes, failures))", call. = FALSE)
  ylevels <- attr(y, "levels")
  attr(y, "levels") <- NULL
  off <- as.numeric(stats::model.offset(mf) %||% rep(0, n))
  if (any(!is.finite(off))) stop_arg("offset", "has non-finite values")
  check_finite_columns(mf, names(mf), "data")
  # the families with a residual scale, whose response is standardised
  gaussian <- has_sigma(fam$lik)
  # The link-scale centre and scale of the internal model (no centring
  # without an intercept): Gaussian and scaled t, the response is centred
  # and scaled;
  # the log links (Poisson, Gamma, negative binomial), the response is kept
  # as it is and the predictor is centred at log(mean(y)) through the
  # internal offset, so that responses of any size start near their mean.
  sdy <- if (gaussian) stats::sd(y)
  ysc <- if (gaussian) {
    list(center = if (parsed$intercept) sum(w * y) / sum(w) else 0,
         scale = if (sdy > 0) sdy else 1)
  } else if (fam$lik %in% c("poisson", "gamma", "negbin") && parsed$intercept && sum(w * y) > 0) {
    list(center = log(sum(w * y) / sum(w)), scale = 1)
  } else list(center = 0, scale = 1)
  ysc$gaussian <- gaussian
  terms <- list(gp = list(), param = NULL)
  comps <- list()
  Xs <- list()  # standardised inputs of the gp terms, for the design
  col <- 0L
  for (i in seq_along(parsed$specs)) {
    for (built in gp_component(parsed$specs[[i]], mf, parsed$specs[-i], length(parsed$specs), ysc, control, col)) {
      comps[[length(comps) + 1]] <- built$comp
      terms$gp[[length(terms$gp) + 1]] <- built$term
      Xs[length(terms$gp)] <- list(built$Xs)
      col <- col + length(built$comp$cols) + !is.null(built$comp$by_col)
    }
  }
  has_param <- parsed$intercept || length(attr(terms(parsed$param), "term.labels")) > 0
  if (has_param) {
    pt <- stats::delete.response(terms(parsed$param))
    Xp <- stats::model.matrix(pt, mf)
    psc <- param_scaling(Xp)
    qp <- if (ncol(Xp) > 1) qr(Xp)  # (one column: param_scaling() refuses a constant one)
    if (!is.null(qp) && qp$rank < ncol(Xp)) {
      # the columns lm() would give NA (aliased with earlier ones) leave the
      # internal design; their coefficients are 0 with variance 0, as mgcv's
      aliased <- sort(qp$pivot[-seq_len(qp$rank)])
      warning("the parametric design is rank deficient (",
              paste0("'", colnames(Xp)[aliased], "'", collapse = ", "),
              " aliased with earlier columns); ", if (length(aliased) > 1) "their coefficients are" else
              "its coefficient is", " set to 0 (as mgcv's)", call. = FALSE)
      psc <- drop_param_columns(psc, aliased)
    }
    if (ncol(Xp) >= sum(w > 0))
      warning(sprintf("the parametric terms (%s) have %d coefficients for %d rows; they cannot be estimated well",
                      paste(c(if (parsed$intercept) "intercept", attr(pt, "term.labels")), collapse = ", "),
                      ncol(Xp), sum(w > 0)), call. = FALSE)
    terms$param <- pt
    terms$param_scaling <- psc
    terms$contrasts <- attr(Xp, "contrasts")
    terms$param_assign <- attr(Xp, "assign")
    terms$xlevels <- stats::.getXlevels(pt, mf)
    np <- length(param_kept(terms))
    comps[[length(comps) + 1]] <- list(kind = "linear", cols = col + seq_len(np) - 1L, prior_sd = rep(100, np))
  }
  if (length(comps) == 0) stop_arg("formula", "has no terms (no gp(), no parametric terms, no intercept)")
  terms$full <- with_predvars(stats::delete.response(terms(parsed$full)), attr(mf, "terms"))
  terms$full_xlevels <- stats::.getXlevels(terms$full, mf)
  X <- internal_design(mf, terms, Xs, if (has_param) Xp)
  rm(Xs)
  # the noise sd (Gaussian) or scale (scaled t) to start from, or the given one
  t_sigma <- if (fam$lik == "scat") (fam$theta %||% fam$theta_start)[["sigma"]]
  noise0 <- if (gaussian) (t_sigma %||% control$sigma %||% (sdy / 3)) / ysc$scale else 1
  list(X = X, y = if (gaussian) (y - ysc$center) / ysc$scale else y, w = w,
       offset = if (gaussian) off / ysc$scale else off + ysc$center, comps = comps, terms = terms,
       yscaling = ysc, family = fam$family, lik = fam$lik,
       log_noise = if (fam$lik %in% c("gamma", "negbin")) log(lik_param_start(fam, y, w))
                   else log(max(noise0^2 - 1e-6, 1e-12)),
       log_df = if (fam$lik == "scat") log((fam$theta %||% fam$theta_start)[["df"]] %||% (fam$min_df + 7) - fam$min_df),
       min_df = fam$min_df,
       lik_fixed = !is.null(fam$theta),
       intercept = parsed$intercept, n = n, y_raw = y, w_raw = w, offset_raw = off, ylevels = ylevels, yname = yname)
}

# The terms `tt` with the "predvars" that the model frame's terms `mt`
# recorded for the same variables (the coefficients of poly(), the knots of
# ns() and scale()'s centre, found on the fitting rows), so that new data are
# evaluated with them, as lm()'s predict() does; `mt` may hold more variables.
with_predvars <- function(tt, mt) {
  pv <- attr(mt, "predvars")
  if (is.null(pv)) return(tt)
  key <- vapply(as.list(attr(mt, "variables"))[-1], deparse1, "")
  vars <- as.list(attr(tt, "variables"))[-1]
  idx <- match(vapply(vars, deparse1, ""), key)
  if (anyNA(idx)) return(tt)
  attr(tt, "predvars") <- as.call(c(list(quote(list)), as.list(pv)[-1][idx]))
  tt
}

# The start of the likelihood's own parameter of a Gamma or negative
# binomial model (setup$log_noise is its log): the given theta; else
# the family's start value; else moments of the response about its overall
# mean (Gamma: shape mean^2 / var; negative binomial: theta mean^2 / (var -
# mean)), which count the variation of the mean as noise (a low start), in
# [0.05, 100].
lik_param_start <- function(fam, y, w) {
  if (!is.null(fam$theta)) return(fam$theta)
  if (!is.null(fam$theta_start)) return(fam$theta_start)
  mu <- sum(w * y) / sum(w)
  v <- sum(w * (y - mu)^2) / sum(w)
  start <- if (fam$lik == "gamma") mu^2 / v else mu^2 / (v - mu)
  if (!is.finite(start) || start <= 0) start <- 100
  min(100, max(0.05, start))
}

# The likelihood's own parameter: its name as the fit moves it (on the log
# scale, after the kernel hyperparameters), or NULL for a family without
# one; and whether a fit estimates it.
lik_param_label <- function(lik) {
  switch(lik, gaussian = "log noise variance", gamma = "log shape", negbin = "log theta",
         scat = "log squared scale", NULL)
}
# The families with a residual scale sigma (the Gaussian noise sd, the
# scaled t's scale): identity link, response standardised internally,
# gp_control(sigma = , fixed = "sigma") apply.
has_sigma <- function(lik) lik %in% c("gaussian", "scat")
learns_lik_param <- function(setup, control) {
  !is.null(lik_param_label(setup$lik)) && !isTRUE(setup$lik_fixed) &&
    !(has_sigma(setup$lik) && "sigma" %in% control$fixed)
}
# The scaled t's second parameter, log(df - min_df) (C++ Likelihood::log_df):
# whether a fit estimates it (unless scat() gave theta), and the settings
# that carry it and min_df to the engine (empty for the other families).
learns_lik_df <- function(setup) setup$lik == "scat" && !isTRUE(setup$lik_fixed)
lik_df_settings <- function(setup) {
  if (setup$lik != "scat") return(list())
  list(log_df = setup$log_df, min_df = setup$min_df, learn_df = learns_lik_df(setup))
}

# The setup of the rows `rows` of `setup` (a nested fit, such as the pilot of
# inference = "decoupled"): the design, response, weights and offsets of
# those rows; the terms, components, scalings and initial values as they are.
subset_setup <- function(setup, rows) {
  sub <- setup
  for (v in c("y", "w", "offset", "y_raw", "w_raw", "offset_raw")) sub[[v]] <- setup[[v]][rows]
  sub$X <- setup$X[rows, , drop = FALSE]
  sub$n <- length(rows)
  sub
}
