"""Which NumPy, SciPy and image-library calls certainly return a ``numpy.ndarray``.

The value-flow engine's knowledge of these libraries (``values``): it answers "known array"
only from these allow-lists, so a scalar or a list never passes for an array.
"""

from __future__ import annotations

from typing import Dict, FrozenSet, Tuple

# numpy functions that return an ndarray whatever they are given (a 0-d array at worst).
ARRAY_FUNCTIONS: FrozenSet[str] = frozenset(
    f"numpy.{name}"
    for name in (
        "array asarray asanyarray ascontiguousarray asfortranarray copy require "
        "zeros ones empty full zeros_like ones_like empty_like full_like eye identity "
        "arange logspace geomspace indices tri tril triu diag diagflat "
        "stack vstack hstack dstack column_stack row_stack concatenate block "
        "expand_dims reshape ravel transpose moveaxis rollaxis swapaxes squeeze flip fliplr "
        "flipud roll rot90 tile repeat pad broadcast_to atleast_1d "
        "frombuffer fromfile fromstring fromiter fromfunction loadtxt genfromtxt "
        "cumsum cumprod diff sort argsort outer kron bincount linalg.inv linalg.pinv linalg.cholesky "
        "append delete insert "
        "random.permutation random.multivariate_normal random.dirichlet"
    ).split()
)

# Elementwise numpy functions (and scalar-type casts): an array when given one, a scalar when
# given a scalar, so they count only with a known array among their first two operands.
ELEMENTWISE: FrozenSet[str] = frozenset(
    f"numpy.{name}"
    for name in (
        "clip abs absolute fabs exp expm1 log log1p log2 log10 sqrt square power sin cos tan tanh "
        "sign floor ceil round around rint trunc negative reciprocal maximum minimum fmax fmin "
        "add subtract multiply divide true_divide floor_divide mod "
        "float16 float32 float64 uint8 int8 int16 int32 int64 bool_"
    ).split()
)

# Functions whose result has the shape of one argument (its position): an array when that
# argument is one (``np.digitize(x, bins)``; a scalar ``x`` gives an integer).
SHAPED_BY: Dict[str, int] = {"numpy.digitize": 0, "numpy.searchsorted": 1}

# Reductions: with no axis (one argument, no keyword), a NumPy scalar of a known array
# (``np.sum(w)``, ``w.max()``), which takes part in arithmetic as a number does; with an axis
# they may give an array or a scalar (a 1-d array's), so they are known only for a literal axis
# a 1-d array lacks (``np.argmax(a, 1)``: where it runs, ``a`` has two dimensions or more).
REDUCTIONS: FrozenSet[str] = frozenset(
    "sum mean max min amax amin prod std var median nansum nanmean nanmax nanmin nanstd nanvar ptp "
    "argmax argmin nanargmax nanargmin".split()
)

# Random draws return an array only when given a size (``np.random.rand()`` is a float).
# name -> position of the ``size`` parameter (``rand``/``randn`` take the shape as *args).
SIZED_RANDOM: Dict[str, int] = {
    "random": 0,
    "random_sample": 0,
    "ranf": 0,
    "sample": 0,
    "standard_normal": 0,
    "uniform": 2,
    "normal": 2,
    "randint": 2,
    "integers": 2,
    "choice": 1,
    "binomial": 2,
    "poisson": 1,
    "exponential": 1,
    "beta": 2,
    "gamma": 2,
    "laplace": 2,
    "lognormal": 2,
    "random_integers": 2,
    "standard_exponential": 0,
    "standard_cauchy": 0,
    "standard_gamma": 1,
    "geometric": 1,
    "chisquare": 1,
    "rayleigh": 1,
    "weibull": 1,
    "pareto": 1,
    "zipf": 1,
    "logistic": 2,
    "gumbel": 2,
    "negative_binomial": 2,
    "triangular": 3,
    "hypergeometric": 3,
}
SHAPE_AS_ARGS: FrozenSet[str] = frozenset({"rand", "randn"})
ALWAYS_ARRAY_DRAWS: FrozenSet[str] = frozenset({"permutation", "multivariate_normal", "dirichlet"})
GENERATORS: FrozenSet[str] = frozenset({"numpy.random.default_rng", "numpy.random.RandomState"})

