"""Which machines the health check reports lost: a dead or restarted actor once, again only after a repair."""

from vipu.workers.machine_failures import FailureWatch


def watch() -> tuple[FailureWatch, list]:
    reported: list = []
    return FailureWatch(reported.append), reported


def test_a_dead_or_restarted_machine_is_reported_once_until_repaired():
    w, reported = watch()
    w.brought_up([0, 1, 2])
    assert w.check({0: {"alive": True, "restarts": 0}, 1: {"alive": True, "restarts": 0}}) == []
    assert w.check({0: {"alive": False}, 1: {"alive": True, "restarts": 1}, 2: {"alive": True}}) == [0, 1]
    assert w.check({0: {"alive": False}, 1: {"alive": True, "restarts": 1}}) == []  # already said
    w.repaired([1])
    assert w.check({1: {"alive": True, "restarts": 1}}) == []  # the restart it was repaired after is old news
    assert w.check({1: {"alive": True, "restarts": 2}}) == [1]
    assert reported == [[0, 1], [1]]


def test_a_stopping_controller_reports_nothing_it_killed_itself():
    w, reported = watch()
    w.brought_up([3])
    assert w.check({3: {"alive": False}}, report=False) == [3]
    assert reported == []
    assert w.check({3: {"alive": False}}) == [3]  # not reported then, so still news
    assert reported == [[3]]


def test_a_new_process_is_a_restart_even_before_rays_count_says_so():
    w, reported = watch()
    w.brought_up([0])
    assert w.check({0: {"alive": True, "restarts": 0, "node": "n1", "pid": 100}}) == []
    assert w.check({0: {"alive": True, "restarts": 0, "node": "n1", "pid": 100}}) == []
    assert w.check({0: {"alive": True, "restarts": 0, "node": "n1", "pid": 200}}) == [0]
    assert w.check({0: {"alive": True, "restarts": 1, "node": "n1", "pid": 200}}) == []  # the same restart
    w.repaired([0])
    assert w.check({0: {"alive": True, "restarts": 1, "node": "n2", "pid": 300}}) == []  # its next actor
    assert w.check({0: {"alive": True, "restarts": 1, "node": "n1", "pid": 300}}) == [0]  # same pid, other node
    assert reported == [[0], [0]]


def test_a_repair_takes_the_actors_report_then_as_the_normal_so_the_next_restart_is_seen_at_once():
    w, reported = watch()
    w.brought_up([0])
    assert w.check({0: {"alive": False}}) == [0]  # killed: Ray restarts it
    w.repaired([0], {0: {"alive": True, "restarts": 1, "node": "n1", "pid": 200}})  # the restart, before any check
    assert w.check({0: {"alive": True, "restarts": 1, "node": "n1", "pid": 200}}) == []  # not a new loss
    assert w.check({0: {"alive": True, "restarts": 1, "node": "n1", "pid": 300}}) == [0]  # killed again: seen
    assert reported == [[0], [0]]
