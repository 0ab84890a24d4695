"""The two ways to start a claim's child (DESIGN.md, "Warm start"), named in one place.

A module of its own, importing nothing, so that the settings, physverify.yaml's reader and
the command line's parser name the modes without importing the child's layer.
"""

FRESH = "fresh"
FORK = "fork"
ISOLATION_MODES = (FRESH, FORK)
