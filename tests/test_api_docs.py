"""docs/api.md lists every public name with the signature the code has, and its examples run (issue 9)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import physverify

API = Path(__file__).resolve().parent.parent / "docs" / "api.md"
_HEADING = re.compile(r"^### (.+)$", re.MULTILINE)
_NAME = re.compile(r"`([A-Za-z_][A-Za-z_0-9]*)(\(.*?\))?`")
_EXAMPLE = re.compile(r"```python\n(.*?)```", re.DOTALL)


def documented() -> dict[str, str | None]:
    """Each name in a heading of docs/api.md, with the parameter list written there (or None)."""
    names: dict[str, str | None] = {}
    for heading in _HEADING.findall(API.read_text(encoding="utf-8")):
        for name, params in _NAME.findall(heading):
            names[name] = params or None
    return names


def written(obj: object) -> str:
    """The parameter list as the page writes it: names, kinds and defaults, no annotations."""
    parts: list[str] = []
    star = False
    for p in inspect.signature(obj).parameters.values():  # type: ignore[arg-type]
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        if p.kind is p.VAR_POSITIONAL:
            parts.append(f"*{p.name}")
            star = True
        elif p.kind is p.VAR_KEYWORD:
            parts.append(f"**{p.name}")
        elif p.default is p.empty:
            parts.append(p.name)
        else:
            default = "()" if repr(p.default) == "<factory>" else repr(p.default)
            parts.append(f"{p.name}={default}")
    return "(" + ", ".join(parts) + ")"


def test_every_public_name_is_documented_and_every_documented_name_is_public() -> None:
    assert set(documented()) == set(physverify.__all__)


@pytest.mark.parametrize("name", sorted(name for name, params in documented().items() if params is not None))
def test_the_documented_signature_is_the_code_s(name: str) -> None:
    assert documented()[name] == written(getattr(physverify, name))


def test_a_callable_without_a_documented_signature_is_a_class_that_takes_no_fields() -> None:
    for name, params in documented().items():
        obj = getattr(physverify, name)
        if params is None and inspect.isfunction(obj):
            pytest.fail(f"docs/api.md gives no signature for the function {name}")


def sections() -> list[tuple[str, str]]:
    """(heading, its example) for every section of docs/api.md."""
    text = API.read_text(encoding="utf-8")
    heads = list(_HEADING.finditer(text))
    out = []
    for head, nxt in zip(heads, [*heads[1:], None]):
        body = text[head.end(): nxt.start() if nxt else len(text)]
        examples = _EXAMPLE.findall(body)
        out.append((head.group(1), examples[0] if len(examples) == 1 else ""))
    return out


@pytest.mark.parametrize(("heading", "example"), sections(), ids=[h for h, _ in sections()])
def test_each_section_has_one_example_and_it_runs(heading: str, example: str) -> None:
    assert example, f"docs/api.md: the section {heading} needs exactly one python example"
    exec(compile(example, f"docs/api.md: {heading}", "exec"), {})  # noqa: S102 - the page's own examples


def test_the_confirm_init_template_points_at_this_page_and_names_only_public_functions(tmp_path: Path) -> None:
    """Issue 9: the template pointed at a spec section the user cannot see."""
    from physverify.gate.templates import write_template

    text = write_template(tmp_path / "claim.py", text="x", file="a.py", line=1).read_text(encoding="utf-8")
    assert "docs/api.md" in text
    for line in text.splitlines():
        if line.startswith("# from physverify import "):
            names = line.removeprefix("# from physverify import ").split(", ")
            assert set(names) <= set(documented()), names
