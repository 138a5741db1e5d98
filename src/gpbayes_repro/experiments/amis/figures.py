"""Xiong et al. AMIS experiments: the figures (Figs. 1-10 and the appendix panels) and tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from .analysis import MCMC_FAMILIES, final_iqr, median_interval
from .runs import parse_sampler

__all__ = [
    "LABELS",
    "COLOURS",
    "label",
    "plot_panels",
    "best_of",
    "references_table",
    "classification_references_table",
    "fig1",
    "appendix",
    "fig2",
    "fig_nimp",
    "tuning_table",
]


# ---------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------
LABELS = {"amis": "AMIS", "amis_d": "AMIS-D", "mamis": "MAMIS", "mamis_d": "MAMIS-D", "mamis_p": "MAMIS-P",
          "amis_mamis": "AMIS-MAMIS",
          "mh_i": "MH-I", "mh_d": "MH-D", "mh_h": "MH-H", "hmc_i": "HMC-I", "hmc_d": "HMC-D", "hmc_h": "HMC-H",
          "nuts_i": "NUTS-I", "nuts_d": "NUTS-D", "nuts_h": "NUTS-H", "nutsda_i": "NUTSDA-I",
          "nutsda_d": "NUTSDA-D", "nutsda_h": "NUTSDA-H", "slice": "SS"}

#: fixed colours for samplers that share a panel with a varying set of others (else by position)
COLOURS = {"mamis_p": "C6"}


def label(s: str) -> str:
    if s.startswith("pm_"):
        p = parse_sampler(s)
        return f"{'PM-AMIS' if p['method'] == 'pm_amis' else 'PM-MH'} ({'LA' if p['approx'] == 'laplace' else 'EP'}, Nimp={p['n_imp']})"
    return LABELS.get(s, s)


def _title(c: pd.DataFrame, dsn: str, kern: str) -> str:
    si = " (STAND-IN)" if int(c["stand_in"].iloc[0]) else ""
    n, n_full = int(c["n"].iloc[0]), int(c.get("n_full", c["n"]).iloc[0])
    sub = f"n={n} of {n_full} (subsample)" if n_full > n else f"n={n}"
    return f"{dsn}{si} {sub}, {kern.upper()}"


def plot_panels(cur: pd.DataFrame, panels: list[tuple[str, str, list[str]]], path, *, refs: dict | None = None,
                suptitle: str = "", eot: bool = False, share: bool = False) -> None:
    """One panel per (dataset, kernel, samplers): IQR vs O(n^3) ops (log-log).

    ``refs`` maps (dataset, kernel) to (reference E||theta||, its ESS): then
    |median - reference| is drawn dotted in each sampler's colour and the
    reference and ESS are printed in the panel.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ... import plots
    from ...plots import save_figure

    ncol = min(3, len(panels))
    nrow = -(-len(panels) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.4 * nrow), squeeze=False, sharex=share,
                             sharey=share)
    for ax, (dsn, kern, samplers) in zip(axes.flat, panels):
        g = cur[(cur["dataset"] == dsn) & (cur["kernel"] == kern)]
        for i, s in enumerate(samplers):
            c = g[g["sampler"] == s]
            if c.empty:
                continue
            (line,) = ax.loglog(c["cost"], c["iqr"], label=label(s), color=COLOURS.get(s, f"C{i % 10}"))
            if refs and (dsn, kern) in refs:
                ax.loglog(c["cost"], np.abs(c["median"] - refs[(dsn, kern)][0]), ls=":", lw=0.8,
                          color=line.get_color())
            if eot and c["tuning_cost"].iloc[0] > 1:  # slice: only the starting evaluation
                ax.axvline(c["tuning_cost"].iloc[0], ls="--", lw=0.6, color=line.get_color())
        if not g.empty:
            title = _title(g, dsn, kern)
            if refs and (dsn, kern) in refs:
                title += "\nreference E||theta|| = {:.4g} (ESS {:.0f})".format(*refs[(dsn, kern)])
            ax.set_title(title, fontsize=8 if "\n" in title else 9)
        ax.set_xlabel("O(n^3) operations")
        ax.set_ylabel("IQR of E||theta||")
        if not g.empty:
            plots.readable_log_axis(ax, "y")
            plots.readable_log_axis(ax, "x")
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    if suptitle:
        fig.suptitle(suptitle, fontsize=10)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def best_of(cur: pd.DataFrame, dsn: str, kern: str, samplers) -> str | None:
    """The sampler (of ``samplers``) with the smallest IQR at the end of its curve."""
    g = cur[(cur["dataset"] == dsn) & (cur["kernel"] == kern) & cur["sampler"].isin(list(samplers))]
    if g.empty:
        return None
    return min(g["sampler"].unique(), key=lambda s: final_iqr(g[g["sampler"] == s]))


