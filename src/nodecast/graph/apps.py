"""The paper's applications as task graphs: tiled Cholesky and tiled LU (section 4).

Both reproduce the task and data structure of StarPU 1.4's examples, in
submission order, so that implicit dependencies, priorities and eviction hints
are the ones StarPU sees, and return the graph as an OpGraph (``TaskGraph.build``):

* ``cholesky``: ``examples/cholesky/cholesky_implicit.c`` (single precision):
  for each k, POTRF(k,k); TRSM(m,k) for m > k; ``wont_use(A[k][k])``; then for
  each n > k, SYRK(n,n) and GEMM(m,n) for m > n, then ``wont_use(A[n][k])``.
  Priorities (StarPU's bounded range, MAX = 5, DEFAULT = 0): POTRF is MAX;
  TRSM is MAX on the first sub-diagonal tile (m = k+1); SYRK is MAX for
  n = k+1; GEMM is MAX for m = n = k+1 (never, since m > n). Kernels are the
  model symbols ``chol_model_{potrf,trsm,syrk,gemm}``. FLOPs per task follow
  the example's MAGMA formulas; the nominal total is n^3/3 + n^2/2 + n/6.
* ``lu``: ``examples/lu/xlu_implicit.c`` (no pivoting): for each k,
  GETRF(k,k); then for i > k, TRSM_LL(k,i) and TRSM_RU(i,k);
  ``wont_use(A[k][k])``; GEMM(i,j) for i, j > k; then ``wont_use`` on the
  panel tiles. Priority MAX for GETRF and for the tasks next to the diagonal.
  Kernels ``starpu_{s,d}lu_lu_model_{getrf,trsm_ll,trsm_ru,gemm}``; nominal
  total 2n^3/3.

POTRF and GETRF run synchronously on a GPU (no ``STARPU_CUDA_ASYNC``); the
other kernels may be queued on the device while the previous one runs.
"""

from __future__ import annotations

from nodecast.errors import InputError
from nodecast.graph.opgraph import OpGraph
from nodecast.graph.taskgraph import RW, R, TaskGraph, paused_gc

STARPU_MAX_PRIO = 5
STARPU_DEFAULT_PRIO = 0
PRECISION_BYTES = {"single": 4, "double": 8}


#: tasks one built-in graph may hold: the simulator keeps about 1 KB per task, so 10 M tasks is about 10 GB
MAX_TASKS = 10_000_000


def task_count(app: str, nb: int) -> int:
    """Tasks of tiled ``app`` on ``nb`` x ``nb`` blocks, counted without building the graph."""
    if app == "cholesky":  # POTRF, TRSM + SYRK, GEMM
        return nb + nb * (nb - 1) + nb * (nb - 1) * (nb - 2) // 6
    return nb + nb * (nb - 1) + (nb - 1) * nb * (2 * nb - 1) // 6  # LU: GETRF, 2 TRSM, GEMM


def _blocks(matrix_size: int, block_size: int, app: str) -> int:
    if block_size <= 0 or matrix_size <= 0:
        raise InputError(f"matrix size and block size must be > 0 (got {matrix_size}, {block_size})", key="--sizes")
    if matrix_size % block_size:
        raise InputError(
            f"block size {block_size} does not divide matrix size {matrix_size}",
            key="--block-size",
            hint=f"Use a multiple of {block_size}, e.g. {(matrix_size // block_size + 1) * block_size}",
        )
    nb = matrix_size // block_size
    n = task_count(app, nb)
    if n > MAX_TASKS:
        raise InputError(
            f"{app} {matrix_size} in blocks of {block_size} has {n:,} tasks; nodecast simulates at most {MAX_TASKS:,} "
            "(about 1 KB of memory per task)",
            key="--block-size",
            hint="Use larger blocks or a smaller matrix",
        )
    return nb


def _elem(precision: str) -> int:
    try:
        return PRECISION_BYTES[precision]
    except KeyError:
        raise InputError(f"precision must be single or double (got {precision!r})", key="--precision") from None


def flops_potrf(n: float) -> float:
    """MAGMA's POTRF count (multiplications + additions): n^3/3 + n^2/2 + n/6."""
    fmuls = n * (((1.0 / 6.0) * n + 0.5) * n + (1.0 / 3.0))
    fadds = n * (((1.0 / 6.0) * n) * n - (1.0 / 6.0))
    return fmuls + fadds


def flops_trsm(m: float, n: float) -> float:
    """MAGMA's TRSM count as the example writes it (right side): n*m*(m+1)."""
    return 0.5 * n * m * (m + 1.0) * 2


def flops_syrk(k: float, n: float) -> float:
    """MAGMA's SYRK count: k*n*(n+1)."""
    return 0.5 * k * n * (n + 1.0) * 2


def flops_gemm(m: float, n: float, k: float) -> float:
    """GEMM count: 2mnk."""
    return 2.0 * m * n * k


