"""``scipy.signal`` as adapters: linear filters."""
