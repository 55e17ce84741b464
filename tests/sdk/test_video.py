"""The asynchronous video tasks: the `volcengine-ark-runtime` SDK → tollgate
`/api/v3/contents/generations/tasks` (clip tasks, Ark's format), and raw HTTP →
`/v1/video/generations` (the generic format).

Every task is polled no faster than once a second (the gateway answers a second poll of the
same task within 1 s with 429), and the tasks of one test are polled together in one loop, so
the whole file waits on a handful of rounds rather than on every task in turn. Each test that
checks money has an account of its own, so its balance moves by exactly what that test did.
"""

import base64
import io
import itertools
import os
import struct
import time
import tomllib
import zlib
from decimal import ROUND_CEILING, Decimal
from functools import cache

import av
import httpx
import pytest
from volcenginesdkarkruntime import Ark
from volcenginesdkarkruntime._exceptions import ArkBadRequestError, ArkNotFoundError

from conftest import account, balance, cli, new_key

POLL_INTERVAL = 1.1  # seconds between two polls of the same task: never under 1 s
POLL_TIMEOUT = 60.0  # seconds for every task of one loop to finish
NANO = Decimal("0.000000001")
_names = itertools.count()

# ---- accounts, prices and money ----


def fresh_account(prefix: str, amount: str = "100") -> tuple[str, str]:
    """A new account with its own key: (name, key)."""
    name = f"sdk-{prefix}-{next(_names)}-{time.monotonic_ns()}"
    return name, new_key(name, amount)


@cache
def default_config() -> dict:
    """The embedded default configuration, the one run.sh starts the gateway with."""
    return tomllib.loads(cli("config", "default"))


def model_price(model: str, meter: str) -> dict:
    """The `price` table of a public model, checked to be on `meter`."""
    models = default_config().get("models", {})
    if model not in models:
        pytest.fail(f"the default configuration has no model {model!r}")
    price = models[model]["price"]
    assert price["meter"] == meter, (model, price)
    return price


def charge(quantity: int, unit_price: Decimal) -> Decimal:
    """DESIGN §4: exact, then rounded up once to the nano-unit."""
    return (Decimal(quantity) * unit_price).quantize(NANO, rounding=ROUND_CEILING)


def clip_charge(model: str, tokens: int) -> Decimal:
    per_million = Decimal(model_price(model, "video_tokens")["per_million_tokens"])
    return charge(tokens, per_million / Decimal(1_000_000))


def generic_charge(model: str, seconds: int) -> Decimal:
    return charge(seconds, Decimal(model_price(model, "video_seconds")["per_second"]))


def assert_settled(name: str, start: Decimal, charged: Decimal) -> None:
    """The account paid exactly `charged` (0: refunded in full) and holds nothing any more."""
    state = account(name)
    assert Decimal(state["balance"]) == start - charged, (state, start, charged)
    assert Decimal(state["held"]) == 0 and state["open_holds"] == 0, state


@cache
def clip_models() -> dict[str, str]:
    """A clip-video model of each series from the default configuration, `{"2.0": id, "2.5": id}`,
    preferring the ids below when the configuration lists them."""
    preferred = {"2.0": "clipgen-cn-2.0-260128", "2.5": "clipgen-intl-2.5-fast-260301"}
    configured = [
        model for model, table in default_config().get("models", {}).items()
        if table.get("kind") == "clip-video"
    ]
    chosen = {}
    for series, model in preferred.items():
        if model in configured:
            chosen[series] = model
        else:
            found = [m for m in configured if f"-{series}-" in m and m.startswith("clipgen-")]
            if not found:
                pytest.fail(f"the default configuration lists no clipgen-* {series} model")
            chosen[series] = found[0]
    return chosen


# ---- media ----


