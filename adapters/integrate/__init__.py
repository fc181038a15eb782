"""``scipy.integrate`` as adapters: stiff ODEs with adjoint gradients, and quadrature."""
