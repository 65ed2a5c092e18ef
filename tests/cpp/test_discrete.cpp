// Discretised covariates (discrete.hpp, DataPass::evaluate_discrete): the sums
// over distinct values equal the sums over rows.
#include "fixtures.hpp"

using namespace fixtures;

namespace {

// Gaussian data whose inputs take few distinct values (so rows share values),
// with a factor in column 3, zero and non-unit weights.
Data coarse_data(std::size_t n, unsigned seed, int levels_x) {
  Data d = make_data(n, Family::gaussian, seed);
  d.X.conservativeResize(static_cast<Index>(n), 4);
  for (Index i = 0; i < d.X.rows(); ++i) {
    for (Index j = 0; j < 2; ++j) d.X(i, j) = std::round(d.X(i, j) * levels_x / 4.0) * 4.0 / levels_x;
    d.X(i, 3) = static_cast<double>((i * 7) % 5);
    if (i % 11 == 4) d.w(i) = 0.0;
  }
  return d;
}

// GP(x1) + GP(x2) by x1 + centred GP(x1, x2) + factor + intercept.
std::vector<Component> model_components() {
  Component a = gp_component(KernelType::se, false, uniform_matrix(6, 1, 31, -2, 2), {0});
  Component b = gp_component(KernelType::matern32, false, uniform_matrix(5, 1, 32, -2, 2), {1});
  b.by_col = 0;
  Component fac;
  fac.kind = Kind::factor;
  fac.cols = {3};
  fac.levels = 5;
  fac.kernel.log_var = std::log(0.5);
  return {a, b, centred_component(KernelType::matern52, true, uniform_matrix(7, 2, 33, -2, 2)), fac, linear_component({2}, VectorXd::Constant(1, 2.0))};
}

// Matern 5/2 Hilbert terms over columns 0, 1 and over columns 2, 0, 1 (by
// column 2), and a linear one.
Component hilbert_term(std::vector<Index> cols, std::vector<Index> m, int by) {
  Component c;
  c.kind = Kind::hilbert;
  c.cols = std::move(cols);
  const Index d = static_cast<Index>(m.size());
  c.kernel.type = KernelType::matern52;
  c.kernel.log_var = std::log(0.6);
  c.kernel.log_ls = VectorXd::LinSpaced(d, std::log(0.8), std::log(1.3));
  c.basis.centre = VectorXd::Zero(d);
  c.basis.L = VectorXd::Constant(d, 3.5);
  c.basis.m = std::move(m);
  c.by_col = by;
  return c;
}
std::vector<Component> hilbert_components() {
  return {hilbert_term({0, 1}, {6, 5}, -1), hilbert_term({2, 0, 1}, {3, 4, 3}, 2),
          linear_component({2}, VectorXd::Constant(1, 2.0))};
}

Svgp make(const Data& d, std::vector<Component> comps, bool discrete, double bins, Settings set = Settings(),
          Family family = Family::gaussian) {
  Likelihood lik(family);
  lik.log_noise = std::log(0.2);
  SvgpSettings opt;
  opt.discrete = discrete;
  opt.bins = bins;
  return Svgp(std::move(comps), lik, set, opt, d.X.data(), d.n(), static_cast<std::size_t>(d.X.cols()), d.y.data(),
              d.w.data(), d.o.data());
}

void random_q(Svgp& s, unsigned seed) {
  const Index Mt = s.total_size();
  const MatrixXd B = uniform_matrix(Mt, Mt, seed, -1.0, 1.0);
  s.P = MatrixXd::Identity(Mt, Mt) + 2.0 * B * B.transpose() / static_cast<double>(Mt);
  s.h = uniform_matrix(Mt, 1, seed + 1, -1.0, 1.0);
  s.refresh();
}

// The response of `d` replaced by a binary (logit, probit) or count
// (poisson) one drawn around its Gaussian response.
Data with_family(Data d, Family family) {
  for (Index i = 0; i < d.y.size(); ++i) {
    const double u = std::fmod(std::abs(std::sin(12.9898 * static_cast<double>(i + 1))) * 43758.5453, 1.0);
    d.y(i) = family == Family::poisson ? std::floor(-std::log(1.0 - u) * std::exp(0.5 * d.y(i)) * 2.0)
                                       : (u < 1.0 / (1.0 + std::exp(-2.0 * d.y(i))) ? 1.0 : 0.0);
  }
  return d;
}

// Every statistic of a gradient pass, discretised (s) against rows (t).
void check_same_pass(Svgp& s, Svgp& t, double tol, const ParallelFor& pfor = serial_for) {
  random_q(s, 5);
  random_q(t, 5);
  const PassSums a = s.evaluate(nullptr, Pass::gradient, pfor);
  const PassSums b = t.evaluate(nullptr, Pass::gradient, serial_for);
  CHECK(std::abs(a.sum_v - b.sum_v) <= tol * std::abs(b.sum_v));
  CHECK(std::abs(a.dlognoise - b.dlognoise) <= tol * std::abs(b.dlognoise));
  check_all_close(a.r, b.r, tol, tol * b.r.cwiseAbs().maxCoeff());
  const MatrixXd Qa = a.Q.selfadjointView<Eigen::Lower>(), Qb = b.Q.selfadjointView<Eigen::Lower>();
  check_all_close(Qa, Qb, tol, tol * Qb.cwiseAbs().maxCoeff());
  const VectorXd ga = s.gradient(a, 1.0), gb = t.gradient(b, 1.0);
  REQUIRE(gb.cwiseAbs().maxCoeff() > 0);
  check_all_close(ga, gb, tol, tol * gb.cwiseAbs().maxCoeff());
}

}  // namespace

