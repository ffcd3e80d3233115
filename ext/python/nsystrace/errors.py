"""The one exception every module of the command raises for a mistake the user can fix."""


class Failure(Exception):
    """A mistake to report in one line (the command exits with status 2). The message names the file it is about."""
