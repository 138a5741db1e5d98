"""Tests for gpbayes.diagnostics (ESS, CODA ESS, R-hat, PSRF evolution, summary).

Three kinds of check:

* analytic: stationary AR(1) chains, whose integrated autocorrelation time is
  (1 + phi) / (1 - phi), and i.i.d. / mean-shifted / drifting chains for R-hat;
* golden values from independent implementations (ArviZ 0.23.4, statsmodels
  0.15.0 Yule-Walker, and R's ``ar(lh)`` output), hard-coded below;
* input validation and the xarray summary.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import lfilter

from gpbayes import diagnostics as dg


def ar1_chains(
    rng: np.random.Generator, phi: float, n_chain: int, n_draw: int
) -> np.ndarray:
    """Stationary AR(1) chains x_t = phi x_{t-1} + e_t, e_t ~ N(0, 1)."""
    e = rng.standard_normal((n_chain, n_draw))
    e[:, 0] /= np.sqrt(1.0 - phi**2)  # start in the stationary distribution
    return lfilter([1.0], [1.0, -phi], e, axis=1)


# ---------------------------------------------------------------------------
# AR(1): tau = (1 + phi) / (1 - phi), ESS = N (1 - phi) / (1 + phi)
# ---------------------------------------------------------------------------
# The number of draws is chosen so that the true ESS is ~10_000 for every phi.
# Sampling variability, measured by simulation (4 chains, these sizes):
#   * ess (all methods) / integrated_autocorr_time: relative sd ~0.03
#     (~2.9 / sqrt(ESS_true)), tails heavier than Gaussian: max |rel. error|
#     0.15 over 3 x 400 seeds, > 0.12 for ~0.5% of seeds;
#   * ess_coda: relative sd 0.013-0.031; at phi = 0 AIC sometimes picks a
#     spurious high order: max |rel. error| 0.19 over 1000 seeds;
#   * a single chain (ESS_true ~2_500): max |rel. error| of tau 0.40 over
#     3 x 400 x 4 chains.
# Hence REL_TOL = 0.2 (0.5 per chain), which holds for any seed in practice,
# while bugs such as a missing factor 2 in tau, N per chain instead of total,
# a missing between-chain term, or ignoring the AR coefficients in the CODA
# spectrum change the result by >= ~1.5-2x at some phi.
AR1_CASES = [(0.0, 2_500), (0.5, 7_500), (0.9, 47_500)]
N_CHAIN = 4
REL_TOL = 0.2


@pytest.mark.parametrize("phi,n_draw", AR1_CASES)
def test_ar1_integrated_autocorr_time_and_ess(phi, n_draw):
    rng = np.random.default_rng(20240601 + int(10 * phi))
    x = ar1_chains(rng, phi, N_CHAIN, n_draw)
    tau_true = (1.0 + phi) / (1.0 - phi)
    n_total = N_CHAIN * n_draw
    ess_true = n_total / tau_true

    assert dg.integrated_autocorr_time(x) == pytest.approx(tau_true, rel=REL_TOL)
    assert dg.ess(x) == pytest.approx(ess_true, rel=REL_TOL)
    assert dg.ess(x, method="identity") == pytest.approx(ess_true, rel=REL_TOL)
    assert dg.ess(x, method="bulk") == pytest.approx(ess_true, rel=REL_TOL)
    assert dg.ess_coda(x) == pytest.approx(ess_true, rel=REL_TOL)
    # ESS and tau are the same estimate
    assert dg.ess(x, method="identity") * dg.integrated_autocorr_time(
        x
    ) == pytest.approx(n_total)
    # per-chain tau has one entry per chain, each near tau_true (4x fewer draws)
    per_chain = dg.integrated_autocorr_time(x, per_chain=True)
    assert per_chain.shape == (N_CHAIN,)
    np.testing.assert_allclose(per_chain, tau_true, rtol=0.5)


def test_ar1_coda_selects_order_one():
    x = ar1_chains(np.random.default_rng(7), 0.9, 2, 20_000)
    spec, order = dg.spectrum0_ar(x)
    # AIC selects the true order for most chains; spectrum at 0 of AR(1) with
    # unit innovations is 1 / (1 - phi)^2 = 100
    assert np.all(order >= 1)
    np.testing.assert_allclose(spec, 100.0, rtol=0.25)


def test_autocorrelation_of_ar1_matches_phi_power():
    x = ar1_chains(np.random.default_rng(11), 0.7, 3, 20_000)
    acf = dg.autocorrelation(x, max_lag=5)
    assert acf.shape == (3, 6)
    np.testing.assert_allclose(acf[:, 0], 1.0)
    # sd of the lag-k sample autocorrelation ~ sqrt((1+phi^2)/(1-phi^2)/n) ~ 0.012
    np.testing.assert_allclose(
        acf, np.broadcast_to(0.7 ** np.arange(6), (3, 6)), atol=0.05
    )


def test_autocovariance_matches_direct_sum():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 37))
    acov = dg.autocovariance(x)
    xc = x - x.mean(axis=1, keepdims=True)
    direct = np.array(
        [[xc[c, : 37 - k] @ xc[c, k:] / 37 for k in range(37)] for c in range(2)]
    )
    np.testing.assert_allclose(acov, direct, atol=1e-12)


# ---------------------------------------------------------------------------
# R-hat
# ---------------------------------------------------------------------------
def test_rhat_iid_chains_close_to_one():
    x = np.random.default_rng(99).standard_normal((4, 5_000))
    assert abs(dg.rhat(x) - 1.0) < 0.01
    assert abs(dg.split_rhat(x) - 1.0) < 0.01
    assert abs(dg.split_rhat(x, rank_normalize=True) - 1.0) < 0.01
    point, upper = dg.gelman_diag(x)
    assert abs(point - 1.0) < 0.01
    assert point <= upper < 1.01


def test_rhat_shifted_means_detected():
    # one of four chains shifted by 2 sd: var+ / W ~ 1 + 4 * 0.25 -> R ~ 1.41
    x = np.random.default_rng(5).standard_normal((4, 1_000))
    x[3] += 2.0
    assert dg.rhat(x) > 1.1
    assert dg.split_rhat(x) > 1.1
    assert dg.split_rhat(x, rank_normalize=True) > 1.1
    point, upper = dg.gelman_diag(x)
    assert point > 1.1 and upper >= point
    assert dg.rhat(x) == pytest.approx(np.sqrt(1.0 + 4 * 0.25), rel=0.05)
    # ESS penalises between-chain disagreement; CODA's does not
    assert dg.ess(x) < 0.5 * x.size < dg.ess_coda(x)


def test_split_rhat_detects_within_chain_trend():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((4, 2_000)) + np.linspace(0.0, 3.0, 2_000)[None, :]
    assert dg.rhat(x) < 1.01  # every chain has the same drift
    assert dg.split_rhat(x) > 1.1
    assert dg.split_rhat(x[:1]) > 1.1  # a single chain works after splitting


def test_gelman_diag_point_estimate_is_at_least_classic():
    # CODA multiplies B/n by (1 + 1/m) and applies (d+3)/(d+1) >= 1
    x = ar1_chains(np.random.default_rng(21), 0.8, 3, 200)
    x[0] += 0.5
    point, upper = dg.gelman_diag(x)
    assert dg.rhat(x) < point < upper
    _, upper_99 = dg.gelman_diag(x, confidence=0.99)
    assert upper_99 > upper


def test_psrf_evolution():
    # chains started far apart in a slowly mixing AR(1): R-hat decreases to ~1
    rng = np.random.default_rng(4)
    x = ar1_chains(rng, 0.95, 4, 5_000)
    x += (
        np.array([-20.0, -10.0, 10.0, 20.0])[:, None]
        * 0.95 ** np.arange(5_000)[None, :]
    )
    cps = [100, 1_000, 2_000, 5_000]
    ev = dg.psrf_evolution(x, cps)
    assert ev.shape == (4,)
    np.testing.assert_allclose(ev, [dg.rhat(x[:, :k]) for k in cps])
    # initial offsets still visible at 100 draws (R ~ 1.3), gone by 1000
    assert ev[0] > 1.2
    assert np.all(ev[1:] < 1.05)

    split = dg.psrf_evolution(x, cps, method="split")
    np.testing.assert_allclose(split, [dg.split_rhat(x[:, :k]) for k in cps])
    coda = dg.psrf_evolution(x, cps, method="coda")
    assert coda.shape == (4, 2)
    np.testing.assert_allclose(coda[1], dg.gelman_diag(x[:, :1_000]))
    half = dg.psrf_evolution(x, cps, discard_first_half=True)
    np.testing.assert_allclose(half[2], dg.rhat(x[:, 1_000:2_000]))

    with pytest.raises(ValueError, match="exceeds"):
        dg.psrf_evolution(x, [6_000])
    with pytest.raises(ValueError, match="at least 4"):
        dg.psrf_evolution(x, [3])
    with pytest.raises(ValueError, match="unknown method"):
        dg.psrf_evolution(x, cps, method="nope")


# ---------------------------------------------------------------------------
# golden values from independent implementations
# ---------------------------------------------------------------------------
def golden_draws() -> np.ndarray:
    """4 chains x 51 draws (odd: exercises the split), AR(1) phi=0.6, offsets."""
    rng = np.random.default_rng(12345)
    n_chain, n_draw, phi = 4, 51, 0.6
    eps = rng.standard_normal((n_chain, n_draw))
    x = np.empty((n_chain, n_draw))
    x[:, 0] = eps[:, 0] / np.sqrt(1 - phi**2)
    for t in range(1, n_draw):
        x[:, t] = phi * x[:, t - 1] + eps[:, t]
    x += np.array([0.0, 0.2, -0.1, 0.5])[:, None]
    return x


def golden_ar2() -> np.ndarray:
    """3 chains x 300 draws of AR(2) x_t = 0.5 x_{t-1} + 0.3 x_{t-2} + e_t."""
    rng = np.random.default_rng(2024)
    n_chain, n_draw = 3, 300
    eps = rng.standard_normal((n_chain, n_draw + 100))
    x = np.zeros((n_chain, n_draw + 100))
    for t in range(2, n_draw + 100):
        x[:, t] = 0.5 * x[:, t - 1] + 0.3 * x[:, t - 2] + eps[:, t]
    return x[:, 100:]


def _check_stream(x: np.ndarray, expected_sum: float) -> None:
    # guards against a change of numpy's random stream, which would invalidate
    # the golden numbers without any fault in the diagnostics
    assert float(x.sum()) == pytest.approx(
        expected_sum, rel=1e-12
    ), "numpy's default_rng stream changed; regenerate the golden values"


# Golden values computed with ArviZ 0.23.4 (numpy 2.4.6, scipy 1.17.1) in a
# scratch venv, NOT a project dependency:
#   arviz.ess(x, method=m) and arviz.rhat(x, method=m) on x = golden_draws(),
#   arviz.stats.stats_utils.autocorr(x[0]).
# Definitions coincide with ours: ess "identity"/"mean"/"bulk" == arviz methods
# of the same name; rhat == arviz "identity"; split_rhat == arviz "split";
# split_rhat(rank_normalize=True) == arviz "rank".  (ArviZ's split R-hat
# requires >= 2 chains, ours also accepts 1; ArviZ returns NaN where we raise.)
ARVIZ_ESS = {
    "bulk": 44.14270601233561,
    "mean": 46.47556102301027,
    "identity": 46.123431217827175,
}
ARVIZ_ESS_ONE_CHAIN = {"bulk": 27.20871566727553, "mean": 24.98227091300777}
ARVIZ_RHAT_IDENTITY = 1.037724475918061
ARVIZ_RHAT_SPLIT = 1.0833500577164357
ARVIZ_RHAT_RANK = 1.0868632172127053
ARVIZ_AUTOCORR_CHAIN0 = [
    1.0,
    0.4982976677287289,
    0.14774162089139065,
    -0.012225950985177566,
    -0.24776143505097808,
    -0.24339865436451244,
]


def test_golden_arviz():
    x = golden_draws()
    _check_stream(x, 31.773997125524193)
    for method, value in ARVIZ_ESS.items():
        assert dg.ess(x, method=method) == pytest.approx(value, rel=1e-10), method
    for method, value in ARVIZ_ESS_ONE_CHAIN.items():
        assert dg.ess(x[:1], method=method) == pytest.approx(value, rel=1e-10), method
    assert dg.rhat(x) == pytest.approx(ARVIZ_RHAT_IDENTITY, rel=1e-12)
    assert dg.split_rhat(x) == pytest.approx(ARVIZ_RHAT_SPLIT, rel=1e-12)
    assert dg.split_rhat(x, rank_normalize=True) == pytest.approx(
        ARVIZ_RHAT_RANK, rel=1e-12
    )
    np.testing.assert_allclose(
        dg.autocorrelation(x[0], max_lag=5)[0], ARVIZ_AUTOCORR_CHAIN0, atol=1e-12
    )


# CODA effectiveSize golden values.  R was not available, so they were
# computed with an independent re-implementation in the same scratch venv:
# for every chain and p = 0..min(n-1, floor(10 log10 n)),
# statsmodels 0.15.0 `yule_walker(y, order=p, method="mle", demean=True)`
# (sigma^2 for p = 0 is the biased variance), then R's ar() rules
# (AIC = n log sigma_p^2 + 2p, sigma^2 * n/(n-p-1)) and CODA's
# n var(y) (1 - sum a)^2 / sigma^2, summed over chains.
STATSMODELS_ESS_CODA = {
    "golden_draws": 52.65957123226528,
    "golden_ar2": 92.8176485301583,
}


def test_golden_ess_coda_statsmodels():
    x = golden_draws()
    _check_stream(x, 31.773997125524193)
    assert dg.ess_coda(x) == pytest.approx(
        STATSMODELS_ESS_CODA["golden_draws"], rel=1e-10
    )
    np.testing.assert_array_equal(dg.spectrum0_ar(x)[1], [1, 1, 1, 1])
    y = golden_ar2()
    _check_stream(y, -162.13524885167743)
    assert dg.ess_coda(y) == pytest.approx(
        STATSMODELS_ESS_CODA["golden_ar2"], rel=1e-10
    )
    np.testing.assert_array_equal(dg.spectrum0_ar(y)[1], [2, 2, 2])


# R's `lh` series (datasets package) and the output of `ar(lh)` printed in R's
# documentation example: coefficients 0.6534 -0.0636 -0.2269, "Order selected 3
# sigma^2 estimated as 0.1959".
LH = np.array(
    [2.4, 2.4, 2.4, 2.2, 2.1, 1.5, 2.3, 2.3, 2.5, 2.0, 1.9, 1.7, 2.2, 1.8, 3.2, 3.2,
     2.7, 2.2, 2.2, 1.9, 1.9, 1.8, 2.7, 3.0, 2.3, 2.0, 2.0, 2.9, 2.9, 2.7, 2.7, 2.3,
     2.6, 2.4, 1.8, 1.7, 1.5, 1.4, 2.1, 3.3, 3.5, 3.5, 3.1, 2.6, 2.1, 3.4, 3.0, 2.9]
)  # fmt: skip


def test_golden_r_ar_lh():
    order, coef, var_pred = dg._ar_yule_walker_aic(LH)
    assert order == 3
    np.testing.assert_allclose(coef, [0.6534, -0.0636, -0.2269], atol=5e-5)
    assert var_pred == pytest.approx(0.1959, abs=5e-5)
    spec, orders = dg.spectrum0_ar(LH)
    assert orders.tolist() == [3]
    # CODA effectiveSize(lh) from the rounded R output: relative rounding
    # error <= ~1e-3 (dominated by 1 - sum(ar) = 0.3629 known to 1.5e-4)
    r_spec = 0.1959 / (1.0 - (0.6534 - 0.0636 - 0.2269)) ** 2
    assert spec[0] == pytest.approx(r_spec, rel=2e-3)
    assert dg.ess_coda(LH) == pytest.approx(48 * LH.var(ddof=1) / r_spec, rel=2e-3)


# ---------------------------------------------------------------------------
# edge cases and validation
# ---------------------------------------------------------------------------
def test_one_dimensional_input_is_one_chain():
    x = ar1_chains(np.random.default_rng(1), 0.5, 1, 1_000)
    assert dg.ess(x[0]) == dg.ess(x)
    assert dg.ess_coda(x[0]) == dg.ess_coda(x)
    assert dg.autocorrelation(x[0]).shape == (1, 1_000)


def test_constant_chains():
    x = np.full((2, 50), 3.0)
    assert dg.ess(x) == 100.0  # ArviZ convention (N draws used)
    assert dg.integrated_autocorr_time(x) == 1.0
    assert dg.ess_coda(x) == 0.0  # CODA: spectrum0 = 0 -> ESS 0
    assert np.isnan(dg.rhat(x))


@pytest.mark.parametrize(
    "fn",
    [
        dg.ess,
        dg.ess_coda,
        dg.rhat,
        dg.split_rhat,
        dg.gelman_diag,
        dg.autocorrelation,
        dg.integrated_autocorr_time,
    ],
)
def test_validation(fn):
    good = np.random.default_rng(0).standard_normal((2, 20))
    bad = good.copy()
    bad[1, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fn(bad)
    bad[1, 3] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        fn(bad)
    with pytest.raises(ValueError, match="at least 4"):
        fn(good[:, :3])
    with pytest.raises(ValueError, match="1-D .* or 2-D"):
        fn(good[None])


def test_rhat_needs_two_chains_and_bad_methods():
    x = np.random.default_rng(0).standard_normal(100)
    with pytest.raises(ValueError, match="at least 2 chains"):
        dg.rhat(x)
    with pytest.raises(ValueError, match="at least 2 chains"):
        dg.gelman_diag(x)
    with pytest.raises(ValueError, match="unknown ESS method"):
        dg.ess(x, method="tail")


# ---------------------------------------------------------------------------
# summarise
# ---------------------------------------------------------------------------
def _posterior_arrays():
    rng = np.random.default_rng(31)
    theta = ar1_chains(rng, 0.5, 3, 400)
    beta = np.stack([ar1_chains(rng, phi, 3, 400) for phi in (0.0, 0.3, 0.8)], axis=-1)
    return theta, beta


def test_summarise_xarray():
    xr = pytest.importorskip("xarray")
    theta, beta = _posterior_arrays()
    ds = xr.Dataset(
        {
            "theta": (("chain", "draw"), theta),
            # dims deliberately out of order: summarise must transpose
            "beta": (("k", "chain", "draw"), np.moveaxis(beta, -1, 0)),
        },
        coords={"k": ["a", "b", "c"]},
    )
    out = dg.summarise(ds)
    assert isinstance(out, xr.Dataset)
    assert list(out["metric"].values) == list(dg.SUMMARY_METRICS)
    assert out["theta"].dims == ("metric",)
    assert out["beta"].dims == ("metric", "k")
    assert list(out["beta"]["k"].values) == ["a", "b", "c"]

    t = out["theta"]
    assert float(t.sel(metric="mean")) == pytest.approx(theta.mean())
    assert float(t.sel(metric="sd")) == pytest.approx(theta.std(ddof=1))
    assert float(t.sel(metric="ess")) == pytest.approx(dg.ess(theta))
    assert float(t.sel(metric="ess_bulk")) == pytest.approx(
        dg.ess(theta, method="bulk")
    )
    assert float(t.sel(metric="ess_coda")) == pytest.approx(dg.ess_coda(theta))
    assert float(t.sel(metric="rhat")) == pytest.approx(dg.rhat(theta))
    assert float(t.sel(metric="split_rhat")) == pytest.approx(dg.split_rhat(theta))
    for j, k in enumerate("abc"):
        b = beta[..., j]
        assert float(out["beta"].sel(metric="ess_coda", k=k)) == pytest.approx(
            dg.ess_coda(b)
        )
        assert float(out["beta"].sel(metric="rhat", k=k)) == pytest.approx(dg.rhat(b))
    # more autocorrelation -> smaller ESS
    ess_beta = out["beta"].sel(metric="ess").values
    assert ess_beta[0] > ess_beta[1] > ess_beta[2]

    sub = dg.summarise(ds, var_names=["theta"], ess_method="identity")
    assert list(sub.data_vars) == ["theta"]
    assert float(sub["theta"].sel(metric="ess")) == pytest.approx(
        dg.ess(theta, method="identity")
    )


def test_summarise_mapping_and_errors():
    theta, beta = _posterior_arrays()
    out = dg.summarise({"theta": theta, "beta": beta, "one_chain": theta[:1]})
    assert set(out) == {"theta", "beta", "one_chain"}
    assert set(out["beta"]) == set(dg.SUMMARY_METRICS)
    assert out["beta"]["ess"].shape == (3,)
    assert out["theta"]["rhat"].shape == ()
    assert np.isnan(out["one_chain"]["rhat"])  # undefined for one chain
    assert np.isfinite(out["one_chain"]["split_rhat"])

    bad = beta.copy()
    bad[0, 5, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        dg.summarise({"beta": bad})
    with pytest.raises(ValueError, match="at least 4"):
        dg.summarise({"theta": theta[:, :3]})
    with pytest.raises(TypeError):
        dg.summarise(theta)
