"""pytest configuration shared by the unit tests and nbval over lessons/ and solutions/."""

pytest_plugins = ["tests.nbval_plugin"]
