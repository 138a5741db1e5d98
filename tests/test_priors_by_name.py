"""prior= by name (issue 33 item 3): one hyperparameter's default replaced, the others kept, in every model;
the keys are the posterior's names (one scheme: ``lengthscale``, an entry ``lengthscale[age]``,
``signal_variance``, ``noise_variance``; ``signal_std``, inverse squared lengthscales, ``noise_precision``
where the quantity is that), exactly true of the kernel's parameters; the names of before are still
accepted with a DeprecationWarning naming the new one; unknown names stop with the allowed ones; the
default priors described in the user guide are the numbers scipy computes."""

from __future__ import annotations
import functools

import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import gpbayes as gb
from gpbayes import priors
from gpbayes.kernels import Matern52, Periodic, SquaredExponential


def _standardized(cls):
    """The model class with ``units="standardized"``: these tests pin the prior-by-name and layout mechanics
    on the model's own scale (posterior = exp(unconstrained_posterior)); the data's units: tests/test_units.py."""
    return functools.partial(cls, units="standardized")


ROOT = Path(__file__).resolve().parents[1]
HN = priors.HalfNormal(0.5)


def _data(n=20, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X[:, 0] - 0.5 * X[:, -1] + 0.3 * rng.normal(size=n)


def _replaced(model, default, key, value):
    """Indices where model.prior differs from the default prior; each of them holds ``value``."""
    diff = [i for i, (a, b) in enumerate(zip(model.prior.components, default.prior.components)) if a != b]
    assert all(model.prior.components[i] is value for i in diff), key
    assert len(model.prior) == len(default.prior)
    return [model.hyperparameter_labels[i] for i in diff]


def test_regressor_noise_prior_by_name_keeps_the_other_defaults():
    X, y = _data()
    default = _standardized(gb.GPRegressor)(X, y)
    model = _standardized(gb.GPRegressor)(X, y, prior={"noise_variance": HN})
    assert _replaced(model, default, "noise_variance", HN) == ["noise_variance"]
    assert isinstance(model.prior, priors.IndependentPrior)
    psi = np.array([0.1, -0.2, 0.3, -2.0])
    lp = sum(c.log_density(p) for c, p in zip(default.prior.components[:3], psi[:3])) + HN.log_density(psi[3])
    assert model.prior.log_density(psi) == pytest.approx(lp, rel=1e-14)


@pytest.mark.parametrize("key,expected", [
    ("signal_variance", ["signal_variance"]), ("lengthscale[1]", ["lengthscale[1]"]),
    ("lengthscale", ["lengthscale[0]", "lengthscale[1]"]),
])
def test_names_entries_and_vectors_of_the_fg_kernel(key, expected):
    X, y = _data()
    value = priors.Exponential(1.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # the current names warn of nothing
        model = _standardized(gb.GPRegressor)(X, y, prior={key: value})
    assert _replaced(model, default := _standardized(gb.GPRegressor)(X, y), key, value) == expected
    assert default.hyperparameter_labels == ["lengthscale[0]", "lengthscale[1]", "signal_variance", "noise_variance"]


@pytest.mark.parametrize("key,expected,new", [
    ("sigma", ["signal_variance"], "signal_variance"), ("tau_1", ["lengthscale[1]"], "lengthscale[1]"),
    ("lengthscale_1", ["lengthscale[1]"], "lengthscale[1]"), ("tau", ["lengthscale[0]", "lengthscale[1]"], "lengthscale"),
])
def test_the_names_of_before_still_work_with_a_deprecation_warning_naming_the_new_one(key, expected, new):
    X, y = _data()
    value = priors.Exponential(1.5)
    with pytest.warns(DeprecationWarning, match=rf"prior key '{key}' is deprecated; use '{re.escape(new)}'") as rec:
        model = _standardized(gb.GPRegressor)(X, y, prior={key: value})
    assert rec[0].filename == __file__  # the warning points at the caller's line
    assert _replaced(model, _standardized(gb.GPRegressor)(X, y), key, value) == expected


def test_a_members_own_key_overrides_its_group_in_either_order():
    X, y = _data(d=3)
    a, b = priors.HalfNormal(1.0), priors.HalfCauchy(2.0)
    for prior in ({"lengthscale": a, "lengthscale[2]": b}, {"lengthscale[2]": b, "lengthscale": a},
                  {"tau_2": b, "lengthscale": a}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # tau_2
            comps = _standardized(gb.GPRegressor)(X, y, prior=prior).prior.components
        assert comps[:3] == (a, a, b)


def test_unknown_names_stop_with_the_allowed_ones_and_the_closest():
    X, y = _data()
    with pytest.raises(ValueError) as err:
        _standardized(gb.GPRegressor)(X, y, prior={"noise_var": HN})
    msg = str(err.value)
    assert "GPRegressor: unknown hyperparameter 'noise_var'" in msg
    assert "did you mean 'noise_variance'" in msg
    assert "the names are ['lengthscale', 'signal_variance', 'noise_variance']" in msg
    assert "one entry of a vector each: ['lengthscale[0]', 'lengthscale[1]']" in msg
    assert "tau" not in msg  # the names of before are not offered
    with pytest.raises(ValueError, match=r"unknown hyperparameter 'amplitude' in prior=; the names are"):
        _standardized(gb.GPClassifier)(X, y > 0, prior={"amplitude": HN})


def test_a_name_and_its_alias_together_are_refused_and_values_must_be_priors():
    X, y = _data()
    with pytest.raises(ValueError, match=r"sets 'signal_variance' twice, as 'sigma' and 'signal_variance'"), \
            pytest.warns(DeprecationWarning, match="'sigma' is deprecated"):
        _standardized(gb.GPRegressor)(X, y, prior={"sigma": HN, "signal_variance": HN})
    with pytest.raises(TypeError, match=r"prior\['noise_variance'\] must be a prior on one positive hyperparameter"):
        _standardized(gb.GPRegressor)(X, y, prior={"noise_variance": 0.5})


def test_a_full_independent_prior_is_used_as_it_is():
    X, y = _data()
    full = priors.IndependentPrior((priors.Gamma(1.0, 1.0),) * 4)
    assert _standardized(gb.GPRegressor)(X, y, prior=full).prior is full
    with pytest.raises(ValueError, match="prior has 3 components, the model 4"):
        _standardized(gb.GPRegressor)(X, y, prior=priors.IndependentPrior(full.components[:3]))


def test_ard_names_after_dataframe_columns_and_their_aliases():
    pd = pytest.importorskip("pandas")
    X, y = _data()
    df = pd.DataFrame(X, columns=["age", "bmi"])
    default = _standardized(gb.GPClassifier)(df, y > 0)
    assert default.hyperparameter_names == ["lengthscale", "signal_variance"]
    assert default.hyperparameter_labels == ["lengthscale[age]", "lengthscale[bmi]", "signal_variance"]
    assert _replaced(_standardized(gb.GPClassifier)(df, y > 0, prior={"lengthscale[bmi]": HN}), default, "", HN) == [
        "lengthscale[bmi]"]
    for key in ("tau_bmi", "lengthscale_bmi"):  # the names of before
        with pytest.warns(DeprecationWarning, match=r"use 'lengthscale\[bmi\]'"):
            model = _standardized(gb.GPClassifier)(df, y > 0, prior={key: HN})
        assert _replaced(model, default, key, HN) == ["lengthscale[bmi]"]
    with pytest.raises(ValueError, match=r"did you mean 'lengthscale\[bmi\]'"):
        _standardized(gb.GPClassifier)(df, y > 0, prior={"lengthscale[bni]": HN})


def test_poisson_sparse_and_gplvm_models_take_priors_by_name():
    X, y = _data(n=15)
    counts = np.random.default_rng(1).poisson(2.0, size=15)
    default = _standardized(gb.PoissonGP)(X, counts)
    assert _replaced(_standardized(gb.PoissonGP)(X, counts, prior={"signal_variance": HN}), default, "", HN) == ["signal_variance"]

    kw = dict(n_inducing=3, maxiter=6)
    default = _standardized(gb.SparseGPClassifier)(X, y > 0, **kw)
    assert default.hyperparameter_names == ["lengthscale", "signal_std"]
    assert _replaced(_standardized(gb.SparseGPClassifier)(X, y > 0, prior={"signal_std": HN}, **kw), default, "", HN) == ["signal_std"]
    with pytest.warns(DeprecationWarning, match="'sigma_f' is deprecated; use 'signal_std'"):
        model = _standardized(gb.SparseGPClassifier)(X, y > 0, prior={"sigma_f": HN}, **kw)
    assert _replaced(model, default, "", HN) == ["signal_std"]
    with pytest.raises(ValueError, match=r"this model samples 'signal_std' instead \(signal_variance = signal_std"):
        _standardized(gb.SparseGPClassifier)(X, y > 0, prior={"signal_variance": HN}, **kw)

    Y = np.column_stack([y, np.sin(X[:, 0])])
    kw = dict(latent_dim=2, n_inducing=4, ml_restarts=1, ml_max_iter=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the five-iteration ML fit may say it did not converge
        default = gb.GPLVMRegressor(X, Y, **kw)
        assert default.hyperparameter_names == ["latent_inverse_squared_lengthscale",
                                                "output_inverse_squared_lengthscale", "signal_variance",
                                                "noise_precision"]
        assert [h.dim for h in default.hyperparameters] == ["feature", "latent", None, None]
        model = gb.GPLVMRegressor(X, Y, prior={"noise_precision": HN, "latent_inverse_squared_lengthscale": HN}, **kw)
        old = gb.GPLVMRegressor(X, Y, prior={"beta": HN, "sigma": HN}, **kw)
    assert _replaced(model, default, "", HN) == ["latent_inverse_squared_lengthscale[0]",
                                                 "latent_inverse_squared_lengthscale[1]", "noise_precision"]
    assert old.prior.components == model.prior.components
    with pytest.raises(ValueError, match=r"unknown hyperparameter 'noise_variance'.*samples 'noise_precision'"):
        gb.GPLVMRegressor(X, Y, prior={"noise_variance": HN}, **kw)


def test_other_kernels_and_sums_get_prefixed_aliases():
    X, y = _data()
    k = SquaredExponential(2, parameterisation="ma") + Periodic(2)
    model = _standardized(gb.GPRegressor)(X, y, kernel=k)
    assert model.hyperparameter_names == ["se_lengthscale", "se_signal_std", "periodic_lengthscale", "periodic_period",
                                          "periodic_signal_variance", "noise_variance"]
    keys = priors.hyperparameter_keys(model.hyperparameters, model._legacy_names(), model.param_names,
                                      priors.kernel_aliases(k))
    assert keys["se_signal_std"] == ((1,), 1, None) and keys["se_sigma_f"] == ((1,), 1, "se_signal_std")
    assert keys["periodic_signal_variance"] == ((4,), 1, None)
    m52 = _standardized(gb.GPRegressor)(X, y, kernel=Matern52(2, ard=True), prior={"signal_variance": HN, "lengthscale": HN})
    assert [c is HN for c in m52.prior.components] == [True, True, True, False]
    from gpbayes.kernels import stationary

    for name in stationary.__all__[1:]:  # every Matérn and the RQ: sigma^2 g(r), sigma^2 = k(x, x)
        kern = getattr(stationary, name)(2)
        assert priors.kernel_aliases(kern)[-1] == "signal_variance"
        psi = np.zeros(kern.n_params)
        psi[-1] = 0.7
        assert kern(psi, X[:1])[0, 0] == pytest.approx(math.exp(0.7), rel=1e-12)

    class Bare:  # a kernel of the protocol alone: no aliases
        param_names = ["a", "b"]

    assert priors.kernel_aliases(Bare()) == [None, None]
    # amis' tau is sqrt(2) lengthscales: no lengthscale alias
    assert priors.kernel_aliases(SquaredExponential(2, ard=True, parameterisation="amis")) == [None, None,
                                                                                              "signal_variance"]


@pytest.mark.parametrize("parameterisation", ["fg", "ma", "gplvm", "amis"])
def test_the_aliases_are_exactly_what_the_kernel_computes(parameterisation):
    """k(x, x) is the signal variance (signal_std^2); a lengthscale l gives k = v exp(-r^2 / (2 l^2)) (R&W eq. 4.9),
    an inverse squared lengthscale w gives k = v exp(-w r^2 / 2)."""
    k = SquaredExponential(1, parameterisation=parameterisation)
    alias = dict(zip(priors.kernel_aliases(k), (0, 1)))
    psi = np.array([0.3, -0.4])
    x = np.array([[0.0], [0.9]])
    K = k(psi, x)
    theta = np.exp(psi)
    v = {"signal_variance": theta[1], "signal_std": theta[1] ** 2}
    (amp_name,) = [a for a in alias if a in v]
    assert K[0, 0] == pytest.approx(v[amp_name], rel=1e-12)
    r2 = 0.81
    if "lengthscale" in alias:
        assert K[0, 1] == pytest.approx(v[amp_name] * math.exp(-r2 / (2 * theta[0] ** 2)), rel=1e-12)
    elif "inverse_squared_lengthscale" in alias:
        assert K[0, 1] == pytest.approx(v[amp_name] * math.exp(-theta[0] * r2 / 2), rel=1e-12)
    elif parameterisation == "ma":  # already named lengthscale
        assert k.param_names[0] == "lengthscale"
        assert K[0, 1] == pytest.approx(v[amp_name] * math.exp(-r2 / (2 * theta[0] ** 2)), rel=1e-12)
    else:  # amis: exp(-r^2 / tau^2), no standard name
        assert K[0, 1] == pytest.approx(v[amp_name] * math.exp(-r2 / theta[0] ** 2), rel=1e-12)


def test_gplvm_aliases_say_what_gadd_et_al_parameters_are():
    """sigma_l are k_z's and theta_j k_f's parameters in the ``gplvm`` SE parameterisation (inverse squared
    lengthscales, checked above), theta_S k_f's variance; beta the noise precision, y | Z ~ N(0, K_f + I / beta)
    (Gadd et al. eqs. 1-2, ``gpbayes.gplvm.vb``)."""
    from gpbayes.gplvm.vb import SupervisedGPLVM

    X, y = _data(n=8)
    g = SupervisedGPLVM(X, np.column_stack([y, y]), 2, 4)
    aliases = priors.gplvm_aliases(g.param_names)
    assert aliases == ["latent_inverse_squared_lengthscale_0", "latent_inverse_squared_lengthscale_1",
                       "output_inverse_squared_lengthscale_0", "output_inverse_squared_lengthscale_1",
                       "signal_variance", "noise_precision"]
    psi = np.log([0.5, 2.0, 1.5, 0.7, 1.3, 40.0])
    psi_z, psi_f, log_beta = g.split(psi)
    for kern, part, stem in ((g.input_kernel, psi_z, "latent_"), (g.latent_kernel, psi_f, "output_")):
        own = priors.kernel_aliases(kern)  # the SE kernel's own descriptive names
        idx = [list(psi).index(p) for p in part]
        assert [aliases[i] for i in idx] == [a if a == "signal_variance" else stem + a for a in own]
    assert log_beta == psi[aliases.index("noise_precision")]


def test_a_prior_by_name_reaches_the_sampler():
    """A slice-sampled Cox process with HalfNormal / HalfCauchy priors by name (their slice widths, their
    densities in the target): the recorded prior is the resolved one and the chain moves."""
    X, _ = _data(n=20, d=1)
    counts = np.random.default_rng(2).poisson(np.exp(np.sin(2 * X[:, 0])))
    model = _standardized(gb.PoissonGP)(X, counts, prior={"lengthscale": priors.HalfNormal(1.0),
                                           "signal_variance": priors.HalfCauchy(1.0)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 30 draws: "not converged"
        idata = gb.sample(model, method="slice-surr-site", chains=1, draws=30, n_warmup=10, seed=4, progress=False)
    assert "HalfNormal(scale=1.0)" in idata.posterior.attrs["prior"]
    assert "HalfCauchy(scale=1.0)" in idata.posterior.attrs["prior"]
    assert np.unique(idata.posterior["lengthscale"].values).size > 5


# ---------------------------------------------------------------------------
# the user guide's table of the default priors
# ---------------------------------------------------------------------------
def _fmt(x: float) -> str:
    """Three significant figures, never in exponent notation."""
    return np.format_float_positional(float(x), precision=3, unique=False, fractional=False, trim="-")


def default_prior_numbers() -> dict[str, tuple]:
    """(mean, median, 5 % quantile, 95 % quantile) of each default prior (inf: no mean), from scipy.stats; rows
    ``*_implied`` are of a monotone function of the sampled parameter (its quantiles are the function's of the
    parameter's quantiles, its mean an integral)."""
    rows = {f"fg_lengthscale_d{d}": (stats.gamma(1.0, scale=math.sqrt(d)), None) for d in (1, 4, 16)}
    rows.update({
        "fg_signal_variance": (stats.gamma(1.1, scale=1 / 0.1), None),
        "noise_variance": (stats.invgamma(1.0, scale=0.01), None),
        "noise_std_implied": (stats.invgamma(1.0, scale=0.01), np.sqrt),
        "period": (stats.lognorm(1.0), None),
        "sparse": (stats.gamma(2.0, scale=1 / 0.5), None),
        "sparse_signal_variance_implied": (stats.gamma(2.0, scale=1 / 0.5), np.square),
        "gplvm": (stats.gamma(1.0, scale=1 / 0.1), None),
        "gplvm_lengthscale_implied": (stats.gamma(1.0, scale=1 / 0.1), lambda t: 1 / np.sqrt(t)),
        "gplvm_beta": (stats.gamma(1.0, scale=1 / 0.001), None),
        "gplvm_noise_variance_implied": (stats.gamma(1.0, scale=1 / 0.001), lambda t: 1 / t),
    })
    out = {}
    for key, (dist, g) in rows.items():
        if g is None:
            out[key] = (dist.mean(), dist.median(), dist.ppf(0.05), dist.ppf(0.95))
            continue
        lo, hi = sorted([g(dist.ppf(0.05)), g(dist.ppf(0.95))])
        # 1 / beta with beta ~ Gamma(1, 0.001) is InverseGamma(1, 0.001): no mean
        mean = np.inf if key == "gplvm_noise_variance_implied" else dist.expect(g)
        out[key] = (mean, g(dist.median()), lo, hi)
    return out


def test_the_user_guide_states_the_default_priors_as_computed():
    text = (ROOT / "docs" / "user_guide.md").read_text()
    section = text[text.index("## Priors"):]
    section = section[: section.index("\n## ", 5)] if "\n## " in section[5:] else section
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\|[^|]*\|[^|]*\|[^|]*<!-- (\w+) -->\s*\|(.*)\|$", section,
                                                              flags=re.M)}
    numbers = default_prior_numbers()
    assert set(rows) == set(numbers), sorted(set(numbers) ^ set(rows))
    for key, (mean, median, lo, hi) in numbers.items():
        cells = [c.strip() for c in rows[key].split("|")]
        want = ["none" if not np.isfinite(mean) else _fmt(mean), _fmt(median), f"{_fmt(lo)} – {_fmt(hi)}"]
        assert cells == want, (key, cells, want)
    # and the models' defaults are the priors the table describes
    X, y = _data(d=4)
    comps = _standardized(gb.GPRegressor)(X, y).prior.components
    assert comps == (priors.Gamma(1.0, 0.5),) * 4 + (priors.Gamma(1.1, 0.1), priors.InverseGamma(1.0, 0.01))
