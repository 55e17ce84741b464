"""The source of openapi.json, the OpenAPI 3.1 document served at GET /openapi.json.

Edit this file, then regenerate the document:

    python3 crates/admin/src/assets/openapi.py > crates/admin/src/assets/openapi.json

CI regenerates it and fails if the committed document differs. The schemas follow docs/api.md
(client endpoints) and docs/operations.md (admin API); docs/decisions.md, "The OpenAPI
document", says why it is written here rather than derived from the Rust types.
"""
import json

def ref(name):
    return {"$ref": f"#/components/schemas/{name}"}

def resp(name):
    return {"$ref": f"#/components/responses/{name}"}

def json_body(schema, required=True, desc=None):
    b = {"required": required, "content": {"application/json": {"schema": schema}}}
    if desc:
        b["description"] = desc
    return b

def ok_json(schema, desc="OK"):
    return {"description": desc, "content": {"application/json": {"schema": schema}}}

AMOUNT = {"type": "string", "pattern": r"^-?[0-9]+(\.[0-9]+)?$",
          "description": "An exact decimal amount of money (never a float)."}

RESPONSES = {}

def errors(family, codes):
    r = {}
    names = {400: "Bad request: a field broke a rule (`param` names it)", 401: "No credential, or an unknown one",
             403: "Disabled, revoked, or refused by an access policy", 404: "No such model, task, account or route",
             405: "Another method is allowed here", 408: "The request body stalled", 409: "Conflicts with what exists",
             413: "The body is over the endpoint's limit", 415: "The body is not of a type the endpoint takes",
             429: "Rate limited, over a spend cap, or the balance does not cover the hold",
             500: "The gateway failed; nothing was charged", 501: "Not supported",
             502: "The upstream failed; nothing was charged", 503: "Shutting down, or no channel can take the request",
             504: "The upstream took too long; nothing was charged"}
    for c in codes:
        RESPONSES[f"{family}{c}"] = {"description": names[c], "content": {"application/json": {"schema": ref(family)}}}
        r[str(c)] = resp(f"{family}{c}")
    return r

CLIENT_ERR = [400, 401, 403, 404, 405, 408, 413, 415, 429, 500, 502, 503, 504]
READ_ERR = [400, 401, 403, 404, 405, 429, 500, 502, 503, 504]

