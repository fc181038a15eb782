"""``scipy.optimize`` as adapters: solvers with implicit gradients."""
