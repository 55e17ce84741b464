"""A static t2a_v2 streaming upstream for bench/connections.sh: every POST /v1/t2a_v2 is answered
with the same frame (76 KB of hex: 38 KB of audio, as the simulator's frames of a 38 s text)
every INTERVAL ms, FRAMES times, then a last frame with the usage.

The simulator synthesizes and holds a stream's whole audio (about 5 MB for such a text), which
is 50 GB at 10,000 streams; this upstream holds one frame for all of them, so that the gateway is
what the bench measures (docs/benchmarks.md, "Lean streams").

    python3 bench/t2a_upstream.py PORT INTERVAL_MS [FRAMES]
"""
import asyncio
import json
import sys

port, interval = int(sys.argv[1]), int(sys.argv[2]) / 1000
frames = int(sys.argv[3]) if len(sys.argv) > 3 else 64

def chunk(event: bytes) -> bytes:
    """One HTTP/1.1 chunk holding one SSE event."""
    return b"%x\r\n%s\r\n" % (len(event), event)

def event(body: dict) -> bytes:
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\r\n\r\n"

OK = {"status_code": 0, "status_msg": "success"}
FRAME = chunk(event({"data": {"audio": "7f00" * 19_000, "status": 1}, "trace_id": "bench", "base_resp": OK}))
LAST = chunk(event({
    "data": {"audio": "", "status": 2},
    "extra_info": {"usage_characters": 576, "audio_format": "pcm", "audio_sample_rate": 32000},
    "trace_id": "bench",
    "base_resp": OK,
})) + b"0\r\n\r\n"
HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        b"transfer-encoding: chunked\r\n\r\n")

async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            await reader.readexactly(length)
            if not head.startswith(b"POST /v1/t2a_v2 "):
                writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                continue
            writer.write(HEAD)
            for i in range(frames):
                if i:
                    await asyncio.sleep(interval)
                writer.write(FRAME)
                await writer.drain()
            writer.write(LAST)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()

async def main() -> None:
    server = await asyncio.start_server(serve, "127.0.0.1", port, backlog=4096)
    async with server:
        await server.serve_forever()

asyncio.run(main())