def tiny_png(width: int = 8, height: int = 8, rgb: tuple[int, int, int] = (200, 40, 40)) -> bytes:
    """A real PNG: one colour, 8-bit RGB."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def data_url(png: bytes) -> str:
    """Inline image: the gateway refuses loopback URLs, and a test has no public one."""
    return "data:image/png;base64," + base64.b64encode(png).decode()


def boxes(data: bytes, start: int = 0, end: int | None = None):
    """The ISO BMFF boxes in data[start:end]: (type, payload start, payload end)."""
    end = len(data) if end is None else end
    at = start
    while at + 8 <= end:
        size, kind = struct.unpack(">I4s", data[at:at + 8])
        header = 8
        if size == 1:
            size = struct.unpack(">Q", data[at + 8:at + 16])[0]
            header = 16
        elif size == 0:
            size = end - at
        assert size >= header and at + size <= end, f"box {kind!r} at {at} overruns its parent"
        yield kind.decode("latin-1"), at + header, at + size
        at += size


def child(data: bytes, start: int, end: int, kind: str) -> tuple[int, int]:
    for found, s, e in boxes(data, start, end):
        if found == kind:
            return s, e
    raise AssertionError(f"no {kind} box")


def mp4_info(data: bytes) -> dict:
    """Duration (moov/mvhd) and frame size (the first trak/tkhd with one), read by hand."""
    top = list(boxes(data))
    assert top and top[0][0] == "ftyp", [b[0] for b in top]
    moov = child(data, 0, len(data), "moov")
    s, _ = child(data, *moov, "mvhd")
    version = data[s]
    if version == 0:
        timescale, duration = struct.unpack(">II", data[s + 12:s + 20])
    elif version == 1:
        timescale, duration = struct.unpack(">IQ", data[s + 20:s + 32])
    else:
        raise AssertionError(f"mvhd version {version}")
    assert timescale > 0
    width = height = 0
    for kind, ts, te in boxes(data, *moov):
        if kind != "trak":
            continue
        s, _ = child(data, ts, te, "tkhd")
        offset = {0: 76, 1: 88}[data[s]]
        w, h = struct.unpack(">II", data[s + offset:s + offset + 8])  # 16.16 fixed point
        if w and h:
            width, height = w / 65536, h / 65536
            break
    return {"seconds": duration / timescale, "width": width, "height": height}


def download(url: str, base_url: str, key: str) -> bytes:
    # The key goes only to the gateway itself, should it serve the file.
    headers = {"Authorization": f"Bearer {key}"} if url.startswith(base_url) else {}
    r = httpx.get(url, headers=headers, timeout=60, follow_redirects=True)
    assert r.status_code == 200, (url, r.status_code, r.text[:300])
    return r.content


def ffmpeg_decode(data: bytes) -> dict:
    """The file decoded by FFmpeg's own libraries (PyAV): every frame of its video stream, as a
    player would, and what the container says."""
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.video[0]
        frames = [frame for frame in container.decode(stream)]
        return {
            "codec": stream.codec_context.name,
            "frames": len(frames),
            "width": frames[0].width,
            "height": frames[0].height,
            "seconds": float(container.duration) / av.time_base if container.duration else None,
        }


def assert_video(data: bytes, seconds: float, ratio: str) -> None:
    """The MP4's header says `seconds` at `ratio`, and FFmpeg decodes it whole: H.264, the
    vendors' 24 × seconds + 1 frames, at the size the header says."""
    info = assert_header(data, seconds, ratio)
    decoded = ffmpeg_decode(data)
    assert decoded["codec"] == "h264", decoded
    assert decoded["frames"] == round(24 * seconds) + 1, (decoded, seconds)
    assert (decoded["width"], decoded["height"]) == (info["width"], info["height"]), (decoded, info)
    assert abs(decoded["seconds"] - seconds) <= 0.1, decoded


def assert_header(data: bytes, seconds: float, ratio: str) -> dict:
    info = mp4_info(data)
    assert abs(info["seconds"] - seconds) <= 0.1, info
    if ratio not in ("adaptive", "auto"):
        w, h = (int(x) for x in ratio.split(":"))
        assert info["width"] > 0 and info["height"] > 0, info
        assert abs(info["width"] / info["height"] - w / h) <= 0.03 * (w / h), info
    return info


