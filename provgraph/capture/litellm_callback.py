"""A LiteLLM callback that writes one canonical call record per LiteLLM attempt.

::

    litellm.callbacks = [RecordingLogger(Recorder("calls.jsonl", outputs="outputs"))]
    litellm.completion(model=..., messages=..., metadata={"call_id": "gpt4o--s01--1"})

LiteLLM calls ``log_success_event`` / ``log_failure_event`` (or their async variants) after
each attempt with the call's kwargs: ``litellm_params.metadata`` (where the harness puts the
plan's ``call_id``), ``additional_args.complete_input_dict`` (the provider request body LiteLLM
built after its own templating, when a provider was called), ``messages``, ``model`` and
``optional_params``, and on failure ``exception``. The record is taken from the provider body
when there is one (what was sent), else from the messages and parameters LiteLLM resolved. A
failed attempt is recorded as ``error`` with the exception, never as an answer, whatever the
harness then writes as its verdict. A call without ``metadata.call_id`` is recorded under
LiteLLM's own ``litellm_call_id`` (it will show as unplanned: the plan names the call ids).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from provgraph.errors import MissingExtraError

try:
    from litellm.integrations.custom_logger import CustomLogger
except ImportError as err:  # the optional extra
    raise MissingExtraError("the LiteLLM callback needs litellm: pip install 'provgraph[litellm]'") from err

if TYPE_CHECKING:
    from provgraph.capture.recorder import Recorder

__all__ = ["RecordingLogger"]

log = logging.getLogger(__name__)
#: LiteLLM's own routing and bookkeeping keys of ``optional_params`` (not sent as decoding)
_NOT_SENT = {"extra_body", "extra_headers", "metadata"}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _call_id(kwargs: Mapping[str, Any]) -> str:
    metadata = _mapping(_mapping(kwargs.get("litellm_params")).get("metadata"))
    call_id = metadata.get("call_id")
    return str(call_id) if call_id else str(kwargs.get("litellm_call_id") or "unknown")


def _body(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The request as sent: the provider body when LiteLLM built one, else its resolved inputs."""
    sent = _mapping(_mapping(kwargs.get("additional_args")).get("complete_input_dict"))
    if sent.get("messages") is not None:
        body = {k: v for k, v in sent.items() if k not in _NOT_SENT}
        extra = sent.get("extra_body")
        if isinstance(extra, Mapping):  # the provider SDK merges it into the body it sends
            body.update(extra)
        body.setdefault("model", kwargs.get("model"))
        return body
    params = {k: v for k, v in _mapping(kwargs.get("optional_params")).items() if k not in _NOT_SENT}
    return {"model": kwargs.get("model"), "messages": kwargs.get("messages") or [], **params}


def _request_id(response: Any) -> str | None:
    headers = _mapping(_mapping(getattr(response, "_hidden_params", None)).get("additional_headers"))
    for key in ("llm_provider-x-request-id", "llm_provider-request-id", "x-request-id"):
        if headers.get(key):
            return str(headers[key])
    return None


class RecordingLogger(CustomLogger):
    """LiteLLM ``CustomLogger`` writing through a :class:`~provgraph.capture.recorder.Recorder`."""

    def __init__(self, recorder: Recorder, **kwargs: Any):
        super().__init__(**kwargs)
        self.recorder = recorder
        # LiteLLM keeps one logger per key of public str/int/bool attributes and drops the
        # others unannounced: the log path in the key keeps a second recorder's logger alive
        self.log = str(recorder.log.resolve())

    def log_success_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
        record = self._begin(kwargs)
        if record is None:
            return
        try:
            self.recorder.finish(record, response_obj, _request_id(response_obj))
        except (TypeError, ValueError) as err:  # a response of no chat shape: an error, not an answer
            self.recorder.fail(record, f"unreadable response: {err}", _request_id(response_obj))

    def log_failure_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
        record = self._begin(kwargs)
        if record is None:
            return
        err = kwargs.get("exception")
        message = f"{type(err).__name__}: {err}" if err is not None else "LiteLLM reported a failure"
        self.recorder.fail(record, message)

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self.log_success_event(kwargs, response_obj, start_time, end_time)

    async def async_log_failure_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self.log_failure_event(kwargs, response_obj, start_time, end_time)

    def _begin(self, kwargs: Any) -> dict[str, Any] | None:
        try:
            return self.recorder.begin(_call_id(kwargs), _body(kwargs))
        except ValueError as err:  # LiteLLM swallows a callback's exception: say it here
            log.error("provgraph: call %s not recorded: %s", _call_id(kwargs), err)
            return None
