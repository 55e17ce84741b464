//! Every row of the chat-completions bridge tables (wire-formats §8; `bridge` module docs).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use tollgate_native_genai::bridge::{ChunkMapper, to_chat, to_native};
use tollgate_native_genai::chat::{ChatCompletionChunk, ChatCompletionRequest, MessageContent};
use tollgate_native_genai::models::{ModelLimits, limits};
use tollgate_native_genai::{GenerateContentResponse, Rule, validate};

fn flash() -> ModelLimits {
    limits("gen-2.5-flash").unwrap()
}

fn chat(value: Value) -> ChatCompletionRequest {
    serde_json::from_value(value).unwrap()
}

/// `to_native` of a request with these messages (and other fields), as JSON.
fn native(request: Value, model: &ModelLimits) -> Value {
    let mut request = request;
    request["model"] = json!("gen-2.5-flash");
    let native = to_native(&chat(request), model).unwrap();
    // What the bridge makes is valid for the model.
    validate(&native, model).unwrap();
    serde_json::to_value(native).unwrap()
}

fn refused(request: Value, model: &ModelLimits) -> (String, Rule) {
    let mut request = request;
    request["model"] = json!("gen-2.5-flash");
    let err = to_native(&chat(request), model).unwrap_err();
    assert!(err.message.contains(&err.field), "{}", err.message);
    (err.field, err.rule)
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

// ---------------------------------------------------------------- request rows

#[test]
fn system_and_developer_go_to_the_system_instruction() {
    let out = native(
        json!({"messages": [
            {"role": "system", "content": "Be terse."},
            {"role": "developer", "content": [{"type": "text", "text": "Use metric."}]},
            user("Hi"),
            {"role": "system", "content": "Late rule."}
        ]}),
        &flash(),
    );
    assert_eq!(
        out["systemInstruction"],
        json!({"parts": [{"text": "Be terse."}, {"text": "Use metric."}, {"text": "Late rule."}]})
    );
    assert_eq!(
        out["contents"],
        json!([{"role": "user", "parts": [{"text": "Hi"}]}])
    );
    let image_in_system = json!({"messages": [
        {"role": "system", "content": [{"type": "image_url", "image_url": {"url": "https://e.example/a.png"}}]},
        user("Hi")]});
    assert_eq!(
        refused(image_in_system, &flash()),
        ("messages[0].content[0].type".into(), Rule::UnsupportedValue)
    );
}

#[test]
fn user_and_assistant_become_user_and_model() {
    let out = native(
        json!({"messages": [user("Hi"), {"role": "assistant", "content": "Hello!"}, user("Bye")]}),
        &flash(),
    );
    assert_eq!(
        out["contents"],
        json!([
            {"role": "user", "parts": [{"text": "Hi"}]},
            {"role": "model", "parts": [{"text": "Hello!"}]},
            {"role": "user", "parts": [{"text": "Bye"}]}
        ])
    );
}

#[test]
fn images_inline_and_by_url() {
    let out = native(
        json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "Compare"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            {"type": "image_url", "image_url": {"url": "DATA:Image/JPEG;name=a.jpg;Base64,/9j/4AAQ"}},
            {"type": "image_url", "image_url": {"url": "https://cdn.example.com/a/photo.JPEG?w=2", "detail": "high"}},
            {"type": "image_url", "image_url": {"url": "http://cdn.example.com/render"}},
            {"type": "image_url", "image_url": {"url": "https://cdn.example.com/x.webp"}}
        ]}]}),
        &flash(),
    );
    assert_eq!(
        out["contents"][0]["parts"],
        json!([
            {"text": "Compare"},
            {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
            {"inlineData": {"mimeType": "image/jpeg", "data": "/9j/4AAQ"}},
            {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://cdn.example.com/a/photo.JPEG?w=2"}},
            {"fileData": {"mimeType": "image/*", "fileUri": "http://cdn.example.com/render"}},
            {"fileData": {"mimeType": "image/webp", "fileUri": "https://cdn.example.com/x.webp"}}
        ])
    );
    let image = |url: &str| {
        json!({"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": url}}]}]})
    };
    const FIELD: &str = "messages[0].content[0].image_url.url";
    assert_eq!(
        refused(image("ftp://e.example/a.png"), &flash()),
        (FIELD.into(), Rule::InvalidUrl)
    );
    assert_eq!(
        refused(image("data:image/png,rawbytes"), &flash()),
        (FIELD.into(), Rule::Malformed)
    );
    assert_eq!(
        refused(image("data:;base64,AAAA"), &flash()),
        (FIELD.into(), Rule::Malformed)
    );
    assert_eq!(refused(image(""), &flash()), (FIELD.into(), Rule::Required));
    let video = json!({"messages": [{"role": "user", "content": [
        {"type": "video_url", "video_url": {"url": "https://e.example/a.mp4"}}]}]});
    assert_eq!(
        refused(video, &flash()),
        ("messages[0].content[0].type".into(), Rule::UnsupportedValue)
    );
}