schemas = {
    "OpenAiError": {
        "type": "object", "required": ["error"],
        "description": "The OpenAI-family error shape (also the admin API's).",
        "properties": {"error": {"type": "object", "required": ["message", "type"],
                                  "properties": {"message": {"type": "string"}, "type": {"type": "string"},
                                                 "param": {"type": ["string", "null"]},
                                                 "code": {"type": ["string", "null"]}}}}},
    "ArkError": {
        "type": "object", "required": ["error"],
        "description": "The clip-task family's error shape: string codes such as `InvalidParameter.duration`.",
        "properties": {"error": {"type": "object", "required": ["code", "message"],
                                  "properties": {"code": {"type": "string"}, "message": {"type": "string"},
                                                 "param": {"type": ["string", "null"]},
                                                 "type": {"type": ["string", "null"]}}}}},
    "GoogleError": {
        "type": "object", "required": ["error"],
        "description": "The native family's error shape (an RPC status).",
        "properties": {"error": {"type": "object", "required": ["code", "message", "status"],
                                  "properties": {"code": {"type": "integer"}, "message": {"type": "string"},
                                                 "status": {"type": "string"}, "details": {"type": "array"}}}}},
    "T2aError": {
        "type": "object", "required": ["base_resp"],
        "description": "The t2a family's error shape: `base_resp.status_code` is not 0.",
        "properties": {"base_resp": ref("BaseResp")}},
    "OpenAiOrGoogleError": {"description": "The OpenAI shape, or the native one when the key came in a native header (x-vendor-api-key, x-goog-api-key).",
                            "anyOf": [ref("OpenAiError"), ref("GoogleError")]},
    "GoogleStreamError": {"description": "Without alt=sse the native stream is a JSON array, and so is its error (wire-formats §6.3).",
                          "anyOf": [ref("GoogleError"), {"type": "array", "items": ref("GoogleError")}]},
    "BaseResp": {"type": "object", "required": ["status_code", "status_msg"],
                 "properties": {"status_code": {"type": "integer"}, "status_msg": {"type": "string"}}},
    "Amount": AMOUNT,
    # --- client requests
    "SpeechRequest": {
        "type": "object", "required": ["model", "input", "voice"],
        "properties": {
            "model": {"type": "string", "examples": ["tts-1", "speech-2.8-hd"]},
            "input": {"type": "string", "maxLength": 10000,
                      "description": "At most 10,000 characters (2,000 for wav, flac and pcm). Billed per character; CJK count 2."},
            "voice": {"type": "string"},
            "response_format": {"type": "string", "examples": ["mp3", "wav", "flac", "pcm", "opus", "aac"]},
            "speed": {"type": "number", "minimum": 0.5, "maximum": 2.0},
            "instructions": {"type": "string"},
            "stream_format": {"type": "string", "enum": ["audio", "sse"]}}},
    "T2aRequest": {
        "type": "object", "required": ["model", "text"],
        "properties": {
            "model": {"type": "string", "examples": ["speech-2.8-hd"]},
            "text": {"type": "string", "maxLength": 10000},
            "stream": {"type": "boolean"},
            "voice_setting": {"type": "object", "properties": {
                "voice_id": {"type": "string"}, "speed": {"type": "number"}, "vol": {"type": "number"},
                "pitch": {"type": "integer"}, "emotion": {"type": "string"}}},
            "audio_setting": {"type": "object", "properties": {
                "format": {"type": "string"}, "sample_rate": {"type": "integer"},
                "bitrate": {"type": "integer"}, "channel": {"type": "integer"}}},
            "pronunciation_dict": {"type": "object"}, "language_boost": {"type": ["string", "null"]},
            "voice_modify": {"type": "object"}, "output_format": {"type": "string", "enum": ["hex"]}}},
    "T2aResponse": {
        "type": "object", "required": ["base_resp"],
        "description": "HTTP 200 carries both outcomes: `base_resp.status_code` 0 with `data.audio` (hex) and `extra_info`, or an error code.",
        "properties": {"data": {"type": ["object", "null"], "properties": {"audio": {"type": "string"}, "status": {"type": "integer"}}},
                       "extra_info": {"type": ["object", "null"], "properties": {"usage_characters": {"type": "integer"}}},
                       "trace_id": {"type": "string"}, "base_resp": ref("BaseResp")}},
    "EmbeddingsRequest": {
        "type": "object", "required": ["model", "input"],
        "properties": {
            "model": {"type": "string", "examples": ["text-embedding-3-small"]},
            "input": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}},
                                 {"type": "array", "items": {"type": "integer"}},
                                 {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}]},
            "dimensions": {"type": "integer", "minimum": 1},
            "encoding_format": {"type": "string", "enum": ["float", "base64"]},
            "user": {"type": "string"}}},
    "EmbeddingsResponse": {
        "type": "object", "required": ["object", "data", "model", "usage"],
        "properties": {"object": {"const": "list"},
                       "data": {"type": "array", "items": {"type": "object", "required": ["embedding", "index"],
                                                            "properties": {"object": {"const": "embedding"},
                                                                           "embedding": {"type": ["array", "string"]},
                                                                           "index": {"type": "integer"}}}},
                       "model": {"type": "string"},
                       "usage": {"type": "object", "properties": {"prompt_tokens": {"type": "integer"}, "total_tokens": {"type": "integer"}}}}},
    "ClipTaskRequest": {
        "type": "object", "required": ["model", "content"],
        "properties": {
            "model": {"type": "string", "examples": ["clipgen-cn-2.0-260128"]},
            "content": {"type": "array", "items": {"type": "object", "required": ["type"], "properties": {
                "type": {"type": "string", "enum": ["text", "image_url", "video_url", "audio_url"]},
                "text": {"type": "string"}, "role": {"type": "string"},
                "image_url": {"type": "object", "properties": {"url": {"type": "string"}}},
                "video_url": {"type": "object", "properties": {"url": {"type": "string"}}}}}},
            "duration": {"type": "number"}, "resolution": {"type": "string", "enum": ["480p", "720p"]},
            "ratio": {"type": "string", "enum": ["16:9", "9:16", "1:1", "4:3", "3:4", "21:9", "adaptive"]},
            "generate_audio": {"type": "boolean"}, "watermark": {"type": "boolean"}, "seed": {"type": "integer"},
            "callback_url": {"type": "string"}, "return_last_frame": {"type": "boolean"}}},
    "ClipTaskCreated": {"type": "object", "required": ["id"],
                        "properties": {"id": {"type": "string"}, "model": {"type": "string"},
                                       "status": {"type": "string"}, "created_at": {"type": "integer"}}},
    "ClipTask": {"type": "object", "required": ["id", "status"],
                 "properties": {"id": {"type": "string"}, "model": {"type": "string"},
                                "status": {"type": "string", "enum": ["queued", "running", "succeeded", "failed", "cancelled", "expired"]},
                                "content": {"type": ["object", "null"]}, "usage": {"type": ["object", "null"]},
                                "error": {"type": ["object", "null"]}, "created_at": {"type": "integer"},
                                "updated_at": {"type": "integer"}}},
    "ClipTaskList": {"type": "object", "required": ["items", "total"],
                     "properties": {"items": {"type": "array", "items": ref("ClipTask")}, "total": {"type": "integer"}}},
    "VideoRequest": {
        "type": "object", "required": ["model", "prompt"],
        "properties": {"model": {"type": "string", "examples": ["wave-2-7-video"]}, "prompt": {"type": "string"},
                       "duration": {"type": "number"}, "seconds": {"type": ["number", "string"]},
                       "resolution": {"type": "string"}, "aspect_ratio": {"type": "string"},
                       "seed": {"type": "integer"}, "negative_prompt": {"type": "string"},
                       "sound": {"type": "boolean"}, "watermark": {"type": "boolean"}}},
    "VideoTask": {"type": "object", "required": ["id", "task_id", "object", "model", "status", "progress"],
                  "properties": {"id": {"type": "string"}, "task_id": {"type": "string"}, "object": {"const": "video"},
                                 "model": {"type": "string"},
                                 "status": {"type": "string", "enum": ["queued", "in_progress", "completed", "failed"]},
                                 "progress": {"type": "integer", "minimum": 0, "maximum": 100},
                                 "created_at": {"type": "integer"}, "url": {"type": ["string", "null"]},
                                 "video_url": {"type": ["string", "null"]},
                                 "error": {"type": ["object", "null"]}}},
    "GenerateContentRequest": {
        "type": "object", "required": ["contents"],
        "properties": {"contents": {"type": "array", "items": {"type": "object", "properties": {
            "role": {"type": "string"}, "parts": {"type": "array", "items": {"type": "object"}}}}},
            "systemInstruction": {"type": "object"}, "tools": {"type": "array"},
            "generationConfig": {"type": "object", "properties": {
                "maxOutputTokens": {"type": "integer"}, "temperature": {"type": "number"},
                "thinkingConfig": {"type": "object", "properties": {
                    "thinkingBudget": {"type": "integer"}, "includeThoughts": {"type": "boolean"}}}}},
            "safetySettings": {"type": "array"}}},
    "GenerateContentResponse": {"type": "object", "properties": {
        "candidates": {"type": "array"}, "usageMetadata": {"type": "object", "properties": {
            "promptTokenCount": {"type": "integer"}, "candidatesTokenCount": {"type": "integer"},
            "thoughtsTokenCount": {"type": "integer"}, "totalTokenCount": {"type": "integer"}}},
        "modelVersion": {"type": "string"}}},
    "CountTokensResponse": {"type": "object", "required": ["totalTokens"], "properties": {"totalTokens": {"type": "integer"}}},
    "ChatRequest": {"type": "object", "required": ["model", "messages"], "properties": {
        "model": {"type": "string", "examples": ["gen-2.5-flash"]},
        "messages": {"type": "array", "items": {"type": "object", "required": ["role"], "properties": {
            "role": {"type": "string"}, "content": {}}}},
        "stream": {"type": "boolean"}, "max_tokens": {"type": "integer"}, "max_completion_tokens": {"type": "integer"},
        "temperature": {"type": "number"}, "reasoning_effort": {"type": "string"}}},
    "ChatResponse": {"type": "object", "required": ["id", "object", "choices"], "properties": {
        "id": {"type": "string"}, "object": {"const": "chat.completion"}, "model": {"type": "string"},
        "choices": {"type": "array"}, "usage": {"type": "object"}}},
    "ResponsesRequest": {"type": "object", "required": ["model", "input"], "properties": {
        "model": {"type": "string"}, "input": {"type": ["string", "array"]}, "instructions": {"type": "string"},
        "stream": {"type": "boolean"}, "max_output_tokens": {"type": "integer"}}},
    "ResponsesResponse": {"type": "object", "required": ["id", "object"], "properties": {
        "id": {"type": "string"}, "object": {"const": "response"}, "output": {"type": "array"}, "usage": {"type": "object"}}},
    "ModelList": {"type": "object", "required": ["object", "data"], "properties": {
        "object": {"const": "list"}, "data": {"type": "array", "items": ref("Model")}}},
    "Model": {"type": "object", "required": ["id", "object"], "properties": {
        "id": {"type": "string"}, "object": {"const": "model"}, "created": {"type": "integer"}, "owned_by": {"type": "string"}}},
    "NativeModelList": {"type": "object", "properties": {"models": {"type": "array", "items": ref("NativeModel")},
                                                         "nextPageToken": {"type": "string"}}},
    "NativeModel": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
    "Transcription": {"type": "object", "required": ["text"], "properties": {
        "text": {"type": "string"}, "duration": {"type": "number"}, "segments": {"type": "array"}, "n_speakers": {"type": "integer"}}},
    # --- admin
    "Account": {"type": "object", "required": ["id", "name", "balance", "held", "leased", "available", "disabled", "created_at"],
                "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "balance": AMOUNT, "held": AMOUNT,
                               "leased": AMOUNT, "available": AMOUNT, "disabled": {"type": "boolean"},
                               "created_at": {"type": "integer", "description": "Unix milliseconds"}}},
    "AccountDetail": {"allOf": [ref("Account"), {"type": "object", "required": ["keys", "usage", "policy", "open_holds"], "properties": {
        "open_holds": {"type": "integer"}, "keys": {"type": "array", "items": ref("Key")},
        "usage": {"type": "array", "description": "Totals per model and meter over the usage log's retention.",
                  "items": ref("UsageTotal")},
        "policy": ref("Policy")}}]},
    "AccountPage": {"type": "object", "required": ["data", "total", "next_cursor"], "properties": {
        "data": {"type": "array", "items": ref("Account")}, "total": {"type": "integer"},
        "next_cursor": {"type": ["string", "null"]}}},
    "NewAccount": {"type": "object", "required": ["name"], "additionalProperties": False, "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 500}, "balance": AMOUNT}},
    "CreatedAccount": {"type": "object", "required": ["account", "key"], "properties": {
        "account": ref("Account"), "key": ref("NewKey")}},
    "NewKey": {"type": "object", "required": ["id", "secret"], "properties": {
        "id": {"type": "string"}, "secret": {"type": "string", "description": "Shown once; only its hash is kept."},
        "account_id": {"type": "string"}, "name": {"type": "string"}, "replaces": {"type": "string"}}},
    "Key": {"type": "object", "required": ["id", "prefix", "disabled", "revoked", "name", "created_at"], "properties": {
        "id": {"type": "string"}, "prefix": {"type": "string"}, "disabled": {"type": "boolean"},
        "revoked": {"type": "boolean"}, "name": {"type": "string"}, "created_at": {"type": "integer"}}},
    "NewCredit": {"type": "object", "required": ["amount", "reason"], "additionalProperties": False, "properties": {
        "amount": AMOUNT, "reason": {"type": "string", "minLength": 1, "maxLength": 500},
        "allow_negative": {"type": "boolean", "default": False}}},
    "Credited": {"type": "object", "required": ["ledger_id", "account", "replayed"], "properties": {
        "ledger_id": {"type": "string"}, "account": ref("Account"), "replayed": {"type": "boolean"}}},
    "Policy": {"type": "object", "properties": {
        "account": {"type": "string"}, "key": {"type": "string"},
        "models": {"type": ["array", "null"], "items": {"type": "string"}},
        "endpoints": {"type": ["array", "null"], "items": {"type": "string"}},
        "expires_at": {"type": ["string", "null"]}, "ips": {"type": ["array", "null"], "items": {"type": "string"}},
        "group": {"type": ["string", "null"]}, "rpm": {"type": ["integer", "null"]},
        "per_minute": {"type": ["object", "null"], "additionalProperties": {"type": "integer"}},
        "concurrency": {"type": ["integer", "null"]}, "streams": {"type": ["integer", "null"]},
        "daily_budget": {"oneOf": [AMOUNT, {"type": "null"}]}, "monthly_budget": {"oneOf": [AMOUNT, {"type": "null"}]},
        "tasks_in_flight": {"type": ["integer", "null"]}}},
    "PolicyEdit": {"type": "object", "additionalProperties": False, "minProperties": 1, "properties": {
        "models": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "endpoints": {"type": "array", "minItems": 1, "items": {"type": "string", "enum": [
            "embeddings", "speech", "t2a", "transcriptions", "speech_to_text", "clip_tasks",
            "video_generations", "native", "chat", "responses"]}},
        "expires": {"type": "string", "description": "RFC 3339"},
        "ips": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "group": {"type": "string"}, "rpm": {"type": "integer", "minimum": 1},
        "per_minute": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 1}},
        "concurrency": {"type": "integer", "minimum": 1}, "streams": {"type": "integer", "minimum": 1},
        "daily_budget": AMOUNT, "monthly_budget": AMOUNT, "tasks_in_flight": {"type": "integer", "minimum": 1}}},
    "Group": {"type": "object", "required": ["name", "multiplier", "models"], "properties": {
        "name": {"type": "string"}, "multiplier": {"type": "string"},
        "models": {"type": "object", "additionalProperties": {"type": "string"}}}},
    "GroupEdit": {"type": "object", "additionalProperties": False, "properties": {
        "multiplier": {"type": "string"}, "models": {"type": "object", "additionalProperties": {"type": "string"}},
        "drop_models": {"type": "array", "items": {"type": "string"}}}},
    "UsageRecord": {"type": "object", "required": ["id", "created_at", "time", "kind", "account_id", "endpoint", "status", "charge"],
                    "properties": {"id": {"type": "string"}, "created_at": {"type": "integer"}, "time": {"type": "string"},
                                   "kind": {"type": "string"}, "account_id": {"type": "string"},
                                   "key_id": {"type": ["string", "null"]}, "endpoint": {"type": "string"},
                                   "model": {"type": ["string", "null"]}, "channel": {"type": ["string", "null"]},
                                   "status": {"type": "integer"}, "meter": {"type": ["string", "null"]},
                                   "units": {"type": "integer"}, "charge": AMOUNT, "hold": AMOUNT,
                                   "latency_ms": {"type": "integer"}, "upstream_ms": {"type": ["integer", "null"]},
                                   "request_id": {"type": ["string", "null"]}, "task_id": {"type": ["string", "null"]},
                                   "estimated": {"type": "boolean"}, "note": {"type": ["string", "null"]}}},
    "UsagePage": {"type": "object", "required": ["data", "next_cursor"], "properties": {
        "data": {"type": "array", "items": ref("UsageRecord")}, "next_cursor": {"type": ["string", "null"]}}},
    "UsageTotal": {"type": "object", "required": ["group", "requests", "errors", "units", "charge"], "properties": {
        "group": {"type": "string"}, "meter": {"type": ["string", "null"]}, "requests": {"type": "integer"},
        "errors": {"type": "integer"}, "units": {"type": "integer"}, "charge": AMOUNT}},
    "UsageSummary": {"type": "object", "required": ["group_by", "data"], "properties": {
        "group_by": {"type": "string"}, "data": {"type": "array", "items": ref("UsageTotal")}}},
    "LedgerRow": {"type": "object", "required": ["id", "kind", "amount", "balance_after", "created_at"], "properties": {
        "id": {"type": "string"}, "kind": {"type": "string", "enum": ["credit", "adjustment", "charge"]},
        "amount": AMOUNT, "balance_after": AMOUNT, "model": {"type": ["string", "null"]},
        "quantity": {"type": ["string", "null"]}, "request_id": {"type": ["string", "null"]},
        "task_id": {"type": ["string", "null"]}, "note": {"type": ["string", "null"]},
        "created_at": {"type": "integer"}, "time": {"type": "string"}}},
    "LedgerPage": {"type": "object", "required": ["data", "next_cursor"], "properties": {
        "data": {"type": "array", "items": ref("LedgerRow")}, "next_cursor": {"type": ["string", "null"]}}},
    "Hold": {"type": "object", "required": ["id", "account_id", "model", "amount", "created_at"], "properties": {
        "id": {"type": "string"}, "account_id": {"type": "string"}, "key_id": {"type": ["string", "null"]},
        "model": {"type": "string"}, "amount": AMOUNT, "request_id": {"type": ["string", "null"]},
        "task_id": {"type": ["string", "null"]}, "created_at": {"type": "integer"}}},
    "Lease": {"type": "object", "required": ["id", "account_id", "owner", "remaining", "expires_at"], "properties": {
        "id": {"type": "string"}, "account_id": {"type": "string"}, "owner": {"type": "string"},
        "remaining": AMOUNT, "expires_at": {"type": "integer"}}},
    "AuditReport": {"type": "object", "description": "What `tollgate audit` checks: every money invariant, and each violation "
                    "(docs/decisions.md, \"What the audit checks\"). `operator_losses` sums what charges could not take (late charges of a "
                    "fenced replica, settlements above what was available); `negative_accounts` lists accounts below zero that "
                    "recorded overdraws explain.",
                    "required": ["accounts", "ledger_rows", "holds", "leases", "tasks", "total_balance", "total_credited",
                                 "total_charged", "anomalies", "operator_losses", "negative_accounts", "violations"],
                    "properties": {
                        "accounts": {"type": "integer"}, "ledger_rows": {"type": "integer"}, "holds": {"type": "integer"},
                        "leases": {"type": "integer"}, "tasks": {"type": "integer"},
                        "total_balance": AMOUNT, "total_credited": AMOUNT, "total_charged": AMOUNT,
                        "anomalies": {"type": "integer"}, "operator_losses": AMOUNT,
                        "negative_accounts": {"type": "array", "items": {"type": "string"}},
                        "violations": {"type": "array", "items": {
                            "type": "object", "required": ["rule", "subject", "detail"], "properties": {
                                "rule": {"type": "string", "description": "balance_is_ledger_sum, held_is_open_holds, "
                                         "one_charge_per_hold, charge_has_usage_record, usage_record_has_charge, "
                                         "balance_after_chain, negative_balance_explained, …"},
                                "subject": {"type": "string"}, "detail": {"type": "string"}}}}}},
    "EmbedContentRequest": {"type": "object", "required": ["content"], "description": "docs/api.md §2.10: only text parts are embedded; `taskType` and `title` are checked, not forwarded.",
        "properties": {
            "model": {"type": "string", "description": "models/{model}: the path's model"},
            "content": {"type": "object", "required": ["parts"], "properties": {
                "role": {"type": "string"},
                "parts": {"type": "array", "minItems": 1, "items": {"type": "object", "required": ["text"],
                                                                    "properties": {"text": {"type": "string"}}}}}},
            "taskType": {"type": "string", "enum": ["TASK_TYPE_UNSPECIFIED", "RETRIEVAL_QUERY", "RETRIEVAL_DOCUMENT",
                                                    "SEMANTIC_SIMILARITY", "CLASSIFICATION", "CLUSTERING",
                                                    "QUESTION_ANSWERING", "FACT_VERIFICATION", "CODE_RETRIEVAL_QUERY"]},
            "title": {"type": "string", "description": "With taskType RETRIEVAL_DOCUMENT only"},
            "outputDimensionality": {"type": "integer", "minimum": 1}}},
    "BatchEmbedContentsRequest": {"type": "object", "required": ["requests"], "properties": {
        "requests": {"type": "array", "minItems": 1, "maxItems": 100, "items": ref("EmbedContentRequest"),
                     "description": "Each names the path's model; all share one outputDimensionality"}}},
    "ContentEmbedding": {"type": "object", "required": ["values"], "properties": {
        "values": {"type": "array", "items": {"type": "number"}}}},
    "EmbedContentResponse": {"type": "object", "required": ["embedding"], "properties": {"embedding": ref("ContentEmbedding")}},
    "BatchEmbedContentsResponse": {"type": "object", "required": ["embeddings"], "properties": {
        "embeddings": {"type": "array", "items": ref("ContentEmbedding")}}},
    "AdminTask": {"type": "object", "required": ["id", "format", "account_id", "model", "state", "created_at"], "properties": {
        "id": {"type": "string"}, "format": {"type": "string"}, "account_id": {"type": "string"},
        "key_id": {"type": "string"}, "model": {"type": "string"}, "channel": {"type": "string"},
        "state": {"type": "string", "enum": ["submitting", "queued", "running", "succeeded", "failed"]},
        "upstream_status": {"type": ["string", "null"]}, "progress": {"type": "integer"},
        "hold_id": {"type": ["string", "null"]}, "created_at": {"type": "integer"},
        "history": {"type": "array", "items": {"type": "object", "required": ["at", "state"], "properties": {
            "at": {"type": "integer"}, "state": {"type": "string"}, "upstream_status": {"type": ["string", "null"]},
            "progress": {"type": ["integer", "null"]}, "detail": {"type": ["string", "null"]}}}}}},
    "TaskPage": {"type": "object", "required": ["data", "next_cursor"], "properties": {
        "data": {"type": "array", "items": ref("AdminTask")}, "next_cursor": {"type": ["string", "null"]}}},
    "Channel": {"type": "object", "required": ["name", "successes", "failures", "circuit", "disabled", "in_flight"], "properties": {
        "name": {"type": "string"}, "format": {"type": "string"}, "base_url": {"type": "string"},
        "successes": {"type": "integer"}, "failures": {"type": "integer"},
        "success_rate": {"type": ["number", "null"]},
        "latency_ms": {"type": "object", "properties": {"p50": {"type": ["integer", "null"]},
                                                        "p95": {"type": ["integer", "null"]},
                                                        "p99": {"type": ["integer", "null"]}}},
        "circuit": {"type": "string", "enum": ["closed", "open", "half_open"]},
        "failures_in_a_row": {"type": "integer"}, "disabled": {"type": "boolean"},
        "in_flight": {"type": "integer"}, "max_concurrency": {"type": "integer"}}},
    "CatalogModel": {"type": "object", "required": ["model", "kind", "channels", "price"], "properties": {
        "model": {"type": "string"}, "kind": {"type": "string"}, "upstream_model": {"type": "string"},
        "channels": {"type": "array", "items": {"type": "string"}}, "price": {"type": "object"},
        "aliases": {"type": "array", "items": {"type": "string"}}}},
    "AdminChange": {"type": "object", "required": ["id", "created_at", "actor", "action", "target"], "properties": {
        "id": {"type": "string"}, "created_at": {"type": "integer"}, "actor": {"type": "string"},
        "action": {"type": "string"}, "target": {"type": "string"}, "before": {}, "after": {},
        "request_id": {"type": ["string", "null"]}}},
    "Overview": {"type": "object", "required": ["hours", "bucket", "over_time", "by_model", "by_status", "requests", "errors",
                                                "open_holds", "open_leases", "tasks_in_flight"], "properties": {
        "hours": {"type": "integer"}, "bucket": {"type": "string"},
        "over_time": {"type": "array", "items": ref("UsageTotal")}, "by_model": {"type": "array", "items": ref("UsageTotal")},
        "by_status": {"type": "array", "items": ref("UsageTotal")}, "requests": {"type": "integer"},
        "errors": {"type": "integer"},
        "open_holds": {"type": "object", "properties": {"count": {"type": "integer"}, "amount": AMOUNT}},
        "open_leases": {"type": "object", "properties": {"count": {"type": "integer"}, "amount": AMOUNT}},
        "tasks_in_flight": {"type": "integer"}}},
}

