# scalegp demo: Gaussian-process regression and classification from formulas.
# Writes its plots to ./demo-output/.
library(scalegp)
out <- "demo-output"
dir.create(out, showWarnings = FALSE)
set.seed(1)

## Regression: a smooth surface in two inputs plus linear and factor effects
n <- 5000
d <- data.frame(x1 = runif(n, -2, 2), x2 = runif(n, -2, 2), z = rnorm(n),
                f = factor(sample(c("a", "b", "c"), n, replace = TRUE)))
d$y <- sin(2 * d$x1) * cos(d$x2) + 0.5 * d$z + c(a = 0, b = 0.5, c = -0.5)[as.character(d$f)] +
  rnorm(n, sd = 0.3)
fit <- gpgam(y ~ gp(x1, x2) + z + f, data = d, control = gp_control(inducing = 64, verbose = FALSE))
print(summary(fit))
new <- data.frame(x1 = c(-1, 0, 1), x2 = 0, z = 0, f = "a")
print(predict(fit, new, se.fit = TRUE))

png(file.path(out, "regression-surface.png"), width = 700, height = 600)
plot(fit)
dev.off()
png(file.path(out, "regression-trace.png"), width = 700, height = 500)
plot(fit, which = "trace")
dev.off()

## Classification: probit GP on one input
d$yb <- rbinom(n, 1, pnorm(2 * sin(2 * d$x1)))
fitb <- gpgam(yb ~ gp(x1), data = d, family = binomial(link = "probit"),
              control = gp_control(inducing = 30, verbose = FALSE))
print(fitb)
png(file.path(out, "classification.png"), width = 700, height = 500)
plot(fitb)
dev.off()

## The same classifier by expectation propagation (Hernandez-Lobato and Hernandez-Lobato 2016)
fite <- gpgam(yb ~ gp(x1), data = d, family = binomial(link = "probit"), inference = "ep",
              control = gp_control(inducing = 30, iterations = 300, verbose = FALSE))
print(fite)
print(cbind(VI = predict(fitb, new, type = "response"), EP = predict(fite, new, type = "response")))
png(file.path(out, "classification-ep.png"), width = 700, height = 500)
plot(fite)
dev.off()
cat("plots written to", normalizePath(out), "\n")