#[test]
fn audio_and_files_inline() {
    let out = native(
        json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "Transcribe, then summarise the notes"},
            {"type": "input_audio", "input_audio": {"data": "UklGR", "format": "wav"}},
            {"type": "input_audio", "input_audio": {"data": "SUQz", "format": "MP3"}},
            {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"}},
            {"type": "file", "file": {"file_data": "aGVsbG8=", "filename": "notes.txt"}}
        ]}]}),
        &flash(),
    );
    assert_eq!(
        out["contents"][0]["parts"],
        json!([
            {"text": "Transcribe, then summarise the notes"},
            {"inlineData": {"mimeType": "audio/wav", "data": "UklGR"}},
            {"inlineData": {"mimeType": "audio/mp3", "data": "SUQz"}},
            {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0="}},
            {"inlineData": {"mimeType": "text/plain", "data": "aGVsbG8="}}
        ])
    );
    let part = |p: Value| json!({"messages": [{"role": "user", "content": [p]}]});
    assert_eq!(
        refused(
            part(json!({"type": "input_audio", "input_audio": {"data": "x", "format": "midi"}})),
            &flash()
        ),
        (
            "messages[0].content[0].input_audio.format".into(),
            Rule::UnsupportedValue
        )
    );
    assert_eq!(
        refused(
            part(json!({"type": "input_audio", "input_audio": {"format": "wav"}})),
            &flash()
        ),
        (
            "messages[0].content[0].input_audio.data".into(),
            Rule::Required
        )
    );
    assert_eq!(
        refused(
            part(json!({"type": "file", "file": {"file_id": "file-abc"}})),
            &flash()
        ),
        (
            "messages[0].content[0].file.file_id".into(),
            Rule::UnsupportedParameter
        )
    );
}

#[test]
fn tool_calls_and_tool_results() {
    let out = native(
        json!({"messages": [
            user("Weather in Oslo and Bergen?"),
            {"role": "assistant", "content": "Let me check.", "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"},
                 "extra_content": {"google": {"thought_signature": "c2ln"}}},
                {"id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": ""}}
            ]},
            {"role": "tool", "tool_call_id": "call_a", "content": "{\"temp_c\": 4}"},
            {"role": "tool", "tool_call_id": "call_b", "content": "12:00"},
            user("And tomorrow?")
        ]}),
        &flash(),
    );
    assert_eq!(
        out["contents"],
        json!([
            {"role": "user", "parts": [{"text": "Weather in Oslo and Bergen?"}]},
            {"role": "model", "parts": [
                {"text": "Let me check."},
                {"thoughtSignature": "c2ln", "functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}},
                {"functionCall": {"name": "get_time", "args": {}}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"temp_c": 4}}},
                {"functionResponse": {"name": "get_time", "response": {"content": "12:00"}}},
                {"text": "And tomorrow?"}
            ]}
        ])
    );
}