def test_mp4_reader_reads_both_box_versions():
    """mp4_info itself, on hand-made files: mvhd and tkhd of version 0 and of version 1."""

    def box(kind: bytes, payload: bytes) -> bytes:
        return struct.pack(">I", 8 + len(payload)) + kind + payload

    def fixed(x: int) -> bytes:
        return struct.pack(">I", x << 16)

    matrix = bytes(36)
    mvhd0 = box(b"mvhd", b"\0\0\0\0" + bytes(8) + struct.pack(">II", 1000, 4042) + bytes(80))
    mvhd1 = box(b"mvhd", b"\1\0\0\0" + bytes(16) + struct.pack(">IQ", 90000, 450000) + bytes(80))
    tkhd0 = box(b"tkhd", b"\0\0\0\7" + bytes(20) + bytes(16) + matrix + fixed(192) + fixed(108))
    tkhd1 = box(b"tkhd", b"\1\0\0\7" + bytes(32) + bytes(16) + matrix + fixed(108) + fixed(192))
    ftyp = box(b"ftyp", b"isom" + bytes(4) + b"isomavc1")
    mdat = box(b"mdat", bytes(16))
    v0 = ftyp + box(b"moov", mvhd0 + box(b"trak", tkhd0)) + mdat
    v1 = ftyp + box(b"moov", mvhd1 + box(b"trak", tkhd1)) + mdat
    assert mp4_info(v0) == {"seconds": 4.042, "width": 192, "height": 108}
    assert mp4_info(v1) == {"seconds": 5.0, "width": 108, "height": 192}
    assert_header(v1, 5, "9:16")
    with pytest.raises(AssertionError):
        mp4_info(mdat + v0)  # ftyp must come first


# ---- polling ----


def poll_together(fetchers: dict, done) -> dict:
    """Polls every task (key → a function returning its record) once per round, POLL_INTERVAL
    apart, until `done(record)` holds for each; returns the final records by key."""
    deadline = time.monotonic() + POLL_TIMEOUT
    pending = dict(fetchers)
    final = {}
    last = {}
    while pending:
        for key, fetch in list(pending.items()):
            record = fetch()
            last[key] = record
            if done(record):
                final[key] = record
                del pending[key]
        if not pending:
            break
        assert time.monotonic() < deadline, f"tasks not finished after {POLL_TIMEOUT} s: {last}"
        time.sleep(POLL_INTERVAL)
    return final


# ---- Ark clip tasks ----

ARK_TERMINAL = {"succeeded", "failed", "cancelled", "expired"}


def ark(base_url: str, key: str) -> Ark:
    # No retries: a retried create could make a second paid task, and a retried 429 would hide
    # the poll limit.
    return Ark(base_url=f"{base_url}/api/v3", api_key=key, max_retries=0, timeout=60)


def text(prompt: str) -> dict:
    return {"type": "text", "text": prompt}


def image(role: str, rgb: tuple[int, int, int]) -> dict:
    return {"type": "image_url", "image_url": {"url": data_url(tiny_png(rgb=rgb))}, "role": role}


def ark_variants() -> dict[str, dict]:
    m = clip_models()
    return {
        "text-only-2.0": dict(
            model=m["2.0"],
            content=[text("A paper boat drifts down a rainy street.")],
            duration=4, ratio="16:9", resolution="480p",
        ),
        "first-frame-2.5": dict(
            model=m["2.5"],
            content=[text("The red square slowly turns blue."), image("first_frame", (220, 30, 30))],
            duration=5, ratio="9:16", resolution="720p",
        ),
        "reference-images-2.5": dict(
            model=m["2.5"],
            content=[
                text("A toy robot walks past the two coloured cards."),
                image("reference_image", (30, 200, 30)),
                image("reference_image", (30, 30, 200)),
            ],
            duration=6, ratio="1:1", resolution="720p",
        ),
        "fails-2.0": dict(
            model=m["2.0"],
            content=[text("This one breaks [fail] on purpose.")],
            duration=4, ratio="4:3", resolution="480p",
        ),
    }


@pytest.fixture(scope="module")
def ark_runs():
    """One task per variant, each on its own account, polled together to the end."""
    base_url = os.environ["TOLLGATE_BASE_URL"]
    runs = {}
    for variant, args in ark_variants().items():
        name, key = fresh_account(f"ark-{variant}")
        start = balance(name)
        client = ark(base_url, key)
        created = client.content_generation.tasks.create(**args)
        runs[variant] = dict(name=name, key=key, client=client, start=start, args=args, created=created)
    final = poll_together(
        {v: (lambda r=r: r["client"].content_generation.tasks.get(task_id=r["created"].id)) for v, r in runs.items()},
        lambda task: task.status in ARK_TERMINAL,
    )
    for variant, run in runs.items():
        run["task"] = final[variant]
    return base_url, runs


