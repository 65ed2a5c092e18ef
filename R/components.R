# One constructor per kind of gp() component: the engine spec (a list the C++
# glue reads) and the term record kept in the fit (scalings, levels, ranges).
#   stationary  gp() alone in the model (or centre = FALSE): SE / Matern kernel
#   centred     several gp() terms: centred ANOVA kernel (see ?gp)
#   factor      gp(f) of a factor: i.i.d. random effect, one inducing point per level

# The components of one gp() spec: a list of list(comp, term), one for most
# terms, one per level for a term with a factor `by`.  `others`: the other
# gp() specs of the formula (their inputs shape a centred kernel).
gp_component <- function(spec, mf, others, n_terms, ysc, control, col) {
  x <- mf[[spec$vars[1]]]
  if (length(spec$vars) == 1 && (is.factor(x) || is.character(x) || is.logical(x))) {
    if (!is.null(spec$by)) stop_arg("by", "is not supported for a random effect gp(", spec$vars, ")")
    return(list(factor_component(spec, x, ysc, control, col)))
  }
  if (is.null(spec$by)) return(list(gp_one(spec, mf, others, n_terms, ysc, control, col, NULL)))
  z <- mf[[spec$by]]
  if (is.null(z)) stop("data lacks the 'by' variable '", spec$by, "' of ", spec$label, call. = FALSE)
  if (is.character(z) || is.logical(z)) z <- factor(z)
  if (is.factor(z)) {
    lev <- levels(droplevels(z))
    if (length(lev) < 2) stop_arg("by", "'", spec$by, "' of ", spec$label, " has a single level")
    out <- list()
    for (l in lev) {
      sl <- spec
      sl$label <- paste0(sub(":[^:]*$", "", spec$label), ":", spec$by, l)
      by <- list(var = spec$by, type = "level", level = l, n = sum(z == l))
      out[[length(out) + 1]] <- gp_one(sl, mf, others, n_terms, ysc, control, col, by)
      col <- col + length(spec$vars) + 1L
    }
    return(out)
  }
  if (!is.numeric(z)) stop_arg("by", "must be a numeric variable or a factor, not ", class(z)[1])
  rms <- sqrt(mean(z^2))
  if (!(rms > 0)) stop_arg("by", "'", spec$by, "' is zero everywhere")
  list(gp_one(spec, mf, others, n_terms, ysc, control, col, list(var = spec$by, type = "numeric", scale = rms)))
}

# One GP component over the spec's inputs (and `by`: the description of its
# by column, or NULL).
gp_one <- function(spec, mf, others, n_terms, ysc, control, col, by) {
  Xg <- gp_inputs(mf, spec)
  st <- .col_summary(Xg)
  sc <- input_scaling(st, spec)
  d <- ncol(Xg)
  # the centred (ANOVA) kernel: asked for, a pure interaction, or several terms without 'by'
  centre <- isTRUE(spec$pure) || (spec$centre %||% (n_terms > 1 && is.null(by)))
  Xs <- standardise(Xg, sc)
  nu <- n_unique_rows(Xg)
  if (nu < 10)
    warning(sprintf("%s has only %d distinct input %s; its curve cannot be estimated well", spec$label, nu,
                    if (d == 1) "values" else "rows"), call. = FALSE)
  Z <- inducing_init(Xg, Xs, spec, sc, control)
  ls0 <- if (!is.null(spec$lengthscale)) log(spec$lengthscale / sc$scale[seq_along(spec$lengthscale)])
         else log(if (centre) 1 else sqrt(d))
  ls0 <- rep(ls0, length.out = if (spec$ard) d else 1)
  var0 <- if (!is.null(spec$variance)) spec$variance / ysc$scale^2 else 1 / n_terms
  comp <- list(kind = if (centre) "centred" else "stationary", cols = col + seq_len(d) - 1L,
               kernel = spec$kernel, log_var = log(var0), log_ls = ls0, Z = Z,
               learn_kernel = !("kernel" %in% control$fixed))
  if (!is.null(by)) comp$by_col <- col + d
  rng <- st[c("min", "max"), , drop = FALSE]
  dimnames(rng) <- list(NULL, colnames(Xg))
  if (isTRUE(control$priors)) comp <- c(comp, hyper_priors(rng, sc, spec, nrow(Z), ysc))
  term <- list(spec = spec, type = comp$kind, scaling = sc, range = rng, by = by)
  if (centre) {
    q <- (seq_len(40) - 0.5) / 40
    comp$nodes <- .col_quantiles7(Xs, q)  # (stats::quantile(type = 7), per input)
    comp$weights <- rep(list(rep(1 / 40, 40)), d)
    pr <- if (isTRUE(spec$pure)) pure_interaction(d)
          else anova_products(spec$vars, lapply(Filter(function(o) is.null(o$by), others), `[[`, "vars"))
    comp$masks <- pr$masks
    comp$coefs <- pr$coefs
    term$nodes <- comp$nodes
  }
  list(comp = comp, term = term, Xs = Xs)
}

# The column of the internal design for a term's `by` (see gp_component()).
by_column <- function(mf, by) {
  z <- mf[[by$var]]
  if (by$type == "numeric") return(as.numeric(z) / by$scale)
  as.numeric(as.character(z) == by$level)
}

