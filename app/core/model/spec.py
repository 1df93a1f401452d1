"""Typed model of the MXJob spec: the part of the object this project owns."""

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr


class ReplicaType(StrEnum):
    """Replica types in their canonical spelling, in the order children are listed."""

    SCHEDULER = "Scheduler"
    SERVER = "Server"
    WORKER = "Worker"
    TUNER_TRACKER = "TunerTracker"
    TUNER_SERVER = "TunerServer"
    TUNER = "Tuner"

    @property
    def lowered(self) -> str:
        # str's own method, not enum's slower `self.value`: every child's name is made from
        # this (docs/performance.md#fourth-pass-sync-for-the-typical-job-again).
        return self.lower()


TRAIN_TYPES = (ReplicaType.SCHEDULER, ReplicaType.SERVER, ReplicaType.WORKER)
TUNE_TYPES = (ReplicaType.TUNER_TRACKER, ReplicaType.TUNER_SERVER, ReplicaType.TUNER)
ORDER = {t: n for n, t in enumerate(ReplicaType)}
# Replica types by their lower-case spelling, as child names and labels write them.
BY_LOWERED = {t.lowered: t for t in ReplicaType}


class RestartPolicy(StrEnum):
    ALWAYS = "Always"
    ON_FAILURE = "OnFailure"
    NEVER = "Never"
    EXIT_CODE = "ExitCode"


class CleanPodPolicy(StrEnum):
    ALL = "All"
    RUNNING = "Running"
    NONE = "None"


class SuccessPolicy(StrEnum):
    """mxnet-operator v1beta1's `spec.successPolicy`: which replicas' success ends a train job
    that has a Scheduler (docs/behaviour.md#status)."""

    DEFAULT = ""
    ALL_WORKERS = "AllWorkers"


# A replica type's count where the spec gives none.
DEFAULT_REPLICAS = 1


class _Model(BaseModel):
    # Fields we do not own are ignored here and passed through from the raw object.
    model_config = ConfigDict(extra="ignore", frozen=True)


class ReplicaSpec(_Model):
    replicas: StrictInt = Field(default=DEFAULT_REPLICAS, ge=0)
    restartPolicy: RestartPolicy = RestartPolicy.NEVER
    template: dict[str, Any]
    label: StrictStr | None = None


class SchedulingPolicy(_Model):
    # scheduler-plugins refuses a PodGroup with minMember 0.
    minAvailable: StrictInt | None = Field(default=None, ge=1)
    queue: StrictStr | None = None
    minResources: dict[str, StrictStr | StrictInt | float] | None = None
    priorityClass: StrictStr | None = None
    scheduleTimeoutSeconds: StrictInt | None = Field(default=None, ge=0)


class RunPolicy(_Model):
    cleanPodPolicy: CleanPodPolicy = CleanPodPolicy.RUNNING
    ttlSecondsAfterFinished: StrictInt | None = Field(default=None, ge=0)
    activeDeadlineSeconds: StrictInt | None = Field(default=None, ge=0)
    backoffLimit: StrictInt | None = Field(default=None, ge=0)
    suspend: StrictBool = False
    schedulingPolicy: SchedulingPolicy | None = None


class MXJobSpec(_Model):
    jobMode: Literal["MXTrain", "MXTune"] = "MXTrain"
    mxReplicaSpecs: dict[ReplicaType, ReplicaSpec]
    runPolicy: RunPolicy = RunPolicy()
    successPolicy: SuccessPolicy = SuccessPolicy.DEFAULT

    def replicas(self, rtype: ReplicaType) -> int:
        spec = self.mxReplicaSpecs.get(rtype)
        return spec.replicas if spec else 0

    def types(self) -> list[ReplicaType]:
        """Replica types present in the spec, in canonical order."""
        return sorted(self.mxReplicaSpecs, key=ORDER.__getitem__)
