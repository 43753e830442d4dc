"""What a person types: the ``rr`` entry point and its subcommands.

Every module here parses ``argv`` or prints for a person; the library packages below
(``rr.pipeline``, ``rr.reporting``, ``rr.analysis``, the components) hold the functions they
call. Nothing in ``rr`` imports this package (``tests/test_layers.py`` enforces it).
"""