#[test]
fn tool_ids_reused_across_turns_answer_the_latest_call() {
    let out = native(
        json!({"messages": [
            user("a"),
            {"role": "assistant", "tool_calls": [{"id": "call_0", "type": "function",
                "function": {"name": "first", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_0", "content": "[1, 2]"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_0", "type": "function",
                "function": {"name": "second", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_0", "content": [{"type": "text", "text": "done"}]}
        ]}),
        &flash(),
    );
    assert_eq!(
        out["contents"][2]["parts"][0]["functionResponse"]["name"],
        "first"
    );
    // A JSON value that is not an object is wrapped as text.
    assert_eq!(
        out["contents"][2]["parts"][0]["functionResponse"]["response"],
        json!({"content": "[1, 2]"})
    );
    assert_eq!(
        out["contents"][4]["parts"][0]["functionResponse"]["name"],
        "second"
    );
    assert_eq!(
        out["contents"][4]["parts"][0]["functionResponse"]["response"],
        json!({"content": "done"})
    );
}

#[test]
fn tool_errors_name_the_field() {
    let call = |arguments: &str| {
        json!({"messages": [user("a"), {"role": "assistant", "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}]}]})
    };
    const ARGS: &str = "messages[1].tool_calls[0].function.arguments";
    assert_eq!(
        refused(call("{not json"), &flash()),
        (ARGS.into(), Rule::Malformed)
    );
    assert_eq!(
        refused(call("[1]"), &flash()),
        (ARGS.into(), Rule::Malformed)
    );
    let unknown =
        json!({"messages": [user("a"), {"role": "tool", "tool_call_id": "nope", "content": "x"}]});
    assert_eq!(
        refused(unknown, &flash()),
        ("messages[1].tool_call_id".into(), Rule::UnsupportedValue)
    );
    let named = json!({"messages": [user("a"), {"role": "tool", "tool_call_id": "nope", "name": "f", "content": "x"}]});
    let out = native(named, &flash());
    assert_eq!(
        out["contents"][0]["parts"][1]["functionResponse"]["name"],
        "f"
    );
    let no_name = json!({"messages": [user("a"), {"role": "assistant", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "", "arguments": "{}"}}]}]});
    assert_eq!(
        refused(no_name, &flash()),
        (
            "messages[1].tool_calls[0].function.name".into(),
            Rule::Required
        )
    );
}

#[test]
fn message_errors() {
    assert_eq!(
        refused(json!({"messages": []}), &flash()),
        ("messages".into(), Rule::Required)
    );
    assert_eq!(
        refused(
            json!({"messages": [{"role": "system", "content": "only"}]}),
            &flash()
        ),
        ("messages".into(), Rule::Required)
    );
    assert_eq!(
        refused(
            json!({"messages": [{"role": "function", "name": "f", "content": "x"}]}),
            &flash()
        ),
        ("messages[0].role".into(), Rule::UnsupportedValue)
    );
    assert_eq!(
        refused(json!({"messages": [user("")]}), &flash()),
        ("messages[0].content".into(), Rule::Required)
    );
}

#[test]
fn consecutive_turns_are_merged_and_empty_assistants_dropped() {
    let out = native(
        json!({"messages": [user("one"), user("two"),
            {"role": "assistant", "content": ""},
            user("three"),
            {"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}]}),
        &flash(),
    );
    assert_eq!(
        out["contents"],
        json!([
            {"role": "user", "parts": [{"text": "one"}, {"text": "two"}, {"text": "three"}]},
            {"role": "model", "parts": [{"text": "a"}, {"text": "b"}]}
        ])
    );
}

#[test]
fn generation_parameters() {
    let out = native(
        json!({"messages": [user("x")], "max_tokens": 50, "temperature": 0.3, "top_p": 0.9,
            "stop": "END", "n": 2, "seed": 7}),
        &flash(),
    );
    assert_eq!(
        out["generationConfig"],
        json!({"temperature": 0.3, "topP": 0.9, "candidateCount": 2, "maxOutputTokens": 50,
            "stopSequences": ["END"], "seed": 7})
    );
    // max_completion_tokens wins over max_tokens; stop as an array.
    let out = native(
        json!({"messages": [user("x")], "max_tokens": 50, "max_completion_tokens": 60,
            "stop": ["a", "b"]}),
        &flash(),
    );
    assert_eq!(
        out["generationConfig"],
        json!({"maxOutputTokens": 60, "stopSequences": ["a", "b"]})
    );
    // Nothing asked, nothing sent.
    let out = native(json!({"messages": [user("x")], "stop": []}), &flash());
    assert!(out.get("generationConfig").is_none());

    let old = limits("gen-2.0-flash").unwrap();
    assert_eq!(
        refused(json!({"messages": [user("x")], "max_tokens": 8193}), &old),
        ("max_tokens".into(), Rule::OutOfRange)
    );
    assert_eq!(
        refused(
            json!({"messages": [user("x")], "max_completion_tokens": 0}),
            &flash()
        ),
        ("max_completion_tokens".into(), Rule::OutOfRange)
    );
    assert_eq!(
        refused(json!({"messages": [user("x")], "n": 9}), &flash()),
        ("n".into(), Rule::OutOfRange)
    );
}

#[test]
fn response_formats() {
    let schema = json!({"type": "object", "properties": {"colour": {"type": "string"}},
        "required": ["colour"], "additionalProperties": false});
    let out = native(
        json!({"messages": [user("x")], "response_format": {"type": "json_schema",
            "json_schema": {"name": "answer", "strict": true, "schema": schema}}}),
        &flash(),
    );
    assert_eq!(
        out["generationConfig"],
        json!({"responseMimeType": "application/json", "responseJsonSchema": schema})
    );
    let out = native(
        json!({"messages": [user("x")], "response_format": {"type": "json_object"}}),
        &flash(),
    );
    assert_eq!(
        out["generationConfig"],
        json!({"responseMimeType": "application/json"})
    );
    let out = native(
        json!({"messages": [user("x")], "response_format": {"type": "text"}}),
        &flash(),
    );
    assert!(out.get("generationConfig").is_none());
    assert_eq!(
        refused(
            json!({"messages": [user("x")], "response_format": {"type": "yaml"}}),
            &flash()
        ),
        ("response_format.type".into(), Rule::UnsupportedValue)
    );
}

#[test]
fn reasoning_effort_rows() {
    let budget = |effort: &str, model: &str| {
        let out = native(
            json!({"messages": [user("x")], "reasoning_effort": effort}),
            &limits(model).unwrap(),
        );
        out["generationConfig"]["thinkingConfig"]["thinkingBudget"].as_i64()
    };
    let table = [
        ("none", "gen-2.5-flash", Some(0)),
        ("minimal", "gen-2.5-flash", Some(0)),
        ("low", "gen-2.5-flash", Some(1024)),
        ("medium", "gen-2.5-flash", Some(8192)),
        ("high", "gen-2.5-flash", Some(24_576)),
        ("HIGH", "gen-2.5-flash", Some(24_576)),
        ("none", "gen-2.5-pro", Some(128)),
        ("high", "gen-2.5-pro", Some(24_576)),
        ("xhigh", "gen-2.5-pro", Some(32_768)),
        ("none", "gen-2.5-flash-lite", Some(0)),
        ("low", "gen-2.5-flash-lite", Some(1024)),
        ("minimal", "gen-3-pro-preview", Some(128)),
        ("none", "gen-2.0-flash", None),
    ];
    for (effort, model, expected) in table {
        assert_eq!(budget(effort, model), expected, "{effort} on {model}");
    }
    assert_eq!(
        refused(
            json!({"messages": [user("x")], "reasoning_effort": "low"}),
            &limits("gen-2.0-flash").unwrap()
        ),
        ("reasoning_effort".into(), Rule::UnsupportedParameter)
    );
    assert_eq!(
        refused(
            json!({"messages": [user("x")], "reasoning_effort": "max"}),
            &flash()
        ),
        ("reasoning_effort".into(), Rule::UnsupportedValue)
    );
}

#[test]
fn tools_and_tool_choice() {
    let parameters = json!({"type": "object", "properties": {"city": {"type": "string"}},
        "required": ["city"], "additionalProperties": false});
    let tools = json!([
        {"type": "function", "function": {"name": "get_weather", "description": "Weather.",
            "parameters": parameters, "strict": true}},
        {"type": "function", "function": {"name": "now"}}
    ]);
    let with_choice = |choice: Value| {
        native(
            json!({"messages": [user("x")], "tools": tools, "tool_choice": choice}),
            &flash(),
        )
    };
    let out = with_choice(json!("auto"));
    assert_eq!(
        out["tools"],
        json!([{"functionDeclarations": [
            {"name": "get_weather", "description": "Weather.", "parametersJsonSchema": parameters},
            {"name": "now"}
        ]}])
    );
    assert_eq!(
        out["toolConfig"],
        json!({"functionCallingConfig": {"mode": "AUTO"}})
    );
    assert_eq!(
        with_choice(json!("none"))["toolConfig"],
        json!({"functionCallingConfig": {"mode": "NONE"}})
    );
    assert_eq!(
        with_choice(json!("required"))["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY"}})
    );
    assert_eq!(
        with_choice(json!({"type": "function", "function": {"name": "now"}}))["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["now"]}})
    );
    let refused_choice = |choice: Value| {
        refused(
            json!({"messages": [user("x")], "tools": tools, "tool_choice": choice}),
            &flash(),
        )
    };
    assert_eq!(
        refused_choice(json!("sometimes")),
        ("tool_choice".into(), Rule::UnsupportedValue)
    );
    assert_eq!(
        refused_choice(json!(3)),
        ("tool_choice".into(), Rule::Malformed)
    );
    assert_eq!(
        refused_choice(json!({"type": "function", "function": {}})),
        ("tool_choice.function.name".into(), Rule::Required)
    );
    assert_eq!(
        refused(
            json!({"messages": [user("x")], "tools": [{"type": "web_search"}]}),
            &flash()
        ),
        ("tools[0].type".into(), Rule::UnsupportedValue)
    );
    assert_eq!(
        refused(
            json!({"messages": [user("x")], "tools": [{"type": "function", "function": {"description": "d"}}]}),
            &flash()
        ),
        ("tools[0].function.name".into(), Rule::Required)
    );
    let out = native(json!({"messages": [user("x")], "tools": []}), &flash());
    assert!(out.get("tools").is_none());
}

// ---------------------------------------------------------------- answer rows

fn response(value: Value) -> GenerateContentResponse {
    serde_json::from_value(value).unwrap()
}

#[test]
fn answer_text_thoughts_usage() {
    let native = response(json!({
        "candidates": [{"content": {"role": "model", "parts": [
            {"text": "Let me think.", "thought": true},
            {"text": "Orange", "thoughtSignature": "c2ln"}, {"text": "."}]},
            "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 270, "candidatesTokenCount": 9,
            "thoughtsTokenCount": 41, "cachedContentTokenCount": 100, "totalTokenCount": 320},
        "modelVersion": "gen-2.5-flash"
    }));
    let chat = to_chat(&native, "gen-2.5-flash", "chatcmpl-1", 1_767_240_000);
    assert_eq!(
        serde_json::to_value(&chat).unwrap(),
        json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1_767_240_000,
            "model": "gen-2.5-flash",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Orange."},
                "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 270, "completion_tokens": 50, "total_tokens": 320,
                "prompt_tokens_details": {"cached_tokens": 100},
                "completion_tokens_details": {"reasoning_tokens": 41}}})
    );
}

#[test]
fn answer_tool_calls() {
    let native = response(json!({
        "candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}, "thoughtSignature": "c2ln"},
            {"functionCall": {"name": "now"}},
            {"functionCall": {"id": "vendor-id", "name": "x", "args": {}}}]},
            "finishReason": "STOP", "index": 0}]
    }));
    let chat = to_chat(&native, "m", "id", 0);
    let message = serde_json::to_value(&chat.choices[0].message).unwrap();
    assert_eq!(
        message,
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_id_0", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"},
             "extra_content": {"google": {"thought_signature": "c2ln"}}},
            {"id": "call_id_1", "type": "function", "function": {"name": "now", "arguments": "{}"}},
            {"id": "vendor-id", "type": "function", "function": {"name": "x", "arguments": "{}"}}
        ]})
    );
    assert_eq!(chat.choices[0].finish_reason.as_deref(), Some("tool_calls"));

    // The assistant message goes back through to_native with its thought signature.
    let back = json!({"model": "m", "messages": [user("w?"), message,
        {"role": "tool", "tool_call_id": "call_id_0", "content": "{\"t\": 1}"}]});
    let again = to_native(&chat_req(back), &flash()).unwrap();
    let part = &again.contents[1].parts[0];
    assert_eq!(part.thought_signature.as_deref(), Some("c2ln"));
    assert_eq!(
        part.function_call.as_ref().unwrap().args,
        Some(json!({"city": "Oslo"}))
    );
    assert_eq!(
        again.contents[2].parts[0]
            .function_response
            .as_ref()
            .unwrap()
            .name,
        "get_weather"
    );
}

