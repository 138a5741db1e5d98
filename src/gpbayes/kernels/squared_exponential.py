"""Squared-exponential covariance functions in each paper's own parameterisation.

All of them are ``a * exp(-1/2 * sum_d w_d (x_d - x'_d)^2)`` with an
amplitude ``a`` and per-dimension inverse squared scales ``w_d``; what
differs between the papers is how ``(a, w)`` are written in terms of the
parameters that are sampled.  Every parameter is sampled in log space,
``psi = log(parameter)``, and here ``log a`` and ``log w_d`` are affine in
``psi``:  ``log a = c_a * psi_amp``, ``log w_d = c_w * psi_d + b_w``.

=============  ===================================================  =========  ===========
parameterisation  kernel (as printed in the paper)                   c_a        c_w, b_w
=============  ===================================================  =========  ===========
``fg``         Filippone & Girolami 2014, eq. 5:                    1          -2, 0
               sigma exp(-1/2 (x-x')^T A (x-x')), A^-1 = tau^2 I
               or diag(tau_i^2); psi = (log tau, log sigma)
``amis``       Xiong, Smidl & Filippone: sigma exp(-|x-x'|^2/tau^2)  1          -2, log 2
               (ARD: sum_r (x_r-x'_r)^2/tau_r^2); psi = (log tau,
               log sigma)
``ma``         Murray & Adams 2010, Sec. 5:                          2          -2, 0
               sigma_f^2 exp(-1/2 sum (x_d-x'_d)^2 / l_d^2);
               psi = (log l, log sigma_f)
``gplvm``      Gadd et al.: theta_S exp(-1/2 sum theta_j             1          1, 0
               (z_j-z'_j)^2) (precision style); psi = (log theta_j,
               log theta_S); with ``fixed_amplitude`` the amplitude
               is 1 (their k_z)
=============  ===================================================  =========  ===========

Parameter order is always: the scale parameters (one if isotropic, one per
input dimension if ARD), then the amplitude (absent with
``fixed_amplitude``).

Distances are computed one n x n matrix at a time (never the (n, n, d)
broadcast): the kernel matrix from scaled inputs via
|a|^2 + |b|^2 - 2 a.b, the ARD gradients from one dimension at a time.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .base import KernelBase, _as_inputs, _normalise_dims, _select, median_distance

__all__ = ["SquaredExponential"]

# (c_a, c_w, b_w) per parameterisation, see the table above
_PARAMETERISATIONS: dict[str, tuple[float, float, float]] = {
    "fg": (1.0, -2.0, 0.0),
    "amis": (1.0, -2.0, math.log(2.0)),
    "ma": (2.0, -2.0, 0.0),
    "gplvm": (1.0, 1.0, 0.0),
}

_NAMES = {
    "fg": ("tau", "sigma"),
    "amis": ("tau", "sigma"),
    "ma": ("lengthscale", "sigma_f"),
    "gplvm": ("theta", "theta_S"),
}


@dataclasses.dataclass(frozen=True)
class SquaredExponential(KernelBase):
    """Squared-exponential kernel (R&W 2006 eq. 4.9, with ARD as in their eq. 5.1); see the module
    docstring for the papers' forms.

    Parameters
    ----------
    input_dim : number of covariates d the kernel acts on (default ``len(active_dims)``).
    ard : one scale parameter per covariate (True) or one shared (False).
    parameterisation : one of ``fg``, ``amis``, ``ma``, ``gplvm``.
    fixed_amplitude : amplitude fixed to 1 and not a parameter.
    nugget : relative diagonal term eps: K(X, X) = a (exp(...) + eps I).
        0 (the default) is the papers' kernel exactly.  Latent-GP models whose
        prior covariance has no noise term (classification, Cox processes)
        use a small eps (e.g. 1e-6) so that K is numerically positive
        definite at long lengthscales instead of needing a failed Cholesky
        and a jitter retry at every step; Gadd et al.'s k_z carries its own
        "+ eps delta".  It scales with the amplitude, so the gradients stay
        exact.  Cross-covariances K(X, X2) never include it.
    active_dims : the columns of X the kernel acts on (default: all of X, which must then have
        ``input_dim`` columns); ARD parameters are named after these columns (``tau_2``).

    Default prior (``default_priors``): F&G 2014 Sec. 4.4, every scale ~ Gamma(1, 1/sqrt(d)), the
    amplitude ~ Gamma(1.1, 0.1) (``gpbayes.priors.default_kernel_prior``).  Inside a sum or product
    its parameters are prefixed ``se_``.
    """

    input_dim: int | None = None
    ard: bool = False
    parameterisation: str = "fg"
    fixed_amplitude: bool = False
    nugget: float = 0.0
    active_dims: tuple | None = dataclasses.field(default=None, repr=False)

    name = "se"

    def __post_init__(self):
        if self.parameterisation not in _PARAMETERISATIONS:
            raise ValueError(
                f"unknown kernel parameterisation {self.parameterisation!r}; "
                f"choose one of {sorted(_PARAMETERISATIONS)}"
            )
        _normalise_dims(self, self.input_dim, self.active_dims)
        if not (np.isfinite(self.nugget) and self.nugget >= 0):
            raise ValueError(f"nugget must be a finite number >= 0, got {self.nugget}")

    def __repr__(self) -> str:
        """The dataclass's repr (as before active_dims existed), with ``active_dims`` when it is set."""
        fields = [f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self) if f.name != "active_dims"]
        if self.active_dims is not None:
            fields.append(f"active_dims={self.active_dims!r}")
        return f"{type(self).__name__}({', '.join(fields)})"

    def _x(self, X, name: str = "X"):
        """X itself without ``active_dims`` (the same object: the numbers of before), else its active columns."""
        return X if self.active_dims is None else _select(X, name, self.input_dim, self.active_dims)

    def default_priors(self) -> tuple:
        """F&G 2014 Sec. 4.4: Gamma(1, 1/sqrt(d)) on every scale, Gamma(1.1, 0.1) on the amplitude unless fixed."""
        from .. import priors

        comps = (priors.fg_scale_prior(self.input_dim),) * self.n_scale
        return comps if self.fixed_amplitude else comps + (priors.FG_AMPLITUDE_PRIOR,)

    # ------------------------------------------------------------------ shape
    @property
    def n_scale(self) -> int:
        """Number of lengthscale-type parameters: d with ARD, else 1."""
        return self.input_dim if self.ard else 1

    @property
    def n_params(self) -> int:
        """Number of log-parameters: the scales and, unless fixed, the amplitude."""
        return self.n_scale + (0 if self.fixed_amplitude else 1)

    @property
    def param_names(self) -> list[str]:
        """Parameter names in the parameterisation's own terms (e.g. ``tau_0``, ..., ``sigma`` for F&G eq. 5)."""
        scale, amp = _NAMES[self.parameterisation]
        if self.ard:
            dims = range(self.input_dim) if self.active_dims is None else self.active_dims
            names = [f"{scale}_{i}" for i in dims]
        else:
            names = [scale]
        if not self.fixed_amplitude:
            names.append(amp)
        return names

    # ------------------------------------------------------------ transforms
    def amplitude_and_precisions(self, psi: np.ndarray) -> tuple[float, np.ndarray]:
        """(a, w) with w of length input_dim, from log-parameters psi."""
        psi = np.asarray(psi, dtype=np.float64)
        if psi.shape != (self.n_params,):
            raise ValueError(
                f"kernel expects {self.n_params} log-parameters {self.param_names}, "
                f"got shape {psi.shape}"
            )
        if not np.all(np.isfinite(psi)):
            raise ValueError(f"non-finite kernel log-parameters: {psi}")
        c_a, c_w, b_w = _PARAMETERISATIONS[self.parameterisation]
        w = np.exp(c_w * psi[: self.n_scale] + b_w)
        if not self.ard:
            w = np.full(self.input_dim, w[0])
        a = 1.0 if self.fixed_amplitude else float(np.exp(c_a * psi[-1]))
        return a, w

    def amplitude(self, psi) -> float:
        """The amplitude a (1 with ``fixed_amplitude``)."""
        return self.amplitude_and_precisions(psi)[0]

    # ------------------------------------------------------- initial values
    def initial_psi(self, X, amplitude: float = 1.0) -> np.ndarray:
        """psi with every w_d = 1 / med^2 (med: median pairwise distance of X) and amplitude a.

        With w = exp(c_w psi + b_w) = 1/med^2, sum_d w_d r_d^2 is near 1 for a
        typical pair of inputs; log a = c_a psi_amp.
        """
        med = median_distance(self._x(X))
        c_a, c_w, b_w = _PARAMETERISATIONS[self.parameterisation]
        target_w = np.log(1.0 / med**2)
        psi_scale = (target_w - b_w) / c_w
        parts = [np.full(self.n_scale, psi_scale)]
        if not self.fixed_amplitude:
            parts.append([np.log(amplitude) / c_a])
        return np.concatenate(parts)

    # ----------------------------------------------- reverse-mode products
    def cross_covariance_vjp(self, psi, X1, X2, K12, K_bar, inputs: bool = True, overwrite_K_bar: bool = False):
        """<K_bar, dK12/dpsi> for each psi, and <K_bar, dK12/dX1> (M x d) (``None`` without ``inputs``).

        ``overwrite_K_bar`` (sparse GP fast path): when ``K_bar`` and ``K12`` are both Fortran-ordered
        float64, B = K_bar * K12 is formed in ``K_bar``'s memory (no M x N temporary; the same numbers).

        K12 = a exp(-1/2 sum_d w_d (x1_d - x2_d)^2):
        dK/dpsi_amp = c_a K;   dK/dpsi_d = c_w K (-1/2 w_d (x1_d - x2_d)^2);
        dK_mn/dX1_md = -w_d (X1_md - X2_nd) K_mn.
        With B = K_bar * K12, sum_mn B_mn (x1_m - x2_n)^2 =
        rowsum(B).x1^2 + colsum(B).x2^2 - 2 x1^T B x2, so everything is O(M N d).
        A constant added to the diagonal of K12 (jitter * a) is covered: it
        scales with a and has zero distance.
        """
        a, w = self.amplitude_and_precisions(psi)
        c_a, c_w, _ = _PARAMETERISATIONS[self.parameterisation]
        X1_full, X1, X2 = X1, self._x(X1), self._x(X2, "X2")
        if overwrite_K_bar and K_bar.flags.f_contiguous and K12.flags.f_contiguous and K_bar.dtype == np.float64:
            B = np.multiply(K_bar, K12, out=K_bar)  # the same layout, so the same sums, as K_bar * K12
        else:
            B = K_bar * K12
        rs, cs = B.sum(axis=1), B.sum(axis=0)
        BX2 = B @ X2  # (M, d)
        # sum_mn B_mn (X1_md - X2_nd)^2 for each d
        dist = rs @ (X1 * X1) + cs @ (X2 * X2) - 2.0 * np.einsum("md,md->d", X1, BX2)
        if self.ard:
            g_scale = -0.5 * c_w * w * dist
        else:
            g_scale = np.array([-0.5 * c_w * w[0] * dist.sum()])
        g = g_scale if self.fixed_amplitude else np.append(g_scale, c_a * B.sum())
        dX1 = -w[None, :] * (X1 * rs[:, None] - BX2) if inputs else None
        if inputs and self.active_dims is not None:  # zero for the columns the kernel does not see
            full = np.zeros((X1.shape[0], np.shape(X1_full)[1]))
            full[:, list(self.active_dims)] = dX1
            dX1 = full
        return g, dX1

    def diag_vjp(self, psi, diag, diag_bar, X=None) -> np.ndarray:
        """<diag_bar, d diag K/dpsi>: diag K = a (1 + nugget) depends on the amplitude only (c_a a).

        ``X`` is accepted (the library kernels' signature) and not needed."""
        g = np.zeros(self.n_params)
        if not self.fixed_amplitude:
            c_a = _PARAMETERISATIONS[self.parameterisation][0]
            g[-1] = c_a * float(np.sum(diag_bar * diag))
        return g

    # --------------------------------------------------------------- values
    def __call__(self, psi, X, X2=None, out: np.ndarray | None = None) -> np.ndarray:
        """Covariance matrix K(X, X2) (K(X, X) if X2 is None), Fortran order.

        ``out`` (K(X, X) only): a Fortran-ordered float64 (n, n) array to write K into, e.g. a
        buffer reused from call to call (a fresh n x n array costs its page faults); the same
        numbers.
        """
        a, w = self.amplitude_and_precisions(psi)
        X = self._x(X)
        if X2 is None:
            E = None
            if out is not None:
                n = np.shape(X)[0]
                if out.shape != (n, n) or not out.flags.f_contiguous or out.dtype != np.float64:
                    raise ValueError(f"out: expected a Fortran-ordered float64 array of shape {(n, n)}")
                E = out.T
            return self._symmetric(a, w, X, E).T  # symmetric: the transpose is the Fortran-ordered view
        if out is not None:
            raise ValueError("out is for K(X, X) only (X2 is None)")
        K = self._scaled_sqdist(w, X, self._x(X2, "X2"))
        K *= -0.5
        np.exp(K, out=K)
        K *= a
        return np.asfortranarray(K)

    def cross_covariance_into(self, psi, X1, X2, out: np.ndarray, scratch: np.ndarray) -> np.ndarray:
        """K(X1, X2) written into ``out``: the sparse GP's M x N K_uf without temporaries.

        ``out`` and ``scratch`` are Fortran-ordered float64 arrays of shape (n1, n2); ``scratch`` is
        overwritten.  The same numbers, bit for bit, as ``self(psi, X1, X2)`` (which it replaces
        only in ``gpbayes.sparse``): the same operations in the same order, in place on C-ordered
        (n1, n2) arrays laid in the memory of ``scratch`` and ``out``, then one copy into the
        Fortran-ordered ``out`` -- instead of five fresh n1 x n2 arrays and a layout copy into a
        sixth.  (Building K^T = B A^T directly in Fortran order would save the copy but is not the
        same numbers: OpenBLAS's AVX-512 GEMM rounds some entries of B A^T differently from A B^T.)
        """
        a, w = self.amplitude_and_precisions(psi)
        X1 = _as_inputs(self._x(X1), "X", self.input_dim)
        X2 = _as_inputs(self._x(X2, "X2"), "X2", self.input_dim)
        n1, n2 = X1.shape[0], X2.shape[0]
        for arr, nm in ((out, "out"), (scratch, "scratch")):
            if arr.shape != (n1, n2) or not arr.flags.f_contiguous or arr.dtype != np.float64:
                raise ValueError(f"{nm}: expected a Fortran-ordered float64 array of shape {(n1, n2)}")
        sw = np.sqrt(w)
        A = X1 * sw
        nA = np.einsum("ij,ij->i", A, A)
        B = X2 * sw
        nB = np.einsum("ij,ij->i", B, B)
        # C-ordered (n1, n2) arrays in the two buffers' memory
        K = scratch.reshape(-1, order="F").reshape(n1, n2)
        S = out.reshape(-1, order="F").reshape(n1, n2)
        np.matmul(A, B.T, out=K)  # P = A B^T, the same GEMM as _scaled_sqdist
        # __call__: E = -1/2 max(fl(nA + nB) - 2 P, 0).  Scaling by -1/2 is exact and commutes with
        # rounding, so fl(-nA/2 + -nB/2) + P = -1/2 fl(fl(nA + nB) - 2 P) to the bit, and
        # -1/2 max(x, 0) = min(-x/2, 0): two passes over n1 x n2 fewer, the same numbers.
        np.add((-0.5 * nA)[:, None], (-0.5 * nB)[None, :], out=S)
        np.add(S, K, out=K)
        np.minimum(K, 0.0, out=K)
        np.exp(K, out=K)
        K *= a
        np.copyto(out, K)  # the layout change (numpy's blocked copy; a mixed-layout ufunc is ~8x slower)
        return out

    def diag(self, psi, X) -> np.ndarray:
        """diag K(X, X) = a (1 + nugget) for every point (a stationary kernel)."""
        a, _ = self.amplitude_and_precisions(psi)
        X = _as_inputs(self._x(X), "X", self.input_dim)
        return np.full(X.shape[0], a * (1.0 + self.nugget))

    #: rows per block of ``_symmetric`` (a 64 x n block stays in cache through its five passes)
    _ROWS = 64

    def _symmetric(self, a, w, X, E: np.ndarray | None = None) -> np.ndarray:
        """K(X, X) = a (exp(-1/2 sqdist) + nugget I), C-ordered, the same to the bit as from ``_scaled_sqdist``.

        With A = X sqrt(w), nA_i = |A_i|^2 and G = A A^T, ``_scaled_sqdist`` gives
        sq = max(fl(nA_i + nA_j) - 2 G_ij, 0) (diagonal 0) and the exponent is
        -1/2 sq.  Scaling by a power of two commutes with rounding unless a
        value is subnormal (|A_i|^2 < 2.2e-308, i.e. a scaled input row within
        1.5e-154 of the origin without being at it), so -1/2 fl(s - 2 G) =
        fl(G - s/2) with s/2 = fl(nA_i/2 + nA_j/2), and -1/2 max(sq, 0) =
        min(G - s/2, 0) up to the sign of a zero, which exp does not see.  After
        G (the same ``A @ A.T`` product as before), every pass -- the exponent,
        exp, the nugget, the amplitude -- runs on one block of ``_ROWS`` rows at a
        time while it is in cache, with no n x n temporary (per entry the same
        operations in the same order as ``exp``, ``+= nugget``, ``*= a`` over the
        whole matrix).  The dense K(X, X) only; ``gradients`` keeps
        ``_scaled_sqdist``.
        """
        X = _as_inputs(X, "X", self.input_dim)
        A = X * np.sqrt(w)
        hA = 0.5 * np.einsum("ij,ij->i", A, A)
        if E is None:
            E = A @ A.T  # C order
        else:
            np.matmul(A, A.T, out=E)  # the same product (numpy's syrk for A A^T) into a C-ordered buffer
        n = E.shape[0]
        flat = E.reshape(-1)
        for i0 in range(0, n, self._ROWS):
            i1 = min(n, i0 + self._ROWS)
            blk = E[i0:i1]
            blk -= hA[i0:i1, None] + hA[None, :]
            np.minimum(blk, 0.0, out=blk)
            diag = slice(i0 * (n + 1), i1 * (n + 1), n + 1)  # the entries (i, i), i0 <= i < i1
            flat[diag] = 0.0
            np.exp(blk, out=blk)
            if self.nugget:
                flat[diag] += self.nugget
            blk *= a
        return E

    def _scaled_sqdist(self, w, X, X2) -> np.ndarray:
        X = _as_inputs(X, "X", self.input_dim)
        sw = np.sqrt(w)
        A = X * sw
        nA = np.einsum("ij,ij->i", A, A)
        if X2 is None:
            B, nB = A, nA
        else:
            B = _as_inputs(X2, "X2", self.input_dim) * sw
            nB = np.einsum("ij,ij->i", B, B)
        sq = nA[:, None] + nB[None, :] - 2.0 * (A @ B.T)
        np.maximum(sq, 0.0, out=sq)
        if X2 is None:
            np.fill_diagonal(sq, 0.0)
        return sq

    # ------------------------------------------------------------ gradients
    def gradient_traces(self, psi, X, W: np.ndarray, K: np.ndarray, overwrite_W: bool = False) -> np.ndarray:
        """tr(W dK/dpsi_i) for every parameter i, without forming the n x n derivative matrices.

        ``W`` is symmetric n x n (GP regression: alpha alpha^T - C^-1, R&W eq. 5.9) and ``K`` =
        K(X, X) as returned by ``self(psi, X)``; only its off-diagonal entries are read (the
        diagonal is a (1 + nugget), ``diag``), so K + D for a diagonal D may be passed instead
        (GP regression passes C = K + lambda I).  With B = W o K (elementwise) and dK/dpsi_d =
        c_w K o (-1/2 w_d (x_d - x'_d)^2), dK/dpsi_amp = c_a K (the nugget sits on the diagonal,
        where the distance is 0, and scales with a):

            tr(W dK/dpsi_d)   = -1/2 c_w w_d sum_ik B_ik (x_id - x_kd)^2
                              = -1/2 c_w w_d (2 (B 1) . x_d^2 - 2 x_d^T B x_d),
            tr(W dK/dpsi_amp) = c_a 1^T B 1,

        so all d + 1 traces come from one GEMM B [X, 1] (n x n x (d + 1)) after one elementwise
        product: O(n^2 d) in two passes over n x n memory, where ``gradients`` makes d + 1 n x n
        matrices and the caller d + 1 passes against W.  X is centred first (distances do not
        change; the difference of the two sums then cancels no large terms).  The same numbers as
        ``[np.sum(W * G) for G in self.gradients(psi, X, K)]`` up to rounding (another order of
        the sums; tests/test_kernels.py bounds the difference), not to the bit.  With
        ``overwrite_W`` (Fortran-ordered float64 ``W``) B is formed in W's memory.
        """
        a, w = self.amplitude_and_precisions(psi)
        X = _as_inputs(self._x(X), "X", self.input_dim)
        n = X.shape[0]
        if W.shape != (n, n) or K.shape != (n, n):
            raise ValueError(f"W and K: expected shape {(n, n)}, got {W.shape} and {K.shape}")
        c_a, c_w, _ = _PARAMETERISATIONS[self.parameterisation]
        # the diagonal of B = W o K has distance 0: it enters the amplitude's trace only, and is
        # zeroed in B, so that the two sums below do not carry (and cancel) its terms -- with short
        # lengthscales it dominates B
        diag_B = np.diagonal(W) * (a * (1.0 + self.nugget))
        if overwrite_W and W.flags.f_contiguous and W.dtype == np.float64:
            B = np.multiply(W, K, out=W)
        else:
            B = np.multiply(W, K, order="F")
        B.ravel(order="F")[:: n + 1] = 0.0
        Xc1 = np.empty((n, self.input_dim + 1), order="F")
        Xc1[:, :-1] = X - X.mean(axis=0)
        Xc1[:, -1] = 1.0
        BX1 = B @ Xc1  # (n, d + 1): B x_d for every d, and the row sums B 1
        Xc = Xc1[:, :-1]
        rs = BX1[:, -1]
        # sum_ik B_ik (x_id - x_kd)^2 for each d (B symmetric)
        dist = 2.0 * (rs @ (Xc * Xc)) - 2.0 * np.einsum("nd,nd->d", Xc, BX1[:, :-1])
        if self.ard:
            g_scale = -0.5 * c_w * w * dist
        else:
            g_scale = np.array([-0.5 * c_w * w[0] * dist.sum()])
        return g_scale if self.fixed_amplitude else np.append(g_scale, c_a * (rs.sum() + diag_B.sum()))

    def gradients(self, psi, X, K: np.ndarray | None = None) -> list[np.ndarray]:
        """[dK/dpsi_i for each parameter], each n x n, at K = K(X, X).

        dK/dpsi_amp = c_a K;  dK/dpsi_d = c_w * K * (-1/2 w_d (x_d - x'_d)^2)
    (the nugget sits on the diagonal, where r = 0, so only the amplitude
    gradient sees it).
        """
        a, w = self.amplitude_and_precisions(psi)
        if K is None:
            K = self(psi, X)
        X = _as_inputs(self._x(X), "X", self.input_dim)
        c_a, c_w, _ = _PARAMETERISATIONS[self.parameterisation]
        grads: list[np.ndarray] = []
        if self.ard:
            for d in range(self.input_dim):
                col = X[:, d]
                r2 = np.subtract.outer(col, col)
                r2 *= r2
                # the same products, written straight into a Fortran-ordered result (no copy)
                r2 *= -0.5 * c_w * w[d]
                grads.append(np.multiply(r2, K, order="F"))
        else:
            sq = self._scaled_sqdist(w, X, None)
            grads.append(np.asfortranarray((-0.5 * c_w) * sq * K))
        if not self.fixed_amplitude:
            grads.append(np.asfortranarray(c_a * K))
        return grads
