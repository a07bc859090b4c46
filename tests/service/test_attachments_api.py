"""A chat message's image caption over HTTP: stored with its text and in its metadata, refused by
name when too long."""

from __future__ import annotations

from fastapi.testclient import TestClient

from engram.attachments import MAX_ATTACHMENT_CHARS

CAPTION = "a painting of a horse standing in a snowy field"


def test_a_messages_caption_over_http(client: TestClient) -> None:
    answer = client.post("/v1/memories", json={"user_id": "u1", "messages": [
        {"role": "user", "content": "Here's my latest one!", "image_caption": CAPTION}]})
    assert answer.status_code == 201, answer.text
    [stored] = answer.json()["memories"]
    assert stored["content"] == f"Here's my latest one! [image: {CAPTION}]"
    assert stored["metadata"]["image_caption"] == CAPTION
    found = client.post("/v1/retrieve", json={"userId": "u1", "message": "Did she paint a horse?", "useMemory": True})
    assert found.status_code == 200, found.text
    top = found.json()["memories"][0]
    assert top["id"] == stored["id"] and f"shows image: {CAPTION}" in top["reasons"]
    refused = client.post("/v1/memories", json={"user_id": "u1", "messages": [
        {"role": "user", "content": "look", "image_caption": "x" * (MAX_ATTACHMENT_CHARS + 1)}]})
    assert refused.status_code == 422 and "image_caption" in refused.text
