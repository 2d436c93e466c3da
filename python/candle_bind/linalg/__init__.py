"""torch.linalg: decompositions and solvers on LAPACK through numpy.linalg (a maintained library, as
design §8 asks), under torch's semantics: batched inputs `(*, m, n)`, float32 stays float32, torch's
return types and error types (a singular or non-positive-definite input raises `LinAlgError`, a
RuntimeError, with torch's message). What numpy lacks (getrf, sytrf, orgqr/ormqr) is written over numpy
in the family modules. Norms are compositions of candle_bind's own ops, so they stay on the tensor's
device and take half precision as torch's do. The legacy top-level functions (`torch.svd`, `torch.lu`,
`torch.cholesky_solve`, ...) live here too; `torch.X` resolves to them through TOP_LEVEL.

    _common   checks, errors, out=, tensor <-> numpy
    _decomp   svd, qr, geqrf, householder_product, eig(h), cholesky, lu, ldl, matrix_sqrth, polar
    _solve    inv, det, solve, solve_triangular, lu_solve, ldl_solve, cholesky_solve, lstsq, pinv, rank
    _norms    vector_norm, matrix_norm, norm, cond
    _matrix   matmul, multi_dot, vecdot, cross, diagonal, vander, matrix_exp
    _legacy   torch.svd, torch.lu, lu_unpack, torch.lu_solve, pinverse, svd_lowrank, pca_lowrank
"""

from ._common import LinAlgError
from ._decomp import (cholesky, cholesky_ex, eig, eigh, eigvals, eigvalsh, geqrf, householder_product, ldl_factor,
                      ldl_factor_ex, lu, lu_factor, lu_factor_ex, matrix_sqrth, ormqr, polar, qr, svd, svdvals)
from ._legacy import (legacy_cholesky, legacy_lu, legacy_lu_solve, legacy_qr, legacy_svd, lu_unpack, pca_lowrank,
                      pinverse, svd_lowrank)
from ._matrix import cross, diagonal, matmul, matrix_exp, multi_dot, vander, vecdot
from ._norms import cond, matrix_norm, norm, vector_norm
from ._solve import (cholesky_inverse, cholesky_solve, det, inv, inv_ex, ldl_solve, logdet, lstsq, lu_solve,
                     matrix_power, matrix_rank, pinv, slogdet, solve, solve_ex, solve_triangular, tensorinv,
                     tensorsolve, triangular_solve)

__all__ = [
    "LinAlgError", "svd", "svdvals", "qr", "norm", "vector_norm", "matrix_norm", "solve", "solve_triangular", "inv",
    "det", "slogdet", "pinv", "eigh", "eigvalsh", "cholesky", "lstsq", "matrix_rank", "multi_dot", "vecdot", "cross",
    "matrix_power", "cholesky_ex", "cond", "diagonal", "eig", "eigvals", "householder_product", "inv_ex",
    "ldl_factor", "ldl_factor_ex", "ldl_solve", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul",
    "matrix_exp", "solve_ex", "tensorinv", "tensorsolve", "vander", "matrix_sqrth", "polar",
]

# torch.<name> (and Tensor.<name>) served from this package
TOP_LEVEL = {"svd": legacy_svd, "qr": legacy_qr, "det": det, "logdet": logdet, "slogdet": slogdet, "inverse": inv,
             "pinverse": pinverse, "svd_lowrank": svd_lowrank, "pca_lowrank": pca_lowrank, "matrix_power": matrix_power,
             "cholesky": legacy_cholesky, "cholesky_inverse": cholesky_inverse, "cholesky_solve": cholesky_solve,
             "geqrf": geqrf, "orgqr": householder_product, "ormqr": ormqr, "triangular_solve": triangular_solve,
             "lu": legacy_lu, "lu_solve": legacy_lu_solve, "lu_unpack": lu_unpack, "matrix_exp": matrix_exp}