fn chat_req(value: Value) -> ChatCompletionRequest {
    chat(value)
}

#[test]
fn answer_finish_reasons() {
    let cases = [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("BLOCKLIST", "content_filter"),
        ("PROHIBITED_CONTENT", "content_filter"),
        ("SPII", "content_filter"),
        ("IMAGE_SAFETY", "content_filter"),
        ("OTHER", "stop"),
        ("LANGUAGE", "stop"),
    ];
    for (native_reason, expected) in cases {
        let native = response(json!({"candidates": [{"content": {"role": "model",
            "parts": [{"text": "x"}]}, "finishReason": native_reason}]}));
        let chat = to_chat(&native, "m", "id", 0);
        assert_eq!(
            chat.choices[0].finish_reason.as_deref(),
            Some(expected),
            "{native_reason}"
        );
    }
    // MAX_TOKENS with only thoughts: empty text, length.
    let native = response(json!({"candidates": [{"content": {"role": "model",
        "parts": [{"text": "hmm", "thought": true}]}, "finishReason": "MAX_TOKENS"}]}));
    let chat = to_chat(&native, "m", "id", 0);
    assert_eq!(
        chat.choices[0].message.content,
        Some(MessageContent::Text(String::new()))
    );
    assert_eq!(chat.choices[0].finish_reason.as_deref(), Some("length"));
}