TEST_CASE("discretised sums equal the sums over rows (exact values)", "[discrete]") {
  const Data d = coarse_data(400, 81, 12);  // 13 values per input, 5 levels
  Svgp s = make(d, model_components(), 1, 0);
  Svgp t = make(d, model_components(), 0, 0);
  REQUIRE(s.data().use_discrete(true) > 0);
  REQUIRE(t.data().use_discrete(true) == 0);
  CHECK(s.data().discrete());
  check_same_pass(s, t, 1e-10);
  // feature means over all rows (weight-0 rows included)
  check_all_close(s.data().discrete_feature_means(serial_for), t.feature_means(serial_for), 1e-12, 1e-13);
  SECTION("sparse pair counts give the same sums") {
    Svgp u = make(d, model_components(), 1, 0);
    u.data().use_discrete(true, 0.0);
    check_same_pass(u, t, 1e-10);
  }
  SECTION("not used for minibatches") {
    Svgp v = make(d, model_components(), 1, 0);
    CHECK(v.data().use_discrete(false) == 0);
    CHECK_FALSE(v.data().discrete());
  }
}

TEST_CASE("discretised sums for binary and count responses equal the sums over rows", "[discrete]") {
  const Data g = coarse_data(400, 86, 12);
  for (Family f : {Family::logit, Family::probit, Family::poisson}) {
    INFO("family " << static_cast<int>(f));
    const Data d = with_family(g, f);
    Svgp s = make(d, model_components(), 1, 0, Settings(), f);
    Svgp t = make(d, model_components(), 0, 0, Settings(), f);
    REQUIRE(s.data().use_discrete(true) > 0);
    check_same_pass(s, t, 1e-10);
    check_same_pass(s, t, 1e-10, thread_for(3));
    SECTION("mean-field posterior") {
      SvgpSettings o;
      o.discrete = true;
      o.bins = 0;
      o.meanfield = true;
      Svgp u(model_components(), Likelihood(f), Settings(), o, d.X.data(), d.n(), 4, d.y.data(), d.w.data(),
             d.o.data());
      o.discrete = false;
      Svgp v(model_components(), Likelihood(f), Settings(), o, d.X.data(), d.n(), 4, d.y.data(), d.w.data(),
             d.o.data());
      u.data().use_discrete(true);
      random_q(u, 7);
      random_q(v, 7);
      // block-diagonal S: the pair terms vanish
      for (std::size_t c = 0; c < u.comps.size(); ++c)
        for (std::size_t l = 0; l < u.comps.size(); ++l)
          if (c != l) {
            u.S.block(u.offset_of(c), u.offset_of(l), u.comps[c].size(), u.comps[l].size()).setZero();
            v.S.block(v.offset_of(c), v.offset_of(l), v.comps[c].size(), v.comps[l].size()).setZero();
          }
      const PassSums a = u.evaluate(nullptr, Pass::gradient, serial_for);
      const PassSums b = v.evaluate(nullptr, Pass::gradient, serial_for);
      CHECK(std::abs(a.sum_v - b.sum_v) <= 1e-10 * std::abs(b.sum_v));
      const VectorXd ga = u.gradient(a, 1.0), gb = v.gradient(b, 1.0);
      check_all_close(ga, gb, 1e-10, 1e-10 * gb.cwiseAbs().maxCoeff());
    }
  }
}

