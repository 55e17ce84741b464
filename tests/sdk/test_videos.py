"""The OpenAI Videos API (docs/api.md §2.8.1) driven by the OpenAI Python SDK, unmodified:
`videos.create_and_poll` (it waits as `openai-poll-after-ms` says), `download_content`, `list`,
`delete`, on the generic models of §2.8; the money exact; what a model cannot make refused in
OpenAI's shape naming `seconds` or `size`; another account's video 404."""

import io

import av
import openai
import pytest
from openai import OpenAI

from decimal import Decimal

from conftest import account, balance
from test_video import (
    assert_settled,
    assert_video,
    charge,
    fresh_account,
    generic_charge,
    model_price,
    mp4_info,
    tiny_png,
)

# The SDK warns that OpenAI's own Sora service closes (September 2026); the API it speaks is what
# gateways serve (docs/decisions.md, "OpenAI Videos").
pytestmark = pytest.mark.filterwarnings("ignore:The Sora API is scheduled:DeprecationWarning")


def client(base_url: str, key: str) -> OpenAI:
    return OpenAI(base_url=f"{base_url}/v1", api_key=key, max_retries=0)


def test_create_and_poll_download_list_delete_and_the_charge(base_url):
    name, key = fresh_account("videos")
    start = balance(name)
    videos = client(base_url, key).videos
    video = videos.create_and_poll(
        model="wave-3-0-video", prompt="A lighthouse at dusk.", seconds="4", size="854x480"
    )
    assert video.status == "completed", video
    assert (video.object, video.model, video.progress) == ("video", "wave-3-0-video", 100)
    assert (video.seconds, video.size) == ("4", "854x480")
    assert video.completed_at and video.expires_at and video.expires_at > video.completed_at
    # Issue 42 item 13: the SDK's ordinary pace — a retrieve right after create_and_poll saw
    # the end — is served (a finished video costs nothing to read), again and again.
    for _ in range(3):
        assert videos.retrieve(video.id).status == "completed"
    data = videos.download_content(video.id).read()
    assert_video(data, 4, "16:9")
    assert_settled(name, start, generic_charge("wave-3-0-video", 4))

    # A second one, the model's defaults, then the list: newest first, by cursor.
    second = videos.create_and_poll(model="omni", prompt="A kite.")
    assert (second.status, second.seconds, second.size) == ("completed", "4", "1280x720")
    page = videos.list(limit=1)
    assert [v.id for v in page.data] == [second.id] and page.has_more
    assert [v.id for v in videos.list(limit=1, after=second.id).data] == [video.id]
    assert [v.id for v in videos.list(order="asc").data] == [video.id, second.id]

    # A remix: the same model, seconds and size, a new prompt, billed as a new video.
    remix = videos.remix(video.id, prompt="The lighthouse at dawn.")
    assert (remix.remixed_from_video_id, remix.seconds, remix.size) == (video.id, "4", "854x480")
    remix = videos.poll(remix.id)
    assert remix.status == "completed", remix

    deleted = videos.delete(video.id)
    assert (deleted.id, deleted.deleted) == (video.id, True)
    with pytest.raises(openai.NotFoundError):
        videos.retrieve(video.id)
    assert [v.id for v in videos.list().data] == [remix.id, second.id]
    assert_settled(name, start, 2 * generic_charge("wave-3-0-video", 4) + generic_charge("omni", 4))


def test_a_clip_model_through_the_videos_api_bills_its_tokens(base_url):
    name, key = fresh_account("videos-clip")
    start = balance(name)
    videos = client(base_url, key).videos
    video = videos.create_and_poll(
        model="clipgen-cn-2.0-260128", prompt="A paper boat.", seconds="5", size="1280x720"
    )
    assert (video.status, video.seconds, video.size) == ("completed", "5", "1280x720"), video
    assert_video(videos.download_content(video.id).read(), 5, "16:9")
    state = account(name)
    assert Decimal(state["balance"]) < start and Decimal(state["held"]) == 0, state

    # Starting from an image: the SDK sends input_reference as a form file, the first frame.
    framed = videos.create_and_poll(
        model="clipgen-cn-2.0-260128",
        prompt="The boat sails off.",
        input_reference=("first.png", tiny_png(16, 9), "image/png"),
    )
    assert framed.status == "completed", framed
    with pytest.raises(openai.BadRequestError) as refused:
        videos.create(model="omni", prompt="x", input_reference=("first.png", tiny_png(), "image/png"))
    assert refused.value.body["param"] == "input_reference"


def test_a_failed_video_is_refunded(base_url):
    name, key = fresh_account("videos-fail")
    start = balance(name)
    video = client(base_url, key).videos.create_and_poll(
        model="wave-2-7-video", prompt="This one breaks [fail] on purpose.", seconds="3"
    )
    assert video.status == "failed" and video.error and video.error.message, video
    assert_settled(name, start, 0)


@pytest.mark.parametrize(
    "body, param",
    [
        (dict(model="wave-3-0-video", size="1280x720"), "size"),
        (dict(model="wave-3-0-video", seconds="60"), "seconds"),
        (dict(model="imagine-video", size="720x1280"), "size"),
        (dict(model="omni", seconds="four"), "seconds"),
        (dict(model="no-such-video-model"), "model"),
    ],
)
def test_what_a_model_cannot_make_is_refused_by_name_and_costs_nothing(base_url, body, param):
    name, key = fresh_account("videos-bad")
    start = balance(name)
    with pytest.raises(openai.BadRequestError) as refused:
        client(base_url, key).videos.create(prompt="x", **body)
    assert refused.value.status_code == 400
    assert refused.value.body["param"] == param, refused.value.body
    assert_settled(name, start, 0)


