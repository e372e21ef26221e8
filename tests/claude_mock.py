#!/usr/bin/env python3
"""A scripted Messages API for tests/claude_code_plugin.rs.

Claude Code talks to this instead of Anthropic: it listens on 127.0.0.1
(an ephemeral port, written to the file named by argv[2]) and appends each
request body as one JSON line to the file named by argv[1], so the test can
read what the model was shown: the system prompt, the messages, the tools.

It plays a model that looks only at the request (no state across requests):

  * a request whose system prompt is mnemofs's summarizer's (`mnemofs
    checkpoint` in captureMode summarized runs `claude -p` with it) gets
    SESSION_SUMMARY, the JSON the prompt asks for;
  * a compaction request (the last user turn asks for a detailed summary
    of the conversation) gets COMPACT_SUMMARY;
  * a request without the mnemofs MCP tools (titles, side queries) gets a
    short text;
  * a first user message holding `CALL-SEARCH <query>` gets one call of the
    mnemofs `search` tool, then, once its result is back, a text;
  * a first user message holding the remember skill's instructions gets one
    call of the mnemofs `remember` tool with the text verbatim;
  * a first user message holding the status skill's instructions gets one
    Bash call of the skill's first command;
  * the setup skill's instructions with `SETUP-ARGS <args>` among its
    answers get one Bash call of `setup-claude <args>`;
  * the share skill's instructions with `SHARE-NOTE <note>` get one Bash
    call of the preview, and once the user's last word is "yes", one of the
    share with `--yes`;
  * anything else gets a text.

The tools are called by the names the request offers, so the prefix Claude
Code gives plugin MCP tools is whatever the request shows.
"""
import json
import os
import re
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG, PORT_FILE = sys.argv[1], sys.argv[2]
log_lock = threading.Lock()

# The summarizing model's answer, wrapped in prose as a model might.
SESSION_SUMMARY = "Here is the note:\n```json\n" + json.dumps({
    "summary": "SCRIPTED-SUMMARY: the importer now skips binary files by looking for NUL bytes.",
    "decisions": ["Look for NUL bytes instead of trusting file extensions."],
    "next_steps": ["Add a test for an empty file."],
    "problems": [],
}) + "\n```"
COMPACT_SUMMARY = ("<analysis>The user asked for an importer change.</analysis>\n"
                   "<summary>SCRIPTED-COMPACT: the importer skips binary files.</summary>")


def text(content):
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if block.get("type") == "text":
            parts.append(block.get("text", ""))
        elif block.get("type") == "tool_result":
            parts.append(text(block.get("content")))
    return "\n".join(parts)


def tool_named(tools, suffix):
    for name in tools:
        if name.startswith("mcp__") and "mnemofs" in name and name.endswith("__" + suffix):
            return name
    return None


def is_summarizer(body):
    return "You write mnemofs session notes" in text(body.get("system"))


def is_compaction(messages):
    last = messages[-1] if messages else {}
    said = text(last.get("content")).lower() if last.get("role") == "user" else ""
    return "detailed summary of the conversation" in said or "summary of the conversation so far" in said


