"""A small chat-completions server for the openai-compatible provider's tests.

It listens on 127.0.0.1 on an ephemeral port, is started and stopped by the test, and answers the
way a model would: by default the offline rules' plan for the context it is sent (so the model
provider can take the same flow as the offline one), or a chosen failure: a malformed reply, an
oversized one, JSON that does not validate, a fenced reply, a server error, or a usage report of
its choosing (``usage``). ``script`` holds scripted replies by task: a function of the context it is sent
(as a model reads the ids it may cite) that returns the plan (sent as JSON) or the reply's very text
(a small model's almost-JSON, say). ``answered`` lists the tasks it answered, with the model each was asked of.

The continuity check it answers as a model reads by meaning (``contradictions_by_meaning``): from the text and
the canon true in that chapter it was sent, never a finding fixed in advance.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from discovery.agents.providers.offline import plan_for
from discovery.agents.providers.openai_compatible import CONTEXT_END, CONTEXT_START
from discovery.continuity import sentences

OVERSIZED_CHARS = 300_000

# What the stub "understands": words of one family exclude each other, unless they mean the same (grey, gray).
FAMILIES = [
    {"grey", "gray", "green", "blue", "brown", "black", "hazel", "amber", "white", "red", "fair", "golden"},
    {"tall", "short"},
    {"left", "right"},
]
SAME = {"gray": "grey", "fair": "golden"}
WORDS = re.compile(r"[a-z]+")


def _meaning(word: str) -> str:
    return SAME.get(word, word)


def contradictions_by_meaning(context: dict) -> dict:
    """The continuity check as a model would answer it: every sentence of ``manuscript.text`` that names a claim's
    entry and the thing its predicate speaks of ("has eyes": eyes), and says of it a word of the same family as
    the claim's value that means something else (canon grey, the text green) contradicts that claim."""
    manuscript = context.get("manuscript") or {}
    text = manuscript.get("text") or ""
    findings = []
    for claim in manuscript.get("canon") or []:
        value = {_meaning(w) for w in WORDS.findall(str(claim["value"]).lower())}
        family = next((f for f in FAMILIES if value & f), None)
        things = {w for w in WORDS.findall(claim["predicate"].lower()) if w not in {"has", "is", "are", "of", "the"}}
        if family is None or not things:
            continue
        names = [n.lower() for n in claim["names"]]
        for start, end in sentences(text):
            words = set(WORDS.findall(text[start:end].lower()))
            named = any(re.search(r"\b" + re.escape(n) + r"\b", text[start:end].lower()) for n in names)
            said = {_meaning(w) for w in words & family} - value
            if named and things & words and said:
                findings.append(
                    {
                        "kind": "contradicts-canon",
                        "key": f"meaning:{claim['claim_id']}",
                        "span_start": start,
                        "span_end": end,
                        "quote": text[start:end],
                        "claim_ids": [claim["claim_id"]],
                        "entry_ids": [claim["entry_id"]] if claim["entry_id"] else [],
                        "message": f"Here {claim['names'][0]} {claim['predicate']} {', '.join(sorted(said))}; "
                        f"canon says {claim['value']}.",
                    }
                )
                break
    return {"findings": findings, "notes": [f"Read the chapter against {len(manuscript.get('canon') or [])} claims."]}


DEFAULT_SCRIPT = {"continuity": contradictions_by_meaning}


def context_of(messages: list[dict]) -> dict:
    """The context the provider sent, as a model reads it: the JSON between the markers of its last message."""
    text = messages[-1]["content"]
    start, end = text.index(CONTEXT_START) + len(CONTEXT_START), text.rindex(CONTEXT_END)
    return json.loads(text[start:end])


class ModelStub:
    def __init__(self) -> None:
        self.mode = "plan"
        self.override: dict | None = None
        self.usage: dict | None = None  # a reported usage to send instead of the counted one
        self.script: dict[str, Callable[[dict], dict | str]] = {}
        self.answered: list[tuple[str, str]] = []  # (task, model) of each reply
        self.requests: list[dict] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep the test output quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                stub.requests.append({"path": self.path, "body": body})
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": "not found"}})
                elif stub.mode == "error":
                    self._send(500, {"error": {"message": "the stub model fell over"}})
                else:
                    self._send(200, stub.completion(body))

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def start(self) -> ModelStub:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    def content(self, body: dict) -> str:
        if self.mode == "malformed":
            return '{"question": {"question": "Who lit the lamp?", "source_refs": ['
        if self.mode == "oversized":
            return json.dumps({"notes": ["x" * OVERSIZED_CHARS]})
        if self.mode == "invalid":
            return json.dumps({"thrusts": [{"kind": "sideways", "title": ""}]})
        if self.override is not None:
            return json.dumps(self.override)
        context = context_of(body["messages"])
        self.answered.append((context["task"], body["model"]))
        answer = self.script.get(context["task"]) or DEFAULT_SCRIPT.get(context["task"])
        if answer is not None:
            reply = answer(context)
            return reply if isinstance(reply, str) else json.dumps(reply)
        plan = json.dumps(plan_for(context["task"], context))
        return f"```json\n{plan}\n```" if self.mode == "fenced" else plan

    def completion(self, body: dict) -> dict:
        content = self.content(body)
        prompt_tokens = sum(len(m["content"]) for m in body["messages"]) // 4
        completion_tokens = len(content) // 4
        return {
            "id": f"stub-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": self.usage
            or {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
