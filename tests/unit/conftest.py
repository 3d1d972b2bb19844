"""tests/unit: no child process, no kernel. A test here that starts one fails, saying where
it belongs (tests/support/no_processes.py)."""

from tests.support.no_processes import no_processes  # noqa: F401 - an autouse fixture
