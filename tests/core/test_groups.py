"""Reducing our nurseries' exception groups to what a caller should see."""

from __future__ import annotations

import pytest
import trio

from toolnursery._core._groups import collapse, innermost, leaves, only_cancelled


async def cancelled() -> trio.Cancelled:
    """A real ``trio.Cancelled`` (it has no public constructor)."""
    with trio.CancelScope() as scope:
        scope.cancel()
        try:
            await trio.lowlevel.checkpoint()
        except trio.Cancelled as exc:
            return exc
    raise AssertionError("the checkpoint was not cancelled")


def group(*excs: BaseException) -> BaseExceptionGroup[BaseException]:
    return BaseExceptionGroup("nursery", list(excs))


def test_leaves_flattens_nested_groups_in_order() -> None:
    a, b, c, d = (ValueError(n) for n in "abcd")
    assert leaves(group(a, group(b, group(c)), d)) == [a, b, c, d]
    assert leaves(a) == [a]


def test_collapse_returns_a_lone_exception_however_deep() -> None:
    error = ValueError("boom")
    assert collapse(group(group(group(error)))) is error
    assert collapse(group(group(error)), drop_cancelled=True) is error


def test_collapse_keeps_a_group_of_several() -> None:
    outer = group(ValueError("a"), group(KeyError("b")))
    assert collapse(outer) is outer
    assert collapse(outer, drop_cancelled=True) is outer


async def test_collapse_looks_past_cancellations_only_when_asked() -> None:
    error = ValueError("boom")
    outer = group(await cancelled(), group(error, await cancelled()))
    assert collapse(outer) is outer  # the CLI: several exceptions, the group
    assert collapse(outer, drop_cancelled=True) is error  # the batch: the failure


async def test_a_group_of_only_cancellations_collapses_to_the_first() -> None:
    first, second = await cancelled(), await cancelled()
    outer = group(group(first), second)
    assert collapse(outer, drop_cancelled=True) is first
    assert collapse(outer) is outer


def test_innermost_unwraps_one_member_groups_only() -> None:
    error = ValueError("boom")
    assert innermost(group(group(error))) is error
    inner = group(ValueError("a"), KeyError("b"))
    # The mount hands on the several exceptions themselves, without the wrappers
    # around them; collapse would keep the outermost group.
    assert innermost(group(group(inner))) is inner
    assert collapse(group(group(inner))) is not inner
    assert innermost(error) is error


async def test_only_cancelled() -> None:
    cancel = await cancelled()
    assert only_cancelled(cancel)
    assert only_cancelled(group(group(cancel), await cancelled()))
    assert not only_cancelled(group(cancel, ValueError("boom")))
    assert not only_cancelled(ValueError("boom"))


@pytest.mark.parametrize("drop_cancelled", [False, True])
def test_collapse_never_returns_a_group_member_that_is_a_group(drop_cancelled: bool) -> None:
    outer = group(group(ValueError("a"), ValueError("b")))
    assert collapse(outer, drop_cancelled=drop_cancelled) is outer
