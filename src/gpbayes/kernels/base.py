"""The kernel protocol, its one fallback, the shared base of the library's kernels, and ``+`` / ``*``.

* :class:`Kernel` -- what the rest of gpbayes needs of a covariance function.
* :func:`gradient_traces` -- tr(W dK/dpsi_i) for every i from a kernel's ``gradient_traces`` or,
  for a kernel of the bare protocol, from its ``gradients`` (the one fallback every caller uses).
* :class:`KernelBase` -- ``+`` and ``*`` for every library kernel.
* :class:`Leaf` -- the public methods of a library kernel written once over five small hooks on
  the selected columns (``active_dims``): the covariance, its derivative matrices in psi and in
  the first argument's inputs, the diagonal and its derivatives.
* :class:`Sum`, :class:`Product` -- k1 + k2 and k1 * k2 with value, derivative matrices,
  ``gradient_traces`` and the reverse-mode products composed exactly (the product rule for ``*``);
  the parameters concatenated and named after their component.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Protocol, runtime_checkable

import numpy as np

#: kernels that build on this module and that its operators return -- ``k + c`` a ``Constant``,
#: ``k.fix(...)`` a ``Fixed`` -- registered by their own modules (:func:`_built_on_base`), which the package
#: imports before anyone can reach these operators: this module imports neither (no import circle)
_BUILT_ON_BASE: dict[str, type] = {}


def _built_on_base(name: str):
    """Class decorator: register a kernel class that this module's operators return, under ``name``."""
    def register(cls):
        _BUILT_ON_BASE[name] = cls
        return cls
    return register

__all__ = ["Kernel", "KernelBase", "Leaf", "Sum", "Product", "Scaled", "gradient_traces", "traces_from_gradients",
           "median_distance"]


def _as_inputs(X: np.ndarray, name: str, d: int) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[1] != d:
        raise ValueError(f"{name}: expected shape (n, {d}), got {X.shape}")
    return X


def _select(X: np.ndarray, name: str, input_dim: int, active_dims) -> np.ndarray:
    """The columns a kernel acts on: X itself (checked to have ``input_dim`` columns) without
    ``active_dims``, else X[:, active_dims] (X needs more than max(active_dims) columns)."""
    if active_dims is None:
        return _as_inputs(X, name, input_dim)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[1] <= max(active_dims):
        raise ValueError(f"{name}: expected shape (n, d) with d > {max(active_dims)} (active_dims "
                         f"{list(active_dims)}), got {X.shape}")
    return X[:, list(active_dims)]