# ndarray methods that return an ndarray when called on one.
ARRAY_METHODS: FrozenSet[str] = frozenset(
    {"astype", "reshape", "copy", "flatten", "ravel", "transpose", "squeeze", "swapaxes", "view", "repeat"}
)
# Methods that return an ndarray whatever the receiver is (tensors, pandas objects).
TO_NUMPY_METHODS: FrozenSet[str] = frozenset({"numpy"})
# Image readers and SciPy routines that return an ndarray for any array input (a 0-d one at
# worst): OpenCV, imageio and scikit-image readers, ``scipy.ndimage`` filters and transforms,
# distance matrices, dense linear algebra.
OTHER_ARRAY_FUNCTIONS: FrozenSet[str] = frozenset(
    {"cv2.imread", "cv2.resize", "cv2.cvtColor", "cv2.imdecode", "cv2.warpAffine", "cv2.GaussianBlur"}
    | {"imageio.imread", "imageio.v2.imread", "imageio.v3.imread", "skimage.io.imread"}
    | {
        f"scipy.ndimage.{name}"
        for name in (
            "gaussian_filter gaussian_filter1d median_filter uniform_filter maximum_filter minimum_filter "
            "zoom rotate shift affine_transform map_coordinates convolve correlate sobel laplace "
            "distance_transform_edt binary_dilation binary_erosion binary_opening binary_closing binary_fill_holes"
        ).split()
    }
    | {f"scipy.spatial.distance.{name}" for name in ("cdist", "pdist", "squareform")}
    | {f"scipy.linalg.{name}" for name in ("inv", "pinv", "expm", "sqrtm", "block_diag", "cholesky")}
)

# Calls that return a tuple or list of arrays, which code unpacks (``xs, ys = np.meshgrid(...)``).
ARRAY_TUPLES: FrozenSet[str] = frozenset({"numpy.meshgrid", "numpy.broadcast_arrays", "numpy.nonzero"})
# ``np.unique`` returns a tuple of arrays when any of these is true.
UNIQUE_EXTRAS = ("return_index", "return_inverse", "return_counts")
H5PY_FILES: FrozenSet[str] = frozenset({"h5py.File"})
PATH_JOINERS: FrozenSet[str] = frozenset({"os.path.join", "posixpath.join", "pathlib.Path"})

# SciPy calls that return a fixed tuple: what each position holds ("array", "number", or ""
# when not known: ``fmin_l_bfgs_b``'s value may be a NumPy scalar, its info is a dict).
SCIPY_TUPLES: Dict[str, Tuple[str, ...]] = {
    "scipy.io.wavfile.read": ("number", "array"),
    "scipy.optimize.fmin_l_bfgs_b": ("array", "", ""),
    "scipy.optimize.fmin_tnc": ("array", "", ""),
}
# SciPy minimisers that return the minimum's array alone unless ``full_output``/``retall``
# (given by keyword or past the first three arguments) asks for a tuple.
SCIPY_MINIMISERS: FrozenSet[str] = frozenset(
    f"scipy.optimize.{name}" for name in ("fmin", "fmin_bfgs", "fmin_cg", "fmin_powell", "fmin_ncg")
)
# ``scipy.sparse`` constructors: a sparse matrix (or array), whose ``.toarray()`` /
# ``.todense()`` are arrays, and the methods that give another sparse matrix.
SPARSE_MAKERS: FrozenSet[str] = frozenset(
    f"scipy.sparse.{name}"
    for name in (
        "csr_matrix csc_matrix coo_matrix lil_matrix dok_matrix bsr_matrix dia_matrix csr_array csc_array "
        "coo_array lil_array dok_array bsr_array dia_array eye identity diags spdiags bmat kron block_diag "
        "hstack vstack load_npz"
    ).split()
)
SPARSE_DENSE_METHODS: FrozenSet[str] = frozenset({"toarray", "todense"})
SPARSE_METHODS: FrozenSet[str] = frozenset(
    {"tocsr", "tocsc", "tocoo", "tolil", "todok", "tobsr", "todia", "asformat", "astype", "copy", "transpose"}
)
# ``scipy.io.loadmat``: a dict whose variables are arrays (its ``__header__``... are not).
SCIPY_MAT_FILES: FrozenSet[str] = frozenset({"scipy.io.loadmat", "scipy.io.matlab.loadmat"})