#[test]
fn answer_blocked_prompt_and_candidates() {
    let blocked = response(
        json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
        "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9}}),
    );
    let chat = to_chat(&blocked, "m", "id", 0);
    assert_eq!(chat.choices.len(), 1);
    assert_eq!(
        chat.choices[0].finish_reason.as_deref(),
        Some("content_filter")
    );
    assert_eq!(
        chat.usage
            .as_ref()
            .map(|u| (u.prompt_tokens, u.completion_tokens)),
        Some((9, 0))
    );

    let two = response(json!({"candidates": [
        {"content": {"role": "model", "parts": [{"text": "A"}]}, "finishReason": "STOP", "index": 0},
        {"content": {"role": "model", "parts": [{"text": "B"}]}, "finishReason": "MAX_TOKENS", "index": 1}
    ]}));
    let chat = to_chat(&two, "m", "id", 0);
    let summary: Vec<(u32, String, Option<String>)> = chat
        .choices
        .iter()
        .map(|c| {
            (
                c.index,
                c.message.content.as_ref().unwrap().text(),
                c.finish_reason.clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (0, "A".into(), Some("stop".into())),
            (1, "B".into(), Some("length".into()))
        ]
    );
    assert!(chat.usage.is_none());
}

#[test]
fn usage_with_tool_use_prompt_and_no_total() {
    let native = response(
        json!({"candidates": [], "usageMetadata": {"promptTokenCount": 100,
        "toolUsePromptTokenCount": 20, "candidatesTokenCount": 30, "thoughtsTokenCount": 5}}),
    );
    let usage = to_chat(&native, "m", "id", 0).usage.unwrap();
    assert_eq!(
        serde_json::to_value(usage).unwrap(),
        json!({"prompt_tokens": 120, "completion_tokens": 35, "total_tokens": 155,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 5}})
    );
}

