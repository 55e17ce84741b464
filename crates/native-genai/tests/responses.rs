//! Every row of the Responses bridge tables (`responses` module docs), the refusals, and the
//! stream's event grammar.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use tollgate_native_genai::models::{ModelLimits, limits};
use tollgate_native_genai::responses::{
    EventKind, ResponseEvents, ResponseTemplate, ResponsesRequest, StreamEvent, to_native,
    to_response,
};
use tollgate_native_genai::{GenerateContentResponse, Rule, validate};

fn flash() -> ModelLimits {
    limits("gen-2.5-flash").unwrap()
}

fn request(value: Value) -> ResponsesRequest {
    let mut value = value;
    value["model"] = json!("gen-2.5-flash");
    serde_json::from_value(value).unwrap()
}

/// `to_native` of a request, as JSON; what the bridge makes is valid for the model.
fn native(value: Value) -> Value {
    let native = to_native(&request(value), &flash()).unwrap();
    validate(&native, &flash()).unwrap();
    serde_json::to_value(native).unwrap()
}

fn refused(value: Value) -> (String, Rule) {
    let err = to_native(&request(value), &flash()).unwrap_err();
    assert!(err.message.contains(&err.field), "{}", err.message);
    (err.field, err.rule)
}

fn answer(value: Value) -> GenerateContentResponse {
    serde_json::from_value(value).unwrap()
}

fn template() -> ResponseTemplate {
    ResponseTemplate::new(
        &request(json!({"input": "Hi", "max_output_tokens": 50})),
        "resp_abc",
        1_767_240_000,
    )
}

const CALL_TOOL: &str = r#"{"type": "function", "name": "lookup", "description": "Looks up.",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}"#;

// ---------------------------------------------------------------- request rows

#[test]
fn a_string_input_is_one_user_turn_and_instructions_lead_the_system_instruction() {
    let out = native(json!({"input": "Hi", "instructions": "Be terse."}));
    assert_eq!(
        out["contents"],
        json!([{"role": "user", "parts": [{"text": "Hi"}]}])
    );
    assert_eq!(
        out["systemInstruction"],
        json!({"parts": [{"text": "Be terse."}]})
    );
}

#[test]
fn messages_by_role_with_parts_and_merged_turns() {
    let out = native(json!({"instructions": "First.", "input": [
        {"role": "developer", "content": "Second."},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Look:"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
            {"type": "input_image", "image_url": "https://example.com/cat.JPG?x=1"}
        ]},
        {"role": "user", "content": "And?"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "A cat."}]},
        {"role": "system", "content": [{"type": "input_text", "text": "Third."}]},
        {"role": "user", "content": "Thanks"}
    ]}));
    assert_eq!(
        out["systemInstruction"],
        json!({"parts": [{"text": "First."}, {"text": "Second."}, {"text": "Third."}]})
    );
    assert_eq!(
        out["contents"],
        json!([
            {"role": "user", "parts": [
                {"text": "Look:"},
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://example.com/cat.JPG?x=1"}},
                {"text": "And?"}
            ]},
            {"role": "model", "parts": [{"text": "A cat."}]},
            {"role": "user", "parts": [{"text": "Thanks"}]}
        ])
    );
}

