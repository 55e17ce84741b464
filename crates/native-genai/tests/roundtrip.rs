//! A realistic request and answer decode and encode to the same JSON: nothing a client or the
//! vendor sends is lost or changed on the way through the gateway's types.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use tollgate_native_genai::models::limits;
use tollgate_native_genai::{
    CountTokensRequest, GenerateContentRequest, GenerateContentResponse, validate,
};

fn big_request() -> Value {
    json!({
        "systemInstruction": {
            "parts": [{"text": "You are a weather assistant. Answer in one sentence."}],
            "role": "system-ish-unknown-kept"
        },
        "contents": [
            {"role": "user", "parts": [
                {"text": "What's the weather in Oslo and Bergen? Also look at this."},
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="},
                 "mediaResolution": {"level": "MEDIA_RESOLUTION_LOW"}},
                {"fileData": {"mimeType": "video/mp4", "fileUri": "https://cdn.example.com/clip.mp4"},
                 "videoMetadata": {"startOffset": "1.5s", "endOffset": "10s", "fps": 2.5}}
            ]},
            {"role": "model", "parts": [
                {"text": "I should call the weather tool for both cities.", "thought": true},
                {"functionCall": {"name": "get_weather", "args": {"city": "Oslo", "units": "metric",
                    "days": 3, "hourly": false, "coords": [59.9139, 10.7522],
                    "options": {"lang": null, "precision": 1e-3, "big": 12345678901234567i64}}},
                 "thoughtSignature": "CiQBVKhc7m1w2bNd3Zx0f+Qv/5kzj1YGd4n8s2s0W7w9Pq1b3AoKZAFUqFzu=="},
                {"functionCall": {"id": "fc-2", "name": "get_weather", "args": {"city": "Bergen"},
                    "futureField": {"nested": [1, 2, 3]}}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"temp_c": 4.5,
                    "conditions": ["rain", "wind"], "raw": "{\"quoted\": \"json ]\"}"},
                    "willContinue": false}},
                {"functionResponse": {"id": "fc-2", "name": "get_weather",
                    "response": {"temp_c": -0.0, "conditions": []}, "scheduling": "WHEN_IDLE"}}
            ]},
            {"role": "model", "parts": [
                {"executableCode": {"language": "PYTHON", "code": "print((4.5 + 7) / 2)"}},
                {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "5.75\n"}},
                {"text": "Oslo 4.5 °C with rain; Bergen 7 °C.", "thoughtSignature": "c2lnLTI="}
            ]},
            {"role": "user", "parts": [{"text": "Thanks! Summarise as JSON. 🌧️"}],
             "unknownTurnField": true}
        ],
        "tools": [
            {"functionDeclarations": [{
                "name": "get_weather",
                "description": "Current weather and a forecast for a city.",
                "parameters": {
                    "type": "OBJECT",
                    "properties": {
                        "city": {"type": "STRING", "description": "City name"},
                        "units": {"type": "STRING", "enum": ["metric", "imperial"]},
                        "days": {"type": "INTEGER", "minimum": 1, "maximum": 14},
                        "coords": {"type": "ARRAY", "items": {"type": "NUMBER"}, "minItems": 2, "maxItems": 2},
                        "options": {"type": "OBJECT", "nullable": true, "properties": {
                            "lang": {"type": "STRING"},
                            "precision": {"type": "NUMBER", "format": "double"}
                        }, "propertyOrdering": ["lang", "precision"]}
                    },
                    "required": ["city"]
                },
                "response": {"type": "OBJECT", "properties": {"temp_c": {"type": "NUMBER"}}},
                "behavior": "NON_BLOCKING"
            }]},
            {"googleSearch": {}},
            {"codeExecution": {}},
            {"urlContext": {}}
        ],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]},
                       "retrievalConfig": {"latLng": {"latitude": 59.91, "longitude": 10.75}}},
        "safetySettings": [
            {"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_ONLY_HIGH"},
            {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "threshold": "BLOCK_NONE", "method": "PROBABILITY"}
        ],
        "generationConfig": {
            "temperature": 0.7, "topP": 0.95, "topK": 40, "candidateCount": 1,
            "maxOutputTokens": 2048, "stopSequences": ["END", "\r\n\r\n"],
            "responseMimeType": "application/json",
            "responseSchema": {"type": "OBJECT", "properties": {"oslo": {"type": "STRING"},
                "bergen": {"type": "STRING"}}, "required": ["oslo"]},
            "seed": 42, "presencePenalty": 0.1, "frequencyPenalty": -0.25,
            "responseLogprobs": false, "mediaResolution": "MEDIA_RESOLUTION_MEDIUM",
            "thinkingConfig": {"thinkingBudget": 1024, "includeThoughts": true, "futureKnob": "x"}
        },
        "cachedContent": "cachedContents/abc123",
        "labels": {"team": "weather", "env": "test"},
        "serviceTier": "standard"
    })
}