// ---------------------------------------------------------------- stream rows

fn run(mapper: &mut ChunkMapper, natives: &[Value]) -> Vec<Value> {
    let mut out: Vec<ChatCompletionChunk> = Vec::new();
    for native in natives {
        out.extend(mapper.map(&response(native.clone())));
    }
    out.extend(mapper.finish());
    out.iter()
        .map(|c| serde_json::to_value(c).unwrap())
        .collect()
}

fn usage_meta(prompt: u64, candidates: u64, thoughts: u64) -> Value {
    json!({"promptTokenCount": prompt, "candidatesTokenCount": candidates,
        "thoughtsTokenCount": thoughts, "totalTokenCount": prompt + candidates + thoughts})
}

#[test]
fn stream_text_thoughts_finish_and_usage() {
    let natives = [
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "thinking", "thought": true}]}, "index": 0}],
            "usageMetadata": usage_meta(10, 0, 20)}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}, "index": 0}],
            "usageMetadata": usage_meta(10, 1, 40)}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "lo"}]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": usage_meta(10, 2, 40)}),
    ];
    let mut mapper = ChunkMapper::new("gen-2.5-flash", "chatcmpl-9", 77, true);
    let chunks = run(&mut mapper, &natives);
    let head = json!({"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 77, "model": "gen-2.5-flash"});
    let with = |rest: Value| {
        let mut chunk = head.clone();
        for (k, v) in rest.as_object().unwrap() {
            chunk[k] = v.clone();
        }
        chunk
    };
    assert_eq!(
        chunks,
        [
            with(
                json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]})
            ),
            with(
                json!({"choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": null}]})
            ),
            with(
                json!({"choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": null}]})
            ),
            with(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})),
            // The last usage, not a sum: 10 in, 2 + 40 out.
            with(
                json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 42,
                "total_tokens": 52, "prompt_tokens_details": {"cached_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 40}}})
            ),
        ]
    );
    assert_eq!(mapper.usage().map(|u| u.output_tokens()), Some(42));

    // Without include_usage there is no usage chunk.
    let mut mapper = ChunkMapper::new("gen-2.5-flash", "chatcmpl-9", 77, false);
    let chunks = run(&mut mapper, &natives);
    assert_eq!(chunks.len(), 4);
    assert!(chunks.iter().all(|c| c.get("usage").is_none()));
}