def _is_integer(value) -> bool:
    """An int or numpy integer, or a whole finite float (3.0); not a bool, a fraction or a string."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (int, np.integer)):
        return True
    return isinstance(value, (float, np.floating)) and bool(np.isfinite(value)) and float(value).is_integer()


def _check_flag(obj, name: str) -> None:
    """A frozen dataclass's boolean option ``name`` must be True or False (a bool or a numpy bool): ``"no"``
    or 1 would otherwise be read by truth value (``ard="no"`` meaning ARD)."""
    value = getattr(obj, name)
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{type(obj).__name__}: {name} must be True or False, got {value!r} "
                        f"({type(value).__name__}); pass {name}=True or {name}=False")


def _normalise_dims(obj, input_dim, active_dims) -> None:
    """Set a frozen dataclass's ``input_dim`` and ``active_dims`` (a tuple of distinct column indices >= 0,
    or None): ``input_dim`` defaults to ``len(active_dims)`` and must agree with it.  Both must be whole
    numbers (1.7 is refused, not truncated to 1); ``ard`` and ``fixed_amplitude``, where the kernel has
    them, must be bools."""
    owner = type(obj).__name__
    for flag in ("ard", "fixed_amplitude"):
        if hasattr(obj, flag):
            _check_flag(obj, flag)
    nugget = getattr(obj, "nugget", 0.0)
    if isinstance(nugget, (bool, np.bool_)) or not isinstance(nugget, (int, float, np.integer, np.floating)):
        raise TypeError(f"{owner}: nugget must be a number >= 0 (a relative diagonal term, e.g. 1e-6), got "
                        f"{nugget!r} ({type(nugget).__name__})")
    if active_dims is not None:
        if isinstance(active_dims, (str, bytes)):
            raise TypeError(f"{owner}: active_dims must be a list of column indices (integers >= 0), e.g. "
                            f"active_dims=[0, 2], got the string {active_dims!r}")
        given = np.atleast_1d(np.asarray(active_dims, dtype=object)).ravel().tolist()
        bad = [i for i in given if not _is_integer(i)]
        if bad:
            raise TypeError(f"{owner}: active_dims must be column indices (integers >= 0), e.g. active_dims=[0, 2]; "
                            f"got {active_dims!r}, whose {bad[0]!r} ({type(bad[0]).__name__}) is not a whole number")
        dims = tuple(int(i) for i in given)
        if not dims or min(dims) < 0 or len(set(dims)) != len(dims):
            raise ValueError(f"{owner}: active_dims must be distinct column indices >= 0, "
                             f"got {active_dims!r}")
        if input_dim is not None and not _is_integer(input_dim):
            raise TypeError(f"{owner}: input_dim must be a whole number >= 1 (the number of columns the kernel "
                            f"acts on), got {input_dim!r} ({type(input_dim).__name__})")
        if input_dim is None:
            input_dim = len(dims)
        elif int(input_dim) != len(dims):
            raise ValueError(f"{owner}: input_dim = {input_dim} but active_dims {list(dims)} "
                             f"selects {len(dims)} columns; give one of them")
        object.__setattr__(obj, "active_dims", dims)
    if input_dim is not None and not _is_integer(input_dim):
        raise TypeError(f"{owner}: input_dim must be a whole number >= 1 (the number of columns the kernel acts "
                        f"on), got {input_dim!r} ({type(input_dim).__name__})")
    if input_dim is None or int(input_dim) < 1:
        raise ValueError(f"{owner}: input_dim must be >= 1 (or give active_dims), got {input_dim}")
    object.__setattr__(obj, "input_dim", int(input_dim))


def median_distance(X, max_rows: int = 300) -> float:
    """Median pairwise Euclidean distance of the first ``max_rows`` rows (floored at 1e-3)."""
    X = np.asarray(X, dtype=np.float64)
    X = X[:, None] if X.ndim == 1 else X
    Xs = X[:max_rows]
    from scipy.spatial.distance import pdist  # imported here: scipy.spatial costs ~0.4 s at start-up

    med = float(np.median(pdist(Xs))) if Xs.shape[0] > 1 else 1.0
    return max(med, 1e-3)


@runtime_checkable
class Kernel(Protocol):
    """What the rest of gpbayes needs of a covariance function (the kernel protocol).

    Every parameter is sampled and optimised as psi = log(parameter).  A kernel is any object with
    these methods (``gpbayes.kernels`` has the library's; ``tests/test_kernel_protocol.py`` and
    ``tests/test_kernels_library.py`` write others in the test file alone); regression,
    classification, the latent-Gaussian samplers and the sparse GP use nothing else.  (The
    supervised GPLVM's Psi-statistics are squared-exponential by their mathematics and check for
    :class:`~gpbayes.kernels.SquaredExponential`; the sparse GP takes any stationary library kernel,
    whose diagonal is constant, and refuses the others by name.)

    ``input_dim``, ``n_params``, ``param_names``
        input dimension d, number of log-parameters, their names.
    ``__call__(psi, X, X2=None)``
        K(X, X2) (K(X, X) with its nugget when ``X2`` is None).
    ``diag(psi, X)``
        diag K(X, X) without forming K.
    ``gradients(psi, X, K=None)``
        [dK(X, X)/dpsi_i], one n x n matrix per parameter.
    ``gradient_traces(psi, X, W, K, overwrite_W=False)`` (optional)
        tr(W dK(X, X)/dpsi_i) for each i, for a symmetric W, without the n x n derivative
        matrices (GP regression's gradient, R&W eq. 5.9; the Laplace and EP marginals'; the
        whitened joint posterior's).  Only the off-diagonal entries of ``K`` may be read, so
        K + D for a diagonal D may be passed.  A kernel without it gets
        ``sum(W * G)`` over ``gradients`` everywhere (:func:`gradient_traces`).
    ``amplitude(psi)``
        the prior variance scale a (jitter is added in units of a).
    ``initial_psi(X, amplitude=1.0)``
        a data-driven starting point: every lengthscale at the median pairwise distance of (the
        first 300 rows of) X, amplitude a.
    ``cross_covariance_vjp(psi, X1, X2, K12, K_bar, inputs=True)``
        <K_bar, dK(X1, X2)/dpsi_i> for each i and, with ``inputs``, <K_bar, dK(X1, X2)/dX1> (M x d):
        the reverse-mode product the sparse GP's gradient needs (Hensman et al. 2015, "Cholesky
        backpropagation").
    ``diag_vjp(psi, diag, diag_bar)``
        <diag_bar, d diag K/dpsi_i> given the diagonal values ``diag``.
    """

    input_dim: int

    @property
    def n_params(self) -> int:
        """Number of log-parameters psi."""

    @property
    def param_names(self) -> list[str]:
        """Names of the parameters, in the order of psi."""

    def __call__(self, psi, X, X2=None) -> np.ndarray: ...

    def diag(self, psi, X) -> np.ndarray:
        """diag K(X, X), without forming K."""

    def gradients(self, psi, X, K=None) -> list[np.ndarray]:
        """[dK(X, X) / dpsi_i], one n x n matrix per log-parameter (``K`` if already computed)."""

    def amplitude(self, psi) -> float:
        """The prior variance scale a (jitter is added in units of a)."""

    def initial_psi(self, X, amplitude: float = 1.0) -> np.ndarray:
        """A data-driven starting point: lengthscales at the median pairwise distance, amplitude a."""

    def cross_covariance_vjp(self, psi, X1, X2, K12, K_bar, inputs: bool = True):
        """<K_bar, dK(X1, X2)/dpsi_i> for each i and, with ``inputs``, <K_bar, dK(X1, X2)/dX1> (M x d):
        the reverse-mode product of the sparse GP's gradient (Hensman et al. 2015).
        """

    def diag_vjp(self, psi, diag, diag_bar) -> np.ndarray:
        """<diag_bar, d diag K / dpsi_i> for each i, given the diagonal values ``diag``."""


# ---------------------------------------------------------------------------
# the protocol's one fallback
# ---------------------------------------------------------------------------
def traces_from_gradients(kernel, psi, X, W: np.ndarray, K: np.ndarray | None = None) -> np.ndarray:
    """tr(W dK/dpsi_i) = sum(W o dK/dpsi_i) for each i, from the kernel's n x n ``gradients`` (W symmetric).

    ``K`` must be K(X, X) itself (``gradients`` may read its diagonal), or None.  The same
    numbers, to the bit, as GP regression's per-parameter gradient before this helper.
    """
    return np.array([np.einsum("ij,ij->", W, G) for G in kernel.gradients(psi, X, K)])


def gradient_traces(kernel, psi, X, W: np.ndarray, K: np.ndarray, overwrite_W: bool = False) -> np.ndarray:
    """tr(W dK(X, X)/dpsi_i) for each i: the kernel's ``gradient_traces`` if it has one (``overwrite_W``
    passed on), else :func:`traces_from_gradients` (the protocol's fallback; ``W`` is then left intact).

    The one place the protocol's optional method is looked up: GP regression, the Laplace and EP
    marginals (``gpbayes.approx``: ``ep-ml``, ``nuts-is``) and the whitened joint posterior
    (``gpbayes.mcmc.whitened_nuts``) all call this.  ``K`` is K(X, X); for the fallback it must be
    K(X, X) itself, not K + D.
    """
    own = getattr(kernel, "gradient_traces", None)
    if own is not None:
        return own(psi, X, W, K, overwrite_W=overwrite_W)
    return traces_from_gradients(kernel, psi, X, W, K)


# ---------------------------------------------------------------------------
# + and *
# ---------------------------------------------------------------------------
class KernelBase:
    """``k1 + k2`` is :class:`Sum`, ``k1 * k2`` :class:`Product` (sums and products of sums flatten).

    A mix-in without state: every library kernel is a frozen dataclass deriving from it.
    ``name`` is the short name that prefixes the kernel's parameter names inside a sum or product.
    """

    name = "kernel"

    def __add__(self, other):
        """``self + other``: :class:`Sum` for another library kernel; a number c >= 0 is the constant kernel
        c (``k + 1.0`` is ``k + Constant(value=1.0)``, no new parameter; ``k + 0`` is ``k``); anything else
        is refused (:func:`_operand_error`) unless it may add itself (a kernel of the bare protocol with
        ``__radd__``)."""
        if _is_number(other):
            c = _scalar(other, self, "+")
            return self if c == 0.0 else Sum(_flatten(Sum, (self, _constant(c))))
        if not isinstance(other, KernelBase):
            return _not_a_kernel(self, other, "+")
        return Sum(_flatten(Sum, (self, other)))

    def __radd__(self, other):
        """``c + self`` for a number c >= 0 (``0 + self`` is ``self``, so ``sum(kernels)`` works: Python's sum
        starts from 0); other left operands are refused with what is supported."""
        if _is_number(other):
            c = _scalar(other, self, "+")
            return self if c == 0.0 else Sum(_flatten(Sum, (_constant(c), self)))
        raise _operand_error(other, self, "+")

    def __mul__(self, other):
        """``self * other``: :class:`Product` for another library kernel; a number c > 0 is :class:`Scaled`
        (c k, the same parameters); anything else is refused."""
        if _is_number(other):
            return Scaled.of(self, _scalar(other, self, "*"))
        if not isinstance(other, KernelBase):
            return _not_a_kernel(self, other, "*")
        return Product(_flatten(Product, (self, other)))

    def __rmul__(self, other):
        """``c * self`` for a number c > 0 (``2.0 * k``): :class:`Scaled`; other left operands are refused
        with what is supported."""
        if _is_number(other):
            return Scaled.of(self, _scalar(other, self, "*"))
        raise _operand_error(other, self, "*")

    def fix(self, **values):
        """This kernel with some hyperparameters held at given values and the others sampled:
        :class:`~gpbayes.kernels.Fixed` (``k.fix(lengthscale=0.5)``; keys as in ``prior=``: the kernel's
        ``param_names`` or their descriptive names, values on the natural scale, > 0)."""
        return _BUILT_ON_BASE["fixed"](self, tuple(values.items()))

    @property
    def required_columns(self) -> int:
        """The number of columns X must have at least: ``input_dim``, or max(active_dims) + 1."""
        dims = getattr(self, "active_dims", None)
        return self.input_dim if dims is None else max(dims) + 1


def _not_a_kernel(kernel, other, op: str):
    """``kernel <op> other`` with ``other`` not a library kernel: NotImplemented when ``other`` is a kernel of
    the bare protocol with its own reflected operator (it may combine itself), else the TypeError."""
    reflected = "__radd__" if op == "+" else "__rmul__"
    if isinstance(other, Kernel) and not isinstance(other, type) and hasattr(type(other), reflected):
        return NotImplemented
    raise _operand_error(kernel, other, op)


def _operand_error(left, right, op: str) -> TypeError:
    """The TypeError for ``left <op> right`` where one side is not a kernel: what is supported instead."""
    other = right if isinstance(left, KernelBase) else left
    if isinstance(other, type):
        what = f"the class {other.__name__} (not an instance)"
    else:
        what = f"{other!r} ({type(other).__name__})"
    kind = "Sum" if op == "+" else "Product"
    hint = ""
    if isinstance(other, (complex, np.complexfloating)):
        hint = "; a number combined with a kernel must be real: k + c (c >= 0) and c * k (c > 0)"
    elif isinstance(other, type):
        hint = f"; instantiate it: {other.__name__}(...)"
    elif isinstance(other, Kernel):
        hint = f"; a kernel of your own (not a gpbayes.kernels class) combines as gpbayes.kernels.{kind}((k1, k2))"

    def label(x):
        return x.__name__ if isinstance(x, type) else type(x).__name__

    return TypeError(f"unsupported operand for a gpbayes kernel: {label(left)} {op} {label(right)}, with {what}. "
                     f"Kernels combine only with kernels: k1 + k2 (Sum), k1 * k2 (Product), "
                     f"sum([k1, k2, ...]), and with real numbers: k + c, c * k{hint}")


def _flatten(cls, kernels) -> tuple:
    out: list = []
    for k in kernels:
        out.extend(k.kernels if isinstance(k, cls) else (k,))
    return tuple(out)


def _is_number(value) -> bool:
    """A real number (int, float, numpy scalar; not a bool, not complex)."""
    return (isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_)))


def _scalar(value, kernel, op: str) -> float:
    """The number of ``kernel <op> value`` checked: finite, > 0 for ``*`` (c k is a kernel for c > 0 only)
    and >= 0 for ``+`` (a constant kernel is a variance)."""
    c = float(value)
    ok = math.isfinite(c) and (c > 0.0 if op == "*" else c >= 0.0)
    if not ok:
        what = ("a scale c > 0 (c k is a covariance only for c > 0)" if op == "*" else
                "a constant c >= 0 (the constant kernel c is a variance)")
        raise ValueError(f"{type(kernel).__name__} {op} {value!r}: a number combined with a kernel must be {what}, "
                         f"got {value!r}")
    return c


def _constant(c: float):
    return _BUILT_ON_BASE["constant"](value=c)


# ---------------------------------------------------------------------------
# the library's kernels: public methods over five hooks
# ---------------------------------------------------------------------------
class Leaf(KernelBase):
    """The public methods of a library kernel, written once over hooks on the selected columns.

    A subclass (a frozen dataclass with fields ``input_dim`` and ``active_dims``) defines
    ``n_params``, ``param_names``, ``amplitude``, ``initial_psi``, ``default_priors`` and, for
    inputs A (n1 x d) and B (n2 x d) already restricted to ``active_dims`` and psi checked:

    ``_cov(psi, A, B)``                 K(A, B) (the cross-covariance formula),
    ``_cov_grads(psi, A, B, K)``        [dK(A, B)/dpsi_i], given K = K(A, B) (read elementwise),
    ``_input_grads(psi, A, B, K)``      [dK(A, B)/dA_{., j}] for each of the d columns, elementwise,
    ``_diag(psi, A)``                   diag K(A, A) (the value at zero distance, nugget included),
    ``_diag_grads(psi, A)``             [d diag K(A, A) / dpsi_i].

    K(X, X) is ``_cov`` with its diagonal replaced by ``_diag`` (a point's own variance, e.g. the
    white-noise term or the nugget, is not a cross-covariance), and the same for its derivatives.
    """

    def _check_psi(self, psi) -> np.ndarray:
        psi = np.asarray(psi, dtype=np.float64)
        if psi.shape != (self.n_params,):
            raise ValueError(f"{type(self).__name__} expects {self.n_params} log-parameters {self.param_names}, "
                             f"got shape {psi.shape}")
        if not np.all(np.isfinite(psi)):
            raise ValueError(f"{type(self).__name__}: non-finite log-parameters {psi}")
        return psi

    def _x(self, X, name: str = "X") -> np.ndarray:
        return _select(X, name, self.input_dim, self.active_dims)

    def _index(self, i: int) -> int:
        """The column of X that the kernel's i-th input is (its name's suffix for ARD parameters)."""
        return i if self.active_dims is None else self.active_dims[i]

    def _check_dims_and_nugget(self) -> None:
        """``__post_init__``'s common part: ``input_dim`` / ``active_dims`` normalised, ``nugget`` >= 0."""
        _normalise_dims(self, self.input_dim, self.active_dims)
        if not (np.isfinite(self.nugget) and self.nugget >= 0):
            raise ValueError(f"{type(self).__name__}: nugget must be a finite number >= 0, got {self.nugget}")

    @property
    def n_scale(self) -> int:
        """Number of per-input parameters (lengthscales, or a polynomial's variances): d with ARD, else 1."""
        return self.input_dim if self.ard else 1

    def _per_input_names(self, stem: str) -> list[str]:
        """``stem`` (one shared parameter), or ``<stem>_<column>`` per input with ARD."""
        return [f"{stem}_{self._index(i)}" for i in range(self.input_dim)] if self.ard else [stem]

    def __call__(self, psi, X, X2=None) -> np.ndarray:
        """K(X, X2) (K(X, X), with its diagonal ``diag``, if X2 is None), Fortran order."""
        psi = self._check_psi(psi)
        A = self._x(X)
        if X2 is None:
            K = np.asfortranarray(self._cov(psi, A, A))
            K[np.diag_indices_from(K)] = self._diag(psi, A)
            return K
        return np.asfortranarray(self._cov(psi, A, self._x(X2, "X2")))

    def diag(self, psi, X) -> np.ndarray:
        """diag K(X, X) without forming K."""
        return np.asarray(self._diag(self._check_psi(psi), self._x(X)), dtype=np.float64)

    def gradients(self, psi, X, K: np.ndarray | None = None) -> list[np.ndarray]:
        """[dK(X, X)/dpsi_i], one Fortran-ordered n x n matrix per parameter (``K`` = K(X, X) if known;
        only its off-diagonal entries are read)."""
        psi = self._check_psi(psi)
        A = self._x(X)
        if K is None:
            K = self(psi, X)
        out = []
        for G, g_diag in zip(self._cov_grads(psi, A, A, K), self._diag_grads(psi, A)):
            G = np.array(G, dtype=np.float64, order="F")
            G[np.diag_indices_from(G)] = g_diag
            out.append(G)
        return out

    def gradient_traces(self, psi, X, W: np.ndarray, K: np.ndarray, overwrite_W: bool = False) -> np.ndarray:
        """tr(W dK/dpsi_i) for each i (W symmetric; only K's off-diagonal entries are read, so K + D may
        be passed): sum(W o dK/dpsi_i) over ``gradients``.  ``W`` is never overwritten."""
        n = np.shape(X)[0]
        if W.shape != (n, n) or K.shape != (n, n):
            raise ValueError(f"W and K: expected shape {(n, n)}, got {W.shape} and {K.shape}")
        return traces_from_gradients(self, psi, X, W, K)

    def cross_covariance_vjp(self, psi, X1, X2, K12, K_bar, inputs: bool = True, overwrite_K_bar: bool = False):
        """<K_bar, dK(X1, X2)/dpsi_i> for each i and, with ``inputs``, <K_bar, dK(X1, X2)/dX1> (n1 x X1's
        columns, zero outside ``active_dims``); K(X1, X2) is the cross-covariance (no diagonal term).
        ``overwrite_K_bar`` is accepted for the protocol and ignored."""
        psi = self._check_psi(psi)
        A, B = self._x(X1), self._x(X2, "X2")
        g = np.array([np.sum(K_bar * G) for G in self._cov_grads(psi, A, B, K12)])
        if not inputs:
            return g, None
        X1 = np.asarray(X1, dtype=np.float64)
        dX1 = np.zeros((A.shape[0], X1.shape[1] if X1.ndim == 2 else 1))
        for j, G in enumerate(self._input_grads(psi, A, B, K12)):
            dX1[:, self._index(j)] = np.sum(K_bar * G, axis=1)
        return g, dX1

    def diag_vjp(self, psi, diag, diag_bar, X=None) -> np.ndarray:
        """<diag_bar, d diag K/dpsi_i> for each i.  With ``X`` from ``_diag_grads``; without it from the
        diagonal values alone, which only kernels whose diagonal is their amplitude (the stationary
        ones) allow."""
        psi = self._check_psi(psi)
        if X is None:
            return self._diag_vjp_from_values(psi, np.asarray(diag), np.asarray(diag_bar))
        return np.array([float(np.sum(diag_bar * dg)) for dg in self._diag_grads(psi, self._x(X))])

    def _diag_vjp_from_values(self, psi, diag, diag_bar):
        raise ValueError(f"{type(self).__name__}.diag_vjp needs X (its diagonal is not a function of its "
                         "values alone); pass X=...")