#[test]
fn a_big_request_round_trips() {
    let original = big_request();
    let text = serde_json::to_string_pretty(&original).unwrap();
    let decoded: GenerateContentRequest = serde_json::from_str(&text).unwrap();

    // The typed view is right...
    assert_eq!(decoded.contents.len(), 5);
    let call = decoded.contents[1].parts[1].function_call.as_ref().unwrap();
    assert_eq!(call.name, "get_weather");
    assert_eq!(
        call.args.as_ref().unwrap()["options"]["big"],
        12_345_678_901_234_567_i64
    );
    assert!(
        decoded.contents[1].parts[1]
            .thought_signature
            .as_deref()
            .unwrap()
            .starts_with("CiQB")
    );
    assert!(decoded.contents[1].parts[0].is_thought());
    assert_eq!(
        decoded.contents[2].parts[1]
            .function_response
            .as_ref()
            .unwrap()
            .id
            .as_deref(),
        Some("fc-2")
    );
    assert!(
        decoded.contents[3].parts[0]
            .extra
            .contains_key("executableCode")
    );
    let config = decoded.generation_config.as_ref().unwrap();
    assert_eq!(config.max_output_tokens, Some(2048));
    assert_eq!(config.extra["presencePenalty"], 0.1);
    let thinking = decoded.thinking_config().unwrap();
    assert_eq!(
        (thinking.thinking_budget, thinking.include_thoughts),
        (Some(1024), Some(true))
    );
    assert_eq!(
        decoded.cached_content.as_deref(),
        Some("cachedContents/abc123")
    );
    assert_eq!(decoded.extra["serviceTier"], "standard");

    // ... and encoding gives the same JSON back, text and values alike.
    let encoded = serde_json::to_value(&decoded).unwrap();
    assert_eq!(encoded, original);
    let again: GenerateContentRequest = serde_json::from_value(encoded).unwrap();
    assert_eq!(again, decoded);

    // It is valid for gen-2.5-flash.
    let ok = validate(&decoded, &limits("gen-2.5-flash").unwrap()).unwrap();
    assert_eq!(
        (ok.max_output_tokens, ok.thinks, ok.include_thoughts),
        (2048, true, true)
    );
}

