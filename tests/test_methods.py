"""Method objects (gpbayes.methods): defaults shared with the library, checks at construction,
strings as aliases, the method recorded in the result, and a sampler added from a test file alone."""

from __future__ import annotations

import dataclasses
import inspect
import json
import warnings
from typing import NamedTuple

import numpy as np
import pytest

import gpbayes as gb
from gpbayes import methods
from gpbayes.mcmc import runner


def _regression(n=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 2))
    return X, np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(n)


def _classes():
    return [cls for cls, _ in methods.registry().values()]


def test_every_default_is_the_library_function_s_or_says_why_it_is_the_api_s():
    """A field backed by a library function has that function's default (inspect.signature); any other
    field names its reason in ``own_defaults``.  So method objects and library cannot drift apart."""
    checked = 0
    for cls in set(_classes()):
        for f in dataclasses.fields(cls):
            if f.name in cls.library:
                fn = cls.library[f.name]()
                param = inspect.signature(fn).parameters[cls.library_names.get(f.name, f.name)]
                assert param.default is not inspect.Parameter.empty, (cls.__name__, f.name, fn)
                assert f.default == param.default, (cls.__name__, f.name, f.default, param.default)
                checked += 1
            else:
                reason = cls.own_defaults.get(f.name, "")
                assert len(reason) > 10, f"{cls.__name__}.{f.name} has neither a library function nor a reason"
    assert checked >= 40
    # the two defaults that disagreed before (issue 23): one value each, in amis.py and in the objects
    from gpbayes import amis

    assert gb.MAMIS().slope == inspect.signature(amis.mamis_sample_sizes).parameters["slope"].default == 20
    pm = inspect.signature(amis.pm_amis).parameters
    assert (gb.PMAMIS().n_iterations, gb.PMAMIS().n_per_iteration) == (pm["n_iterations"].default,
                                                                        pm["n_per_iteration"].default) == (20, 100)
    from gpbayes.mcmc import hyper_slice

    assert methods.latent._REPRESENTATIONS == hyper_slice.METHODS


def test_every_string_is_an_alias_of_a_method_object():
    aliases = {a: v for a, v in methods.registry().items() if v[0].__module__.startswith("gpbayes.methods.")}
    old = {"rwmh", "hmc", "nuts", "slice", "amis", "mamis", "mamis-p", "amis-mamis", "type2-ml", "pseudo-marginal", "nuts-is", "nuts-whitened", "pm-amis",
           "aa", "surr", "ep-ml", "joint-hmc", "gibbs", "pm-within-gibbs", "joint-nuts", "joint-gibbs",
           *(f"slice-{r}" for r in ("fixed", "prior-white", "surr-site", "surr-taylor", "post-site", "post-taylor"))}
    assert set(aliases) == old
    for alias, (cls, fixed) in aliases.items():
        obj = methods.resolve(alias)
        assert obj == cls(**fixed) and obj.label == alias
        assert cls.__doc__ and len(cls.__doc__) > 80, cls  # each cites its paper
    assert methods.resolve("aa") == gb.LatentGibbs(representation="aa")
    assert methods.resolve("slice-post-taylor") == gb.SliceSampler(representation="post-taylor")
    assert methods.resolve("nuts", {"max_tree_depth": 6}) == gb.NUTS(max_tree_depth=6)