TEST_CASE("discretised sums with Hilbert terms of two and three inputs equal the sums over rows", "[discrete]") {
  // Their Gram over distinct values comes from the product form of the basis
  // (hilbert_weighted_gram(): columns 0 and 1 take 13 values each, so it is
  // used); one term has a by column.
  const Data g = coarse_data(400, 88, 12);
  for (Family f : {Family::gaussian, Family::logit}) {
    INFO("family " << static_cast<int>(f));
    const Data d = f == Family::gaussian ? g : with_family(g, f);
    Svgp s = make(d, hilbert_components(), 1, 0, Settings(), f);
    Svgp t = make(d, hilbert_components(), 0, 0, Settings(), f);
    REQUIRE(s.data().use_discrete(true) > 0);
    check_same_pass(s, t, 1e-10);
    check_same_pass(s, t, 1e-10, thread_for(3));
  }
}

TEST_CASE("discretised sums for Gamma, negative binomial and scaled t responses equal the sums over rows",
          "[discrete]") {
  // (incl. the derivatives in the likelihood's own parameters, the log shape /
  // log theta / the t's log squared scale and log(df - min_df); the t keeps the
  // sign of E[l''] > 0 in Q)
  const Data g = coarse_data(400, 88, 12);
  for (Family f : {Family::gamma, Family::negbin, Family::scat}) {
    INFO("family " << static_cast<int>(f));
    Data d = with_family(g, Family::poisson);  // counts around exp(y / 2)
    if (f == Family::gamma)
      for (Index i = 0; i < d.y.size(); ++i) d.y(i) = 0.25 + 0.5 * d.y(i);  // positive
    Svgp s = make(d, model_components(), 1, 0, Settings(), f);
    Svgp t = make(d, model_components(), 0, 0, Settings(), f);
    REQUIRE(s.data().use_discrete(true) > 0);
    REQUIRE(s.n_theta() == s.n_hyper() + 1 + (f == Family::scat));
    check_same_pass(s, t, 1e-10);
    check_same_pass(s, t, 1e-10, thread_for(3));
  }
}

