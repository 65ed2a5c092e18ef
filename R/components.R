# One constructor per kind of gp() component: the engine spec (a list the C++
# glue reads) and the term record kept in the fit (scalings, levels, ranges).
#   stationary  gp() alone in the model (or centre = FALSE): SE / Matern kernel
#   centred     several gp() terms: centred ANOVA kernel (see ?gp)
#   factor      gp(f) of a factor: i.i.d. random effect, one inducing point per level
#   hilbert     gp(..., basis = "hilbert"): the reduced-rank Hilbert-space basis (hilbert_one())

# The components of one gp() spec: a list of list(comp, term), one for most
# terms, one per level for a term with a factor `by`.  `others`: the other
# gp() specs of the formula (their inputs shape a centred kernel).
gp_component <- function(spec, mf, others, n_terms, ysc, control, col) {
  x <- mf[[spec$vars[1]]]
  if (length(spec$vars) == 1 && (is.factor(x) || is.character(x) || is.logical(x))) {
    if (identical(spec$basis, "hilbert"))
      stop_arg("basis", "= \"hilbert\" needs numeric inputs; gp(", spec$vars, ") of a factor is a random effect ",
               "(leave basis unset)")
    if (!is.null(spec$by))
      stop_arg("by", "is not supported for a random effect gp(", spec$vars, ") (random slopes are not available; ",
               "a curve of '", spec$by, "' per level is gp(", spec$by, ", by = ", spec$vars, "))")
    return(list(factor_component(spec, x, ysc, control, col)))
  }
  if (isTRUE(spec$mgcv_re)) {
    is_fac <- vapply(spec$vars, function(v) { z <- mf[[v]]; is.factor(z) || is.character(z) || is.logical(z) }, TRUE)
    if (any(is_fac) && !all(is_fac)) {
      f <- spec$vars[is_fac][1]
      x <- paste(spec$vars[!is_fac], collapse = ", ")
      stop(sprintf(paste0("%s: mgcv's bs = \"re\" with a factor and a numeric input is a random slope of %s per level ",
                          "of '%s'; random slopes are not available: gp(%s) gives random intercepts, gp(%s, by = %s, ",
                          "centre = TRUE) + gp(%s) a curve per level"),
                   sub("^gp\\(", "s(", spec$label), x, f, f, x, f, f), call. = FALSE)
    }
    warning(sprintf("%s: mgcv's bs = \"re\" of a numeric input is a random slope (x times one normal coefficient); ",
                    sub("^gp\\(", "s(", spec$label)),
            "here it is a smooth GP term; for a linear effect use the bare variable", call. = FALSE)
  }
  if (is.null(spec$by)) return(list(gp_one(spec, mf, others, n_terms, ysc, control, col, NULL)))
  z <- mf[[spec$by]]
  if (is.null(z)) stop("data lacks the 'by' variable '", spec$by, "' of ", spec$label, call. = FALSE)
  if (is.character(z) || is.logical(z)) z <- factor(z)
  if (is.factor(z)) {
    lev <- levels(droplevels(z))
    if (length(lev) < 2) stop_arg("by", "'", spec$by, "' of ", spec$label, " has a single level")
    if (is.ordered(z)) lev <- lev[-1]  # (as mgcv: an ordered factor's first level has no term)
    out <- list()
    # (the levels' warnings, one for all: the levels with few distinct
    # inputs, and what is the same for each level, named by the whole term)
    term <- paste0(sub(":[^:]*$", "", spec$label), ":", spec$by)
    few <- same <- character()
    for (l in lev) {
      sl <- spec
      sl$label <- paste0(term, l)
      by <- list(var = spec$by, type = "level", level = l, n = sum(z == l))
      out[[length(out) + 1]] <- withCallingHandlers(
        gp_one(sl, mf, others, n_terms, ysc, control, col, by),
        scalegp_few_values = function(w) {
          few <<- c(few, sprintf("%s: %d", l, w$values))
          invokeRestart("muffleWarning")
        },
        scalegp_same_per_level = function(w) {
          same <<- union(same, sub(w$label, term, conditionMessage(w), fixed = TRUE))
          invokeRestart("muffleWarning")
        })
      col <- col + length(spec$vars) + 1L
    }
    for (m in same) warning(m, call. = FALSE)
    if (length(few))
      warning(sprintf(paste0("%s has fewer than 10 distinct input %s at %d of its %d levels (%s%s); ",
                             "their curves cannot be estimated well"),
                      term, if (length(spec$vars) == 1) "values" else "rows", length(few), length(lev),
                      paste(utils::head(few, 5), collapse = ", "), if (length(few) > 5) ", ..." else ""),
              call. = FALSE)
    return(out)
  }
  if (!is.numeric(z)) stop_arg("by", "must be a numeric variable or a factor, not ", class(z)[1])
  if (!is.null(dim(z)) && NCOL(z) != 1)
    stop_arg("by", "'", spec$by, "' of ", spec$label, " is a matrix of ", NCOL(z), " columns; it must be one value per row")
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
  # (a term for one level of a factor `by`: the distinct inputs of that level's rows)
  nu <- if (!is.null(by) && by$type == "level")
    n_unique_rows(Xg[as.character(mf[[by$var]]) == by$level, , drop = FALSE]) else n_unique_rows(Xg)
  if (nu < 10)  # (classed: a factor `by` gathers its levels' into one warning)
    warning(warningCondition(sprintf("%s has only %d distinct input %s; its curve cannot be estimated well",
                                     spec$label, nu, if (d == 1) "values" else "rows"),
                             values = nu, class = "scalegp_few_values"))
  if (identical(spec$basis, "hilbert"))
    return(hilbert_one(spec, Xg, Xs, st, sc, ysc, control, col, by, n_terms, others, centre))
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
  if (is.character(x)) {  # (a numeric column read as text, say a stray "n/a" in a csv file, would fit as levels)
    num <- !is.na(suppressWarnings(as.numeric(x[!is.na(x)])))
    if (length(num) && mean(num) >= 0.5)
      warning(sprintf(paste0("%s: '%s' is character, so the term is a random effect with one effect per distinct ",
                             "value (%d); %d%% of its values read as numbers: for a smooth term convert it with ",
                             "as.numeric()"), spec$label, spec$vars, length(unique(x[!is.na(x)])),
                      floor(100 * mean(num))), call. = FALSE)
  }
  f <- as.factor(x)
  if (nlevels(f) < 2) stop_arg(spec$label, "is a factor with a single level")
  if (!is.null(spec$k))
    warning(spec$label, ": 'k' has no effect on a factor's random effect, whose effects are one per level ",
            "(exact, with no inducing points to add)", call. = FALSE)
  # one row per level: the effects and the noise (or each row's own deviation) are one and the same
  counts <- tabulate(f, nlevels(f))
  if (length(f) > 0 && max(counts) <= 1L)
    warning(sprintf("%s has %d levels for %d rows, one row per level; its variance cannot be estimated well",
                    spec$label, sum(counts > 0), length(f)), call. = FALSE)
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

# The inputs of a Hilbert term over `vars` whose sines are centred over the
# data (hilbert_shift()), given the input sets `others` of the other gp()
# terms without `by`: all of them for a pure interaction (`pure`, mgcv's
# ti()); else the inputs c for which another term is over the term's other
# inputs (gp(x1) beside gp(x1, x2): x2).  The term's prior is then
# prod_{c in C} s_c prod_{e not in C} (1 + s_e), s_e the kernel along input
# e centred by projection (its sines less their means; a constant along e
# for 1 + s_e): what anova_products() keeps for the inducing basis when it
# has that form.  integer(0): no other term within it (the prior is not
# centred); NULL: the products have another form (gp(x1) beside
# gp(x1, x2, x3) keeps s2, s3 and s2 s3 apart from their products with s1),
# which a Hilbert basis of products of sines does not give.
hilbert_centred_inputs <- function(vars, others, pure = FALSE) {
  d <- length(vars)
  if (pure) return(seq_len(d))
  subs <- Filter(function(o) all(o %in% vars) && length(o) < d, others)
  if (!length(subs)) return(integer())
  C <- which(vapply(seq_len(d), function(c) any(vapply(subs, function(o) setequal(o, vars[-c]), TRUE)), TRUE))
  if (!length(C)) return(NULL)
  # prod_{c in C} ((1 + s_c) - 1) prod_{e not in C} (1 + s_e) = sum over B in C of
  # (-1)^(|C| - |B|) prod_{e in B and not in C} (1 + s_e)
  base <- sum(2^(setdiff(seq_len(d), C) - 1))
  B <- if (length(C) == 1) list(integer(), C) else
    c(list(integer()), unlist(lapply(seq_along(C), function(k) utils::combn(C, k, simplify = FALSE)), recursive = FALSE))
  want <- stats::setNames(vapply(B, function(b) (-1)^(length(C) - length(b)), 1),
                          vapply(B, function(b) base + sum(2^(b - 1)), 1))
  got <- anova_products(vars, others)
  got <- stats::setNames(got$coefs, got$masks)
  if (length(want) != length(got) || !all(names(want) %in% names(got)) || any(got[names(want)] != want)) return(NULL)
  C
}

# Why a Hilbert term `label` over `vars` cannot sit beside the `others`
# (specs) within its inputs, and what to do (see hilbert_centred_inputs()).
hilbert_overlap_message <- function(label, vars, others) {
  within <- Filter(function(o) is.null(o$by) && all(o$vars %in% vars) && length(o$vars) < length(vars), others)
  paste0("= \"hilbert\" of '", label, "' beside ", paste0("'", vapply(within, `[[`, "", "label"), "'", collapse = ", "),
         ": a Hilbert term's interactions are products of sines centred along some of its inputs, which cannot ",
         "remove exactly what those terms model (they can when the other terms within it are over all but one of ",
         "its inputs, as in gp(x1) + gp(x2) + gp(x1, x2), or for ti()); use basis = \"inducing\" for '", label,
         "', or add the terms over all but one of its inputs")
}

# The means over the rows x (standardised scale) of the sines of one input
# on the box centre +- L with m sines: its shifts in a centred Hilbert basis
# (hilbert.hpp, HilbertBasis::shift).
hilbert_shift <- function(x, centre, L, m) {
  x <- x[is.finite(x)]
  a <- pi * (x - centre + L) / (2 * L)
  vapply(seq_len(m), function(j) mean(sin(j * a)), 1) / sqrt(L)
}

# The default number of inducing points of a gp() term over d inputs.
default_inducing <- function(d) c(20L, 64L, 100L)[min(d, 3L)]

# Initial inducing inputs (standardised scale) of one gp() term: the user's,
# or k-means centres of the term's inputs Xg (standardised: Xs; all unique
# rows when there are fewer than k).
inducing_init <- function(Xg, Xs, spec, sc, control) {
  if (!is.null(spec$inducing)) {
    Z <- standardise(spec$inducing, sc)
    if (nrow(Z) > 1 && anyDuplicated(Z)) stop_arg("inducing", "has duplicated rows")
    return(unname(Z))
  }
  k <- spec$k %||% control$inducing %||% default_inducing(ncol(Xg))
  nu <- n_unique_rows(Xg)
  if (k > nu && nrow(Xg) > 50000) nu <- n_unique_rows(Xg, exact = TRUE)  # (the subset may have missed some)
  if (k > nu) {
    if (!is.null(spec$k) || !is.null(control$inducing))
      warning(warningCondition(sprintf("%s: '%s' = %d exceeds the %d unique input rows; using %d inducing points",
                                       spec$label, if (is.null(spec$k)) "inducing" else "k", k, nu, nu),
                               label = spec$label, class = "scalegp_same_per_level"))
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
# response (Gaussian, scaled t: its sd is 1), 2 on the link scale of the
# other families.
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

# ---- the Hilbert-space basis (gp(basis = "hilbert"); inst/include/scalegp/hilbert.hpp) ----
# Per input k of the term (standardised scale): the box is centred at the
# midpoint of the input's range, with half-width L_k = c S_k (S_k the
# half-range); the basis has m_k sines per input (k of gp(), else
# hilbert_default_m() for a term of 1 / 2 / 3 inputs in its model), the full
# grid of their products.  The rule of the notes on the basis (after Riutort-Mayol et al.
# 2023, section 4.3, which protects only the middle of the data range): with
# eps = 0.01,
#   c = max(1.2, a1 l_hi / S, 1 + r_eps l_hi / (2 S)),  l_hi = S (1 or 2 inputs) or S / 2 (3),
#   l_min(m, c) = 2 c S q_eps / (pi m)  (the lengthscale whose spectrum beyond the
#   last sine holds eps of the mass),
# with q_eps the 1 - eps/2 quantile of the spectral density's margin (normal
# for SE, t with 2 nu degrees of freedom for Matern), r_eps where the
# correlation falls to eps (in lengthscales) and a1 the published constant
# of the boundary factor.  The lengthscales are bounded below by l_min / 2
# (with too few sines a fitted lengthscale can run off to zero); a fit
# warns when a lengthscale ends below 1.1 l_min or above what the box
# represents (hilbert_check()).  Two inputs get the box of one (l_hi = S):
# on the box for S / 2, the bump of bench/gam_design.R (a surface falling to
# zero towards the data's edges) fitted lengthscales 1.2-2.4 times those it
# fits on the wider box, from 1e4 to 1e6 rows (the walls give the prior the
# bump's shape), and the refits then took it to 27 x 27 sines at 1e5 rows
# and 44 x 44 at 1e6, where 22 x 22 on the box of one input serve.
hilbert_constants <- function(kernel) {
  switch(kernel,
         se = list(q = stats::qnorm(0.995), a1 = 3.2, r = sqrt(2 * log(100))),
         matern52 = list(q = stats::qt(0.995, 5), a1 = 4.1, r = 3.5882),
         matern32 = list(q = stats::qt(0.995, 3), a1 = 4.5, r = 3.8325))
}

# The rule's box factor for lengthscales up to l on an input of half-range
# S: c_req(l) = max(1.2, a1 l / S, 1 + r_eps l / (2 S)) (vectorised).
hilbert_c_rule <- function(kernel, l, S = 1) {
  k <- hilbert_constants(kernel)
  pmax(1.2, k$a1 * l / S, 1 + k$r * l / (2 * S))
}

# The box factor c of a term of d inputs (long lengthscales up to l_hi / S).
hilbert_c <- function(kernel, d, l_hi = if (d <= 2) 1 else 0.5) hilbert_c_rule(kernel, l_hi)

# The default number of sines per input of a term of d inputs.  One input:
# 64 (the notes' rule for lengthscales down to 0.16 of the half-range for
# Matern 5/2, 0.08 for SE, 0.26 for Matern 3/2, on the default box), or 32
# (0.33, 0.16, 0.52) when no other gp(basis = "hilbert") term of the model
# (`others`, their specs) has several inputs.  Every inner pass of a
# non-Gaussian fit costs the square of the basis size, and a lengthscale too
# short for the sines costs a refit (hilbert_adapt()): a whole fit, which a
# term of several inputs dominates when there is one.  Measured (bench/
# README.md, 2026-12-03): with 32 the binary gamSim(1) fit of bench/
# hilbert.R (four one-input terms) took 2.2 s against 4.2 s, with the same
# test NLPD; the binomial gam design (two one-input terms and one of two
# inputs, 22 x 22 sines) took 55.6 s against 31.2 s at 1e5 rows and 81.4 s
# against 51.1 s at 1e6 (one refit more each;
# bench/results/hilbert_large_sines32.md).  Two or three inputs: enough for
# the lengthscales down to 0.5 / 0.4 of the half-range on the default box
# (SE: 11 / 8; Matern 5/2: 22 / 12; Matern 3/2: 24 / 12), at most 24 / 12
# (576 / 1728 functions).  hilbert_adapt() adds sines where a fitted
# lengthscale needs them.
hilbert_default_m <- function(kernel, d, others = list()) {
  if (d == 1) {
    multi <- vapply(others, function(o) identical(o$basis, "hilbert") && length(o$vars) > 1, TRUE)
    return(if (any(multi)) 64L else 32L)
  }
  l_lo <- c(0.5, 0.4)[d - 1]
  m <- ceiling(hilbert_sines_for(kernel, hilbert_c(kernel, d), l_lo))
  as.integer(min(m, c(24L, 12L)[d - 1]))
}

# The smallest lengthscale (standardised scale) m sines represent on a box of
# half-width L = c S: 2 L q / (pi m).
hilbert_l_min <- function(kernel, L, m) 2 * L * hilbert_constants(kernel)$q / (pi * m)

# Its inverse: the sines (unrounded) a box of half-width L needs for
# lengthscales down to l.
hilbert_sines_for <- function(kernel, L, l) 2 * L * hilbert_constants(kernel)$q / (pi * l)

hilbert_one <- function(spec, Xg, Xs, st, sc, ysc, control, col, by, n_terms, others = list(), centre = FALSE) {
  d <- ncol(Xs)
  lo <- apply(Xs, 2, min)
  hi <- apply(Xs, 2, max)
  S <- (hi - lo) / 2
  S[!(S > 0)] <- 1  # (a constant input: any box holds it)
  cc <- hilbert_c(spec$kernel, d)
  L <- cc * S
  m <- rep(as.integer(spec$k %||% hilbert_default_m(spec$kernel, d, others)), length.out = d)
  l_min <- hilbert_l_min(spec$kernel, L, m)
  log_min <- log(l_min / 2)
  if (!spec$ard) log_min <- max(log_min)
  ls0 <- if (!is.null(spec$lengthscale)) log(spec$lengthscale / sc$scale[seq_along(spec$lengthscale)])
         else log(sqrt(d))
  ls0 <- rep(ls0, length.out = if (spec$ard) d else 1)
  if (is.null(spec$lengthscale)) ls0 <- pmax(ls0, log_min + log(4))
  var0 <- if (!is.null(spec$variance)) spec$variance / ysc$scale^2 else 1 / n_terms
  comp <- list(kind = "hilbert", cols = col + seq_len(d) - 1L, kernel = spec$kernel, log_var = log(var0),
               log_ls = ls0, hs_centre = unname((lo + hi) / 2), hs_L = unname(L), hs_m = m,
               log_ls_min = unname(log_min), learn_kernel = !("kernel" %in% control$fixed))
  # (inputs along which the sines are centred, where the inducing basis would centre its kernel (`centre`, as
  # gp_one()): a pure interaction, or a term beside others over its other inputs)
  hs_centred <- if (centre) hilbert_centred_inputs(spec$vars, lapply(Filter(function(o) is.null(o$by), others), `[[`, "vars"),
                                                   isTRUE(spec$pure)) else integer()
  if (is.null(hs_centred)) stop_arg("basis", hilbert_overlap_message(spec$label, spec$vars, others))
  if (length(hs_centred)) comp$hs_shift <- hilbert_shifts(Xs, comp, hs_centred)
  if (!is.null(by)) comp$by_col <- col + d
  rng <- st[c("min", "max"), , drop = FALSE]
  dimnames(rng) <- list(NULL, colnames(Xg))
  # the prior of the default basis's model (its lengthscale prior's lower
  # tail at the spacing of the inducing points the term would have), so that
  # the basis changes the approximation, not the model (with prod(m), up to
  # 1728 functions, it allowed lengthscales several times shorter, and each
  # refit that added sines kept that looser prior)
  if (isTRUE(control$priors))
    comp <- c(comp, hyper_priors(rng, sc, spec, min(control$inducing %||% default_inducing(d), n_unique_rows(Xg)), ysc))
  term <- list(spec = spec, type = "hilbert", scaling = sc, range = rng, by = by,
               hilbert = list(m = m, c = rep(cc, d), S = unname(S), L = unname(L), l_min = unname(l_min),
                              centred = hs_centred))
  list(comp = comp, term = term, Xs = Xs)
}

# The shifts (hilbert_shift()) of a Hilbert component `comp` over the rows
# Xs of its inputs: the inputs `centred` get their sines' means, the others 0.
hilbert_shifts <- function(Xs, comp, centred) {
  lapply(seq_len(ncol(Xs)), function(k)
    if (k %in% centred) hilbert_shift(Xs[, k], comp$hs_centre[k], comp$hs_L[k], comp$hs_m[k]) else numeric(comp$hs_m[k]))
}

# The adaptation of the notes (section 4.4) after a fit: per input of each
# Hilbert term with learned hyperparameters, (a) a fitted lengthscale below
# 1.1 l_min halves l_min: the box narrows to the rule's value c_req(l) at
# l = 1.375 l_min (1.25 times the longest lengthscale this check calls
# short; never wider than it was) and the input gets the sines that give
# l_min / 2 on it (twice as many on an unchanged box); (b) one the box is too
# narrow for, c < c_req(l), widens the box to c_req(1.25 l) (at most 8 half-
# ranges), with more sines only if it needs them for half the fitted
# lengthscale (l_min rises with the box; check (a) of the refit guards it).
# Narrowing the box in (a) matters on the box of one input (4.1 half-ranges
# for Matern 5/2): doubling there took a surface of lengthscale 0.46 of the
# half-range from 22 x 22 sines to 44 x 44; the narrowed box takes it to
# 29 x 29.  Returns the setup to refit
# (every component's hyperparameters, inducing inputs and the noise warm-started from the
# engine's result `res`), or NULL when nothing changes; no term grows beyond
# `max_basis` functions (the final hilbert_check() then warns).
hilbert_adapt <- function(setup, res, max_basis = hilbert_max_basis) {
  hs <- which(vapply(setup$comps, function(k) identical(k$kind, "hilbert") && isTRUE(k$learn_kernel), TRUE))
  if (!length(hs) || is.null(res$specs)) return(NULL)
  changed <- FALSE
  comps <- setup$comps
  for (i in hs) {
    k <- comps[[i]]
    h <- setup$terms$gp[[i]]$hilbert
    nb <- hilbert_next_basis(k$kernel, h, rep(exp(res$specs[[i]]$log_ls), length.out = length(h$m)))
    m <- nb$m
    cc <- nb$c
    if (!nb$change || prod(m) > max_basis) next
    changed <- TRUE
    L <- cc * h$S
    l_min <- hilbert_l_min(k$kernel, L, m)
    log_min <- log(l_min / 2)
    if (length(k$log_ls) == 1) log_min <- max(log_min)
    k$hs_L <- L
    k$hs_m <- as.integer(m)
    k$log_ls_min <- log_min
    if (length(h$centred)) k$hs_shift <- hilbert_shifts(setup$X[, k$cols + 1L, drop = FALSE], k, h$centred)
    comps[[i]] <- k
    setup$terms$gp[[i]]$hilbert <- list(m = as.integer(m), c = cc, S = h$S, L = L, l_min = l_min, centred = h$centred)
  }
  if (!changed) return(NULL)
  # warm start: the fitted hyperparameters (within the new bounds) and inducing inputs
  for (i in seq_along(comps)) {
    f <- res$specs[[i]]
    if (!is.null(f$log_var)) comps[[i]]$log_var <- f$log_var
    if (!is.null(f$Z) && !is.null(comps[[i]]$Z) && identical(dim(f$Z), dim(comps[[i]]$Z))) comps[[i]]$Z <- f$Z
    if (!is.null(f$log_ls)) comps[[i]]$log_ls <- if (is.null(comps[[i]]$log_ls_min)) f$log_ls
                                                 else pmax(f$log_ls, comps[[i]]$log_ls_min + log(1.1))
  }
  setup$comps <- comps
  if (!is.null(res$log_noise)) setup$log_noise <- res$log_noise
  if (!is.null(res$log_df)) setup$log_df <- res$log_df
  setup
}

# The basis a refit gives a Hilbert term (its setup's `h`, kernel `kernel`)
# at fitted lengthscales `ls` (internal scale, one per input): an input
# whose lengthscale is short (below 1.1 l_min) gets the sines for half of
# l_min on a box narrowed to what 1.375 l_min needs; one whose lengthscale
# is long (c_req(ls) > c, the box not yet the widest) a box for 1.25 ls and
# the sines for half of ls on it.  list(m, c, change): the sines and box
# factors per input, whether any input changed.
hilbert_next_basis <- function(kernel, h, ls) {
  c_rule <- function(l) hilbert_c_rule(kernel, l, h$S)
  m <- h$m
  cc <- h$c
  short <- ls < 1.1 * h$l_min
  c_short <- pmin(cc, c_rule(1.375 * h$l_min))
  m_short <- as.integer(ceiling(hilbert_sines_for(kernel, c_short * h$S, 0.5 * h$l_min) * (1 - 1e-10)))
  m[short] <- m_short[short]
  cc[short] <- c_short[short]
  long <- c_rule(ls) > cc * (1 + 1e-8) & cc < hilbert_max_box
  if (any(long)) {
    c_new <- pmin(hilbert_max_box, c_rule(1.25 * ls))
    # (enough sines for half the fitted lengthscale on the wider box)
    m_need <- as.integer(ceiling(hilbert_sines_for(kernel, c_new * h$S, 0.5 * ls)))
    m[long] <- pmax(m[long], m_need[long])
    cc[long] <- c_new[long]
  }
  list(m = m, c = cc, change = any(short | long))
}

# The most basis functions (the product over a term's inputs) a refit of
# hilbert_adapt() gives a Hilbert term; a term that would need more keeps its
# basis, and hilbert_check() says so.
hilbert_max_basis <- 2000L

# The widest box hilbert_adapt() gives an input, in half-ranges of its data.
# On it even a flat or linear direction (an input a term of several inputs
# does not use, a trend) is represented over the data (its first two sines
# vary by 2 per cent or are linear to 1 per cent there), so a lengthscale
# longer than the notes' rule asks of the box is not warned about.
hilbert_max_box <- 8

# The check of the notes (section 4.4) after a fit, per input of each Hilbert
# term (data scale): its sines, box factor c and the factor c_req(l) the
# fitted lengthscale needs, the lengthscale and the shortest the basis
# represents, l_min, and a status: "short" when the lengthscale is below
# 1.1 l_min (the basis is too small for it: a larger k is needed), "long"
# when c < c_req and the term is not flat (edf > 0.5: a long-lengthscale
# curve, such as a trend, is pulled towards zero near the box's walls),
# "widest box" when c < c_req on the widest box (hilbert_max_box), "fixed"
# when the kernel was not learned, else "ok".  NULL without Hilbert
# terms.  gp_check() prints it; hilbert_check() warns from it.
hilbert_table <- function(fit) {
  edf <- NULL
  rows <- list()
  for (i in seq_along(fit$terms$gp)) {
    g <- fit$terms$gp[[i]]
    s <- fit$state$specs[[i]]
    if (!identical(g$type, "hilbert")) next
    h <- g$hilbert
    d <- length(h$m)
    ls <- rep(exp(s$log_ls), length.out = d)
    c_req <- hilbert_c_rule(s$kernel, ls, h$S)
    edf <- edf %||% component_edf(fit)
    sc <- rep(g$scaling$scale, length.out = d)
    status <- if (!isTRUE(s$learn_kernel)) rep("fixed", d)
              else ifelse(ls < 1.1 * h$l_min, "short",
                          ifelse(c_req > h$c * (1 + 1e-8) & edf[i] > 0.5,
                                 ifelse(h$c >= hilbert_max_box, "widest box", "long"), "ok"))
    rows[[length(rows) + 1]] <- data.frame(term = g$spec$label, input = g$spec$vars[seq_len(d)], sines = h$m,
                                           box = h$c, box_needed = c_req, lengthscale = ls * sc,
                                           shortest = h$l_min * sc, status = status, stringsAsFactors = FALSE)
  }
  if (length(rows)) do.call(rbind, rows)
}

# Warns, naming term and input, for each input hilbert_table() marks "short"
# or "long" (the fit enlarges the basis or the box itself at most three
# times, hilbert_adapt(); what is left after that).  When the basis a refit
# would need is larger than hilbert_max_basis (a term of several inputs),
# one warning per term says so and advises inducing points instead.
hilbert_check <- function(fit, max_basis = hilbert_max_basis) {
  tab <- hilbert_table(fit)
  capped <- character()
  for (i in seq_along(fit$terms$gp)) {
    g <- fit$terms$gp[[i]]
    if (!identical(g$type, "hilbert") || !any(tab$term == g$spec$label & tab$status %in% c("short", "long"))) next
    s <- fit$state$specs[[i]]
    nb <- hilbert_next_basis(s$kernel, g$hilbert, rep(exp(s$log_ls), length.out = length(g$hilbert$m)))
    if (nb$change && prod(nb$m) > max_basis) {
      capped <- c(capped, g$spec$label)
      warning(sprintf(paste0("%s: its fitted lengthscales need a Hilbert basis of %d functions (%s sines), ",
                             "more than the %d a refit gives; it kept %d, with status %s (gp_check()); ",
                             "use basis = \"inducing\" for this term"),
                      g$spec$label, as.integer(prod(nb$m)), paste(nb$m, collapse = " x "), max_basis,
                      as.integer(prod(g$hilbert$m)),
                      paste(unique(tab$status[tab$term == g$spec$label & tab$status != "ok"]), collapse = "/")),
              call. = FALSE)
    }
  }
  for (r in seq_len(NROW(tab))) {
    t <- tab[r, ]
    if (t$term %in% capped) next
    if (t$status == "short")
      warning(sprintf(paste0("%s: the fitted lengthscale of '%s' (%.3g) is near the shortest its Hilbert basis of %d ",
                             "functions per input represents (%.3g); refit with a larger k, e.g. gp(..., k = %d)"),
                      t$term, t$input, t$lengthscale, t$sines, t$shortest, 2L * t$sines), call. = FALSE)
    if (t$status == "long")
      warning(sprintf(paste0("%s: the fitted lengthscale of '%s' is longer than its Hilbert basis's box represents ",
                             "(box factor %.2f, %.2f needed); the curve is pulled towards zero near the box's edges ",
                             "(for a linear trend, add '%s' as a parametric term)"),
                      t$term, t$input, t$box, t$box_needed, t$input), call. = FALSE)
  }
  invisible(NULL)
}
