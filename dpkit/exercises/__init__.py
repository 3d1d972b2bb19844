"""The exercises' checks: one module per exercise notebook, one function per check.

A check cell in ``exercises/NN_*.ipynb`` is a few lines that call one function here with the
learner's answer, e.g. ``ex03.check_average_gradients(average_gradients)``. The function runs
the answer on inputs it varies (sizes, device and tower counts, shapes that do not divide,
the defaults), compares what it gives with an independent reference, and raises an
AssertionError that says what is wrong and where to look. A curious learner can read how
they are checked; tests/unit/test_exercise_checks_*.py shows each check failing on wrong
answers.
"""
