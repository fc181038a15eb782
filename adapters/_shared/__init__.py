"""The layer the adapter families share: the failure policy (``_failure``), JAX-side rules
(``_rules``), host values with JAX's derivatives (``_host_values``), parameters and arguments
held fixed (``_parameters``, ``_fixed``), what a user's host methods return
(``_host_cotangents``), a user's function inside SciPy's loops (``_user_function``), gufunc
batches walked one matrix at a time (``_coefficient_groups``), CSR patterns (``_csr``), LU
that runs on every backend (``_portable_linalg``), SciPy's version (``_scipy_version``), the
incomplete gamma and beta functions' shape derivatives (``_shape_derivatives``) and the
distribution functions ``stats`` and ``special`` both use (``_distributions``)."""
