"""What a scan finds: one ``Finding`` per suspect, one ``Note`` per file it could not read.

A finding is a suspicion, not a verdict: it names what was read, what it should be and the
reference, and ``physverify scan --claims`` turns it into a claim template whose checks,
once written, settle it (docs/scan.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from physverify.verdict import ExitCode

RULES = {
    "rk-order": "A Runge-Kutta method whose coefficients do not have the order it states",
    "rk-consistency": "A Runge-Kutta table whose nodes differ from the row sums of A, or whose weights do not sum to 1",
    "grid-spacing": "A grid spacing that does not match its grid (end point included or not)",
    "constant": "A literal near a CODATA constant, bound to its name, but not equal to it within its rounding",
    "inverse-pair": "Two functions that look like inverses: worth a round-trip claim",
}
# A suggestion, not a suspect: shown and counted, but it does not fail the scan.
INFORMATIONAL = frozenset({"inverse-pair"})

BUTCHER = "Butcher, Numerical Methods for ODEs, sec. 31x: order conditions"
HAIRER = "Hairer, Norsett, Wanner, Solving ODEs I, sec. II.1-II.2"
CODATA = "CODATA 2022 via scipy.constants"


@dataclass(frozen=True)
class Finding:
    rule: str
    file: str  # as found under the PATH given, POSIX separators
    line: int  # 1-based
    message: str
    name: str = ""  # the function, class or variable the finding is about
    expected_order: int | None = None  # rk-order: the order the method states
    reference: str = ""
    silenced: str | None = None  # the reason, when an ignore comment or entry silences it

    @property
    def informational(self) -> bool:
        return self.rule in INFORMATIONAL


@dataclass(frozen=True)
class Note:
    file: str
    message: str


@dataclass(frozen=True)
class ScanResult:
    findings: tuple[Finding, ...]
    notes: tuple[Note, ...]
    files: int
    silenced: tuple[Finding, ...] = ()
    claims_written: tuple[str, ...] = field(default_factory=tuple)

    @property
    def exit_code(self) -> int:
        return ExitCode.FINDING if any(not f.informational for f in self.findings) else ExitCode.OK
