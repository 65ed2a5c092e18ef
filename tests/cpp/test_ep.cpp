// Tests of the EP engine (ep.hpp): probit site moments against quadrature,
// the evidence gradient against finite differences of the converged evidence,
// the stochastic modes against the batch fixed point, and the group passes
// behind the distributed mode.
#include <catch2/catch.hpp>
#include "fixtures.hpp"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace scalegp;
using namespace fixtures;

namespace {

std::vector<Component> ep_components(Index M, unsigned seed, bool with_linear = true) {
  Component c;
  c.kind = Kind::stationary;
  c.cols = {0, 1};
  c.kernel.log_var = std::log(1.3);
  c.kernel.log_ls.resize(2);
  c.kernel.log_ls << std::log(0.8), std::log(1.2);
  Rng rng(seed);
  c.Z.resize(M, 2);
  for (Index i = 0; i < M; ++i) c.Z.row(i) << 4 * uniform01(rng) - 2, 4 * uniform01(rng) - 2;
  std::vector<Component> out{c};
  if (with_linear) {
    Component lin;
    lin.kind = Kind::linear;
    lin.cols = {2};
    lin.prior_sd = VectorXd::Constant(1, 2.0);
    lin.learn_kernel = false;
    out.push_back(lin);
  }
  return out;
}

Ep make_ep(const Data& d, std::vector<Component> comps, Settings set = Settings(), EpSettings opt = EpSettings()) {
  return Ep(std::move(comps), set, opt, d.X.data(), static_cast<std::size_t>(d.X.rows()), 3, d.y.data(), d.w.data(),
            d.o.data());
}

// EP with every hyperparameter fixed (only the sites move).
Ep fixed_hyper_ep(const Data& d, Settings set, EpSettings opt) {
  set.learn_inducing = false;
  std::vector<Component> comps = ep_components(8, 4);
  for (auto& c : comps) c.learn_kernel = false;
  return make_ep(d, comps, set, opt);
}

template <class Monitor>
FitInfo run_fit(Ep& ep, const ParallelFor& pfor, Rng& rng, Monitor monitor) {
  return fit_ep(ep, pfor, rng, monitor);
}

// Damped parallel EP at fixed hyperparameters until no site moves by 1e-13.
double converge(Ep& ep, int max_sweeps = 2000) {
  ep.set_q(ep.reduce_local(Ep::Pass::q, 0, Ep::Sites::keep, serial_for));
  for (int k = 0; k < max_sweeps; ++k) {
    const EpAccum a = ep.reduce_local(Ep::Pass::sweep, 0.7, Ep::Sites::keep, serial_for);
    ep.set_q(ep.reduce_local(Ep::Pass::q, 0, Ep::Sites::commit, serial_for));
    if (a.change < 1e-13) break;
  }
  return ep.log_evidence(ep.reduce_local(Ep::Pass::sweep, 0, Ep::Sites::keep, serial_for));
}

}  // namespace

