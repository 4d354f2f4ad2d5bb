"""The exceptions of the syncc package: one base, one per kind of failure."""


class SynccError(Exception):
    """Anything the syncc package reports."""


class CompileError(SynccError):
    """syncc rejected the operator file or the options; the message holds
    syncc's own diagnostics (file:line:col: error: ...)."""

    def __init__(self, message, exit_status=None):
        super().__init__(message)
        self.exit_status = exit_status


class ArgumentError(SynccError, ValueError):
    """A call's arguments (dtype, shape, device, layout) or the process's
    world do not fit the compiled operator.  Raised before any GPU work."""


class RuntimeFailure(SynccError, RuntimeError):
    """libsyncrt failed (syn_error's message).  `status` is the syn_status
    name (SYN_ETIMEOUT, ...)."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status
