"""What every test file shares: a clean environment and one way to run the command line.

The scrub: a developer's shell (or a pre-commit hook running the tests) may carry
PHYSVERIFY_REPO / PHYSVERIFY_REPO_COMMIT (the sandbox's variables) or git's
repository-local variables (GIT_INDEX_FILE, GIT_DIR, ...); any of them would point the
code under test at another repository. The CLI helpers: ``cli`` calls ``cli.main`` in
this process (fast, for output and exit codes), ``physverify`` starts the console module
as a real process (for what only a process shows: the stdout/stderr split, signals); the
plain functions behind them live in the support package (support/fixtures.py), which test modules import.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from pathlib import Path

import git
import pytest
from support.fixtures import SANDBOX_VARS, Ran, init_repo, run_process

from physverify.commands import cli as _cli
from physverify.gate.repo import LOCAL_GIT_VARS

# The tests mirror the package's folders, and some import another's helpers by module name
# (``from test_action import make_workspace``): pytest puts only the collected file's own folder
# on sys.path, so a file run alone would not find a helper in a sibling folder.
_TESTS = Path(__file__).resolve().parent
sys.path.extend(str(_TESTS / f) for f in ("isolation", "gate", "commands", "report") if str(_TESTS / f) not in sys.path)


def pytest_configure(config: pytest.Config) -> None:
    """Let Ctrl-C reach the processes the tests start, also when the suite itself was started with it ignored.

    A shell without job control starts a background command (``.ci/run &``, nohup) with
    SIGINT ignored, and an ignored signal stays ignored in every process started from it: the
    tests that press Ctrl-C on a replay then wait for a process that never sees it. A handler
    here is reset to the default in each child at exec, as a terminal's shell would give it.
    """
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def _readings_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache of claim readings for the whole session, as a user's runs share one: never the user's own."""
    return tmp_path_factory.mktemp("readings-cache")


@pytest.fixture(autouse=True)
def _scrubbed_environment(monkeypatch: pytest.MonkeyPatch, _readings_cache: Path) -> None:
    for name in (*SANDBOX_VARS, *LOCAL_GIT_VARS):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PHYSVERIFY_CACHE_DIR", str(_readings_cache))


@pytest.fixture()
def physverify() -> Callable[..., Ran]:
    """``physverify(*args, cwd=PATH, env=None)``: the command as a real process (scrubbed environment)."""
    return run_process


@pytest.fixture()
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Callable[..., Ran]:
    """``cli(*args, cwd=PATH)``: ``physverify ARGS`` run in this process by ``cli.main``."""

    def run(*args: str, cwd: Path) -> Ran:
        capsys.readouterr()  # drop anything printed before
        monkeypatch.chdir(cwd)
        code = _cli.main(list(args))
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    return run


@pytest.fixture()
def small_repo(tmp_path: Path) -> git.Repo:
    """A committed repository: solver.py and claims/a.py (an empty CLAIM), under tmp_path/project."""
    root = tmp_path / "project"
    (root / "claims").mkdir(parents=True)
    repository = init_repo(root)
    (root / "solver.py").write_text("def rhs(t, y):\n    return -y\n")
    (root / "claims" / "a.py").write_text("CLAIM = {}\n")
    repository.index.add(["solver.py", "claims/a.py"])
    repository.index.commit("solver and a claim")
    return repository


@pytest.fixture(params=("fresh", "fork"))
def isolation(request: pytest.FixtureRequest) -> str:
    """Every isolation property holds for the fresh child and for the forked one (issue 11): isolate.ISOLATION_MODES."""
    return str(request.param)