#[test]
fn audio_and_files_from_a_user() {
    let out = native(json!({"input": [{"role": "user", "content": [
        {"type": "input_text", "text": "Listen and watch"},
        {"type": "input_audio", "input_audio": {"data": "UklGR", "format": "wav"}},
        {"type": "input_file", "file_url": "https://media.example.com/talk.mp4"},
        {"type": "input_file", "file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"}
    ]}]}));
    assert_eq!(
        out["contents"][0]["parts"],
        json!([
            {"text": "Listen and watch"},
            {"inlineData": {"mimeType": "audio/wav", "data": "UklGR"}},
            {"fileData": {"mimeType": "video/mp4", "fileUri": "https://media.example.com/talk.mp4"}},
            {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0="}}
        ])
    );
}

#[test]
fn function_calls_and_their_outputs_become_native_calls_and_responses() {
    let out = native(
        json!({"tools": [serde_json::from_str::<Value>(CALL_TOOL).unwrap()], "input": [
            {"role": "user", "content": "Boiling point?"},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": "{\"q\":\"water\"}",
             "extra_content": {"google": {"thought_signature": "c2ln"}}},
            {"type": "function_call_output", "call_id": "call_1", "output": "{\"celsius\": 100}"},
            {"type": "function_call", "call_id": "call_2", "name": "lookup", "arguments": ""},
            {"type": "function_call_output", "call_id": "call_2", "output": "not json"}
        ]}),
    );
    assert_eq!(
        out["contents"],
        json!([
            {"role": "user", "parts": [{"text": "Boiling point?"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "lookup", "args": {"q": "water"}}, "thoughtSignature": "c2ln"}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "lookup", "response": {"celsius": 100}}}]},
            {"role": "model", "parts": [{"functionCall": {"name": "lookup", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "lookup", "response": {"content": "not json"}}}]}
        ])
    );
    assert_eq!(
        out["tools"],
        json!([{"functionDeclarations": [{"name": "lookup", "description": "Looks up.",
            "parametersJsonSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}]}])
    );
}

#[test]
fn generation_settings() {
    let out = native(
        json!({"input": "Hi", "max_output_tokens": 64, "temperature": 0.5,
        "top_p": 0.9, "reasoning": {"effort": "low"},
        "text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": "object"}}}}),
    );
    assert_eq!(
        out["generationConfig"],
        json!({"maxOutputTokens": 64, "temperature": 0.5, "topP": 0.9,
            "responseMimeType": "application/json", "responseJsonSchema": {"type": "object"},
            "thinkingConfig": {"thinkingBudget": 1024}})
    );
    let out = native(json!({"input": "Hi", "text": {"format": {"type": "json_object"}}}));
    assert_eq!(
        out["generationConfig"],
        json!({"responseMimeType": "application/json"})
    );
    let out = native(
        json!({"input": "Hi", "text": {"format": {"type": "text"}}, "store": true,
        "metadata": {"a": "b"}, "include": [], "parallel_tool_calls": false}),
    );
    assert!(out.get("generationConfig").is_none(), "{out}");
}

#[test]
fn tool_choices() {
    let tool = serde_json::from_str::<Value>(CALL_TOOL).unwrap();
    for (choice, config) in [
        (json!("none"), json!({"mode": "NONE"})),
        (json!("auto"), json!({"mode": "AUTO"})),
        (json!("required"), json!({"mode": "ANY"})),
        (
            json!({"type": "function", "name": "lookup"}),
            json!({"mode": "ANY", "allowedFunctionNames": ["lookup"]}),
        ),
    ] {
        let out = native(json!({"input": "Hi", "tools": [tool], "tool_choice": choice}));
        assert_eq!(out["toolConfig"], json!({"functionCallingConfig": config}));
    }
}

#[test]
fn refusals_name_the_field() {
    let cases = [
        (json!({}), "input", Rule::Required),
        (json!({"input": ""}), "input", Rule::Required),
        (json!({"input": 5}), "input", Rule::Malformed),
        (
            json!({"input": "Hi", "previous_response_id": "resp_1"}),
            "previous_response_id",
            Rule::UnsupportedParameter,
        ),
        (
            json!({"input": "Hi", "conversation": "conv_1"}),
            "conversation",
            Rule::UnsupportedParameter,
        ),
        (
            json!({"input": "Hi", "background": true}),
            "background",
            Rule::UnsupportedParameter,
        ),
        (
            json!({"input": [{"role": "tool", "content": "x"}]}),
            "input[0].role",
            Rule::UnsupportedValue,
        ),
        (
            json!({"input": [{"content": "x"}]}),
            "input[0].role",
            Rule::Required,
        ),
        (
            json!({"input": [{"role": "user"}]}),
            "input[0].content",
            Rule::Required,
        ),
        (json!({"input": ["Hi"]}), "input[0]", Rule::Malformed),
        (
            json!({"input": [{"type": "web_search_call"}]}),
            "input[0].type",
            Rule::UnsupportedValue,
        ),
        (
            json!({"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]}),
            "input[0].content[0].file_id",
            Rule::UnsupportedParameter,
        ),
        (
            json!({"input": [{"role": "user", "content": [{"type": "input_file", "file_url": "ftp://x/a.pdf"}]}]}),
            "input[0].content[0].file_url",
            Rule::InvalidUrl,
        ),
        (
            json!({"input": [{"role": "system", "content": [{"type": "input_audio", "input_audio": {"data": "x", "format": "wav"}}]}]}),
            "input[0].content[0].type",
            Rule::UnsupportedValue,
        ),
        (
            json!({"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "f"}]}]}),
            "input[0].content[0].file_id",
            Rule::UnsupportedParameter,
        ),
        (
            json!({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "ftp://x"}]}]}),
            "input[0].content[0].image_url",
            Rule::InvalidUrl,
        ),
        (
            json!({"input": [{"role": "assistant", "content": [{"type": "input_image", "image_url": "https://x/a.png"}]}]}),
            "input[0].content[0].type",
            Rule::UnsupportedValue,
        ),
        (
            json!({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}),
            "input[0].call_id",
            Rule::Required,
        ),
        (
            json!({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "[1]"}]}),
            "input[0].arguments",
            Rule::Malformed,
        ),
        (
            json!({"input": [{"role": "user", "content": "Hi"}, {"type": "function_call_output", "call_id": "c", "output": "x"}]}),
            "input[1].call_id",
            Rule::UnsupportedValue,
        ),
        (
            json!({"input": "Hi", "max_output_tokens": 0}),
            "max_output_tokens",
            Rule::OutOfRange,
        ),
        (
            json!({"input": "Hi", "max_output_tokens": 10_000_000}),
            "max_output_tokens",
            Rule::OutOfRange,
        ),
        (
            json!({"input": "Hi", "reasoning": {"effort": "extreme"}}),
            "reasoning.effort",
            Rule::UnsupportedValue,
        ),
        (
            json!({"input": "Hi", "text": {"format": {"type": "xml"}}}),
            "text.format.type",
            Rule::UnsupportedValue,
        ),
        (
            json!({"input": "Hi", "text": {"format": {"type": "json_schema"}}}),
            "text.format.schema",
            Rule::Required,
        ),
        (
            json!({"input": "Hi", "tools": [{"type": "web_search"}]}),
            "tools[0].type",
            Rule::UnsupportedValue,
        ),
        (
            json!({"input": "Hi", "tools": [{"type": "function"}]}),
            "tools[0].name",
            Rule::Required,
        ),
        (
            json!({"input": "Hi", "tool_choice": "sometimes"}),
            "tool_choice",
            Rule::UnsupportedValue,
        ),
        (
            json!({"input": "Hi", "tool_choice": {"type": "function"}}),
            "tool_choice.name",
            Rule::Required,
        ),
        (
            json!({"input": "Hi", "tool_choice": {"type": "file_search"}}),
            "tool_choice.type",
            Rule::UnsupportedValue,
        ),
    ];
    for (value, field, rule) in cases {
        assert_eq!(refused(value.clone()), (field.to_owned(), rule), "{value}");
    }
}

