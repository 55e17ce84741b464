"""The native family's image output with the vendor's own SDK, `google-genai`, unmodified
(docs/api.md §2.9, §8 rules 10–11), and Imagen's `:predict` over HTTP: `generate_content` and
`generate_content_stream` on the embedded
default's image models, each image opened by Pillow at the ratio and size asked, and each charge
checked to the nano-unit from the usage the client saw — text at the text prices, images at the
image-out price (gen-2.5-flash-image: text in 0.30, text out 2.50, image out 30 per million;
gen-3-pro-image-preview: 2, 12 and 120)."""

import base64
import io
import itertools
import time
from decimal import ROUND_CEILING, Decimal

import httpx
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from PIL import Image

from conftest import account, new_key

NANO = Decimal("0.000000001")
MILLION = Decimal(1_000_000)
PRICES = {
    "gen-2.5-flash-image": (Decimal("0.30"), Decimal("2.50"), Decimal(30)),
    "gen-3-pro-image-preview": (Decimal(2), Decimal(12), Decimal(120)),
}
_names = itertools.count()


def fresh_account(amount: str = "10") -> tuple[str, str]:
    name = f"sdk-native-images-{next(_names)}-{time.monotonic_ns()}"
    return name, new_key(name, amount)


def client(base_url: str, key: str) -> genai.Client:
    return genai.Client(api_key=key, http_options=types.HttpOptions(base_url=base_url, api_version="v1beta"))


def by_modality(details, modality: str) -> int:
    return sum(d.token_count or 0 for d in details or [] if str(d.modality).endswith(modality))


def charge(model: str, usage) -> Decimal:
    """The class charge of a usage: the prompt at text in, text and thinking at text out, the
    images at image out, rounded up once."""
    text_in, text_out, image_out = PRICES[model]
    images = by_modality(usage.candidates_tokens_details, "IMAGE")
    text = (usage.candidates_token_count or 0) - images + (usage.thoughts_token_count or 0)
    exact = (usage.prompt_token_count * text_in + text * text_out + images * image_out) / MILLION
    return exact.quantize(NANO, rounding=ROUND_CEILING)


def paid(name: str, start: Decimal = Decimal(10)) -> Decimal:
    """What the account paid, once it holds nothing."""
    deadline = time.monotonic() + 10
    while True:
        state = account(name)
        if state["open_holds"] == 0 and Decimal(state["held"]) == 0:
            return start - Decimal(state["balance"])
        if time.monotonic() > deadline:
            pytest.fail(f"the account still holds money: {state}")
        time.sleep(0.05)


def pictures(parts) -> list[Image.Image]:
    return [Image.open(io.BytesIO(p.inline_data.data)) for p in parts or [] if p.inline_data]


def test_generate_content_draws_the_ratio_asked_and_charges_the_image_price(base_url):
    name, key = fresh_account()
    c = client(base_url, key)
    model = "gen-2.5-flash-image"
    answer = c.models.generate_content(
        model=model,
        contents="A lighthouse at dusk",
        config=types.GenerateContentConfig(
            response_modalities=["TEXT", "IMAGE"],
            image_config=types.ImageConfig(aspect_ratio="16:9"),
        ),
    )
    images = pictures(answer.candidates[0].content.parts)
    assert [(i.format, i.size) for i in images] == [("PNG", (1344, 768))]
    usage = answer.usage_metadata
    assert by_modality(usage.candidates_tokens_details, "IMAGE") == 1_290
    assert paid(name) == charge(model, usage)


def test_a_stream_relays_the_image_and_charges_as_the_whole(base_url):
    name, key = fresh_account()
    c = client(base_url, key)
    model = "gen-3-pro-image-preview"
    parts, usage = [], None
    for chunk in c.models.generate_content_stream(
        model=model,
        contents="A windmill in the rain",
        config=types.GenerateContentConfig(image_config=types.ImageConfig(aspect_ratio="1:1", image_size="2K")),
    ):
        if chunk.candidates and chunk.candidates[0].content:
            parts.extend(chunk.candidates[0].content.parts or [])
        usage = chunk.usage_metadata or usage
    images = pictures(parts)
    assert [i.size for i in images] == [(2048, 2048)]
    assert by_modality(usage.candidates_tokens_details, "IMAGE") == 1_120
    assert paid(name) == charge(model, usage)


