// scalegp: header-only C++ core (no R headers).  Include this file.
#pragma once
#include "anova.hpp"
#include "components.hpp"
#include "inducing.hpp"
#include "kernels.hpp"
#include "likelihoods.hpp"
#include "linalg.hpp"
#include "optim.hpp"
#include "parallel.hpp"
#include "sparse.hpp"
#include "svgp.hpp"
#include "ep.hpp"
