"""The two user problems of ``benchmarks/bench_peers.py`` (issue 33): their gpbayes models and the log joint
the benchmark compares with NumPyro's, checked against formulas written out here.

* ``concrete-m52`` (Matérn-5/2 ARD, constant mean): the benchmark's log joint of (psi, beta) -- gpbayes' log
  posterior with beta integrated out (R&W eq. 2.40) plus log N(beta; its conditional, R&W Sec. 2.7) --
  equals log p(psi) + log N(y; beta 1, K + lambda I) + log N(beta; 0, 1) with K from a double loop over
  R&W eq. 4.17 and the priors from scipy.stats on theta plus the Jacobian psi.
* ``co2-seasonal`` (SE + periodic, t in years): the log posterior equals the same naive construction
  (R&W eqs. 4.9 and 4.31) on a synthetic monthly series (statsmodels, which ships the CO2 data, is
  not a dependency of the tests; the loader is checked where it is installed).
* Where NumPyro is installed (the benchmark's peer venv), its log density of the models written with
  its own distributions equals both.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def bp():
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("bench_peers_under_test", BENCH / "bench_peers.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(BENCH))
    return mod


def _matern52(X, ls, var):
    n = X.shape[0]
    K = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            r = math.sqrt(sum(((X[i, k] - X[j, k]) / ls[k]) ** 2 for k in range(X.shape[1])))
            K[i, j] = var * (1 + math.sqrt(5) * r + 5 * r * r / 3) * math.exp(-math.sqrt(5) * r)
    return K


def _se_plus_periodic(t, ell, sf, lp, per, v):
    n = t.size
    K = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            d = t[i] - t[j]
            K[i, j] = sf**2 * math.exp(-0.5 * d * d / ell**2) + v * math.exp(-2 * math.sin(math.pi * d / per) ** 2 / lp**2)
    return K


@pytest.fixture(scope="module")
def concrete(bp):
    X, y, rows = bp.concrete_data()
    with pytest.warns(UserWarning, match="duplicated"):
        model = bp.concrete_model(X, y)
    return model


def test_concrete_data_and_names(bp, concrete):
    X, y, rows = bp.concrete_data()
    assert X.shape == (300, 6) and rows.size == 300 and np.all(np.diff(rows) > 0)
    assert concrete.param_names == [f"lengthscale_{j}" for j in range(6)] + ["variance", "noise_variance"]
    # the standardised target the benchmark gives NumPyro
    np.testing.assert_allclose(concrete.y, (y - y.mean()) / y.std(), rtol=0, atol=1e-12)


def _concrete_point():
    return {"psi": np.array([1.3, 1.7, 2.0, 1.4, 1.2, -0.35, 0.4, -2.5]), "beta": 0.37}


def test_concrete_log_joint_equals_naive(bp, concrete):
    point = _concrete_point()
    psi, beta = point["psi"], point["beta"]
    th = np.exp(psi)
    d = 6
    log_prior = (sum(stats.gamma.logpdf(th[j], 1.0, scale=math.sqrt(d)) for j in range(d))
                 + stats.halfnorm.logpdf(th[6], scale=1.0) + stats.invgamma.logpdf(th[7], 1.0, scale=0.01)
                 + psi.sum())  # the Jacobian of theta = exp(psi), one term per coordinate
    K = _matern52(concrete.X, th[:d], th[6]) + th[7] * np.eye(concrete.n)
    naive = (log_prior + stats.multivariate_normal.logpdf(concrete.y, beta * np.ones(concrete.n), K)
             + stats.norm.logpdf(beta, 0.0, 1.0))
    assert bp.user_log_joint(concrete, point) == pytest.approx(naive, abs=1e-8, rel=1e-12)


def _co2_synthetic(bp):
    rng = np.random.default_rng(5)
    t = np.arange(48) / 12.0
    ppm = 340 + 1.5 * t + 3 * np.sin(2 * np.pi * t) + 0.3 * rng.normal(size=t.size)
    return t, ppm, bp.co2_model(t, ppm)


def _co2_point():
    return {"psi": np.array([0.6, -0.2, 0.7, 0.01, -1.2, -6.0])}


def test_co2_log_posterior_equals_naive(bp):
    t, ppm, model = _co2_synthetic(bp)
    assert model.param_names == ["se_lengthscale", "se_sigma_f", "periodic_lengthscale", "periodic_period",
                                 "periodic_variance", "noise_variance"]
    psi = _co2_point()["psi"]
    ell, sf, lp, per, v, lam = np.exp(psi)
    log_prior = (stats.gamma.logpdf(ell, 4.0, scale=1.0) + stats.halfnorm.logpdf(sf, scale=2.0)
                 + stats.gamma.logpdf(lp, 4.0, scale=1 / 3.0) + stats.lognorm.logpdf(per, 0.05, scale=1.0)
                 + stats.halfnorm.logpdf(v, scale=1.0) + stats.invgamma.logpdf(lam, 1.0, scale=0.01) + psi.sum())
    y = (ppm - ppm.mean()) / ppm.std()
    K = _se_plus_periodic(t, ell, sf, lp, per, v) + lam * np.eye(t.size)
    naive = log_prior + stats.multivariate_normal.logpdf(y, np.zeros(t.size), K)
    assert bp.user_log_joint(model, _co2_point()) == pytest.approx(naive, abs=1e-8, rel=1e-12)


def test_numpyro_mirrors_both(bp, concrete):
    pytest.importorskip("numpyro")
    import jax
    from numpyro.infer.util import initialize_model

    _, _, co2 = _co2_synthetic(bp)
    for name, model, point in (("concrete-m52", concrete, _concrete_point()), ("co2-seasonal", co2, _co2_point())):
        gm, sites = bp.user_numpyro_model(name, model)
        pot = initialize_model(jax.random.PRNGKey(0), gm).potential_fn
        lp_np = -float(pot(bp.user_unconstrained(point, sites)))
        assert lp_np == pytest.approx(bp.user_log_joint(model, point), abs=1e-8, rel=1e-12), name


def test_co2_loader(bp):
    pytest.importorskip("statsmodels")
    t, ppm, first = bp.co2_data()
    assert first == "1977-01" and t.shape == ppm.shape == (300,)
    np.testing.assert_allclose(np.diff(t), 1 / 12, atol=1e-12)
    assert np.all(np.isfinite(ppm)) and 330 < ppm.mean() < 360


# ---------------------------------------------------------------------------
# PyMC 6 + nutpie (issue 41 §8): the PyMC models are gpbayes' posteriors
# ---------------------------------------------------------------------------
def _pymc_cases(bp):
    """(problem, gpbayes model, points, latent) for the four PyMC problems, on small data: housing's and
    Ionosphere's model classes (F&G eq. 5 ARD regression; probit classifier, whitened latent f) on synthetic
    X, Concrete's first 60 of the benchmark's rows, the synthetic CO2 series."""
    import gpbayes as gb

    rng = np.random.default_rng(7)
    X = rng.normal(size=(40, 3))
    reg = gb.GPRegressor(X, X[:, 0] - 0.5 * X[:, 1] + 0.3 * rng.normal(size=40))
    clf = gb.GPClassifier(X, X[:, 0] + 0.5 * rng.normal(size=40) > 0)
    Xc, yc, _ = bp.concrete_data()
    with pytest.warns(UserWarning):
        conc = bp.concrete_model(Xc[:60], yc[:60])
    _, _, co2 = _co2_synthetic(bp)

    def pts(model, extra):
        p = len(model.param_names)
        out = []
        for k in range(3):
            pt = {"psi": 0.3 * rng.normal(size=p) - (0.5 if k == 2 else 0.0)}
            pt.update({name: f() for name, f in extra.items()})
            out.append(pt)
        return out

    co2_pts = [{"psi": _co2_point()["psi"] + 0.1 * rng.normal(size=6)} for _ in range(3)]
    return [("housing", reg, pts(reg, {}), False),
            ("ionosphere-ard", clf, pts(clf, {"v": lambda: rng.normal(size=40)}), True),
            ("concrete-m52", conc, [{**_concrete_point(), "beta": 0.37 + 0.2 * k} for k in range(3)], False),
            ("co2-seasonal", co2, co2_pts, False)]


def test_pymc_mirrors_the_four_problems(bp):
    """PyMC's log density on its unconstrained space (log theta per positive variable, Jacobians included)
    and gpbayes' log joint of the same point differ by one constant: their differences between points agree
    to 1e-6 (what bench_peers' check_pymc_mirror asks before nutpie samples)."""
    pytest.importorskip("pymc", minversion="6")
    for problem, model, points, latent in _pymc_cases(bp):
        pmodel, sites = bp.pymc_model(problem, model, latent)
        logp = pmodel.compile_logp(jacobian=True)
        lp_pm = np.array([float(logp(bp.pymc_point(p, sites))) for p in points])
        lp_gb = np.array([bp.peer_log_joint_gpbayes(problem, model, p, latent) for p in points])
        assert np.ptp(lp_gb) > 0.1, problem  # the points differ in density
        np.testing.assert_allclose(lp_pm - lp_pm[0], lp_gb - lp_gb[0], rtol=0, atol=1e-6, err_msg=problem)
        # nutpie's flat vector: the same values in PyMC's order of free variables
        flat = bp.pymc_flat(points[1], sites)
        assert flat.size == sum(size for _, size, _ in sites)
        np.testing.assert_array_equal(flat[: len(model.param_names)], points[1]["psi"])
        lines = []
        bp.check_pymc_mirror(problem, model, [points[0], points[1]], latent, lines.append)
        assert "agree to" in lines[0]


def test_pymc_mirror_catches_a_different_posterior(bp, monkeypatch):
    """check_pymc_mirror stops the run when PyMC's model is not gpbayes' posterior (here: PyMC given y * 1.5)."""
    pytest.importorskip("pymc", minversion="6")
    import gpbayes as gb

    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 2))
    y = X[:, 0] + 0.3 * rng.normal(size=30)
    model, other = gb.GPRegressor(X, y), gb.GPRegressor(X, 1.5 * y + rng.normal(size=30))
    orig = bp.pymc_model
    monkeypatch.setattr(bp, "pymc_model", lambda problem, m, latent: orig(problem, other, latent))
    starts = [{"psi": 0.3 * rng.normal(size=4)}, {"psi": 0.3 * rng.normal(size=4) - 1.0}]
    with pytest.raises(SystemExit, match="not gpbayes' posterior"):
        bp.check_pymc_mirror("housing", model, starts, False, lambda s: None)


def test_pymc_peer_is_offered_without_pymc(bp):
    """The method name exists (and is not a default) whether or not PyMC is installed: CI's 3.11 leg has none."""
    assert bp.PYMC_PEER in bp.METHODS and set(bp.PYMC_PROBLEMS) == {"housing", "ionosphere-ard", "concrete-m52",
                                                                   "co2-seasonal"}
    assert all(bp.PYMC_PEER not in ms for ms in bp.DEFAULT_METHODS.values())