TEST_CASE("the row pass of a discretised fit split over shards of whole groups equals the pass in one process",
          "[discrete]") {
  // (what the workers of a cluster do, R: engine-vi.R vi_cluster_rows())
  const Data d = with_family(coarse_data(3000, 87, 40), Family::logit);
  Svgp s = make(d, model_components(), 1, 0, Settings(), Family::logit);
  Svgp t = make(d, model_components(), 1, 0, Settings(), Family::logit);
  REQUIRE(s.data().use_discrete(true) > 0);
  REQUIRE(t.data().use_discrete(true) > 0);
  const std::vector<std::size_t> b = group_bounds(d.n());
  REQUIRE(b.size() > 4);
  int calls = 0;
  t.data().set_remote_rows([&](const DiscreteRowParts& p, bool stats, bool gradient) {
    ++calls;
    const RowKeys all = t.data().row_keys();
    std::vector<RowGroupSums> out;
    for (std::size_t g0 : {std::size_t(0), std::size_t(3)}) {  // shards: groups [0, 3) and [3, G)
      const std::size_t g1 = g0 == 0 ? 3 : b.size() - 1, r0 = b[g0], r1 = b[g1];
      std::vector<std::vector<int>> keys;
      RowKeys k;
      k.C = all.C;
      for (const int* key : all.key) keys.emplace_back(key + r0, key + r1);
      for (const std::vector<int>& key : keys) k.key.push_back(key.data());
      std::vector<std::size_t> bs;
      for (std::size_t g = g0; g <= g1; ++g) bs.push_back(b[g] - r0);
      const RowGroupIndex gi = row_group_index(k, bs, serial_for);
      std::vector<const int*> loc;
      for (const std::vector<int>& l : gi.loc) loc.push_back(l.data());
      const Index n0 = static_cast<Index>(r0);
      const VectorXd y = d.y.segment(n0, static_cast<Index>(r1 - r0)), w = d.w.segment(n0, y.size()),
                     o = d.o.segment(n0, y.size());
      std::vector<RowGroupSums> part;
      row_groups_sums(p, k, loc, row_group_sizes(gi), bs, t.lik, y.data(), w.data(), o.data(), stats, gradient,
                      thread_for(2), part);
      for (RowGroupSums& g : part) out.push_back(std::move(g));
    }
    return out;
  });
  random_q(s, 5);
  random_q(t, 5);
  for (Pass pass : {Pass::elbo, Pass::natural, Pass::gradient}) {
    const PassSums a = s.evaluate(nullptr, pass, thread_for(3));
    const PassSums c = t.evaluate(nullptr, pass, serial_for);
    CHECK(a.sum_v == c.sum_v);
    CHECK(a.r == c.r);
    CHECK(a.Q == c.Q);
    if (pass == Pass::gradient) CHECK(s.gradient(a, 1.0) == t.gradient(c, 1.0));
  }
  CHECK(calls == 3);
  // and both equal the sums over the rows
  Svgp u = make(d, model_components(), 0, 0, Settings(), Family::logit);
  check_same_pass(t, u, 1e-10);
}

TEST_CASE("discretised sums with distinct inputs on every row", "[discrete]") {
  const Data d = make_data(300, Family::gaussian, 82);  // continuous inputs: D = n
  std::vector<Component> cs = {gp_component(KernelType::matern52, true, uniform_matrix(8, 2, 83, -2, 2)),
                               linear_component({2}, VectorXd::Constant(1, 2.0))};
  Svgp s = make(d, cs, 1, 0);
  Svgp t = make(d, cs, 0, 0);
  CHECK(s.data().use_discrete(true) == 300 + 1);
  check_same_pass(s, t, 1e-10);
}

TEST_CASE("rounded inputs: the fit of the rows with rounded inputs", "[discrete]") {
  Data d = make_data(500, Family::gaussian, 84);
  d.X.conservativeResize(500, 4);
  for (Index i = 0; i < 500; ++i) d.X(i, 3) = static_cast<double>(i % 3);
  const double bins = 20;
  // the same rounding by hand: 20 values over each input's range
  Data r = d;
  for (Index j = 0; j < 2; ++j) {
    const double lo = d.X.col(j).minCoeff(), hi = d.X.col(j).maxCoeff(), step = (hi - lo) / (bins - 1);
    for (Index i = 0; i < 500; ++i) r.X(i, j) = lo + std::round((d.X(i, j) - lo) / step) * step;
  }
  // (no 2-input term: it would use max(100, ...) values per input; no by
  // variable: those are never rounded)
  std::vector<Component> cs = model_components();
  cs[1].by_col = -1;
  cs.erase(cs.begin() + 2);
  Svgp s = make(d, cs, 1, bins);
  Svgp t = make(r, cs, 0, 0);
  CHECK(s.data().use_discrete(true) == 20 + 20 + 3 + 1);
  check_same_pass(s, t, 1e-10);
}

