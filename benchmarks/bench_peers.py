"""gpbayes against NumPyro's NUTS on the same posteriors (issue 24 §5): ESS per CPU-second and agreement.

Run it in the peer venv (NumPyro, JAX and ArviZ beside an editable gpbayes; recipe in
benchmarks/README.md) -- NumPyro is never a dependency of gpbayes or its tests:

    /work/peer-venv/bin/python benchmarks/bench_peers.py --problem housing --chains 4 --warmup 200 --draws 300
    /work/peer-venv/bin/python benchmarks/bench_peers.py --problem pima-iso pima-ard coal --chains 4 \\
        --warmup 500 --draws 1000

One report per problem, ``<out-dir>/bench_peers_<problem>_<chains>x<warmup + draws>.txt`` (default
out-dir benchmarks/results).

Problems (every model is the gpbayes model object a user builds; its input standardisation, kernel
and default prior are what NumPyro is given).  The standardised models are built with
``units="standardized"`` (issue 41): their priors and the posterior compared with NumPyro's stay on the
standardised scale NumPyro is given, so the committed numbers are unchanged; ``co2-seasonal`` is not
standardised, where both units agree:

``housing``
    Boston Housing ARD regression (``data/raw/Boston.csv``, n = 506, d = 13, 15 log-hyperparameters),
    ``gb.GPRegressor(X, y)``: covariates and target standardised, F&G's eq. 5 squared exponential with
    one lengthscale per covariate, no nugget, the default prior on psi = log theta (tau_i ~ Gamma(1,
    1/sqrt(d)), sigma ~ Gamma(1.1, 0.1), noise variance lambda ~ InverseGamma(1, 0.01) since issue 23;
    ``--housing-noise-prior gamma-1-1`` gives the Gamma(1, 1) of the committed 4 x 500 run).  NumPyro:
    ``MultivariateNormal(0, K + lambda I)``.
``pima-iso``, ``pima-ard``
    Pima, 300 of its 768 rows (``_common.pima``: the rows ``bench_marginal`` draws for a 300-row
    subset, seed 1), ``gb.GPClassifier(X, y, ard=False)`` (2 hyperparameters) and ``ard=True`` (9).
``ionosphere-ard``
    Ionosphere, all 351 rows, its 33 covariates (this copy has no constant column: UCI attribute 2 is
    already absent; the loader would drop one and say so), ``gb.GPClassifier(X, y)``: 34 hyperparameters.
``coal``
    coal-mining disasters in 112 yearly bins (1851-1963, as the M&A reproduction bins them),
    ``gb.PoissonGP(X, counts)``: y_i ~ Poisson(exp(f_i + m)), m = log mean count per bin (fixed),
    2 hyperparameters.
``concrete-m52``, ``co2-seasonal``  (issue 33: what a GPflow / PyMC user poses)
    ``concrete-m52``: Concrete (``data/raw/concrete.csv``), 300 of its 1030 rows (seed 1), 6 covariates
    (``CONCRETE_COLUMNS``: the aggregates left out), ``gb.GPRegressor(X, y, kernel=Matern52(6, ard=True),
    mean=gb.means.Constant(0, 1), prior={"variance": HalfNormal(1)})`` (``concrete_model``): 8
    log-hyperparameters, the constant integrated out and drawn given each draw.  ``co2-seasonal``: the
    last 300 monthly means (1977-01 to 2001-12) of statsmodels' Mauna Loa CO2 (``co2_data``; statsmodels
    in the peer venv), t in years, y standardised by hand, ``SquaredExponential(1, parameterisation="ma")
    + Periodic(1)``, ``standardize=False``, priors in years that identify the yearly period
    (``co2_model``, ``CO2_PRIORS``): 6 log-hyperparameters.  NumPyro's side (``user_numpyro_model``) is
    written as a NumPyro user writes it: NumPyro's own Gamma / HalfNormal / LogNormal / InverseGamma on
    each positive hyperparameter (sampled by NumPyro in log space, as gpbayes samples psi) and, for
    Concrete, the constant beta ~ N(0, 1) sampled explicitly with y ~ N(beta 1, K + lambda I).  The mirror
    check compares NumPyro's log density on its unconstrained space with gpbayes' log posterior plus
    log N(beta; its conditional given y and psi) (``user_log_joint``).  gpbayes runs ``gb.sample``:
    ``gpbayes-sample-nuts`` (``method=gb.NUTS()`` at --warmup/--draws) and ``gpbayes-default``; both
    start each chain at a draw of N(MAP, (-H)^-1), and NumPyro's chains start at draws of the same
    Gaussian (MAP untimed for NumPyro; the constant from its conditional).  The constant's posterior
    mean, sd and |z| are reported below the hyperparameters' table (original units).

The classification and Poisson models: K = sigma (exp(-1/2 sum_d (x_d - x'_d)^2 / tau_d^2) + 1e-6 I)
(the models' relative nugget); NumPyro samples (psi, v) jointly with f = L(psi) v, L the Cholesky
factor of that K, v ~ N(0, I) (whitened), the log-likelihood ``log_ndtr(y f)`` (probit, y in
{-1, +1}) or ``y (log E + f + m) - E exp(f + m) - log y!`` (Poisson, exposure E), and the same
prior on psi.  Before sampling the script checks the mirror: NumPyro's log joint at a test point
(the first chain's start) minus gpbayes' (log prior + log p(y | f) + log N(v; 0, I), or the log
posterior of the regression) must be within 1e-8 (printed; the run stops otherwise).

Methods (``--methods``: a bare name on every problem given, skipped with the reason where it does not
apply; ``PROBLEM:METHOD`` on that problem only; a problem with no entry runs its defaults):

``gpbayes-nuts``  (housing)
    ``gpbayes.mcmc.nuts.run_chain`` with its defaults (issue 24): multinomial NUTS, Stan's windowed
    warm-up (diagonal mass matrix from the identity, dual averaging to 0.8), the fused gradient.
``gpbayes-nuts-before``  (housing)
    what ``gb.sample(model, method="nuts")`` ran before issue 24: H&G's slice NUTS, dense mass
    (-H)^-1 at the MAP, dual averaging of the step size only (delta 0.65, t0 30), the per-parameter
    gradient.
``gpbayes-pm-la``, ``gpbayes-pm-ep``  (latent models; EP for the probit only)
    ``gb.sample(model, method=gb.PseudoMarginal(n_imp=64))`` / ``approximation="ep"``: F&G Alg. 1.
``gpbayes-slice-surr-site``  (latent models)
    ``gb.SliceSampler(representation="surr-site")``: M&A Alg. 4 in the surrogate-data representation.
``gpbayes-nuts-is``  (latent models)
    ``gb.ISCorrectedNUTS()`` where gpbayes has it ("not available" otherwise): NUTS on the EP (probit) or Laplace
    marginal with importance-sampling correction; its ``sample_stats["log_weight"]`` (chain, draw)
    weights are summarised by ``gpbayes.diagnostics.importance_corrected_summary``.
``gpbayes-nuts-whitened``  (latent models)
    ``gb.WhitenedNUTS()``: NUTS on (psi, v) jointly, f = L(psi) v -- the posterior NumPyro samples, with
    gpbayes' hand-written gradient (Cholesky reverse mode with a rank-one adjoint) and NUTS.
``gpbayes-sample-nuts``  (regression problems)
    ``gb.sample(model, method=gb.NUTS(), chains=..., draws=..., n_warmup=..., seed=..., cores=1)``: the
    user's call (Stan's windowed warm-up from (-H)^-1 at the MAP; mean draws included).
``gpbayes-default``  (every problem)
    ``gb.sample(model, chains=..., seed=..., cores=1)`` with no method: the library's default choice
    (``gpbayes.methods.default_method``), its own warm-up, run until split R-hat < 1.01 and bulk
    ESS > 400 on every hyperparameter within the default budget; ``--warmup``/``--draws`` do not
    apply.  The report names the method chosen and why sampling stopped.
``numpyro-nuts``
    ``numpyro.infer.NUTS`` with its defaults (diagonal mass, target 0.8, max tree depth 10).
``pymc-nutpie``  (housing, ionosphere-ard, concrete-m52, co2-seasonal; issue 41 §8; never a default)
    PyMC 6 + nutpie in a PyMC 6 venv (Python >= 3.12; recipe in benchmarks/README.md): ``pymc_model``
    writes each posterior with PyMC's own distributions and ``pm.gp.cov`` kernels (the probit classifier as
    NumPyro's, whitened: f = L(psi) v), ``nutpie.compile_pymc_model`` (numba backend) and one
    ``nutpie.sample(chains=1, cores=1)`` per chain from the chain's start, nutpie's defaults otherwise.
    Before sampling ``check_pymc_mirror`` evaluates PyMC's log density (unconstrained, Jacobians included)
    and gpbayes' at three points: the differences between points must agree to 1e-6.  Compile CPU time is
    reported apart, and the ESS per CPU-second with and without it.

Starts.  Housing: every method starts chain c at ``regression.default_init`` plus 0.3 N(0, I), one
seeded draw per chain (as in the committed run).  Latent models: the gpbayes methods start where
``gb.sample`` starts them (chain c's generator, the c-th child of SeedSequence(seed): psi_0 = the
kernel's initial psi + 0.1 N(0, I), then f_0 = L(psi_0) z, z ~ N(0, I)); NumPyro starts at the same
(psi_0, v_0 = z).

Timing.  Chains run one after another in this process, one BLAS/XLA thread (threadpoolctl and
XLA flags).  CPU time is the process's (``time.process_time``, all threads).  gpbayes' latent methods:
the whole ``gb.sample(..., cores=1)`` call (warm-up or adaptive phase included; nothing is compiled,
so the set-up column is "-").  NumPyro compiles its sampler once per shape: a first chain of the
same length is run and discarded, and its CPU time minus the mean of the measured chains is
reported as compilation.  Per gradient (ms/grad): the median CPU time of one value and gradient of
the log density (gpbayes: ``log_posterior_value_and_grad``, housing; NumPyro: its jitted
``potential_fn``).  Diagnostics by ArviZ for all unweighted methods: rank-normalised split R-hat,
bulk and tail ESS, MCSE of the mean; |z| = |mean_a - mean_b| / sqrt(MCSE_a^2 + MCSE_b^2) per
log-hyperparameter against numpyro-nuts.  The ratio: min bulk ESS per CPU-s of each gpbayes method
over NumPyro's; "best" is the gpbayes method with the highest, and a second line names the best among
those meeting issue 24's Done-when in the run (max R-hat <= 1.01, every |z| <= 4).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1 --xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1")

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from _common import boston, coal, cpu_name, ionosphere, pima  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

#: the problems a GPflow / PyMC user poses (issue 33): the NumPyro side is written with NumPyro's own
#: distributions (``user_numpyro_model``), not from the gpbayes prior
USER_PROBLEMS = ("concrete-m52", "co2-seasonal")
PROBLEMS = ("housing", "pima-iso", "pima-ard", "ionosphere-ard", "coal") + USER_PROBLEMS
REGRESSION_METHODS = ("gpbayes-nuts", "gpbayes-nuts-before")
#: ``gb.sample(model, method=gb.NUTS(), draws=..., n_warmup=...)``: the user's call, mean draws included
SAMPLE_NUTS = "gpbayes-sample-nuts"
LATENT_METHODS = ("gpbayes-pm-la", "gpbayes-pm-ep", "gpbayes-slice-surr-site", "gpbayes-nuts-is",
                  "gpbayes-nuts-whitened")
PEER = "numpyro-nuts"
#: PyMC 6 + nutpie (issue 41 §8): run in a PyMC 6 venv (``run_nutpie``); never a default method
PYMC_PEER = "pymc-nutpie"
PEERS = (PEER, PYMC_PEER)
#: the problems with a PyMC model (``pymc_model``)
PYMC_PROBLEMS = ("housing", "ionosphere-ard", "concrete-m52", "co2-seasonal")
#: ``gb.sample(model)`` with no method: the default choice, run until converged (issue 24 §4)
DEFAULT = "gpbayes-default"
METHODS = REGRESSION_METHODS + (SAMPLE_NUTS,) + LATENT_METHODS + (DEFAULT,) + PEERS
DEFAULT_METHODS = {"housing": ("gpbayes-nuts", PEER),
                   **{p: LATENT_METHODS + (PEER,) for p in PROBLEMS if p not in ("housing",) + USER_PROBLEMS},
                   **{p: (SAMPLE_NUTS, DEFAULT, PEER) for p in USER_PROBLEMS}}
#: issue 24's Done-when: converged (split R-hat) and agreeing with the peer (|z| of every posterior mean)
DONE_RHAT, DONE_Z = 1.01, 4.0
#: largest |NumPyro log joint - gpbayes log joint| accepted at the test point
MIRROR_TOL = 1e-8
#: PyMC's log density and gpbayes' may differ by a constant; their differences between points must agree to this
PYMC_MIRROR_TOL = 1e-6


def load_average() -> str:
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:  # pragma: no cover
        return "?"


def median_cpu(fn, reps: int = 30) -> float:
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.process_time()
        fn()
        ts.append(time.process_time() - t0)
    return float(np.median(ts))


# ---------------------------------------------------------------------------
# problems
# ---------------------------------------------------------------------------
def build_problem(name: str, args) -> dict:
    """The gpbayes model of ``name``, a one-line description and the chains' starts."""
    return {**_build_problem(name, args), "problem": name}