@pytest.mark.parametrize("variant", ["text-only-2.0", "first-frame-2.5", "reference-images-2.5"])
def test_ark_task_succeeds_with_the_video_asked_for_and_bills_its_tokens(ark_runs, variant):
    base_url, runs = ark_runs
    run = runs[variant]
    args, task = run["args"], run["task"]
    assert run["created"].id
    assert task.status == "succeeded", task
    assert task.id == run["created"].id
    assert task.model == args["model"]
    assert task.duration == args["duration"]
    assert task.ratio == args["ratio"] and task.resolution == args["resolution"]
    tokens = task.usage.completion_tokens
    assert tokens > 0
    video = download(task.content.video_url, base_url, run["key"])
    assert_video(video, args["duration"], args["ratio"])
    assert_settled(run["name"], run["start"], clip_charge(args["model"], tokens))


def test_ark_failed_task_reports_its_error_and_is_refunded(ark_runs):
    _, runs = ark_runs
    run = runs["fails-2.0"]
    task = run["task"]
    assert task.status == "failed", task
    assert task.error.code and task.error.message
    assert_settled(run["name"], run["start"], Decimal(0))


def test_ark_second_poll_within_a_second_is_429_with_retry_after(base_url):
    name, key = fresh_account("ark-429")
    client = ark(base_url, key)
    created = client.content_generation.tasks.create(
        model=clip_models()["2.0"], content=[text("Two quick polls.")], duration=4, ratio="16:9", resolution="480p"
    )
    url = f"{base_url}/api/v3/contents/generations/tasks/{created.id}"
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(timeout=30) as http:
        first = http.get(url, headers=headers)
        second = http.get(url, headers=headers)
    assert first.status_code == 200, first.text
    assert first.json()["id"] == created.id
    assert second.status_code == 429, second.text
    assert second.headers["retry-after"] == "1"
    error = second.json()["error"]
    assert isinstance(error["code"], str) and error["code"]
    assert isinstance(error["message"], str) and error["message"]
    # After a second the task can be polled again.
    time.sleep(POLL_INTERVAL)
    assert client.content_generation.tasks.get(task_id=created.id).id == created.id


def test_ark_list_shows_only_the_callers_tasks_and_delete_removes_a_finished_one(base_url):
    model = clip_models()["2.0"]
    (name_a, key_a), (name_b, key_b) = fresh_account("ark-list-a"), fresh_account("ark-list-b")
    a, b = ark(base_url, key_a), ark(base_url, key_b)
    args = dict(model=model, duration=4, ratio="16:9", resolution="480p")
    a1 = a.content_generation.tasks.create(content=[text("First of A.")], **args).id
    a2 = a.content_generation.tasks.create(content=[text("Second of A.")], **args).id
    b1 = b.content_generation.tasks.create(content=[text("The only one of B.")], **args).id
    owners = {a1: a, a2: a, b1: b}
    final = poll_together(
        {i: (lambda i=i, c=c: c.content_generation.tasks.get(task_id=i)) for i, c in owners.items()},
        lambda task: task.status in ARK_TERMINAL,
    )
    assert all(task.status == "succeeded" for task in final.values()), final

    listed = a.content_generation.tasks.list(page_num=1, page_size=10)
    assert listed.total == 2
    assert {t.id for t in listed.items} == {a1, a2}
    assert {t.id for t in b.content_generation.tasks.list().items} == {b1}

    # Pages: one task each, both of A's, no overlap; the third page is empty.
    page1 = a.content_generation.tasks.list(page_num=1, page_size=1)
    page2 = a.content_generation.tasks.list(page_num=2, page_size=1)
    page3 = a.content_generation.tasks.list(page_num=3, page_size=1)
    assert page1.total == page2.total == 2
    assert len(page1.items) == len(page2.items) == 1
    assert {page1.items[0].id, page2.items[0].id} == {a1, a2}
    assert page3.items == []

    # Filters: status, and task ids (B's id in A's filter is simply not A's).
    assert {t.id for t in a.content_generation.tasks.list(status="succeeded").items} == {a1, a2}
    assert a.content_generation.tasks.list(status="queued").total == 0
    by_ids = a.content_generation.tasks.list(task_ids=[a2, b1])
    assert by_ids.total == 1 and [t.id for t in by_ids.items] == [a2]

    # Another key's task is not found, for reading and for deleting.
    time.sleep(POLL_INTERVAL)  # the loop above polled every task last moment
    with pytest.raises(ArkNotFoundError):
        b.content_generation.tasks.get(task_id=a1)
    with pytest.raises(ArkNotFoundError):
        b.content_generation.tasks.delete(task_id=a1)

    # Deleting a succeeded task removes it from the owner's view; the charge stays.
    paid = balance(name_a)
    time.sleep(POLL_INTERVAL)  # a1 was last polled by the loop above
    a.content_generation.tasks.delete(task_id=a1)
    with pytest.raises(ArkNotFoundError):
        a.content_generation.tasks.get(task_id=a1)
    remaining = a.content_generation.tasks.list()
    assert remaining.total == 1 and [t.id for t in remaining.items] == [a2]
    assert balance(name_a) == paid


