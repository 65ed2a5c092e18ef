// FLOP rate of one minibatch evaluation (ELBO + all gradients) of the SVGP
// engine, against an Eigen GEMM of the same shape, in the same process.
// Built by bench/efficiency.R with R's compiler flags (and optionally
// -march=native).  Usage: efficiency <M> <batch> <threads> <reps>
#include <scalegp/scalegp.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
using namespace scalegp;
using clk = std::chrono::steady_clock;

int main(int argc, char** argv) {
  const Index M = argc > 1 ? std::atoi(argv[1]) : 100, B = argc > 2 ? std::atoi(argv[2]) : 2000;
  const unsigned threads = argc > 3 ? std::atoi(argv[3]) : 1;
  const int reps = argc > 4 ? std::atoi(argv[4]) : 20;
  const Index D = 8, n = B;
  Rng rng(1);
  MatrixXd X(n, D);
  VectorXd y(n), w = VectorXd::Ones(n), o = VectorXd::Zero(n);
  for (Index i = 0; i < n; ++i) {
    for (Index j = 0; j < D; ++j) X(i, j) = uniform01(rng);
    y(i) = std::sin(3 * X(i, 0)) + X(i, 1) * X(i, 1) + 0.1 * (uniform01(rng) - 0.5);
  }
  Component g;
  g.cols = {0, 1, 2, 3, 4, 5, 6, 7};
  g.kernel.log_ls = VectorXd::Zero(D);
  g.Z = kmeans(X, M, rng);
  Svgp model({g}, Likelihood(Family::gaussian), Settings(), X.data(), n, D, y.data(), w.data(), o.data());
  const ParallelFor pfor = threads > 1 ? thread_for(threads) : ParallelFor(serial_for);
  // one natural step so that S is a realistic dense matrix
  model.natural_step(model.evaluate(nullptr, false, pfor), 1.0, 1.0);
  model.refresh();
  auto t0 = clk::now();
  double sink = 0;
  for (int r = 0; r < reps; ++r) {
    const auto acc = model.evaluate(nullptr, true, pfor);
    sink += model.gradient(acc, 1.0).sum();
  }
  const double t_eval = std::chrono::duration<double>(clk::now() - t0).count() / reps;
  // FLOPs of the data pass: Phi = K L^-T (B M^2), Phi S (2 B M^2), rank update
  // (B M^2), Kbar = Phibar L^-1 (B M^2), plus the kernel (3 B M D);
  // post-processing: 3 M^3 (Q (S - I), two triangular solves).
  const double flops = 5.0 * B * M * M + 3.0 * B * M * D + 3.0 * M * M * M;
  // GEMM of the same shape: (B x M) * (M x M), 2 B M^2 flops
  MatrixXd A = MatrixXd::Random(B, M), S = MatrixXd::Random(M, M), C(B, M);
  t0 = clk::now();
  for (int r = 0; r < reps; ++r) {
    C.noalias() = A * S;
    sink += C(0, 0);
  }
  const double t_gemm = std::chrono::duration<double>(clk::now() - t0).count() / reps;
  const double rate = flops / t_eval / 1e9, gemm = 2.0 * B * M * M / t_gemm / 1e9;
  std::printf("M=%ld batch=%ld threads=%u eval_ms=%.2f gflops=%.2f gemm_gflops=%.2f ratio=%.2f (sink %g)\n",
              static_cast<long>(M), static_cast<long>(B), threads, 1e3 * t_eval, rate, gemm, rate / gemm, sink);
  return 0;
}
