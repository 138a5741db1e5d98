"""gb.sample(model) with no method: the method chosen per model and number of hyperparameters, the
reason recorded, and a run until converged within a budget (issue 24 §4)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gpbayes as gb
from gpbayes import methods


def _X(n, d, seed=0):
    return np.random.default_rng(seed).uniform(-2, 2, size=(n, d))


def test_the_choice_per_model_and_number_of_hyperparameters():
    X2, X4, X5 = _X(30, 2), _X(30, 4), _X(30, 5)
    y2 = np.sin(2 * X2[:, 0]) > 0
    cases = [
        (gb.GPRegressor(X2, np.sin(2 * X2[:, 0]), ard=False), gb.RandomWalkMH(), "3 hyperparameters (<= 6)"),
        (gb.GPRegressor(X4, np.sin(2 * X4[:, 0])), gb.RandomWalkMH(), "6 hyperparameters (<= 6)"),
        (gb.GPRegressor(X5, np.sin(2 * X5[:, 0])), gb.NUTS(), "7 hyperparameters (> 6)"),
        (gb.GPClassifier(X2, y2, ard=False), gb.PseudoMarginal(), "2 hyperparameters (<= 2)"),
        (gb.GPClassifier(X2, y2), gb.ISCorrectedNUTS(), "3 hyperparameters (> 2): NUTS on the EP marginal"),
        (gb.GPClassifier(X5, np.sin(2 * X5[:, 0]) > 0, likelihood="logistic"), gb.ISCorrectedNUTS(),
         "6 hyperparameters (> 2): NUTS on the Laplace marginal"),
        (gb.PoissonGP(_X(30, 1), np.arange(30) % 4), gb.PseudoMarginal(), "2 hyperparameters"),
        (gb.PoissonGP(X4, np.arange(30) % 4), gb.ISCorrectedNUTS(), "5 hyperparameters (> 2)"),
        (gb.PoissonGP(_X(30, 1), np.arange(30) % 4, exposure=np.linspace(1, 2, 30)),
         gb.SliceSampler(representation="surr-site"), "2 hyperparameters: PoissonGP with per-bin exposure"),
        (gb.PoissonGP(X4, np.arange(30) % 4, exposure=np.linspace(1, 2, 30)),
         gb.WhitenedNUTS(), "5 hyperparameters (> 2): PoissonGP with per-bin exposure"),
    ]
    for model, expected, why in cases:
        meth, reason = methods.default_method(model)
        assert meth == expected, (type(model).__name__, meth)
        assert why in reason and "benchmarks/results/" in reason, reason
        assert meth.label in gb.methods(model)  # the choice is one of the model's methods
    assert (methods.MAX_RANDOM_WALK_HYPERPARAMETERS, methods.MAX_PSEUDO_MARGINAL_HYPERPARAMETERS) == (6, 2)
    sparse = gb.SparseGPClassifier(X2, y2, n_inducing=5)
    assert methods.default_method(sparse)[0] == gb.JointHMC()
    lvm = gb.GPLVMRegressor(_X(12, 1), np.sin(_X(12, 1)), latent_dim=1, n_inducing=4)
    assert methods.default_method(lvm)[0] == gb.GPLVMPseudoMarginal()


def test_the_choice_and_its_reason_are_recorded_and_shown_and_an_unconverged_run_warns():
    X = _X(25, 2)
    clf = gb.GPClassifier(X, np.sin(2 * X[:, 0]) > 0, ard=False)
    meth, reason = methods.default_method(clf)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = gb.sample(clf, chains=2, budget=100, n_warmup=20, seed=1, progress=False, cores=1)
    shown = [str(w.message) for w in caught if issubclass(w.category, methods.DefaultMethodWarning)]
    assert len(shown) == 1 and reason in shown[0] and "within 100 draws per chain" in shown[0]
    post = idata.posterior
    assert (post.attrs["method"], post.attrs["method_default"], post.attrs["method_reason"]) == (meth.label, 1, reason)
    assert post.attrs["options"] == meth.to_json()
    # 2 x 100 draws cannot reach ESS 400: the budget stops it and the user is told
    assert idata.sample_stats.attrs["stopped"] == "budget: 100 draws" and post.sizes["draw"] == 100
    assert any("not converged within the budget" in str(w.message) for w in caught)


def test_the_default_run_reaches_the_stop_rule_on_a_small_regression_problem():
    """R-hat and bulk ESS read back from the returned InferenceData by ArviZ: <= 1.01 and >= 400 on every
    hyperparameter; the chains run in worker processes (cores=2; test_parallel checks that blocks in
    processes give the draws and the verdict of cores=1)."""
    import arviz as az

    X = _X(20, 1, seed=3)
    reg = gb.GPRegressor(X, np.sin(2 * X[:, 0]) + 0.1 * np.random.default_rng(3).standard_normal(20))
    with pytest.warns(methods.DefaultMethodWarning, match="running 'rwmh' until split R-hat < 1.01"):
        idata = gb.sample(reg, n_warmup=150, seed=2, progress=False, cores=2)
    assert idata.sample_stats.attrs["stopped"] == "converged" and idata.posterior.attrs["cores"] == 2
    unc = gb.io.group(idata, "unconstrained_posterior")
    assert float(az.rhat(unc, method="rank").to_array().max()) <= 1.01
    assert float(az.ess(unc, method="bulk").to_array().min()) >= 400
    assert idata.posterior.sizes["draw"] < 10_000  # stopped by the rule, not the budget


def test_an_explicit_method_runs_as_before_and_bad_budgets_are_named():
    X = _X(20, 1)
    reg = gb.GPRegressor(X, np.sin(2 * X[:, 0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", methods.DefaultMethodWarning)
        idata = gb.sample(reg, "rwmh", chains=2, n_warmup=10, seed=1, progress=False)
    assert idata.posterior.sizes["draw"] == 1000 and "method_default" not in idata.posterior.attrs
    assert idata.sample_stats.attrs["stopped"] == "length"
    with pytest.raises(ValueError, match=r"options \['max_tree_depth'\] belong to a method"):
        gb.sample(reg, max_tree_depth=3)
    with pytest.raises(ValueError, match="budget bounds a run until converged"):
        gb.sample(reg, "rwmh", budget=100)
    with pytest.raises(ValueError, match=r"budget has no key\(s\) \['minutes'\]"):
        gb.sample(reg, budget={"minutes": 3})
    with pytest.raises(ValueError, match=r"budget must be an integer >= 1 \(draws per chain\)"):
        gb.sample(reg, budget=0)
    with pytest.raises(ValueError, match=r"\['max_draws'\] given in until_converged and in budget"):
        gb.sample(reg, "rwmh", until_converged={"max_draws": 50}, budget=100)
    with pytest.warns(methods.DefaultMethodWarning):  # the default method at a fixed length, if asked
        fixed = gb.sample(reg, until_converged=False, chains=2, draws=30, n_warmup=10, progress=False)
    assert fixed.posterior.sizes["draw"] == 30 and fixed.sample_stats.attrs["stopped"] == "length"
    rule = gb.api._stop_rule(True, 1000, {"draws": 300, "seconds": 60})
    assert (rule.max_draws, rule.max_seconds, rule.rhat, rule.ess_bulk) == (300, 60.0, 1.01, 400.0)


def test_the_default_run_of_a_classifier_with_many_hyperparameters_reaches_the_stop_rule():
    """An ARD classifier (3 hyperparameters): the default is the IS-corrected NUTS, run until the weighted
    estimator's bulk ESS is >= 400 and R-hat <= 1.01 on every hyperparameter (read back from the result)."""
    from gpbayes.diagnostics import importance_corrected_summary

    X = _X(25, 2, seed=4)
    clf = gb.GPClassifier(X, np.sin(2 * X[:, 0]) + 0.3 * np.random.default_rng(4).standard_normal(25) > 0)
    with pytest.warns(methods.DefaultMethodWarning, match="running 'nuts-is' until split R-hat < 1.01"):
        idata = gb.sample(clf, n_warmup=150, seed=2, progress=False, cores=2)
    assert idata.sample_stats.attrs["stopped"] == "converged"
    s = importance_corrected_summary(gb.api.psi_draws(idata).values, idata.sample_stats["log_weight"].values)
    assert s["rhat"].max() <= 1.01 and s["ess_bulk"].min() >= 400
    assert idata.posterior.sizes["draw"] < 10_000


def test_a_sum_product_or_periodic_kernel_gets_nuts_whatever_its_size():
    """Random-walk MH is the default for one stationary kernel with few hyperparameters (measured on
    the SE); a sum, a product or a periodic kernel -- with or without a mean -- gets NUTS, and the
    reason names the co2-seasonal evidence (SE + periodic, 6 hyperparameters: random-walk MH had not
    converged after 4 x 10,000 draws)."""
    from gpbayes.kernels import Matern52, Periodic, SquaredExponential
    from gpbayes.methods import NUTS, RandomWalkMH, default_method

    t = np.linspace(0.0, 3.0, 25)[:, None]
    y = np.sin(2 * np.pi * t[:, 0])
    for kernel, want in [(Matern52(1), RandomWalkMH), (Periodic(1), NUTS),
                         (SquaredExponential(1) + Periodic(1), NUTS), (SquaredExponential(1) * Periodic(1), NUTS)]:
        for mean in (None, gb.means.Constant(0.0, 1.0)):
            method, why = default_method(gb.GPRegressor(t, y, kernel=kernel, mean=mean))
            assert isinstance(method, want), (kernel, mean, why)
            if want is NUTS:
                assert "co2-seasonal" in why and "random-walk MH" in why
