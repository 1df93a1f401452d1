"""What can go wrong in the core: a request that is not one, a spec that breaks a rule, an
environment the kubelet would refuse, input to `render` that is not MXJobs."""


class BadRequest(Exception):
    """Not a sync request at all: answered with a 4xx, and Metacontroller touches nothing."""


class SpecError(Exception):
    """The spec breaks a rule; the message names the field and the rule."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class EnvError(Exception):
    """The kubelet would not start the container (CreateContainerConfigError), or kubeenv does
    not model the variable's source."""


class RenderError(Exception):
    """The input is not a set of MXJob manifests."""
