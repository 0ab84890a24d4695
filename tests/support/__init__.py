"""Shared test helpers, imported as ``from support.fixtures import init_repo`` (CONTRIBUTING.md, "Tests").

A package, as pre-commit keeps its ``testing/`` package: a top-level ``fixtures`` module
would also be the name of a package on the index. ``fixtures``: real git repositories in
tmp_path, the decay solver and its claim, the command line as a process. ``solvers``: the
small integrators the numerics tests seed defects into.
"""
