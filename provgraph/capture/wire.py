"""Record provider-SDK calls from the HTTP bytes they send: the OpenAI and Anthropic wrappers.

``RecordedOpenAI(client, recorder).create("C001", **request)`` sends through
``client.chat.completions.create`` (``RecordedOpenAI(client, recorder, api="responses")``
through ``client.responses.create``); ``RecordedAnthropic(client, recorder).create(...)``
through ``client.messages.create``. Each wrapper adds an event hook to the SDK's own HTTP
client (an ``httpx`` / ``httpx2`` client, as the SDK version uses), so every attempt the SDK
makes (its own retries on 429 / 5xx and on transport errors included) is seen as the body
bytes that went out and the status that came back. A call writes one record per attempt:
each failed attempt as ``error`` (with the HTTP status and the provider's request id), then
the last one as the response's finish state, or as ``error`` when the SDK gave up. The record
is taken from the bytes sent, not from the caller's dict, so a prompt rewritten after the
harness built its request (a patched template, a wrapped ``create``) is recorded as what the
provider received.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from provgraph.capture.recorder import Recorder

__all__ = ["RecordedAnthropic", "RecordedOpenAI", "WireRecorder"]

#: the attempts of the call in flight in this thread / task; None outside a recorded call
_ATTEMPTS: contextvars.ContextVar[list[dict[str, Any]] | None] = contextvars.ContextVar(
    "provgraph_attempts", default=None
)
_REQUEST_ID_HEADERS = ("x-request-id", "request-id")


def _on_request(request: Any) -> None:
    attempts = _ATTEMPTS.get()
    if attempts is not None:
        attempts.append({"sent": bytes(request.content)})


def _on_response(response: Any) -> None:
    attempts = _ATTEMPTS.get()
    if attempts:
        headers = response.headers
        attempts[-1]["status_code"] = response.status_code
        attempts[-1]["reason"] = response.reason_phrase
        attempts[-1]["request_id"] = next((headers[h] for h in _REQUEST_ID_HEADERS if h in headers), None)


async def _on_request_async(request: Any) -> None:
    _on_request(request)


async def _on_response_async(response: Any) -> None:
    _on_response(response)


def _attempt_error(attempt: dict[str, Any]) -> str:
    code = attempt.get("status_code")
    if code is None:
        return "transport error: no HTTP response (the SDK retried)"
    return f"HTTP {code} {attempt.get('reason') or ''}".rstrip()


class WireRecorder:
    """Hooks an SDK client's httpx client and records each call sent through ``send``.

    :param client: an ``openai.OpenAI`` / ``anthropic.Anthropic`` client (or their async
        variants); its HTTP client (``client._client``, an ``httpx.Client``) gets the hooks.
    :param send: the SDK method that sends one request (``client.messages.create``).
    """

    def __init__(self, client: Any, recorder: Recorder, send: Callable[..., Any]):
        http = getattr(client, "_client", None)
        hooks = getattr(http, "event_hooks", None)
        if not isinstance(hooks, dict):
            raise TypeError(f"{type(client).__name__} has no httpx client to hook (client._client)")
        is_async = hasattr(http, "aclose")  # httpx.AsyncClient; httpx.Client has only close
        on_request, on_response = (
            (_on_request_async, _on_response_async) if is_async else (_on_request, _on_response)
        )
        if on_request not in hooks.get("request", []):
            http.event_hooks = {
                "request": [*hooks.get("request", []), on_request],
                "response": [*hooks.get("response", []), on_response],
            }
        self.client, self.recorder, self._send = client, recorder, send

    def create(self, call_id: str, **request: Any) -> Any:
        """Send ``request`` and record every attempt; return the SDK's response unchanged."""
        attempts: list[dict[str, Any]] = []
        token = _ATTEMPTS.set(attempts)
        try:
            response = self._send(**request)
        except Exception as err:
            self._record(call_id, request, attempts, error=f"{type(err).__name__}: {err}")
            raise
        finally:
            _ATTEMPTS.reset(token)
        self._record(call_id, request, attempts, response=response)
        return response

    async def acreate(self, call_id: str, **request: Any) -> Any:
        """:meth:`create` for an async client."""
        attempts: list[dict[str, Any]] = []
        token = _ATTEMPTS.set(attempts)
        try:
            response = await self._send(**request)
        except Exception as err:
            self._record(call_id, request, attempts, error=f"{type(err).__name__}: {err}")
            raise
        finally:
            _ATTEMPTS.reset(token)
        self._record(call_id, request, attempts, response=response)
        return response

    def _record(
        self,
        call_id: str,
        request: dict[str, Any],
        attempts: list[dict[str, Any]],
        response: Any = None,
        error: str | None = None,
    ) -> None:
        for attempt in attempts[:-1]:  # the SDK retried past these
            record = self._begin(call_id, request, attempt)
            self.recorder.fail(record, _attempt_error(attempt), attempt.get("request_id"))
        last = attempts[-1] if attempts else {}
        record = self._begin(call_id, request, last)
        if error is not None:
            self.recorder.fail(record, error, last.get("request_id"))
            return
        if last.get("request_id"):
            record["request_id"] = last["request_id"]
        self.recorder.finish(record, response)

    def _begin(self, call_id: str, request: dict[str, Any], attempt: dict[str, Any]) -> dict[str, Any]:
        try:
            return self.recorder.begin(call_id, request, sent=attempt.get("sent"))
        except (ValueError, UnicodeDecodeError):
            # a body that is not a JSON request (none of these SDKs' calls sends one): the
            # call went out, so its record must not cost the caller the response
            record = self.recorder.begin(call_id, request)
            record["prompt_source"] = "unknown"
            return record


class RecordedOpenAI(WireRecorder):
    """``client.chat.completions.create`` (``api="chat"``) or ``client.responses.create``
    (``api="responses"``) recorded at the wire."""

    def __init__(self, client: Any, recorder: Recorder, api: str = "chat"):
        if api not in ("chat", "responses"):
            raise ValueError(f"api must be 'chat' or 'responses', got {api!r}")
        send = client.chat.completions.create if api == "chat" else client.responses.create
        super().__init__(client, recorder, send)


class RecordedAnthropic(WireRecorder):
    """``client.messages.create`` recorded at the wire."""

    def __init__(self, client: Any, recorder: Recorder):
        super().__init__(client, recorder, client.messages.create)
