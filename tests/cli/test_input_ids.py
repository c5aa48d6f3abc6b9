"""Ids for the calls of a `toolnursery run` input that came without one."""

from __future__ import annotations

from toolnursery._cli._input import parse_calls


def test_a_made_up_id_never_takes_an_id_the_input_gave() -> None:
    text = (
        '[{"name": "a", "arguments": "{}"},'
        ' {"id": "call_1", "name": "b", "arguments": "{}"},'
        ' {"type": "tool_use", "name": "c", "input": {}},'
        ' {"type": "tool_use", "id": "toolu_3", "name": "d", "input": {}}]'
    )
    ids = [call.id for call in parse_calls(text, "<stdin>")]
    assert ids == ["call_1_1", "call_1", "toolu_3_1", "toolu_3"]
    assert len(set(ids)) == len(ids)
