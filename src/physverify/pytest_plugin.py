"""The pytest plugin (entry point ``pytest11``): claims and spec files as pytest items.

``pytest --claims claims`` collects each claim file of the folder (replay's discovery) as one
item. The item is judged by ``replay.replay`` itself, for that claim alone: the same isolated
child, the same baseline (the ledger as committed at HEAD, or ``--claims-baseline REF``), the
same ``expect`` pins and ``fail_on`` of physverify.yaml. It passes when the gate would let the
claim through and fails with the transition and the evidence line otherwise. A pytest run never
writes the ledger (replay's ``dry_run``), so it can never clear a finding, and pytest-xdist's
workers never race on it.

Spec files (``verify_*.py``, what ``physverify run`` runs) are collected with ``--claims`` or
``--verify-specs``: one item per check. Their names come from a child that calls checks()
without running any; the first item of a file that runs, runs the file's checks in one child,
as ``physverify run`` does, and each item reports its own check.

This module is imported by every pytest run wherever physverify is installed, so it imports
nothing but pytest until one of the two options is given: the rest of physverify (and
GitPython) is loaded by the plugin object ``pytest_configure`` registers then.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from physverify.gate.results import ClaimRun, SpecOutcome

SPEC_GLOB = "verify_*.py"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("physverify", "physverify: claims judged as the gate judges them")
    group.addoption("--claims", action="append", default=[], metavar="DIR",
                    help="collect each claim file under DIR as one item, judged as 'physverify replay' judges it "
                    "(repeatable); spec files (verify_*.py) are collected too")
    group.addoption("--claims-baseline", metavar="REF", default=None,
                    help="judge claims against the ledger as committed at git REF (default: HEAD)")
    group.addoption("--verify-specs", action="store_true", default=False,
                    help="collect spec files (verify_*.py) as one item per check, without --claims")


def pytest_configure(config: pytest.Config) -> None:
    folders: list[str] = config.getoption("claims")
    if folders or config.getoption("verify_specs"):
        config.pluginmanager.register(ClaimsPlugin(config, folders), "physverify-claims")


class ClaimFailed(Exception):
    """A claim the gate would not let through: its judged run."""

    def __init__(self, run: ClaimRun) -> None:
        super().__init__(run.key)
        self.run = run


class ClaimsPlugin:
    """The plugin's work once ``--claims`` or ``--verify-specs`` is given: which files are claims or specs."""

    def __init__(self, config: pytest.Config, folders: Sequence[str]) -> None:
        here = Path(config.invocation_params.dir)
        self.folders = [here / folder for folder in folders]
        for folder in self.folders:
            if not folder.is_dir():
                raise pytest.UsageError(f"--claims {folder}: not a claims folder")
        self.excludes = [_exclude(folder) for folder in self.folders]  # a bad physverify.yaml stops the run here
        self.baseline: str | None = config.getoption("claims_baseline")
        self._claims: dict[Path, Path] | None = None  # each claim file (resolved) -> its claims folder
        self._add_to_collection(config)

    def _add_to_collection(self, config: pytest.Config) -> None:
        """The claims folders are collected with whatever else pytest collects, each once."""
        given = [Path(config.invocation_params.dir, str(arg).split("::")[0]).resolve() for arg in config.args]
        for folder in self.folders:
            real = folder.resolve()
            if not any(real == arg or arg in real.parents for arg in given):
                config.args.append(str(folder))

    def claims(self) -> dict[Path, Path]:
        """The claim files of the folders, found by replay's own discovery (its rules and physverify.yaml's
        ``exclude``), read once per pytest process."""
        if self._claims is None:
            from physverify.gate.discovery import discover

            self._claims = {}
            for folder, exclude in zip(self.folders, self.excludes):
                for path in discover(folder, exclude):
                    self._claims.setdefault(path.resolve(), folder)
        return self._claims

    @pytest.hookimpl(wrapper=True)
    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector
                            ) -> Generator[None, list[pytest.Collector], list[pytest.Collector]]:
        """pytest's own collectors of the file, a claim's or a spec's Module (which would import it) replaced
        by ours."""
        collected = yield
        folder = self.claims().get(file_path.resolve()) if self.folders else None
        if folder is not None:  # never imported here: a claim runs in its child only
            kept = [node for node in collected if not isinstance(node, pytest.Module)]
            return [*kept, ClaimFile.from_parent(parent, path=file_path, folder=folder, baseline=self.baseline)]
        if file_path.match(SPEC_GLOB):
            kept = [node for node in collected if not isinstance(node, pytest.Module)]
            return [*kept, SpecFile.from_parent(parent, path=file_path)]
        return collected


