"""Issue 37's acceptance: nothing escapes a replay — child programs, C extensions, UDP and
gRPC held by the operating system's network namespace, not only by Python's guard."""
