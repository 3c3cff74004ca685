"""The openai-compatible provider: any chat-completions server (a hosted model, or a local one
through Ollama, vLLM or LM Studio), through the ``openai`` package.

The model is told its role, the task, the JSON schema of the plan it must answer with (the same
input schemas as the API) and the run's context as JSON. Its reply must be one JSON object; the
runner validates it before anything is written. A small model's almost-JSON is repaired where that
is safe (``repair``). Every failure (unreachable, an error status, a reply that is empty, too large,
not JSON or not safely repaired) is a ``ProviderError``: the run fails and writes nothing.
"""

from __future__ import annotations

import functools
import json

from ..schemas import PLANS
from .base import ProviderError, Reply, reported_tokens
from .repair import read_object, repaired_note

CONTEXT_START = "<<<CONTEXT"
CONTEXT_END = "CONTEXT>>>"

ROLE_BRIEF = {
    "sol": (
        "You are Sol, the coordinator of a book's discovery. You choose the next consequential question for the "
        "author and cite what prompted it, hand bounded work to Luna and structural work to Terra, ask the "
        "author to decide proposals that are ready, and raise the current gate's card when its preconditions "
        "hold. You never decide: the author does."
    ),
    "terra": (
        "You are Terra, the structural specialist. You draft story-thrust candidates, Story Charter versions and "
        "the decision brief, and file the canon-integrity review at G2. You propose; the author decides."
    ),
    "luna": (
        "You are Luna, a bounded worker. You read the discovery, the scratchpad, the literary library and book "
        "canon (never series canon). You write scratchpad entries, the observations the author's turns speak to "
        "and the reader-trust review at G2, each citing what it draws on. You propose; the author decides."
    ),
}
TASK_BRIEF = {
    "next-question": "Plan Sol's pass: the next question, handoffs, approval requests and the gate card.",
    "guidance": (
        "Answer the handoff: write observations drawn from the library hits in the context, each citing its "
        'chunk ({"type": "chunk", "id": chunk_id}) with provenance literary-guidance, and return the result '
        "(facts, inferences, options, questions)."
    ),
    "contradictions": (
        "Compare the observations and proposed claims with the approved canon claims in the dossier; write one "
        "contradiction entry per conflict, citing both sides."
    ),
    "thrusts": "Draft three thrust candidates (core, stretch, wild) from the premise and the observations.",
    "charter": (
        "Draft a Story Charter version from the confirmed observations, citing them; list every field the "
        "author has not confirmed under productive_unknowns."
    ),
    "extract": (
        "Read the author's turns you were handed and write the observations each speaks to: the Story Charter "
        "fields it answers, the people, places and things it names, and facts with their chapter cues. Each "
        "observation cites its turn (turn_id from the context), enters as working and waits for the author; "
        "never author-stated, never an observation the context already holds."
    ),
    "canon-review": (
        "File the G2 canon-integrity review (lens canon-integrity, gate G2): the approved charter against the "
        "approved canon claims, the open contradictions, the proposed claims that are not canon yet, and "
        "whether the charter cites confirmed observations. Resolve or defer each finding with a reason."
    ),
    "trust-review": (
        "File the G2 reader-trust review (lens reader-trust, gate G2): each reader promise against the ending "
        "horizon, fair play (reveals and the clues shown before them; with no reveal there is nothing to check), "
        "the genre's obligations and the productive unknowns. Resolve or defer each finding with a reason."
    ),
    "brief": (
        "Draft the decision brief (slug decision-brief, type decision-brief, status proposed) from the ratified "
        "charter, the selected thrust and canon: success metrics, the chapters with Chapter 1's spec. Add the "
        "traceability nodes and edges that link the premise through the thrust and the charter's fields to "
        "Chapter 1's spec and Chapter 1 (nodes already in the context's trace are kept as they are)."
    ),
    "continuity": (
        "Read the chapter's text (manuscript.text, chapter manuscript.chapter) against manuscript.canon, the canon "
        "true in that chapter (each claim with its subject's names, predicate and value), and find where the text "
        "says otherwise by meaning (canon: grey eyes; the text: her green eyes): one finding of kind "
        'contradicts-canon per contradiction, with key "meaning:<claim_id>", the claim\'s id in claim_ids, its '
        "entry's id in entry_ids, the sentence quoted exactly with its character offsets in the text (span_start, "
        "span_end), and a message that says both sides. The rules check the other kinds (reveal-too-early, "
        "evidence-not-shown, out-of-time, not-in-canon) themselves. A chapter that agrees with canon gives no "
        "finding."
    ),
    "research-url": (
        "The server collected the web page the author named (page: its url, title and text). Give the claim the "
        "page supports: research_request.claim when the author gave one, word for word; otherwise one sentence "
        "the page's text itself states, adding nothing. Keep research_request.citation when given, else leave "
        "citation blank. The page is proposed as research; the author admits it or not."
    ),
}