# ---------------------------------------------------------------------------
# Sum and Product
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class _Combination(KernelBase):
    kernels: tuple

    def __post_init__(self):
        ks = tuple(self.kernels)
        if len(ks) < 2:
            raise ValueError(f"{type(self).__name__} needs at least two kernels, got {len(ks)}")
        bad = [type(k).__name__ for k in ks if not isinstance(k, Kernel)]
        if bad:
            raise TypeError(f"{type(self).__name__}: every component must implement gpbayes.kernels.Kernel; "
                            f"not {bad}")
        object.__setattr__(self, "kernels", ks)

    @property
    def input_dim(self) -> int:
        """The number of columns X must have: the largest any component needs."""
        return max(getattr(k, "required_columns", k.input_dim) for k in self.kernels)

    @property
    def n_params(self) -> int:
        """The components' parameters, concatenated."""
        return sum(k.n_params for k in self.kernels)

    @property
    def prefixes(self) -> list[str | None]:
        """Each component's prefix: its ``name`` (``type(k).__name__`` lower-cased for a kernel of the bare
        protocol), numbered from 0 where two components share one (``se0``, ``se1``).  Components without
        parameters (a fixed ``Constant``: ``k + 1.0``) are not counted and get None; when only one component
        has parameters, it keeps its own names (prefix None): ``(k + 1.0).param_names == k.param_names``."""
        with_params = [i for i, k in enumerate(self.kernels) if k.n_params > 0]
        if len(with_params) <= 1:
            return [None] * len(self.kernels)
        names = [getattr(k, "name", type(k).__name__.lower()) for k in self.kernels]
        counted = [names[i] for i in with_params]
        count: dict[str, int] = {}
        out: list[str | None] = [None] * len(self.kernels)
        for i in with_params:
            nm = names[i]
            if counted.count(nm) > 1:
                out[i] = f"{nm}{count.get(nm, 0)}"
                count[nm] = count.get(nm, 0) + 1
            else:
                out[i] = nm
        return out

    @property
    def param_names(self) -> list[str]:
        """``<prefix>_<component's name>`` for every parameter (unique, usable as variable names); a component's
        own names where its prefix is None (:attr:`prefixes`)."""
        return [nm if pre is None else f"{pre}_{nm}" for pre, k in zip(self.prefixes, self.kernels)
                for nm in k.param_names]

    def split(self, psi) -> list[np.ndarray]:
        """psi cut into the components' log-parameters."""
        psi = np.asarray(psi, dtype=np.float64)
        if psi.shape != (self.n_params,):
            raise ValueError(f"{type(self).__name__} expects {self.n_params} log-parameters {self.param_names}, "
                             f"got shape {psi.shape}")
        cuts = np.cumsum([k.n_params for k in self.kernels])[:-1]
        return np.split(psi, cuts)

    def default_priors(self) -> tuple:
        """The components' default priors, concatenated (``gpbayes.priors.default_kernel_prior`` of each)."""
        from .. import priors

        return tuple(c for k in self.kernels for c in priors.default_kernel_prior(k).components)

    def __repr__(self) -> str:
        op = " + " if isinstance(self, Sum) else " * "
        return "(" + op.join(repr(k) for k in self.kernels) + ")"


