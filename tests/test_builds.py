"""Background builds of users' indexes: one queued or running per user, on one thread."""

from __future__ import annotations

import threading

from engram.stores.builds import Builds


def test_one_build_per_user_at_a_time() -> None:
    builds = Builds("test-builds")
    release, again, ran = threading.Event(), threading.Event(), []

    def first() -> None:
        release.wait(10)
        ran.append("a1")

    def later() -> None:
        ran.append("a3")
        again.set()

    try:
        assert builds.start("a", first)
        assert "a" in builds
        assert not builds.start("a", lambda: ran.append("a2"))  # one of "a" is under way
        assert builds.start("b", lambda: ran.append("b"))  # another user queues behind it
        release.set()
        done = threading.Event()
        assert builds.start("c", done.set)
        assert done.wait(10)
        assert ran == ["a1", "b"] and "a" not in builds
        assert builds.start("a", later)  # finished: may build again
        assert again.wait(10)
        assert ran == ["a1", "b", "a3"]
        blocker = threading.Event()
        builds.start("d", lambda: blocker.wait(10))
        builds.start("e", lambda: ran.append("e"))
        threading.Timer(0.2, blocker.set).start()  # "d" runs on while close drops "e"
    finally:
        builds.close()  # waits for the running build, drops the queued one
    assert "e" not in ran
