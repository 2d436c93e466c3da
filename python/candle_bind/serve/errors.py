"""OpenAI's error body, `{"error": {"message", "type", "param", "code"}}`, with the HTTP status that goes
with it. Every failure a client can cause is one of these; nothing else reaches the wire."""

from __future__ import annotations

from typing import Any, Dict, Optional

# OpenAI's `type` for each status, as its API and llama-server send them.
_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error",
          405: "invalid_request_error", 413: "invalid_request_error", 429: "rate_limit_error",
          500: "server_error", 503: "unavailable_error"}


class APIError(Exception):
    """A request that gets an error answer: `status`, and the fields of OpenAI's error body."""

    def __init__(self, status: int, message: str, param: Optional[str] = None, code: Optional[str] = None,
                 type: Optional[str] = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.type = type or _TYPES.get(status, "invalid_request_error")

    def body(self) -> Dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def bad_request(message: str, param: Optional[str] = None, code: Optional[str] = None) -> APIError:
    return APIError(400, message, param, code)


def unavailable(message: str = "the server is shutting down") -> APIError:
    return APIError(503, message, code="unavailable")
