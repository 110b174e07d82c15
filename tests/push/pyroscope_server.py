#!/usr/bin/python3
"""A stand-in for a Pyroscope server and an OTLP profiles receiver, for
arcprof's push tests.

Serves POST /push.v1.PusherService/Push (Connect protocol, body a serialized
push.v1.PushRequest) and POST /ingest (body a pprof profile). Push requests
are decoded with protobuf (Debian's python3-protobuf) from the descriptor set
of push/proto/, which carries Pyroscope's message names and field numbers.

With --otlp-python DIR (the Python modules protoc generated at build time
from the vendored opentelemetry-proto) it also serves POST
/v1development/profiles, OTLP/HTTP binary protobuf, gzip or identity
content encoding: the body is decoded as ExportProfilesServiceRequest and
logged as {"otlp": {"resources": [{attribute: value}], "profile_ids": [hex],
"totals": {type: sum}, "stacks": {type: {"pid/tid;root;...;leaf": value}},
"error": "..."}}; every dictionary reference is checked.

Every request is logged as one JSON line to OUT/requests.jsonl:
  {"path": ..., "status": ..., "body_bytes": ..., "series": [{"labels": {...}, "samples":
   [{"id": ..., "file": ..., "bytes": ...}]}], "query": {...}}
Each accepted profile is written to OUT/profile-N.pb.gz for `go tool pprof`.

Options:
  --port P           port to listen on (0: any; the port is written to OUT/port)
  --status LIST      statuses of the first requests, e.g. 429,503 (then 200)
  --no-push-api      answer 404 on the push route, like servers before it
  --otlp-python DIR  serve the OTLP profiles route (above)
"""
import argparse
import gzip
import json
import os
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import descriptor_pb2, descriptor_pool
try:
    from google.protobuf.message_factory import GetMessageClass
except ImportError:  # protobuf < 4.21 spells it differently
    from google.protobuf import message_factory

    def GetMessageClass(descriptor):
        return message_factory.MessageFactory().GetPrototype(descriptor)


def load_push_request(descriptor_path):
    files = descriptor_pb2.FileDescriptorSet()
    with open(descriptor_path, "rb") as f:
        files.ParseFromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for proto in files.file:
        pool.Add(proto)
    return GetMessageClass(pool.FindMessageTypeByName("push.v1.PushRequest"))


