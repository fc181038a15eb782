"""``Adapter``: the base class users subclass to bring a host routine into JAX."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, dataclass_transform

import jax
import jax.numpy as jnp
import numpy as np

from ._arrays import check_arrays
from ._bridge import call
from ._domain import Domain
from ._dtypes import result_dtype
from ._operations import host_pullback, host_pushforward
from ._parameters import check_choice, check_parameter, choices_of, given_parameters, traced
from ._plan import arg_names, default_rule
from ._primitives import api_boundary
from ._signature import bind_dims, core_shape, parse


@dataclass_transform(frozen_default=True)
class Adapter:
    """A NumPy/SciPy routine that runs on the host inside ``jit``, ``vmap`` and ``grad``.

    Subclass it, set ``signature``, and write ``forward`` and ``backward`` with NumPy::

        class Doubling(jaxbridge.Adapter):
            signature = "()->()"
            vectorized = True

            def forward(self, x):
                return 2 * x

            def backward(self, res, g):
                return (2 * g,)

        double = Doubling()
        jax.jit(jax.vmap(jax.grad(lambda x: double(x).sum())))(xs)

    Static parameters are annotated class attributes; each subclass becomes a frozen
    dataclass, so ``LinearSolve(assume_a="pos")`` is immutable, comparable and hashable.
    One annotated ``typing.Literal[...]`` takes only those values, checked when the adapter
    is made.

    Call an adapter on arrays whose trailing axes match ``signature``; leading axes are
    batch axes and broadcast like a NumPy gufunc. Integer and bool arguments get no
    gradient. Complex arguments are refused.
    """

    signature: ClassVar[str]
    """NumPy gufunc signature of one call, e.g. ``"(m,n),(n)->(m)"``."""

    vectorized: ClassVar[bool] = False
    """True if ``forward`` and ``backward`` accept leading batch axes (broadcasting like a
    gufunc). False: they see one core-shaped call at a time and the bridge loops on the host.
    Either way, one ``vmap`` makes one host call."""

    threads: ClassVar[int] = 1
    """How many host threads may share the loop over a batch when ``vectorized`` is False.
    Raise it for routines that release the GIL (LAPACK, FFTs: most of SciPy's compiled
    code) and are thread-safe; the default runs the loop on one thread. Work whose loop
    runs in Python (SciPy's optimisers and ODE solvers, NumPy on small arrays) holds the
    GIL, and more threads only take turns: 64 BDF solves took 1.6-1.8x as long on two
    threads as on one (``benchmarks/host_parallelism.py``); ``processes`` serves them."""

    processes: ClassVar[int] = 1
    """How many worker processes may share the loop over a batch when ``vectorized`` is
    False: for host work that holds the GIL (a Python loop, SciPy's optimisers and ODE
    solvers; 64 BDF solves took 0.49-0.67x the one-thread time on two processes,
    ``benchmarks/host_parallelism.py``). Each worker takes its share of the batch, calls
    ``forward``, ``backward`` or ``jvp`` on it and sends the results back. The workers
    start (``spawn``) at the first such call and stay; they import the adapter's class
    anew and receive the adapter pickled, so its class (and any class among its
    parameters) must be defined at the top level of an importable module, not in a
    notebook (a script's own classes work: the workers import the script, so it needs
    Python's ``if __name__ == "__main__":`` guard). ``forward`` gets no ``out`` there. Host
    state an adapter keeps between its forward and backward stays in the worker that made
    it: share ``i`` of a batch always goes to worker ``i``, so a backward over the same
    batch finds it. ``threads`` and ``processes`` are exclusive."""

    argument_names: ClassVar[tuple[str, ...] | None] = None
    """The names of ``forward``'s arguments where it takes them as ``*args`` (one forward
    shared by subclasses of different arities): ``("a", "x")``. Errors, ``domains`` and
    ``linear_in`` use them; without it such arguments are ``x0``, ``x1``, ..."""

    arrays: ClassVar[str] = "numpy"
    """Which arrays the host methods (``forward``, ``backward``, ``jvp``, ``check``) take:
    ``"numpy"``, on the host; ``"torch"`` or ``"cupy"``, XLA's own buffers wherever they
    live, as PyTorch tensors or CuPy arrays with no copy (``docs/gpu.md``). A device
    adapter's work must be enqueued on the current stream, which the bridge sets to XLA's;
    it must not write into its inputs (``jaxbridge.guard_inputs`` catches it), and
    returns its results as arrays of the same library (``out`` views its result buffers).
    ``"cupy"`` needs a CUDA backend; ``"torch"`` runs on the CPU backend too. Such an
    adapter runs on one thread: ``threads`` and ``processes`` stay 1."""

    blas_threads: ClassVar[int | None] = None
    """At most how many threads OpenBLAS may use while this adapter's host methods run;
    ``None`` leaves the process's setting. Set 1 where the host work is a loop of small
    linear algebra (a solver's iterations): OpenBLAS's worker threads busy-wait for more
    work after each job, and some of SciPy's small routines hand them jobs every time
    (L-BFGS-B's kept a worker at a whole core), which made such loops 2-70x slower
    wherever the cores were wanted by others (``docs/performance.md``, BLAS threads).
    Leave it for large factorisations, which BLAS threads speed up. The count is the
    process's: while a host call holds it, other BLAS work in the process (XLA's own
    linear algebra among it) gets at most as many threads too. Only OpenBLAS's own thread
    server (NumPy's and SciPy's wheels) is held; other BLAS builds are left as they are.
    Costs a few microseconds per host call."""

    domains: ClassVar[Mapping[str, str | Domain | Callable[[np.ndarray], np.ndarray]]] = {}
    """What valid inputs look like, by argument name, for ``jaxbridge.testing``: its input
    strategy draws them, ``check_adapter`` draws its batches from them, keeps its
    finite-difference steps inside them and refuses inputs outside them. An argument not
    named is ``"real"``. The ready domains, by name:

    - ``"real"``: any finite value (drawn from [-2, 2]).
    - ``"positive"``: greater than 0 (drawn from [1/4, 4]).
    - ``"away_from_zero"``: not 0, for kinks at 0 such as ReLU's (drawn with ``|x|`` in
      [1/4, 2]; steps never cross 0).
    - ``"integer"``: an integer array (drawn from 0 to 7, as int32); never differentiated.
    - ``"well_conditioned"``: a square matrix far from singular (singular values in
      [1/2, 3/2]).
    - ``"spd"``: a symmetric positive definite matrix (eigenvalues in [1/2, 1]); finite
      differences move entries (i, j) and (j, i) together, so it stays symmetric.
    - ``"stable"``: a square matrix whose eigenvalues have negative real parts (drawn with
      its symmetric part's eigenvalues at most -1/2).
    - a ``jaxbridge.Domain``, for inputs the names cannot describe (a sparse matrix's values
      on a fixed pattern, say): how to build a valid input from raw draws in [-1, 1] (raw
      zeros should give the simplest one: Hypothesis shrinks towards them), how far a finite
      difference may step, and what an input outside it is. A plain function is a domain
      that builds values and sets no limit.

    Matrix domains apply to the last two axes. When the domain depends on a parameter, define
    ``domains`` as a property::

        @property
        def domains(self):
            return {"a": "spd" if self.assume_a == "pos" else "well_conditioned"}
    """

    linear_in: ClassVar[tuple[str, ...]] = ()
    """The arguments that ``forward`` is linear in, the others held fixed: ``("b",)`` for a
    solve ``a x = b``. It enables ``jax.linear_transpose`` in them (through the pullback,
    taken with those arguments and the outputs at zero). An adapter linear in all its
    floating arguments together (``Doubling``) needs no forward-mode rule: its tangent map
    is ``forward`` itself, and its derivatives of every order follow."""

    residuals_from: ClassVar[tuple[str, ...] | None] = None
    """The arguments the residuals are computed from; by default all of them. A residual is
    stored once per batch element of these arguments alone: ``LinearSolve`` declares
    ``("a",)``, so one matrix shared by 128 right-hand sides keeps one copy of its factors,
    not 128. ``forward`` must then return residuals with the batch of these arguments (the
    leading axes they broadcast to), not the batch of the whole call."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "signature" in vars(cls):
            parse(cls.signature)  # a malformed signature fails when the class is defined
        for name in (
            "signature",
            "vectorized",
            "threads",
            "processes",
            "blas_threads",
            "arrays",
            "argument_names",
            "domains",
            "linear_in",
            "residuals_from",
        ):
            if name in inspect.get_annotations(cls):
                # an annotation would turn it into a dataclass field, a per-instance value
                raise TypeError(
                    f"{cls.__name__}: write `{name} = ...` without a type annotation; it is "
                    "a class setting, not a constructor parameter."
                )
        for name in ("threads", "processes", "blas_threads"):
            count = vars(cls).get(name, 1)
            if count is None and name == "blas_threads":
                continue  # (the process's setting)
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                either = "None (the process's setting) or " if name == "blas_threads" else ""
                raise TypeError(
                    f"{cls.__name__}: `{name}` must be {either}a whole number of at least 1, "
                    f"got {count!r}."
                )
        if cls.threads > 1 and cls.processes > 1:
            raise TypeError(
                f"{cls.__name__}: `threads` and `processes` both share the loop over a batch; "
                "set one of them."
            )
        check_arrays(cls)
        dataclasses.dataclass(frozen=True)(cls)
        init = cls.__init__

        @functools.wraps(init)
        def checked_init(self: Any, *args: Any, **kwargs: Any) -> None:
            try:
                init(self, *args, **kwargs)
            except (TypeError, ValueError) as error:
                # a traced parameter fails the class's own checks (`__post_init__`) first:
                # say what is wrong with it, not what those checks expected
                for name, value in given_parameters(init, self, args, kwargs).items():
                    if traced(value):
                        check_parameter(type(self).__name__, name, value)
                if not isinstance(error, TypeError):
                    raise
                if any(isinstance(a, (jax.Array, np.ndarray)) for a in args):
                    raise TypeError(
                        f"{type(self).__name__}(...) makes the adapter from its static "
                        f"parameters; to call it on arrays, call an instance: "
                        f"{type(self).__name__}()(x), or jax.jit({type(self).__name__}())."
                    ) from None
                raise
            for field in dataclasses.fields(self):
                check_parameter(type(self).__name__, field.name, getattr(self, field.name))
            for name, choices in choices_of(type(self)).items():
                check_choice(type(self).__name__, name, getattr(self, name), choices)

        setattr(cls, "__init__", checked_init)  # not `cls.__init__ = `: type checkers keep
        # the dataclass signature for the constructor

    @default_rule
    def forward(self, *args: np.ndarray) -> Any:
        """Compute the outputs on the host. NumPy arrays in (read-only), NumPy arrays out.
        The arrays in may be views of XLA's buffers, valid until the call returns: copy
        any that host state kept beyond the call holds on to (inside ``lax.scan`` XLA
        reuses them for the next iteration before a backward runs).

        Return one array per output in ``signature`` (a tuple if there are several), then
        the residuals that ``residual_specs`` declares, all in one flat tuple. Results are
        cast to the declared dtype within a kind (float64 to float32); another kind is an
        error. Never call JAX from here.

        To write results in place, take a keyword-only ``out=None``. Under ``jit`` with the
        ``buffer_callback`` transport, ``out`` is a tuple of writeable, C-contiguous views of
        XLA's own result buffers, one per result in the order above (residuals included,
        even where the call keeps none), each of its declared shape and dtype: with the
        batch axes in front for a vectorized adapter, one element's view for a looped one.
        Their contents on entry are undefined and they live only during the call, so write
        every entry of one you return. A result returned as its own ``out`` array is not
        copied; an ``out`` array may also serve as workspace or be returned in another
        place. Elsewhere (eager calls, ``pure_callback``, direct calls, a looped adapter
        whose threads would share a residual) ``out`` is None and ``forward`` returns new
        arrays. ``LinearSolve`` factorizes in its residuals' buffers this way.

        A ``forward`` whose residuals cost work of their own (sensitivities, factors kept
        for the rules) may take a keyword-only ``residuals=True``: the bridge passes False
        in a call whose result is not differentiated (its residuals would be dropped), and
        ``forward`` may then return the outputs alone and skip that work. The outputs must
        be the same either way. ``OdeSolve`` integrates its forward sensitivities only when
        told True.
        """
        raise NotImplementedError(f"{type(self).__name__} must define `forward`.")

    @default_rule
    def check(self, *args: np.ndarray) -> None:
        """Refuse inputs that have no result: raise an exception that names the argument
        and what was expected (the bridge puts the adapter's name first). NumPy arrays in,
        as ``forward`` gets them; by default every input is accepted.

        The bridge runs it on the host before each of ``forward``, ``backward`` and ``jvp``
        (on the whole batch for a vectorized adapter, on each element otherwise). Write a
        refusal here, not in ``forward`` alone: under ``jit``, a derivative whose value is
        not used never runs ``forward`` (XLA removes the call), and rules that do not read
        its results would compute on the input that ``forward`` refuses.
        ``check_adapter(..., refused=...)`` tests that a refusal holds under every
        transformation.
        """

    @default_rule
    def backward(self, res: tuple[np.ndarray, ...], g: Any) -> tuple[Any, ...]:
        """Compute the cotangents of the inputs on the host.

        ``res`` is ``(*inputs, *outputs, *residuals)``; ``g`` is the cotangent of the output
        (a tuple of them if there are several outputs). Return one cotangent per input,
        shaped like that input, or ``None`` for zero. Integer inputs' entries are ignored.

        A vectorized adapter returns one cotangent per batch element (broadcasting: size 1
        on a batch axis where the value is the same for every element), not summed over the
        batch; the bridge sums them over the elements that share a broadcast input.
        """
        raise NotImplementedError(
            f"{type(self).__name__} defines no `backward`, so it cannot be differentiated."
        )

    @default_rule
    def pullback(self, res: tuple[jax.Array, ...], g: Any) -> tuple[jax.Array | None, ...]:
        """The backward pass as JAX code; by default it calls ``backward`` on the host.

        Override it to build the backward from other bridged calls that have backward
        passes of their own: then the backward is itself differentiable and second
        derivatives work. Same contract as ``backward``, with JAX arrays; ``res`` and ``g``
        carry the call's batch axes in front.

        An override may take a keyword argument ``wanted``: the bridge then passes the names
        of the inputs whose cotangents will be used, and the others may be ``None``. Under
        ``jit`` unused work is removed anyway; outside it (eager ``jax.grad``), skipping an
        expensive cotangent nobody asked for saves its whole cost.
        """
        return host_pullback(self, res, g)

    @default_rule
    def jvp(self, res: tuple[np.ndarray, ...], tangents: tuple[Any, ...]) -> Any:
        """Compute the tangent of the outputs on the host (forward mode: ``jvp``, ``jacfwd``).

        ``res`` is what ``backward`` gets, ``(*inputs, *outputs, *residuals)``; ``tangents``
        has one entry per input, ``None`` where that input's tangent is zero. Return the
        output's tangent shaped like it (a tuple if there are several outputs, a tuple or
        the tangent itself for one; ``None`` for zero). With ``vectorized``, arrays carry
        leading batch axes that broadcast (a tangent may have a batch where ``res`` has size
        1: ``jacfwd`` makes one call).
        """
        raise NotImplementedError(f"{type(self).__name__} defines no `jvp`.")

    @default_rule
    def pushforward(self, res: tuple[jax.Array, ...], tangents: tuple[Any, ...]) -> Any:
        """The forward-mode rule as JAX code; by default it calls ``jvp`` on the host.

        Override it to build the tangent from other bridged calls that have derivative
        rules of their own (as ``pullback`` does for the backward): then forward mode works
        to every order (``jacfwd(jacfwd(f))``). Same contract as ``jvp``, with JAX arrays
        carrying the call's batch axes in front; it must be linear in ``tangents``. A
        tangent's batch axes may broadcast; its core axes must be the output's (broadcast
        them yourself where the tangent is the same along one).
        """
        return host_pushforward(self, res, tangents)

    def output_specs(self, *args: jax.ShapeDtypeStruct) -> Any:
        """Core shapes and dtypes of the outputs, given those of the inputs.

        The default sizes each output from ``signature`` and gives it ``result_dtype`` of
        the inputs (their common dtype if none is floating). Override it when the
        signature cannot say, e.g. for ``"(n)->(k)"``; return a ``jax.ShapeDtypeStruct`` or
        a tuple of them.
        """
        owner = type(self).__name__
        signature = parse(self.signature)
        sizes = bind_dims(
            owner, arg_names(type(self)), signature.inputs, tuple(a.shape for a in args)
        )
        floating = any(jnp.issubdtype(a.dtype, jnp.floating) for a in args)  # bfloat16 too
        dtype = result_dtype(*args) if floating else np.result_type(*(a.dtype for a in args))
        return tuple(
            jax.ShapeDtypeStruct(core_shape(owner, core, sizes), dtype)
            for core in signature.outputs
        )

    def residual_specs(self, *args: jax.ShapeDtypeStruct) -> Any:
        """Core shapes and dtypes of residuals that ``forward`` saves for ``backward``.

        Default: none. Declare them (given the inputs' core specs) to have ``forward``
        compute something once, an LU factorization say, and hand it to ``backward`` in
        ``res`` after the inputs and outputs. They travel as JAX arrays, so they work under
        ``jit`` and ``vmap`` and are freed with the rest of the computation.
        """
        return ()

    @api_boundary  # errors show the caller's frames, not jaxbridge's or JAX's
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return call(self, args, kwargs)
