// Tests of optim.hpp (Adam, Stopper) and inducing.hpp (RNG helpers, k-means).
#include <catch2/catch.hpp>
#include <scalegp/inducing.hpp>
#include <scalegp/optim.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <vector>

using namespace scalegp;

TEST_CASE("Adam maximises a concave quadratic", "[optim]") {
  // f(x) = -1/2 (x - a)' A (x - a), gradient -A (x - a); anisotropic A
  Eigen::Matrix3d A;
  A << 4.0, 1.0, 0.0, 1.0, 2.0, 0.5, 0.0, 0.5, 0.3;
  const Eigen::Vector3d a(1.5, -2.0, 0.7);
  VectorXd x = VectorXd::Zero(3);
  Adam adam(0.01);
  double f_prev = -std::numeric_limits<double>::infinity();
  int increases = 0;
  for (int it = 0; it < 20000; ++it) {
    const VectorXd g = -A * (x - a);
    adam.step(x, g);
    const double f = -0.5 * (x - a).dot(A * (x - a));
    if (it < 50 && f > f_prev) ++increases;  // ascent, not descent
    f_prev = f;
  }
  CHECK(increases == 50);
  CHECK((x - a).cwiseAbs().maxCoeff() < 1e-6);

  // the first step has length lr in every coordinate (bias-corrected)
  Adam a2(0.05);
  VectorXd y = VectorXd::Zero(2);
  VectorXd g(2);
  g << 3.0, -1e-3;
  a2.step(y, g);
  CHECK(y(0) == Approx(0.05).epsilon(1e-6));
  CHECK(y(1) == Approx(-0.05).epsilon(1e-4));
}

TEST_CASE("Adam works on a vector block (Ref) and resets on size change", "[optim]") {
  VectorXd th = VectorXd::Zero(5);
  Adam adam(0.1);
  VectorXd g = VectorXd::Constant(2, 1.0);
  adam.step(th.segment(1, 2), g);
  CHECK(th(0) == 0.0);
  CHECK(th(1) == Approx(0.1).epsilon(1e-6));
  CHECK(th(2) == Approx(0.1).epsilon(1e-6));
  CHECK(th(3) == 0.0);
  VectorXd x3 = VectorXd::Zero(3);
  adam.step(x3, VectorXd::Constant(3, -2.0));  // new size: fresh moments, t = 1
  CHECK(x3(0) == Approx(-0.1).epsilon(1e-6));
}

TEST_CASE("Stopper stops after exactly `patience` non-improving epochs", "[optim]") {
  SECTION("patience 3, tolerance scaled by n_obs") {
    Stopper s(1e-3, 3, 100.0);  // improvement must exceed 0.1
    CHECK_FALSE(s.add_epoch(-50.0));  // first epoch always improves on -inf
    CHECK_FALSE(s.add_epoch(-10.0));  // improvement
    CHECK_FALSE(s.add_epoch(-9.95));  // +0.05 < 0.1: bad 1
    CHECK_FALSE(s.add_epoch(-9.91));  // bad 2
    CHECK_FALSE(s.add_epoch(-9.8));   // +0.2 over best: improvement, counter reset
    CHECK_FALSE(s.add_epoch(-9.8));   // bad 1
    CHECK_FALSE(s.add_epoch(-20.0));  // bad 2
    CHECK(s.add_epoch(-9.75));        // bad 3: stop
  }
  SECTION("patience 1 and 5") {
    Stopper s1(0.0, 1, 10.0);
    CHECK_FALSE(s1.add_epoch(1.0));
    CHECK(s1.add_epoch(1.0));
    for (int patience : {1, 5}) {
      Stopper s(1e-6, patience, 1.0);
      CHECK_FALSE(s.add_epoch(0.0));
      for (int k = 1; k < patience; ++k) CHECK_FALSE(s.add_epoch(0.0));
      CHECK(s.add_epoch(0.0));
    }
  }
}

TEST_CASE("uniform_index, uniform01 and shuffle", "[inducing]") {
  Rng rng(42);
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 7000; ++i) {
    const std::size_t k = uniform_index(rng, 7);
    REQUIRE(k < 7);
    ++counts[k];
  }
  for (int c : counts) CHECK(std::abs(c - 1000) < 150);
  double mn = 1, mx = 0;
  for (int i = 0; i < 1000; ++i) {
    const double u = uniform01(rng);
    mn = std::min(mn, u);
    mx = std::max(mx, u);
  }
  CHECK(mn >= 0.0);
  CHECK(mx < 1.0);
  CHECK(mn < 0.01);
  CHECK(mx > 0.99);
  std::vector<std::size_t> v(50);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = i;
  Rng r1(7), r2(7);
  std::vector<std::size_t> a = v, b = v;
  shuffle(a, r1);
  shuffle(b, r2);
  CHECK(a == b);      // deterministic for a seed
  CHECK(a != v);      // actually permuted
  std::sort(a.begin(), a.end());
  CHECK(a == v);      // a permutation
}

