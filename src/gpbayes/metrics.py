"""Scores for probabilistic binary classifiers: AUC and the capacity scores.

Capacity accuracy and capacity AUC are defined in Filippone & Girolami
(2014), Sec. 5.3, following Ferri & Hernandez-Orallo's cautious classifiers:

    "Denote by rho a threshold for the predictive probabilities.  According
    to a threshold value rho, we compute the degree of abstention as the
    proportion of test data for which the predictive probability p satisfies
    the following condition 0.5 - rho < p < 0.5 + rho.  For the rest of the
    test data, namely data for which the classifier is most confident, we
    compute accuracy and AUC.  We repeat this procedure for different values
    of rho, starting from 0.00 going up to 0.50 at increments of 0.01, so
    that we obtain the plots of accuracy and AUC with respect to degree of
    abstention.  We finally compute the area of the two curves to obtain
    'capacity accuracy' and 'capacity AUC' for the classifier.  Given that
    the degree of abstention might not reach the value of one, we propose to
    divide the area of the curves by the largest degree of abstention, so
    that the two capacity scores are normalized to one."

Implemented exactly so: abstain on x_i iff |p_i - 0.5| < rho (strict, as in
the paper; so rho = 0 abstains on nothing and a point with p = 0.25 is
still kept at rho = 0.25), thresholds rho = 0.00, 0.01, ..., 0.50 by
default (the doubles nearest k/100; the comparison is made in floating
point, so a probability within rounding of 0.5 +- rho may fall either way).

Choices where the paper is silent (each tested in tests/test_metrics.py):

1. Labels.  y in {-1, +1} (or {0, 1}); the class +1 is the positive class
   and p = p(y = +1).  The prediction is +1 if p > 0.5 and -1 if p < 0.5; a
   point with p exactly 0.5 (kept only at rho = 0) counts as half a correct
   prediction -- the expected accuracy of a fair-coin tie-break, the same
   convention as ties in the AUC -- which keeps accuracy invariant under
   (p, y) -> (1 - p, -y).
2. AUC is the Mann-Whitney statistic P(p_pos > p_neg) + 1/2 P(p_pos = p_neg)
   over all positive/negative pairs (equal to the trapezoidal area under the
   empirical ROC curve and to ``sklearn.metrics.roc_auc_score``).
3. Undefined points.  When every point is abstained, accuracy and AUC are
   undefined (NaN in the curve); when the kept points are all of one class,
   the AUC is undefined (NaN).  Because the kept sets shrink as rho grows,
   the defined points of each curve are those of the smallest thresholds.
4. Area.  The curve of a score is the set of its defined points
   (abstention_k, score_k); thresholds giving the same abstention keep the
   same set of points (the kept sets are nested) and hence the same score,
   so each distinct abstention is one point.  The area is the trapezoidal
   rule over these points, sorted by abstention, and it is divided by the
   span of abstention they cover, a_max - a_min.  With the default
   thresholds a_min = 0 (rho = 0 abstains on nothing), so this is the
   paper's "divide ... by the largest degree of abstention", where the
   largest degree of abstention is the largest *at which the score is
   defined*: a curve that reaches abstention 1 has no score there (nothing
   is left to score), and dividing by 1 instead would score a perfect
   classifier below one, contrary to "normalized to one".  The normalised
   area is thus the mean height of the curve, and a classifier whose score
   is 1 at every defined point gets exactly 1.
5. Degenerate spans.  If only one abstention level has a defined score
   (e.g. every p is exactly 0 or 1, so nothing is ever abstained), the
   capacity is that score (the limit of the mean height as the span
   shrinks).  If no level has one (e.g. a test set of one class, for the
   AUC), the capacity is NaN.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.stats import rankdata

__all__ = [
    "DEFAULT_THRESHOLDS",
    "auc",
    "accuracy",
    "CapacityCurve",
    "capacity_curve",
    "capacity_accuracy",
    "capacity_auc",
]

#: rho = 0.00, 0.01, ..., 0.50 (F&G Sec. 5.3), each the double nearest k/100
DEFAULT_THRESHOLDS = np.arange(51) / 100.0


def _check(p, y) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities in [0, 1] and labels mapped to a boolean 'is positive'."""
    p = np.asarray(p, dtype=np.float64)
    y = np.asarray(y)
    if p.ndim != 1 or y.shape != p.shape:
        raise ValueError(f"p and y must be 1-D arrays of equal length, got {p.shape} and {y.shape}")
    if not np.all(np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError("p must hold probabilities in [0, 1] (no NaN)")
    labels = set(np.unique(y).tolist())
    if not (labels <= {-1, 1} or labels <= {0, 1}):
        raise ValueError(f"labels must be in {{-1, +1}} or {{0, 1}}, got {sorted(labels)}")
    return p, y == 1


def auc(p, y) -> float:
    """Area under the ROC curve, Mann-Whitney form with ties counted half.

    AUC = (sum over positive i, negative j of [p_i > p_j] + 1/2 [p_i = p_j])
    / (n_pos n_neg), computed from mid-ranks in O(n log n):
    (R_pos - n_pos (n_pos + 1) / 2) / (n_pos n_neg), R_pos the sum of the
    positives' mid-ranks.  NaN when one class is absent.
    """
    p, pos = _check(p, y)
    return _auc(p, pos)


def _auc(p, pos) -> float:
    n_pos = int(np.count_nonzero(pos))
    n_neg = pos.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = rankdata(p)  # mid-ranks: ties share the mean rank
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def accuracy(p, y) -> float:
    """Fraction of correct predictions (+1 iff p > 0.5; p = 0.5 counts half)."""
    p, pos = _check(p, y)
    return _accuracy(p, pos)


def _accuracy(p, pos) -> float:
    if p.size == 0:
        return float("nan")
    correct = np.where(pos, p > 0.5, p < 0.5) + 0.5 * (p == 0.5)
    return float(np.mean(correct))


@dataclasses.dataclass(frozen=True)
class CapacityCurve:
    """Accuracy and AUC against degree of abstention (F&G Sec. 5.3).

    thresholds : rho values, increasing.
    abstention : fraction of points with 0.5 - rho < p < 0.5 + rho.
    n_kept : number of points not abstained on.
    accuracy : accuracy on the kept points (NaN if none is kept).
    auc : AUC on the kept points (NaN if they are all of one class).
    """

    thresholds: np.ndarray
    abstention: np.ndarray
    n_kept: np.ndarray
    accuracy: np.ndarray
    auc: np.ndarray

    @property
    def capacity_accuracy(self) -> float:
        """Capacity accuracy (F&G Sec. 5.3): the area under accuracy against abstention, normalised by
        the abstention span covered.
        """
        return _normalised_area(self.abstention, self.accuracy)

    @property
    def capacity_auc(self) -> float:
        """Capacity AUC (F&G Sec. 5.3): the area under AUC against abstention, normalised by the
        abstention span covered.
        """
        return _normalised_area(self.abstention, self.auc)


def capacity_curve(p, y, thresholds=None) -> CapacityCurve:
    """Accuracy and AUC of the kept points at each threshold rho.

    ``thresholds`` default to rho = 0.00, 0.01, ..., 0.50 (F&G Sec. 5.3);
    they must be increasing and in [0, 0.5].  See the module docstring.
    """
    p, pos = _check(p, y)
    rho = DEFAULT_THRESHOLDS if thresholds is None else np.asarray(thresholds, dtype=np.float64)
    if rho.ndim != 1 or rho.size == 0:
        raise ValueError("thresholds must be a non-empty 1-D array")
    if np.any(np.diff(rho) <= 0) or rho[0] < 0 or rho[-1] > 0.5:
        raise ValueError("thresholds must be strictly increasing and lie in [0, 0.5]")
    if p.size == 0:
        raise ValueError("capacity_curve needs at least one test point")
    confidence = np.abs(p - 0.5)
    abst, kept_n, acc, au = [], [], [], []
    for r in rho:
        keep = ~(confidence < r)  # abstain iff 0.5 - rho < p < 0.5 + rho
        abst.append(1.0 - np.count_nonzero(keep) / p.size)
        kept_n.append(int(np.count_nonzero(keep)))
        acc.append(_accuracy(p[keep], pos[keep]))
        au.append(_auc(p[keep], pos[keep]))
    return CapacityCurve(
        thresholds=rho.copy(),
        abstention=np.array(abst),
        n_kept=np.array(kept_n),
        accuracy=np.array(acc),
        auc=np.array(au),
    )


def _normalised_area(abstention, score) -> float:
    """Trapezoidal area under the defined points, divided by their abstention span."""
    ok = np.isfinite(score)
    if not np.any(ok):
        return float("nan")
    a, s = abstention[ok], score[ok]
    # one point per distinct abstention (equal abstention => same kept set => same score)
    a, idx = np.unique(a, return_index=True)
    s = s[idx]
    span = a[-1] - a[0]
    if span <= 0:
        return float(s[0])
    area = float(np.sum(np.diff(a) * 0.5 * (s[1:] + s[:-1])))
    return area / span


def capacity_accuracy(p, y, thresholds=None) -> float:
    """Normalised area under accuracy vs degree of abstention (F&G Sec. 5.3)."""
    return capacity_curve(p, y, thresholds).capacity_accuracy


def capacity_auc(p, y, thresholds=None) -> float:
    """Normalised area under AUC vs degree of abstention (F&G Sec. 5.3)."""
    return capacity_curve(p, y, thresholds).capacity_auc