def _build_problem(name: str, args) -> dict:
    import gpbayes as gb
    from gpbayes import priors, regression

    if name == "concrete-m52":
        X, y, rows = concrete_data()
        model = concrete_model(X, y)
        title = (f"Concrete, {len(rows)} of 1030 rows (seed {CONCRETE_ROWS_SEED}), {X.shape[1]} covariates "
                 f"({', '.join(CONCRETE_COLUMNS)}), Matern-5/2 ARD regression with a constant mean (n = {model.n}, "
                 f"{len(model.param_names)} log-hyperparameters + the constant)")
        return {"model": model, "title": title, "starts": user_starts(model, args.chains, args.seed), "latent": False,
                "user": name}
    if name == "co2-seasonal":
        t, ppm, first = co2_data()
        model = co2_model(t, ppm)
        title = (f"Mauna Loa CO2 (statsmodels.datasets.co2), the monthly means of {len(t)} months from {first}, "
                 f"SE + periodic regression in years (n = {model.n}, {len(model.param_names)} log-hyperparameters)")
        return {"model": model, "title": title, "starts": user_starts(model, args.chains, args.seed), "latent": False,
                "user": name}
    if name == "housing":
        X, y = boston()
        model = gb.GPRegressor(X, y, units="standardized")
        if args.housing_noise_prior == "gamma-1-1":
            model = gb.GPRegressor(X, y, prior=priors.default_kernel_prior(model.kernel, (priors.Gamma(1.0, 1.0),)),
                                   units="standardized")
        rng = np.random.default_rng(args.seed)
        psi0 = regression.default_init(model.gp)
        starts = [{"psi": psi0 + 0.3 * rng.standard_normal(psi0.size)} for _ in range(args.chains)]
        title = (f"Boston Housing ARD regression (n = {model.n}, d = {X.shape[1]}, {len(model.param_names)} "
                 f"log-hyperparameters; noise prior {model.prior.components[-1]})")
        return {"model": model, "title": title, "starts": starts, "latent": False}
    if name in ("pima-iso", "pima-ard"):
        X, y, rows = pima(300)
        model = gb.GPClassifier(X, y, ard=name == "pima-ard", units="standardized")
        title = (f"Pima, {len(rows)} of 768 rows (_common.pima, seed 1), {'ARD' if name == 'pima-ard' else 'isotropic'} "
                 f"SE, probit (n = {model.n}, d = {X.shape[1]}, {len(model.param_names)} log-hyperparameters)")
    elif name == "ionosphere-ard":
        X, y, dropped = ionosphere()
        model = gb.GPClassifier(X, y, ard=True, units="standardized")
        title = (f"Ionosphere ARD classification, probit (n = {model.n}, d = {X.shape[1]} covariates, "
                 f"{len(model.param_names)} log-hyperparameters; constant columns dropped: {dropped or 'none'})")
    elif name == "coal":
        X, counts = coal()
        model = gb.PoissonGP(X, counts, units="standardized")
        title = (f"coal-mining disasters, LGCP (PoissonGP), {int(counts.sum())} events in {model.n} yearly bins "
                 f"1851-1963, offset m = {model.offset:.4f} ({len(model.param_names)} log-hyperparameters)")
    else:  # pragma: no cover - argparse's choices
        raise SystemExit(f"--problem must be one of {PROBLEMS}, got {name!r}")
    # the starts gb.sample gives the latent methods (methods.latent._Latent._psi0 and _f0, chain c's generator)
    starts = []
    for s in np.random.SeedSequence(int(args.seed)).spawn(args.chains):
        r = np.random.default_rng(s)
        init = model.kernel.initial_psi(model.X)
        psi0 = init + 0.1 * r.standard_normal(init.size)
        starts.append({"psi": psi0, "v": r.standard_normal(model.n)})
    return {"model": model, "title": title, "starts": starts, "latent": True}


# ---------------------------------------------------------------------------
# the problems a GPflow / PyMC user poses (issue 33)
# ---------------------------------------------------------------------------
#: Concrete's covariates used (of 8): the cementitious and liquid components and the age; the two
#: aggregates are left out (they fill the rest of a mix of near-constant density: the seven components
#: sum to 2,344 +- 65 kg per cubic metre, so the aggregates are close to a function of the others)
CONCRETE_COLUMNS = ("cement", "blast_furnace_slag", "fly_ash", "water", "superplasticizer", "age")
CONCRETE_ROWS, CONCRETE_ROWS_SEED = 300, 1
#: CO2: the last CO2_MONTHS monthly means of statsmodels' weekly Mauna Loa series
CO2_MONTHS = 300


def concrete_data(n_rows: int = CONCRETE_ROWS, seed: int = CONCRETE_ROWS_SEED):
    """Concrete (data/raw/concrete.csv, 1030 x 8, UCI / R's modeldata): X (n_rows x 6, CONCRETE_COLUMNS,
    unstandardised), y = compressive strength (MPa) and the rows, ``np.sort(default_rng(seed).choice(1030,
    n_rows, replace=False))`` (the rule ``_common.pima`` uses for a subset)."""
    import csv

    with open(REPO / "data" / "raw" / "concrete.csv") as fh:
        rows = list(csv.reader(fh))
    head, body = rows[0], np.array([[float(v) for v in r] for r in rows[1:]])
    cols = [head.index(c) for c in CONCRETE_COLUMNS]
    pick = np.sort(np.random.default_rng(seed).choice(body.shape[0], n_rows, replace=False))
    return body[pick][:, cols], body[pick, head.index("compressive_strength")], pick


