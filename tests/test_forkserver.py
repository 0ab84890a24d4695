"""forkserver.py: the fork server's side: what it imports, and the forked child it makes."""

from __future__ import annotations

from pathlib import Path

import pytest
from childsupport import write_spec

from physverify import isolate


def test_the_fork_server_never_imports_repository_code_even_when_physverify_yaml_asks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from fixtures import DECAY_CLAIM, DECAY_SOLVER

    from physverify import replay

    claims = tmp_path / "claims"
    claims.mkdir()
    log = tmp_path / "imports.log"
    # decay.py notes every process that imports it; only the claim's own child may
    (claims / "decay.py").write_text(
        f"import os\nopen({str(log)!r}, 'a').write(f'{{os.getpid()}}\\n')\n" + DECAY_SOLVER
    )
    (claims / "claim_decay.py").write_text(
        DECAY_CLAIM.replace('f"{got:.6g} against {want:.6g}"', "str(os.getpid())").replace(
            "import math\n", "import math\nimport os\n", 1
        )
    )
    (claims / "physverify.yaml").write_text("preload: [decay]\nisolation: fork\n")
    monkeypatch.setenv("PYTHONPATH", str(claims))  # so the server could import it, if it were asked to
    ledger_path = tmp_path / "ledger.jsonl"
    replay.replay([claims], ledger=ledger_path, trusted=True)
    child = json.loads(ledger_path.read_text())["checks"][0]["message"]
    assert log.read_text().split() == [child]


def test_the_forked_child_has_the_fresh_childs_cwd_sys_path_environment_and_descriptors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 11, item 1: the forked child does exactly what the fresh child does."""
    import json

    spec = write_spec(
        tmp_path,
        """
        import json, os, sys
        def seen():
            return json.dumps({
                "cwd": os.getcwd(), "path": sys.path, "repo": os.environ.get("PHYSVERIFY_REPO"),
                "stdin": os.read(0, 10).decode(), "fd1_is_fd2": os.path.samestat(os.fstat(1), os.fstat(2)),
                "leader": os.getsid(0) == os.getpid() == os.getpgid(0), "bytecode": sys.dont_write_bytecode,
                "unbuffered": os.environ.get("PYTHONUNBUFFERED"),
            })
        def checks():
            return [Check("demo", "what the child sees", lambda: Result(PASS, seen()))]
    """,
    )
    monkeypatch.setenv("PHYSVERIFY_REPO", str(tmp_path))  # set after any fork server started: still seen
    extra = tmp_path / "root"
    extra.mkdir()
    seen = {
        mode: json.loads(
            isolate.run_child("spec", spec, timeout_s=60, sys_path=[extra], isolation=mode).payload["checks"][0][
                "message"
            ]
        )
        for mode in isolate.ISOLATION_MODES
    }  # type: ignore[index]
    assert seen["fresh"] == seen["fork"]
    assert seen["fork"]["path"][:2] == [str(tmp_path), str(extra)] and seen["fork"]["repo"] == str(tmp_path)
    assert seen["fork"]["stdin"] == "" and seen["fork"]["fd1_is_fd2"] and seen["fork"]["leader"]
