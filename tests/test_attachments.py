"""What a message shows besides its words (an image's caption, alt text, a file's name) is searched
and shown with its text, kept in its metadata and named in the explanation."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram import Memory, RetrievalConfig
from engram.attachments import MAX_ATTACHMENT_CHARS, attachments, described
from engram.embedders.fake import FakeEmbedder
from engram.errors import ValidationError

SAID = "Here's my latest one, finished it last night!"
CAPTION = "a painting of a horse standing in a snowy field"


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    return Memory(tmp_path / "attachments.db", embedder=FakeEmbedder())


def test_a_chat_messages_caption_is_searched_and_explained(memory: Memory) -> None:
    memory.add([{"role": "user", "content": "Off to the lake tomorrow."},
                {"role": "user", "content": SAID, "image_caption": CAPTION},
                {"role": "assistant", "content": "Lovely! The light on it is great."}], user_id="mel")
    result = memory.retrieve("Has she ever painted a horse?", user_id="mel",
                             config=RetrievalConfig(top_k=1, cache_ttl=0))
    [top] = result.memories
    assert top.content == f"{SAID} [image: {CAPTION}]"
    assert top.metadata["image_caption"] == CAPTION
    assert f"shows image: {CAPTION}" in top.reasons
    assert "horse" in result.to_prompt()  # the model, which never sees the image, reads the caption


def test_metadata_attachments_of_any_memory(memory: Memory) -> None:
    [record] = memory.add_many([{"user_id": "u", "content": "Signed contract attached.",
                                 "metadata": {"file_name": "acme-msa-2026.pdf", "alt_text": "a scanned page"}}])
    assert record.content == "Signed contract attached. [image alt text: a scanned page] [file: acme-msa-2026.pdf]"
    found = memory.retrieve("the acme msa pdf", user_id="u", config=RetrievalConfig(cache_ttl=0)).memories
    assert found and found[0].id == record.id
    assert "shows file: acme-msa-2026.pdf" in found[0].reasons


def test_an_update_does_not_show_the_caption_twice(memory: Memory) -> None:
    [record] = memory.add([{"role": "user", "content": SAID, "image_caption": CAPTION}], user_id="mel")
    updated = memory.update(record.id, user_id="mel", importance=0.9)
    assert updated.content.count("[image:") == 1
    rewritten = memory.update(record.id, user_id="mel", content="My horse painting.")
    assert rewritten.content == f"My horse painting. [image: {CAPTION}]"


@pytest.mark.parametrize(("given", "field", "says"), [
    ({"image_caption": 7}, "metadata.image_caption", "must be a string"),
    ({"file_name": ["a.pdf"]}, "metadata.file_name", "must be a string"),
    ({"alt_text": "x" * (MAX_ATTACHMENT_CHARS + 1)}, "metadata.alt_text", f"at most {MAX_ATTACHMENT_CHARS:,}"),
    ({"image_caption": "a\x00b"}, "metadata.image_caption", "must not contain NUL"),
])
def test_a_bad_attachment_is_refused_by_name(memory: Memory, given: dict[str, object], field: str,
                                               says: str) -> None:
    memory.add("kept", user_id="u")
    with pytest.raises(ValidationError) as caught:
        memory.add_many([{"user_id": "u", "content": "a photo", "metadata": given}])
    assert caught.value.field == f"memories[0].{field}" and says in str(caught.value)
    assert [r["memory"] for r in memory.get_all(user_id="u")["results"]] == ["kept"]


def test_a_message_caption_must_be_text(memory: Memory) -> None:
    with pytest.raises(ValidationError) as caught:
        memory.add([{"role": "user", "content": "look", "image_caption": {"url": "x"}}], user_id="u")
    assert caught.value.field.endswith("metadata.image_caption"), caught.value.field


def test_reading_is_lenient_with_old_metadata() -> None:
    # Metadata stored before attachments existed may hold anything under these keys.
    assert attachments({"image_caption": 3, "file_name": "a.pdf"}, strict=False) == [("file_name", "a.pdf")]
    assert described("x [image: y]", {"image_caption": "y"}) == "x [image: y]"
    assert described("x", {"image_caption": "  a   dog \n"}) == "x [image: a dog]"
