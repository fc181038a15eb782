"""``scipy.special`` as adapters: the functions JAX lacks, differentiable."""