def references_table(refs: list[xr.Dataset], level: float = 0.95) -> pd.DataFrame:
    """One row per reference run: dataset, kernel, reference E||theta||, ESS, T, N_t, bookkeeping share.

    The share is given twice: as measured once during the run (wall and CPU
    time, ``bookkeeping_fraction`` / ``bookkeeping_cpu_fraction``) and over the
    repeated timings of ``runs.bookkeeping_timings``: their median with its
    distribution-free interval (``analysis.median_interval``) and every value
    (``timing_shares``, ";"-separated) -- what the bookkeeping claim is decided on.
    """
    keys = ("dataset", "kernel", "stand_in", "n", "reference", "final_ess", "n_iterations", "n_per_iteration",
            "target_seconds", "bookkeeping_seconds", "bookkeeping_fraction", "bookkeeping_cpu_fraction")
    rows = []
    for r in refs:
        row = {k: r.attrs[k] for k in keys}
        shares = r["timing_share"].values if "timing_share" in r else np.array([])
        med, lo, hi = median_interval(shares, level)
        row.update(timing_repeats=int(shares.size), timing_share_median=med, timing_share_lo=lo, timing_share_hi=hi,
                   timing_shares=";".join(f"{x:.4g}" for x in shares))
        rows.append(row)
    return pd.DataFrame(rows)


def classification_references_table(refs: list[xr.Dataset]) -> pd.DataFrame:
    """One row per classification reference run: dataset, kernel, reference E||theta||, ESS, T, N_t, N_imp."""
    keys = ("dataset", "kernel", "stand_in", "n", "n_full", "method", "approx", "n_imp", "reference", "final_ess",
            "n_iterations", "n_per_iteration", "n_estimates", "target_seconds", "target_cpu_seconds_per_estimate")
    return pd.DataFrame([{k: r.attrs[k] for k in keys} for r in refs], columns=list(keys))


def _refs(ref_table: pd.DataFrame | None) -> dict:
    """(dataset, kernel) -> (reference E||theta||, its final ESS)."""
    if ref_table is None or ref_table.empty:
        return {}
    return {(r.dataset, r.kernel): (float(r.reference), float(r.final_ess)) for r in ref_table.itertuples()}


_FAMILY_SETS = {"mh": [f"mh_{m}" for m in "idh"],
                "hmc": [f"{f}_{m}" for f in ("hmc", "nuts", "nutsda") for m in "idh"]}


def fig1(cur: pd.DataFrame, ref_table, path, *, scale: str = "") -> None:
    """AMIS, best MAMIS (of MAMIS, MAMIS-P, AMIS-MAMIS), best MH, best HMC-family, SS per regression (data set, kernel)."""
    reg = cur[cur["family"].isin(("is",) + MCMC_FAMILIES)]
    panels = []
    for kern in ("rbf", "ard"):
        for dsn in sorted(reg[reg["kernel"] == kern]["dataset"].unique()):
            chosen = ["amis", best_of(cur, dsn, kern, ("mamis", "mamis_p", "amis_mamis")),
                      best_of(cur, dsn, kern, _FAMILY_SETS["mh"]), best_of(cur, dsn, kern, _FAMILY_SETS["hmc"]),
                      "slice"]
            panels.append((dsn, kern, [s for s in chosen if s]))
    plot_panels(cur, panels, path, refs=_refs(ref_table),
                suptitle=f"Xiong et al. Fig. 1 ({scale} scale): IQR (solid) and |median - reference| (dotted)")