// ---------------------------------------------------------------- answer rows

#[test]
fn a_whole_answer_with_text_calls_thoughts_and_usage() {
    let native = answer(json!({
        "candidates": [{"content": {"role": "model", "parts": [
            {"text": "Let me think", "thought": true},
            {"text": "Checking."},
            {"functionCall": {"name": "lookup", "args": {"q": "water"}}, "thoughtSignature": "c2ln"},
            {"functionCall": {"id": "own-id", "name": "lookup", "args": {"q": "ice"}}}
        ]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 10, "toolUsePromptTokenCount": 2,
            "candidatesTokenCount": 5, "thoughtsTokenCount": 7, "cachedContentTokenCount": 3,
            "totalTokenCount": 24}
    }));
    let value = serde_json::to_value(to_response(&native, &template())).unwrap();
    assert_eq!(value["id"], "resp_abc");
    assert_eq!(value["object"], "response");
    assert_eq!(value["status"], "completed");
    assert_eq!(value["model"], "gen-2.5-flash");
    assert_eq!(value["max_output_tokens"], 50);
    assert_eq!(value["incomplete_details"], Value::Null);
    assert_eq!(
        value["output"],
        json!([
            {"type": "message", "id": "msg_abc", "status": "completed", "role": "assistant",
             "content": [{"type": "output_text", "text": "Checking.", "annotations": [], "logprobs": []}]},
            {"type": "function_call", "id": "fc_abc_0", "call_id": "call_abc_0", "name": "lookup",
             "arguments": "{\"q\":\"water\"}", "status": "completed",
             "extra_content": {"google": {"thought_signature": "c2ln"}}},
            {"type": "function_call", "id": "fc_abc_1", "call_id": "own-id", "name": "lookup",
             "arguments": "{\"q\":\"ice\"}", "status": "completed"}
        ])
    );
    assert_eq!(
        value["usage"],
        json!({"input_tokens": 12, "input_tokens_details": {"cached_tokens": 3},
            "output_tokens": 12, "output_tokens_details": {"reasoning_tokens": 7},
            "total_tokens": 24})
    );
}

#[test]
fn statuses_of_finish_reasons_and_a_blocked_prompt() {
    for (finish, status, reason) in [
        ("STOP", "completed", Value::Null),
        (
            "MAX_TOKENS",
            "incomplete",
            json!({"reason": "max_output_tokens"}),
        ),
        ("SAFETY", "incomplete", json!({"reason": "content_filter"})),
        ("MALFORMED_FUNCTION_CALL", "completed", Value::Null),
    ] {
        let native = answer(json!({"candidates": [{"content": {"role": "model",
            "parts": [{"text": "x"}]}, "finishReason": finish}]}));
        let value = serde_json::to_value(to_response(&native, &template())).unwrap();
        assert_eq!(
            (&value["status"], &value["incomplete_details"]),
            (&json!(status), &reason),
            "{finish}"
        );
    }
    let blocked = answer(json!({"promptFeedback": {"blockReason": "SAFETY"}}));
    let value = serde_json::to_value(to_response(&blocked, &template())).unwrap();
    assert_eq!(value["status"], "incomplete");
    assert_eq!(value["incomplete_details"]["reason"], "content_filter");
    assert_eq!(value["output"][0]["content"][0]["text"], "");
}

// ---------------------------------------------------------------- the stream

fn kinds(events: &[StreamEvent]) -> Vec<&'static str> {
    events.iter().map(|e| e.kind.name()).collect()
}

fn chunk(parts: Value) -> GenerateContentResponse {
    answer(json!({"candidates": [{"content": {"role": "model", "parts": parts}}]}))
}

#[test]
fn a_text_stream_follows_the_event_grammar() {
    let mut events = ResponseEvents::new(template());
    let mut all = events.map(&chunk(json!([{"text": "thinking", "thought": true}])));
    all.extend(events.map(&chunk(json!([{"text": "Hel"}]))));
    all.extend(events.map(&chunk(json!([{"text": "lo."}]))));
    all.extend(events.map(&answer(json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 2, "candidatesTokenCount": 2, "thoughtsTokenCount": 4, "totalTokenCount": 8}
    }))));
    all.extend(events.finish());
    assert_eq!(
        kinds(&all),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let numbers: Vec<u64> = all.iter().map(|e| e.sequence_number).collect();
    assert_eq!(numbers, (0..all.len() as u64).collect::<Vec<_>>());
    let EventKind::Created { response } = &all[0].kind else {
        panic!("{:?}", all[0])
    };
    assert_eq!(
        (response.status.as_str(), response.output.len()),
        ("in_progress", 0)
    );
    let EventKind::OutputTextDone { text, .. } = &all[6].kind else {
        panic!("{:?}", all[6])
    };
    assert_eq!(text, "Hello.");
    let EventKind::Completed { response } = &all[9].kind else {
        panic!("{:?}", all[9])
    };
    assert_eq!(response.status, "completed");
    let usage = response.usage.as_ref().unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (2, 6));
    // The final response equals the whole answer's translation.
    let whole = to_response(
        &answer(json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": "Hello."}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 2, "candidatesTokenCount": 2, "thoughtsTokenCount": 4, "totalTokenCount": 8}
        })),
        &template(),
    );
    assert_eq!(response, &whole);
    // Every event is SSE with its type as the event name, and decodes back.
    for event in &all {
        let sse = event.to_sse();
        let (head, data) = sse.split_once('\n').unwrap();
        assert_eq!(head, format!("event: {}", event.kind.name()));
        let decoded: StreamEvent =
            serde_json::from_str(data.trim_start_matches("data: ").trim_end()).unwrap();
        assert_eq!(&decoded, event);
    }
}