def _exclude(folder: Path) -> tuple[str, ...]:
    """physverify.yaml's ``exclude`` globs of ``folder``; a bad file is a usage error in one line, as replay's."""
    from physverify.gate.config import load_config
    from physverify.errors import PhysverifyError

    try:
        return tuple(load_config(folder).exclude)
    except PhysverifyError as exc:
        raise pytest.UsageError(f"--claims {folder}: {exc}") from None


# --- claims -------------------------------------------------------------------------------
class ClaimFile(pytest.File):
    """A claim file: one item, named after the file."""

    def __init__(self, *, folder: Path, baseline: str | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.folder, self.baseline = folder, baseline

    def collect(self) -> Iterator[pytest.Item]:
        yield ClaimItem.from_parent(self, name=self.path.stem)


class ClaimItem(pytest.Item):
    """One claim, judged by replay for it alone, against the committed ledger; nothing is written."""

    def runtest(self) -> None:
        from physverify.gate import replay
        from physverify.report import text

        parent = self.parent
        assert isinstance(parent, ClaimFile)
        result = replay.replay([parent.folder], trusted=True, dry_run=True, jobs=1, baseline=parent.baseline,
                               only=[self.path])
        if not result.claims:
            pytest.skip(f"{self.path}: no longer binds CLAIM at its top level")
        run = result.claims[0]
        self.user_properties += [("verdict", run.verdict), ("transition", run.transition)]
        if run.failures:
            raise ClaimFailed(run)
        self.add_report_section("call", "physverify", text.replay_line(run))  # shown by -rA

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str | Any:
        """The transition in words, then the claim's replay line (evidence, gate failures); a physverify error in
        one line."""
        from physverify.errors import PhysverifyError
        from physverify.report import text
        from physverify.text import visible

        if isinstance(excinfo.value, ClaimFailed):
            run = excinfo.value.run
            return f"{visible(run.change())}\n{text.replay_line(run)}"
        if isinstance(excinfo.value, PhysverifyError):
            return f"physverify: {visible(str(excinfo.value))}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        return self.path, None, f"claim {self.name}"


# --- spec files -----------------------------------------------------------------------------
class SpecFile(pytest.File):
    """A spec file (``physverify run``): one item per check of its checks(), run together on first need."""

    _outcome: SpecOutcome | None = None

    def collect(self) -> Iterator[pytest.Item]:
        from physverify.commands import run_specs

        listed = run_specs.list_checks(self.path)
        if listed.load_error is not None:
            yield SpecCheck.from_parent(self, name="checks()", index=-1, problem=listed.load_error)
            return
        seen: dict[str, int] = {}
        for index, check in enumerate(listed.checks):
            label = str(check.get("label"))
            seen[label] = seen.get(label, 0) + 1
            name = label if seen[label] == 1 else f"{label} [{seen[label]}]"
            yield SpecCheck.from_parent(self, name=name, index=index, problem=None)

    def outcome(self) -> SpecOutcome:
        """The file's checks run once in this process, in one child, as ``physverify run`` runs them."""
        if self._outcome is None:
            from physverify.commands import run_specs

            self._outcome = run_specs.run_specs([self.path]).specs[0]
        return self._outcome


class SpecFailed(Exception):
    """A check whose status is not PASS, EXACT or SKIP, or a spec file that could not run: the line to show."""


class SpecCheck(pytest.Item):
    """One check of a spec file: PASS and EXACT pass, SKIP skips, any other status fails with its message."""

    def __init__(self, *, index: int, problem: str | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.index, self.problem = index, problem

    def runtest(self) -> None:
        from physverify.checks import EXACT, PASS, SKIP
        from physverify.text import visible

        if self.problem is not None:
            raise SpecFailed(f"LOAD-ERROR {visible(self.problem)}")
        parent = self.parent
        assert isinstance(parent, SpecFile)
        outcome = parent.outcome()
        if outcome.load_error is not None:
            raise SpecFailed(f"LOAD-ERROR {visible(outcome.load_error)}")
        if self.index >= len(outcome.checks):
            raise SpecFailed(f"{self.path}: checks() returned fewer checks when run than when collected")
        check = outcome.checks[self.index]
        status, message = check.get("status"), visible(check.get("message") or "")
        if status == SKIP:
            pytest.skip(message)
        if status not in (PASS, EXACT):
            raise SpecFailed(f"{visible(status)} {visible(check.get('family'))} {visible(check.get('label'))}: {message}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | Any:
        if isinstance(excinfo.value, SpecFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        return self.path, None, f"check {self.name}"
