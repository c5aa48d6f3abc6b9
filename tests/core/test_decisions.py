"""Policy decisions: what a listener may return (reference B066)."""

from __future__ import annotations

import msgspec
import pytest

from toolnursery import (
    Accept,
    Allow,
    Ask,
    Block,
    Deny,
)


@pytest.mark.spec("B066")
def test_decisions_carry_no_argument_field() -> None:
    """B066: policy cannot rewrite arguments — no decision has an arguments field."""
    for decision_type in (Allow, Deny, Ask, Accept, Block):
        fields = {f.name for f in msgspec.structs.fields(decision_type)}
        assert "arguments" not in fields
        assert "args" not in fields