def reply(body):
    """The blocks the model answers with, and the stop reason."""
    tools = [t.get("name", "") for t in body.get("tools") or []]
    messages = body.get("messages") or []
    if is_summarizer(body):
        return [{"type": "text", "text": SESSION_SUMMARY}], "end_turn"
    if is_compaction(messages):
        return [{"type": "text", "text": COMPACT_SUMMARY}], "end_turn"
    first = next((text(m.get("content")) for m in messages if m.get("role") == "user"), "")
    last = messages[-1] if messages else {}
    answered = isinstance(last.get("content"), list) and any(
        b.get("type") == "tool_result" for b in last["content"])
    search = tool_named(tools, "search")
    if answered or not search:
        return [{"type": "text", "text": "Done."}], "end_turn"
    asked = re.search(r"CALL-SEARCH (.+)", first)
    if asked:
        return [{"type": "tool_use", "id": "toolu_search_1", "name": search,
                 "input": {"query": asked.group(1).strip()}}], "tool_use"
    remember = re.search(r"<text>\n(.*?)\n</text>", first, re.S)
    remember_tool = tool_named(tools, "remember")
    if remember and "manual-capture" in first and remember_tool:
        return [{"type": "tool_use", "id": "toolu_remember_1", "name": remember_tool,
                 "input": {"text": remember.group(1)}}], "tool_use"
    setup = re.search(r'(sh "[^"]+/mnemofs-run") setup-claude', first)
    setup_args = re.search(r"SETUP-ARGS ([^`\n<]+)", first)
    if setup and setup_args and "Bash" in tools:
        command = f"{setup.group(1)} setup-claude {setup_args.group(1).strip()}"
        return [{"type": "tool_use", "id": "toolu_bash_setup", "name": "Bash",
                 "input": {"command": command, "description": "mnemofs setup"}}], "tool_use"
    share = re.search(r'(sh "[^"]+/mnemofs-run") share', first)
    share_note = re.search(r"SHARE-NOTE ([^`\n<]+)", first)
    if share and share_note and "Bash" in tools:
        # One call per turn of the user's: the preview on the skill's, the
        # share on their "yes"; once the model has acted in the turn (a
        # refused call comes back as an interrupted one), it stops.
        def has_result(m):
            return isinstance(m.get("content"), list) and any(
                b.get("type") == "tool_result" for b in m["content"])
        said_yes = [i for i, m in enumerate(messages) if m.get("role") == "user"
                    and not has_result(m) and text(m.get("content")).strip().lower() == "yes"]
        anchor = said_yes[-1] if said_yes else 0
        if any(m.get("role") == "assistant" for m in messages[anchor + 1:]):
            return [{"type": "text", "text": "Share it? (yes/no)" if not said_yes else "Shared."}], "end_turn"
        command = f"{share.group(1)} share '{share_note.group(1).strip()}'"
        if said_yes:
            command += " --yes"
        return [{"type": "tool_use", "id": "toolu_bash_share", "name": "Bash",
                 "input": {"command": command, "description": "mnemofs share"}}], "tool_use"
    status = re.search(r'^(sh "[^"]+/mnemofs-run" status)$', first, re.M)
    if status and "Bash" in tools:
        return [{"type": "tool_use", "id": "toolu_bash_1", "name": "Bash",
                 "input": {"command": status.group(1), "description": "mnemofs status"}}], "tool_use"
    return [{"type": "text", "text": "Nothing to do."}], "end_turn"


def event(name, data):
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, code, payload, content_type="application/json"):
        data = payload.encode()
        self.send_response(code)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.answer(404, json.dumps({"type": "error", "error": {"type": "not_found_error", "message": "no such endpoint"}}))

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        path = self.path.split("?")[0]
        if path == "/v1/messages/count_tokens":
            return self.answer(200, json.dumps({"input_tokens": len(raw) // 4}))
        if path != "/v1/messages" or not isinstance(body, dict):
            return self.do_GET()
        with log_lock, open(LOG, "a") as log:
            log.write(json.dumps(body) + "\n")
        blocks, stop = reply(body)
        usage = {"input_tokens": 1000, "output_tokens": 20}
        # Claude Code groups a conversation for compaction by message id.
        message = {"id": "msg_mock_" + uuid.uuid4().hex, "type": "message", "role": "assistant",
                   "model": body.get("model", "claude-sonnet-4-5"), "content": blocks,
                   "stop_reason": stop, "stop_sequence": None, "usage": usage}
        if not body.get("stream"):
            return self.answer(200, json.dumps(message))
        out = [event("message_start", {"type": "message_start",
                                       "message": dict(message, content=[], stop_reason=None)})]
        for i, block in enumerate(blocks):
            if block["type"] == "text":
                start = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                start = dict(block, input={})
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            out.append(event("content_block_start", {"type": "content_block_start", "index": i, "content_block": start}))
            out.append(event("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}))
            out.append(event("content_block_stop", {"type": "content_block_stop", "index": i}))
        out.append(event("message_delta", {"type": "message_delta",
                                           "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": usage}))
        out.append(event("message_stop", {"type": "message_stop"}))
        self.answer(200, "".join(out), "text/event-stream")


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(PORT_FILE + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(PORT_FILE + ".tmp", PORT_FILE)
    server.serve_forever()


if __name__ == "__main__":
    main()
