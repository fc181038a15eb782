"""The arguments as SciPy's ufuncs should see them (``exact_floats``), for the
special-function adapters."""

import numpy as np


def exact_floats(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """The arrays for a SciPy ufunc: integer and bool ones as float64 (exactly), floating
    ones unchanged. NumPy picks a ufunc's first loop the inputs cast to safely, and for
    int16, uint8 or bool alone that is ``jv``'s or ``betaincinv``'s float32 loop."""
    return tuple(a if np.issubdtype(a.dtype, np.floating) else a.astype(np.float64) for a in arrays)