TEST_CASE("row_means_at_inputs: a rounded fit's latent means at the rows' own inputs", "[discrete]") {
  // 12000 rows: x1 rounded to 200 values; (x1, x2) of the centred term to
  // its 100 x 100 grid (more distinct pairs than grid points); the by term,
  // the factor and the linear term are evaluated at the rows
  const std::size_t n = 12000;
  Data d = make_data(n, Family::gaussian, 91);
  d.X.conservativeResize(static_cast<Index>(n), 4);
  for (Index i = 0; i < static_cast<Index>(n); ++i) d.X(i, 3) = static_cast<double>(i % 5);
  const std::vector<Component> cs = model_components();
  Svgp s = make(d, cs, 1, 200);
  REQUIRE(s.data().use_discrete(true) > 0);
  REQUIRE_FALSE(s.data().discrete_rows());
  random_q(s, 7);
  // every component at the rows, and at the rows' rounded inputs
  const auto round_to = [&](Index j, double k) {
    const double lo = d.X.col(j).minCoeff(), step = (d.X.col(j).maxCoeff() - lo) / (k - 1);
    return VectorXd(((d.X.col(j).array() - lo) / step).round() * step + lo);
  };
  MatrixXd X1 = d.X, X12 = d.X;
  X1.col(0) = round_to(0, 200);
  X12.col(0) = round_to(0, 100);
  X12.col(1) = round_to(1, 100);
  VectorXd exact = d.o, rounded = d.o;
  for (std::size_t c = 0; c < cs.size(); ++c) {
    const VectorXd mc = s.m.segment(s.offset_of(c), cs[c].size());
    exact += s.component_block_mean(c, d.X, mc);
    rounded += s.component_block_mean(c, c == 0 ? X1 : (c == 2 ? X12 : MatrixXd(d.X)), mc);
  }
  const VectorXd got = s.data().row_means_at_inputs(serial_for);
  const double scale = exact.cwiseAbs().maxCoeff();
  CHECK((got - exact).cwiseAbs().maxCoeff() < 1e-5 * scale);  // (measured 2.4e-6)
  // (the rounded inputs are far off: the check above sees whether they are used)
  CHECK((rounded - exact).cwiseAbs().maxCoeff() > 1e-3 * scale);
  // the same numbers on 3 threads
  CHECK(s.data().row_means_at_inputs(thread_for(3)) == got);
}

// Two DiscreteData are equal entry by entry (bit for bit).
void check_identical(const DiscreteData& a, const DiscreteData& b) {
  REQUIRE(a.comp.size() == b.comp.size());
  CHECK(a.n_pos == b.n_pos);
  CHECK(a.sum_log_w == b.sum_log_w);
  CHECK(a.wyy == b.wyy);
  for (std::size_t c = 0; c < a.comp.size(); ++c) {
    CHECK(a.comp[c].X == b.comp[c].X);
    CHECK(a.comp[c].count == b.comp[c].count);
    CHECK(a.comp[c].wy == b.comp[c].wy);
    CHECK(a.comp[c].rows == b.comp[c].rows);
    for (std::size_t l = c + 1; l < a.comp.size(); ++l) {
      const DiscretePair &p = a.pair[c][l - c - 1], &q = b.pair[c][l - c - 1];
      REQUIRE(p.dense == q.dense);
      if (p.dense) CHECK(p.C == q.C);
      else CHECK(MatrixXd(p.Cs) == MatrixXd(q.Cs));
    }
  }
}

