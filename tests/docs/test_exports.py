"""The public API: every name in ``__all__`` is importable and re-exported as itself."""

from __future__ import annotations

import toolnursery


def test_all_is_sorted_and_unique() -> None:
    names = toolnursery.__all__
    assert len(names) == len(set(names))
    assert list(names) == sorted(names, key=lambda n: (not n.isupper(), n[0].islower(), n))


def test_every_exported_name_resolves() -> None:
    for name in toolnursery.__all__:
        assert hasattr(toolnursery, name), name


def test_no_public_name_is_missing_from_all() -> None:
    public = {n for n in vars(toolnursery) if not n.startswith("_")}
    modules = {n for n in public if type(getattr(toolnursery, n)).__name__ == "module"}
    assert public - modules - {"annotations"} == set(toolnursery.__all__)


def test_exported_objects_live_in_private_modules() -> None:
    for name in toolnursery.__all__:
        module = getattr(getattr(toolnursery, name), "__module__", None)
        if isinstance(module, str) and module.startswith("toolnursery"):
            assert module.split(".")[1].startswith("_"), (name, module)