#[test]
fn stream_tool_calls() {
    let natives = [
        json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "a", "args": {"x": 1}}, "thoughtSignature": "c2ln"}]}, "index": 0}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "b", "args": {}}}]}, "finishReason": "STOP", "index": 0}]}),
    ];
    let mut mapper = ChunkMapper::new("m", "id", 1, false);
    let chunks = run(&mut mapper, &natives);
    assert_eq!(chunks.len(), 3);
    assert_eq!(
        chunks[0]["choices"][0]["delta"],
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_id_0", "type": "function",
            "function": {"name": "a", "arguments": "{\"x\":1}"},
            "extra_content": {"google": {"thought_signature": "c2ln"}}}]})
    );
    assert_eq!(
        chunks[1]["choices"][0]["delta"],
        json!({"tool_calls": [{"index": 1, "id": "call_id_1", "type": "function",
            "function": {"name": "b", "arguments": "{}"}}]})
    );
    assert_eq!(chunks[2]["choices"][0]["finish_reason"], "tool_calls");
}

#[test]
fn stream_blocked_prompt_and_usage_only_chunks() {
    let natives = [json!({"promptFeedback": {"blockReason": "SAFETY"},
        "usageMetadata": {"promptTokenCount": 4, "totalTokenCount": 4}})];
    let mut mapper = ChunkMapper::new("m", "id", 1, true);
    let chunks = run(&mut mapper, &natives);
    assert_eq!(chunks.len(), 3);
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(chunks[1]["choices"][0]["finish_reason"], "content_filter");
    assert_eq!(chunks[2]["usage"]["prompt_tokens"], 4);

    // A chunk with only usage maps to nothing; no usage seen means no usage chunk.
    let mut mapper = ChunkMapper::new("m", "id", 1, true);
    assert!(
        mapper
            .map(&response(json!({"usageMetadata": usage_meta(1, 1, 0)})))
            .is_empty()
    );
    let mut mapper = ChunkMapper::new("m", "id", 1, true);
    assert!(mapper.finish().is_empty());
}

#[test]
fn stream_several_candidates() {
    let natives = [
        json!({"candidates": [
            {"content": {"role": "model", "parts": [{"text": "A"}]}, "index": 0},
            {"content": {"role": "model", "parts": [{"text": "B"}]}, "index": 1}]}),
        json!({"candidates": [
            {"content": {"role": "model", "parts": [{"text": "a"}]}, "finishReason": "STOP", "index": 0},
            {"content": {"role": "model", "parts": [{"text": "b"}]}, "finishReason": "MAX_TOKENS", "index": 1}]}),
    ];
    let mut mapper = ChunkMapper::new("m", "id", 1, false);
    let chunks = run(&mut mapper, &natives);
    type Row<'a> = (u64, Option<&'a str>, Option<&'a str>, Option<&'a str>);
    let summary: Vec<Row> = chunks
        .iter()
        .map(|c| {
            let choice = &c["choices"][0];
            (
                choice["index"].as_u64().unwrap(),
                choice["delta"]["role"].as_str(),
                choice["delta"]["content"].as_str(),
                choice["finish_reason"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (0, Some("assistant"), Some("A"), None),
            (1, Some("assistant"), Some("B"), None),
            (0, None, Some("a"), None),
            (0, None, None, Some("stop")),
            (1, None, Some("b"), None),
            (1, None, None, Some("length")),
        ]
    );
}