@pytest.mark.parametrize("make, match", [
    (lambda: gb.NUTS(target_accept=1.5), r"NUTS\.target_accept must be a number in \(0, 1\) or None, got 1\.5"),
    (lambda: gb.NUTS(max_tree_depth=0), r"NUTS\.max_tree_depth must be an integer >= 1, got 0"),
    (lambda: gb.NUTS(max_tree_depth=2.5), r"NUTS\.max_tree_depth must be an integer >= 1"),
    (lambda: gb.HMC(kappa=0.3), r"HMC\.kappa must be a number in \(0\.5, 1\]"),
    (lambda: gb.RandomWalkMH(adapt_covariance="yes"), r"RandomWalkMH\.adapt_covariance must be True or False"),
    (lambda: gb.PseudoMarginal(n_imp=0), r"PseudoMarginal\.n_imp must be an integer >= 1, got 0"),
    (lambda: gb.PseudoMarginal(approximation="lapalce"), r"approximation must be one of \['laplace', 'ep'\]"),
    (lambda: gb.PseudoMarginal(proposal_cov=np.ones(3)), r"proposal_cov must be a finite square matrix"),
    (lambda: gb.AMIS(n_iterations=0), r"AMIS\.n_iterations must be an integer >= 1, got 0"),
    (lambda: gb.MAMIS(base=0, slope=0), r"base \+ slope >= 1"),
    (lambda: gb.PMAMIS(covariance="full-ish"), r"PMAMIS\.covariance must be one of \['full', 'diag'\]"),
    (lambda: gb.SliceSampler(representation="surr"), r"SliceSampler\.representation must be one of .*'surr-site'"),
    (lambda: gb.LatentGibbs(representation="slice"), r"LatentGibbs\.representation must be one of \['aa', 'surr'\]"),
    (lambda: gb.Slice(step_out=-1), r"Slice\.step_out must be an integer >= 0 or inf"),
    (lambda: gb.JointHMC(metric="full"), r"JointHMC\.metric must be one of \['auto', 'diag', 'dense'\]"),
    (lambda: gb.SparseGibbs(psi_scale=0), r"SparseGibbs\.psi_scale must be a number in \(0, inf\)"),
    (lambda: gb.GPLVMPseudoMarginal(adapt_start=-1), r"adapt_start must be an integer >= 0 or None"),
    (lambda: gb.TypeIIML(n_restarts=0), r"TypeIIML\.n_restarts must be an integer >= 1"),
    (lambda: gb.ISCorrectedNUTS(n_imp=0), r"ISCorrectedNUTS\.n_imp must be an integer >= 1, got 0"),
    (lambda: gb.ISCorrectedNUTS(approximation="vb"), r"ISCorrectedNUTS\.approximation must be one of \['laplace', 'ep'\] or None"),
])
def test_a_bad_field_stops_with_its_name_and_the_allowed_values(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_bad_sample_arguments_name_the_argument():
    reg = gb.GPRegressor(*_regression())
    for kw, match in (({"target_accept": 1.5}, "target_accept"), ({"draws": 10.5}, "draws must be an integer"),
                      ({"chains": "2"}, "chains must be an integer >= 1"), ({"seed": "abc"}, "seed must be"),
                      ({"seed": -1}, "seed must be None \\(fresh entropy\\) or a non-negative integer"),
                      ({"n_warmup": -1}, "n_warmup must be")):
        with pytest.raises(ValueError, match=match):
            gb.sample(reg, "nuts", progress=False, **kw)
    with pytest.raises(ValueError, match="set them as its fields"):
        gb.sample(reg, gb.NUTS(), max_tree_depth=3)
    with pytest.raises(ValueError, match=r"does not apply to GPClassifier; choose one of .*'pseudo-marginal'"):
        gb.sample(gb.GPClassifier(reg.X, reg.y > 0), gb.NUTS())
    with pytest.raises(ValueError, match="method must be a gpbayes method object or one of"):
        gb.sample(reg, "no-u-turn")


def test_a_string_and_its_object_give_the_same_draws_and_the_result_records_every_field():
    reg = gb.GPRegressor(*_regression())
    a = gb.sample(reg, "nuts", chains=2, draws=15, n_warmup=15, seed=3, progress=False, max_tree_depth=5)
    b = gb.sample(reg, gb.NUTS(max_tree_depth=5), chains=2, draws=15, n_warmup=15, seed=3, progress=False)
    np.testing.assert_array_equal(gb.api.psi_draws(a).values, gb.api.psi_draws(b).values)
    attrs = b.posterior.attrs
    assert attrs["method"] == "nuts" and attrs["method_class"] == "NUTS" and attrs["model"] == "GPRegressor"
    assert json.loads(attrs["options"]) == {"class": "NUTS", "fields": {
        "max_tree_depth": 5, "step_size": None, "variant": "multinomial", "adaptation": "windowed",
        "mass_adaptation": "diagonal", "target_accept": None, "gamma": 0.05, "t0": None, "kappa": 0.75}}
    assert attrs["n_warmup"] == 15
    clf = gb.GPClassifier(reg.X, reg.y > 0)
    pm = gb.sample(clf, "pseudo-marginal", n_imp=4, chains=1, draws=3, n_warmup=3, seed=1, progress=False)
    fields = json.loads(pm.sample_stats.attrs["options"])["fields"]
    assert fields["n_imp"] == 4 and fields["approximation"] == "laplace" and fields["proposal_cov"] is None
    assert set(fields) == {f.name for f in dataclasses.fields(gb.PseudoMarginal)}


def test_old_warmup_names_still_work_with_a_deprecation_warning():
    X, y = _regression()
    clf = gb.GPClassifier(X, y > 0)
    new = gb.sample(clf, "pseudo-marginal", n_imp=4, chains=1, draws=4, n_warmup=6, seed=2, progress=False)
    with pytest.warns(DeprecationWarning, match="n_adapt"):
        old = gb.sample(clf, "pseudo-marginal", n_imp=4, chains=1, draws=4, n_adapt=6, seed=2, progress=False)
    np.testing.assert_array_equal(gb.api.psi_draws(new).values, gb.api.psi_draws(old).values)
    with pytest.warns(DeprecationWarning, match="'warmup' is deprecated"):
        old = gb.sample(clf, "pseudo-marginal", n_imp=4, chains=1, draws=4, warmup=6, seed=2, progress=False)
    np.testing.assert_array_equal(gb.api.psi_draws(new).values, gb.api.psi_draws(old).values)
    with pytest.raises(ValueError, match="disagree"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gb.sample(clf, "aa", n_warmup=5, warmup=6)


# ---------------------------------------------------------------------------
# a new sampler: its init/step (what would be its module) and its method object, nothing else
# ---------------------------------------------------------------------------
class IMState(NamedTuple):
    position: np.ndarray
    log_density: float


class IMInfo(NamedTuple):
    accepted: bool
    acceptance_prob: float


def im_step(rng, state, log_density, mean, chol):
    """Independence Metropolis with proposal N(mean, L L^T) (Tierney 1994)."""

    def log_q(x):
        z = np.linalg.solve(chol, x - mean)
        return -0.5 * z @ z

    prop = mean + chol @ rng.standard_normal(mean.size)
    lp = log_density(prop)
    log_a = lp - state.log_density + log_q(state.position) - log_q(prop)
    a = float(min(1.0, np.exp(log_a))) if np.isfinite(log_a) else 0.0
    if rng.uniform() < a:
        return IMState(prop, lp), IMInfo(True, a)
    return state, IMInfo(False, a)


@dataclasses.dataclass(frozen=True)
class IndependenceMH(gb.Method):
    """Independence Metropolis (Tierney 1994, Sec. 2.3.3) with the Laplace proposal N(MAP, s^2 (-H)^-1)."""

    scale: float = 1.2

    aliases = {"test-independence-mh": {}}
    models = (gb.GPRegressor,)
    stoppable = True
    own_defaults = {"scale": "a little wider than the Laplace approximation"}

    def __post_init__(self):
        if not self.scale > 0:
            raise ValueError(f"IndependenceMH.scale must be > 0, got {self.scale!r}")

    def chain_specs(self, model, rngs, n_warmup):
        from gpbayes.posterior import log_posterior

        fit, cov = methods.exact._mode_and_cov(model, rngs[0])
        logp = log_posterior(model.gp, model.prior)
        chol = self.scale * np.linalg.cholesky(cov)
        kernel = lambda r, st: im_step(r, st, logp, fit.psi, chol)  # noqa: E731
        return [runner.ChainSpec(IMState(fit.psi, logp(fit.psi)), kernel, n_warmup) for _ in rngs]


def test_a_sampler_defined_in_a_test_file_runs_through_sample_by_name_and_object():
    reg = gb.GPRegressor(*_regression(n=15), ard=False)
    assert "test-independence-mh" in gb.methods(reg)
    assert "test-independence-mh" not in gb.methods(gb.GPClassifier(reg.X, reg.y > 0))
    idata = gb.sample(reg, "test-independence-mh", chains=2, draws=300, n_warmup=20, seed=4, progress=False,
                      scale=1.5)
    assert gb.api.psi_draws(idata).shape == (2, 300, 3)
    assert json.loads(idata.posterior.attrs["options"])["fields"] == {"scale": 1.5}
    acc = idata.sample_stats["acceptance_rate"].values
    assert 0.2 < acc.mean() < 1.0  # the Laplace proposal fits this posterior well
    # the API adds nothing to the chains: the same as the runner on the same generators
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(4).spawn(2)]
    specs = IndependenceMH(scale=1.5).chain_specs(reg, rngs, 20)
    ref = [runner.run_spec(r, s, n_draws=300) for r, s in zip(rngs, specs)]
    np.testing.assert_array_equal(gb.api.psi_draws(idata).values, np.stack([c.draws for c in ref]))
    # and the posterior mean agrees with NUTS's within Monte Carlo error
    nuts = gb.sample(reg, "nuts", chains=2, draws=300, n_warmup=150, seed=5, progress=False)
    a, b = gb.api.psi_draws(idata).values.reshape(-1, 3), gb.api.psi_draws(nuts).values.reshape(-1, 3)
    import arviz as az

    se = np.sqrt(a.var(0) / az.ess(idata.unconstrained_posterior).to_array().values
                 + b.var(0) / az.ess(nuts.unconstrained_posterior).to_array().values)
    assert np.all(np.abs(a.mean(0) - b.mean(0)) < 4 * se), (a.mean(0), b.mean(0), se)
    # until_converged applies to it like to any method of the runner
    stopped = gb.sample(reg, IndependenceMH(), chains=2, draws=400, n_warmup=0, seed=4, progress=False,
                        until_converged={"rhat": 1.1, "ess_bulk": 50, "check_every": 50, "max_draws": 400})
    assert stopped.sample_stats.attrs["stopped"] in ("converged", "budget: 400 draws")


def test_sparse_methods_run_through_the_runner_with_until_converged():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    m = gb.SparseGPClassifier(X, X[:, 0] + 0.3 * rng.normal(size=40) > 0, n_inducing=4)
    rule = {"rhat": 1.5, "ess_bulk": 5, "check_every": 10, "max_draws": 30, "min_draws": 10}
    for method in ("joint-hmc", "gibbs"):
        a = gb.sample(m, method, chains=2, draws=30, n_warmup=10, seed=2, progress=False, until_converged=rule)
        n = a.posterior.sizes["draw"]
        assert n % 10 == 0 and a.sample_stats.attrs["stopped"] in ("converged", "budget: 30 draws")
        b = gb.sample(m, method, chains=2, draws=n, n_warmup=10, seed=2, progress=False)
        np.testing.assert_array_equal(gb.api.psi_draws(a).values, gb.api.psi_draws(b).values)
        np.testing.assert_array_equal(a.posterior["v"].values, b.posterior["v"].values)


def test_pseudo_marginal_through_the_runner_is_pseudo_marginal_run_chain_and_can_stop_when_converged():
    """The API's pseudo-marginal chains are ``pseudo_marginal.run_chain``'s, draw for draw (its adaptive
    phase, then the frozen kernel as runner specs), and under ``until_converged`` they are the same draws."""
    from gpbayes.estimators.importance import PseudoMarginalTarget
    from gpbayes.mcmc import pseudo_marginal

    X, y = _regression(n=15)
    clf = gb.GPClassifier(X, y > 0)
    a = gb.sample(clf, "pseudo-marginal", n_imp=4, chains=2, draws=20, n_warmup=15, seed=2, progress=False)
    for c, s in enumerate(np.random.SeedSequence(2).spawn(2)):
        r = np.random.default_rng(s)
        psi0 = clf.kernel.initial_psi(clf.X) + 0.1 * r.standard_normal(clf.kernel.initial_psi(clf.X).size)
        target = PseudoMarginalTarget(clf.X, clf.y, clf.kernel, clf.likelihood, clf.prior, approx="laplace", n_imp=4)
        ref = pseudo_marginal.run_chain(r, target, psi0, n_adapt=15, n_burn=0, n_draws=20,
                                        proposal_cov=0.1 * np.eye(psi0.size))
        np.testing.assert_array_equal(gb.api.psi_draws(a).values[c], ref.draws)
        np.testing.assert_array_equal(a.sample_stats["lp"].values[c], ref.stats["lp"])
        np.testing.assert_array_equal(a.sample_stats["n_cubic"].values[c], ref.stats["n_cubic"])
        assert a.sample_stats["warmup_n_cubic"].values[c] == ref.warmup["n_cubic"]
        # the tuning of every chain, per chain in sample_stats (ArviZ schema; was chain 0's attributes)
        assert a.sample_stats["tuned_adapt_n_cubic"].values[c] == ref.params["adapt_n_cubic"]
        assert a.sample_stats["tuned_proposal_scale"].values[c] == ref.params["proposal_scale"]
    rule = {"rhat": 1.5, "ess_bulk": 5, "check_every": 10, "max_draws": 30, "min_draws": 10}
    b = gb.sample(clf, "pseudo-marginal", n_imp=4, chains=2, draws=30, n_warmup=15, seed=2, progress=False,
                  until_converged=rule)
    n = b.posterior.sizes["draw"]
    assert n % 10 == 0 and b.sample_stats.attrs["stopped"] in ("converged", "budget: 30 draws")
    np.testing.assert_array_equal(gb.api.psi_draws(b).values[:, :min(n, 20)], gb.api.psi_draws(a).values[:, :min(n, 20)])


def test_gplvm_sampler_through_the_runner_is_its_run_chain_and_can_stop_when_converged():
    """The API's GPLVM chains are ``gplvm.pseudo_marginal.run_chain``'s draw for draw (psi and Z), and
    run under ``until_converged`` with the draws a fixed-length run gives."""
    from gpbayes.gplvm import pseudo_marginal as gpm

    rng = np.random.default_rng(0)
    x = np.linspace(0.0, 4 * np.pi, 12)
    Y = np.column_stack([np.cos(x), np.sin(x)]) + 0.05 * rng.standard_normal((12, 2))
    m = gb.GPLVMRegressor(x, Y, n_inducing=5, ml_restarts=1, ml_max_iter=30)
    kw = dict(chains=2, n_warmup=2, seed=1, progress=False, n_imp=3, vb_max_iter=3)
    a = gb.sample(m, "pm-within-gibbs", draws=6, **kw)
    config = gpm.PMGibbsConfig(blocks=m.blocks(), n_imp=3, adapt_start=2, warm_start=True,
                               vb_options={"max_iter": 3})
    for c, s in enumerate(np.random.SeedSequence(1).spawn(2)):
        r = np.random.default_rng(s)
        psi0 = m.ml_fit.psi + 0.1 * r.standard_normal(len(m.param_names))
        ref = gpm.run_chain(r, m.gplvm, m.prior, psi0, config, 6, n_warmup=2,
                            proposal_covs=[0.01 * np.eye(b.size) for b in config.blocks])
        np.testing.assert_array_equal(gb.api.psi_draws(a).values[c], ref.draws)
        np.testing.assert_array_equal(a.posterior["Z"].values[c], ref.extra["Z"])
        np.testing.assert_array_equal(a.sample_stats["lp"].values[c], ref.stats["lp"])
    rule = {"rhat": 100.0, "ess_bulk": 0.0, "check_every": 4, "max_draws": 8, "min_draws": 4}
    b = gb.sample(m, "pm-within-gibbs", draws=8, until_converged=rule, **kw)
    assert b.sample_stats.attrs["stopped"] in ("converged", "budget: 8 draws")
    n = b.posterior.sizes["draw"]
    np.testing.assert_array_equal(gb.api.psi_draws(b).values[:, :min(n, 6)], gb.api.psi_draws(a).values[:, :min(n, 6)])