factor_component <- function(spec, x, ysc, control, col) {
  f <- as.factor(x)
  if (nlevels(f) < 2) stop_arg(spec$label, "is a factor with a single level")
  var0 <- if (!is.null(spec$variance)) spec$variance / ysc$scale^2 else 1
  comp <- list(kind = "factor", cols = col, log_var = log(var0), levels = nlevels(f),
               learn_kernel = !("kernel" %in% control$fixed))
  if (isTRUE(control$priors)) comp$sd_prior <- sd_prior_scale(ysc)
  list(comp = comp, term = list(spec = spec, type = "factor", levels = levels(f)))
}

# Products of the centred ANOVA kernel of a term over `vars`: every
# interaction of its inputs except the constant and except those that other
# terms over subsets of `vars` already model (inclusion-exclusion over the
# power sets of those subsets).  Returns bit masks (input j = bit j-1) and
# coefficients of  k = var * sum_j coef_j prod_{e in mask_j} (1 + s_e).
# The pure interaction of d inputs, prod_e s_e = sum over subsets A of the
# inputs of (-1)^(d - |A|) prod_{e in A} (1 + s_e) (mgcv's ti()).
pure_interaction <- function(d) {
  masks <- 0:(2^d - 1)
  bits <- vapply(masks, function(m) sum(bitwAnd(m, 2^(seq_len(d) - 1)) > 0), 1)
  list(masks = as.integer(masks), coefs = (-1)^(d - bits))
}

anova_products <- function(vars, others) {
  subs <- Filter(function(o) all(o %in% vars) && length(o) < length(vars), others)
  mask <- function(v) sum(2^(match(v, vars) - 1))
  out <- c(stats::setNames(1, mask(vars)))
  if (length(subs) == 0) {
    out <- c(out, stats::setNames(-1, 0))
  } else {
    for (k in seq_along(subs)) for (J in utils::combn(length(subs), k, simplify = FALSE)) {
      common <- Reduce(intersect, lapply(subs[J], identity))
      key <- as.character(mask(common))
      out[key] <- (if (is.na(out[key])) 0 else out[key]) - (-1)^(k + 1)
    }
  }
  out <- out[out != 0]
  list(masks = as.integer(names(out)), coefs = unname(out))
}

# Initial inducing inputs (standardised scale) of one gp() term: the user's,
# or k-means centres of the term's inputs Xg (standardised: Xs; all unique
# rows when there are fewer than k).
inducing_init <- function(Xg, Xs, spec, sc, control) {
  if (!is.null(spec$inducing)) {
    Z <- standardise(spec$inducing, sc)
    if (nrow(Z) > 1 && anyDuplicated(Z)) stop_arg("inducing", "has duplicated rows")
    return(unname(Z))
  }
  k <- spec$k %||% control$inducing %||% c(20L, 64L, 100L)[min(ncol(Xg), 3L)]
  nu <- n_unique_rows(Xg)
  if (k > nu && nrow(Xg) > 50000) nu <- n_unique_rows(Xg, exact = TRUE)  # (the subset may have missed some)
  if (k > nu) {
    if (!is.null(spec$k) || !is.null(control$inducing))
      warning(sprintf("%s: '%s' = %d exceeds the %d unique input rows; using %d inducing points",
                      spec$label, if (is.null(spec$k)) "inducing" else "k", k, nu, nu), call. = FALSE)
    k <- nu
  }
  if (k == nu) return(unname(utils::head(Xs[!duplicated(Xs), , drop = FALSE], k)))
  unname(.kmeans(Xs, k, control$seed))
}

# ---- priors of the hyperparameters (gp_control(priors = TRUE)) ------------------
# Weakly informative priors on the internal (standardised) scale, placed from
# the data as Stan's GP guidance suggests:
#   the kernel sd ~ half-normal(0, s^2), s = sd_prior_scale();
#   each lengthscale ~ inverse-gamma(a, b) with 1% of its mass below the
#   spacing the inducing points can resolve along that input (its range over
#   M^(1/d)) and 1% above the input's range.

# The scale of the half-normal prior of a kernel sd: 1 for a standardised
# Gaussian response (whose sd is 1), 2 on the link scale of the other families.
sd_prior_scale <- function(ysc) if (isTRUE(ysc$gaussian)) 1 else 2

# (`raw`: 2 x d, the ranges of the inputs on the data scale; `sc`: their
# standardisation, (x - center) / scale, which is monotone in x, so the
# standardised ranges are those of the standardised inputs)
hyper_priors <- function(raw, sc, spec, M, ysc) {
  ranges <- (raw - rep(sc$center, each = 2)) / rep(sc$scale, each = 2)
  d <- ncol(ranges)
  rng <- ranges[2, ] - ranges[1, ]
  if (!spec$ard) rng <- mean(rng)
  ab <- vapply(rng, function(r) inverse_gamma_from_tails(r / M^(1 / d), r), c(a = 0, b = 0))
  list(sd_prior = sd_prior_scale(ysc), ls_a = unname(ab["a", ]), ls_b = unname(ab["b", ]))
}

# Shape a and scale b of the inverse-gamma distribution with 1% of its mass
# below lo and 1% above hi (1 / l ~ Gamma(a, rate = b)).
inverse_gamma_from_tails <- function(lo, hi, p = 0.01) {
  if (!(hi > lo * 1.01)) hi <- lo * 1.01
  f <- function(la) {
    a <- exp(la)
    stats::pgamma(stats::qgamma(1 - p, a) * lo / hi, a) - p
  }
  la <- stats::uniroot(f, c(-8, 12), tol = 1e-10)$root
  a <- exp(la)
  c(a = a, b = stats::qgamma(1 - p, a) * lo)
}