def cholesky(matrix_size: int, block_size: int = 960, *, precision: str = "single", priorities: bool = True) -> OpGraph:
    """Tiled Cholesky (lower), as StarPU's ``cholesky_implicit``, as an OpGraph; InputError when the block does not divide."""
    return cholesky_tasks(matrix_size, block_size, precision=precision, priorities=priorities).build()


@paused_gc()
def cholesky_tasks(matrix_size: int, block_size: int = 960, *, precision: str = "single",
                   priorities: bool = True) -> TaskGraph:
    """The TaskGraph ``cholesky`` builds its OpGraph from (``benchmarks/bench_loop_floor.py`` walks its lists)."""
    nb = _blocks(matrix_size, block_size, "cholesky")
    esize = _elem(precision)
    tile = block_size * block_size * esize
    g = TaskGraph(name=f"cholesky-{matrix_size}-b{block_size}-{precision}")
    a = {}
    for m in range(nb):
        for n in range(m + 1):
            a[m, n] = g.add_data(f"A[{m}][{n}]", tile)
    mx = STARPU_MAX_PRIO if priorities else STARPU_DEFAULT_PRIO
    df = STARPU_DEFAULT_PRIO
    nn = float(block_size)
    # NOTE: every tile has the same size, so each kernel's count is computed once
    # (not once per task: the 72 000 benchmark submits 67 525 GEMMs).
    f_potrf, f_trsm, f_syrk, f_gemm = flops_potrf(nn), flops_trsm(nn, nn), flops_syrk(nn, nn), flops_gemm(nn, nn, nn)
    add_task = g.add_task
    for k in range(nb):
        add_task("chol_model_potrf", [(a[k, k], RW)], flops=f_potrf, priority=mx, name=f"POTRF({k})", async_ok=False)
        for m in range(k + 1, nb):
            add_task(
                "chol_model_trsm",
                [(a[k, k], R), (a[m, k], RW)],
                flops=f_trsm,
                priority=mx if m == k + 1 else df,
                name=f"TRSM({m},{k})",
            )
        g.add_wont_use(a[k, k])
        for n in range(k + 1, nb):
            add_task(
                "chol_model_syrk",
                [(a[n, k], R), (a[n, n], RW)],
                flops=f_syrk,
                priority=mx if n == k + 1 else df,
                name=f"SYRK({n},{k})",
            )
            ank = a[n, k]
            for m in range(n + 1, nb):
                add_task(
                    "chol_model_gemm",
                    [(a[m, k], R), (ank, R), (a[m, n], RW)],
                    flops=f_gemm,
                    priority=mx if (n == k + 1 and m == k + 1) else df,
                    name=f"GEMM({m},{n},{k})",
                )
            g.add_wont_use(a[n, k])
    g.nominal_flops = flops_potrf(float(matrix_size))
    return g


@paused_gc()
def lu(matrix_size: int, block_size: int = 960, *, precision: str = "single", priorities: bool = True) -> OpGraph:
    """Tiled LU without pivoting, as StarPU's ``lu_implicit_example_{float,double}``, as an OpGraph."""
    nb = _blocks(matrix_size, block_size, "lu")
    esize = _elem(precision)
    tile = block_size * block_size * esize
    p = "s" if precision == "single" else "d"
    g = TaskGraph(name=f"lu-{matrix_size}-b{block_size}-{precision}")
    a = {(i, j): g.add_data(f"A[{i}][{j}]", tile) for i in range(nb) for j in range(nb)}
    mx = STARPU_MAX_PRIO if priorities else STARPU_DEFAULT_PRIO
    df = STARPU_DEFAULT_PRIO
    n3 = float(block_size) ** 3
    for k in range(nb):
        g.add_task(f"starpu_{p}lu_lu_model_getrf", [(a[k, k], RW)], flops=2.0 * n3 / 3.0, priority=mx, name=f"GETRF({k})", async_ok=False)
        for i in range(k + 1, nb):
            g.add_task(
                f"starpu_{p}lu_lu_model_trsm_ll",
                [(a[k, k], R), (a[i, k], RW)],
                flops=n3,
                priority=mx if i == k + 1 else df,
                name=f"TRSM_LL({k},{i})",
            )
            g.add_task(
                f"starpu_{p}lu_lu_model_trsm_ru",
                [(a[k, k], R), (a[k, i], RW)],
                flops=n3,
                priority=mx if i == k + 1 else df,
                name=f"TRSM_RU({i},{k})",
            )
        g.add_wont_use(a[k, k])
        for i in range(k + 1, nb):
            for j in range(k + 1, nb):
                g.add_task(
                    f"starpu_{p}lu_lu_model_gemm",
                    [(a[k, i], R), (a[j, k], R), (a[j, i], RW)],
                    flops=2.0 * n3,
                    priority=mx if (i == k + 1 and j == k + 1) else df,
                    name=f"GEMM({k},{i},{j})",
                )
        for i in range(k + 1, nb):
            g.add_wont_use(a[k, i])
            g.add_wont_use(a[i, k])
    g.nominal_flops = 2.0 * float(matrix_size) ** 3 / 3.0
    return g.build()


APPS = {"cholesky": cholesky, "lu": lu}