TEST_CASE("probit site: log Z and the tilted moments match quadrature", "[ep]") {
  // tilted density of u: Phi(y (u + o) / sqrt(1 + s)) N(u | a, c)
  const double cases[][5] = {{1, 0.3, 0.8, 0.2, 0.1}, {-1, 1.5, 0.4, 0.05, -0.3}, {1, -6.0, 0.5, 0.1, 0.0},
                             {-1, -0.2, 3.0, 1.0, 0.4}};
  for (const auto& cs : cases) {
    const double y = cs[0], a = cs[1], c = cs[2], s = cs[3], o = cs[4];
    double z0 = 0, z1 = 0, z2 = 0;
    const int K = 200000;
    const double lo = a - 12 * std::sqrt(c), hi = a + 12 * std::sqrt(c), du = (hi - lo) / K;
    for (int k = 0; k <= K; ++k) {
      const double u = lo + k * du, wq = (k == 0 || k == K) ? 0.5 : 1.0;
      const double p = wq * std::exp(log_Phi(y * (u + o) / std::sqrt(1 + s)) - 0.5 * (u - a) * (u - a) / c) /
                       std::sqrt(2 * M_PI * c);
      z0 += p * du;
      z1 += p * u * du;
      z2 += p * u * u * du;
    }
    const double mean = z1 / z0, var = z2 / z0 - mean * mean;
    const ProbitSite st = probit_site(y, a, c, s, o);
    CHECK(st.log_z == Approx(std::log(z0)).epsilon(1e-7));
    // the new site times the cavity has the tilted moments:
    // precision 1/c + nu, shift a/c + mu
    const double prec = 1 / c + st.nu;
    CHECK(1 / prec == Approx(var).epsilon(1e-6));
    CHECK((a / c + st.mu) / prec == Approx(mean).margin(1e-7));
    CHECK(st.nu > 0);
    // alpha and gamma are d log Z / da and d log Z / db (central differences)
    const double hstep = 1e-5;
    const double b = 1 + s + c;
    auto lz = [&](double aa, double bb) { return log_Phi(y * (aa + o) / std::sqrt(bb)); };
    CHECK(st.alpha == Approx((lz(a + hstep, b) - lz(a - hstep, b)) / (2 * hstep)).epsilon(1e-6));
    CHECK(st.gamma == Approx((lz(a, b + hstep) - lz(a, b - hstep)) / (2 * hstep)).epsilon(1e-6));
  }
}

TEST_CASE("EP: gradient of the converged evidence matches finite differences", "[ep]") {
  const Data d = class_data(60, 3);
  Ep ep = make_ep(d, ep_components(7, 5));
  converge(ep);
  const EpAccum a = ep.reduce_local(Ep::Pass::sweep_grad, 0, Ep::Sites::keep, serial_for);
  const VectorXd g = ep.hyper_gradient(a.PtPb, a.grad, 1.0);
  VectorXd th(ep.n_hyper());
  ep.pack_hyper(th);
  REQUIRE(th.size() == 3 + 14);
  // the evidence of EP converged at other hyperparameters
  auto evidence = [&](const VectorXd& t) {
    Ep e2 = make_ep(d, ep_components(7, 5));
    e2.unpack_hyper(t);
    e2.refresh_prior();
    return converge(e2);
  };
  const VectorXd fd = fd_gradient(evidence, th, 1e-3);
  for (Index j = 0; j < th.size(); ++j) {
    CAPTURE(j);
    CHECK(g(j) == Approx(fd(j)).epsilon(1e-6).margin(1e-8));
  }
}

TEST_CASE("EP: group passes on shards sum to the single-process pass bit for bit", "[ep]") {
  const Data d = class_data(1500, 7);
  Ep full = make_ep(d, ep_components(10, 2));
  converge(full, 3);
  const std::vector<std::size_t> b = group_bounds(1500);
  REQUIRE(b.size() > 3);
  // two "workers" holding groups [0, k) and [k, G) with their own rows and sites
  const std::size_t k = (b.size() - 1) / 2, split = b[k];
  Data d1{d.X.topRows(split), d.y.head(split), d.w.head(split), d.o.head(split)};
  Data d2{d.X.bottomRows(1500 - split), d.y.tail(1500 - split), d.w.tail(1500 - split),
               d.o.tail(1500 - split)};
  Ep w1 = make_ep(d1, ep_components(10, 2)), w2 = make_ep(d2, ep_components(10, 2));
  w1.nu = full.nu.head(split);
  w1.mu = full.mu.head(split);
  w2.nu = full.nu.tail(1500 - split);
  w2.mu = full.mu.tail(1500 - split);
  for (Ep* w : {&w1, &w2}) {
    w->P = full.P;
    w->h = full.h;
    w->refresh_q();
  }
  std::vector<std::size_t> b1(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(k) + 1), b2;
  for (std::size_t g = k; g < b.size(); ++g) b2.push_back(b[g] - split);
  for (Ep::Pass kind : {Ep::Pass::q, Ep::Pass::sweep_grad}) {
    std::vector<EpAccum> parts = w1.pass(kind, 0.5, Ep::Sites::keep, b1, thread_for(2));
    for (const EpAccum& a : w2.pass(kind, 0.5, Ep::Sites::keep, b2, serial_for)) parts.push_back(a);
    const EpAccum dist = sum_groups(parts, [&] { return full.make_accum(kind); });
    const EpAccum one = full.reduce_local(kind, 0.5, Ep::Sites::keep, thread_for(3));
    CHECK(dist.log_z == one.log_z);
    if (kind == Ep::Pass::q) {
      CHECK(dist.Q == one.Q);
      CHECK(dist.r == one.r);
    } else {
      CHECK(dist.PtPb == one.PtPb);
      CHECK(dist.grad.g_Z[0] == one.grad.g_Z[0]);
      CHECK(dist.grad.g_kern[0] == one.grad.g_kern[0]);
    }
  }
  CHECK(w2.nu_new == full.nu_new.tail(1500 - split));
}

