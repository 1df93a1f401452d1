"""What the hook benchmark measured, by job size: read by its report and its plots."""

from dataclasses import dataclass, field

from scripts.bench.client import Run
from scripts.bench.workloads import Payload, Size


@dataclass
class SizeResult:
    payload: Payload
    phases: dict[str, list[float]] = field(default_factory=dict)
    runs: dict[tuple[str, int], Run] = field(default_factory=dict)
    same_answer: bool = True

    def run(self, kind: str, concurrency: int) -> Run:
        return self.runs.setdefault((kind, concurrency), Run())


@dataclass
class Result:
    sizes: list[SizeResult]
    memory: dict[str, list[tuple[int, int]]]
    memory_size: Size
    seconds: float = 0.0