TEST_CASE("kmeans recovers three well-separated clusters", "[inducing]") {
  // three clusters of 30 points, each symmetric about its centre so that the
  // cluster mean is exactly (up to rounding) the centre
  const double centres[3][2] = {{0.0, 0.0}, {10.0, 10.0}, {-10.0, 8.0}};
  Rng gen(3);
  MatrixXd X(90, 2);
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 15; ++i) {
      const double dx = uniform01(gen) - 0.5, dy = uniform01(gen) - 0.5;
      X.row(c * 30 + 2 * i) << centres[c][0] + dx, centres[c][1] + dy;
      X.row(c * 30 + 2 * i + 1) << centres[c][0] - dx, centres[c][1] - dy;
    }
  for (std::uint64_t seed : {1u, 2u, 3u, 4u, 5u}) {
    Rng rng(seed);
    const MatrixXd C = kmeans(X, 3, rng);
    REQUIRE(C.rows() == 3);
    REQUIRE(C.cols() == 2);
    for (int c = 0; c < 3; ++c) {
      double best = std::numeric_limits<double>::infinity();
      for (int j = 0; j < 3; ++j)
        best = std::min(best, std::hypot(C(j, 0) - centres[c][0], C(j, 1) - centres[c][1]));
      CHECK(best < 1e-8);
    }
  }
  // more rows than k returned; k >= n returns the data itself
  Rng rng(9);
  const MatrixXd small = X.topRows(3);
  CHECK(kmeans(small, 5, rng) == small);
}

TEST_CASE("kmeans returns k distinct rows and subsamples large inputs", "[inducing]") {
  Rng gen(11);
  MatrixXd X(400, 2);
  for (Index i = 0; i < X.rows(); ++i) X.row(i) << uniform01(gen), uniform01(gen);
  Rng rng(1);
  const Index k = 12;
  const MatrixXd C = kmeans(X, k, rng, 150);  // k-means on a random subset of 150 rows
  REQUIRE(C.rows() == k);
  std::set<std::pair<double, double>> rows;
  for (Index j = 0; j < k; ++j) rows.insert({C(j, 0), C(j, 1)});
  CHECK(rows.size() == static_cast<std::size_t>(k));
  // centres lie inside the data's bounding box
  CHECK(C.minCoeff() >= 0.0);
  CHECK(C.maxCoeff() <= 1.0);
  // Lloyd fixed point: every centre is the mean of the points nearest to it
  // (checked on the full data with the subsample bypassed)
  Rng rng2(1);
  const MatrixXd C2 = kmeans(X, k, rng2, 1000, 200);
  std::vector<Index> lab(X.rows());
  for (Index i = 0; i < X.rows(); ++i) (C2.rowwise() - X.row(i)).rowwise().squaredNorm().minCoeff(&lab[i]);
  for (Index j = 0; j < k; ++j) {
    Eigen::RowVector2d s(0, 0);
    int cnt = 0;
    for (Index i = 0; i < X.rows(); ++i)
      if (lab[i] == j) { s += X.row(i); ++cnt; }
    REQUIRE(cnt > 0);
    CHECK((s / cnt - C2.row(j)).cwiseAbs().maxCoeff() < 1e-12);
  }
  // duplicated rows: still k distinct centres when there are k distinct points
  MatrixXd D(40, 1);
  for (Index i = 0; i < 40; ++i) D(i, 0) = static_cast<double>(i % 4);
  Rng rng3(5);
  const MatrixXd CD = kmeans(D, 4, rng3);
  std::set<double> dv(CD.data(), CD.data() + CD.size());
  CHECK(dv.size() == 4);
}