def op(summary, tag, security, responses, **extra):
    o = {"summary": summary, "tags": [tag], "responses": responses}
    if security is not None:
        o["security"] = security
    o.update(extra)
    return o

BEARER = [{"apiKey": []}]
NATIVE = [{"vendorKey": []}, {"googKey": []}, {"keyQuery": []}, {"apiKey": []}]
ADMIN = [{"adminToken": []}]
ADMIN_ERR = [400, 401, 403, 404, 405, 408, 409, 413, 415, 500]

def path_param(name, desc):
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string", "minLength": 1,
                                                                   "pattern": "^[^/]+$"}, "description": desc}

def query(name, desc, schema=None):
    return {"name": name, "in": "query", "required": False, "schema": schema or {"type": "string"}, "description": desc}

def admin_op(summary, responses, **extra):
    r = dict(responses)
    r.update(errors("OpenAiError", ADMIN_ERR))
    return op(summary, "admin", ADMIN, r, **extra)

LIMIT = query("limit", "Page size, 1 to 1000 (default 50).", {"type": "integer", "minimum": 1, "maximum": 1000})
BEFORE = query("before", "The `next_cursor` of the previous page.")
USAGE_FILTERS = [query("account", "An account's id or name, or one of its keys' ids."), query("key", "A key's id."),
                 query("model", "A public model."),
                 query("endpoint", "An endpoint name.", {"type": "string", "enum": [
                     "embeddings", "speech", "t2a", "transcriptions", "speech_to_text", "clip_tasks",
                     "video_generations", "native", "chat", "responses"]}),
                 query("since", "From this time: RFC 3339 or a UTC date."),
                 query("until", "Before this time: RFC 3339 or a UTC date.")]

