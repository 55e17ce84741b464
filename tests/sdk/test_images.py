"""OpenAI Images with the OpenAI Python SDK, unmodified (docs/api.md §2.13): `images.generate`
decoded by Pillow at the size asked, `images.edit` with two images and a mask, and a stream of
partial images — each charge checked to the nano-unit against OpenAI's published tokens and the
embedded default's prices for gpt-image-2 (text in 5, image in 8, image out 30 per million);
and the models priced by the picture (dall-e-3, dall-e-2 in the embedded default): a `url`
answer fetched, with no key, from the gateway's own signed link, and `images.create_variation`."""

import base64
import io
import itertools
from decimal import Decimal

import httpx
import openai
from PIL import Image

from conftest import balance, new_key

_names = itertools.count()
MILLION = Decimal(1_000_000)


def client(base_url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base_url}/v1", api_key=key, max_retries=0)


def text_tokens(prompt: str) -> int:
    """The simulator's honest text tokens: one for every four bytes."""
    return -(-len(prompt.encode()) // 4)


def picture(width: int, height: int, color=(200, 30, 60, 255)) -> bytes:
    out = io.BytesIO()
    Image.new("RGBA", (width, height), color).save(out, format="PNG")
    return out.getvalue()


def test_generate_draws_the_size_asked_and_charges_openais_tokens(base_url):
    key = new_key(f"images-{next(_names)}", "5")
    prompt = "A paper boat on a rainy street"
    raw = client(base_url, key).images.with_raw_response.generate(
        model="gpt-image-2", prompt=prompt, size="1024x1536", quality="medium", n=2, output_format="webp"
    )
    answer = raw.parse()
    assert len(answer.data) == 2
    for image in answer.data:
        decoded = Image.open(io.BytesIO(base64.b64decode(image.b64_json)))
        assert decoded.size == (1024, 1536)
        assert decoded.format == "WEBP"
    assert answer.size == "1024x1536"
    # gpt-image-2 at 1024x1536 medium: 1,372 image tokens an image.
    assert answer.usage.output_tokens == 2 * 1_372
    expected = (text_tokens(prompt) * Decimal(5) + 2 * 1_372 * Decimal(30)) / MILLION
    assert Decimal(raw.headers["x-tollgate-charge"]) == expected
    assert "image_out=2744" in raw.headers["x-tollgate-units"]


def test_edit_of_two_images_and_a_mask_charges_each_input_by_its_size(base_url):
    key = new_key(f"images-{next(_names)}", "5")
    prompt = "Seat the two of them at one table"
    raw = client(base_url, key).images.with_raw_response.edit(
        model="gpt-image-2",
        image=[("a.png", picture(1024, 1024), "image/png"), ("b.png", picture(1920, 1080), "image/png")],
        mask=("mask.png", picture(1024, 1024, (0, 0, 0, 0)), "image/png"),
        prompt=prompt,
        size="1024x1024",
        quality="low",
    )
    answer = raw.parse()
    decoded = Image.open(io.BytesIO(base64.b64decode(answer.data[0].b64_json)))
    assert decoded.size == (1024, 1024)
    # Inputs: 1024² is one 512 tile (65 + 129), 1920x1080 two (65 + 258), the mask one; out: 196.
    expected = (text_tokens(prompt) * Decimal(5) + (194 + 323 + 194) * Decimal(8) + 196 * Decimal(30)) / MILLION
    assert Decimal(raw.headers["x-tollgate-charge"]) == expected


def test_a_stream_of_partial_images_sharpens_and_ends_with_the_usage(base_url):
    key = new_key(f"images-{next(_names)}", "5")
    prompt = "A lantern in the fog"
    events = list(
        client(base_url, key).images.generate(
            model="gpt-image-2", prompt=prompt, size="1024x1024", quality="low", stream=True, partial_images=2
        )
    )
    kinds = [event.type for event in events]
    assert kinds == [
        "image_generation.partial_image",
        "image_generation.partial_image",
        "image_generation.completed",
    ]
    assert [e.partial_image_index for e in events[:2]] == [0, 1]
    decoded = [Image.open(io.BytesIO(base64.b64decode(e.b64_json))).convert("RGB") for e in events]
    assert all(image.size == (1024, 1024) for image in decoded)
    # Each partial image sharper than the last: more distinct colors.
    colors = [len(image.getcolors(1 << 24)) for image in decoded]
    assert colors[0] < colors[1] < colors[2], colors
    usage = events[-1].usage
    assert usage.output_tokens == 196 + 200
    assert usage.input_tokens == text_tokens(prompt)


def test_litellm_image_generation_is_charged_openais_tokens(base_url):
    """LiteLLM's `image_generation` through its OpenAI provider, pointed at the gateway: the
    image at the size asked, the charge gpt-image-2's low-quality 196 tokens and the prompt."""
    import os

    # LiteLLM fetches its price list from the network at import unless told to use its own copy.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    name = f"images-{next(_names)}"
    key = new_key(name, "5")
    prompt = "A lantern in the fog"
    answer = litellm.image_generation(
        model="openai/gpt-image-2",
        prompt=prompt,
        size="1024x1024",
        quality="low",
        n=1,
        api_base=f"{base_url}/v1",
        api_key=key,
    )
    decoded = Image.open(io.BytesIO(base64.b64decode(answer.data[0].b64_json)))
    assert decoded.size == (1024, 1024)
    expected = (text_tokens(prompt) * Decimal(5) + 196 * Decimal(30)) / MILLION
    assert Decimal(5) - balance(name) == expected


def test_dall_e_answers_by_the_gateways_own_link_and_charges_the_picture(base_url):
    key = new_key(f"images-{next(_names)}", "5")
    raw = client(base_url, key).images.with_raw_response.generate(
        model="dall-e-3", prompt="A lighthouse in a storm", size="1792x1024", quality="hd", style="natural"
    )
    answer = raw.parse()
    (image,) = answer.data
    assert image.b64_json is None
    assert image.url.startswith(f"{base_url}/v1/media/images/img_"), image.url
    assert image.revised_prompt
    # The link is the credential: no key.
    fetched = httpx.get(image.url)
    assert fetched.status_code == 200
    assert fetched.headers["content-type"] == "image/png"
    assert Image.open(io.BytesIO(fetched.content)).size == (1792, 1024)
    # The embedded default's dall-e-3 at 1792x1024 hd: 0.12 a picture.
    assert Decimal(raw.headers["x-tollgate-charge"]) == Decimal("0.12")
    assert "images=1" in raw.headers["x-tollgate-units"]
    forged = image.url.replace("signature=", "signature=00")
    assert httpx.get(forged).status_code == 403


def test_dall_e_2_variations_of_one_square_png(base_url):
    key = new_key(f"images-{next(_names)}", "5")
    raw = client(base_url, key).images.with_raw_response.create_variation(
        model="dall-e-2",
        image=("a.png", picture(512, 512), "image/png"),
        n=2,
        size="256x256",
        response_format="b64_json",
    )
    answer = raw.parse()
    assert len(answer.data) == 2
    for image in answer.data:
        assert Image.open(io.BytesIO(base64.b64decode(image.b64_json))).size == (256, 256)
    assert Decimal(raw.headers["x-tollgate-charge"]) == 2 * Decimal("0.016")
    try:
        client(base_url, key).images.create_variation(
            model="dall-e-2", image=("w.png", picture(640, 480), "image/png")
        )
        raise AssertionError("a picture that is not square was varied")
    except openai.BadRequestError as e:
        assert e.body["param"] == "image"
