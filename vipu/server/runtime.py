"""What every servicer shares: the controller, the one lock that serialises domain calls, the store, and the
address jobs are told to reach the controller at."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from vipu.errors import InvalidArgument
from vipu.partition.controller import Controller
from vipu.partition.pod import PodConfig, load_pod
from vipu.partition.state import KINDS
from vipu.store import Store
from vipu.clock import WallClock

USER_METADATA = "x-vipu-user"  # who the caller says it is; checked against a token once --secure lands


@dataclass
class Runtime:
    controller: Controller
    store: Store
    api_host: str
    api_port: int
    lock: threading.Lock = field(default_factory=threading.Lock)

    def caller(self, context) -> str:
        for key, value in context.invocation_metadata() or ():
            if key == USER_METADATA:
                return value
        return ""


def open_state(pod_name: str, state_dir: Path) -> tuple[PodConfig, Store, Controller]:
    """Open (or create) the state folder for `pod_name` and rebuild the controller from it."""
    pod = load_pod(pod_name)
    store = Store(Path(state_dir) / "vipu.sqlite3")
    stored = store.get_meta("pod")
    if stored is None:
        store.set_meta("pod", pod.model_dump(mode="json"))
    elif stored != pod.model_dump(mode="json"):
        store.close()
        raise InvalidArgument(
            f"state folder {state_dir} belongs to pod {stored.get('name')!r} with a different configuration than"
            f" --pod {pod_name}; start with that pod, or give a new --state-dir"
        )
    controller = Controller(pod, store, WallClock().now, store.load(KINDS))
    return pod, store, controller
