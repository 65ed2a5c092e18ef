# How many Chebyshev polynomials reproduce a one-input term's kernel columns
# K(u, z) at its 1000 rounded values u (equally spaced over the range, as
# vi_options(bins = 1000) rounds them) and 20 equally spaced inducing inputs z,
# to a relative error of 1e-10 (largest entry), for several lengthscales (on
# a range of 4, the inputs of bench/gam_vs_mgcv.R; its fitted gp(x1) has
# lengthscale 0.835).  Evidence for a possible change, not used by the
# package: if a term's features lie in the span of r such columns, the
# products of a Gaussian discretised fit between that term and another over
# their observed value pairs (the counts C, fixed during the fit) can be formed
# once as C' B (B: the r columns) and then cost D_other x r x M per evaluation
# instead of one pass over the pairs.
#   Rscript bench/feature_rank.R
# Writes bench/results/feature_rank.md.
u <- seq(-2, 2, length.out = 1000)
z <- seq(-2, 2, length.out = 20)
kern <- list(se = function(r, l) exp(-r^2 / (2 * l^2)),
             matern52 = function(r, l) { s <- sqrt(5) * abs(r) / l; (1 + s + s^2 / 3) * exp(-s) },
             matern32 = function(r, l) { s <- sqrt(3) * abs(r) / l; (1 + s) * exp(-s) })
need <- function(K, tol = 1e-10, rmax = 400) {
  for (r in seq(4, rmax, by = 4)) {
    B <- cos(outer(acos(u / 2), 0:(r - 1)))
    if (max(abs(K - B %*% qr.solve(B, K))) < tol * max(abs(K))) return(r)
  }
  NA
}
ls <- c(0.2, 0.3, 0.5, 0.835, 1.5)
tab <- t(vapply(names(kern), function(k) vapply(ls, function(l) need(kern[[k]](outer(u, z, "-"), l)), 0), numeric(length(ls))))
md <- c("# Chebyshev columns that reproduce a one-input term's kernel columns to 1e-10", "",
        sprintf("`Rscript bench/feature_rank.R`, %s: 1000 equally spaced values on [-2, 2], 20 inducing inputs; NA: more than 400 columns.",
                format(Sys.time(), "%Y-%m-%d")), "",
        paste0("| kernel | ", paste(sprintf("lengthscale %s", ls), collapse = " | "), " |"),
        paste0("|---", strrep("|---", length(ls)), "|"),
        sprintf("| %s | %s |", rownames(tab), apply(tab, 1, function(v) paste(ifelse(is.na(v), "NA", v), collapse = " | "))))
dir.create(file.path("bench", "results"), showWarnings = FALSE)
writeLines(md, file.path("bench", "results", "feature_rank.md"))
writeLines(md)
