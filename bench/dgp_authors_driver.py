# One fit of the authors' AEP deep GP (github.com/thangbui/deepGP_approxEP,
# numpy/code, ported to Python 3 by bench/dgp_authors.R) on one PBP split, with
# the protocol of their regression driver numpy/tests/run_reg_sep.py: targets
# normalised, inputs as they are, minibatch 50, Adam 0.005, ceil(6000 * 50 / n)
# epochs, numpy seed 123.  Prints one line "RESULT test_ll rmse seconds
# iterations" on the original scale (their formula: mean Gaussian log density).
#
#   python3 dgp_authors_driver.py <code dir> <split dir> <split> <M> <iterations> [hidden ...]
import sys, math, time, os, io, contextlib
code, d = sys.argv[1], sys.argv[2]
split, M, iters = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
hid = [int(h) for h in sys.argv[6:]]
sys.path.insert(0, code)
import numpy as np
import AEPDGP_net
np.random.seed(123)
data = np.loadtxt(os.path.join(d, 'data.txt'))
xi = np.loadtxt(os.path.join(d, 'index_features.txt'), dtype=int)
yi = np.loadtxt(os.path.join(d, 'index_target.txt'), dtype=int)
X = data[:, xi]
y = data[:, yi].reshape(-1, 1)
tr = np.loadtxt(os.path.join(d, 'index_train_%d.txt' % split), dtype=int)
te = np.loadtxt(os.path.join(d, 'index_test_%d.txt' % split), dtype=int)
net = AEPDGP_net.AEPDGP_net(X[tr], y[tr], hid, [M] * (len(hid) + 1), lik='Gaussian')
epochs = int(np.ceil(iters * 50.0 / len(tr)))
batches = int(np.ceil(len(tr) / 50.0))
t0 = time.time()
with contextlib.redirect_stdout(io.StringIO()):  # their progress bar
    net.train(X[te], y[te], no_epochs=epochs, no_points_per_mb=50, lrate=0.005)
t1 = time.time()
m, v = net.predict(X[te])
rmse = np.sqrt(np.mean((y[te] - m) ** 2))
ll = np.mean(-0.5 * np.log(2 * math.pi * v) - 0.5 * (y[te] - m) ** 2 / v)
print('RESULT %.6f %.6f %.3f %d' % (ll, rmse, t1 - t0, epochs * batches))