TEST_CASE("EP: minibatch EP at fixed hyperparameters reaches the batch fixed point", "[ep]") {
  const Data d = class_data(300, 11);
  Ep batch = make_ep(d, ep_components(8, 4));
  const double lz = converge(batch);
  Settings set;
  set.batch_size = 40;
  set.max_iter = 8 * 60;  // 60 epochs
  set.tol = 1e-14;
  set.patience = 1000;
  EpSettings opt;
  opt.damping = 1.0;
  Ep mb = fixed_hyper_ep(d, set, opt);
  Rng rng(1);
  const FitInfo info = run_fit(mb, serial_for, rng, [](int, double) { return true; });
  CHECK(info.iterations == 480);
  CHECK((mb.m - batch.m).cwiseAbs().maxCoeff() < 1e-8);
  CHECK(info.objective == Approx(lz).epsilon(1e-10));

  // tied sites: a different (but nearby) fixed point, same evidence after the final sweeps
  opt.tied = true;
  opt.damping = 0.5;
  Ep tied = fixed_hyper_ep(d, set, opt);
  Rng rng2(1);
  const FitInfo it = run_fit(tied, serial_for, rng2, [](int, double) { return true; });
  CHECK(it.objective == Approx(lz).epsilon(1e-6));
  CHECK((tied.m - batch.m).cwiseAbs().maxCoeff() < 1e-3);  // the final sweeps stop at site changes < 1e-3
}

TEST_CASE("EP: batch fit raises the evidence and is reproducible across thread counts", "[ep]") {
  const Data d = class_data(800, 13);
  Settings set;
  set.max_iter = 60;
  set.learning_rate = 0.05;
  Ep a = make_ep(d, ep_components(12, 3), set), b = make_ep(d, ep_components(12, 3), set);
  Rng r1(1), r2(1);
  const FitInfo ia = run_fit(a, serial_for, r1, [](int, double) { return true; });
  const FitInfo ib = run_fit(b, thread_for(3), r2, [](int, double) { return true; });
  CHECK(ia.objective == ib.objective);
  CHECK(ia.failures == 0);
  CHECK(ia.trace.back() > ia.trace[10] + 1.0);
  CHECK(std::isfinite(ia.objective));
}