def decode_otlp(request):
    """What an ExportProfilesServiceRequest holds, in the shape above."""
    d = request.dictionary
    out = {"resources": [], "profile_ids": [], "totals": {}, "stacks": {}, "error": ""}

    def at(table, i, what):
        if i <= 0 or i >= len(table):
            raise IndexError("%s index %d of %d" % (what, i, len(table)))
        return table[i]

    try:
        for table in (d.mapping_table, d.location_table, d.function_table, d.link_table,
                      d.attribute_table, d.stack_table):
            if len(table) == 0:
                raise IndexError("a dictionary table lacks its zero entry")
        if len(d.string_table) == 0 or d.string_table[0] != "":
            raise IndexError("string_table[0] is not empty")
        for rp in request.resource_profiles:
            out["resources"].append({kv.key: kv.value.string_value for kv in rp.resource.attributes})
            for sp in rp.scope_profiles:
                for p in sp.profiles:
                    out["profile_ids"].append(p.profile_id.hex())
                    kind = d.string_table[p.sample_type.type_strindex]
                    stacks = out["stacks"].setdefault(kind, {})
                    for s in p.samples:
                        if len(s.values) != 1:
                            raise ValueError("a sample with %d values" % len(s.values))
                        pid = tid = -1
                        for a in s.attribute_indices:
                            kv = at(d.attribute_table, a, "attribute")
                            key = d.string_table[kv.key_strindex]
                            if key == "process.pid":
                                pid = kv.value.int_value
                            elif key == "thread.id":
                                tid = kv.value.int_value
                        names = []  # leaf first
                        for l in at(d.stack_table, s.stack_index, "stack").location_indices:
                            for line in at(d.location_table, l, "location").lines:
                                f = at(d.function_table, line.function_index, "function")
                                names.append(d.string_table[f.name_strindex])
                        key = ";".join(["%d/%d" % (pid, tid)] + names[::-1])
                        stacks[key] = stacks.get(key, 0) + s.values[0]
                        out["totals"][kind] = out["totals"].get(kind, 0) + s.values[0]
    except (IndexError, ValueError) as e:
        out["error"] = str(e)
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--descriptors", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--status", default="")
    parser.add_argument("--no-push-api", action="store_true")
    parser.add_argument("--otlp-python", default="")
    args = parser.parse_args()

    ExportRequest = ExportResponse = None
    if args.otlp_python:
        sys.path.insert(0, args.otlp_python)
        from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2
        ExportRequest = profiles_service_pb2.ExportProfilesServiceRequest
        ExportResponse = profiles_service_pb2.ExportProfilesServiceResponse

    PushRequest = load_push_request(args.descriptors)
    scripted = [int(s) for s in args.status.split(",") if s]
    lock = threading.Lock()
    state = {"profiles": 0}
    log = open(os.path.join(args.out, "requests.jsonl"), "a", buffering=1)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *unused):
            pass

        def reply(self, status, body=b"", content_type="application/json"):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def save(self, data):
            state["profiles"] += 1
            name = os.path.join(args.out, "profile-%d.pb.gz" % state["profiles"])
            with open(name, "wb") as f:
                f.write(data)
            return name

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            url = urllib.parse.urlsplit(self.path)
            entry = {"path": url.path, "query": dict(urllib.parse.parse_qsl(url.query)), "body_bytes": length,
                     "content_type": self.headers.get("Content-Type", ""),
                     "content_encoding": self.headers.get("Content-Encoding", ""),
                     "tenant": self.headers.get("X-Scope-OrgID", "")}
            with lock:
                if scripted:
                    entry["status"] = scripted.pop(0)
                    log.write(json.dumps(entry) + "\n")
                    self.reply(entry["status"], b'{"code":"unavailable","message":"scripted"}')
                    return
                if url.path == "/push.v1.PusherService/Push" and not args.no_push_api:
                    request = PushRequest()
                    try:
                        request.ParseFromString(body)
                    except Exception as e:  # a malformed body is the client's bug
                        entry["status"] = 400
                        entry["error"] = str(e)
                        log.write(json.dumps(entry) + "\n")
                        self.reply(400, b'{"code":"invalid_argument"}')
                        return
                    entry["series"] = []
                    for series in request.series:
                        labels = {}
                        for pair in series.labels:
                            labels[pair.name] = pair.value
                        samples = [{"id": s.ID, "bytes": len(s.raw_profile), "file": self.save(s.raw_profile)}
                                   for s in series.samples]
                        entry["series"].append({"labels": labels, "samples": samples})
                    entry["status"] = 200
                    log.write(json.dumps(entry) + "\n")
                    self.reply(200, b"", "application/proto")
                    return
                if url.path == "/v1development/profiles" and ExportRequest is not None:
                    request = ExportRequest()
                    try:
                        data = body
                        if entry["content_encoding"] == "gzip":
                            data = gzip.decompress(body)
                        entry["decoded_bytes"] = len(data)
                        request.ParseFromString(data)
                    except Exception as e:  # a malformed body is the client's bug
                        entry["status"] = 400
                        entry["error"] = str(e)
                        log.write(json.dumps(entry) + "\n")
                        self.reply(400, b"", "application/x-protobuf")
                        return
                    entry["otlp"] = decode_otlp(request)
                    entry["status"] = 200
                    log.write(json.dumps(entry) + "\n")
                    self.reply(200, ExportResponse().SerializeToString(), "application/x-protobuf")
                    return
                if url.path == "/ingest":
                    entry["file"] = self.save(body)
                    entry["bytes"] = len(body)
                    entry["status"] = 200
                    log.write(json.dumps(entry) + "\n")
                    self.reply(200)
                    return
                entry["status"] = 404
                log.write(json.dumps(entry) + "\n")
                self.reply(404, b"404 page not found\n", "text/plain")

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    tmp = os.path.join(args.out, "port.tmp")
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, os.path.join(args.out, "port"))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
