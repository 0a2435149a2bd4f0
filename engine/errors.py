"""Errors the engine raises on purpose, each with a message a person can act on."""


class UserInputError(ValueError):
    """The input cannot be used (unknown word, not an image, over a limit).

    The message is shown to the person as it is: say what was wrong and how to fix it.
    """


class ModelUnavailable(RuntimeError):
    """No source of a model role could be loaded; the message says why for each."""
