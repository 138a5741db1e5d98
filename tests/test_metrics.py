"""AUC and the capacity scores of Filippone & Girolami (2014), Sec. 5.3; probabilistic SVM."""

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from gpbayes import metrics
from gpbayes_repro.baselines import probabilistic_svm

# Eight points written out by hand.  Confidence c = |p - 0.5| is chosen
# 0.005 away from every threshold k/100, so no comparison is near a tie.
#
#  pt   p      y   c      prediction   abstained from rho =
#  A  0.455   +1  0.045   -1 wrong      0.05
#  B  0.595   +1  0.095   +1 right      0.10
#  C  0.705   -1  0.205   +1 wrong      0.21
#  D  0.295   -1  0.205   -1 right      0.21
#  E  0.205   -1  0.295   -1 right      0.30
#  F  0.845   +1  0.345   +1 right      0.35
#  G  0.955   +1  0.455   +1 right      0.46
#  H  0.015   -1  0.485   -1 right      0.49
P8 = np.array([0.455, 0.595, 0.705, 0.295, 0.205, 0.845, 0.955, 0.015])
Y8 = np.array([1, 1, -1, -1, -1, 1, 1, -1])

# Expected curve (abstention, accuracy, AUC) on each stretch of thresholds:
#  rho 0.00-0.04: all kept        a = 0      acc 6/8   AUC: pos {A,B,F,G} vs neg {C,D,E,H}:
#                                                      A>3, B>3, F>4, G>4 -> 14/16
#  rho 0.05-0.09: A out           a = 1/8    acc 6/7   AUC: B>3, F>4, G>4 -> 11/12
#  rho 0.10-0.20: A,B out         a = 2/8    acc 5/6   AUC: {F,G} vs {C,D,E,H} -> 1
#  rho 0.21-0.29: +C,D out        a = 4/8    acc 1     AUC 1
#  rho 0.30-0.34: +E out          a = 5/8    acc 1     AUC 1
#  rho 0.35-0.45: +F out          a = 6/8    acc 1     AUC 1 ({G} vs {H})
#  rho 0.46-0.48: +G out          a = 7/8    acc 1     AUC undefined (only H, a negative)
#  rho 0.49-0.50: all out         a = 1      acc, AUC undefined
EXPECTED_ROWS = [  # (first rho index, last rho index, abstention, accuracy, auc)
    (0, 4, 0.0, 6 / 8, 14 / 16),
    (5, 9, 1 / 8, 6 / 7, 11 / 12),
    (10, 20, 2 / 8, 5 / 6, 1.0),
    (21, 29, 4 / 8, 1.0, 1.0),
    (30, 34, 5 / 8, 1.0, 1.0),
    (35, 45, 6 / 8, 1.0, 1.0),
    (46, 48, 7 / 8, 1.0, np.nan),
    (49, 50, 1.0, np.nan, np.nan),
]
# trapezoids over the defined points, divided by the largest defined abstention
CAP_ACC = (
    (1 / 8) * (6 / 8 + 6 / 7) / 2 + (1 / 8) * (6 / 7 + 5 / 6) / 2 + (2 / 8) * (5 / 6 + 1) / 2 + (3 / 8) * 1
) / (7 / 8)
CAP_AUC = ((1 / 8) * (14 / 16 + 11 / 12) / 2 + (1 / 8) * (11 / 12 + 1) / 2 + (4 / 8) * 1) / (6 / 8)