TEST_CASE("discretised sums from shards (values, union, per-group sums) equal discretise() on all rows", "[discrete]") {
  // 3000 rows: 12 groups of 256 rows; continuous inputs (rounded at 30 bins),
  // an input with 9 exact values, a factor, non-integer weights with zeros
  Data d = make_data(3000, Family::gaussian, 91);
  d.X.conservativeResize(3000, 5);
  for (Index i = 0; i < 3000; ++i) {
    d.X(i, 3) = static_cast<double>((i * 7) % 5);
    d.X(i, 4) = std::round(d.X(i, 1) * 2.0) / 2.0;
    d.w(i) = i % 13 == 2 ? 0.0 : 0.5 + std::fmod(0.37 * static_cast<double>(i), 1.5);
  }
  std::vector<Component> cs = model_components();  // by column in component 1: exact
  cs.push_back(gp_component(KernelType::se, true, uniform_matrix(4, 1, 92, -2, 2), {4}));
  const double bins = 30;
  for (double dense_cells : {kDenseCells, 10.0}) {
    const DiscreteData all = discretise(cs, d.X, d.y, d.w, d.o, bins, dense_cells);
    const std::vector<std::size_t> b = group_bounds(3000);
    REQUIRE(b.size() == 13);
    const std::vector<std::size_t> cut = {0, 5, 12};  // shards: groups 0-4 and 5-11
    std::vector<DiscreteData> unused;
    DiscreteSums total;
    std::vector<KeyRule> rules;
    std::vector<MatrixXd> U;
    std::vector<std::vector<int>> id(cs.size());
    std::vector<Index> D;
    for (std::size_t c = 0; c < cs.size(); ++c) {
      KeyRule r = key_rule(cs[c], bins);
      bool many = false;
      std::vector<double> lo(r.n_round, 1e300), hi(r.n_round, -1e300);
      std::vector<MatrixXd> parts;
      for (std::size_t s = 0; s + 1 < cut.size(); ++s) {
        const auto Xs = d.X.middleRows(static_cast<Index>(b[cut[s]]), static_cast<Index>(b[cut[s + 1]] - b[cut[s]]));
        std::vector<double> l, h;
        key_range(r, Xs, l, h);
        for (std::size_t j = 0; j < r.n_round; ++j) {
          lo[j] = std::min(lo[j], l[j]);
          hi[j] = std::max(hi[j], h[j]);
        }
        many = many || exact_too_many(r, Xs);
        parts.push_back(rule_values(r, Xs, nullptr));
      }
      if (many || r.too_many(static_cast<double>(union_keys(parts, r.dk()).rows()))) {
        round_rule(r, lo, hi);
        parts.clear();
        for (std::size_t s = 0; s + 1 < cut.size(); ++s)
          parts.push_back(rule_values(r, d.X.middleRows(static_cast<Index>(b[cut[s]]), static_cast<Index>(b[cut[s + 1]] - b[cut[s]])), nullptr));
      }
      U.push_back(union_keys(parts, r.dk()));
      D.push_back(U.back().rows());
      for (std::size_t s = 0; s + 1 < cut.size(); ++s) {
        const std::vector<int> g = global_ids(r, d.X.middleRows(static_cast<Index>(b[cut[s]]), static_cast<Index>(b[cut[s + 1]] - b[cut[s]])), U.back());
        id[c].insert(id[c].end(), g.begin(), g.end());
      }
      rules.push_back(r);
    }
    // component 0 (continuous) is rounded to 30 values, component 5 (9 values) is not
    CHECK(rules[0].step[0] > 0);
    CHECK(rules[5].step[0] == 0);
    CHECK(U[5].rows() == 9);
    for (std::size_t g = 0; g + 1 < b.size(); ++g) add_sums(total, range_sums(id, D, d.y, d.w, d.o, b[g], b[g + 1], true), dense_cells);
    check_identical(discrete_data(rules, U, d.X.cols(), std::move(total)), all);
  }
}