class Sum(_Combination):
    """k(x, x') = sum_c k_c(x, x') (R&W 2006 Sec. 4.2.4: a sum of kernels is a kernel); ``k1 + k2``.

    psi is the components' psi concatenated; every quantity is the sum of the components' (the
    derivative matrices and ``gradient_traces`` of component c's parameters are component c's own).
    ``amplitude`` is the sum of the components' amplitudes; ``initial_psi`` gives each component an
    equal share of the amplitude; the default prior is the components' defaults.
    """

    name = "sum"

    def __call__(self, psi, X, X2=None) -> np.ndarray:
        """sum_c K_c(X, X2) (with each component's own diagonal when X2 is None), Fortran order."""
        parts = self.split(psi)
        K = np.array(self.kernels[0](parts[0], X, X2), dtype=np.float64, order="F")
        for k, p in zip(self.kernels[1:], parts[1:]):
            K += k(p, X, X2)
        return K

    def diag(self, psi, X) -> np.ndarray:
        """sum_c diag K_c(X, X)."""
        return sum(np.asarray(k.diag(p, X), dtype=np.float64) for k, p in zip(self.kernels, self.split(psi)))

    def gradients(self, psi, X, K=None) -> list[np.ndarray]:
        """dK/dpsi_(c, i) = dK_c/dpsi_(c, i): the components' gradients, concatenated (each at its own K_c)."""
        return [G for k, p in zip(self.kernels, self.split(psi)) for G in k.gradients(p, X)]

    def gradient_traces(self, psi, X, W, K, overwrite_W: bool = False) -> np.ndarray:
        """tr(W dK_c/dpsi_(c, i)) from each component's own traces (or its fallback) at K_c = k_c(psi_c, X);
        ``W`` is never overwritten."""
        return np.concatenate([gradient_traces(k, p, X, W, k(p, X)) for k, p in zip(self.kernels, self.split(psi))])

    def amplitude(self, psi) -> float:
        """sum_c a_c."""
        return float(sum(k.amplitude(p) for k, p in zip(self.kernels, self.split(psi))))

    def initial_psi(self, X, amplitude: float = 1.0) -> np.ndarray:
        """Each component's ``initial_psi`` with amplitude a / (number of components with parameters)."""
        share = amplitude / max(1, sum(k.n_params > 0 for k in self.kernels))
        return np.concatenate([k.initial_psi(X, amplitude=share) for k in self.kernels])

    def cross_covariance_vjp(self, psi, X1, X2, K12, K_bar, inputs: bool = True, overwrite_K_bar: bool = False):
        """The components' products, concatenated (psi) and summed (inputs); each at its own K_c(X1, X2)."""
        gs, dX = [], None
        for k, p in zip(self.kernels, self.split(psi)):
            g, d = k.cross_covariance_vjp(p, X1, X2, k(p, X1, X2), K_bar, inputs)
            gs.append(np.asarray(g))
            if inputs:
                dX = d if dX is None else dX + d
        return np.concatenate(gs), dX

    def diag_vjp(self, psi, diag, diag_bar, X=None) -> np.ndarray:
        """The components' diag_vjp at their own diagonals; needs ``X``."""
        if X is None:
            raise ValueError("Sum.diag_vjp needs X (the components' diagonals are not separable from their sum)")
        return np.concatenate([_diag_vjp(k, p, X, diag_bar) for k, p in zip(self.kernels, self.split(psi))])