def appendix(cur: pd.DataFrame, ref_table, dataset: str, kernel: str, path, *, scale: str = "") -> None:
    """Figs. 3-8: all variants on one (data set, kernel), in family panels, end-of-tuning markers dashed."""
    g = cur[(cur["dataset"] == dataset) & (cur["kernel"] == kernel)]
    present = set(g["sampler"])
    groups = [["amis", "amis_d", "mamis", "mamis_d", "amis_mamis", "mamis_p"], _FAMILY_SETS["mh"],
              [s for s in _FAMILY_SETS["hmc"] if s.startswith("hmc")],
              [s for s in _FAMILY_SETS["hmc"] if not s.startswith("hmc")], ["slice"]]
    panels = [(dataset, kernel, [s for s in grp if s in present]) for grp in groups]
    plot_panels(cur, [p for p in panels if p[2]], path, refs=_refs(ref_table), eot=True, share=True,
                suptitle=f"{dataset}, {kernel.upper()} ({scale} scale): all variants; dashed = end of tuning")


def fig2(cur: pd.DataFrame, path, *, ref_table: pd.DataFrame | None = None, scale: str = "") -> None:
    """Fig. 2: PM-AMIS and PM-MH with LA and EP at the largest N_imp, per classification (data set, kernel)."""
    cl = cur[cur["family"].isin(("pm_amis", "pm_mh"))]
    panels = []
    for kern in ("rbf", "ard"):
        for dsn in sorted(cl[cl["kernel"] == kern]["dataset"].unique()):
            g = cl[(cl["dataset"] == dsn) & (cl["kernel"] == kern)]
            top = max(parse_sampler(s)["n_imp"] for s in g["sampler"])
            panels.append((dsn, kern, sorted(s for s in g["sampler"].unique() if parse_sampler(s)["n_imp"] == top)))
    plot_panels(cur, panels, path, refs=_refs(ref_table),
                suptitle=f"Xiong et al. Fig. 2 ({scale} scale): largest N_imp; IQR (solid), |median - reference| "
                         "(dotted)")


def fig_nimp(cur: pd.DataFrame, kernel: str, path, *, ref_table: pd.DataFrame | None = None,
             scale: str = "") -> None:
    """Figs. 9 (RBF) / 10 (ARD): every PM configuration (N_imp 1 vs 64), per classification data set."""
    cl = cur[cur["family"].isin(("pm_amis", "pm_mh")) & (cur["kernel"] == kernel)]
    panels = [(dsn, kernel, sorted(cl[cl["dataset"] == dsn]["sampler"].unique()))
              for dsn in sorted(cl["dataset"].unique())]
    if not panels:
        panels = [("none", kernel, [])]
    plot_panels(cur, panels, path, refs=_refs(ref_table),
                suptitle=f"{kernel.upper()}: PM-AMIS / PM-MH, N_imp 1 vs 64 ({scale} scale); IQR (solid), "
                         "|median - reference| (dotted)")


def tuning_table(cur: pd.DataFrame) -> pd.DataFrame:
    """Table 6 analogue: median tuning cost (O(n^3) operations) per (data set, kernel) and tuned sampler."""
    t = cur.groupby(["dataset", "kernel", "sampler"], sort=True)["tuning_cost"].first().reset_index()
    t = t[t["tuning_cost"] > 1]
    return t.pivot(index="sampler", columns=["dataset", "kernel"], values="tuning_cost")
