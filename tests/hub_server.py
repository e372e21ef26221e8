"""A Hugging Face hub on this machine, for `tests/model_pull.rs`.

Serves one model folder as the hub serves a model repository:

- GET /api/models/<repo>/revision/main?blobs=true: the file list, each
  file with its size and git blob id, and for LFS files (weights) the
  SHA-256 and size of the content (their blob id is that of the pointer
  file, as on the hub);
- GET /<repo>/resolve/main/<file>: a file kept in git, or for an LFS file
  a 302 redirect to /cdn/<sha256> under another name of this machine
  (localhost, where the hub is reached as 127.0.0.1), as the hub sends its
  CDN: a client can be seen to keep its token from the other host;
- 404 for any other repository, revision or file.

--corrupt FILE serves FILE with one byte changed while the list keeps the
true checksum. --log PATH appends one line per request: the path, then
the Authorization header or `-`. The port is printed on stdout once the
server listens. Standard library only.
"""

import argparse
import hashlib
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

LFS_SUFFIXES = (".safetensors", ".bin", ".onnx")
CHUNK = 1 << 20


def git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def describe(root, rel):
    path = os.path.join(root, rel)
    with open(path, "rb") as f:
        data = f.read()
    entry = {"rfilename": rel, "size": len(data)}
    if rel.endswith(LFS_SUFFIXES):
        sha256 = hashlib.sha256(data).hexdigest()
        pointer = (
            "version https://git-lfs.github.com/spec/v1\n"
            f"oid sha256:{sha256}\nsize {len(data)}\n"
        ).encode()
        entry["blobId"] = git_blob_id(pointer)
        entry["lfs"] = {"sha256": sha256, "size": len(data), "pointerSize": len(pointer)}
    else:
        entry["blobId"] = git_blob_id(data)
    return entry


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model_dir")
    parser.add_argument("repo")
    parser.add_argument("--corrupt", default=None)
    parser.add_argument("--log", default=None)
    args = parser.parse_args()

    root = os.path.abspath(args.model_dir)
    files = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if name.startswith("."):
                continue
            rel = os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")
            files[rel] = describe(root, rel)
    by_sha = {e["lfs"]["sha256"]: rel for rel, e in files.items() if "lfs" in e}
    listing = json.dumps(
        {"id": args.repo, "sha": "0" * 40, "siblings": list(files.values())}
    ).encode()

    class Hub(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_):
            pass

        def record(self):
            if args.log:
                auth = self.headers.get("Authorization") or "-"
                with open(args.log, "a") as log:
                    log.write(f"{self.path} {auth}\n")

        def answer(self, status, body=b"", headers=()):
            self.send_response(status)
            for key, value in headers:
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def send_file(self, rel):
            path = os.path.join(root, rel)
            size = os.path.getsize(path)
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            flip = size // 2 if rel == args.corrupt else -1
            offset = 0
            with open(path, "rb") as f:
                while chunk := f.read(CHUNK):
                    if offset <= flip < offset + len(chunk):
                        i = flip - offset
                        chunk = chunk[:i] + bytes([chunk[i] ^ 0xFF]) + chunk[i + 1 :]
                    self.wfile.write(chunk)
                    offset += len(chunk)

        def do_GET(self):
            self.record()
            url = urlsplit(self.path)
            path = unquote(url.path)
            api = f"/api/models/{args.repo}/revision/main"
            resolve = f"/{args.repo}/resolve/main/"
            if path == api:
                self.answer(200, listing, [("Content-Type", "application/json")])
            elif path.startswith(resolve) and path[len(resolve):] in files:
                rel = path[len(resolve):]
                entry = files[rel]
                if "lfs" in entry:
                    port = self.server.server_address[1]
                    where = f"http://localhost:{port}/cdn/{entry['lfs']['sha256']}"
                    self.answer(302, headers=[("Location", where)])
                else:
                    self.send_file(rel)
            elif path.startswith("/cdn/") and path[len("/cdn/"):] in by_sha:
                self.send_file(by_sha[path[len("/cdn/"):]])
            else:
                body = b'{"error":"Repository not found"}'
                self.answer(404, body, [("Content-Type", "application/json")])

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