def co2_data(n_months: int = CO2_MONTHS):
    """statsmodels' Mauna Loa CO2 (``statsmodels.datasets.co2``, weekly, 1958-2001): the monthly means
    of its last ``n_months`` months (1977-01 to 2001-12 for 300, none missing), as t = years since the
    first of them (0, 1/12, ...), the CO2 in ppm, and the first month's label."""
    from statsmodels.datasets import co2

    monthly = co2.load_pandas().data["co2"].resample("MS").mean().dropna().iloc[-n_months:]
    idx = monthly.index
    t = (idx.year - idx[0].year) + (idx.month - 1) / 12.0
    return np.asarray(t, dtype=np.float64), monthly.to_numpy(dtype=np.float64), f"{idx[0]:%Y-%m}"


def concrete_model(X, y):
    """``concrete-m52``: Matérn-5/2 ARD with a sampled constant mean, as a GPflow / PyMC user writes it.

    ``gb.GPRegressor(X, y, kernel=Matern52(d, ard=True), mean=gb.means.Constant(0, 1), prior={"variance":
    HalfNormal(1)})``: X and y standardised (the default); lengthscale_j ~ Gamma(1, 1/sqrt(d)) (the
    kernel's default), the signal variance ~ HalfNormal(1) (by name: a variance of about the target's,
    in place of the default Gamma(1.1, 0.1)), noise variance ~ InverseGamma(1, 0.01) (the model's
    default), the constant beta ~ N(0, 1) on the standardised target, integrated out (R&W eq. 2.40) and
    drawn given each draw (``mean_constant``, R&W Sec. 2.7).
    """
    import gpbayes as gb
    from gpbayes.kernels import Matern52

    return gb.GPRegressor(X, y, kernel=Matern52(X.shape[1], ard=True), mean=gb.means.Constant(0.0, 1.0),
                          prior={"variance": gb.priors.HalfNormal(1.0)}, units="standardized")


#: co2-seasonal's priors, on theta in years and in units of the standardised CO2 (docstring of co2_model)
CO2_PRIORS = {"se_lengthscale": ("Gamma", 4.0, 1.0), "se_signal_std": ("HalfNormal", 2.0),
              "periodic_lengthscale": ("Gamma", 4.0, 3.0), "periodic_period": ("LogNormal", 0.0, 0.05),
              "periodic_signal_variance": ("HalfNormal", 1.0)}


def co2_model(t, ppm):
    """``co2-seasonal``: SE + periodic on a monthly CO2 series, time in years.

    ``gb.GPRegressor(t, y, kernel=SquaredExponential(1, parameterisation="ma") + Periodic(1),
    standardize=False, prior={...})`` with t in years (not standardised, so the priors read in years) and
    y = the standardised ppm (by hand): k = sigma_f^2 exp(-(t - t')^2 / (2 l^2)) + v exp(-2 sin^2(pi (t -
    t') / p) / l_p^2) (R&W eqs. 4.9, 4.31), noise variance lambda.  Priors (on theta; ``CO2_PRIORS``):

    * period p ~ LogNormal(0, 0.05): median 1 year, 90 % in 0.92-1.09 -- this is what identifies the
      yearly period (the default LogNormal(0, 1) also admits its multiples and periods longer than the
      data, where the user guide's short chains went);
    * the trend's lengthscale l ~ Gamma(4, 1) (mean 4 years; P(l < 0.5 year) = 0.2 %: the trend cannot
      take the season);
    * sigma_f (a standard deviation) ~ HalfNormal(2); v (a variance) ~ HalfNormal(1); the periodic
      lengthscale l_p ~ Gamma(4, 3) (mean 1.33: a smooth yearly shape);
    * lambda ~ InverseGamma(1, 0.01) (the model's default).
    """
    import gpbayes as gb
    from gpbayes.kernels import Periodic, SquaredExponential

    y = (ppm - ppm.mean()) / ppm.std()
    kernel = SquaredExponential(1, parameterisation="ma") + Periodic(1)
    prior = {name: getattr(gb.priors, fam)(*args) for name, (fam, *args) in CO2_PRIORS.items()}
    return gb.GPRegressor(np.asarray(t, dtype=np.float64)[:, None], y, kernel=kernel, standardize=False,
                          prior=prior)


def user_starts(model, n_chains: int, seed: int) -> list[dict]:
    """NumPyro's starts on the user problems: as ``gb.sample``'s exact-marginal methods start theirs, one
    draw of N(MAP, (-H)^-1) per chain (the same distribution; the MAP here is found with
    ``default_rng(seed)``, not the chains' generators, and is not timed), and the constant mean (where
    there is one) drawn from its conditional given that psi (R&W Sec. 2.7)."""
    from gpbayes.methods.exact import _mode_and_cov

    fit, cov = _mode_and_cov(model, np.random.default_rng(seed))
    starts = []
    for c in range(n_chains):
        r = np.random.default_rng([seed, c])
        psi = r.multivariate_normal(np.asarray(fit.psi), cov)
        start = {"psi": psi}
        if model.mean is not None:
            m, V = constant_conditional(model, psi)
            start["beta"] = m + math.sqrt(V) * r.standard_normal()
        starts.append(start)
    return starts


def constant_conditional(model, psi) -> tuple[float, float]:
    """Mean and variance of the constant beta | y, psi on the standardised scale (R&W Sec. 2.7, via
    ``gpbayes.means.coefficient_conditional``)."""
    from gpbayes import linalg
    from gpbayes.means import coefficient_conditional

    b, B = model.mean.prior(model.X.shape[1])
    _, C = model.gp._cov(np.asarray(psi, dtype=np.float64))
    L = linalg.cholesky(C, name="K + B 11^T + lambda I", count=False)
    m, V = coefficient_conditional(model.mean.basis(model.X), b, B, L, model.y)
    return float(m[0]), float(V[0, 0])


# ---------------------------------------------------------------------------
# gpbayes
# ---------------------------------------------------------------------------
def run_gpbayes_nuts(model, starts, n_warmup, n_draws, seed, before: bool):
    """Housing: gpbayes' NUTS chains from the given starts (the committed run's path)."""
    from threadpoolctl import threadpool_limits

    from gpbayes import linalg, regression
    from gpbayes.finite_differences import hessian_from_gradients
    from gpbayes.mcmc import hmc, nuts
    from gpbayes.posterior import log_posterior_value_and_grad

    starts = [s["psi"] for s in starts]
    gp = model.gp
    if before:
        gp = regression.GPRegression(gp.X, gp.y, gp.kernel, gradient="per_parameter")
    vg = log_posterior_value_and_grad(gp, model.prior)
    draws, steps, div, cpu = [], [], 0, 0.0
    setup_cpu = 0.0
    with threadpool_limits(limits=1):
        per_grad = median_cpu(lambda: vg(starts[0]))
        if before:  # gb.sample's set-up then: the MAP and (-H)^-1 there (counted as set-up, not sampling)
            t0 = time.process_time()
            fit = regression.fit_type2_ml(gp, np.random.default_rng(seed), n_restarts=2, log_prior=model.prior)
            H = hessian_from_gradients(lambda p: vg(p)[1], fit.psi)
            mass = hmc.mass_matrix("dense", linalg.inverse_of_negative_definite(H))
            setup_cpu = time.process_time() - t0
        for c, start in enumerate(starts):
            rng = np.random.default_rng([seed, c])
            t0 = time.process_time()
            if before:
                ch = nuts.run_chain(rng, start, vg, mass, n_draws=n_draws, n_adapt=n_warmup, step_size=None,
                                    variant="slice", adaptation="step_size")
            else:
                ch = nuts.run_chain(rng, start, vg, n_draws=n_draws, n_adapt=n_warmup)
            cpu += time.process_time() - t0
            draws.append(ch.draws)
            steps.append(ch.stats["n_steps"])
            div += int(np.sum(ch.stats["diverging"]))
    return {"draws": np.stack(draws), "cpu": cpu, "compile": setup_cpu, "per_grad": per_grad,
            "steps": float(np.mean(np.concatenate(steps))), "divergences": div}


def latent_method(name: str, model):
    """(method object, None) for a gpbayes latent method, or (None, why it is skipped)."""
    import gpbayes as gb

    if name == "gpbayes-pm-la":
        meth = gb.PseudoMarginal(n_imp=64)
    elif name == "gpbayes-pm-ep":
        if "ep" not in getattr(model.likelihood, "approximations", ()):
            return None, f"not offered for {type(model).__name__} ({model.likelihood.name}: EP is the probit's)"
        meth = gb.PseudoMarginal(approximation="ep", n_imp=64)
    elif name == "gpbayes-slice-surr-site":
        meth = gb.SliceSampler(representation="surr-site")
    elif name == "gpbayes-nuts-is":
        cls = getattr(gb, "ISCorrectedNUTS", None)
        if cls is None:
            return None, "not available (this gpbayes has no gb.ISCorrectedNUTS)"
        meth = cls()
    elif name == "gpbayes-nuts-whitened":
        cls = getattr(gb, "WhitenedNUTS", None)
        if cls is None:
            return None, "not available (this gpbayes has no gb.WhitenedNUTS)"
        meth = cls()
    else:
        return None, f"not a method of the latent models (they have {LATENT_METHODS + (PEER,)})"
    why = meth.why_not(model)
    return (None, why) if why else (meth, None)


