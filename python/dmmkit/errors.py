"""The one exception the CLI turns into a message and an exit status."""


class DmmkitError(Exception):
    """A problem the user can act on.  `status` is the process exit status:
    2 for bad input (unknown allocator, unreadable trace, refused config),
    1 for a run-time failure (a tool crashed, a build failed)."""

    def __init__(self, message: str, status: int = 2):
        super().__init__(message)
        self.message = message
        self.status = status

    def __str__(self) -> str:
        return self.message


BAD_INPUT = 2
RUNTIME = 1