TEST_CASE("distinct values: the grid path equals hashing the rounded keys", "[discrete]") {
  const Data d = make_data(2000, Family::gaussian, 93);
  Component k = gp_component(KernelType::se, true, uniform_matrix(4, 2, 94, -2, 2), {0, 1});
  // early stop: more distinct values than 50 grid points (one input), not
  // more than 100^2 (two inputs: at least 100 per input)
  CHECK(exact_too_many(key_rule(gp_component(KernelType::se, true, uniform_matrix(4, 1, 95, -2, 2), {0}), 50), d.X));
  CHECK_FALSE(exact_too_many(key_rule(k, 50), d.X));
  for (double bins : {50.0, 1e6}) {  // 100 and 1000 values per input
    KeyRule r = key_rule(k, bins);
    std::vector<double> lo, hi;
    key_range(r, d.X, lo, hi);
    round_rule(r, lo, hi);
    std::vector<int> a, h;
    const MatrixXd Ua = rule_values(r, d.X, &a);
    const MatrixXd Uh = distinct_keys(make_keys(r, d.X), d.X.rows(), r.dk(), &h);
    CHECK(Ua == Uh);
    CHECK(a == h);
    for (Index i = 0; i < d.X.rows(); ++i)  // each row's value is its rounded input
      for (Index j = 0; j < 2; ++j)
        CHECK(std::abs(Ua(a[static_cast<std::size_t>(i)], j) - d.X(i, j)) <= 0.5 * r.step[static_cast<std::size_t>(j)] + 1e-12);
  }
  // sorted and distinct
  KeyRule e = key_rule(k, 0);
  std::vector<int> id;
  const MatrixXd U = rule_values(e, d.X, &id);
  CHECK(U.rows() == 2000);
  for (Index a = 1; a < U.rows(); ++a) CHECK((U(a - 1, 0) < U(a, 0) || (U(a - 1, 0) == U(a, 0) && U(a - 1, 1) < U(a, 1))));
}

TEST_CASE("discrete_grid: values per input", "[discrete]") {
  CHECK(discrete_grid(1000, 1) == 1000);
  CHECK(discrete_grid(1000, 2) == 100);
  CHECK(discrete_grid(1e6, 2) == 1000);
  CHECK(discrete_grid(0, 1) == 0);
  CHECK(discrete_grid(-1, 2) == 0);
}

// A discretised fit of `d` against the fit of its rows (exact values), and
// the discretised fit on 1, 2 and 3 threads.
static void check_fit_equals_rows(const Data& d, Family family) {
  Settings set;
  set.batch_size = d.n();
  set.max_iter = 1000;
  set.tol = 1e-9;
  std::vector<Component> cs = model_components();
  cs.erase(cs.begin() + 2);  // (the pure interaction makes the ELBO too flat to converge tightly)
  auto run = [&](bool discrete, const ParallelFor& pfor) {
    Svgp s = make(d, cs, discrete, 0, set, family);
    Rng rng(1);
    const FitInfo info = s.fit(pfor, rng, [](int, double) { return true; });
    return std::make_tuple(info, s.m, s.pack(), s.data().discrete());
  };
  const auto [ia, ma, ta, da] = run(1, serial_for);
  const auto [ib, mb, tb, db] = run(0, serial_for);
  CHECK(da);
  CHECK_FALSE(db);
  CHECK(ia.iterations > 3);
  CHECK(ia.gradient.cwiseAbs().maxCoeff() < 1e-3);  // (the ELBO stops increasing in double precision first)
  INFO("iterations " << ia.iterations << " / " << ib.iterations << ", stop " << ia.stop << " / " << ib.stop
       << ", objective " << ia.objective << " / " << ib.objective << ", |g| " << ia.gradient.cwiseAbs().maxCoeff()
       << " / " << ib.gradient.cwiseAbs().maxCoeff());
  // the same optimum: the ELBO to 1e-9; the parameters as far as the flat
  // ELBO determines them (rounding differences steer the two L-BFGS paths)
  CHECK(std::abs(ia.objective - ib.objective) <= 1e-9 * std::abs(ib.objective));
  check_all_close(ta, tb, 2e-3, 1e-5);
  check_all_close(ma, mb, 2e-3, 1e-5);
  for (unsigned th : {2u, 3u}) {
    const auto [ic, mc, tc, dc] = run(1, thread_for(th));
    CHECK(ic.trace == ia.trace);
    CHECK(mc == ma);
    CHECK(tc == ta);
  }
}