def test_ark_deleting_a_queued_task_cancels_it_and_refunds_in_full(base_url):
    # The simulator keeps a task queued for 200 ms: delete at once. Should the delete still come
    # too late (the task running, which cannot be cancelled), try again with a new account.
    for _ in range(3):
        name, key = fresh_account("ark-cancel")
        start = balance(name)
        client = ark(base_url, key)
        task_id = client.content_generation.tasks.create(
            model=clip_models()["2.5"], content=[text("Never made.")], duration=5, ratio="16:9", resolution="720p"
        ).id
        try:
            client.content_generation.tasks.delete(task_id=task_id)
        except ArkBadRequestError as e:
            # Refused because the task already runs: InvalidAction.TaskStatus, "... is running ...".
            assert "TaskStatus" in str(e.code) or "running" in str(e.body.get("message")), e.body
            continue
        break
    else:
        pytest.fail("the task was never still queued when deleted")
    task = client.content_generation.tasks.get(task_id=task_id)
    assert task.status == "cancelled", task
    assert_settled(name, start, Decimal(0))


@pytest.mark.parametrize(
    "series, extra, field",
    [
        ("2.0", dict(content=[text("Too long.")], duration=99), "duration"),
        ("2.5", dict(content=[text("Too long.")], duration=31), "duration"),
        ("2.5", dict(content=[text("Bad size.")], duration=5, resolution="1080p"), "resolution"),
        (
            "2.5",
            dict(content=[text("Both kinds."), image("first_frame", (1, 2, 3)), image("reference_image", (4, 5, 6))], duration=5),
            "content",
        ),
    ],
)
def test_ark_invalid_request_is_400_naming_the_field_and_costs_nothing(base_url, series, extra, field):
    name, key = fresh_account("ark-invalid")
    start = balance(name)
    with pytest.raises(ArkBadRequestError) as caught:
        ark(base_url, key).content_generation.tasks.create(model=clip_models()[series], **extra)
    e = caught.value
    assert e.status_code == 400
    # e.body is the body's `error` object; e.message repeats the whole body, so it is not used.
    assert field in f"{e.code} {e.param} {e.body.get('message')}", e.body
    assert_settled(name, start, Decimal(0))


def test_ark_unknown_task_is_404(base_url, key):
    with pytest.raises(ArkNotFoundError) as caught:
        ark(base_url, key).content_generation.tasks.get(task_id="cgt-20260101000000-nosuc")
    assert caught.value.status_code == 404


# ---- generic video tasks ----

GENERIC_TERMINAL = {"completed", "failed"}

# model → (request, seconds expected, aspect ratio of the file, whether `video_url` comes too)
GENERIC_CASES = {
    "imagine-video": (
        dict(duration=3, aspect_ratio="9:16", seed=7, negative_prompt="blur"), 3, "9:16", False,
    ),
    "horse-1.1-t2v": (dict(duration=4, resolution="720P", aspect_ratio="1:1", seed=11), 4, "1:1", False),
    "wave-2-7-video": (dict(duration=2, resolution="720p", aspect_ratio="16:9"), 2, "16:9", True),
    # `seconds` as a string: the OpenAI-style alias of `duration`.
    "wave-3-0-video": (dict(seconds="5", aspect_ratio="auto", sound=True, watermark=False), 5, "auto", True),
    # No duration: omni's only length, 4 s.
    "omni": (dict(aspect_ratio="16:9"), 4, "16:9", False),
}


def generic_create(base_url: str, key: str, body: dict) -> httpx.Response:
    return httpx.post(
        f"{base_url}/v1/video/generations", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=30
    )


