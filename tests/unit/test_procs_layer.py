"""dpkit.plumbing.procs with no child: a stdout line is a record or a log line, a timeout may be
infinite (not NaN), free ports bind on every interface and are never handed out twice, and
none left says what to do. Real children: tests/process/test_procs_layer.py."""

import math

import pytest

from dpkit.plumbing import checks, procs


@pytest.mark.parametrize(
    "line, expected",
    [
        ('{"step": 3, "loss": 0.5}', {"step": 3, "loss": 0.5}),
        ('  {"ready": "ps:0"}  ', {"ready": "ps:0"}),
        ('50%\r100%\r{"event": "window"}', {"event": "window"}),  # after a progress bar
        ("ready", None),
        ("[1, 2]", None),
        ("{not json", None),
        ("", None),
    ],
)
def test_a_stdout_line_is_a_record_or_a_log_line(line, expected):
    assert procs.parse_record(line) == expected


def test_positive_takes_infinity_to_switch_a_timeout_off_but_not_nan():
    assert checks.positive_seconds(math.inf, "timeout") == math.inf
    for bad in (0, -1.0, math.nan, True, "5"):
        with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
            checks.positive_seconds(bad, "timeout")


def test_a_free_port_binds_on_every_interface_and_is_never_handed_out_twice():
    import socket

    ports = [procs.free_port() for _ in range(20)]
    assert len(set(ports)) == 20, f"a port was handed out twice: {sorted(ports)}"
    for port in ports[:3]:
        # a TF server listens on all interfaces whatever its address says; the OS decides
        for host, kind in [("127.0.0.1", socket.SOCK_STREAM), ("", socket.SOCK_STREAM)]:
            with socket.socket(socket.AF_INET, kind) as s:
                s.bind((host, port))
                s.listen()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("", port))


def test_no_free_port_left_says_what_to_do(monkeypatch):
    import portpicker

    def none_left():
        raise portpicker.NoFreePortFoundError()

    monkeypatch.setattr(portpicker, "pick_unused_port", none_left)
    with pytest.raises(RuntimeError, match="no free port left.*restart the kernel"):
        procs.free_port()