TEST_CASE("quantiles_type7 equals quantile(type = 7) from a full sort, by bins or by selection", "[inducing]") {
  // R's type-7 arithmetic on a sorted copy
  const auto reference = [](std::vector<double> v, const std::vector<double>& probs) {
    std::sort(v.begin(), v.end());
    std::vector<double> out;
    for (double p : probs) {
      const double index = 1.0 + static_cast<double>(v.size() - 1) * p, lo = std::floor(index);
      double q = v[static_cast<std::size_t>(lo) - 1];
      const double xh = v[static_cast<std::size_t>(std::ceil(index)) - 1];
      if (index > lo && xh != q) q = (1 - (index - lo)) * q + (index - lo) * xh;
      out.push_back(q);
    }
    return out;
  };
  std::vector<double> probs;
  for (int i = 0; i < 40; ++i) probs.push_back((i + 0.5) / 40);
  probs.push_back(0.0);
  probs.push_back(1.0);
  std::sort(probs.begin(), probs.end());
  Rng gen(3);
  // large (the binned path): skewed with an outlier (most values in few
  // bins), heavy ties, negative values; and small (selection only)
  for (const std::size_t n : {std::size_t{200000}, std::size_t{70001}, std::size_t{1001}}) {
    std::vector<double> skew(n), ties(n), neg(n);
    for (std::size_t i = 0; i < n; ++i) {
      skew[i] = std::exp(8 * uniform01(gen));
      ties[i] = std::floor(5 * uniform01(gen));
      neg[i] = -1e6 + uniform01(gen) * 1e-3;
    }
    skew[n / 2] = 1e300;
    for (const std::vector<double>* v : {&skew, &ties, &neg}) {
      const std::vector<double> got = quantiles_type7(v->data(), v->size(), probs), want = reference(*v, probs);
      for (std::size_t t = 0; t < probs.size(); ++t) CHECK(got[t] == want[t]);
    }
  }
  // constant values, one value, non-finite values (selection)
  const std::vector<double> cst(100000, 2.5);
  for (double q : quantiles_type7(cst.data(), cst.size(), probs)) CHECK(q == 2.5);
  const double one = -3;
  for (double q : quantiles_type7(&one, 1, probs)) CHECK(q == -3);
  std::vector<double> inf(100000);
  for (std::size_t i = 0; i < inf.size(); ++i) inf[i] = static_cast<double>(i % 1000);
  inf[7] = std::numeric_limits<double>::infinity();
  const std::vector<double> got = quantiles_type7(inf.data(), inf.size(), probs), want = reference(inf, probs);
  for (std::size_t t = 0; t < probs.size(); ++t) CHECK(got[t] == want[t]);
}

TEST_CASE("Bfgs: Newton steps from the exact inverse Hessian, in the free parameters at a bound", "[optim]") {
  // f(x) = -0.5 x'Ax + b'x, gradient b - Ax, maximum at A^-1 b
  Eigen::Matrix3d A;
  A << 4, 1, 0.5, 1, 3, -0.2, 0.5, -0.2, 2;
  const Eigen::Vector3d b(1, -2, 0.5), x0(0.3, 0.1, -0.4);
  const auto grad = [&](const VectorXd& x) { return VectorXd(b - A * x); };
  Bfgs bf;
  CHECK(!bf.active());
  bf.start(A.inverse());
  const std::vector<bool> none(3, false);
  const VectorXd x1 = x0 + bf.direction(grad(x0), none);
  CHECK((x1 - A.inverse() * b).cwiseAbs().maxCoeff() < 1e-12);
  // parameter 1 held: the maximum over parameters 0 and 2 with x_1 fixed
  std::vector<bool> held(3, false);
  held[1] = true;
  VectorXd g = grad(x0);
  g(1) = 0;  // (its projected gradient)
  const VectorXd d = bf.direction(g, held);
  CHECK(d(1) == 0);
  Eigen::Matrix2d Aff;
  Aff << A(0, 0), A(0, 2), A(2, 0), A(2, 2);
  const Eigen::Vector2d rhs(b(0) - A(0, 1) * x0(1), b(2) - A(2, 1) * x0(1));
  const Eigen::Vector2d want = Aff.inverse() * rhs;
  CHECK(std::abs(x0(0) + d(0) - want(0)) < 1e-12);
  CHECK(std::abs(x0(2) + d(2) - want(1)) < 1e-12);
  // updates keep the secant condition H y = s; a pair without positive curvature is skipped
  Bfgs q;
  q.start(MatrixXd::Identity(3, 3));
  const VectorXd s = Eigen::Vector3d(0.2, -0.1, 0.3), y = A * s;
  q.update(s, y);
  CHECK((q.direction(y, none) - s).cwiseAbs().maxCoeff() < 1e-12);
  const VectorXd before = q.direction(b, none);
  q.update(s, -y);
  CHECK((q.direction(b, none) - before).cwiseAbs().maxCoeff() == 0);
  CHECK(held_at_bound(Eigen::Vector3d(0, 1, 0), Eigen::Vector3d(2, 1, 0)) == std::vector<bool>{true, false, false});
}
