//! What the OpenAPI document (`/openapi.json`, docs/api.md) says of an endpoint beside what its
//! row's facts say: a summary, a tag, the answers that are not errors, the parameters and the
//! request body. Each handler module writes its routes' ([`About`], built when the document is),
//! the row carries it (`tollgate_request::routes::RouteSpec::doc`), and the operator's side builds the
//! document from the rows (`tollgate-admin`'s `openapi`): a route and its description are one
//! unit, and a row without one does not compile (`docs/architecture.md`, "Adding an endpoint").
//! Schemas are named, not written here: the document derives them from the wire types.

use serde_json::{Value, json};

/// An endpoint's description, beside its row's facts.
#[derive(Debug, Clone)]
pub struct About {
    /// One line.
    pub summary: &'static str,
    /// The document's group (`speech`, `video`, `native`, …).
    pub tag: &'static str,
    /// The name of the path's parameter, for a path with one (`/v1/videos/{video_id}`).
    pub param: &'static str,
    /// The answers that are not errors, by status (an event stream is added for a streaming row).
    pub answers: Value,
    /// Path, query and header parameters.
    pub parameters: Vec<Value>,
    /// The request body.
    pub body: Option<Value>,
}

/// How a row is documented.
#[derive(Debug, Clone, Copy)]
pub enum Doc {
    /// Not yet: a row in this state stops the build (`Endpoint::new` is evaluated at compile
    /// time).
    Missing,
    /// By its description.
    About(fn() -> About),
    /// Elsewhere: the admin API's rows, operation by operation in its own table; the 404 and
    /// 405 answers, which are every route's errors.
    Elsewhere,
}

impl About {
    /// A description with its answers, no parameters and no body.
    pub fn new(summary: &'static str, tag: &'static str, answers: Value) -> About {
        About {
            summary,
            tag,
            param: "",
            answers,
            parameters: Vec::new(),
            body: None,
        }
    }

    /// Its body: JSON of the schema named `request`.
    pub fn posting(self, request: &str) -> About {
        self.body(json_body(r(request)))
    }

    /// Its body.
    pub fn body(self, body: Value) -> About {
        About {
            body: Some(body),
            ..self
        }
    }

    /// The path's parameter `name` (replacing one it had).
    pub fn param(mut self, name: &'static str, description: &str) -> About {
        self.parameters.retain(|p| p["in"] != "path");
        self.parameters.insert(0, path_param(name, description));
        About {
            param: name,
            ..self
        }
    }

    /// One parameter more (a query or a header).
    pub fn parameter(mut self, parameter: Value) -> About {
        self.parameters.push(parameter);
        self
    }

    /// Another tag.
    pub fn tag(self, tag: &'static str) -> About {
        About { tag, ..self }
    }

    /// A native model's route: `/v1beta/models/{model}:…`, taking `request`.
    pub fn native_model(summary: &'static str, answers: Value, request: Value) -> About {
        About::new(summary, "native", answers)
            .param("model", "A native model")
            .body(json_body(request))
    }

    /// A task's route: the path names the task.
    pub fn of_task(self) -> About {
        self.param("task_id", "The id the create answer gave")
    }

    /// A video's route (OpenAI Videos API): the path names the video.
    pub fn of_video(self) -> About {
        self.param("video_id", "The id the create answer gave")
    }
}

/// A reference to the document's schema `name` (`#/components/schemas/…`).
pub fn r(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

/// A path parameter: one segment.
pub fn path_param(name: &str, description: &str) -> Value {
    json!({
        "name": name,
        "in": "path",
        "required": true,
        "schema": {"type": "string", "minLength": 1, "pattern": "^[^/]+$"},
        "description": description,
    })
}

/// A string query parameter.
pub fn query(name: &str, description: &str) -> Value {
    query_as(name, description, json!({"type": "string"}))
}

/// A query parameter of `schema`.
pub fn query_as(name: &str, description: &str, schema: Value) -> Value {
    json!({"name": name, "in": "query", "required": false, "schema": schema, "description": description})
}

/// A JSON request body of `schema`.
pub fn json_body(schema: Value) -> Value {
    json!({"required": true, "content": {"application/json": {"schema": schema}}})
}

/// A multipart request body with `model` and `file` and the other `properties`.
pub fn multipart(properties: Value) -> Value {
    json!({"required": true, "content": {"multipart/form-data": {"schema": {
        "type": "object",
        "required": ["model", "file"],
        "properties": properties,
    }}}})
}

/// An answer of JSON `schema`, "OK".
pub fn ok_json(schema: Value) -> Value {
    described(schema, "OK")
}

/// An answer of JSON `schema`, described.
pub fn described(schema: Value, description: &str) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": schema}}})
}

/// The 200 answer of JSON `schema`.
pub fn ok(schema: Value) -> Value {
    json!({"200": ok_json(schema)})
}

/// Bytes, as a media type of an answer.
pub fn binary() -> Value {
    json!({"schema": {"type": "string", "format": "binary"}})
}

/// Text, as a media type of an answer.
pub fn text() -> Value {
    json!({"schema": {"type": "string"}})
}
