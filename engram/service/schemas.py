"""Request bodies of the HTTP API, camelCase on the wire (``engram.wire.to_camel``).

Numeric ranges and choices are left to Engram's own checks, so an out-of-range value gets the same
422 naming the field and the allowed range as the Python API raises; /openapi.json declares them
(``engram.wire.ranged``) so a client knows them beforehand.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field

from engram.attachments import MAX_ATTACHMENT_CHARS
from engram.documents import STRATEGIES
from engram.errors import ValidationError as EngramValidationError
from engram.errors import short_repr
from engram.ingest.normalize import to_utc
from engram.model import KINDS, STATUSES
from engram.recall import MAX_DEPTH, MAX_RESULTS
from engram.service.uploads import check_upload_name
from engram.wire import REQUEST, ConfigOverrides, ranged, schema

__all__ = [
    "AddRequest",
    "AdminSettingsBody",
    "ConfigOverrides",
    "DocumentQuery",
    "EntityIn",
    "FeedbackRequest",
    "IngestRequest",
    "LinkIn",
    "MemoryBatch",
    "MemoryIn",
    "MemoryPatch",
    "MessageIn",
    "RecallRequest",
    "RetrieveFilters",
    "RetrieveRequest",
    "Time",
]


def _check_time(value: str) -> str:
    """An ISO-8601 time with an offset that exists in UTC, checked where the request is parsed.

    ``9999-12-31T23:59:59-14:00`` parses but is in year 10,000 in UTC: converting it overflows,
    which deeper code would meet as a crash (a 500) rather than as input to refuse.
    """
    try:
        to_utc(value, "time")
    except EngramValidationError as exc:
        raise ValueError(str(exc).split(": ", 1)[-1]) from None
    except OverflowError:
        raise ValueError(f"{short_repr(value)} is outside the years 1-9999 once converted to UTC") from None
    return value


#: A time field of a request: validated (and refused with a 422 naming it) before any route runs.
Time = Annotated[str, AfterValidator(_check_time)]
Id = Field(min_length=1, max_length=256)
#: A body's ``userId``: optional, since the ``userId`` query parameter names the user on every route.
UserId = Field(default=None, min_length=1, max_length=256,
               description="Accepted for compatibility: the userId query parameter is the convention; "
                           "given in both places, they must be equal.")
Text = Field(default=None, max_length=10_000)
RECALL_MODES = ("relevant", "recent", "important", "frequent", "temporal", "by_kind", "linked")


class _Body(BaseModel):
    model_config = REQUEST


class RetrieveFilters(_Body):
    session_id: str | None = Field(default=None, max_length=256)
    project_id: str | None = Field(default=None, max_length=256)
    agent_id: str | None = Field(default=None, max_length=256)
    tags_any: list[str] | None = Field(default=None, max_length=100)
    created_after: Time | None = Field(default=None, max_length=64)
    created_before: Time | None = Field(default=None, max_length=64)
    metadata: dict[str, Any] | None = Field(
        default=None, max_length=50, description="Memories whose metadata has each of these values (equality)."
    )
    where: dict[str, Any] | None = Field(
        default=None, max_length=50,
        description="A filter in Mem0's language, applied inside the store before ranking: keys are fields "
                    "(user_id, agent_id, run_id, role, kind, created_at, ...) or metadata keys; values are "
                    "a value or {operator: operand} with eq, ne, in, nin, gt, gte, lt, lte, contains, "
                    "icontains, or '*' (any value); AND, OR and NOT combine filters.",
    )


class RetrieveRequest(_Body):
    """A retrieval request: who asks, in which session, whether to use memory, and the message."""

    user_id: str | None = UserId
    session_id: str | None = Field(default=None, max_length=256)
    use_memory: bool = True
    message: str = Field(max_length=100_000)
    config: ConfigOverrides | None = None
    now: Time | None = Field(default=None, max_length=64, description="Reference time (ISO-8601): 'as of'.")
    as_of: Time | None = Field(
        default=None, max_length=64, description="Answer from memory as it was recorded by this time (ISO-8601)."
    )
    format: Literal["policy", "policy_spec", "augmentation"] | None = Field(
        default=None, description="Also return the payload rendered as a prompt section."
    )
    kinds: list[str] | None = Field(default=None, max_length=16)
    tags: list[str] | None = Field(default=None, max_length=100)
    filters: RetrieveFilters | None = None
    also: list[str] | None = Field(
        default=None, max_length=16,
        description="Shared scopes (user ids, e.g. a knowledge base's) ranked together with the user's own "
                    "memories; the key must be allowed each of them. Such retrievals are not cached.",
    )


class _MemoryFields(_Body):
    kind: str | None = Field(default=None, max_length=64, json_schema_extra=schema(enum=list(KINDS)),
                             description="Default message.")
    role: str | None = Field(default=None, max_length=256)
    session_id: str | None = Field(default=None, max_length=256)
    agent_id: str | None = Field(default=None, max_length=256)
    project_id: str | None = Field(default=None, max_length=256)
    subject: str | None = Text
    predicate: str | None = Text
    object: str | None = Text
    trigger: str | None = Text
    action: str | None = Text
    tags: list[str] | None = Field(default=None, max_length=1000)
    entities: list[str] | None = Field(default=None, max_length=1000)
    importance: float | None = Field(default=None, json_schema_extra=ranged(0.0, 1.0),
                                     description="Default 0.5 (procedures 0.8, summaries 0.9).")
    created_at: Time | None = Field(default=None, max_length=64)
    valid_from: Time | None = Field(default=None, max_length=64)
    valid_to: Time | None = Field(default=None, max_length=64)
    status: str | None = Field(default=None, max_length=32, json_schema_extra=schema(enum=list(STATUSES)),
                               description="Default active.")
    metadata: dict[str, Any] | None = None


class MemoryIn(_MemoryFields):
    user_id: str | None = UserId
    # No client-chosen ``id``: an id taken by another user would fail the store's unique index
    # (a 500, and an oracle for other users' ids); the service assigns every id.
    content: str = Field(max_length=1_000_000)
    vector: list[float] | None = Field(
        default=None, max_length=8192,
        description="The memory's vector, when the caller already has it (an import): stored instead of "
                    "embedding the content; needs embeddingModel.")
    embedding_model: str | None = Field(
        default=None, max_length=256,
        description="The model that made vector: it must be the server's embedder (a mismatch is refused, naming it).")


class MessageIn(_Body):
    """One chat message of a conversation (``engram.conversation``)."""

    role: str = Field(min_length=1, max_length=256)
    content: str | list[dict[str, Any]] = Field(max_length=1_000_000)
    name: str | None = Field(default=None, max_length=256)
    created_at: Time | None = Field(default=None, max_length=64)
    image_caption: str | None = Field(default=None, max_length=MAX_ATTACHMENT_CHARS,
                                      description="What an image the message shows depicts: searched and shown "
                                                  "with its text, kept in its metadata.")
    alt_text: str | None = Field(default=None, max_length=MAX_ATTACHMENT_CHARS,
                                 description="An image's alt text, as image_caption.")
    file_name: str | None = Field(default=None, max_length=MAX_ATTACHMENT_CHARS,
                                  description="The name of a file the message carries, as image_caption.")


class AddRequest(_MemoryFields):
    """``POST /v1/memories``: one memory's ``content``, or a conversation's ``messages`` (one memory each)."""

    user_id: str | None = UserId
    content: str | None = Field(default=None, max_length=1_000_000)
    messages: list[MessageIn] | None = Field(default=None, min_length=1, max_length=1000)
    run_id: str | None = Field(default=None, max_length=256)


class MemoryBatch(_Body):
    memories: list[MemoryIn] = Field(min_length=1, max_length=1000)


class MemoryPatch(_MemoryFields):
    user_id: str | None = UserId
    content: str | None = Field(default=None, max_length=1_000_000)


class LinkIn(_Body):
    user_id: str | None = UserId
    from_id: str = Id
    to_id: str = Id
    type: str = Field(min_length=1, max_length=64)
    strength: float = Field(default=1.0, json_schema_extra=ranged(0.0, 1.0))


class EntityIn(_Body):
    user_id: str | None = UserId
    entity_id: str = Id
    type: str | None = Field(default=None, max_length=256)
    name: str | None = Field(default=None, max_length=1000)
    aliases: list[str] = Field(default_factory=list, max_length=100)


class RecallRequest(_Body):
    """Recall: one request shape for every recall mode; each mode reads the fields it needs."""

    user_id: str | None = UserId
    mode: Literal["relevant", "recent", "important", "frequent", "temporal", "by_kind", "linked"] = "relevant"
    query: str | None = Field(default=None, max_length=100_000)
    max_results: int = Field(default=10, json_schema_extra=ranged(1, MAX_RESULTS))
    kind: str | None = Field(default=None, max_length=64, json_schema_extra=schema(enum=list(KINDS)),
                             description="Only memories of this kind; by_kind recall needs it.")
    min_salience: float = Field(default=0.0, json_schema_extra=ranged(0.0, 1.0))
    project_id: str | None = Field(default=None, max_length=256)
    include_archived: bool = False
    start: Time | None = Field(default=None, max_length=64)
    end: Time | None = Field(default=None, max_length=64)
    topic: str | None = Field(default=None, max_length=1000)
    memory_id: str | None = Field(default=None, max_length=256)
    link_types: list[str] | None = Field(default=None, max_length=32)
    depth: int = Field(default=1, json_schema_extra=ranged(1, MAX_DEPTH), description="Links to follow (linked).")


class DocumentUpload(_Body):
    name: Annotated[str, AfterValidator(check_upload_name)] = Field(
        min_length=1, max_length=200,
        description="File name; its extension picks the reader, and the same name is the same document.",
    )
    content: str = Field(max_length=8_000_000)


class IngestRequest(_Body):
    user_id: str | None = UserId
    documents: list[DocumentUpload] = Field(min_length=1, max_length=100)
    tags: list[str] = Field(default_factory=list, max_length=100)
    topic: str | None = Field(default=None, max_length=1000)
    note: str | None = Field(default=None, max_length=10_000)
    force: bool = False


class DocumentQuery(_Body):
    user_id: str | None = UserId
    meta: dict[str, Any] | str
    k: int = Field(default=50, json_schema_extra=ranged(1, 10_000), description="Candidates to choose from.")
    default_tags: list[str] | None = Field(default=None, max_length=100)
    strategy: str = Field(default="latest", max_length=32, json_schema_extra=schema(enum=list(STRATEGIES)))
    as_of: Time | None = Field(default=None, max_length=64)


class FeedbackRequest(_Body):
    user_id: str | None = UserId
    retrieval_id: str = Id
    used_ids: list[str] = Field(max_length=1000)


class AdminRetrieval(_Body):
    top_k: int | None = Field(default=None, json_schema_extra=ranged(1, 20))
    clip_sentences: int | None = Field(default=None, json_schema_extra=ranged(1, 5))
    max_tokens: int | None = Field(default=None, json_schema_extra=ranged(100, 3000))
    search_type: str | None = Field(default=None, max_length=32,
                                    json_schema_extra=schema(enum=["hybrid", "semantic", "keyword"]))
    min_score: float | None = Field(default=None, json_schema_extra=ranged(0.0, 1.0))
    enable_redaction: bool | None = None
    custom_redaction_patterns: list[str] | None = Field(default=None, max_length=50)


class AdminInterleaving(_Body):
    strategy: str | None = Field(default=None, max_length=32,
                                 json_schema_extra=schema(enum=["alternate", "score_first", "recency_first"]))
    ratio: float | None = Field(default=None, json_schema_extra=ranged(0.0, 1.0))


class AdminSettingsBody(_Body):
    """``AdminMemorySettings`` in the admin ranges; omitted fields keep their current values."""

    retrieval: AdminRetrieval | None = None
    interleaving: AdminInterleaving | None = None