sse = {"text/event-stream": {"schema": {"type": "object", "description": "One server-sent event; its data is JSON in the family's frame shape (docs/api.md).",
                                        "properties": {"data": {"type": "string"}, "event": {"type": "string"}, "id": {"type": "string"}}}}}

paths = {
    "/healthz": {"get": op("Liveness", "operations", [], {"200": ok_json({"type": "object", "properties": {"status": {"type": "string"}}})})},
    "/readyz": {"get": op("Readiness: the database answers and shutdown has not begun", "operations", [], {
        "200": ok_json({"type": "object"}), "503": ok_json({"type": "object"}, "Draining or the database is down")})},
    "/metrics": {"get": op("Prometheus metrics", "operations", [], {"200": {"description": "Prometheus text format",
                                                                          "content": {"text/plain": {"schema": {"type": "string"}}}}})},
    "/openapi.json": {"get": op("This document", "operations", [], {"200": ok_json({"type": "object"})})},
    "/console": {"get": op("The web console (HTML, signs in with an admin token)", "operations", [], {
        "200": {"description": "The page", "content": {"text/html": {"schema": {"type": "string"}}}}})},
    "/v1/models": {"get": op("Models and aliases a key may call (the native list for a native key header)", "models", BEARER + NATIVE[:2], {
        "200": ok_json({"anyOf": [ref("ModelList"), ref("NativeModelList")]}), **errors("OpenAiOrGoogleError", READ_ERR)})},
    "/v1/models/{model}": {"get": op("One model (the native shape for a native key header)", "models", BEARER + NATIVE[:2], {
        "200": ok_json({"anyOf": [ref("Model"), ref("NativeModel")]}), **errors("OpenAiOrGoogleError", READ_ERR)}, parameters=[path_param("model", "A model or alias")])},
    "/v1/audio/speech": {"post": op("Speech synthesis (OpenAI format)", "speech", BEARER, {
        "200": {"description": "The audio (or SSE with `stream_format: sse`)", "content": {
            "audio/mpeg": {"schema": {"type": "string", "format": "binary"}},
            "audio/wav": {"schema": {"type": "string", "format": "binary"}},
            "audio/flac": {"schema": {"type": "string", "format": "binary"}},
            "audio/pcm": {"schema": {"type": "string", "format": "binary"}}, **sse}},
        **errors("OpenAiError", CLIENT_ERR)}, requestBody=json_body(ref("SpeechRequest")))},
    "/v1/t2a_v2": {"post": op("Speech synthesis (vendor t2a_v2 format: hex audio, SSE)", "speech", BEARER, {
        "200": {"description": "JSON with hex audio, or SSE chunks; errors also answer 200 with `base_resp`",
                "content": {"application/json": {"schema": ref("T2aResponse")}, **sse}},
        **errors("T2aError", [400, 401, 403, 404, 405, 408, 413, 415, 429, 500, 502, 503, 504])},
        requestBody=json_body(ref("T2aRequest")))},
    "/v1/audio/transcriptions": {"post": op("Speech recognition (OpenAI format, multipart)", "recognition", BEARER, {
        "200": {"description": "By response_format", "content": {"application/json": {"schema": ref("Transcription")},
                                                                 "text/plain": {"schema": {"type": "string"}}, **sse}},
        **errors("OpenAiError", CLIENT_ERR)}, requestBody={"required": True, "content": {"multipart/form-data": {"schema": {
            "type": "object", "required": ["model", "file"], "properties": {
                "model": {"type": "string", "examples": ["whisper-1", "asr-1.0"]}, "file": {"type": "string", "format": "binary"},
                "response_format": {"type": "string", "enum": ["json", "verbose_json", "srt", "vtt", "text"]},
                "language": {"type": "string"}, "timestamp_granularities[]": {"type": "string"},
                "stream": {"type": "boolean"}}}}}})},
    "/v1/audio/translations": {"post": op("Not supported (docs/api.md §4 rule 5)", "recognition", BEARER, errors("OpenAiError", [401, 501]))},
    "/v1/speech_to_text": {"post": op("Speech recognition (vendor format, multipart)", "recognition", BEARER, {
        "200": {"description": "By response_format", "content": {"application/json": {"schema": {"type": "object"}},
                                                                 "text/plain": {"schema": {"type": "string"}},
                                                                 "text/vtt": {"schema": {"type": "string"}}, **sse}},
        **errors("OpenAiError", CLIENT_ERR)}, requestBody={"required": True, "content": {"multipart/form-data": {"schema": {
            "type": "object", "required": ["model", "file"], "properties": {
                "model": {"type": "string"}, "file": {"type": "string", "format": "binary"},
                "response_format": {"type": "string", "enum": ["json", "verbose_json", "srt", "vtt"]},
                "timestamp_level": {"type": "string", "enum": ["sentence", "word"]}, "stream": {"type": "boolean"}}}}}},
        parameters=[{"name": "language", "in": "header", "required": False, "schema": {"type": "string"}}])},
    "/v1/embeddings": {"post": op("Embeddings", "embeddings", BEARER, {
        "200": ok_json(ref("EmbeddingsResponse")), **errors("OpenAiError", CLIENT_ERR)},
        requestBody=json_body(ref("EmbeddingsRequest")))},
    "/api/v3/contents/generations/tasks": {
        "post": op("Create a clip-format video task", "video", BEARER, {
            "200": ok_json(ref("ClipTaskCreated")), **errors("ArkError", CLIENT_ERR)},
            requestBody=json_body(ref("ClipTaskRequest"))),
        "get": op("List the key's account's clip tasks", "video", BEARER, {
            "200": ok_json(ref("ClipTaskList")), **errors("ArkError", READ_ERR)},
            parameters=[query("page_num", "From 1", {"type": "integer", "minimum": 1}),
                        query("page_size", "1 to 100", {"type": "integer", "minimum": 1, "maximum": 100}),
                        query("filter.status", "A status"), query("filter.task_ids", "Task ids"),
                        query("filter.model", "A model")])},
    "/api/v3/contents/generations/tasks/{task_id}": {
        "parameters": [path_param("task_id", "The id the create answer gave")],
        "get": op("A clip task", "video", BEARER, {"200": ok_json(ref("ClipTask")), **errors("ArkError", READ_ERR)}),
        "delete": op("Cancel a queued task (refunded) or remove a finished one from the list", "video", BEARER, {
            "200": ok_json({"type": "object"}), **errors("ArkError", READ_ERR)})},
    "/v1/video/generations": {"post": op("Create a generic-format video task", "video", BEARER, {
        "200": ok_json(ref("VideoTask")), **errors("OpenAiError", CLIENT_ERR)}, requestBody=json_body(ref("VideoRequest")))},
    "/v1/video/generations/{task_id}": {"get": op("A generic video task", "video", BEARER, {
        "200": ok_json(ref("VideoTask")), **errors("OpenAiError", READ_ERR)},
        parameters=[path_param("task_id", "The id the create answer gave")])},
    "/v1/media/{file}": {"get": op("A finished video through a signed link", "video", [], {
        "200": {"description": "The video", "content": {"video/mp4": {"schema": {"type": "string", "format": "binary"}}}},
        "302": {"description": "Redirect to the upstream's file"},
        **errors("OpenAiError", [400, 403, 404, 502])}, parameters=[path_param("file", "TASK_ID.mp4"),
                                                                  query("expires", "Unix seconds"), query("sig", "Signature")])},
    "/v1beta/models": {"get": op("Native models", "native", NATIVE, {
        "200": ok_json(ref("NativeModelList")), **errors("GoogleError", READ_ERR)})},
    "/v1beta/models/{model}": {"get": op("One native model", "native", NATIVE, {
        "200": ok_json(ref("NativeModel")), **errors("GoogleError", READ_ERR)}, parameters=[path_param("model", "A model")])},
    "/v1beta/models/{model}:generateContent": {"post": op("Native text generation", "native", NATIVE, {
        "200": ok_json(ref("GenerateContentResponse")), **errors("GoogleError", CLIENT_ERR)},
        parameters=[path_param("model", "A native model")], requestBody=json_body(ref("GenerateContentRequest")))},
    "/v1beta/models/{model}:streamGenerateContent": {"post": op("Native text generation, streamed (SSE with alt=sse)", "native", NATIVE, {
        "200": {"description": "SSE frames with alt=sse, else a JSON array", "content": {
            "application/json": {"schema": {"type": "array", "items": ref("GenerateContentResponse")}}, **sse}},
        **errors("GoogleStreamError", CLIENT_ERR)},
        parameters=[path_param("model", "A native model"), query("alt", "sse for a stream", {"type": "string", "enum": ["sse"]})],
        requestBody=json_body(ref("GenerateContentRequest")))},
    "/v1beta/models/{model}:countTokens": {"post": op("Count tokens (not billed)", "native", NATIVE, {
        "200": ok_json(ref("CountTokensResponse")), **errors("GoogleError", CLIENT_ERR)},
        parameters=[path_param("model", "A native model")], requestBody=json_body({"type": "object"}))},
    "/v1beta/models/{model}:embedContent": {"post": op("Native embeddings: one vector (served by embeddings channels, billed by tokens)", "embeddings", NATIVE, {
        "200": ok_json(ref("EmbedContentResponse")), **errors("GoogleError", CLIENT_ERR)},
        parameters=[path_param("model", "An embeddings model")], requestBody=json_body(ref("EmbedContentRequest")))},
    "/v1beta/models/{model}:batchEmbedContents": {"post": op("Native embeddings: one vector per request, up to 100", "embeddings", NATIVE, {
        "200": ok_json(ref("BatchEmbedContentsResponse")), **errors("GoogleError", CLIENT_ERR)},
        parameters=[path_param("model", "An embeddings model")], requestBody=json_body(ref("BatchEmbedContentsRequest")))},
    "/v1/chat/completions": {"post": op("Chat completions with a native model (docs/api.md §4 rule 4)", "native", BEARER, {
        "200": {"description": "A completion, or SSE chunks with stream", "content": {
            "application/json": {"schema": ref("ChatResponse")}, **sse}}, **errors("OpenAiError", CLIENT_ERR)},
        requestBody=json_body(ref("ChatRequest")))},
    "/v1/responses": {"post": op("The Responses API with a native model", "native", BEARER, {
        "200": {"description": "A response, or SSE events with stream", "content": {
            "application/json": {"schema": ref("ResponsesResponse")}, **sse}}, **errors("OpenAiError", CLIENT_ERR)},
        requestBody=json_body(ref("ResponsesRequest")))},
    # --- admin
    "/admin/v1/accounts": {
        "get": admin_op("List accounts, newest first, searched by name", {"200": ok_json(ref("AccountPage"))},
                        parameters=[query("search", "Part of a name, or an exact id"), LIMIT, BEFORE]),
        "post": admin_op("Create an account and its first key", {"201": ok_json(ref("CreatedAccount"), "Created")},
                         requestBody=json_body(ref("NewAccount")))},
    "/admin/v1/accounts/{id}": {"get": admin_op("An account with its keys, usage by model and policy",
                                                {"200": ok_json(ref("AccountDetail"))},
                                                parameters=[path_param("id", "Its id or name")])},
    "/admin/v1/accounts/{id}/disable": {"post": admin_op("Disable an account (all its keys)", {"200": ok_json(ref("Account"))},
                                                         parameters=[path_param("id", "Its id or name")])},
    "/admin/v1/accounts/{id}/enable": {"post": admin_op("Enable an account", {"200": ok_json(ref("Account"))},
                                                        parameters=[path_param("id", "Its id or name")])},
    "/admin/v1/accounts/{id}/credits": {"post": admin_op(
        "Credit (or, negative, correct) an account; once per Idempotency-Key",
        {"201": ok_json(ref("Credited"), "Credited"), "200": ok_json(ref("Credited"), "Already credited under this Idempotency-Key")},
        parameters=[path_param("id", "Its id or name"),
                    {"name": "Idempotency-Key", "in": "header", "required": False,
                     "schema": {"type": "string", "minLength": 1, "maxLength": 500},
                     "description": "A payment's id: a retried webhook does not credit twice."}],
        requestBody=json_body(ref("NewCredit")))},
    "/admin/v1/accounts/{id}/keys": {
        "parameters": [path_param("id", "Its id or name")],
        "get": admin_op("The account's keys", {"200": ok_json({"type": "object", "required": ["data"], "properties": {
            "data": {"type": "array", "items": ref("Key")}}})}),
        "post": admin_op("Add a key (its secret is shown once)", {"201": ok_json(ref("NewKey"), "Created")},
                         requestBody=json_body({"type": "object", "additionalProperties": False,
                                                "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 500}}},
                                               required=False))},
    "/admin/v1/accounts/{id}/ledger": {"get": admin_op("The account's ledger, newest first", {"200": ok_json(ref("LedgerPage"))},
                                                       parameters=[path_param("id", "Its id or name"), LIMIT, BEFORE])},
    "/admin/v1/accounts/{id}/policy": {
        "parameters": [path_param("id", "The account's id or name")],
        "get": admin_op("The account's access policy", {"200": ok_json(ref("Policy"))}),
        "patch": admin_op("Set fields of the policy (the others stay)", {"200": ok_json(ref("Policy"))},
                          requestBody=json_body(ref("PolicyEdit"))),
        "delete": admin_op("Remove the policy", {"200": ok_json(ref("Policy"))})},
    "/admin/v1/keys/{id}/policy": {
        "parameters": [path_param("id", "The key's id")],
        "get": admin_op("A key's access policy", {"200": ok_json(ref("Policy"))}),
        "patch": admin_op("Set fields of a key's policy", {"200": ok_json(ref("Policy"))}, requestBody=json_body(ref("PolicyEdit"))),
        "delete": admin_op("Remove a key's policy", {"200": ok_json(ref("Policy"))})},
    "/admin/v1/keys/{id}/revoke": {"post": admin_op("Revoke a key for good", {"200": ok_json({"type": "object"})},
                                                    parameters=[path_param("id", "The key's id")])},
    "/admin/v1/keys/{id}/enable": {"post": admin_op("Enable a disabled (not revoked) key", {"200": ok_json({"type": "object"})},
                                                    parameters=[path_param("id", "The key's id")])},
    "/admin/v1/keys/{id}/rotate": {"post": admin_op("Replace a key (same label and policy); the old one is revoked",
                                                    {"201": ok_json(ref("NewKey"), "The new key")},
                                                    parameters=[path_param("id", "The key's id")])},
    "/admin/v1/groups": {"get": admin_op("Price groups", {"200": ok_json({"type": "object", "required": ["data"], "properties": {
        "data": {"type": "array", "items": ref("Group")}}})})},
    "/admin/v1/groups/{name}": {"put": admin_op("Create or change a price group", {"200": ok_json(ref("Group"))},
                                                parameters=[path_param("name", "The group's name")],
                                                requestBody=json_body(ref("GroupEdit")))},
    "/admin/v1/usage": {"get": admin_op("The usage log, newest first", {"200": ok_json(ref("UsagePage"))},
                                        parameters=USAGE_FILTERS + [LIMIT, BEFORE])},
    "/admin/v1/usage/summary": {"get": admin_op("Usage totals per time bucket, model, key, endpoint, account or status",
                                                {"200": ok_json(ref("UsageSummary"))},
                                                parameters=USAGE_FILTERS + [query("group_by", "default day", {"type": "string", "enum": [
                                                    "day", "hour", "model", "key", "endpoint", "account", "status"]})])},
    "/admin/v1/usage.csv": {"get": admin_op("The usage log as CSV, streamed", {"200": {"description": "CSV with a header row",
                                                                                     "content": {"text/csv": {"schema": {"type": "string"}}}}},
                                            parameters=USAGE_FILTERS)},
    "/admin/v1/holds": {"get": admin_op("Open holds (video tasks)", {"200": ok_json({"type": "object", "required": ["data"], "properties": {
        "data": {"type": "array", "items": ref("Hold")}}})}, parameters=[query("account", "An account's id or name"), LIMIT])},
    "/admin/v1/leases": {"get": admin_op("Open credit leases of the running replicas", {"200": ok_json({"type": "object", "required": ["data"], "properties": {
        "data": {"type": "array", "items": ref("Lease")}}})})},
    "/admin/v1/audit": {"get": admin_op("Check every money invariant", {"200": ok_json(ref("AuditReport"))})},
    "/admin/v1/tasks": {"get": admin_op("Video tasks of every account, newest first", {"200": ok_json(ref("TaskPage"))},
                                        parameters=[query("account", "An account's id or name"),
                                                    query("state", "A state", {"type": "string", "enum": [
                                                        "submitting", "queued", "running", "succeeded", "failed"]}), LIMIT, BEFORE])},
    "/admin/v1/tasks/{id}": {"get": admin_op("A task with its poll history", {"200": ok_json(ref("AdminTask"))},
                                             parameters=[path_param("id", "The task's id")])},
    "/admin/v1/tasks/{id}/cancel": {"post": admin_op("Cancel a live task and refund it", {"200": ok_json(ref("AdminTask"))},
                                                     parameters=[path_param("id", "The task's id")])},
    "/admin/v1/channels": {"get": admin_op("Channel health: success rate, latency percentiles, in flight, circuit",
                                           {"200": ok_json({"type": "object", "required": ["data"], "properties": {
                                               "data": {"type": "array", "items": ref("Channel")}}})})},
    "/admin/v1/channels/{name}/disable": {"post": admin_op("Switch a channel off (every replica)", {"200": ok_json({"type": "object"})},
                                                           parameters=[path_param("name", "The channel's name")])},
    "/admin/v1/channels/{name}/enable": {"post": admin_op("Switch a channel back on", {"200": ok_json({"type": "object"})},
                                                          parameters=[path_param("name", "The channel's name")])},
    "/admin/v1/models": {"get": admin_op("Models, aliases, channels and prices as configured",
                                         {"200": ok_json({"type": "object", "required": ["data"], "properties": {
                                             "data": {"type": "array", "items": ref("CatalogModel")}}})})},
    "/admin/v1/changes": {"get": admin_op("The admin audit log: who changed what, before and after",
                                          {"200": ok_json({"type": "object", "required": ["data", "next_cursor"], "properties": {
                                              "data": {"type": "array", "items": ref("AdminChange")},
                                              "next_cursor": {"type": ["string", "null"]}}})},
                                          parameters=[query("target", "An id or name"), LIMIT, BEFORE])},
    "/admin/v1/overview": {"get": admin_op("What the console's overview shows", {"200": ok_json(ref("Overview"))},
                                           parameters=[query("hours", "1 to 2160 (default 24)", {"type": "integer", "minimum": 1, "maximum": 2160})])},
}

doc = {
    "openapi": "3.1.0",
    "info": {"title": "tollgate", "version": "0.1.0",
             "description": "A metered gateway for generative-media APIs: the client endpoints (docs/api.md) and the admin API (docs/operations.md). Amounts are decimal strings; times are Unix milliseconds unless named otherwise."},
    "servers": [{"url": "/"}],
    "tags": [{"name": t} for t in ["speech", "recognition", "embeddings", "video", "native", "models", "admin", "operations"]],
    "paths": paths,
    "components": {
        "schemas": schemas,
        "responses": dict(sorted(RESPONSES.items())),
        "securitySchemes": {
            "apiKey": {"type": "http", "scheme": "bearer", "description": "A client API key, tg-…"},
            "vendorKey": {"type": "apiKey", "in": "header", "name": "x-vendor-api-key"},
            "googKey": {"type": "apiKey", "in": "header", "name": "x-goog-api-key"},
            "keyQuery": {"type": "apiKey", "in": "query", "name": "key"},
            "adminToken": {"type": "http", "scheme": "bearer", "description": "An admin token, tga-… (`tollgate admin token create`); never a client key"},
        },
    },
}
print(json.dumps(doc, indent=1, ensure_ascii=False))