def test_hand_computed_capacity_curve():
    curve = metrics.capacity_curve(P8, Y8)
    np.testing.assert_array_equal(curve.thresholds, np.arange(51) / 100)
    for first, last, a, acc, au in EXPECTED_ROWS:
        sl = slice(first, last + 1)
        np.testing.assert_allclose(curve.abstention[sl], a, rtol=0, atol=1e-15)
        np.testing.assert_allclose(curve.accuracy[sl], acc, rtol=1e-15)
        np.testing.assert_allclose(curve.auc[sl], au, rtol=1e-15)
    np.testing.assert_array_equal(curve.n_kept, np.round(8 * (1 - curve.abstention)))
    assert CAP_ACC == pytest.approx(0.9260204081632653, abs=1e-15)  # 0.81026785714 / 0.875
    assert CAP_AUC == pytest.approx(0.9756944444444444, abs=1e-15)  # 0.73177083333 / 0.75
    assert metrics.capacity_accuracy(P8, Y8) == pytest.approx(CAP_ACC, rel=1e-14)
    assert metrics.capacity_auc(P8, Y8) == pytest.approx(CAP_AUC, rel=1e-14)
    # labels in {0, 1} give the same answers
    assert metrics.capacity_accuracy(P8, (Y8 + 1) // 2) == pytest.approx(CAP_ACC, rel=1e-14)


def test_abstention_is_strict_and_symmetric_in_labels():
    # p = 0.25 and 0.75 (exact in binary) sit on the boundary at rho = 0.25: kept (strict <)
    p = np.array([0.25, 0.75, 0.9, 0.1])
    y = np.array([-1, 1, 1, -1])
    c = metrics.capacity_curve(p, y, thresholds=[0.0, 0.25, 0.26])
    np.testing.assert_array_equal(c.abstention, [0.0, 0.0, 0.5])
    # (p, y) -> (1 - p, -y) leaves every score unchanged, ties at 0.5 included
    p2 = np.r_[P8, 0.5, 0.5]
    y2 = np.r_[Y8, 1, -1]
    a = metrics.capacity_curve(p2, y2)
    b = metrics.capacity_curve(1 - p2, -y2)
    np.testing.assert_allclose(a.accuracy, b.accuracy, rtol=1e-14)
    np.testing.assert_allclose(a.auc, b.auc, rtol=1e-14)
    np.testing.assert_array_equal(a.abstention, b.abstention)


def test_ties_at_one_half_count_half():
    assert metrics.accuracy([0.5, 0.5, 0.9], [1, -1, 1]) == pytest.approx((0.5 + 0.5 + 1) / 3)
    # at rho = 0.01 the two p = 0.5 points are abstained from
    c = metrics.capacity_curve([0.5, 0.5, 0.9, 0.2], [1, -1, 1, -1], thresholds=[0.0, 0.01])
    np.testing.assert_allclose(c.accuracy, [3 / 4, 1.0])
    np.testing.assert_allclose(c.abstention, [0.0, 0.5])


def test_edge_cases_all_abstained_one_class_perfect():
    # everything in (0, 1) is abstained at rho = 0.5: the last point is undefined
    rng = np.random.default_rng(0)
    y = np.where(rng.uniform(size=40) < 0.5, -1, 1)
    p = np.where(y == 1, rng.uniform(0.6, 0.99, 40), rng.uniform(0.01, 0.4, 40))
    c = metrics.capacity_curve(p, y)
    assert c.abstention[-1] == 1.0 and np.isnan(c.accuracy[-1]) and np.isnan(c.auc[-1])
    # a perfect classifier scores exactly one (normalising by the largest
    # *defined* abstention; dividing by 1 would score it below one)
    assert metrics.capacity_accuracy(p, y) == 1.0
    assert metrics.capacity_auc(p, y) == 1.0
    # one class only: AUC undefined everywhere, accuracy defined
    assert np.isnan(metrics.auc(p[y == 1], y[y == 1]))
    assert np.isnan(metrics.capacity_auc(p[y == 1], y[y == 1]))
    assert metrics.capacity_accuracy(p[y == 1], y[y == 1]) == 1.0
    # p exactly 0 or 1: never abstained, one abstention level, capacity = that score
    c = metrics.capacity_curve([0.0, 1.0, 1.0, 0.0], [-1, 1, -1, 1])
    assert np.all(c.abstention == 0)
    assert c.capacity_accuracy == 0.5 and c.capacity_auc == 0.5
    # a single point that is always abstained from except at rho = 0
    assert metrics.capacity_accuracy([0.7], [1]) == 1.0
    with pytest.raises(ValueError, match="at least one"):
        metrics.capacity_curve([], [])
    with pytest.raises(ValueError, match="increasing"):
        metrics.capacity_curve(P8, Y8, thresholds=[0.1, 0.05])
    with pytest.raises(ValueError, match="labels"):
        metrics.auc([0.2, 0.3], [2, 1])
    with pytest.raises(ValueError, match="probabilities"):
        metrics.auc([1.2, 0.3], [-1, 1])


def test_random_classifier_scores_one_half():
    rng = np.random.default_rng(1)
    n = 40_000
    y = np.where(rng.uniform(size=n) < 0.5, -1, 1)
    p = rng.uniform(size=n)  # independent of y
    c = metrics.capacity_curve(p, y)
    # AUC s.e. ~ sqrt((n_pos + n_neg + 1) / (12 n_pos n_neg)) ~ 0.003 with all points;
    # about 0.03 with the 1/50 of them left at rho = 0.49
    assert abs(metrics.auc(p, y) - 0.5) < 0.012
    assert abs(c.capacity_auc - 0.5) < 0.02
    assert abs(c.capacity_accuracy - 0.5) < 0.02
    # the abstention of uniform p at rho is 2 rho
    np.testing.assert_allclose(c.abstention, 2 * c.thresholds, atol=0.01)


@pytest.mark.parametrize("seed", range(5))
def test_auc_matches_sklearn_with_and_without_ties(seed):
    rng = np.random.default_rng(seed)
    n = 200
    y = np.where(rng.uniform(size=n) < 0.3 + 0.1 * seed, -1, 1)
    p = 1 / (1 + np.exp(-(y + 1.5 * rng.standard_normal(n))))
    assert metrics.auc(p, y) == pytest.approx(roc_auc_score(y, p), rel=1e-13)
    p_tied = np.round(p, 1)  # many ties, counted half
    assert metrics.auc(p_tied, y) == pytest.approx(roc_auc_score(y, p_tied), rel=1e-13)


def test_auc_pairwise_definition_by_hand():
    # pos {0.8, 0.4, 0.4}, neg {0.4, 0.1}: pairs 1 + 1 + 0.5 + 1 + 0.5 + 1 = 5 of 6
    assert metrics.auc([0.8, 0.4, 0.4, 0.4, 0.1], [1, 1, 1, -1, -1]) == pytest.approx(5 / 6)


# ------------------------------------------------------------ probabilistic SVM
def blobs(n, rng, sep=1.5):
    y = np.where(rng.uniform(size=n) < 0.5, -1.0, 1.0)
    X = rng.standard_normal((n, 2)) + sep * y[:, None]
    return X, y


def test_probabilistic_svm_beats_chance_and_looks_calibrated():
    rng = np.random.default_rng(0)
    X, y = blobs(60, rng)
    Xt, yt = blobs(1000, rng)
    res = probabilistic_svm(X, y, Xt, np.random.default_rng(3), return_result=True)
    p = res.p
    assert p.shape == (1000,) and np.all((p >= 0) & (p <= 1))
    # Bayes accuracy here is Phi(1.5 sqrt 2) = 0.983
    assert metrics.accuracy(p, yt) > 0.93
    assert metrics.auc(p, yt) > 0.97
    assert np.mean((p - (yt == 1)) ** 2) < 0.06  # Brier score; 0.25 for p = 1/2
    # calibration: in the confident bins the observed frequency is near p
    for lo, hi in [(0.0, 0.2), (0.8, 1.0)]:
        m = (p >= lo) & (p < hi) if hi < 1 else (p >= lo)
        assert m.sum() > 100
        assert abs(np.mean(yt[m] == 1) - np.mean(p[m])) < 0.06
    assert res.C in metrics_grid("C") and res.gamma in metrics_grid("gamma")


def metrics_grid(name):
    from gpbayes_repro.baselines import DEFAULT_C_GRID, DEFAULT_GAMMA_GRID

    return set((DEFAULT_C_GRID if name == "C" else DEFAULT_GAMMA_GRID).tolist())


def test_probabilistic_svm_is_reproducible_and_uses_the_generator():
    rng = np.random.default_rng(1)
    X, y = blobs(40, rng, sep=0.7)
    Xt, _ = blobs(50, rng, sep=0.7)
    grid = dict(C_grid=2.0 ** np.arange(-3, 8, 2), gamma_grid=2.0 ** np.arange(-7, 2, 2))
    a = probabilistic_svm(X, y, Xt, np.random.default_rng(5), **grid)
    b = probabilistic_svm(X, y, Xt, np.random.default_rng(5), **grid)
    np.testing.assert_array_equal(a, b)
    # an int seed means np.random.default_rng(seed)
    np.testing.assert_array_equal(probabilistic_svm(X, y, Xt, 5, **grid), a)
    c = probabilistic_svm(X, y, Xt, np.random.default_rng(6), **grid)
    assert not np.array_equal(a, c)  # different folds -> different Platt fit
    # labels: +1 is the positive class; flipping the labels flips the probabilities roughly
    d = probabilistic_svm(X, -y, Xt, np.random.default_rng(5), **grid)
    assert np.corrcoef(a, d)[0, 1] < -0.9
    with pytest.raises(ValueError, match="labels"):
        probabilistic_svm(X, (y + 1) / 2 * 3, Xt, np.random.default_rng(0))