TEST_CASE("EP: a failed batch update is undone and the damping halved", "[ep]") {
  const Data d = class_data(400, 17);
  Settings set;
  set.max_iter = 40;
  set.learning_rate = 0.05;
  set.patience = 1000;  // no early stop
  EpSettings opt;
  opt.inner = true;  // the paper's scheme: one sweep and one Adam step per iteration
  Ep ep = make_ep(d, ep_components(10, 3), set, opt);
  // The reduction of fit_batch, with the evidence of the 20th sweep made NaN
  // (after the hyperparameter steps have started: 10 warm-up sweeps).
  const int fail_at = 20;
  int sweeps = 0, restores = 0;
  std::vector<double> rhos;
  VectorXd nu_prev, th_prev, nu_last, th_last;  // inputs of the last two sweeps
  auto packed = [&] {
    VectorXd th(ep.n_hyper());
    ep.pack_hyper(th);
    return th;
  };
  auto reduce = [&](Ep::Pass kind, double rho, Ep::Sites sites) {
    if (kind != Ep::Pass::q) {
      ++sweeps;
      rhos.push_back(rho);
      nu_prev = nu_last;
      th_prev = th_last;
      nu_last = ep.nu;
      th_last = packed();
    }
    EpAccum a = ep.reduce_local(kind, rho, sites, serial_for);
    if (kind != Ep::Pass::q && sweeps == fail_at) a.log_z = std::numeric_limits<double>::quiet_NaN();
    if (sites == Ep::Sites::restore) {
      // back to the inputs of the last successful sweep
      ++restores;
      CHECK(ep.nu == nu_prev);
      CHECK(packed() == th_prev);
    }
    return a;
  };
  Rng rng(1);
  const FitInfo info = ep_batch(ep, reduce).fit(static_cast<std::size_t>(d.X.rows()), rng, [](int, double) { return true; });
  CHECK(info.failures == 1);
  CHECK(restores == 1);
  CHECK(rhos[fail_at - 2] == 0.5);
  CHECK(rhos[fail_at] == 0.25);  // the sweep after the failure
  CHECK(info.trace.size() == static_cast<std::size_t>(set.max_iter - 1));
  for (double v : info.trace) CHECK(std::isfinite(v));
  CHECK(std::isfinite(info.objective));
}

TEST_CASE("EP: a failed minibatch update is undone; 20 failures end the fit with an error", "[ep]") {
  // A row with a non-finite offset makes every update of its block fail
  // (R refuses such data; here it stands for any failed update).
  Data d = class_data(300, 19);
  d.o(0) = std::numeric_limits<double>::quiet_NaN();
  Settings set;
  set.batch_size = 60;  // 5 blocks
  set.max_iter = 5 * 40;
  set.patience = 1000;
  EpSettings opt;
  opt.damping = 1.0;
  Ep mb = fixed_hyper_ep(d, set, opt);
  Rng rng(3);
  int good = 0;
  VectorXd nu_last, mu_last, m_last;
  MatrixXd P_last;
  auto monitor = [&](int, double) {
    ++good;
    nu_last = mb.nu;
    mu_last = mb.mu;
    m_last = mb.m;
    P_last = mb.P;
    return true;
  };
  REQUIRE_THROWS_WITH(run_fit(mb, serial_for, rng, monitor), Catch::Contains("20 times"));
  // the other four blocks kept going: 21 epochs before the 21st failure
  CHECK(good >= 4 * 20);
  // the failed block's sites never entered q: its 60 rows keep zero sites,
  // and q is exactly the prior times the sites of the other rows
  CHECK((nu_last.array() == 0).count() == 60);
  CHECK((mu_last.array() == 0).count() == 60);
  CHECK(nu_last(0) == 0);
  Ep check = fixed_hyper_ep(d, Settings(), EpSettings());
  check.nu = nu_last;
  check.mu = mu_last;
  check.set_q(check.reduce_local(Ep::Pass::q, 0, Ep::Sites::keep, serial_for));
  CHECK((check.P - P_last).cwiseAbs().maxCoeff() < 1e-10);
  CHECK((check.m - m_last).cwiseAbs().maxCoeff() < 1e-10);
}

