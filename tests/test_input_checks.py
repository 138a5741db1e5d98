"""Inputs checked at the door (issue 23, "Bad input that runs silently"): each case stops with a message naming
the culprit (argument, column, model to use) or warns saying what happened."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gpbayes as gb
from gpbayes import models, priors


def _xy(n=20, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, d))
    return X, np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(n)


class Table:
    """The duck type of a pandas DataFrame the models read (columns + array); the library never imports pandas."""

    def __init__(self, a, columns):
        self._a, self.columns = np.asarray(a, dtype=object), list(columns)

    def __array__(self, dtype=None, copy=None):
        return self._a if dtype is None else self._a.astype(dtype)


def test_duplicated_regression_rows_warn_and_the_default_noise_prior_keeps_the_posterior_proper():
    X, y = _xy()
    Xd, yd = np.vstack([X, X, X]), np.concatenate([y, y, y])  # every (x, y) three times: 40 repeats
    with pytest.warns(UserWarning, match="40 duplicated .* noise variance may collapse"):
        m = gb.GPRegressor(Xd, yd)
    # log posterior along log lambda -> -inf, kernel parameters fixed: the likelihood rises like lambda^-20
    # (40 repeats), the default prior's density falls faster, so the posterior's tail vanishes ...
    psi = lambda t: np.array([0.0, 0.0, 0.0, t])  # noqa: E731
    tail = [m.gp.log_marginal(psi(t)) + m.prior.log_density(psi(t)) for t in (-8.0, -12.0, -16.0)]
    assert tail[0] > tail[1] > tail[2] and tail[2] < tail[0] - 1e3
    # ... whereas under the former Gamma(1, 1) it grows without bound (an improper posterior)
    old = priors.IndependentPrior(m.prior.components[:-1] + (priors.Gamma(1.0, 1.0),))
    grows = [m.gp.log_marginal(psi(t)) + old.log_density(psi(t)) for t in (-8.0, -12.0, -16.0)]
    assert grows[0] < grows[1] < grows[2]
    assert m.prior.components[-1] == models.NOISE_PRIOR == priors.InverseGamma(1.0, 0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gb.GPRegressor(np.vstack([X, X]), np.concatenate([y, y + 0.1]))  # repeated x, different y: no warning


@pytest.mark.parametrize("kw,culprit", [
    ({"draws": 10.5}, "draws"), ({"draws": 0}, "draws"), ({"chains": "2"}, "chains"), ({"chains": 0}, "chains"),
    ({"n_warmup": -1}, "n_warmup"), ({"seed": "abc"}, "seed"), ({"seed": -1}, "seed"), ({"seed": 1.5}, "seed"),
    ({"draws": True}, "draws"),
])
def test_sample_arguments_are_checked_and_the_message_names_the_argument(kw, culprit):
    X, y = _xy()
    with pytest.raises(ValueError, match=rf"^{culprit} must be"):
        gb.sample(gb.GPRegressor(X, y), method="type2-ml", progress=False, **kw)


def test_whole_float_counts_are_accepted():
    X, y = _xy()
    idata = gb.sample(gb.GPRegressor(X, y), method="slice", chains=1.0, draws=5.0, n_warmup=2.0, seed=3.0,
                      progress=False)
    assert idata.posterior.sizes["draw"] == 5


@pytest.mark.parametrize("method,opt", [("amis", {"n_iterations": 0}), ("amis", {"n_per_iteration": 0.5}),
                                         ("mamis", {"slope": 0}), ("amis", {"n_resample": "10"})])
def test_amis_options_are_named_as_the_user_wrote_them(method, opt):
    X, y = _xy()
    (name, _), = opt.items()
    # the method object checks its fields when it is made: the message names the field as the user wrote it
    with pytest.raises(ValueError) as info:
        gb.sample(gb.GPRegressor(X, y), method=method, progress=False, **opt)
    msg = str(info.value)
    assert name in msg and ("must be" in msg or "needs" in msg), msg


def test_a_string_column_is_named():
    X, _ = _xy()
    bad = np.column_stack([X.astype(object), np.array(["red", "blue"] * 10, dtype=object)])
    with pytest.raises(ValueError, match=r"X column 'colour' is not numeric"):
        gb.GPClassifier(Table(bad, ["age", "bmi", "colour"]), [0, 1] * 10)
    with pytest.raises(ValueError, match=r"X column 2 is not numeric"):
        gb.GPClassifier(bad, [0, 1] * 10)
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"age": X[:, 0], "smoker": ["yes", "no"] * 10})
    with pytest.raises(ValueError, match=r"X column 'smoker' is not numeric"):
        gb.GPRegressor(df, X[:, 1])


def test_a_constant_column_is_named():
    X, y = _xy()
    with pytest.raises(ValueError, match=r"constant columns \['const'\]"):
        gb.GPRegressor(Table(np.column_stack([X, np.ones(20)]), ["a", "b", "const"]), y)


def test_label_mapping_is_a_warning():
    X, y = _xy()
    with pytest.warns(UserWarning, match=r"labels mapped: 'no' -> -1 .*'yes' -> \+1"):
        m = gb.GPClassifier(X, np.where(y > 0, "yes", "no"))
    assert m.classes == ("no", "yes")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 0/1 labels need no mapping message
        gb.GPClassifier(X, (y > 0).astype(int))


def test_three_classes_point_to_the_multiclass_model():
    X, _ = _xy(n=21)
    with pytest.raises(ValueError, match=r"got 3: \['a', 'b', 'c'\].*gb\.SparseGPClassifier"):
        gb.GPClassifier(X, ["a", "b", "c"] * 7)


@pytest.mark.parametrize("make,alternative", [
    (lambda X, y: gb.GPClassifier(X, y > 0), "SparseGPClassifier"),
    (lambda X, y: gb.GPRegressor(X, y), "inducing-point"),
    (lambda X, y: gb.PoissonGP(X, (y > 0).astype(int)), "bin the counts"),
])
def test_size_guard_stops_before_allocating_n_by_n(monkeypatch, make, alternative):
    X, y = _xy(n=400)
    need = 3 * 8 * 400 * 400
    monkeypatch.setattr(models, "_available_memory", lambda: need - 1)
    with pytest.raises(MemoryError, match=rf"n = 400 rows needs about .*\({need} bytes.*{alternative}"):
        make(X, y)
    monkeypatch.setattr(models, "_available_memory", lambda: need)
    make(X, y)


def test_available_memory_is_read_without_psutil():
    avail = models._available_memory()
    assert avail is None or avail > 2**20
