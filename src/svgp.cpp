// Rcpp glue of the variational engine (inst/include/scalegp/svgp.hpp): reads
// the engine's options, runs the fit on RcppParallel, returns a plain list.
#include "glue.h"

// [[Rcpp::depends(RcppEigen, RcppParallel)]]

using namespace scalegp;
using namespace glue;

// The options of inference = "vi" (R: vi_options()).
static SvgpSettings svgp_settings_from(const Rcpp::List& o) {
  SvgpSettings s;
  s.natgrad_step = Rcpp::as<double>(o["natgrad_step"]);
  s.meanfield = Rcpp::as<bool>(o["meanfield"]);
  s.rank = Rcpp::as<int>(o["rank"]);
  s.lbfgs = Rcpp::as<bool>(o["lbfgs"]);
  s.discrete = Rcpp::as<bool>(o["discrete"]);
  s.bins = Rcpp::as<double>(o["bins"]);
  return s;
}

// ---- discretised covariates from the shards of a cluster (R: engine-vi.R) ------------
// A worker's shard goes through three calls: its distinct values (exact, or
// rounded as the master says), then its sums by value per group of rows.
// The master merges values (.discrete_merge) and adds the group sums in
// order (discrete_from_shards), so the DiscreteData equals discretise()'s on
// all rows.

static std::vector<VectorXd> vectors_from(const Rcpp::List& l) {
  std::vector<VectorXd> out;
  for (R_xlen_t i = 0; i < l.size(); ++i) out.push_back(Rcpp::as<VectorXd>(l[i]));
  return out;
}
static Rcpp::List vectors_to(const std::vector<VectorXd>& v) {
  Rcpp::List out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = Rcpp::wrap(v[i]);
  return out;
}

// The rules of the components: exact, or rounded over round[[c]] = list(lo, hi).
static std::vector<KeyRule> rules_from(const std::vector<Component>& comps, double bins, const Rcpp::List& round) {
  std::vector<KeyRule> rules;
  for (std::size_t c = 0; c < comps.size(); ++c) {
    rules.push_back(key_rule(comps[c], bins));
    if (round.size() > 0 && !Rf_isNull(round[c])) {
      const Rcpp::List r = round[c];
      round_rule(rules.back(), Rcpp::as<std::vector<double>>(r["lo"]), Rcpp::as<std::vector<double>>(r["hi"]));
    }
  }
  return rules;
}

