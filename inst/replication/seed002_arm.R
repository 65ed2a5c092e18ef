# A simulated 7-joint arm, the stand-in for the KUKA inverse-dynamics data of
# Cheng and Boots (2017), whose data are not public.  Joint torques from
# positions, velocities and accelerations by the recursive Newton-Euler
# algorithm (Craig's modified Denavit-Hartenberg convention, LWR-like link
# table), plus viscous and smoothed Coulomb friction, along rhythmic
# trajectories at several speeds; Gaussian noise of 0.1 sd per torque.
# Vectorised over rows: about 2 s for 2e5 rows.
#
#   source("inst/replication/seed002_arm.R")
#   arm_check()                   # the simulator's own tests (stops if one fails)
#   d <- arm_data(seed = 1)       # 197920 rows: q1..q7, qd1..qd7, qdd1..qdd7, tau1..tau7

arm_params <- function(payload = 0) {
  alpha <- c(0, pi / 2, -pi / 2, -pi / 2, pi / 2, pi / 2, -pi / 2)   # alpha_{i-1}
  d <- c(0.31, 0, 0.40, 0, 0.39, 0, 0.078)
  m <- c(rep(2.7, 6), 0.3 + payload)
  # ^{i-1}P_i = (0, -sin(alpha_{i-1}) d_i, cos(alpha_{i-1}) d_i); ^7P_8 = (0, 0, 0.06)
  P <- rbind(cbind(0, -sin(alpha) * d, cos(alpha) * d), c(0, 0, 0.06))
  P[abs(P) < 1e-15] <- 0
  rc <- t(vapply(1:7, function(i) 0.5 * P[i + 1, ] + c(0, 0.01, 0), numeric(3)))
  len <- pmax(sqrt(rowSums(P[2:8, , drop = FALSE]^2)), 0.1)
  Ic <- t(vapply(1:7, function(i) m[i] * (len[i]^2 / 12 + 0.06^2 / 4) + m[i] * c(0.001, 0.002, 0.0005), numeric(3)))
  list(alpha = alpha, P = P, m = m, rc = rc, Ic = Ic, qlim = c(170, 120, 170, 120, 170, 120, 170) * pi / 180)
}

# row-wise cross product of n x 3 matrices
cross3 <- function(a, b) cbind(a[, 2] * b[, 3] - a[, 3] * b[, 2], a[, 3] * b[, 1] - a[, 1] * b[, 3],
                               a[, 1] * b[, 2] - a[, 2] * b[, 1])
# R = Rx(alpha) Rz(q): R' v and R v, row-wise
rot_t <- function(al, q, v) {
  ca <- cos(al); sa <- sin(al); cq <- cos(q); sq <- sin(q)
  cbind(cq * v[, 1] + ca * sq * v[, 2] + sa * sq * v[, 3], -sq * v[, 1] + ca * cq * v[, 2] + sa * cq * v[, 3],
        -sa * v[, 2] + ca * v[, 3])
}
rot <- function(al, q, v) {
  ca <- cos(al); sa <- sin(al); cq <- cos(q); sq <- sin(q)
  cbind(cq * v[, 1] - sq * v[, 2], ca * sq * v[, 1] + ca * cq * v[, 2] - sa * v[, 3],
        sa * sq * v[, 1] + sa * cq * v[, 2] + ca * v[, 3])
}

# Rigid-body torques (n x 7) for positions, velocities, accelerations (n x 7).
arm_rnea <- function(q, qd, qdd, par = arm_params(), g = 9.81) {
  n <- nrow(q)
  z <- matrix(0, n, 3)
  w <- wd <- z
  vd <- matrix(rep(c(0, 0, g), each = n), n)
  Fs <- Ns <- vector("list", 7)
  for (i in 1:7) {
    Pm <- matrix(par$P[i, ], n, 3, byrow = TRUE)
    vd <- rot_t(par$alpha[i], q[, i], cross3(wd, Pm) + cross3(w, cross3(w, Pm)) + vd)
    wr <- rot_t(par$alpha[i], q[, i], w)
    wdr <- rot_t(par$alpha[i], q[, i], wd)
    w <- wr; w[, 3] <- w[, 3] + qd[, i]
    wd <- wdr + cross3(wr, cbind(0, 0, qd[, i])); wd[, 3] <- wd[, 3] + qdd[, i]
    rc <- matrix(par$rc[i, ], n, 3, byrow = TRUE)
    vc <- cross3(wd, rc) + cross3(w, cross3(w, rc)) + vd
    Fs[[i]] <- par$m[i] * vc
    Iw <- sweep(w, 2, par$Ic[i, ], `*`)
    Ns[[i]] <- sweep(wd, 2, par$Ic[i, ], `*`) + cross3(w, Iw)
  }
  f <- nn <- z
  tau <- matrix(0, n, 7)
  for (i in 7:1) {
    if (i < 7) { Rf <- rot(par$alpha[i + 1], q[, i + 1], f); Rn <- rot(par$alpha[i + 1], q[, i + 1], nn) }
    else { Rf <- z; Rn <- z }
    Pn <- matrix(if (i < 7) par$P[i + 1, ] else c(0, 0, 0), n, 3, byrow = TRUE)
    rc <- matrix(par$rc[i, ], n, 3, byrow = TRUE)
    f <- Rf + Fs[[i]]
    nn <- Ns[[i]] + Rn + cross3(rc, Fs[[i]]) + cross3(Pn, Rf)
    tau[, i] <- nn[, 3]
  }
  tau
}

