"""Meeting scheduling: bookings outside the day stay on the time axis, marked where they are cut, and
generator parameters outside their meaning are refused in one line instead of looping forever."""

from __future__ import annotations

import signal

import numpy as np
import pytest

import mmnp
from mmnp.render import BLACK, class_colour

TASK = mmnp.get_task("meeting_scheduling")


@pytest.fixture(scope="module")
def data() -> dict:
    return TASK.generate("medium", 0).data


def _pixels(data: dict, solution: list) -> tuple[np.ndarray, float, float]:
    """The answer overlay's palette indices and its time axis' left and right x."""
    canvas = TASK.generator.render(data, 768, solution)
    assert canvas.clipped == []
    return np.asarray(canvas.image), *canvas.layout["time_axis"]


def test_bookings_outside_the_day_stay_on_the_time_axis(data):
    """Meeting 0 from 07:30 (wholly before the day), meeting 1 from 16:30 (half after it) and meeting 2
    from 06:00: nothing is drawn over the row labels or right of the axis, and each is seen on it."""
    empty, left, right = _pixels(data, [])
    outside, _, _ = _pixels(data, [(0, 0, "07:30"), (1, 1, "16:30"), (2, 2, "06:00")])
    edge_left, edge_right = int(left), int(right) + 3
    assert (outside[:, :edge_left] == empty[:, :edge_left]).all()  # the row labels untouched
    assert (outside[:, edge_right:] == empty[:, edge_right:]).all()  # nothing right of the axis
    on_axis = outside[:, edge_left:edge_right]
    for m in (0, 1, 2):
        assert (on_axis == class_colour(m)).sum() > 200, m  # a bar of each meeting, a stub where wholly outside


def test_a_cut_side_carries_an_arrowhead(data):
    """Meeting 3 (120 minutes) from 08:30 is cut at 09:00, from 15:30 at 17:00: black arrowheads at the cut
    ends, where the same bar inside the day (from 09:00, from 15:00) has its plain fill."""
    assert data["meetings"][3]["duration"] == 120
    _, left, right = _pixels(data, [])
    for cut, whole, strip in (("08:30", "09:00", slice(int(left) + 4, int(left) + 8)),  # past the outline
                              ("15:30", "15:00", slice(int(right) - 8, int(right) - 4))):
        marked = (_pixels(data, [(3, 3, cut)])[0][:, strip] == BLACK).sum()
        plain = (_pixels(data, [(3, 3, whole)])[0][:, strip] == BLACK).sum()
        assert marked > plain + 40, (cut, marked, plain)


@pytest.mark.parametrize("value", [1.5, -0.5])
def test_availability_outside_zero_to_one_is_refused_at_once(value):
    def stuck(*_):
        raise TimeoutError("generation did not end")

    previous = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(10)
    try:
        with pytest.raises(ValueError, match=rf"^meeting_scheduling availability={value:g}: it is the share of the "
                                             r"day each person is available, expected 0 to 1$"):
            TASK.generate("easy", 0, availability=value)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_a_day_that_ends_before_it_starts_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^meeting_scheduling day 09:00-08:00: expected day_end at least 30 "
                                         r"minutes after day_start$"):
        TASK.generate("easy", 0, day_end="08:00")


@pytest.mark.parametrize("day", [("08:15", "16:45"), ("09:00", "16:50")])
def test_a_day_off_the_half_hour_is_refused_as_the_picture_would_misplace_its_windows(day):
    """Windows are whole 30-minute slots from the day's start, and the image prompt says each lies on a grid
    line of the clock's half hours: from 08:15 every bar edge fell between two lines."""
    with pytest.raises(ValueError, match=rf"^meeting_scheduling day {day[0]}-{day[1]}: expected both on the hour or "
                                         r"the half hour"):
        TASK.generate("easy", 0, day_start=day[0], day_end=day[1])
    assert TASK.generate("easy", 0, day_start="08:30", day_end="16:00").data["day"] == ["08:30", "16:00"]


def test_a_meeting_across_touching_windows_is_inside_the_availability():
    """Availability is the union of a person's windows: 09:30-11:00 fits 09:00-10:00 plus 10:00-11:00,
    for the verifier and for the exact solver, while a meeting across a real gap is refused."""
    data = {"day": ["09:00", "12:00"], "rooms": [{"name": "A", "capacity": 2}],
            "people": [{"name": "Ana", "available": [["10:00", "11:00"], ["09:00", "10:00"]]},
                       {"name": "Ben", "available": [["09:00", "12:00"]]}],
            "meetings": [{"attendees": [0, 1], "duration": 90}]}
    objective, violations = TASK.verifier.check(data, [[0, 0, "09:30"]])
    assert not violations and objective == 2
    gap = dict(data, people=[{"name": "Ana", "available": [["09:00", "10:00"], ["10:15", "11:00"]]},
                             data["people"][1]])
    assert [v.kind for v in TASK.verifier.check(gap, [[0, 0, "09:30"]])[1]] == ["unavailable_attendee"]
    schedule, proven = TASK.solver.optimal(data, 5.0, [])  # 90 minutes fit only across 10:00
    assert proven and TASK.verifier.check(data, schedule) == (2, [])
    assert TASK.solver.optimal(gap, 5.0, []) == ([], True)
