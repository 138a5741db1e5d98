"""Figure labelling (issue 14 item 13): axis labels, legends and readable log ticks, checked on the drawn figures."""

import numpy as np
import pytest
import xarray as xr

from gpbayes_repro import plots


@pytest.fixture
def captured(monkeypatch):
    """Keep the figure that a plotting function would save (and close)."""
    figs = []
    monkeypatch.setattr(plots, "save_figure", lambda fig, path: figs.append(fig))
    yield figs
    for f in figs:
        plots.plt.close(f)


def test_readable_log_axis_has_plain_labels_within_a_decade():
    fig, ax = plots.plt.subplots()
    ax.plot([1, 2], [3.0, 8.0])
    ax.set_yscale("log")
    fig.canvas.draw()
    default = [t.get_text() for t in ax.get_yticklabels(minor=True) if t.get_text()]
    assert any("times" in t for t in default)  # matplotlib's own: $\mathdefault{4\times10^{0}}$
    plots.readable_log_axis(ax, "y")
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() + ax.get_yticklabels(minor=True) if t.get_text()]
    plots.plt.close(fig)
    assert labels and not any("times" in t or "^" in t for t in labels)
    assert "5" in labels


def test_fg_fig2_has_y_label_and_legend(captured):
    tau = np.linspace(0.1, 1.0, 5)
    post = xr.DataArray(np.random.default_rng(0).random((2, 1, 3, 5)), dims=("approximation", "n_imp", "rep", "tau"),
                        coords={"approximation": ["laplace", "ep"], "n_imp": [1], "tau": tau}, attrs={"n": 50})
    plots.pm_gpc_fig2([post], [np.ones(5)], "unused.pdf")
    (fig,) = captured
    axes = fig.axes
    assert axes[0].get_ylabel() == "p(tau | y)"
    legend = axes[1].get_legend()
    assert legend is not None
    assert {t.get_text() for t in legend.get_texts()} == {"mean of the PM estimate", "2.5% and 97.5% quantiles",
                                                          "prior p(tau)"}


def test_fg_figs34_psrf_panel_has_legend_and_label(captured):
    k = [10, 20]
    s = xr.Dataset({"trace": (("scheme", "chain", "thinned_draw"), np.zeros((1, 2, 2))),
                    "acf": (("scheme", "lag"), np.zeros((1, 3))),
                    "psrf_median": (("scheme", "iteration"), [[1.3, 1.05]]),
                    "psrf_975": (("scheme", "iteration"), [[1.6, 1.1]])},
                   coords={"scheme": ["aa"], "iteration": k, "lag": [0, 1, 2], "thinned_draw": [0, 10]},
                   attrs={"dataset": "pima", "n": 100})
    plots.pm_gpc_fig34([s], "unused.pdf")
    (fig,) = captured
    psrf = fig.axes[2]
    assert psrf.get_ylabel() == "PSRF of log tau"
    assert [t.get_text() for t in psrf.get_legend().get_texts()] == ["median", "97.5% quantile", "1.1"]
