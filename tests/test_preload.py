"""preload.py: which modules the fork server preloads for a claim."""

from __future__ import annotations

import textwrap
from pathlib import Path


from physverify import preload


def test_the_fork_server_preloads_installed_libraries_the_claims_import_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "local_solver.py").write_text("import scipy.linalg\n")  # in the closure: its imports count too
    claim_path = tmp_path / "claim_x.py"
    claim_path.write_text(
        textwrap.dedent("""
        import json
        import numba
        import local_solver
        from scipy import integrate
        from physverify import reference_study
        def later():
            import torch
    """)
    )
    chosen = preload.preload_for(claim_path, [str(tmp_path)], explicit=["json"])
    assert {"numpy", "physverify", "scipy.integrate", "scipy.linalg", "json"} <= chosen
    assert not {"numba", "torch", "local_solver"} & chosen  # a thread or GPU starter; repository code
