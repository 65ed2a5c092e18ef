# The seven data sets of seed 001's Table 1 as data frames with numeric
# inputs x1, x2, ... and a 0/1 response y.  Australian and Heart come from
# ../shared/data/uci-classification (or $SCALEGP_SHARED/data/...), the others
# from mlbench and MASS.
shared <- Sys.getenv("SCALEGP_SHARED", file.path("..", "shared"))
load_set <- function(name) {
  env <- new.env()
  d <- switch(name,
    Australian = {
      a <- utils::read.table(file.path(shared, "data", "uci-classification", "australian.dat"))
      data.frame(a[, 1:14], y = a[, 15])
    },
    Heart = {
      h <- utils::read.table(file.path(shared, "data", "uci-classification", "heart.dat"), header = TRUE)
      data.frame(h[, names(h) != "Class"], y = as.numeric(h$Class == 2))
    },
    Breast = {
      utils::data("BreastCancer", package = "mlbench", envir = env)
      b <- stats::na.omit(env$BreastCancer[, -1])
      data.frame(lapply(b[, 1:9], function(v) as.numeric(as.character(v))), y = as.numeric(b$Class == "malignant"))
    },
    Ionosphere = {
      utils::data("Ionosphere", package = "mlbench", envir = env)
      i <- env$Ionosphere
      data.frame(V1 = as.numeric(as.character(i$V1)), i[, 3:34], y = as.numeric(i$Class == "good"))  # V2 is constant
    },
    Pima = {
      utils::data("PimaIndiansDiabetes", package = "mlbench", envir = env)
      p <- env$PimaIndiansDiabetes
      data.frame(p[, 1:8], y = as.numeric(p$diabetes == "pos"))
    },
    Sonar = {
      utils::data("Sonar", package = "mlbench", envir = env)
      s <- env$Sonar
      data.frame(s[, 1:60], y = as.numeric(s$Class == "M"))
    },
    Crabs = {
      c <- MASS::crabs
      data.frame(sex = as.numeric(c$sex == "M"), c[, c("FL", "RW", "CL", "CW", "BD")], y = as.numeric(c$sp == "O"))
    })
  names(d)[names(d) != "y"] <- paste0("x", seq_len(ncol(d) - 1))
  d
}

# y ~ gp(x1, x2, ..., kernel = "se"): one GP term over every input of a data set
# from load_set(), with the paper's SE-ARD kernel (gp()'s default is Matern 5/2).
gp_formula <- function(d) stats::as.formula(paste("y ~ gp(", paste(setdiff(names(d), "y"), collapse = ", "), ", kernel = \"se\")"))