TEST_CASE("EP: minibatch gradients at the fixed point average to the batch gradient", "[ep][gradient]") {
  // Minibatch EP at fixed hyperparameters reaches the batch fixed point
  // (tested above); there a minibatch step leaves the sites where they are,
  // and its gradient (the block's direct terms scaled by N / |block|)
  // averages over the blocks of an epoch to the batch gradient, which the
  // test above checks against finite differences of the converged evidence.
  const Data d = class_data(120, 23);
  Ep batch = make_ep(d, ep_components(6, 7));
  converge(batch);
  const EpAccum a = batch.reduce_local(Ep::Pass::sweep_grad, 0, Ep::Sites::keep, serial_for);
  const VectorXd gb = batch.hyper_gradient(a.PtPb, a.grad, 1.0);
  Settings set;
  set.batch_size = 40;
  EpSettings opt;
  opt.damping = 1.0;
  Ep ep = make_ep(d, ep_components(6, 7), set, opt);
  Rng rng(4);
  Sampler sampler(Sampler::Mode::blocks, 120, 40, rng);
  EpMinibatch mb(ep, serial_for);
  mb.prepare(sampler);
  for (int k = 0; k < 3 * 200; ++k) {  // 200 epochs at fixed hyperparameters
    sampler.next();
    mb.update(mb.step(sampler, false));
  }
  REQUIRE((ep.m - batch.m).cwiseAbs().maxCoeff() < 1e-9);
  VectorXd mean = VectorXd::Zero(gb.size());
  for (int k = 0; k < 3; ++k) {
    sampler.next();
    const Step st = mb.step(sampler, true);
    REQUIRE(st.gradient.size() == gb.size());
    mean += st.gradient / 3.0;
    mb.update(Step());
  }
  for (Index j = 0; j < gb.size(); ++j) CHECK(mean(j) == Approx(gb(j)).epsilon(1e-7).margin(1e-9));
}

namespace {

// Tied-site EP with all rows in one block.  With `converge`, the averaged
// site (Lbar, hbar) is iterated to its fixed point; otherwise it is kept as
// given.  Returns the energy (1 - N) g(q) + N g(cavity) + sum_i log Z_i at
// the site and, when asked, the gradient of the tied mode (the direct terms,
// the shared site held fixed).
double tied_energy(const Data& d, const VectorXd* theta, MatrixXd& Lbar, VectorXd& hbar, bool converge,
                   VectorXd* grad) {
  EpSettings opt;
  opt.tied = true;
  Ep ep = make_ep(d, ep_components(5, 8), Settings(), opt);
  if (theta) {
    ep.unpack_hyper(*theta);
    ep.refresh();
  }
  const Index Mt = ep.total_size();
  const double N = static_cast<double>(ep.n());
  std::vector<std::size_t> all(ep.n());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  Block b;
  ep.gather(b, &all, 0, all.size());
  ep.features(b);
  if (Lbar.size() == 0) {
    Lbar = MatrixXd::Zero(Mt, Mt);
    hbar = VectorXd::Zero(Mt);
  }
  double energy = 0;
  for (int it = 0; it < (converge ? 400 : 1); ++it) {
    ep.P = N * Lbar;
    ep.P.diagonal().array() += 1.0;
    ep.h = N * hbar;
    ep.refresh_q();
    const double gap = ep.set_cavity(Lbar, hbar, N - 1.0);
    EpAccum acc = ep.make_accum(Ep::Pass::sweep_grad);
    ep.site_terms(b, &all, 0, acc, 1.0, grad != nullptr, true);
    energy = -0.5 * ep.logdet_P() + 0.5 * ep.h.dot(ep.m) - N * gap + acc.log_z;
    if (grad) *grad = ep.hyper_gradient(acc.PtPb, acc.grad, 1.0);
    if (!converge) break;
    MatrixXd Q = MatrixXd::Zero(Mt, Mt);
    VectorXd r = VectorXd::Zero(Mt);
    ep.add_sites(b, &all, 0, ep.nu, ep.mu, 1.0, Q, r);
    const MatrixXd Lnew = MatrixXd(Q.selfadjointView<Eigen::Lower>()) / N;
    const VectorXd hnew = r / N;
    const double change = (Lnew - Lbar).cwiseAbs().maxCoeff() + (hnew - hbar).cwiseAbs().maxCoeff();
    Lbar = 0.5 * Lbar + 0.5 * Lnew;
    hbar = 0.5 * hbar + 0.5 * hnew;
    if (change < 1e-14) break;
  }
  return energy;
}

}  // namespace

