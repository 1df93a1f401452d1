"""tune.py's pieces that need no MXNet: what it reads of MX_CONFIG, its options, the tracker's
board, and the Tuner and the tracker over real HTTP with a stand-in TunerServer."""

import argparse
import json
import threading
import time
from typing import Any

import pytest
import tracker
import tune

from localcluster.ports import free_port

TRACKER = {"port": 9091, "url": "auto-tuning-tunertracker-0"}
CLUSTER = {
    "tuner": [{"port": 9091, "url": "auto-tuning-tuner-0"}],
    "tunerserver": [{"port": 9091, "url": f"auto-tuning-tunerserver-{i}"} for i in range(2)],
    "tunertracker": [TRACKER],
}
LABELS = {"tuner": "", "tunerserver": "cpu", "tunertracker": ""}


def mx_config(cluster: dict[str, Any], labels: dict[str, str], kind: str, index: int) -> str:
    """MX_CONFIG as the hook writes it (docs/behaviour.md)."""
    whole = {"cluster": cluster, "labels": labels, "task": {"index": index, "type": kind}}
    return json.dumps(whole, sort_keys=True, separators=(",", ":"))


def test_each_role_reads_its_task_the_tracker_and_the_servers_key() -> None:
    environ = {"MX_CONFIG": mx_config(CLUSTER, LABELS, "tunerserver", 1)}
    assert tune.read_config(environ) == tune.Config(
        "tunerserver", 1, ("auto-tuning-tunertracker-0", 9091), "cpu"
    )