def test_images_asked_of_a_text_model_are_refused_and_cost_nothing(base_url):
    name, key = fresh_account()
    c = client(base_url, key)
    with pytest.raises(genai_errors.ClientError) as caught:
        c.models.generate_content(
            model="gen-2.5-flash",
            contents="A cat",
            config=types.GenerateContentConfig(response_modalities=["IMAGE"]),
        )
    assert caught.value.code == 400
    assert "responseModalities" in str(caught.value.message), caught.value.details
    with pytest.raises(genai_errors.ClientError) as caught:
        c.models.generate_content(
            model="gen-2.5-flash-image",
            contents="A cat",
            config=types.GenerateContentConfig(image_config=types.ImageConfig(image_size="4K")),
        )
    assert caught.value.code == 400 and "imageSize" in str(caught.value.message)
    assert paid(name) == 0



def test_imagen_predict_is_charged_by_the_picture(base_url):
    """Imagen's `:predict` over raw HTTP: google-genai 3.4.0 calls it only on the vendor's
    enterprise platform and deprecates it for the developer API (image models answer through
    `generate_content` instead), so a client of the developer API's `:predict` speaks HTTP. Each
    picture costs 0.04 (imagen-4.0-generate-001 in the default); a picture the vendor filters
    comes back with its reason and costs nothing."""
    name, key = fresh_account()
    url = f"{base_url}/v1beta/models/imagen-4.0-generate-001:predict"
    headers = {"x-goog-api-key": key}
    body = {
        "instances": [{"prompt": "A fox in the snow"}],
        "parameters": {"sampleCount": 2, "aspectRatio": "16:9", "outputOptions": {"mimeType": "image/jpeg"}},
    }
    answer = httpx.post(url, json=body, headers=headers, timeout=60).raise_for_status().json()
    images = [Image.open(io.BytesIO(base64.b64decode(p["bytesBase64Encoded"]))) for p in answer["predictions"]]
    assert [(i.format, i.size) for i in images] == [("JPEG", (1408, 768))] * 2
    assert paid(name) == Decimal("0.08")
    body = {"instances": [{"prompt": "[refuse] a crowd"}], "parameters": {"sampleCount": 2}}
    answer = httpx.post(url, json=body, headers=headers, timeout=60).raise_for_status().json()
    assert [bool(p.get("bytesBase64Encoded")) for p in answer["predictions"]] == [True, False]
    assert answer["predictions"][1]["raiFilteredReason"]
    assert paid(name) == Decimal("0.12")
    ultra = f"{base_url}/v1beta/models/imagen-4.0-ultra-generate-001:predict"
    refused = httpx.post(ultra, json={"instances": [{"prompt": "a"}], "parameters": {"sampleCount": 2}}, headers=headers)
    assert refused.status_code == 400 and "parameters.sampleCount" in refused.json()["error"]["message"]
    assert paid(name) == Decimal("0.12")


def test_generate_images_in_express_mode_is_charged_by_the_picture(base_url):
    """The SDK's own `generate_images`, in the mode it serves it (the vendor's enterprise
    platform, express: a key and no project), which calls
    `/v1beta1/publishers/google/models/{model}:predict`."""
    name, key = fresh_account()
    c = genai.Client(vertexai=True, api_key=key, http_options=types.HttpOptions(base_url=base_url))
    answer = c.models.generate_images(
        model="imagen-4.0-fast-generate-001",
        prompt="A paper boat",
        config=types.GenerateImagesConfig(number_of_images=3, aspect_ratio="3:4"),
    )
    images = [Image.open(io.BytesIO(g.image.image_bytes)) for g in answer.generated_images]
    assert [(i.format, i.size) for i in images] == [("PNG", (896, 1280))] * 3
    assert paid(name) == Decimal("0.06")
    with pytest.raises(genai_errors.ClientError) as caught:
        c.models.generate_images(
            model="imagen-4.0-fast-generate-001",
            prompt="A paper boat",
            config=types.GenerateImagesConfig(image_size="2K"),
        )
    assert caught.value.code == 400 and "sampleImageSize" in str(caught.value.message)
    assert paid(name) == Decimal("0.06")