TEST_CASE("EP: the tied-site gradient is that of the tied energy at a fixed shared site", "[ep][gradient]") {
  // The tied mode (stochastic EP) steps along the gradient of the energy
  // with the shared site held fixed.  At the averaged-site fixed point that
  // is not the total derivative (the fixed point is not a stationary point
  // of this energy in the site), which this also measures.
  const Data d = class_data(60, 29);
  MatrixXd Lbar;
  VectorXd hbar, g;
  tied_energy(d, nullptr, Lbar, hbar, true, &g);
  Ep ep0 = make_ep(d, ep_components(5, 8));
  VectorXd th(ep0.n_hyper());
  ep0.pack_hyper(th);
  REQUIRE(g.size() == th.size());
  const VectorXd fd = fd_gradient(
      [&](const VectorXd& t) {
        MatrixXd L = Lbar;
        VectorXd hh = hbar;
        return tied_energy(d, &t, L, hh, false, nullptr);
      },
      th, 1e-3);
  for (Index j = 0; j < th.size(); ++j) {
    CAPTURE(j);
    CHECK(g(j) == Approx(fd(j)).epsilon(1e-6).margin(1e-8));
  }
  // with the site re-converged at each hyperparameter value: a nearby but different vector
  const VectorXd total = fd_gradient(
      [&](const VectorXd& t) {
        MatrixXd L;
        VectorXd hh;
        return tied_energy(d, &t, L, hh, true, nullptr);
      },
      th, 1e-3);
  const double rel = (total - g).norm() / total.norm();
  CHECK(rel < 0.1);
  CHECK(rel > 1e-4);
}

TEST_CASE("EP: the tied-site evidence keeps its digits at a million rows", "[ep][tied]") {
  // g(q) - g(cavity) for q = cavity x one more copy of the tied site, from
  // set_cavity(), against the same difference in long double; the naive
  // (1 - N) g(q) + N g(cavity) in double loses about log10(N) digits here.
  const Data d = class_data(50, 31);
  EpSettings opt;
  opt.tied = true;
  Ep ep = make_ep(d, ep_components(6, 9), Settings(), opt);
  const Index M = ep.total_size();
  const MatrixXd B = fixtures::normal_matrix(M, M, 5) / std::sqrt(static_cast<double>(M));
  const MatrixXd Lbar = 1e-3 * B * B.transpose() + 1e-4 * MatrixXd::Identity(M, M);
  const VectorXd hbar = 1e-3 * fixtures::normal_matrix(M, 1, 6);
  const double N = 1e6;
  ep.P = N * Lbar;
  ep.P.diagonal().array() += 1.0;
  ep.h = N * hbar;
  ep.refresh_q();
  const double gap = ep.set_cavity(Lbar, hbar, N - 1.0);
  using MatL = Eigen::Matrix<long double, Eigen::Dynamic, Eigen::Dynamic>;
  using VecL = Eigen::Matrix<long double, Eigen::Dynamic, 1>;
  auto g = [&](long double k) {  // the log normaliser of I + k Lbar, k hbar in long double
    MatL P = k * Lbar.cast<long double>();
    P.diagonal().array() += 1.0L;
    const VecL hh = k * hbar.cast<long double>();
    const Eigen::LLT<MatL> llt(P);
    const MatL L = llt.matrixL();
    long double ld = 0;
    for (Index i = 0; i < M; ++i) ld += 2.0L * std::log(L(i, i));
    return -0.5L * ld + 0.5L * hh.dot(llt.solve(hh));
  };
  const long double ref = g(static_cast<long double>(N)) - g(static_cast<long double>(N) - 1.0L);
  CHECK(std::abs(static_cast<long double>(gap) - ref) < 1e-9L * (1.0L + std::abs(ref)));
  // and the evidence term N * gap is accurate to far better than one nat
  CHECK(std::abs(N * (static_cast<long double>(gap) - ref)) < 1e-3L);
}
