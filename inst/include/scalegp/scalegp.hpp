// scalegp: header-only C++ core (no R headers).  Include this file.
//   linalg, kernels, anova, components   the pieces of the additive model
//   likelihoods, optim, parallel, inducing
//   settings, model                      the model every engine shares
//   gaussian_q                           the whitened Gaussian q of the VI and EP engines
//   fit_loop                             the drivers: Adam fit loop and L-BFGS/BFGS profile fit
//   discrete, discrete_rows, data_pass   the pass over the data of the VI engines (rows,
//                                        discretised values, workers of a cluster)
//   natural_q                            q of the VI engines and its natural-gradient updates
//   svgp                                 engine: sparse variational GP
//   decoupled                            engine: decoupled variational GP (natural_q + mean bases)
//   ep (ep_site, ep_model, ep_minibatch) engine: expectation propagation
//   qsgp                                 engine: quadruply stochastic GP on random Fourier features
//   dgp                                  deep GPs by approximate EP (its own front function, dgp())
#pragma once
#include "anova.hpp"
#include "components.hpp"
#include "inducing.hpp"
#include "kernels.hpp"
#include "likelihoods.hpp"
#include "linalg.hpp"
#include "optim.hpp"
#include "parallel.hpp"
#include "settings.hpp"
#include "model.hpp"
#include "gaussian_q.hpp"
#include "fit_loop.hpp"
#include "discrete_rows.hpp"
#include "data_pass.hpp"
#include "natural_q.hpp"
#include "svgp.hpp"
#include "decoupled.hpp"
#include "ep.hpp"
#include "qsgp.hpp"
#include "dgp.hpp"
