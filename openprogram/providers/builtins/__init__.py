"""The providers openprogram ships: ``echo`` (offline) and, later, the vendor apis."""