#[test]
fn snake_case_request_means_the_same() {
    let snake = json!({
        "system_instruction": {"parts": [{"text": "Be terse."}]},
        "contents": [{"role": "user", "parts": [
            {"text": "Hi"},
            {"inline_data": {"mime_type": "image/jpeg", "data": "/9j/4AAQ"}},
            {"file_data": {"mime_type": "application/pdf", "file_uri": "https://e.example/a.pdf"}}
        ]}, {"role": "model", "parts": [
            {"function_call": {"name": "f", "args": {"x": 1}}, "thought_signature": "c2ln"}
        ]}, {"role": "user", "parts": [
            {"function_response": {"name": "f", "response": {"ok": true}}}
        ]}],
        "generation_config": {"max_output_tokens": 10, "top_p": 0.5, "top_k": 3.0,
            "stop_sequences": ["x"], "response_mime_type": "text/plain", "candidate_count": 2,
            "thinking_config": {"thinking_budget": -1, "include_thoughts": false}},
        "safety_settings": [],
        "tool_config": {"functionCallingConfig": {"mode": "AUTO"}},
        "cached_content": "cachedContents/x"
    });
    let camel = json!({
        "systemInstruction": {"parts": [{"text": "Be terse."}]},
        "contents": [{"role": "user", "parts": [
            {"text": "Hi"},
            {"inlineData": {"mimeType": "image/jpeg", "data": "/9j/4AAQ"}},
            {"fileData": {"mimeType": "application/pdf", "fileUri": "https://e.example/a.pdf"}}
        ]}, {"role": "model", "parts": [
            {"functionCall": {"name": "f", "args": {"x": 1}}, "thoughtSignature": "c2ln"}
        ]}, {"role": "user", "parts": [
            {"functionResponse": {"name": "f", "response": {"ok": true}}}
        ]}],
        "generationConfig": {"maxOutputTokens": 10, "topP": 0.5, "topK": 3.0,
            "stopSequences": ["x"], "responseMimeType": "text/plain", "candidateCount": 2,
            "thinkingConfig": {"thinkingBudget": -1, "includeThoughts": false}},
        "safetySettings": [],
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
        "cachedContent": "cachedContents/x"
    });
    let from_snake: GenerateContentRequest = serde_json::from_value(snake).unwrap();
    let from_camel: GenerateContentRequest = serde_json::from_value(camel.clone()).unwrap();
    assert_eq!(from_snake, from_camel);
    assert_eq!(serde_json::to_value(&from_snake).unwrap(), camel);
}

#[test]
fn count_tokens_requests_round_trip() {
    for body in [
        json!({"contents": [{"parts": [{"text": "How many tokens?"}]}]}),
        json!({"generateContentRequest": big_request()}),
    ] {
        let mut with_model = body.clone();
        if let Some(inner) = with_model.get_mut("generateContentRequest") {
            inner["model"] = json!("models/gen-2.5-flash");
        }
        let decoded: CountTokensRequest = serde_json::from_value(with_model.clone()).unwrap();
        assert_eq!(serde_json::to_value(&decoded).unwrap(), with_model);
    }
}

#[test]
fn streamed_chunks_round_trip() {
    let chunks = [
        json!({"candidates": [{"content": {"role": "model", "parts": [
            {"text": "**Planning**\n", "thought": true}]}, "index": 0}],
            "usageMetadata": {"promptTokenCount": 31, "totalTokenCount": 31,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 31}]},
            "modelVersion": "gen-2.5-flash", "responseId": "r-1"}),
        json!({"candidates": [{"content": {"role": "model", "parts": [
            {"text": "It is ", "thoughtSignature": "c2ln"}]}, "index": 0}],
            "usageMetadata": {"promptTokenCount": 31, "candidatesTokenCount": 3,
                "thoughtsTokenCount": 120, "totalTokenCount": 154},
            "modelVersion": "gen-2.5-flash", "responseId": "r-1"}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "raining."}]},
            "finishReason": "STOP", "index": 0,
            "groundingMetadata": {"webSearchQueries": ["oslo weather"]}}],
            "usageMetadata": {"promptTokenCount": 31, "candidatesTokenCount": 6,
                "thoughtsTokenCount": 120, "toolUsePromptTokenCount": 50, "totalTokenCount": 207,
                "cachedContentTokenCount": 0},
            "modelVersion": "gen-2.5-flash", "responseId": "r-1"}),
    ];
    for chunk in &chunks {
        let decoded: GenerateContentResponse = serde_json::from_value(chunk.clone()).unwrap();
        assert_eq!(&serde_json::to_value(&decoded).unwrap(), chunk);
    }
    let last: GenerateContentResponse = serde_json::from_value(chunks[2].clone()).unwrap();
    let usage = last.usage_metadata.unwrap();
    assert_eq!(
        (
            usage.input_tokens(),
            usage.output_tokens(),
            usage.total_tokens()
        ),
        (81, 126, 207)
    );
}
