"""The YAML loader physverify.yaml is read with: PyYAML's safe loader, narrowed (issue 13, item 9).

A module of its own so that PyYAML is imported only when a physverify.yaml is read.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import yaml

from physverify.text import short_repr


class Refused(yaml.MarkedYAMLError):
    """A construct SettingsLoader will not read; ``problem`` is the whole message."""


class SettingsLoader(yaml.SafeLoader):
    """The safe loader without anchors, aliases and explicit tags, and with each key allowed once.

    An alias shares one object, so nine nested aliases of nine items each make a value of
    9**9 items that is cheap to load and ruinous to print or walk (issue 13, item 9).
    Settings have no use for them, nor for tags: PyYAML's constructors crash on a tag with
    a value that does not fit it (`!!float` alone raises IndexError). A key given twice
    would silently keep the last value.
    """

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:
        event = self.peek_event()
        anchor = event.anchor if isinstance(event, (yaml.AliasEvent, yaml.NodeEvent)) else None
        if anchor is not None:
            raise Refused(problem=f"anchors and aliases (&{anchor}) are not allowed", problem_mark=event.start_mark)
        tag = getattr(event, "tag", None)
        if tag is not None:
            raise Refused(problem=f"tags ({short_repr(tag)}) are not allowed", problem_mark=event.start_mark)
        return super().compose_node(parent, index)

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, TypeError, OverflowError) as exc:  # e.g. the date 2001-13-45
            raise Refused(problem=f"{short_repr(node.value)} cannot be read ({exc})", problem_mark=node.start_mark) from None

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, Hashable) and key in seen:
                raise Refused(problem=f"the key {short_repr(key)} is given twice", problem_mark=key_node.start_mark)
            if isinstance(key, Hashable):
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


SettingsLoader.add_constructor("tag:yaml.org,2002:map", SettingsLoader.construct_yaml_map)