#[test]
fn a_call_after_text_closes_the_message_and_max_tokens_is_incomplete() {
    let mut events = ResponseEvents::new(template());
    let mut all = events.map(&chunk(json!([{"text": "Checking."}])));
    all.extend(events.map(&answer(json!({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "lookup", "args": {"q": "water"}}}]}, "finishReason": "MAX_TOKENS"}]}))));
    all.extend(events.finish());
    assert_eq!(
        kinds(&all)[2..],
        [
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.incomplete",
        ]
    );
    let EventKind::FunctionCallArgumentsDone {
        output_index,
        arguments,
        ..
    } = &all[10].kind
    else {
        panic!("{:?}", all[10])
    };
    assert_eq!(
        (*output_index, arguments.as_str()),
        (1, "{\"q\":\"water\"}")
    );
    let EventKind::Incomplete { response } = &all[12].kind else {
        panic!("{:?}", all[12])
    };
    assert_eq!(response.output.len(), 2);
    assert_eq!(
        response.incomplete_details.as_ref().unwrap().reason,
        "max_output_tokens"
    );
}

#[test]
fn a_failed_stream_ends_in_response_failed_with_what_was_delivered() {
    let mut events = ResponseEvents::new(template());
    let mut all = events.map(&chunk(json!([{"text": "Half"}])));
    all.extend(events.fail("The upstream cut the stream"));
    let last = all.last().unwrap();
    let EventKind::Failed { response } = &last.kind else {
        panic!("{last:?}")
    };
    assert_eq!(response.status, "failed");
    let error = response.error.as_ref().unwrap();
    assert_eq!(error.message, "The upstream cut the stream");
    assert_eq!(
        serde_json::to_value(&response.output).unwrap()[0]["content"][0]["text"],
        "Half"
    );
    // A stream that failed before anything still opens with the lifecycle events.
    let mut events = ResponseEvents::new(template());
    assert_eq!(
        kinds(&events.fail("x")),
        [
            "response.created",
            "response.in_progress",
            "response.failed"
        ]
    );
    // An empty answer still has its message, as a whole one does.
    let mut events = ResponseEvents::new(template());
    let done = events.finish();
    let EventKind::Completed { response } = &done.last().unwrap().kind else {
        panic!("{done:?}")
    };
    assert_eq!(response.output.len(), 1);
}