class Product(_Combination):
    """k(x, x') = prod_c k_c(x, x') (R&W 2006 Sec. 4.2.4: a product of kernels is a kernel); ``k1 * k2``.

    K = K_1 o K_2 o ... (elementwise); by the product rule dK/dpsi_(c, i) = dK_c/dpsi_(c, i) o
    prod_(o != c) K_o, so tr(W dK/dpsi_(c, i)) = tr((W o prod_(o != c) K_o) dK_c/dpsi_(c, i)): component
    c's own ``gradient_traces`` against the weight W o prod_(o != c) K_o (symmetric).  ``amplitude`` is
    the product of the components' amplitudes; ``initial_psi`` gives the first component the amplitude
    and the others 1; the default prior is the components' defaults (with several amplitudes only
    their product is identified: fix all but one, e.g. ``SquaredExponential(..., fixed_amplitude=True)``,
    or accept a ridge in the posterior).
    """

    name = "product"

    def _factors(self, parts, X, X2=None) -> list[np.ndarray]:
        return [np.asarray(k(p, X, X2), dtype=np.float64) for k, p in zip(self.kernels, parts)]

    @staticmethod
    def _others(Ks: list[np.ndarray], c: int) -> np.ndarray:
        out = None
        for o, K in enumerate(Ks):
            if o != c:
                out = K.copy(order="F") if out is None else np.multiply(out, K, out=out)
        return out

    def __call__(self, psi, X, X2=None) -> np.ndarray:
        """prod_c K_c(X, X2) elementwise, Fortran order."""
        Ks = self._factors(self.split(psi), X, X2)
        K = Ks[0].copy(order="F")
        for Kc in Ks[1:]:
            K *= Kc
        return K

    def diag(self, psi, X) -> np.ndarray:
        """prod_c diag K_c(X, X)."""
        out = None
        for k, p in zip(self.kernels, self.split(psi)):
            d = np.asarray(k.diag(p, X), dtype=np.float64)
            out = d.copy() if out is None else out * d
        return out

    def gradients(self, psi, X, K=None) -> list[np.ndarray]:
        """dK_c/dpsi_(c, i) o prod_(o != c) K_o for every component c and parameter i (the product rule)."""
        parts = self.split(psi)
        Ks = self._factors(parts, X)
        out = []
        for c, (k, p) in enumerate(zip(self.kernels, parts)):
            rest = self._others(Ks, c)
            out.extend(np.asfortranarray(G * rest) for G in k.gradients(p, X, Ks[c]))
        return out

    def gradient_traces(self, psi, X, W, K, overwrite_W: bool = False) -> np.ndarray:
        """Component c's traces (or its fallback) against W o prod_(o != c) K_o; ``W`` is never overwritten."""
        parts = self.split(psi)
        Ks = self._factors(parts, X)
        return np.concatenate([gradient_traces(k, p, X, np.multiply(W, self._others(Ks, c), order="F"), Ks[c],
                                               overwrite_W=True)
                               for c, (k, p) in enumerate(zip(self.kernels, parts))])

    def amplitude(self, psi) -> float:
        """prod_c a_c."""
        return float(np.prod([k.amplitude(p) for k, p in zip(self.kernels, self.split(psi))]))

    def initial_psi(self, X, amplitude: float = 1.0) -> np.ndarray:
        """The first component's ``initial_psi`` with amplitude a, the others' with amplitude 1 (the first
        with parameters: a fixed ``Constant`` factor has none)."""
        first = next((c for c, k in enumerate(self.kernels) if k.n_params > 0), 0)
        return np.concatenate([k.initial_psi(X, amplitude=amplitude if c == first else 1.0)
                               for c, k in enumerate(self.kernels)])

    def cross_covariance_vjp(self, psi, X1, X2, K12, K_bar, inputs: bool = True, overwrite_K_bar: bool = False):
        """Component c's product against K_bar o prod_(o != c) K_o(X1, X2) (the product rule), concatenated
        (psi) and summed (inputs)."""
        parts = self.split(psi)
        Ks = self._factors(parts, X1, X2)
        gs, dX = [], None
        for c, (k, p) in enumerate(zip(self.kernels, parts)):
            g, d = k.cross_covariance_vjp(p, X1, X2, Ks[c], K_bar * self._others(Ks, c), inputs)
            gs.append(np.asarray(g))
            if inputs:
                dX = d if dX is None else dX + d
        return np.concatenate(gs), dX

    def diag_vjp(self, psi, diag, diag_bar, X=None) -> np.ndarray:
        """Component c's diag_vjp against diag_bar o prod_(o != c) diag_o; needs ``X``."""
        if X is None:
            raise ValueError("Product.diag_vjp needs X (the factors' diagonals are not separable from their product)")
        parts = self.split(psi)
        ds = [np.asarray(k.diag(p, X), dtype=np.float64) for k, p in zip(self.kernels, parts)]
        out = []
        for c, (k, p) in enumerate(zip(self.kernels, parts)):
            rest = np.prod([d for o, d in enumerate(ds) if o != c], axis=0)
            out.append(_diag_vjp(k, p, X, diag_bar * rest))
        return np.concatenate(out)


