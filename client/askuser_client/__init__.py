"""askuser's client side, needing only httpx and nothing of the server's: the Python client
(``client``: ``AskUserClient``, ``AsyncAskUserClient``, ``verify_signature``) and the
``askuser`` command (``cli``): ``askuser hook`` for an agent's hooks (``hook``),
``askuser install`` (``install``) and ``askuser doctor`` (``doctor``)."""

from askuser_client.client import (
    AskUserClient,
    AskUserError,
    AsyncAskUserClient,
    AuthError,
    ConflictError,
    Extension,
    NotFoundError,
    RefusedError,
    ServerUnavailableError,
    ValidationError,
    verify_signature,
    webhook_result,
)

__all__ = [
    "AskUserClient",
    "AskUserError",
    "AsyncAskUserClient",
    "AuthError",
    "ConflictError",
    "Extension",
    "NotFoundError",
    "RefusedError",
    "ServerUnavailableError",
    "ValidationError",
    "verify_signature",
    "webhook_result",
]
