"""The resource-conflict table and the grouping rules, on their own (no trio)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolnursery import ResourceKey
from toolnursery._machine._conflicts import ConflictTable, conflicting_resources, group_heads

R, W = ResourceKey.read, ResourceKey.write


def test_readers_share_a_resource_and_a_writer_waits_for_all_of_them() -> None:
    table: ConflictTable[str] = ConflictTable()
    assert table.add("r1", [R("a")]) == []
    assert table.add("r2", [R("a")]) == []
    assert table.add("w1", [W("a")]) == ["r1", "r2"]
    assert table.add("r3", [R("a")]) == ["w1"]  # a later reader waits for the writer
    assert table.holders("a") == {"r1": False, "r2": False, "w1": True, "r3": False}


def test_other_resources_never_conflict_and_each_blocker_is_named_once() -> None:
    table: ConflictTable[str] = ConflictTable()
    table.add("w1", [W("a"), W("b")])
    assert table.add("w2", [W("c")]) == []
    assert table.add("w3", [W("a"), W("b")]) == ["w1"]


def test_a_removed_call_blocks_nobody_and_empty_resources_are_dropped() -> None:
    table: ConflictTable[str] = ConflictTable()
    table.add("w1", [W("a")])
    table.remove("w1", [W("a")])
    assert len(table) == 0
    assert table.add("w2", [W("a")]) == []
    table.remove("ghost", [W("z")])  # removing what is not there does nothing


def test_conflicting_resources_needs_the_same_resource_and_a_write() -> None:
    assert conflicting_resources([R("a"), W("b")], [R("a"), R("b"), W("c")]) == ["b"]
    assert conflicting_resources([R("a")], [W("a")]) == ["a"]
    assert conflicting_resources([R("a")], [R("a")]) == []


def test_group_heads_start_a_group_after_every_exclusive_call() -> None:
    modes = ["parallel", "keyed", "exclusive", "parallel", "parallel", "exclusive", "exclusive"]
    assert group_heads(modes) == [0, 0, 0, 3, 3, 3, 6]
    assert group_heads([]) == []


# Canonical keys, as classification makes them: one key per resource.
keys = st.dictionaries(st.sampled_from("abc"), st.sampled_from(["read", "write"]), min_size=1).map(
    lambda modes: [ResourceKey(resource, mode) for resource, mode in sorted(modes.items())]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(keys, st.booleans()), max_size=12))
def test_the_table_answers_exactly_the_earlier_unfinished_conflicting_calls(
    script: list[tuple[list[ResourceKey], bool]],
) -> None:
    """Against a brute-force model: blockers are the unfinished earlier calls sharing a
    resource with at least one write; ``finish`` removes a call right after adding."""
    table: ConflictTable[int] = ConflictTable()
    live: dict[int, list[ResourceKey]] = {}
    for index, (call_keys, finish) in enumerate(script):
        expected = [
            other
            for other, other_keys in live.items()
            if conflicting_resources(other_keys, call_keys)
        ]
        assert sorted(table.add(index, call_keys)) == sorted(expected)
        live[index] = call_keys
        if finish:
            table.remove(index, call_keys)
            del live[index]