TEST_CASE("a discretised fit equals the fit of the rows, for any thread count", "[discrete][fit]") {
  check_fit_equals_rows(coarse_data(600, 85, 16), Family::gaussian);
}

TEST_CASE("a discretised binary fit equals the fit of the rows, for any thread count", "[discrete][fit]") {
  check_fit_equals_rows(with_family(coarse_data(600, 87, 16), Family::logit), Family::logit);
}

// The latent variances diag(F S F') of a discretised pass: squared row norms
// of F L (S = L L') when S is positive definite, else the row sums of
// (F S) o F; both against the explicit product, for 1 and 3 threads (more
// rows than one block, so the blocks split differently).
TEST_CASE("diag_quadratic: Cholesky and fallback paths", "[discrete]") {
  const MatrixXd F = uniform_matrix(3000, 7, 41, -1, 1);
  const MatrixXd G = uniform_matrix(7, 7, 42, -1, 1);
  MatrixXd pd = G * G.transpose();
  pd.diagonal().array() += 0.1;
  MatrixXd indefinite = 0.5 * (G + G.transpose());  // symmetric, eigenvalues of both signs
  indefinite(0, 0) = -2.0;
  REQUIRE(Eigen::LLT<MatrixXd>(indefinite).info() != Eigen::Success);
  for (const MatrixXd* S : {&pd, &indefinite}) {
    const VectorXd ref = (F * *S).cwiseProduct(F).rowwise().sum();
    const VectorXd one = DataPass::diag_quadratic(F, *S, serial_for);
    const VectorXd three = DataPass::diag_quadratic(F, *S, thread_for(3));
    for (Index i = 0; i < F.rows(); ++i) CHECK(std::abs(one(i) - ref(i)) <= 1e-12 * (1 + std::abs(ref(i))));
    CHECK(one == three);
  }
}

// predict() without variances (fitted values of a Gaussian model) forms the
// mean as K(x, Z) (L^{-T} m) for each component instead of from the
// whitened features: the same means as the full path for every kind of
// component (stationary, with a `by` column, centred, factor, linear), on
// 1 and 3 threads, and no variances.
TEST_CASE("predict: the mean alone equals the mean of the full path", "[discrete][predict]") {
  const Data d = coarse_data(400, 61, 12);
  Svgp s = make(d, model_components(), false, 0);
  random_q(s, 62);
  VectorXd mean, var, mean1, var1, mean3, var3;
  s.predict(d.X, d.o, mean, var, nullptr, nullptr, serial_for);
  REQUIRE(var.minCoeff() > 0);
  s.predict(d.X, d.o, mean1, var1, nullptr, nullptr, serial_for, nullptr, false);
  s.predict(d.X, d.o, mean3, var3, nullptr, nullptr, thread_for(3), nullptr, false);
  for (Index i = 0; i < mean.size(); ++i) CHECK(std::abs(mean1(i) - mean(i)) <= 1e-12 * (1 + std::abs(mean(i))));
  CHECK(mean1 == mean3);
  CHECK(var1.cwiseAbs().maxCoeff() == 0.0);
  // each component contributes (a wrong whitening of one would show)
  REQUIRE(mean.cwiseAbs().maxCoeff() > 0.1);
}