def test_another_accounts_video_is_not_found(base_url):
    _, owner = fresh_account("videos-owner")
    _, other = fresh_account("videos-other")
    video = client(base_url, owner).videos.create(model="omni", prompt="Mine.")
    for call in (
        lambda v: v.retrieve(video.id),
        lambda v: v.delete(video.id),
        lambda v: v.download_content(video.id),
    ):
        with pytest.raises(openai.NotFoundError):
            call(client(base_url, other).videos)
    assert client(base_url, other).videos.list().data == []


def test_what_no_model_here_can_do_is_refused_and_not_retried(base_url):
    _, key = fresh_account("videos-unsupported")
    videos = client(base_url, key).videos
    for call in (
        lambda: videos.edit(prompt="x", video=("v.mp4", b"\0" * 64, "video/mp4")),
        lambda: videos.extend(prompt="x", seconds="4", video=("v.mp4", b"\0" * 64, "video/mp4")),
        lambda: videos.create_character(name="x", video=("v.mp4", b"\0" * 64, "video/mp4")),
        lambda: videos.get_character("char_1"),
    ):
        with pytest.raises(openai.BadRequestError) as refused:
            call()
        assert refused.value.code == "unsupported_operation", refused.value.body


def webp_size(data: bytes) -> tuple[int, int]:
    """Width and height of a lossless WebP (RIFF, WEBP, VP8L: 14 bits each after the signature)."""
    assert data[:4] == b"RIFF" and data[8:12] == b"WEBP" and data[12:16] == b"VP8L", data[:16]
    assert data[20] == 0x2F
    bits = int.from_bytes(data[21:25], "little")
    return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1


def jpeg_size(data: bytes) -> tuple[int, int]:
    """Width and height from a JPEG's baseline frame header (SOF0)."""
    assert data[:3] == b"\xff\xd8\xff", data[:4]
    at = 2
    while at < len(data):
        marker, length = data[at + 1], int.from_bytes(data[at + 2 : at + 4], "big")
        if marker == 0xC0:
            height = int.from_bytes(data[at + 5 : at + 7], "big")
            width = int.from_bytes(data[at + 7 : at + 9], "big")
            return width, height
        at += 2 + length
    raise AssertionError("no SOF0 in the JPEG")


def ffmpeg_image(data: bytes) -> tuple[str, int, int]:
    """A still decoded by FFmpeg's libraries (PyAV): its decoder's name and its size."""
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.video[0]
        frame = next(container.decode(stream))
        return stream.codec_context.name, frame.width, frame.height


def test_a_sora_style_channel_with_the_sdks_defaults_its_sizes_prices_and_stills(base_url):
    """The default configuration's sora-2 and sora-2-pro come from an openai-videos channel: the
    SDK's defaults (sora-2, 4 s, 720x1280) work as they do at OpenAI, a large size is charged at
    its own price, and the thumbnail and spritesheet download beside the MP4."""
    name, key = fresh_account("sora")
    start = balance(name)
    videos = client(base_url, key).videos
    default = videos.create_and_poll(prompt="A paper crane.")
    assert (default.status, default.model, default.seconds, default.size) == (
        "completed", "sora-2", "4", "720x1280"), default
    assert_video(videos.download_content(default.id).read(), 4, "9:16")

    pro = videos.create_and_poll(
        model="sora-2-pro", prompt="A lighthouse, wide.", seconds="8", size="1792x1024"
    )
    assert (pro.status, pro.seconds, pro.size) == ("completed", "8", "1792x1024"), pro
    data = videos.download_content(pro.id).read()
    assert_video(data, 8, "7:4")
    frame = mp4_info(data)
    thumbnail = videos.download_content(pro.id, variant="thumbnail")
    assert thumbnail.response.headers["content-type"] == "image/webp"
    still = thumbnail.read()
    assert webp_size(still) == (frame["width"], frame["height"])
    assert ffmpeg_image(still) == ("webp", frame["width"], frame["height"])
    sheet = videos.download_content(pro.id, variant="spritesheet")
    assert sheet.response.headers["content-type"] == "image/jpeg"
    grid = sheet.read()
    width, height = jpeg_size(grid)
    assert ffmpeg_image(grid) == ("mjpeg", width, height)
    assert (width % frame["width"], height % frame["height"]) == (0, 0)
    assert width // frame["width"] >= 2 and height // frame["height"] >= 2

    price = model_price("sora-2-pro", "video_seconds")
    large = charge(8, Decimal(price["per_second_by_size"]["1792x1024"]))
    assert large > charge(8, Decimal(price["per_second"]))
    assert_settled(name, start, generic_charge("sora-2", 4) + large)

    # A size sora-2 does not make is refused by name and costs nothing.
    with pytest.raises(openai.BadRequestError) as refused:
        videos.create(model="sora-2", prompt="x", size="1792x1024")
    assert refused.value.param == "size"
    # A model of the generic vendor has no stills: the variant is refused by name.
    wave = videos.create_and_poll(model="wave-3-0-video", prompt="x", seconds="2")
    with pytest.raises(openai.BadRequestError) as refused:
        videos.download_content(wave.id, variant="thumbnail")
    assert refused.value.param == "variant"
