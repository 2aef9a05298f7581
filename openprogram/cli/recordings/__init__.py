"""``openprogram recordings …``: manage recordings and switch record/replay.

These commands call file and config functions directly: they never start the provider
runtime, never import a vendor provider or httpx, and work while the configured recording
or the config itself is broken. One module per command; each is thin over the library.
"""
