"""A stdio "server" that misbehaves on purpose, one way per mode (argv[1]), for the stdio target's tests.

echo     answers every request with {"principal": $MRTR_PRINCIPAL or $WHO}, after one notification
garbage  prints a line that is not JSON
silent   reads requests and never answers
flood    answers nothing and prints notifications without end
longline prints one line that never ends
exit     writes to stderr and exits with code 3 before reading anything
"""

import json
import os
import sys

mode = sys.argv[1]
if mode == "exit":
    sys.stderr.write("fake: cannot open the database\n")
    sys.exit(3)
for line in sys.stdin:
    message = json.loads(line)
    if mode == "echo":
        who = os.environ.get(sys.argv[2] if len(sys.argv) > 2 else "MRTR_PRINCIPAL")
        print(json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}))
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"resultType": "complete",
                                                                           "principal": who}}), flush=True)
    elif mode == "garbage":
        print("Starting server on stdio... ok", flush=True)
    elif mode == "silent":
        continue
    elif mode == "flood":
        note = json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "x" * 1000}})
        for _ in range(1_000_000):  # bounded, far beyond any cap the tests set
            try:
                print(note, flush=False)
            except BrokenPipeError:
                sys.exit(0)
    elif mode == "longline":
        try:
            for _ in range(1_000_000):
                sys.stdout.write("x" * 1000)
        except BrokenPipeError:
            sys.exit(0)