// A shard's distinct values per component, with the ranges of its rounded
// inputs; under an exact rule `values` is NULL when there are more than the
// grid has points (the component must be rounded).
// [[Rcpp::export(.discrete_shard_values)]]
Rcpp::List discrete_shard_values(Eigen::Map<Eigen::MatrixXd> X, Rcpp::List specs, double bins, Rcpp::List round) {
  try {
    const std::vector<Component> comps = components_from(specs);
    const std::vector<KeyRule> rules = rules_from(comps, bins, round);
    Rcpp::List out(comps.size());
    for (std::size_t c = 0; c < comps.size(); ++c) {
      const KeyRule& r = rules[c];
      std::vector<double> lo, hi;
      key_range(r, X, lo, hi);
      const bool exact = !r.rounded();
      out[c] = Rcpp::List::create(
          Rcpp::Named("lo") = lo, Rcpp::Named("hi") = hi,
          Rcpp::Named("values") = exact && exact_too_many(r, X) ? R_NilValue : Rcpp::wrap(rule_values(r, X, nullptr)));
    }
    return out;
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}

// The values of all shards: per component the union of theirs, or, where a
// component must be rounded and was not yet (round[[c]] NULL), its range
// over all shards (round) and no values (again = TRUE: ask the shards for
// their rounded values).
// [[Rcpp::export(.discrete_merge)]]
Rcpp::List discrete_merge(Rcpp::List specs, double bins, Rcpp::List round, Rcpp::List shard_values) {
  try {
    const std::vector<Component> comps = components_from(specs);
    const std::vector<KeyRule> rules = rules_from(comps, bins, round);
    Rcpp::List values(comps.size()), new_round(comps.size());
    bool again = false;
    for (std::size_t c = 0; c < comps.size(); ++c) {
      const KeyRule& r = rules[c];
      if (round.size() > 0 && !Rf_isNull(round[c])) new_round[c] = round[c];
      std::vector<MatrixXd> parts;
      std::vector<double> lo(r.n_round, std::numeric_limits<double>::infinity()),
          hi(r.n_round, -std::numeric_limits<double>::infinity());
      bool missing = false;
      for (R_xlen_t s = 0; s < shard_values.size(); ++s) {
        const Rcpp::List v = Rcpp::List(shard_values[s])[c];
        const std::vector<double> l = Rcpp::as<std::vector<double>>(v["lo"]), h = Rcpp::as<std::vector<double>>(v["hi"]);
        for (std::size_t j = 0; j < r.n_round; ++j) {
          lo[j] = std::min(lo[j], l[j]);
          hi[j] = std::max(hi[j], h[j]);
        }
        if (Rf_isNull(v["values"])) missing = true;
        else parts.push_back(Rcpp::as<MatrixXd>(v["values"]));
      }
      const bool exact = !r.rounded();
      MatrixXd U;
      if (!missing) U = union_keys(parts, r.dk());
      if (exact && (missing || r.too_many(static_cast<double>(U.rows())))) {
        new_round[c] = Rcpp::List::create(Rcpp::Named("lo") = lo, Rcpp::Named("hi") = hi);
        again = true;
      } else {
        values[c] = U;
      }
    }
    return Rcpp::List::create(Rcpp::Named("round") = new_round, Rcpp::Named("values") = values,
                              Rcpp::Named("again") = again);
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}

// A shard's sums by value and pair of values, one list per group of rows
// (bounds: the groups' boundaries within the shard).
// [[Rcpp::export(.discrete_shard_sums)]]
Rcpp::List discrete_shard_sums(Eigen::Map<Eigen::MatrixXd> X, Eigen::Map<Eigen::VectorXd> y,
                               Eigen::Map<Eigen::VectorXd> w, Eigen::Map<Eigen::VectorXd> offset, Rcpp::List specs,
                               double bins, Rcpp::List round, Rcpp::List values, std::vector<double> bounds) {
  try {
    const std::vector<Component> comps = components_from(specs);
    const std::vector<KeyRule> rules = rules_from(comps, bins, round);
    const std::size_t C = comps.size();
    std::vector<std::vector<int>> id(C);
    std::vector<Index> D(C);
    for (std::size_t c = 0; c < C; ++c) {
      const MatrixXd U = Rcpp::as<MatrixXd>(values[c]);
      id[c] = global_ids(rules[c], X, U);
      D[c] = U.rows();
    }
    Rcpp::List out(bounds.size() - 1);
    for (std::size_t g = 0; g + 1 < bounds.size(); ++g) {
      const DiscreteSums s = range_sums(id, D, y, w, offset, static_cast<std::size_t>(bounds[g]),
                                        static_cast<std::size_t>(bounds[g + 1]), true);
      Rcpp::List pairs(s.pair.size());
      for (std::size_t q = 0; q < s.pair.size(); ++q) {
        Rcpp::NumericMatrix e(static_cast<int>(s.pair[q].size()), 3);
        for (std::size_t t = 0; t < s.pair[q].size(); ++t) {
          e(t, 0) = s.pair[q][t].row();
          e(t, 1) = s.pair[q][t].col();
          e(t, 2) = s.pair[q][t].value();
        }
        pairs[q] = e;
      }
      out[g] = Rcpp::List::create(Rcpp::Named("count") = vectors_to(s.count), Rcpp::Named("wy") = vectors_to(s.wy),
                                  Rcpp::Named("rows") = vectors_to(s.rows), Rcpp::Named("pair") = pairs,
                                  Rcpp::Named("n_pos") = s.n_pos, Rcpp::Named("sum_log_w") = s.sum_log_w,
                                  Rcpp::Named("wyy") = s.wyy);
    }
    return out;
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}

// The DiscreteData of list(round, values, bins, sums = the shards' group sums, in row order).
static DiscreteData discrete_from_shards(const std::vector<Component>& comps, const Rcpp::List& d, Index p) {
  const std::vector<KeyRule> rules = rules_from(comps, Rcpp::as<double>(d["bins"]), d["round"]);
  const Rcpp::List values = d["values"], sums = d["sums"];
  std::vector<MatrixXd> U;
  for (std::size_t c = 0; c < comps.size(); ++c) U.push_back(Rcpp::as<MatrixXd>(values[c]));
  DiscreteSums total;
  for (R_xlen_t g = 0; g < sums.size(); ++g) {
    const Rcpp::List s = sums[g];
    DiscreteSums part;
    part.count = vectors_from(s["count"]);
    part.wy = vectors_from(s["wy"]);
    part.rows = vectors_from(s["rows"]);
    part.n_pos = Rcpp::as<double>(s["n_pos"]);
    part.sum_log_w = Rcpp::as<double>(s["sum_log_w"]);
    part.wyy = Rcpp::as<double>(s["wyy"]);
    const Rcpp::List pairs = s["pair"];
    for (R_xlen_t q = 0; q < pairs.size(); ++q) {
      const Rcpp::NumericMatrix e = pairs[q];
      std::vector<Eigen::Triplet<double>> t;
      t.reserve(static_cast<std::size_t>(e.nrow()));
      for (int r = 0; r < e.nrow(); ++r) t.emplace_back(static_cast<int>(e(r, 0)), static_cast<int>(e(r, 1)), e(r, 2));
      part.pair.push_back(std::move(t));
    }
    add_sums(total, std::move(part), kDenseCells);
  }
  return discrete_data(rules, U, p, std::move(total));
}

// ---- the row pass of a discretised fit on the workers of a cluster (R: engine-vi.R) ----
// Other likelihoods than Gaussian: the master sends each worker its rows'
// keys once (remote("init", keys, C)), then per evaluation the parts of the
// rows' moments and the likelihood's parameters (remote("rows", parts,
// stats, gradient)); each worker
// returns the sums of its groups of rows (.discrete_row_sums()), and the
// master adds the groups in order (DataPass::evaluate_discrete_rows()).

static Rcpp::List groups_to(const std::vector<RowGroupSums>& groups) {
  Rcpp::List out(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const RowGroupSums& s = groups[g];
    out[g] = Rcpp::List::create(Rcpp::Named("v") = s.v, Rcpp::Named("dn") = s.dn, Rcpp::Named("ddf") = s.ddf,
                                Rcpp::Named("positive") = s.positive, Rcpp::Named("g") = vectors_to(s.g),
                                Rcpp::Named("gq") = vectors_to(s.gq), Rcpp::Named("raw") = vectors_to(s.raw));
  }
  return out;
}
static RowGroupSums group_from(const Rcpp::List& l) {
  RowGroupSums s;
  s.v = Rcpp::as<double>(l["v"]);
  s.dn = Rcpp::as<double>(l["dn"]);
  s.ddf = Rcpp::as<double>(l["ddf"]);
  s.positive = Rcpp::as<bool>(l["positive"]);
  s.g = vectors_from(l["g"]);
  s.gq = vectors_from(l["gq"]);
  s.raw = vectors_from(l["raw"]);
  return s;
}
static Rcpp::List parts_to(const DiscreteRowParts& p) {
  return Rcpp::List::create(Rcpp::Named("mv") = vectors_to(p.mv), Rcpp::Named("vd") = vectors_to(p.vd),
                            Rcpp::Named("vp") = vectors_to(p.vp), Rcpp::Named("var") = p.var,
                            Rcpp::Named("pairs") = p.pairs);
}
static DiscreteRowParts parts_from(const Rcpp::List& l) {
  DiscreteRowParts p;
  p.mv = vectors_from(l["mv"]);
  p.vd = vectors_from(l["vd"]);
  p.vp = vectors_from(l["vp"]);
  p.var = Rcpp::as<bool>(l["var"]);
  p.pairs = Rcpp::as<bool>(l["pairs"]);
  return p;
}
// The data of an integer vector of length n, held by its R object (no copy).
static const int* int_data(SEXP x, std::size_t n) {
  if (TYPEOF(x) != INTSXP || static_cast<std::size_t>(XLENGTH(x)) != n)
    throw std::invalid_argument("row keys must be integer vectors of the shard's length");
  return INTEGER(x);
}
static RowKeys keys_from(const Rcpp::List& keys, int C, std::size_t n) {
  RowKeys k;
  k.C = static_cast<std::size_t>(C);
  for (R_xlen_t s = 0; s < keys.size(); ++s) k.key.push_back(int_data(keys[s], n));
  return k;
}
static std::vector<std::size_t> bounds_from(const std::vector<double>& b) {
  std::vector<std::size_t> out;
  for (double x : b) out.push_back(static_cast<std::size_t>(x));
  return out;
}

// A worker's index of its rows' keys by group (bounds: the groups'
// boundaries within its rows): list(loc = per stream, size = per group).
// [[Rcpp::export(.discrete_row_index)]]
Rcpp::List discrete_row_index(Rcpp::List keys, int C, std::vector<double> bounds) {
  try {
    const std::vector<std::size_t> b = bounds_from(bounds);
    const RowGroupIndex gi = row_group_index(keys_from(keys, C, b.back()), b, serial_for);
    Rcpp::List loc(gi.loc.size()), size(gi.idx.size());
    for (std::size_t s = 0; s < gi.loc.size(); ++s) loc[s] = Rcpp::wrap(gi.loc[s]);
    const std::vector<std::vector<Index>> sz = row_group_sizes(gi);
    for (std::size_t g = 0; g < sz.size(); ++g) size[g] = Rcpp::IntegerVector(sz[g].begin(), sz[g].end());
    return Rcpp::List::create(Rcpp::Named("loc") = loc, Rcpp::Named("size") = size);
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}

// A worker's sums over its groups of rows (row_groups_sums()).
// [[Rcpp::export(.discrete_row_sums)]]
Rcpp::List discrete_row_sums(Eigen::Map<Eigen::VectorXd> y, Eigen::Map<Eigen::VectorXd> w,
                             Eigen::Map<Eigen::VectorXd> offset, Rcpp::List keys, int C, Rcpp::List index,
                             std::vector<double> bounds, std::string family, int gh_points, Rcpp::List parts,
                             bool stats, bool gradient, int threads) {
  try {
    const std::vector<std::size_t> b = bounds_from(bounds);
    const std::size_t n = b.back();
    if (static_cast<std::size_t>(y.size()) != n) throw std::invalid_argument("a shard's rows do not match its groups");
    const RowKeys k = keys_from(keys, C, n);
    const Rcpp::List locl = index["loc"], sizel = index["size"];
    std::vector<const int*> loc;
    for (R_xlen_t s = 0; s < locl.size(); ++s) loc.push_back(int_data(locl[s], n));
    std::vector<std::vector<Index>> size;
    for (R_xlen_t g = 0; g < sizel.size(); ++g) {
      const Rcpp::IntegerVector z = sizel[g];
      size.emplace_back(z.begin(), z.end());
    }
    Likelihood lik(family_from_string(family), gh_points);
    lik.log_noise = Rcpp::as<double>(parts["log_noise"]);
    lik.log_df = Rcpp::as<double>(parts["log_df"]);
    lik.min_df = Rcpp::as<double>(parts["min_df"]);
    const DiscreteRowParts p = parts_from(parts);
    std::vector<RowGroupSums> groups;
    row_groups_sums(p, k, loc, size, b, lik, y.data(), w.data(), offset.data(), stats, gradient, make_pfor(threads),
                    groups);
    return groups_to(groups);
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}

// `shards` (Gaussian): the discretised sums of the shards of a cluster;
// `remote` (other likelihoods): the R function that runs the row pass on
// its workers (above).
// [[Rcpp::export(.svgp_fit)]]
Rcpp::List svgp_fit(Eigen::Map<Eigen::MatrixXd> X, Eigen::Map<Eigen::VectorXd> y,
                    Eigen::Map<Eigen::VectorXd> w, Eigen::Map<Eigen::VectorXd> offset, Rcpp::List specs,
                    std::string family, double log_noise, Rcpp::List control, Rcpp::List options, int threads,
                    double seed, Rcpp::Function monitor, Rcpp::Nullable<Rcpp::List> shards,
                    Rcpp::Nullable<Rcpp::Function> remote,
                    Rcpp::Nullable<Rcpp::NumericVector> fitted_offset = R_NilValue) {
  try {
    Svgp model(components_from(specs), likelihood_from(family, control, log_noise), settings_from(control), svgp_settings_from(options), X.data(),
               static_cast<std::size_t>(X.rows()), static_cast<std::size_t>(X.cols()), y.data(), w.data(),
               offset.data());
    if (shards.isNotNull()) model.data().use_discrete_data(discrete_from_shards(model.comps, Rcpp::List(shards), X.cols()));
    std::unique_ptr<Rcpp::Function> call;
    std::size_t keys_sent = 0;  // (the discretisation whose keys the workers hold: resent when there is a new one)
    if (remote.isNotNull()) {
      call.reset(new Rcpp::Function(remote.get()));
      model.data().set_remote_rows([&](const DiscreteRowParts& p, bool stats, bool gradient) {
        if (keys_sent != model.data().discrete_version()) {
          const RowKeys k = model.data().row_keys();
          Rcpp::List keys(k.key.size());
          for (std::size_t s = 0; s < k.key.size(); ++s)
            keys[s] = Rcpp::IntegerVector(k.key[s], k.key[s] + model.n());
          (*call)("init", keys, static_cast<int>(k.C));
          keys_sent = model.data().discrete_version();
        }
        Rcpp::List parts = parts_to(p);
        parts["log_noise"] = model.lik.log_noise;
        parts["log_df"] = model.lik.log_df;
        parts["min_df"] = model.lik.min_df;
        const Rcpp::List groups = (*call)("rows", parts, stats, gradient);
        std::vector<RowGroupSums> out;
        for (R_xlen_t g = 0; g < groups.size(); ++g) out.push_back(group_from(groups[g]));
        return out;
      });
    }
    Rng rng(static_cast<std::uint64_t>(seed));
    const ParallelFor pfor = make_pfor(threads);  // one thread pool for the fit and its sums
    const FitInfo info = model.fit(pfor, rng, monitor_from(monitor));
    Rcpp::List out = fit_result(model, info, specs);
    out["log_noise"] = model.lik.log_noise;
    if (model.lik.has_df()) out["log_df"] = model.lik.log_df;
    out["kl"] = model.kl();
    out["rank_loss"] = model.rank_loss();
    out["discrete"] = model.data().discrete();
    out["passes"] = static_cast<double>(model.data().passes());
    out["exact_objective"] = model.exact_objective();
    if (model.data().discrete()) out["feature_means"] = model.data().discrete_feature_means(pfor);
    if (model.data().discrete() && shards.isNull()) {
      // the fitted latent predictor: the rows' own values (nothing rounded),
      // else their means at their inputs and variances at their rounded values
      const bool var = model.lik.family != Family::gaussian;
      Eigen::VectorXd mean, variance;
      if (model.data().discrete_rows() || var) model.data().discrete_row_moments(var, mean, variance, pfor);
      if (!model.data().discrete_rows()) mean = model.data().row_means_at_inputs(pfor);
      out["row_mean"] = mean;
      if (variance.size() > 0) out["row_var"] = variance;
    }
    if (!model.data().discrete())
      add_row_summaries(out, model, X, fitted_offset, model.lik.family != Family::gaussian, pfor);
    return out;
  } catch (const std::exception& e) {
    Rcpp::stop(e.what());
  }
}