class _Wrapper(KernelBase):
    """A kernel that wraps ``self.kernel`` (:class:`Scaled`, ``Fixed``): its name and inputs are the
    wrapped kernel's."""

    @property
    def name(self) -> str:
        """The wrapped kernel's ``name`` (the prefix of its parameters inside a sum or product)."""
        return getattr(self.kernel, "name", type(self.kernel).__name__.lower())

    @property
    def input_dim(self) -> int:
        """The wrapped kernel's ``input_dim``."""
        return self.kernel.input_dim

    @property
    def required_columns(self) -> int:
        """The columns X must have at least: the wrapped kernel's."""
        return getattr(self.kernel, "required_columns", self.kernel.input_dim)

    @property
    def ard(self) -> bool:
        """The wrapped kernel's ``ard`` (False if it has none)."""
        return bool(getattr(self.kernel, "ard", False))


@dataclasses.dataclass(frozen=True)
class Scaled(_Wrapper):
    """c k(x, x') for a fixed number c > 0: ``c * k`` and ``k * c`` (PyMC's ``2.0 * cov``).

    c is not a parameter: psi, ``param_names``, their descriptive names and the default priors are k's
    own, and every quantity (K, diag, the derivative matrices, traces, reverse-mode products) is k's
    times c.  ``amplitude`` is c a_k; ``initial_psi(X, a)`` is k's with amplitude a / c.
    ``c1 * (c2 * k)`` is ``Scaled(k, c1 c2)``.

    Parameters
    ----------
    kernel : the kernel scaled (a library kernel or any object of the :class:`Kernel` protocol).
    scale : c, a finite number > 0.
    """

    kernel: Any
    scale: float

    def __post_init__(self):
        if not isinstance(self.kernel, Kernel) or isinstance(self.kernel, type):
            raise TypeError(f"Scaled: kernel must implement gpbayes.kernels.Kernel, got {self.kernel!r}")
        if not _is_number(self.scale):
            raise TypeError(f"Scaled: scale must be a real number > 0, got {self.scale!r} "
                            f"({type(self.scale).__name__})")
        _scalar(self.scale, self.kernel, "*")
        object.__setattr__(self, "scale", float(self.scale))

    @classmethod
    def of(cls, kernel, scale: float):
        """c k, with c1 (c2 k) folded into (c1 c2) k."""
        if isinstance(kernel, Scaled):
            return cls(kernel.kernel, scale * kernel.scale)
        return cls(kernel, scale)

    @property
    def n_params(self) -> int:
        """The scaled kernel's."""
        return self.kernel.n_params

    @property
    def param_names(self) -> list[str]:
        """The scaled kernel's."""
        return list(self.kernel.param_names)

    def default_priors(self) -> tuple:
        """The scaled kernel's default priors (``gpbayes.priors.default_kernel_prior``)."""
        from .. import priors

        return tuple(priors.default_kernel_prior(self.kernel).components)

    def __call__(self, psi, X, X2=None) -> np.ndarray:
        """c K(X, X2), Fortran order."""
        return np.asfortranarray(self.scale * np.asarray(self.kernel(psi, X, X2), dtype=np.float64))

    def diag(self, psi, X) -> np.ndarray:
        """c diag K(X, X)."""
        return self.scale * np.asarray(self.kernel.diag(psi, X), dtype=np.float64)

    def gradients(self, psi, X, K=None) -> list[np.ndarray]:
        """c dK/dpsi_i."""
        return [np.asfortranarray(self.scale * G) for G in self.kernel.gradients(psi, X)]

    def gradient_traces(self, psi, X, W, K, overwrite_W: bool = False) -> np.ndarray:
        """c tr(W dK/dpsi_i) from the scaled kernel's traces (or its fallback) at its own K; ``W`` is never
        overwritten."""
        return self.scale * gradient_traces(self.kernel, psi, X, W, self.kernel(psi, X))

    def amplitude(self, psi) -> float:
        """c a_k."""
        return self.scale * float(self.kernel.amplitude(psi))

    def initial_psi(self, X, amplitude: float = 1.0) -> np.ndarray:
        """The scaled kernel's ``initial_psi`` with amplitude a / c."""
        return np.asarray(self.kernel.initial_psi(X, amplitude=amplitude / self.scale), dtype=np.float64)

    def cross_covariance_vjp(self, psi, X1, X2, K12, K_bar, inputs: bool = True, overwrite_K_bar: bool = False):
        """The scaled kernel's products against c K_bar."""
        inner = self.kernel(psi, X1, X2)
        g, d = self.kernel.cross_covariance_vjp(psi, X1, X2, inner, self.scale * np.asarray(K_bar), inputs)
        return np.asarray(g), d

    def diag_vjp(self, psi, diag, diag_bar, X=None) -> np.ndarray:
        """The scaled kernel's diag_vjp against c diag_bar (at its own diagonal diag / c)."""
        bar = self.scale * np.asarray(diag_bar, dtype=np.float64)
        if X is not None:
            return _diag_vjp(self.kernel, psi, X, bar)
        return np.asarray(self.kernel.diag_vjp(psi, np.asarray(diag) / self.scale, bar), dtype=np.float64)

    def __repr__(self) -> str:
        return f"{self.scale!r} * {self.kernel!r}"


def _diag_vjp(kernel, psi, X, diag_bar) -> np.ndarray:
    """A component's <diag_bar, d diag K/dpsi>: with X where its diag_vjp takes it, else from its values."""
    import inspect

    if "X" in inspect.signature(kernel.diag_vjp).parameters:
        return np.asarray(kernel.diag_vjp(psi, kernel.diag(psi, X), diag_bar, X=X), dtype=np.float64)
    return np.asarray(kernel.diag_vjp(psi, kernel.diag(psi, X), diag_bar), dtype=np.float64)