def generic_get(base_url: str, key: str, task_id: str) -> httpx.Response:
    return httpx.get(
        f"{base_url}/v1/video/generations/{task_id}", headers={"Authorization": f"Bearer {key}"}, timeout=30
    )


def generic_record(base_url: str, key: str, task_id: str) -> dict:
    r = generic_get(base_url, key, task_id)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture(scope="module")
def generic_runs():
    """One task per model of the table, plus one that fails, each on its own account, polled
    together to the end."""
    base_url = os.environ["TOLLGATE_BASE_URL"]
    cases = {model: (dict(model=model, prompt=f"A lighthouse at dusk, by {model}.") | body) for model, (body, *_) in GENERIC_CASES.items()}
    cases["fails"] = dict(model="wave-2-7-video", prompt="This one breaks [fail] on purpose.", duration=3)
    runs = {}
    for case, body in cases.items():
        name, key = fresh_account(f"video-{case}")
        start = balance(name)
        r = generic_create(base_url, key, body)
        assert r.status_code == 200, (case, r.status_code, r.text)
        runs[case] = dict(name=name, key=key, start=start, body=body, created=r.json())
    final = poll_together(
        {c: (lambda r=r: generic_record(base_url, r["key"], r["created"]["id"])) for c, r in runs.items()},
        lambda record: record["status"] in GENERIC_TERMINAL,
    )
    for case, run in runs.items():
        run["task"] = final[case]
    return base_url, runs


@pytest.mark.parametrize("model", list(GENERIC_CASES))
def test_generic_task_completes_with_the_video_asked_for_and_bills_its_seconds(generic_runs, model):
    base_url, runs = generic_runs
    run = runs[model]
    _, seconds, ratio, has_video_url = GENERIC_CASES[model]
    created, task = run["created"], run["task"]
    assert created["task_id"] == created["id"]
    assert created["object"] == "video"
    assert created["model"] == model
    assert created["status"] == "queued" and created["progress"] == 0

    assert task["id"] == created["id"] and task["model"] == model
    assert task["status"] == "completed", task
    assert task["progress"] == 100
    assert task["url"]
    if has_video_url:
        assert task["video_url"] == task["url"]
    else:
        assert "video_url" not in task or task["video_url"] in (None, task["url"])
    if task.get("seconds") is not None:
        assert float(task["seconds"]) == seconds
    assert_video(download(task["url"], base_url, run["key"]), seconds, ratio)
    assert_settled(run["name"], run["start"], generic_charge(model, seconds))


def test_generic_failed_task_reports_its_error_and_is_refunded(generic_runs):
    _, runs = generic_runs
    run = runs["fails"]
    task = run["task"]
    assert task["status"] == "failed", task
    assert task["error"]["message"]
    assert "url" not in task or not task["url"]
    assert_settled(run["name"], run["start"], Decimal(0))


def test_generic_task_of_another_key_is_404(generic_runs):
    base_url, runs = generic_runs
    owner, other = runs["omni"], runs["imagine-video"]
    time.sleep(POLL_INTERVAL)  # the fixture's loop may have polled it last moment
    r = generic_get(base_url, other["key"], owner["created"]["id"])
    assert r.status_code == 404, r.text
    assert r.json()["error"]["message"]


@pytest.mark.parametrize(
    "body, param",
    [
        (dict(model="omni", seed=1), "seed"),
        (dict(model="omni", duration=5), "duration"),
        (dict(model="imagine-video", sound=True), "sound"),
        (dict(model="imagine-video", duration=16), "duration"),
        (dict(model="horse-1.1-t2v", seconds="2"), "duration"),
        (dict(model="wave-2-7-video", negative_prompt="rain"), "negative_prompt"),
        (dict(model="wave-3-0-video", aspect_ratio="9:16"), "aspect_ratio"),
        (dict(model="wave-3-0-video", duration=31), "duration"),
    ],
)
def test_generic_invalid_request_is_400_naming_the_param_and_costs_nothing(base_url, body, param):
    name, key = fresh_account("video-invalid")
    start = balance(name)
    r = generic_create(base_url, key, dict(prompt="A lighthouse at dusk.") | body)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["param"] == param, error
    assert error["message"]
    assert_settled(name, start, Decimal(0))
