"""openprogram.provider_boundary."""
