"""Issue 24 §3: the library's BLAS thread policy (gpbayes.threads)."""

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from gpbayes import threads
from gpbayes.kernels import SquaredExponential
from gpbayes.mcmc import nuts
from gpbayes.posterior import log_posterior_value_and_grad
from gpbayes.regression import GPRegression


def blas_threads():
    return sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})


@pytest.fixture
def no_user_variables(monkeypatch):
    for v in threads.USER_THREAD_VARIABLES:
        monkeypatch.delenv(v, raising=False)


def test_small_problems_run_with_one_thread_and_the_limit_is_restored(no_user_variables):
    with threadpool_limits(limits=2):
        with threads.sampling_threads(500) as lim:
            assert lim == 1 and blas_threads() == [1]
        assert blas_threads() == [2]
        with threads.sampling_threads(threads.CROSSOVER_N) as lim:  # large: left alone
            assert lim is None and blas_threads() == [2]
        with threads.sampling_threads(threads.CROSSOVER_N, limit=1) as lim:  # explicit
            assert lim == 1 and blas_threads() == [1]


def test_a_users_thread_variable_is_respected(monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    assert threads.user_chose_threads()
    with threadpool_limits(limits=2):
        with threads.sampling_threads(100) as lim:
            assert lim is None and blas_threads() == [2]


def test_bad_limit_is_named():
    with pytest.raises(ValueError, match="limit must be 'auto', None or an integer >= 1"):
        with threads.sampling_threads(10, limit=0):
            pass


def test_the_same_policy_gives_the_same_chain(no_user_variables):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=60)
    vg = log_posterior_value_and_grad(GPRegression(X, y, SquaredExponential(2, ard=True)))
    start = np.array([0.0, 0.0, 0.0, np.log(0.1)])
    runs = []
    for _ in range(2):
        with threads.sampling_threads(60):
            runs.append(nuts.run_chain(np.random.default_rng(3), start, vg, n_draws=5, n_adapt=20).draws)
    assert np.array_equal(runs[0], runs[1])
