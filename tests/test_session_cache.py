"""The suite's shared values (`support.SessionCache`): made once, and never queued behind."""

from __future__ import annotations

import fcntl
import pickle
import threading
from collections.abc import Callable
from pathlib import Path

from support import SessionCache


def test_a_value_is_made_once_and_read_by_every_other_worker(tmp_path: Path) -> None:
    made: list[str] = []

    def make() -> dict[str, int]:
        made.append("x")
        return {"x": 1}

    assert SessionCache(tmp_path).get("x", make) == {"x": 1}
    # Another worker's cache on the same folder reads it instead of making it again.
    assert SessionCache(tmp_path).get("x", make) == {"x": 1}
    assert made == ["x"]
    assert SessionCache(tmp_path).ready("x") == {"x": 1}
    assert SessionCache(tmp_path).ready("y") is None


def test_get_all_makes_the_free_values_before_waiting_for_a_busy_one(tmp_path: Path) -> None:
    made: list[str] = []
    last_made = threading.Event()

    def maker(key: str) -> Callable[[], str]:
        def make() -> str:
            made.append(key)
            if key == "c":
                last_made.set()
            return key.upper()

        return make

    cache = SessionCache(tmp_path)
    makers = {key: maker(key) for key in ("a", "b", "c")}
    found: dict[str, str] = {}
    # Another worker is making "a": it holds a's lock.
    with (tmp_path / "a.lock").open("w") as other:
        fcntl.flock(other, fcntl.LOCK_EX)
        asking = threading.Thread(target=lambda: found.update(cache.get_all(makers)))
        asking.start()
        assert last_made.wait(60)
        assert made == ["b", "c"]  # not queued behind "a"
        assert not found
        (tmp_path / "a.pickle").write_bytes(pickle.dumps("made elsewhere"))
    asking.join(30)
    assert found == {"a": "made elsewhere", "b": "B", "c": "C"}
    assert list(found) == ["a", "b", "c"]
    assert made == ["b", "c"]


def test_get_all_hands_the_free_values_to_make_many_at_once(tmp_path: Path) -> None:
    asked: list[list[str]] = []

    def make_many(keys: list[str]) -> dict[str, str]:
        asked.append(keys)
        return {key: f"{key} side by side" for key in keys}

    first = SessionCache(tmp_path)
    first.get("a", lambda: "made before")
    makers = {key: (lambda: "one by one") for key in ("a", "b", "c")}
    found = SessionCache(tmp_path).get_all(makers, make_many)
    assert asked == [["b", "c"]]  # "a" was made already
    assert found == {"a": "made before", "b": "b side by side", "c": "c side by side"}
    # Written for every other worker.
    assert SessionCache(tmp_path).ready("c") == "c side by side"