@functools.cache
def plan_schema(task: str) -> dict:
    """The JSON schema of the task's plan (the API's input schemas inside), built once per process."""
    return PLANS[task].model_json_schema()


def messages_for(task: str, role: str, schema: dict, context: dict) -> list[dict]:
    system = (
        f"{ROLE_BRIEF[role]}\n\nTask: {TASK_BRIEF[task]}\n\n"
        "Answer with one JSON object and nothing else, valid against this JSON schema:\n"
        + json.dumps(schema, separators=(",", ":"))
        + "\nCite only ids that appear in the context. Say what you did not do, and why, in notes."
    )
    user = f"{CONTEXT_START}\n{json.dumps(context, ensure_ascii=False, default=str)}\n{CONTEXT_END}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def parse_reply(text: str | None, *, max_chars: int) -> tuple[dict, list[str]]:
    """The JSON object in a model's reply and the repairs made to read it (``repair.read_object``: a code fence,
    prose around the object and trailing commas are repaired; anything else is refused), or a ProviderError."""
    if not text or not text.strip():
        raise ProviderError("the model's reply was empty")
    if len(text) > max_chars:
        raise ProviderError(f"the model's reply is {len(text)} characters; the limit is {max_chars}")
    return read_object(text)


class OpenAICompatibleProvider:
    name = "openai-compatible"

    def __init__(self, *, model: str, options: dict):
        self.model = model
        self.options = options

    def _client(self):
        from openai import OpenAI  # imported here: only runs that use a model pay for it

        return OpenAI(
            base_url=self.options["BASE_URL"],
            # Local servers (Ollama, vLLM, LM Studio) ignore the key, but the client wants one.
            api_key=self.options.get("API_KEY") or "not-needed",
            timeout=self.options.get("TIMEOUT", 120),
            max_retries=self.options.get("MAX_RETRIES", 2),
        )

    def _response_format(self, task: str, schema: dict) -> dict:
        kind = self.options.get("RESPONSE_FORMAT", "json_object")
        if kind == "json_schema":
            return {
                "response_format": {"type": "json_schema", "json_schema": {"name": f"{task}_plan", "schema": schema}}
            }
        if kind == "json_object":
            return {"response_format": {"type": "json_object"}}
        return {}

    def plan(self, task: str, context: dict, *, role: str) -> Reply:
        import openai

        schema = plan_schema(task)
        try:
            completion = self._client().chat.completions.create(
                model=self.model,
                messages=messages_for(task, role, schema, context),
                temperature=0,
                max_tokens=self.options.get("MAX_TOKENS", 4000),
                **self._response_format(task, schema),
            )
        except openai.APITimeoutError:
            raise ProviderError("the model did not answer in time") from None
        except openai.APIConnectionError as exc:
            raise ProviderError(f"the model server could not be reached ({exc.__class__.__name__})") from None
        except openai.APIStatusError as exc:
            raise ProviderError(f"the model server answered {exc.status_code}: {str(exc)[:300]}") from None
        except openai.OpenAIError as exc:
            raise ProviderError(f"the model call failed: {str(exc)[:300]}") from None
        choices = getattr(completion, "choices", None) or []
        usage = getattr(completion, "usage", None)
        tokens = reported_tokens(getattr(usage, "total_tokens", None) if usage is not None else None)
        if not choices or choices[0].message is None:
            raise ProviderError("the model's reply had no message", tokens=tokens)
        try:
            data, repairs = parse_reply(
                choices[0].message.content, max_chars=self.options.get("MAX_REPLY_CHARS", 100_000)
            )
        except ProviderError as exc:
            raise ProviderError(str(exc), tokens=tokens) from None
        return Reply(data=data, tokens=tokens, notes=[repaired_note(repairs)] if repairs else [])
