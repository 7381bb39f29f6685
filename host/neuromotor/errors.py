"""The one exception type the CLI turns into a clean message and exit status 2."""


class UserError(Exception):
    """Bad input from the user: a typo, a missing file, a corrupt checkpoint."""