# Rhythmic trajectories: 10-s segments at 100 Hz, three sines per joint at a
# speed drawn from {0.5, 0.75, 1, 1.25, 1.5}; analytic derivatives.
arm_trajectories <- function(segments, par = arm_params(), hz = 100, seconds = 10) {
  t <- seq(0, seconds, length.out = hz * seconds + 1)[-1]
  out <- lapply(seq_len(segments), function(s) {
    v <- sample(c(0.5, 0.75, 1, 1.25, 1.5), 1)
    q <- qd <- qdd <- matrix(0, length(t), 7)
    for (i in 1:7) {
      q[, i] <- stats::runif(1, -0.4, 0.4) * par$qlim[i]
      for (k in 1:3) {
        A <- stats::runif(1, 0.1, 0.4); om <- 2 * pi * stats::runif(1, 0.05, 0.5) * v; ph <- stats::runif(1, 0, 2 * pi)
        q[, i] <- q[, i] + A * sin(om * t + ph)
        qd[, i] <- qd[, i] + A * om * cos(om * t + ph)
        qdd[, i] <- qdd[, i] - A * om^2 * sin(om * t + ph)
      }
    }
    cbind(q, qd, qdd)
  })
  do.call(rbind, out)
}

# One data set of the paper's size: 197920 rows (178128 train, 19792 test),
# noise sd = noise * sd(clean torque) per joint.  Columns q1..q7, qd1..qd7,
# qdd1..qdd7, tau1..tau7, and a logical column `test`.
arm_data <- function(seed = 1, rows = 197920, noise = 0.1, payload = 0) {
  old <- if (exists(".Random.seed", globalenv())) get(".Random.seed", globalenv())
  on.exit(if (!is.null(old)) assign(".Random.seed", old, globalenv()))
  set.seed(seed)
  par <- arm_params(payload)
  X <- arm_trajectories(ceiling(rows / 1000), par)[seq_len(rows), ]
  Fv <- stats::runif(7, 0.5, 2); Fc <- stats::runif(7, 0.5, 2)
  qd <- X[, 8:14]
  tau <- arm_rnea(X[, 1:7], qd, X[, 15:21], par) + sweep(qd, 2, Fv, `*`) + sweep(tanh(qd / 0.02), 2, Fc, `*`)
  tau <- tau + sweep(matrix(stats::rnorm(length(tau)), nrow(tau)), 2, noise * apply(tau, 2, stats::sd), `*`)
  d <- data.frame(X, tau)
  names(d) <- c(paste0("q", 1:7), paste0("qd", 1:7), paste0("qdd", 1:7), paste0("tau", 1:7))
  d$test <- seq_len(rows) %in% sample.int(rows, round(0.1 * rows))
  d[sample.int(rows), ]
}

# The simulator's tests: M(q) symmetric positive definite, tau(q, qd, qdd) -
# tau(q, qd, 0) = M(q) qdd, and energy balance d/dt [kinetic + potential] =
# qd' tau along a trajectory (central differences).
arm_check <- function() {
  set.seed(7)
  par <- arm_params()
  q <- matrix(stats::runif(7, -1, 1), 1); qd <- matrix(stats::rnorm(7), 1); qdd <- matrix(stats::rnorm(7), 1)
  mass <- function(q) sapply(1:7, function(j) arm_rnea(q, q * 0, matrix(diag(7)[j, ], 1), par, g = 0))
  M <- mass(q)
  stopifnot(max(abs(M - t(M))) < 1e-12 * max(abs(M)), min(eigen(M, symmetric = TRUE)$values) > 0)
  stopifnot(max(abs(arm_rnea(q, qd, qdd, par) - arm_rnea(q, qd, qdd * 0, par) - drop(M %*% drop(qdd)))) < 1e-10)
  # potential energy from forward kinematics: g * sum_i m_i z of the centre of mass
  potential <- function(q) {
    T <- diag(4); V <- 0
    for (i in 1:7) {
      al <- par$alpha[i]
      Rx <- rbind(c(1, 0, 0), c(0, cos(al), -sin(al)), c(0, sin(al), cos(al)))
      Rz <- rbind(c(cos(q[i]), -sin(q[i]), 0), c(sin(q[i]), cos(q[i]), 0), c(0, 0, 1))
      A <- diag(4); A[1:3, 1:3] <- Rx %*% Rz; A[1:3, 4] <- par$P[i, ]
      T <- T %*% A
      V <- V + 9.81 * par$m[i] * (T %*% c(par$rc[i, ], 1))[3]
    }
    V
  }
  tr <- function(t) {
    cbind(0.3 * sin(1.3 * t + 1:7), 0.3 * 1.3 * cos(1.3 * t + 1:7), -0.3 * 1.69 * sin(1.3 * t + 1:7))
  }
  energy <- function(t) { s <- tr(t); qq <- matrix(s[, 1], 1); 0.5 * drop(s[, 2] %*% mass(qq) %*% s[, 2]) + potential(s[, 1]) }
  t0 <- 0.4; h <- 1e-4; s <- tr(t0)
  power <- sum(s[, 2] * arm_rnea(matrix(s[, 1], 1), matrix(s[, 2], 1), matrix(s[, 3], 1), par))
  dE <- (energy(t0 + h) - energy(t0 - h)) / (2 * h)
  stopifnot(abs(dE - power) < 1e-6 * max(1, abs(power)))
  invisible(c(dE = dE, power = power))
}