def run_gb_sample(model, meth, n_chains, n_warmup, n_draws, seed):
    """One ``gb.sample(..., cores=1)`` call under one BLAS thread: its psi draws and CPU time."""
    from threadpoolctl import threadpool_limits

    import gpbayes as gb

    per_grad = math.nan
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore", gb.methods.DefaultMethodWarning)
        if hasattr(model, "gp"):  # regression: one value and gradient of the log posterior at the kernel's start
            from gpbayes import regression
            from gpbayes.posterior import log_posterior_value_and_grad

            vg = log_posterior_value_and_grad(model.gp, model.prior)
            psi0 = regression.default_init(model.gp)
            per_grad = median_cpu(lambda: vg(psi0))
        t0 = time.process_time()
        if meth is None:  # the default: gb.sample(model) with its own method, warm-up and stop rule
            idata = gb.sample(model, chains=n_chains, seed=seed, cores=1, progress=False)
        else:
            idata = gb.sample(model, method=meth, chains=n_chains, draws=n_draws, n_warmup=n_warmup, seed=seed,
                              cores=1, progress=False)
        cpu = time.process_time() - t0
    psi = gb.api.psi_draws(idata)
    names = [str(p) for p in psi.coords["param"].values]
    if names != list(model.hyperparameter_labels):
        raise SystemExit(f"bench_peers: psi_draws' parameters {names} are not the model's {model.hyperparameter_labels}")
    ss = idata.sample_stats
    lw = ss["log_weight"] if "log_weight" in ss else None
    log_weight = np.asarray(lw.values) if lw is not None and tuple(lw.dims) == ("chain", "draw") else None

    def stat_mean(k):
        return float(ss[k].mean()) if k in ss and ss[k].dims[:2] == ("chain", "draw") else math.nan

    div = int(ss["diverging"].sum()) if "diverging" in ss else -1
    extra = {k: np.asarray(idata.posterior[k].values) for k in ("mean_constant",) if k in idata.posterior}
    return {"draws": np.asarray(psi.values), "cpu": cpu, "compile": math.nan, "per_grad": per_grad, "extra": extra,
            "steps": stat_mean("n_steps"), "divergences": div, "log_weight": log_weight,
            "accept": stat_mean("acceptance_rate"), "method": idata.posterior.attrs.get("method"),
            "stopped": ss.attrs.get("stopped", "length")}


# ---------------------------------------------------------------------------
# NumPyro: the same posterior
# ---------------------------------------------------------------------------
def jax_log_prior(prior):
    """psi -> the density of psi of ``prior`` (Gamma / InverseGamma components, Jacobian included) in JAX."""
    import jax.numpy as jnp
    from jax.scipy.special import gammaln

    from gpbayes.priors import Gamma, InverseGamma

    comps = prior.components
    kinds = {type(c) for c in comps}
    if not kinds <= {Gamma, InverseGamma}:
        raise SystemExit(f"bench_peers: the NumPyro model mirrors Gamma and InverseGamma priors only, got {kinds}")
    g = np.array([i for i, c in enumerate(comps) if isinstance(c, Gamma)], dtype=int)
    ig = np.array([i for i, c in enumerate(comps) if isinstance(c, InverseGamma)], dtype=int)
    ga, gb_ = jnp.array([comps[i].shape for i in g]), jnp.array([comps[i].rate for i in g])
    ia, ib = jnp.array([comps[i].shape for i in ig]), jnp.array([comps[i].scale for i in ig])

    def log_prior(psi):
        x = psi[g]  # Gamma(a, b): a log b - lgamma(a) + a psi - b e^psi
        total = jnp.sum(ga * jnp.log(gb_) - gammaln(ga) + ga * x - gb_ * jnp.exp(x))
        if ig.size:  # InverseGamma(a, b): a log b - lgamma(a) - a psi - b e^-psi
            z = psi[ig]
            total = total + jnp.sum(ia * jnp.log(ib) - gammaln(ia) - ia * z - ib * jnp.exp(-z))
        return total

    return log_prior


def jax_fg_kernel(kernel, X):
    """psi -> K(X, X) of an F&G eq. 5 ``SquaredExponential`` (isotropic or ARD, relative nugget) in JAX."""
    import jax.numpy as jnp

    if kernel.parameterisation != "fg" or kernel.fixed_amplitude:
        raise SystemExit(f"bench_peers: the NumPyro model mirrors F&G's eq. 5 kernel only, got {kernel!r}")
    X = jnp.asarray(X)
    n, d = X.shape
    ns, nugget = kernel.n_scale, float(kernel.nugget)
    eye = jnp.eye(n)

    def K(psi):
        w = jnp.broadcast_to(jnp.exp(-2.0 * psi[:ns]), (d,))  # w_d = 1 / tau_d^2
        A = X * jnp.sqrt(w)
        nA = jnp.sum(A * A, 1)
        sq = jnp.maximum(nA[:, None] + nA[None, :] - 2.0 * A @ A.T, 0.0) * (1.0 - eye)  # diagonal 0, as gpbayes
        return jnp.exp(psi[ns]) * (jnp.exp(-0.5 * sq) + nugget * eye)

    return K