TRAIN = {"scheduler": [TRACKER], "worker": [TRACKER]}


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        pytest.param({}, "MX_CONFIG is not set", id="unset"),
        pytest.param({"MX_CONFIG": "{"}, "is not an MXTune job's", id="not-json"),
        pytest.param(
            {"MX_CONFIG": mx_config(TRAIN, {}, "worker", 0)}, "is not an MXTune job's", id="train"
        ),
        pytest.param(
            {"MX_CONFIG": mx_config(CLUSTER | {"tunertracker": [TRACKER] * 2}, LABELS, "tuner", 0)},
            "(one TunerTracker)",
            id="two-trackers",
        ),
    ],
)
def test_anything_but_an_mxtune_pods_mx_config_is_refused(
    environ: dict[str, str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert tune.main([], environ) == 1
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["--learning-rates=0.01,0"], id="zero-learning-rate"),
        pytest.param(["--hidden-sizes=0"], id="no-hidden-units"),
        pytest.param(["--epochs=0"], id="no-epochs"),
        pytest.param(["--threshold=1.5"], id="threshold-above-1"),
        pytest.param(["--timeout=0"], id="no-time"),
        pytest.param(["--hidden-sizes=4,x"], id="not-a-number"),
    ],
)
def test_bad_options_are_refused(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        tune.options(argv)
    assert exited.value.code == 2


def test_the_grid_is_every_learning_rate_with_every_hidden_size() -> None:
    args = tune.options(["--learning-rates=0.1,0.2", "--hidden-sizes=4,8", "--epochs=3"])
    assert [(t["lr"], t["hidden"], t["epochs"], t["key"]) for t in tune.grid(args, "k")] == [
        (0.1, 4, 3, "k"), (0.1, 8, 3, "k"), (0.2, 4, 3, "k"), (0.2, 8, 3, "k"),
    ]  # fmt: skip


def test_a_trial_goes_once_to_a_server_of_its_key() -> None:
    board = tracker.Board()
    board.register("tunerserver-0", "cpu")
    board.register("tunerserver-1", "a100")
    board.submit([{"key": "cpu", "lr": 0.1}])
    assert board.next_trial("tunerserver-1", 0) == {}
    assert board.next_trial("tunerserver-0", 0) == {"trial": {"key": "cpu", "lr": 0.1, "id": 0}}
    assert board.next_trial("tunerserver-0", 0) == {}


def test_results_are_pending_until_every_trial_has_one() -> None:
    board = tracker.Board()
    board.submit([{"key": "cpu"}, {"key": "cpu"}])
    board.report({"id": 1, "accuracy": 0.5})
    assert board.wait_results(0)["pending"] == 1
    board.report({"id": 0, "accuracy": 0.25})
    assert board.wait_results(0) == {
        "results": [{"id": 1, "accuracy": 0.5}, {"id": 0, "accuracy": 0.25}],
        "pending": 0,
        "servers": {},
    }


def test_stop_tells_each_server_at_its_next_request() -> None:
    board = tracker.Board()
    board.register("tunerserver-0", "cpu")
    assert board.stop(0) == {"told": [], "servers": ["tunerserver-0"]}
    assert board.stopped
    assert board.next_trial("tunerserver-0", 0) == {"stop": True}
    assert board.told == {"tunerserver-0"}


def test_a_server_that_never_registered_is_refused() -> None:
    with pytest.raises(ValueError, match="tunerserver-3 has not registered"):
        tracker.Board().next_trial("tunerserver-3", 0)


def stand_in_server(address: tuple[str, int], key: str) -> None:
    """A TunerServer that trains nothing (no MXNet): each trial's accuracy is its learning rate."""
    client = tune.Client(address, time.monotonic() + 30)
    client.call("/register", {"server": "tunerserver-0", "key": key})
    while not (answer := client.call("/next", {"server": "tunerserver-0"})).get("stop"):
        if "trial" in answer:
            result = {**answer["trial"], "accuracy": answer["trial"]["lr"]}
            client.call("/result", result | {"server": "tunerserver-0"})


def decided(config: tune.Config, args: argparse.Namespace) -> str:
    """The Tuner's exit status, or why it gave up (then tune.py exits 1)."""
    try:
        return f"exit {tune.run_tuner(config, args)}"
    except tune.TuneError as error:
        return str(error)


@pytest.mark.parametrize(
    ("threshold", "outcome"),
    [
        pytest.param(0.5, "exit 0", id="best-reaches-it"),
        pytest.param(0.75, "the best accuracy 0.5000 is below 0.75", id="best-misses-it"),
    ],
)
def test_the_tuner_runs_its_grid_through_the_tracker_and_decides(
    threshold: float, outcome: str, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    boards: list[tracker.Board] = []
    served = threading.Thread(target=lambda: boards.append(tracker.serve(port, 30)))
    served.start()
    server = threading.Thread(target=stand_in_server, args=(("127.0.0.1", port), "cpu"))
    server.start()
    config = tune.Config("tuner", 0, ("127.0.0.1", port), "cpu")
    args = tune.options(
        ["--learning-rates=0.25,0.5", "--hidden-sizes=8", f"--threshold={threshold}"]
    )
    assert decided(config, args) == outcome
    server.join(30)
    served.join(30)
    out = capsys.readouterr().out.splitlines()
    assert out[1:4] == [
        "trial 0  lr 0.25    hidden   8  accuracy 0.2500  on tunerserver-0",
        "trial 1  lr 0.5     hidden   8  accuracy 0.5000  on tunerserver-0",
        "best: trial 1  accuracy 0.5000",
    ]
    assert boards[0].stopped
    assert boards[0].told == {"tunerserver-0"}


@pytest.mark.slow
def test_a_server_given_neither_a_trial_nor_a_stop_gives_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tracker, "POLL_SECONDS", 0.1)
    port = free_port()
    served = threading.Thread(target=tracker.serve, args=(port, 30))
    served.start()
    config = tune.Config("tunerserver", 0, ("127.0.0.1", port), "cpu")
    with pytest.raises(tune.TuneError, match=r"^neither a trial nor a stop within 0\.5 s$"):
        tune.run_server(config, tune.options(["--timeout=0.5"]))
    tune.Client(config.tracker, time.monotonic() + 5).call("/stop", {})
    served.join(30)
    assert not served.is_alive()
