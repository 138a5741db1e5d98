"""No silent wrong answer, no unclear error (issue 41, point 4): each mistake below stops where it is made
(model, kernel, likelihood or method construction) with an error naming the argument, the value given and
what is allowed; siblings of each measured case (other non-integers, other wrong types) are covered too."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gpbayes as gb
from gpbayes import kernels as K


def _xy(n=20, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, d))
    return X, np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(n)


# ---------------------------------------------------------------------------
# kernels: active_dims / input_dim / boolean options / + and *
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("dims", [[1.7], [0, 1.5], [np.float64(0.5)], [True], ["1"], [None]])
def test_a_non_integer_active_dim_is_refused_not_truncated(dims):
    with pytest.raises(TypeError, match=r"active_dims must be column indices .* not a whole number"):
        K.Matern52(active_dims=dims)


def test_a_string_of_active_dims_is_refused():
    with pytest.raises(TypeError, match="active_dims must be a list of column indices"):
        K.SquaredExponential(active_dims="01")


def test_whole_number_active_dims_and_input_dim_are_accepted_as_before():
    assert K.Matern52(active_dims=[1.0, 2]).active_dims == (1, 2)
    assert K.Matern52(active_dims=np.array([0, 2])).active_dims == (0, 2)
    assert K.SquaredExponential(2.0).input_dim == 2


@pytest.mark.parametrize("make", [K.Matern52, K.SquaredExponential, K.Periodic, K.Linear, K.White])
@pytest.mark.parametrize("value", [2.5, "2", True])
def test_a_non_integer_input_dim_is_refused(make, value):
    with pytest.raises(TypeError, match=r"input_dim must be a whole number"):
        make(value)


@pytest.mark.parametrize("make", [K.Matern52, K.Matern12, K.RationalQuadratic, K.SquaredExponential, K.Periodic,
                                  K.Linear])
@pytest.mark.parametrize("value", ["no", "False", 1, 0, None, 1.0])
def test_a_non_bool_ard_is_refused(make, value):
    with pytest.raises(TypeError, match=rf"ard must be True or False, got {value!r}"):
        make(2, ard=value)


def test_numpy_bools_are_accepted_for_kernel_flags():
    assert K.SquaredExponential(2, ard=np.True_).n_params == 3
    assert K.SquaredExponential(2, fixed_amplitude=np.bool_(True)).n_params == 1
    with pytest.raises(TypeError, match="fixed_amplitude must be True or False"):
        K.SquaredExponential(2, fixed_amplitude="yes")


@pytest.mark.parametrize("expr", [lambda k: k + "rbf", lambda k: k * [k], lambda k: "rbf" + k, lambda k: None * k,
                                  lambda k: k + 1j])
def test_a_kernel_with_a_non_kernel_is_a_clear_type_error(expr):
    # numbers combine since issue 41 (k + c, c * k: tests/test_kernel_vocabulary.py); anything else is refused
    with pytest.raises(TypeError, match=r"unsupported operand for a gpbayes kernel.*Kernels combine only with "
                                        r"kernels: k1 \+ k2 \(Sum\), k1 \* k2 \(Product\)"):
        expr(K.Matern52(2))


def test_a_kernel_with_a_kernel_class_says_instantiate_it():
    with pytest.raises(TypeError, match=r"instantiate it: Periodic\(\.\.\.\)"):
        K.Matern52(2) + K.Periodic


def test_sum_of_kernels_is_their_sum():
    ks = [K.Matern52(2), K.Linear(2), K.White(2)]
    total = sum(ks)
    assert isinstance(total, K.Sum) and total == ks[0] + ks[1] + ks[2]
    assert sum(ks[:1]) is ks[0]
    X = np.random.default_rng(1).normal(size=(5, 2))
    psi = total.initial_psi(X)
    np.testing.assert_array_equal(total(psi, X), (ks[0] + ks[1] + ks[2])(psi, X))


# ---------------------------------------------------------------------------
# models: boolean options, counts, the kernel argument
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda X, y, **kw: gb.GPRegressor(X, y, **kw),
                                  lambda X, y, **kw: gb.GPClassifier(X, y > 0, **kw),
                                  lambda X, y, **kw: gb.PoissonGP(X, np.arange(len(y)) % 3, **kw),
                                  lambda X, y, **kw: gb.LatentGP(X, y, likelihood="gaussian", **kw),
                                  lambda X, y, **kw: gb.SparseGP(X, y, likelihood="gaussian", maxiter=2, **kw)])
@pytest.mark.parametrize("option", ["ard", "standardize"])
@pytest.mark.parametrize("value", ["no", 1, 0, None, "False"])
def test_a_non_bool_model_option_is_refused(make, option, value):
    X, y = _xy()
    with pytest.raises(TypeError, match=rf"{option} must be True or False, got {value!r}"):
        make(X, y, **{option: value})


def test_numpy_bools_are_accepted_for_model_options():
    X, y = _xy()
    m = gb.GPRegressor(X, y, ard=np.True_, standardize=np.bool_(False))
    assert m.kernel.ard and np.all(m.x_scale == 1.0)


@pytest.mark.parametrize("option,value", [("n_inducing", 5.7), ("n_inducing", "5"), ("n_inducing", True),
                                          ("n_quad", 10.5), ("seed", 0.5), ("maxiter", "10")])
def test_a_non_integer_count_of_the_sparse_gp_is_refused(option, value):
    X, y = _xy()
    kw = {"maxiter": 2, option: value}
    with pytest.raises(TypeError, match=rf"{option} must be a whole number"):
        gb.SparseGP(X, y, likelihood="gaussian", **kw)
    with pytest.raises(TypeError, match=rf"{option} must be a whole number"):
        gb.SparseGPClassifier(X, y > 0, **kw)


def test_a_whole_float_count_is_accepted():
    X, y = _xy()
    assert gb.SparseGP(X, y, likelihood="gaussian", n_inducing=5.0, maxiter=2).target.Z.shape == (5, 2)


@pytest.mark.parametrize("option,value", [("n_inducing", 5.7), ("latent_dim", 1.5), ("seed", "0"),
                                          ("ml_restarts", 1.5), ("ml_max_iter", 2.5)])
def test_a_non_integer_count_of_the_gplvm_is_refused(option, value):
    X, y = _xy()
    with pytest.raises(TypeError, match=rf"{option} must be a whole number"):
        gb.GPLVMRegressor(X, np.column_stack([y, -y]), **{option: value})


def test_gplvm_standardize_must_be_a_bool():
    X, y = _xy()
    with pytest.raises(TypeError, match="standardize must be True or False"):
        gb.GPLVMRegressor(X, y, standardize="no")


@pytest.mark.parametrize("name,suggestion", [("rbf", "SquaredExponential"), ("Matern52", "Matern52"),
                                             ("squared_exponential", "SquaredExponential"),
                                             ("periodic", "Periodic")])
def test_a_kernel_given_as_a_string_names_the_class_to_use(name, suggestion):
    X, y = _xy()
    with pytest.raises(TypeError, match=rf"kernel must be a kernel object.*{name!r} names "
                                        rf"gpbayes.kernels.{suggestion}: pass kernel=gb.kernels.{suggestion}\(2\)"):
        gb.GPRegressor(X, y, kernel=name)


def test_an_unknown_kernel_string_lists_the_library_kernels():
    X, y = _xy()
    with pytest.raises(TypeError, match=r"kernel must be a kernel object.*the library's kernels are "
                                        r"\['SquaredExponential', 'Matern12'"):
        gb.GPClassifier(X, y > 0, kernel="spline")


@pytest.mark.parametrize("make", [lambda X, y, k: gb.GPRegressor(X, y, kernel=k),
                                  lambda X, y, k: gb.GPClassifier(X, y > 0, kernel=k),
                                  lambda X, y, k: gb.PoissonGP(X, np.arange(len(y)) % 3, kernel=k),
                                  lambda X, y, k: gb.LatentGP(X, y, likelihood="gaussian", kernel=k),
                                  lambda X, y, k: gb.SparseGP(X, y, likelihood="gaussian", kernel=k)])
def test_a_kernel_class_says_instantiate_it(make):
    X, y = _xy()
    with pytest.raises(TypeError, match=r"kernel is the class Matern52, not a kernel: instantiate it: "
                                        r"Matern52\(\.\.\.\)"):
        make(X, y, K.Matern52)
    with pytest.raises(TypeError, match=r"kernel must be a kernel object"):
        make(X, y, 3.0)


@pytest.mark.parametrize("kernel,culprit", [
    (K.Matern52(active_dims=[5]), r"active_dims \[5\], but X has 2 column"),
    (K.Matern52(3), r"input_dim = 3, but X has 2 column"),
    (K.SquaredExponential(1), r"input_dim = 1, but X has 2 column"),
    (K.Matern52(2) + K.Periodic(active_dims=[2]), r"Periodic has active_dims \[2\], but X has 2 column"),
])
def test_kernel_columns_are_checked_against_X_when_the_model_is_built(kernel, culprit):
    X, y = _xy()
    with pytest.raises(ValueError, match=culprit):
        gb.GPRegressor(X, y, kernel=kernel)


def test_kernels_on_some_columns_are_accepted():
    X, y = _xy(d=3)
    m = gb.GPRegressor(X, y, kernel=K.Matern52(active_dims=[0, 2]) + K.Linear(active_dims=[1]))
    assert m.kernel.input_dim == 3


# ---------------------------------------------------------------------------
# likelihoods: classes, check_targets, output shapes, missing derivatives, non-finite log-likelihoods
# ---------------------------------------------------------------------------
class _LogLikOnly(gb.likelihoods.Likelihood):
    """A Gaussian of unit variance that defines log_lik alone."""

    name = "loglik-only"
    approximations = ()

    def check_targets(self, y):
        return np.asarray(y, dtype=np.float64)

    def log_lik(self, y, f):
        return -0.5 * (y - f) ** 2


class _ColumnLogLik(_LogLikOnly):
    def log_lik(self, y, f):
        return np.reshape(-0.5 * (y - f) ** 2, (-1, 1))

    def d1(self, y, f):
        return y - f


class _ColumnD1(_LogLikOnly):
    def d1(self, y, f):
        return np.reshape(y - f, (-1, 1))


class _Drops(gb.likelihoods.Gaussian):
    def check_targets(self, y):
        return np.asarray(y, dtype=np.float64)[1:]


class _Maps01(gb.likelihoods.Probit):
    """Maps {0, 1} to {-1, +1}: applied again to its own output it refuses -1."""

    def check_targets(self, y):
        y = np.asarray(y, dtype=np.float64)
        if not np.all(np.isin(y, [0.0, 1.0])):
            raise ValueError("labels must be 0 or 1")
        return 2.0 * y - 1.0


class _Doubles(gb.likelihoods.Gaussian):
    def check_targets(self, y):
        return 2.0 * np.asarray(y, dtype=np.float64)


class _NanAt3(gb.likelihoods.Gaussian):
    def log_lik(self, y, f):
        out = super().log_lik(y, f)
        return np.where(np.arange(np.shape(out)[-1]) == 3, np.nan, out)


@pytest.mark.parametrize("make", [lambda X, y, L: gb.LatentGP(X, y, likelihood=L),
                                  lambda X, y, L: gb.SparseGP(X, y, likelihood=L, maxiter=2)])
def test_a_likelihood_class_says_instantiate_it(make):
    X, y = _xy()
    with pytest.raises(TypeError, match=r"likelihood is the class Gaussian, not a likelihood: instantiate it: "
                                        r"Gaussian\(\.\.\.\)"):
        make(X, y, gb.likelihoods.Gaussian)


def test_a_likelihood_class_in_the_classifier_says_instantiate_it():
    X, y = _xy()
    with pytest.raises(TypeError, match=r"likelihood is the class Logistic.*instantiate it: Logistic\(\.\.\.\)"):
        gb.GPClassifier(X, y > 0, likelihood=gb.likelihoods.Logistic)


def test_a_check_targets_that_drops_rows_is_refused_and_applied_once():
    X, y = _xy()
    with pytest.raises(ValueError, match=r"_Drops.check_targets changed the targets' shape from \(20,\) to \(19,\)"):
        gb.LatentGP(X, y, likelihood=_Drops())
    with pytest.raises(ValueError, match=r"check_targets changed the targets' shape"):
        gb.SparseGP(X, y, likelihood=_Drops(), maxiter=2)


@pytest.mark.parametrize("lik,labels", [(_Maps01(), True), (_Doubles(), False)])
def test_a_check_targets_that_is_not_stable_is_refused(lik, labels):
    X, y = _xy()
    with pytest.raises(ValueError, match=r"check_targets is not stable"):
        gb.LatentGP(X, (y > 0).astype(float) if labels else y, likelihood=lik)


@pytest.mark.parametrize("lik,member", [(_ColumnLogLik(), "log_lik"), (_ColumnD1(), "d1")])
def test_a_log_lik_or_d1_of_the_wrong_shape_is_refused_when_the_model_is_built(lik, member):
    X, y = _xy()
    with pytest.raises(ValueError, match=rf"{type(lik).__name__}.{member}\(y, f\) must return one value per "
                                         r"observation.*got shape \(20, 1\).*return a 1-D array"):
        gb.LatentGP(X, y, likelihood=lik)
    with pytest.raises(ValueError, match=rf"{member}\(y, f\) must return one value per observation"):
        gb.SparseGP(X, y, likelihood=lik, maxiter=2)


def test_the_quadrature_refuses_a_log_lik_of_the_wrong_shape_instead_of_growing_arrays():
    y = np.zeros(5)
    with pytest.raises(ValueError, match=r"_ColumnLogLik.log_lik\(y, f\) must return one value per entry of f"):
        gb.likelihoods.gauss_hermite_tilted_moments(_ColumnLogLik(), y, np.zeros(5), np.ones(5))


@pytest.mark.parametrize("method", ["slice-surr-site", "surr", "slice-post-taylor", "nuts-whitened", None])
def test_a_method_needing_d1_names_it_for_a_likelihood_with_log_lik_only(method):
    X, y = _xy()
    model = gb.LatentGP(X, y, likelihood=_LogLikOnly())
    named = rf"'{method}'" if method else ""
    with pytest.raises(NotImplementedError, match=r"\(_LogLikOnly\) defines no d[12]\(\.\.\.\), which is needed by .*"
                                                  rf"{named}.*define d[12] on the class, or use a method that needs "
                                                  r"only log_lik: \['aa', 'slice-fixed', 'slice-prior-white'\]"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gb.sample(model, method=method, chains=1, draws=2, n_warmup=2, progress=False)


@pytest.mark.parametrize("method", ["aa", "slice-fixed", "slice-prior-white"])
def test_the_methods_named_as_needing_only_log_lik_run_with_log_lik_only(method):
    X, y = _xy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = gb.sample(gb.LatentGP(X, y, likelihood=_LogLikOnly()), method=method, chains=1, draws=2,
                          n_warmup=2, progress=False)
    assert idata.posterior["f"].shape[-1] == 20


@pytest.mark.parametrize("method", ["aa", "slice-surr-site"])
def test_a_non_finite_initial_log_likelihood_names_the_likelihood_and_the_observation(method):
    X, y = _xy()
    with pytest.raises(ValueError, match=r"initial f has log-likelihood nan under the gaussian likelihood "
                                         r"\(_NanAt3\); 1 non-finite term\(s\), the first at observation 3"):
        gb.sample(gb.LatentGP(X, y, likelihood=_NanAt3()), method=method, chains=1, draws=2, n_warmup=2,
                  progress=False)


# ---------------------------------------------------------------------------
# targets and labels
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("y", [np.array(["a", "b"] * 10), np.linspace(0, 1, 20).astype(str),
                               np.array([1.0 + 1j] * 20), np.array([1.0] * 19 + ["x"], dtype=object)])
def test_regression_targets_must_be_real_numbers(y):
    X, _ = _xy()
    with pytest.raises(ValueError, match=r"GPRegressor: y must be real numbers.*for class labels use "
                                         r"gb.GPClassifier"):
        gb.GPRegressor(X, y)


def test_counts_and_likelihood_targets_must_be_numbers_not_text():
    X, _ = _xy()
    with pytest.raises(ValueError, match=r"PoissonGP: counts must be real numbers"):
        gb.PoissonGP(X, np.array(["1"] * 20))
    with pytest.raises(ValueError, match=r"gaussian: targets must be real numbers"):
        gb.LatentGP(X, np.array(["1.5"] * 20), likelihood="gaussian")


@pytest.mark.parametrize("bad", [np.nan, np.inf, None])
def test_a_missing_label_is_refused_naming_its_rows(bad):
    X, y = _xy()
    labels = np.where(y > 0, 1.0, 0.0).astype(object if bad is None else float)
    labels[[2, 7]] = bad
    with pytest.raises(ValueError, match=r"GPClassifier: y has 2 missing labels .* at rows \[2, 7\]"):
        gb.GPClassifier(X, labels)
    with pytest.raises(ValueError, match=r"SparseGPClassifier: y has 2 missing labels .* at rows \[2, 7\]"):
        gb.SparseGPClassifier(X, labels, maxiter=2)


# ---------------------------------------------------------------------------
# prior=, predict(max_draws=), the scikit-learn estimators' options
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("prior,form", [
    ([gb.priors.Gamma(1.0, 1.0)] * 4, r"prior is a list of 4 item\(s\), not a prior"),
    ((gb.priors.Gamma(1.0, 1.0),) * 4, r"prior is a tuple of 4 item\(s\), not a prior"),
    (gb.priors.Gamma(1.0, 1.0), r"prior is one prior, Gamma\(shape=1.0, rate=1.0\), on a single hyperparameter"),
    (0.5, r"prior must be None \(the defaults\), a dict or an IndependentPrior, got 0.5"),
])
def test_a_prior_of_the_wrong_form_says_which_forms_prior_takes(prior, form):
    X, y = _xy()
    with pytest.raises(TypeError, match=form + r".*prior= takes a dict \{name: prior\}.*the names are "
                                              r"\['lengthscale\[0\]', 'lengthscale\[1\]', 'signal_variance', "
                                              r"'noise_variance'\].*IndependentPrior"):
        gb.GPRegressor(X, y, prior=prior)


def test_a_prior_of_the_wrong_length_is_refused_in_every_model():
    X, y = _xy()
    three = gb.priors.IndependentPrior((gb.priors.Gamma(1.0, 1.0),) * 3)
    with pytest.raises(ValueError, match=r"PoissonGP: prior has 3 components, the model 2 hyperparameters"):
        gb.PoissonGP(X, np.arange(20) % 3, prior=three, ard=False)


@pytest.fixture(scope="module")
def _fitted():
    X, y = _xy()
    model = gb.GPRegressor(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = gb.sample(model, method="rwmh", chains=1, draws=5, n_warmup=5, progress=False)
    return model, idata, X


@pytest.mark.parametrize("value", [0, -1, 1.5, "10", True])
def test_predict_max_draws_must_be_a_positive_integer(_fitted, value):
    model, idata, X = _fitted
    with pytest.raises(ValueError, match=rf"max_draws must be an integer >= 1 .*got {value!r}"):
        gb.predict(model, idata, X[:3], max_draws=value)


def test_predict_accepts_a_whole_float_max_draws_as_the_int(_fitted):
    model, idata, X = _fitted
    a = gb.predict(model, idata, X[:3], max_draws=3)
    b = gb.predict(model, idata, X[:3], max_draws=3.0)
    np.testing.assert_array_equal(a["mean"].values, b["mean"].values)


@pytest.mark.parametrize("est", ["BayesianGPRegressor", "BayesianGPClassifier"])
@pytest.mark.parametrize("option,value", [("ard", "no"), ("ard", 1), ("standardize", "no"), ("standardize", None)])
def test_estimator_bool_options_must_be_bools(est, option, value):
    from gpbayes import sklearn as sk

    X, y = _xy()
    clf = getattr(sk, est)(method="rwmh" if est == "BayesianGPRegressor" else "ep-ml", draws=5, chains=1,
                           n_warmup=5, **{option: value})
    with pytest.raises(TypeError, match=rf"{est}: {option} must be True or False, got {value!r}"):
        clf.fit(X, y if est == "BayesianGPRegressor" else y > 0)


@pytest.mark.parametrize("value", [0, -1, 2.5, "200"])
def test_estimator_predict_draws_must_be_a_positive_integer(value):
    from gpbayes.sklearn import BayesianGPRegressor

    X, y = _xy()
    with pytest.raises(ValueError, match=rf"predict_draws must be an integer >= 1 .*got {value!r}"):
        BayesianGPRegressor(method="rwmh", draws=5, chains=1, n_warmup=5, predict_draws=value).fit(X, y)


# ---------------------------------------------------------------------------
# siblings: other parameters given as the wrong type
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("make,culprit", [
    (lambda: gb.likelihoods.Poisson(exposure="a"), r"exposure must be a real number or an array of them, got 'a'"),
    (lambda: gb.likelihoods.Poisson(exposure=-1.0), r"exposure must be positive and finite"),
    (lambda: gb.likelihoods.Poisson(offset=None), r"offset must be a real number or an array of them, got None"),
    (lambda: gb.likelihoods.Gaussian(noise_variance="a"), r"noise_variance must be a real number, got 'a'"),
    (lambda: gb.likelihoods.Gaussian(noise_variance=True), r"noise_variance must be a real number, got True"),
    (lambda: K.Matern52(2, nugget="a"), r"nugget must be a number >= 0"),
    (lambda: K.SquaredExponential(2, nugget=None), r"nugget must be a number >= 0"),
])
def test_a_parameter_of_the_wrong_type_names_itself(make, culprit):
    with pytest.raises((TypeError, ValueError), match=culprit):
        make()


def test_a_mean_class_and_a_text_exposure_are_refused():
    X, y = _xy()
    with pytest.raises(TypeError, match=r"mean is the class Constant, not a mean function: instantiate it"):
        gb.GPRegressor(X, y, mean=gb.means.Constant)
    with pytest.raises(ValueError, match=r"PoissonGP: exposure must be real numbers"):
        gb.PoissonGP(X, np.arange(20) % 3, exposure="2")


@pytest.mark.parametrize("y", [np.array(["a", "b"] * 10), np.linspace(0, 1, 20).astype(str)])
def test_the_estimator_refuses_text_targets_for_regression(y):
    from gpbayes.sklearn import BayesianGPRegressor

    X, _ = _xy()
    with pytest.raises(ValueError, match=r"BayesianGPRegressor: y must be real numbers.*BayesianGPClassifier"):
        BayesianGPRegressor(method="rwmh", draws=5, chains=1, n_warmup=5).fit(X, y)


def test_a_likelihood_without_check_targets_names_the_missing_member():
    class NoCheck(gb.likelihoods.Likelihood):
        name = "nocheck"

        def log_lik(self, y, f):
            return -0.5 * (y - f) ** 2

    X, y = _xy()
    with pytest.raises(NotImplementedError, match=r"\(NoCheck\) defines no check_targets\(\.\.\.\)"):
        gb.LatentGP(X, y, likelihood=NoCheck())


def test_an_object_that_is_not_a_kernel_is_refused_naming_its_type():
    class NotAKernel:
        input_dim = 2

    X, y = _xy()
    with pytest.raises(TypeError, match=r"GPRegressor: kernel must be a kernel object .* got .*\(NotAKernel\)"):
        gb.GPRegressor(X, y, kernel=NotAKernel())