def numpyro_model(model, latent: bool):
    """The NumPyro model of the same posterior as the gpbayes ``model``."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from jax.scipy.special import gammaln, log_ndtr
    from numpyro.distributions import constraints

    from gpbayes.likelihoods import Poisson, Probit

    numpyro.enable_x64()
    p = len(model.param_names)
    log_prior = jax_log_prior(model.prior)
    y = jnp.asarray(model.y)
    n = model.n
    if not latent:
        X = jnp.asarray(model.X)
        d = model.X.shape[1]

        def gp_model():
            psi = numpyro.sample("psi", dist.ImproperUniform(constraints.real_vector, (), event_shape=(p,)))
            numpyro.factor("log_prior", log_prior(psi))  # the density of psi (Jacobian included)
            Xs = X / jnp.exp(psi[:d])
            sq = jnp.sum(Xs**2, 1)[:, None] + jnp.sum(Xs**2, 1)[None, :] - 2.0 * Xs @ Xs.T
            K = jnp.exp(psi[d]) * jnp.exp(-0.5 * jnp.maximum(sq, 0.0)) + jnp.exp(psi[d + 1]) * jnp.eye(n)
            numpyro.sample("y", dist.MultivariateNormal(jnp.zeros(n), covariance_matrix=K), obs=y)

        return gp_model

    K = jax_fg_kernel(model.kernel, model.X)
    lik = model.likelihood
    if isinstance(lik, Probit):
        def log_lik(f):
            return jnp.sum(log_ndtr(y * f))
    elif isinstance(lik, Poisson):
        log_e = jnp.broadcast_to(jnp.log(jnp.asarray(lik.exposure, dtype=jnp.float64)), (n,))
        offset = jnp.broadcast_to(jnp.asarray(lik.offset, dtype=jnp.float64), (n,))

        def log_lik(f):
            lr = log_e + f + offset
            return jnp.sum(y * lr - jnp.exp(lr) - gammaln(y + 1.0))
    else:
        raise SystemExit(f"bench_peers: the NumPyro model mirrors the probit and Poisson likelihoods, got {lik!r}")

    def latent_model():
        psi = numpyro.sample("psi", dist.ImproperUniform(constraints.real_vector, (), event_shape=(p,)))
        v = numpyro.sample("v", dist.Normal(jnp.zeros(n), 1.0).to_event(1))
        numpyro.factor("log_prior", log_prior(psi))
        f = jnp.linalg.cholesky(K(psi)) @ v  # f = L(psi) v, whitened
        numpyro.factor("log_lik", log_lik(f))

    return latent_model


def user_numpyro_model(problem: str, model):
    """The NumPyro model a NumPyro user writes for a user problem, with NumPyro's own distributions on
    the positive hyperparameters (NumPyro samples each in log space: its unconstrained space for a
    positive support is log theta, with the same Jacobian as gpbayes' psi) and, for ``concrete-m52``,
    the constant mean sampled explicitly.  Returns (model function, [(site, size)] in gpbayes' psi order).

    Parameterisations (NumPyro / gpbayes): Gamma(concentration, rate) / Gamma(shape, rate);
    InverseGamma(concentration, rate) / InverseGamma(shape, scale), the same density; HalfNormal(scale)
    and LogNormal(loc, scale) alike.  The numbers are stated here again, not read from the gpbayes
    prior: the mirror check compares the two statements.
    """
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    numpyro.enable_x64()
    y = jnp.asarray(model.y)  # the standardised target both sides see
    n = model.n
    eye = jnp.eye(n)
    if problem == "concrete-m52":
        X = jnp.asarray(model.X)
        d = X.shape[1]
        diff = X[:, None, :] - X[None, :, :]

        def concrete():
            ls = numpyro.sample("lengthscale", dist.Gamma(1.0, 1.0 / math.sqrt(d)).expand([d]).to_event(1))
            var = numpyro.sample("variance", dist.HalfNormal(1.0))
            noise = numpyro.sample("noise_variance", dist.InverseGamma(1.0, 0.01))
            beta = numpyro.sample("beta", dist.Normal(0.0, 1.0))  # the constant mean, on the standardised y
            r2 = jnp.sum((diff / ls) ** 2, -1)
            pos = r2 > 0.0  # sqrt's gradient is infinite at 0: r = 0 on the diagonal, exactly
            r = jnp.where(pos, jnp.sqrt(jnp.where(pos, r2, 1.0)), 0.0)
            s5r = math.sqrt(5.0) * r
            K = var * (1.0 + s5r + (5.0 / 3.0) * r * r) * jnp.exp(-s5r) + noise * eye  # R&W eq. 4.17
            numpyro.sample("y", dist.MultivariateNormal(beta * jnp.ones(n), covariance_matrix=K), obs=y)

        return concrete, [("lengthscale", d), ("variance", 1), ("noise_variance", 1)]
    if problem == "co2-seasonal":
        t = jnp.asarray(model.X[:, 0])
        D = t[:, None] - t[None, :]

        def co2():
            ell = numpyro.sample("se_lengthscale", dist.Gamma(4.0, 1.0))
            sf = numpyro.sample("se_signal_std", dist.HalfNormal(2.0))  # a standard deviation
            lp = numpyro.sample("periodic_lengthscale", dist.Gamma(4.0, 3.0))
            per = numpyro.sample("periodic_period", dist.LogNormal(0.0, 0.05))
            v = numpyro.sample("periodic_signal_variance", dist.HalfNormal(1.0))  # a variance
            noise = numpyro.sample("noise_variance", dist.InverseGamma(1.0, 0.01))
            K = (sf**2 * jnp.exp(-0.5 * (D / ell) ** 2)
                 + v * jnp.exp(-2.0 * jnp.sin(math.pi * D / per) ** 2 / lp**2) + noise * eye)
            numpyro.sample("y", dist.MultivariateNormal(jnp.zeros(n), covariance_matrix=K), obs=y)

        names = ["se_lengthscale", "se_signal_std", "periodic_lengthscale", "periodic_period",
                 "periodic_signal_variance", "noise_variance"]
        return co2, [(nm, 1) for nm in names]
    raise SystemExit(f"bench_peers: no NumPyro model for {problem!r}; the user problems are {USER_PROBLEMS}")


def user_unconstrained(point: dict, sites) -> dict:
    """NumPyro's unconstrained values (log theta per positive site, beta as it is) from {"psi", "beta"}."""
    import jax.numpy as jnp

    psi, out, i = np.asarray(point["psi"]), {}, 0
    for site, size in sites:
        out[site] = jnp.asarray(psi[i: i + size] if size > 1 else psi[i])
        i += size
    if "beta" in point:
        out["beta"] = jnp.asarray(float(point["beta"]))
    return out


def user_log_joint(model, point: dict) -> float:
    """gpbayes' log joint of (psi, beta) for a user problem: its log posterior of psi (beta integrated out,
    R&W eq. 2.40) plus log N(beta; its conditional given y, psi) (R&W Sec. 2.7), which is log p(psi) +
    log N(y; beta 1, K + lambda I) + log N(beta; b, B) -- NumPyro's log density with beta sampled."""
    from gpbayes.posterior import log_posterior

    psi = np.asarray(point["psi"], dtype=np.float64)
    lp = float(log_posterior(model.gp, model.prior)(psi))
    if model.mean is not None:
        m, V = constant_conditional(model, psi)
        lp += -0.5 * (float(point["beta"]) - m) ** 2 / V - 0.5 * math.log(2.0 * math.pi * V)
    return lp


def gpbayes_log_joint(model, point: dict, latent: bool) -> float:
    """gpbayes' own log joint at ``point``: log p(psi) + log p(y | f) + log N(v; 0, I), f = L(psi) v
    (latent models), or the log posterior of the regression."""
    from gpbayes import linalg
    from gpbayes.posterior import log_posterior

    psi = np.asarray(point["psi"])
    if not latent:
        return float(log_posterior(model.gp, model.prior)(psi))
    v = np.asarray(point["v"])
    L = linalg.cholesky(model.kernel(psi, model.X), name="K", count=False)
    f = L @ v
    return float(model.prior.log_density(psi) + np.sum(model.likelihood.log_lik(model.y, f))
                 - 0.5 * float(v @ v) - 0.5 * v.size * math.log(2.0 * math.pi))


def check_mirror(model, point: dict, latent: bool, out, user: str | None = None) -> None:
    """Stop unless NumPyro's log joint equals gpbayes' at ``point`` to MIRROR_TOL (user problems: on
    NumPyro's unconstrained space, :func:`user_log_joint`)."""
    import jax.numpy as jnp
    from numpyro.infer.util import log_density

    if user is not None:  # NumPyro's potential on its unconstrained space: -log joint, Jacobians included
        import jax
        from numpyro.infer.util import initialize_model

        gm, sites = user_numpyro_model(user, model)
        pot = initialize_model(jax.random.PRNGKey(0), gm).potential_fn
        lp_np = -float(pot(user_unconstrained(point, sites)))
        lp_gb = user_log_joint(model, point)
    else:
        gm = numpyro_model(model, latent)
        params = {k: jnp.asarray(v) for k, v in point.items()}
        lp_np = float(log_density(gm, (), {}, params)[0])
        lp_gb = gpbayes_log_joint(model, point, latent)
    diff = lp_np - lp_gb
    out(f"mirror check at the first chain's start: NumPyro log joint {lp_np:.10f}, gpbayes {lp_gb:.10f}, "
        f"difference {diff:.2e} (tolerance {MIRROR_TOL:g})")
    if not abs(diff) <= MIRROR_TOL:
        raise SystemExit(f"bench_peers: the NumPyro model is not gpbayes' posterior (difference {diff:.3e})")


def run_numpyro(model, starts, n_warmup, n_draws, seed, latent: bool, user: str | None = None):
    import jax
    import jax.numpy as jnp
    from numpyro.infer import MCMC, NUTS
    from numpyro.infer.util import initialize_model

    if user is not None:
        gm, sites = user_numpyro_model(user, model)
        starts = [user_unconstrained(s, sites) for s in starts]
    else:
        gm = numpyro_model(model, latent)
    info = initialize_model(jax.random.PRNGKey(0), gm)
    pot = jax.jit(jax.value_and_grad(info.potential_fn))
    first = {k: jnp.asarray(v) for k, v in starts[0].items()}
    per_grad = median_cpu(lambda: jax.block_until_ready(pot(first)))

    mcmc = MCMC(NUTS(gm), num_warmup=n_warmup, num_samples=n_draws, num_chains=1, progress_bar=False)

    def one(c, start):
        t0 = time.process_time()
        mcmc.run(jax.random.PRNGKey(seed * 1000 + c), init_params={k: jnp.asarray(v) for k, v in start.items()},
                 extra_fields=("num_steps", "diverging"))
        jax.block_until_ready(mcmc.get_samples())
        return time.process_time() - t0

    t_first = one(999, starts[0])  # compiles; discarded
    draws, steps, div, times, betas = [], [], 0, [], []
    for c, start in enumerate(starts):
        times.append(one(c, start))
        smp = mcmc.get_samples()
        if user is not None:  # psi = log theta in gpbayes' order; beta on the standardised scale
            draws.append(np.column_stack([np.log(np.asarray(smp[site])).reshape(n_draws, size)
                                          for site, size in sites]))
            if "beta" in smp:
                betas.append(np.asarray(smp["beta"]))
        else:
            draws.append(np.asarray(smp["psi"]))
        ex = mcmc.get_extra_fields()
        steps.append(np.asarray(ex["num_steps"]))
        div += int(np.sum(np.asarray(ex["diverging"])))
    extra = ({"mean_constant": model.y_shift + model.y_scale * np.stack(betas)} if betas else {})
    return {"draws": np.stack(draws), "cpu": float(sum(times)), "compile": max(t_first - float(np.mean(times)), 0.0),
            "per_grad": per_grad, "steps": float(np.mean(np.concatenate(steps))), "divergences": div,
            "extra": extra}


# ---------------------------------------------------------------------------
# PyMC 6 + nutpie: the same posterior (issue 41 §8)
# ---------------------------------------------------------------------------
def pymc_model(problem: str, model, latent: bool):
    """The PyMC model of the same posterior as the gpbayes ``model``, written as a PyMC user writes it:
    PyMC's own Gamma / InverseGamma / HalfNormal / LogNormal on each positive hyperparameter (PyMC samples
    each in log space, ``<name>_log__``, with the Jacobian psi: gpbayes' psi exactly), ``pm.gp.cov``
    kernels and ``pm.MvNormal`` for the regressions (no jitter: gpbayes' regression kernels have none),
    and for the probit classifier the whitened latent f = L(psi) v, v ~ N(0, I), as NumPyro's side has it.

    Returns (pm.Model, sites): ``sites`` lists (name, size, positive) in the order of the model's free
    variables -- gpbayes' psi first (log theta, ``positive``), then ``beta`` (concrete-m52's constant, on
    the standardised y) or ``v`` (the latent model's whitened values).  The numbers are stated here again,
    not read from the gpbayes prior (as in ``user_numpyro_model``): the mirror check compares the two.
    """
    import pymc as pm
    import pytensor.tensor as pt

    from gpbayes.priors import Gamma, InverseGamma

    y = np.asarray(model.y, dtype=np.float64)
    n = model.n
    X = np.asarray(model.X, dtype=np.float64)
    d = X.shape[1]
    with pm.Model() as pmodel:
        if problem in ("housing", "ionosphere-ard"):
            # F&G eq. 5: K = sigma exp(-1/2 sum_d (x_d - x'_d)^2 / tau_d^2) (+ the latent models' relative nugget)
            comps = list(model.prior.components)
            if not (all(isinstance(c, Gamma) for c in comps[:d + 1])
                    and len({(c.shape, c.rate) for c in comps[:d]}) == 1):
                raise SystemExit(f"bench_peers: the PyMC model mirrors Gamma priors on tau and sigma, got {comps}")
            tau = pm.Gamma("tau", alpha=comps[0].shape, beta=comps[0].rate, shape=d)
            sigma = pm.Gamma("sigma", alpha=comps[d].shape, beta=comps[d].rate)
            sites = [("tau", d, True), ("sigma", 1, True)]
            if not latent:
                if not isinstance(comps[d + 1], InverseGamma):
                    raise SystemExit(f"bench_peers: the PyMC model mirrors an InverseGamma noise prior, got {comps[d + 1]}")
                noise = pm.InverseGamma("noise_variance", alpha=comps[d + 1].shape, beta=comps[d + 1].scale)
                sites.append(("noise_variance", 1, True))
                K = sigma * pm.gp.cov.ExpQuad(d, ls=tau)(X) + noise * pt.eye(n)
                pm.MvNormal("y", mu=pt.zeros(n), cov=K, observed=y)
            else:
                v = pm.Normal("v", 0.0, 1.0, shape=n)
                sites.append(("v", n, False))
                K = sigma * (pm.gp.cov.ExpQuad(d, ls=tau)(X) + float(model.kernel.nugget) * pt.eye(n))
                f = pt.linalg.cholesky(K) @ v
                # the probit likelihood, y in {-1, +1}: log Phi(y f) by erfcx below 0 (scipy's log_ndtr to
                # 3e-13 on [-40, 10]; PyMC's Normal logcdf is off by up to 2.6e-8 per point near z = -1,
                # 1e-6 summed over Ionosphere's 351 points)
                z = y * f
                log_phi = pt.switch(z < 0, pt.log(pt.erfcx(-z / math.sqrt(2.0)) / 2.0) - z**2 / 2.0,
                                    pt.log1p(-pt.erfc(z / math.sqrt(2.0)) / 2.0))
                pm.Potential("y", log_phi.sum())
        elif problem == "concrete-m52":
            ls = pm.Gamma("lengthscale", alpha=1.0, beta=1.0 / math.sqrt(d), shape=d)
            var = pm.HalfNormal("variance", sigma=1.0)
            noise = pm.InverseGamma("noise_variance", alpha=1.0, beta=0.01)
            beta = pm.Normal("beta", 0.0, 1.0)  # the constant mean, on the standardised y
            sites = [("lengthscale", d, True), ("variance", 1, True), ("noise_variance", 1, True), ("beta", 1, False)]
            K = var * pm.gp.cov.Matern52(d, ls=ls)(X) + noise * pt.eye(n)
            pm.MvNormal("y", mu=beta * pt.ones(n), cov=K, observed=y)
        elif problem == "co2-seasonal":
            ell = pm.Gamma("se_lengthscale", alpha=4.0, beta=1.0)
            sf = pm.HalfNormal("se_signal_std", sigma=2.0)  # a standard deviation
            lp = pm.Gamma("periodic_lengthscale", alpha=4.0, beta=3.0)
            per = pm.LogNormal("periodic_period", mu=0.0, sigma=0.05)
            v = pm.HalfNormal("periodic_signal_variance", sigma=1.0)  # a variance
            noise = pm.InverseGamma("noise_variance", alpha=1.0, beta=0.01)
            names = ["se_lengthscale", "se_signal_std", "periodic_lengthscale", "periodic_period",
                     "periodic_signal_variance", "noise_variance"]
            sites = [(nm, 1, True) for nm in names]
            # PyMC's Periodic is exp(-1/2 sin^2(pi r / p) / ls^2): ls = l_p / 2 gives R&W eq. 4.31's exp(-2 sin^2 / l_p^2)
            K = (sf**2 * pm.gp.cov.ExpQuad(1, ls=ell)(X) + v * pm.gp.cov.Periodic(1, period=per, ls=lp / 2.0)(X)
                 + noise * pt.eye(n))
            pm.MvNormal("y", mu=pt.zeros(n), cov=K, observed=y)
        else:
            raise SystemExit(f"bench_peers: no PyMC model for {problem!r}")
    free = [rv.name for rv in pmodel.free_RVs]
    if free != [s[0] for s in sites]:  # pragma: no cover - the order the flat vector below assumes
        raise SystemExit(f"bench_peers: PyMC's free variables {free} are not in the order {sites}")
    return pmodel, sites


def pymc_point(point: dict, sites) -> dict:
    """PyMC's unconstrained values ({"tau_log__": ..., "beta": ..., "v": ...}) from {"psi", "beta", "v"}."""
    psi, out, i = np.asarray(point["psi"], dtype=np.float64), {}, 0
    for name, size, positive in sites:
        if positive:
            out[f"{name}_log__"] = psi[i: i + size] if size > 1 else np.asarray(psi[i])
            i += size
        else:
            out[name] = np.asarray(point[name], dtype=np.float64).reshape(() if size == 1 else (size,))
    return out


def pymc_flat(point: dict, sites) -> np.ndarray:
    """The point as nutpie's flat unconstrained vector (the free variables in order)."""
    return np.concatenate([np.ravel(v) for v in pymc_point(point, sites).values()])


def peer_log_joint_gpbayes(problem: str, model, point: dict, latent: bool) -> float:
    """gpbayes' log density of what the peers sample: (psi, beta) for the user problems, (psi, v) for the
    latent ones, psi for housing."""
    if problem in USER_PROBLEMS:
        return user_log_joint(model, point)
    return gpbayes_log_joint(model, point, latent)


def mirror_points(problem: str, model, starts, latent: bool) -> list[dict]:
    """Three points for the PyMC mirror check: the first and last chains' starts and the first start moved
    by a seeded N(0, 0.2^2) step in psi (and beta)."""
    r = np.random.default_rng(12345)
    moved = {k: np.array(v, dtype=np.float64, copy=True) for k, v in starts[0].items()}
    moved["psi"] = moved["psi"] + 0.2 * r.standard_normal(moved["psi"].size)
    if "beta" in moved:
        moved["beta"] = moved["beta"] + 0.2 * r.standard_normal()
    if "v" in moved:
        moved["v"] = moved["v"] + 0.2 * r.standard_normal(moved["v"].size)
    return [starts[0], starts[-1], moved]


def check_pymc_mirror(problem: str, model, starts, latent: bool, out) -> None:
    """Stop unless PyMC's log density (its unconstrained space, Jacobians included) and gpbayes' differ by the
    same constant at three points: differences between points agree to PYMC_MIRROR_TOL."""
    pmodel, sites = pymc_model(problem, model, latent)
    logp = pmodel.compile_logp(jacobian=True)
    pts = mirror_points(problem, model, starts, latent)
    lp_pm = np.array([float(logp(pymc_point(p, sites))) for p in pts])
    lp_gb = np.array([peer_log_joint_gpbayes(problem, model, p, latent) for p in pts])
    dd = (lp_pm - lp_pm[0]) - (lp_gb - lp_gb[0])
    out(f"PyMC mirror check at 3 points (chain starts 1 and {len(starts)}, start 1 moved): PyMC log density "
        f"{', '.join(f'{x:.8f}' for x in lp_pm)}; gpbayes {', '.join(f'{x:.8f}' for x in lp_gb)}; differences between "
        f"points agree to {np.max(np.abs(dd)):.2e} (tolerance {PYMC_MIRROR_TOL:g}; constant offset "
        f"{lp_pm[0] - lp_gb[0]:.2e})")
    if not np.max(np.abs(dd)) <= PYMC_MIRROR_TOL:
        raise SystemExit(f"bench_peers: the PyMC model is not gpbayes' posterior (differences {dd})")


def run_nutpie(problem: str, model, starts, n_warmup, n_draws, seed, latent: bool):
    """PyMC 6 + nutpie (numba backend, nutpie's defaults: diagonal mass matrix from draw and gradient
    variance, target 0.8, max depth 10): one ``nutpie.sample(chains=1, cores=1)`` per chain, chain c
    starting at starts[c] (the start the other methods get; nutpie's initial-point function returns it, no
    jitter), one thread.  ``compile`` is the CPU time of ``nutpie.compile_pymc_model`` (PyTensor graph
    rewrites and numba); ``cpu`` is the sampling calls' only.  ms/grad: the sampling CPU over every leapfrog
    step taken, warm-up included (nutpie's sampler overhead included)."""
    import dataclasses

    import nutpie
    from threadpoolctl import threadpool_limits

    pmodel, sites = pymc_model(problem, model, latent)
    with threadpool_limits(limits=1):
        t0 = time.process_time()
        compiled = nutpie.compile_pymc_model(pmodel, backend="numba")
        compile_cpu = time.process_time() - t0
        draws, steps, div, times, betas, n_grad = [], [], 0, [], [], 0
        for c, start in enumerate(starts):
            flat = pymc_flat(start, sites)
            chain_model = dataclasses.replace(compiled, initial_point_func=lambda _seed, x=flat: x.copy())
            t0 = time.process_time()
            tr = nutpie.sample(chain_model, draws=n_draws, tune=n_warmup, chains=1, cores=1, seed=seed * 1000 + c,
                               progress_bar=False, save_warmup=True)
            times.append(time.process_time() - t0)
            post = tr["posterior"] if "posterior" in tr.children else tr.posterior
            draws.append(np.column_stack([np.log(np.asarray(post[name].values[0], dtype=np.float64)).reshape(n_draws, size)
                                          for name, size, positive in sites if positive]))
            if "beta" in post:
                betas.append(np.asarray(post["beta"].values[0]))
            ss = tr["sample_stats"]
            steps.append(np.asarray(ss["n_steps"].values[0]))
            div += int(np.sum(np.asarray(ss["diverging"].values)))
            n_grad += int(np.sum(np.asarray(ss["n_steps"].values)))
            if "warmup_sample_stats" in tr.children:
                n_grad += int(np.sum(np.asarray(tr["warmup_sample_stats"]["n_steps"].values)))
    extra = {"mean_constant": model.y_shift + model.y_scale * np.stack(betas)} if betas else {}
    cpu = float(sum(times))
    return {"draws": np.stack(draws), "cpu": cpu, "compile": compile_cpu, "per_grad": cpu / max(n_grad, 1),
            "steps": float(np.mean(np.concatenate(steps))), "divergences": div, "extra": extra,
            "chain_cpu": times}


# ---------------------------------------------------------------------------
def summarise(name, res, names):
    """Posterior mean, sd, MCSE, bulk/tail ESS and R-hat per log-hyperparameter: ArviZ on the draws, or
    ``gpbayes.diagnostics.importance_corrected_summary`` where the method returned log-weights."""
    draws = res["draws"]
    if res.get("log_weight") is not None:
        from gpbayes.diagnostics import importance_corrected_summary

        s = importance_corrected_summary(draws, res["log_weight"])
        nan = np.full(draws.shape[-1], np.nan)
        return {"name": name, "mean": np.asarray(s["mean"]), "sd": np.asarray(s["sd"]),
                "mcse": np.asarray(s["mcse_mean"]), "ess_bulk": np.asarray(s["ess_bulk"]), "ess_tail": nan,
                "ess_mean": np.asarray(s["ess_mean"]), "rhat": np.asarray(s["rhat"]),
                "importance_efficiency": float(s["importance_efficiency"]), "weighted": True, **res}
    import arviz as az

    post = az.convert_to_dataset({"psi": draws}, coords={"param": names}, dims={"psi": ["param"]})
    ess_b = az.ess(post, method="bulk")["psi"].values
    ess_t = az.ess(post, method="tail")["psi"].values
    rhat = az.rhat(post)["psi"].values
    mcse = az.mcse(post, method="mean")["psi"].values
    flat = draws.reshape(-1, draws.shape[-1])
    return {"name": name, "mean": flat.mean(0), "sd": flat.std(0, ddof=1), "mcse": mcse, "ess_bulk": ess_b,
            "ess_tail": ess_t, "rhat": rhat, "weighted": False, **res}


def describe_prior(prior, names) -> str:
    """The prior's components, runs of equal ones grouped: ``tau_0..tau_7 ~ Gamma(shape=1.0, rate=0.35)``."""
    parts, comps, i = [], list(prior.components), 0
    while i < len(comps):
        j = i
        while j + 1 < len(comps) and comps[j + 1] == comps[i]:
            j += 1
        who = names[i] if i == j else f"{names[i]}..{names[j]}"
        parts.append(f"{who} ~ {comps[i]}")
        i = j + 1
    return "; ".join(parts)


def _num(x, fmt: str, width: int) -> str:
    return f"{'-':>{width}s}" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:{width}{fmt}}"


def report(results, names, out) -> None:
    out()
    out(f"{'method':24s} {'min bulk ESS':>12s} {'min tail ESS':>12s} {'max R-hat':>9s} {'CPU-s':>8s} "
        f"{'compile/setup CPU-s':>19s} {'ms/grad':>8s} {'steps/draw':>10s} {'div':>4s} {'accept':>6s} "
        f"{'ESS/CPU-s':>9s}")
    for r in results:
        div = r["divergences"]
        out(f"{r['name']:24s} {r['ess_bulk'].min():12.0f} {_num(float(np.min(r['ess_tail'])), '.0f', 12)} "
            f"{r['rhat'].max():9.3f} {r['cpu']:8.1f} {_num(r['compile'], '.1f', 19)} "
            f"{_num(1e3 * r['per_grad'], '.2f', 8)} {_num(r['steps'], '.1f', 10)} "
            f"{(str(div) if div >= 0 else '-'):>4s} {_num(r.get('accept', math.nan), '.3f', 6)} "
            f"{r['ess_bulk'].min() / r['cpu']:9.3f}")
    for r in results:
        if r["weighted"]:
            out(f"{r['name']}: importance-corrected (gpbayes.diagnostics.importance_corrected_summary): "
                f"min ESS of the mean {r['ess_mean'].min():.0f}, importance efficiency "
                f"{r['importance_efficiency']:.3f}")
    for r in results:
        c = r.get("compile")
        if r["name"] == PYMC_PEER and c is not None and not math.isnan(c):
            out(f"{r['name']}: min bulk ESS per CPU-s {r['ess_bulk'].min() / r['cpu']:.3f} without compile, "
                f"{r['ess_bulk'].min() / (r['cpu'] + c):.3f} with its {c:.1f} CPU-s compile; chains' CPU-s "
                + ", ".join(f"{t:.1f}" for t in r.get("chain_cpu", ())))
    peers = [r for r in results if r["name"] in PEERS]
    ours = [r for r in results if r["name"] not in PEERS]
    peer = peers[0] if peers else None  # |z| below are against the first peer in the run
    rate = {r["name"]: r["ess_bulk"].min() / r["cpu"] for r in results}
    for pr in peers:
        if not ours:
            break
        out()
        best = max(ours, key=lambda r: rate[r["name"]])
        zmax = {}
        c = pr.get("compile")
        with_c = (pr["name"] == PYMC_PEER and c is not None and not math.isnan(c))
        for r in ours:
            z = np.abs(r["mean"] - pr["mean"]) / np.sqrt(r["mcse"] ** 2 + pr["mcse"] ** 2)
            zmax[r["name"]] = float(z.max())
            also = (f" ({rate[r['name']] / (pr['ess_bulk'].min() / (pr['cpu'] + c)):.2f}x counting its compile)"
                    if with_c else "")
            out(f"{r['name']} / {pr['name']}, min bulk ESS per CPU-s: {rate[r['name']] / rate[pr['name']]:.2f}x{also}; "
                f"max |z| of the posterior means: {z.max():.2f} ({names[int(np.argmax(z))]})"
                + ("   <- gpbayes best" if r is best else ""))
        # the issue's Done-when asks for agreement too: the best among the converged, agreeing methods
        ok = [r for r in ours if r["rhat"].max() <= DONE_RHAT and zmax[r["name"]] <= DONE_Z]
        peer_ok = pr["rhat"].max() <= DONE_RHAT
        if ok:
            b = max(ok, key=lambda r: rate[r["name"]])
            out(f"best gpbayes method with max R-hat <= {DONE_RHAT} and max |z| <= {DONE_Z:g}: {b['name']}, "
                f"{rate[b['name']] / rate[pr['name']]:.2f}x {pr['name']} (whose max R-hat is {pr['rhat'].max():.3f}"
                f"{'' if peer_ok else ', above ' + str(DONE_RHAT)})")
        else:
            out(f"no gpbayes method has max R-hat <= {DONE_RHAT} and max |z| <= {DONE_Z:g} against {pr['name']} "
                "in this run")
    out()
    head = f"{'parameter':16s}" + "".join(f" {r['name'] + ' mean (MCSE)':>34s} {'sd':>6s} {'ESS':>6s}" for r in results)
    with_z = peer is not None and ours
    out(head + ("   |z| vs " + peer["name"] + " (" + ", ".join(r["name"] for r in ours) + ")" if with_z else ""))
    for i, nm in enumerate(names):
        row = f"{nm:16s}"
        for r in results:
            row += f" {r['mean'][i]:>25.3f} ({r['mcse'][i]:.3f}) {r['sd'][i]:6.3f} {r['ess_bulk'][i]:6.0f}"
        if with_z:
            zs = [abs(r["mean"][i] - peer["mean"][i]) / math.hypot(r["mcse"][i], peer["mcse"][i]) for r in ours]
            row += "  " + " ".join(f"{z:4.1f}" for z in zs)
        out(row)


def report_extra(results, out) -> None:
    """Posterior mean (MCSE), sd and bulk ESS of the variables beside psi (the constant mean, on the
    target's original scale) per method, and |z| against NumPyro's: gpbayes draws the constant given
    each draw of psi (R&W Sec. 2.7), NumPyro samples it with psi."""
    keys = sorted({k for r in results for k in r.get("extra", {})})
    if not keys:
        return
    import arviz as az

    peer = next((r["name"] for r in results if r["name"] in PEERS), None)
    out()
    for k in keys:
        stats = {}
        for r in results:
            x = r.get("extra", {}).get(k)
            if x is None:
                continue
            ds = az.convert_to_dataset({k: x})
            stats[r["name"]] = (float(x.mean()), float(az.mcse(ds, method="mean")[k]), float(x.std(ddof=1)),
                                float(az.ess(ds, method="bulk")[k]))
        row = f"{k + ' (y units)':16s}" + "".join(
            f" {nm + ' ' + format(m, '.3f') + ' (' + format(se, '.3f') + ')':>34s} {sd:6.3f} {ess:6.0f}"
            for nm, (m, se, sd, ess) in stats.items())
        if peer is not None and peer in stats:
            pm, pse = stats[peer][:2]
            zs = [abs(m - pm) / math.hypot(se, pse) for nm, (m, se, _, _) in stats.items() if nm not in PEERS]
            row += "   |z| vs " + peer + ": " + " ".join(f"{z:4.1f}" for z in zs)
        out(row)


def run_method(m: str, prob: dict, args, out):
    """One method on a built problem: the raw result (draws, CPU time, ...), or None where it does not apply
    (the reason goes to ``out``)."""
    model, starts, latent, user = prob["model"], prob["starts"], prob["latent"], prob.get("user")
    if m == PYMC_PEER:
        if prob["problem"] not in PYMC_PROBLEMS:
            out(f"{m}: skipped (a PyMC model is written for {', '.join(PYMC_PROBLEMS)} only)")
            return None
        return run_nutpie(prob["problem"], model, starts, args.warmup, args.draws, args.seed, latent)
    if m == PEER:
        return run_numpyro(model, starts, args.warmup, args.draws, args.seed, latent, user)
    if m == SAMPLE_NUTS:
        if latent:
            out(f"{m}: skipped (gb.NUTS samples the exact marginal of a regression)")
            return None
        import gpbayes as gb

        return run_gb_sample(model, gb.NUTS(), args.chains, args.warmup, args.draws, args.seed)
    if m == DEFAULT:
        res = run_gb_sample(model, None, args.chains, None, None, args.seed)
        out(f"{m}: gb.sample(model) chose {res['method']!r}, stopped: {res['stopped']} "
            f"({res['draws'].shape[1]} draws per chain)")
        return res
    if not latent:
        if m not in REGRESSION_METHODS:
            out(f"{m}: skipped (not a method of the regression problem; it has {REGRESSION_METHODS + (PEER,)})")
            return None
        return run_gpbayes_nuts(model, prob["starts"], args.warmup, args.draws, args.seed,
                                before=m.endswith("before"))
    meth, why = latent_method(m, model)
    if meth is None:
        out(f"{m}: skipped, {why}")
        return None
    return run_gb_sample(model, meth, args.chains, args.warmup, args.draws, args.seed)


def _method_worker(problem: str, m: str, args):
    """``--jobs``: one method in its own process (spawned, so the one-thread settings above hold and no
    JAX state is forked): the problem is rebuilt here (deterministic given ``--seed``) and the summary
    returned with the lines the method printed."""
    lines = []
    prob = build_problem(problem, args)
    t0 = time.time()
    res = run_method(m, prob, args, lines.append)
    if res is None:
        return None, lines
    lines.append(f"{m}: done in {time.time() - t0:.0f} s wall, load average {load_average()}")
    return summarise(m, res, list(prob["model"].hyperparameter_labels)), lines


def run_parallel(problem: str, methods, args, out) -> list:
    """The methods of one problem in ``args.jobs`` processes, one method per process; each method's CPU
    time is its own process's, as in the sequential run.  Results in the order of ``methods``."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    # the peer usually runs longest: it starts first
    order = sorted(methods, key=lambda m: m not in PEERS)
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=mp.get_context("spawn")) as pool:
        futures = {m: pool.submit(_method_worker, problem, m, args) for m in order}
        done = {m: f.result() for m, f in futures.items()}
    results = []
    for m in methods:
        summary, lines = done[m]
        for line in lines:
            out(line)
        if summary is not None:
            results.append(summary)
    return results


def run_problem(problem: str, methods, args) -> list[str]:
    lines = []

    def out(s=""):
        print(s, flush=True)
        lines.append(s)

    prob = build_problem(problem, args)
    model, starts, latent, user = prob["model"], prob["starts"], prob["latent"], prob.get("user")
    names = list(model.hyperparameter_labels)
    out(f"bench_peers --problem {problem}: {prob['title']}, {args.chains} chains x ({args.warmup} + {args.draws}), "
        f"{'sequential' if getattr(args, 'jobs', 1) <= 1 else f'{args.jobs} processes, one method each'}, "
        f"one BLAS/XLA thread, seed {args.seed}")
    out(f"CPU: {cpu_name()}, {os.cpu_count()} cores; load average at start {load_average()} (machine shared)")
    versions = {"numpy": np.__version__}
    for mod in ("scipy", "arviz", "numpyro", "jax", "pymc", "pytensor", "nutpie", "numba"):
        try:
            versions[mod] = __import__(mod).__version__
        except ImportError:
            pass
    versions["python"] = sys.version.split()[0]
    out("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    out(f"prior on theta (density on psi = log theta with the Jacobian): {describe_prior(model.prior, names)}")
    if PEER in methods:
        try:
            check_mirror(model, starts[0], latent, out, user)
        except ImportError as err:
            out(f"{PEER}: not installed ({err})")
            methods = [m for m in methods if m != PEER]
    if PYMC_PEER in methods and problem in PYMC_PROBLEMS:
        try:
            check_pymc_mirror(problem, model, starts, latent, out)
        except ImportError as err:
            out(f"{PYMC_PEER}: not installed ({err})")
            methods = [m for m in methods if m != PYMC_PEER]
    if getattr(args, "jobs", 1) > 1 and len(methods) > 1:
        results = run_parallel(problem, methods, args, out)
    else:
        results = []
        for m in methods:
            t0 = time.time()
            res = run_method(m, prob, args, out)
            if res is not None:
                results.append(summarise(m, res, names))
                out(f"{m}: done in {time.time() - t0:.0f} s wall, load average {load_average()}")
    report(results, names, out)
    report_extra(results, out)
    out(f"load average at end {load_average()}")
    return lines


def methods_per_problem(entries, problems, error) -> dict:
    """``--methods`` entries (METHOD for every problem, PROBLEM:METHOD for one) as {problem: [methods]},
    in the order given; a problem without any entry gets DEFAULT_METHODS; a bad name calls ``error``."""
    plain, own = [], {p: [] for p in problems}
    for e in entries:
        prob, _, meth = e.rpartition(":")
        if meth not in METHODS:
            error(f"--methods: unknown method {meth!r} in {e!r}; the methods are {', '.join(METHODS)}")
        if prob and prob not in PROBLEMS:
            error(f"--methods: unknown problem {prob!r} in {e!r}; the problems are {', '.join(PROBLEMS)}")
        if prob and prob not in problems:
            error(f"--methods: {e!r} names problem {prob!r}, which is not among --problem {' '.join(problems)}")
        (own[prob] if prob else plain).append(meth)
    out = {}
    for p in problems:
        ms = plain + own[p]
        out[p] = list(dict.fromkeys(ms)) if ms else list(DEFAULT_METHODS[p])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problem", nargs="+", default=["housing"], choices=PROBLEMS,
                    help="one report per problem (default: housing)")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--draws", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1,
                    help="run a problem's methods in this many processes, one method per process (CPU time "
                         "is still each method's own; default 1: sequential)")
    ap.add_argument("--methods", nargs="+", metavar="[PROBLEM:]METHOD",
                    help=f"methods ({', '.join(METHODS)}): a bare name runs on every problem given (skipped where "
                         "it does not apply), PROBLEM:METHOD on that problem only; a problem with no entry runs "
                         f"its defaults {DEFAULT_METHODS}")
    ap.add_argument("--housing-noise-prior", choices=("library", "gamma-1-1"), default="library",
                    help="housing: the model's default noise prior (InverseGamma(1, 0.01)) or Gamma(1, 1), the "
                         "prior of the committed bench_peers_housing_4x500.txt run")
    ap.add_argument("--out-dir", type=Path, default=REPO / "benchmarks" / "results",
                    help="where bench_peers_<problem>_<chains>x<warmup+draws>.txt is written")
    args = ap.parse_args(argv)
    for name in ("chains", "warmup", "draws", "jobs"):
        if getattr(args, name) < (0 if name == "warmup" else 1):
            ap.error(f"--{name} must be >= {0 if name == 'warmup' else 1}, got {getattr(args, name)}")
    chosen = methods_per_problem(args.methods or [], args.problem, ap.error)
    for problem in args.problem:
        lines = run_problem(problem, chosen[problem], args)
        path = args.out_dir / f"bench_peers_{problem}_{args.chains}x{args.warmup + args.draws}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
        print(f"wrote {path}\n", flush=True)


if __name__ == "__main__":
    main()
