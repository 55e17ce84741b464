//! Simulated asynchronous video vendors: Ark-style content-generation tasks (`clip-tasks`,
//! wire-formats §5), the generic video format (`generic-tasks`, wire-formats §7, docs/api.md §2.8)
//! and a Sora-style vendor of OpenAI's Videos API (`openai-videos`, wire-formats §7.2: its
//! `sora-2` and `sora-2-pro`, their sizes and lengths only, files at `…/{id}/content` with a
//! thumbnail and a spritesheet), plus the finished videos themselves (`GET
//! /_sim/videos/{id}.mp4`).
//!
//! ## The clock
//!
//! Nothing runs in the background: each task keeps the instant it was created and the two knob
//! values in force at that moment ([`KnobSettings::task_queued`], [`KnobSettings::task_running`]),
//! and every poll computes its state from the time elapsed. A task is `queued` for the first
//! period, then `running` (`in_progress`, with `progress` rising from 1 to 99), then finished:
//!
//! * failed, when the prompt contains [`FAIL_MARKER`] or the task is one of every Nth created
//!   ([`KnobSettings::task_fail_every`], counted over both formats from the simulator's start);
//! * expired, when the prompt contains [`EXPIRE_MARKER`] (the generic format reports `failed`
//!   with the code `expired`);
//! * succeeded (`completed`) otherwise, with a link to `{base_url}/_sim/videos/{id}.mp4`.
//!
//! A queued Ark task that is deleted becomes `cancelled`.
//!
//! ## Ids
//!
//! Ark: `cgt-<yyyymmddhhmmss>-<5 base-36 characters>` (UTC creation time; the suffix is the
//! creation sequence number plus a per-simulator random offset). Generic: `video_<16 hex digits>`.
//!
//! ## Usage
//!
//! An Ark task bills `width × height × (24 × seconds + 1) / 1024` tokens, rounded up, at the
//! billing crate's frame size for its resolution and ratio; with reference videos their seconds
//! are added (24 frames each). The vendor fetches the reference videos and bills their length,
//! and so does the simulator ([`reference_video_seconds`]): the total of the fetched files'
//! lengths, rounded up to whole seconds. Only when a video cannot be fetched (an `https://` URL,
//! a test's made-up host) does it fall back to a `[refsec=N]` marker in the prompt, or 5 s per
//! reference video.
//!
//! ## Videos
//!
//! Rendered on the first download with [`crate::video::render_mp4`] (the task's seconds and
//! ratio, `adaptive` as 16:9, a seed from the id) and then kept with the task. A single
//! `Range: bytes=a-b` (or `a-`, `-n`) is answered with 206.

use crate::knobs::KnobSettings;
use bytes::Bytes;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tollgate_billing::{clip_frame_size, clip_token_estimate_with_reference};
use tollgate_clip_tasks::{
    ArkError, ContentItem, CreateTaskRequest, DeleteEffect, ListQuery, ListResponse, Task,
    TaskContent, TaskError, TaskStatus, Usage, delete_effect,
};
use tollgate_generic_tasks::{
    CreateVideoRequest, CreateVideoResponse, ErrorBody, INVALID_REQUEST_ERROR, ModelSpec,
    VideoError, VideoTask,
};
use tollgate_openai_videos::{CreateVideoBody, Size, Variant, Video};

/// The Ark create and list path; one task is `ARK_TASKS_PATH/{id}`.
pub(crate) const ARK_TASKS_PATH: &str = tollgate_clip_tasks::task::TASKS_PATH;
/// The generic create path; one task is `GENERIC_PATH/{id}`.
pub(crate) const GENERIC_PATH: &str = "/v1/video/generations";
/// The OpenAI Videos path; one video is `OPENAI_PATH/{id}`, its files `OPENAI_PATH/{id}/content`.
pub(crate) const OPENAI_PATH: &str = "/v1/videos";
/// Where the finished videos are served: `VIDEOS_PATH{id}.mp4`.
pub(crate) const VIDEOS_PATH: &str = "/_sim/videos/";

/// A prompt containing this fails its task.
pub const FAIL_MARKER: &str = "[fail]";
/// A prompt containing this lets its task expire.
pub const EXPIRE_MARKER: &str = "[expire]";
/// The total length of an Ark request's reference videos, fetched as the vendor fetches them
/// (`crate::fetch`) and read from their MP4 headers; `None` when there are none, or any cannot
/// be fetched or read.
pub(crate) async fn reference_video_seconds(body: &[u8]) -> Option<f64> {
    let request: CreateTaskRequest = serde_json::from_slice(body).ok()?;
    let urls: Vec<String> = request
        .reference_videos()
        .map(|(_, url)| url.to_owned())
        .collect();
    if urls.is_empty() {
        return None;
    }
    let mut total = 0.0;
    for url in urls {
        let file = crate::fetch::fetch(&url).await?;
        match tollgate_probe::mp4::scan_mp4(&file, 0) {
            tollgate_probe::mp4::Mp4Scan::Seconds(s) if s.is_finite() && s >= 0.0 => total += s,
            _ => return None,
        }
    }
    Some(total)
}

/// `[refsec=N]` in a prompt: the reference videos last N seconds in total.
const REFSEC_MARKER: &str = "[refsec=";
/// Assumed length of one reference video without a `[refsec=N]` marker.
const DEFAULT_REFERENCE_SECONDS: u32 = 5;
/// Ark's `error.code` of a simulated failure.
pub const FAILURE_CODE: &str = "SimulatedFailure";
/// How long a finished video's link lasts (reported in the generic `expires_at`).
const LINK_LIFETIME_SECONDS: i64 = 24 * 60 * 60;

/// An answer: HTTP status and JSON body.
pub(crate) type Reply = (u16, Value);

/// The answer of the video route.
#[derive(Debug)]
pub(crate) enum VideoReply {
    /// 200 with the whole file, or 206 with `bytes start-end/total`.
    Video {
        status: u16,
        body: Bytes,
        content_range: Option<String>,
        content_type: &'static str,
    },
    /// 416: the range lies outside the file of this length.
    Unsatisfiable(u64),
    /// 404 (or 500): status and message.
    Refused(u16, String),
}

/// How a task ends, decided at creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Succeed,
    Fail,
    Expire,
}

/// Where a task stands at one instant.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Queued,
    /// Running, with the fraction of the running period elapsed.
    Running(f64),
    Finished(Outcome),
    Cancelled,
}

#[derive(Debug)]
enum Format {
    Ark {
        resolution: &'static str,
        ratio: &'static str,
        tokens: u64,
        seed: i64,
        generate_audio: bool,
        service_tier: String,
    },
    Generic {
        spec: &'static ModelSpec,
    },
    /// OpenAI's Videos API: the model's row and the size asked (`WIDTHxHEIGHT`).
    OpenAi {
        size: String,
        prompt: String,
    },
}

#[derive(Debug)]
struct SimTask {
    seq: u64,
    model: String,
    format: Format,
    seconds: u32,
    /// The aspect ratio the video is rendered with.
    render_ratio: String,
    created: Instant,
    created_unix: i64,
    queued: Duration,
    running: Duration,
    outcome: Outcome,
    /// Time after creation at which a queued task was cancelled.
    cancelled_after: Option<Duration>,
    /// Its files, rendered on first download: the video, and for OpenAI's videos the
    /// thumbnail and the spritesheet.
    files: HashMap<Variant, Bytes>,
}

impl SimTask {
    /// The phase at `now`, and the time after creation at which it began.
    fn phase(&self, now: Instant) -> (Phase, Duration) {
        if let Some(at) = self.cancelled_after {
            return (Phase::Cancelled, at);
        }
        let elapsed = now.saturating_duration_since(self.created);
        let done = self.queued + self.running;
        if elapsed < self.queued {
            (Phase::Queued, Duration::ZERO)
        } else if elapsed < done {
            let fraction = (elapsed - self.queued).as_secs_f64() / self.running.as_secs_f64();
            (Phase::Running(fraction), self.queued)
        } else {
            (Phase::Finished(self.outcome), done)
        }
    }

    fn unix_after(&self, offset: Duration) -> i64 {
        self.created_unix
            .saturating_add(i64::try_from(offset.as_secs()).unwrap_or(i64::MAX))
    }

    fn is_ark(&self) -> bool {
        matches!(self.format, Format::Ark { .. })
    }

    fn is_openai(&self) -> bool {
        matches!(self.format, Format::OpenAi { .. })
    }
}

/// The task registry of one simulator.
#[derive(Debug)]
pub(crate) struct Tasks {
    base_url: String,
    tasks: Mutex<HashMap<String, SimTask>>,
    created: AtomicU64,
    salt: u64,
}

impl Tasks {
    /// An empty registry whose video links start with `base_url` (`http://127.0.0.1:PORT`).
    pub(crate) fn new(base_url: String) -> Tasks {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        Tasks {
            base_url,
            tasks: Mutex::default(),
            created: AtomicU64::new(0),
            salt: mix(u64::from(nanos) ^ u64::from(std::process::id())),
        }
    }

    fn video_url(&self, id: &str) -> String {
        format!("{}{VIDEOS_PATH}{id}.mp4", self.base_url)
    }

    /// Counts a created task (1-based) and decides how it ends.
    fn next(&self, prompt: &str, knobs: &KnobSettings) -> (u64, Outcome) {
        let seq = self.created.fetch_add(1, Ordering::Relaxed) + 1;
        let every = knobs.task_fail_every.filter(|n| *n > 0).map(u64::from);
        let outcome =
            if prompt.contains(FAIL_MARKER) || every.is_some_and(|n| seq.is_multiple_of(n)) {
                Outcome::Fail
            } else if prompt.contains(EXPIRE_MARKER) {
                Outcome::Expire
            } else {
                Outcome::Succeed
            };
        (seq, outcome)
    }

    fn insert(&self, id: String, task: SimTask) {
        lock(&self.tasks).insert(id, task);
    }

    // ---- Ark ----

    /// `POST /api/v3/contents/generations/tasks`; `fetched_reference` is the total length of
    /// the reference videos when every one was fetched and read ([`reference_video_seconds`]).
    pub(crate) fn ark_create(
        &self,
        body: &[u8],
        knobs: &KnobSettings,
        fetched_reference: Option<f64>,
    ) -> Reply {
        let mut request: CreateTaskRequest = match serde_json::from_slice(body) {
            Ok(request) => request,
            Err(e) => {
                return ark_error(&ArkError::new(
                    "BadRequest",
                    "InvalidParameter",
                    format!("The request body is not a valid task: {e}"),
                    "",
                ));
            }
        };
        // The vendor obeys the prompt's inline flags (`--dur 12`), wire-formats §5.1.
        if let Err(e) = tollgate_clip_tasks::lift_inline_flags(&mut request) {
            return ark_error(&ArkError::from(&e));
        }
        // Its own videos are fine as references, though they live on loopback.
        let own_host: Vec<String> = tollgate_media_url::url_host(&self.base_url)
            .into_iter()
            .collect();
        let ok = match tollgate_clip_tasks::validate_trusting(&request, &own_host) {
            Ok(ok) => ok,
            Err(e) => return ark_error(&ArkError::from(&e)),
        };
        let prompt = request
            .content
            .iter()
            .filter_map(|item| match item {
                ContentItem::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        let (seq, outcome) = self.next(&prompt, knobs);
        let reference_seconds = match fetched_reference {
            _ if ok.reference_videos == 0 => 0,
            Some(seconds) => seconds.ceil().clamp(0.0, f64::from(u32::MAX)) as u32,
            None => refsec(&prompt).unwrap_or(DEFAULT_REFERENCE_SECONDS * ok.reference_videos),
        };
        let tokens = clip_frame_size(ok.resolution, ok.ratio).map_or(0, |size| {
            clip_token_estimate_with_reference(size, ok.duration_seconds, reference_seconds)
        });
        let created_unix = unix_now();
        let id = format!(
            "cgt-{}-{}",
            utc_stamp(created_unix),
            base36(self.salt.wrapping_add(seq), 5)
        );
        let seed = request
            .seed
            .filter(|s| *s >= 0)
            .unwrap_or_else(|| i64::from(mix(self.salt ^ seq) as u32));
        let service_tier = request
            .extra
            .get("service_tier")
            .and_then(Value::as_str)
            .unwrap_or("default")
            .to_owned();
        self.insert(
            id.clone(),
            SimTask {
                seq,
                model: request.model.clone(),
                format: Format::Ark {
                    resolution: ok.resolution,
                    ratio: ok.ratio,
                    tokens,
                    seed,
                    generate_audio: ok.generate_audio,
                    service_tier,
                },
                seconds: ok.duration_seconds,
                render_ratio: render_ratio(ok.ratio),
                created: Instant::now(),
                created_unix,
                queued: knobs.task_queued(),
                running: knobs.task_running(),
                outcome,
                cancelled_after: None,
                files: HashMap::new(),
            },
        );
        (200, json!({ "id": id }))
    }

    /// `GET /api/v3/contents/generations/tasks/{id}`.
    pub(crate) fn ark_get(&self, id: &str) -> Reply {
        let tasks = lock(&self.tasks);
        match tasks.get(id).filter(|t| t.is_ark()) {
            Some(task) => (200, to_value(&self.ark_record(id, task, Instant::now()))),
            None => ark_not_found(id),
        }
    }

    /// `GET /api/v3/contents/generations/tasks?...`: newest first.
    pub(crate) fn ark_list(&self, query: &str) -> Reply {
        let query = match ListQuery::parse(query) {
            Ok(query) => query,
            Err(e) => return ark_error(&ArkError::from(&e)),
        };
        let now = Instant::now();
        let tasks = lock(&self.tasks);
        let mut all: Vec<(u64, Task)> = tasks
            .iter()
            .filter(|(_, task)| task.is_ark())
            .map(|(id, task)| (task.seq, self.ark_record(id, task, now)))
            .filter(|(_, record)| query.matches(record))
            .collect();
        drop(tasks);
        all.sort_by_key(|(seq, _)| std::cmp::Reverse(*seq));
        let total = all.len() as u64;
        let items = all
            .into_iter()
            .skip(usize::try_from(query.offset()).unwrap_or(usize::MAX))
            .take(query.page_size as usize)
            .map(|(_, record)| record)
            .collect();
        (200, to_value(&ListResponse { total, items }))
    }

    /// `DELETE /api/v3/contents/generations/tasks/{id}` (wire-formats §5.3).
    pub(crate) fn ark_delete(&self, id: &str) -> Reply {
        let now = Instant::now();
        let mut tasks = lock(&self.tasks);
        let Some(task) = tasks.get_mut(id).filter(|t| t.is_ark()) else {
            return ark_not_found(id);
        };
        let status = ark_status(task.phase(now).0);
        match delete_effect(&status) {
            DeleteEffect::Cancel => {
                task.cancelled_after = Some(now.saturating_duration_since(task.created));
                (200, json!({}))
            }
            DeleteEffect::Remove => {
                tasks.remove(id);
                (200, json!({}))
            }
            DeleteEffect::Refuse => ark_error(&ArkError::new(
                "BadRequest",
                "InvalidAction.TaskStatus",
                format!("The task {id} is {status} and can be neither cancelled nor deleted."),
                "id",
            )),
        }
    }

    fn ark_record(&self, id: &str, task: &SimTask, now: Instant) -> Task {
        let (phase, since) = task.phase(now);
        let mut record = Task::new(id, task.model.clone(), ark_status(phase));
        record.created_at = Some(task.created_unix);
        record.updated_at = Some(task.unix_after(since));
        record.duration = Some(i64::from(task.seconds));
        record.framespersecond = Some(i64::from(crate::video::FPS));
        if let Format::Ark {
            resolution,
            ratio,
            tokens,
            seed,
            generate_audio,
            service_tier,
        } = &task.format
        {
            record.resolution = Some((*resolution).to_owned());
            record.ratio = Some((*ratio).to_owned());
            record.seed = Some(*seed);
            record.generate_audio = Some(*generate_audio);
            record.service_tier = Some(service_tier.clone());
            match phase {
                Phase::Finished(Outcome::Succeed) => {
                    record.frames = Some(i64::from(crate::video::frame_count(f64::from(
                        task.seconds,
                    ))));
                    record.content = Some(TaskContent {
                        video_url: Some(self.video_url(id)),
                        ..TaskContent::default()
                    });
                    record.usage = Some(Usage {
                        completion_tokens: Some(*tokens),
                        total_tokens: Some(*tokens),
                        ..Usage::default()
                    });
                }
                Phase::Finished(Outcome::Fail) => {
                    record.error = Some(TaskError {
                        code: FAILURE_CODE.to_owned(),
                        message: "The simulator failed this task as asked.".to_owned(),
                        ..TaskError::default()
                    });
                }
                Phase::Finished(Outcome::Expire) => {
                    record.error = Some(TaskError {
                        code: "TaskExpired".to_owned(),
                        message: "The task passed its execution time limit.".to_owned(),
                        ..TaskError::default()
                    });
                }
                _ => {}
            }
        }
        record
    }

    // ---- generic ----

    /// `POST /v1/video/generations`.
    pub(crate) fn generic_create(&self, body: &[u8], knobs: &KnobSettings) -> Reply {
        let request: CreateVideoRequest = match serde_json::from_slice(body) {
            Ok(request) => request,
            Err(e) => {
                return generic_error(
                    400,
                    &ErrorBody::new(
                        INVALID_REQUEST_ERROR,
                        format!("The request body is not a valid video request: {e}"),
                    ),
                );
            }
        };
        let Some(spec) = tollgate_generic_tasks::spec(&request.model) else {
            return generic_error(404, &ErrorBody::model_not_found(&request.model));
        };
        let ok = match tollgate_generic_tasks::validate(&request, spec) {
            Ok(ok) => ok,
            Err(e) => return generic_error(400, &ErrorBody::from(&e)),
        };
        let (seq, outcome) = self.next(&request.prompt, knobs);
        let id = format!("video_{:016x}", mix(self.salt ^ seq.rotate_left(32)));
        let created_unix = unix_now();
        self.insert(
            id.clone(),
            SimTask {
                seq,
                model: request.model.clone(),
                format: Format::Generic { spec },
                seconds: ok.duration_seconds,
                render_ratio: render_ratio(ok.aspect_ratio.as_deref().unwrap_or("16:9")),
                created: Instant::now(),
                created_unix,
                queued: knobs.task_queued(),
                running: knobs.task_running(),
                outcome,
                cancelled_after: None,
                files: HashMap::new(),
            },
        );
        (
            200,
            to_value(&CreateVideoResponse::new(id, request.model, created_unix)),
        )
    }

    /// `GET /v1/video/generations/{id}`.
    pub(crate) fn generic_get(&self, id: &str) -> Reply {
        let tasks = lock(&self.tasks);
        let Some((task, spec)) = tasks.get(id).and_then(|task| match task.format {
            Format::Generic { spec } => Some((task, spec)),
            Format::Ark { .. } | Format::OpenAi { .. } => None,
        }) else {
            return generic_error(404, &ErrorBody::task_not_found(id));
        };
        let (phase, since) = task.phase(Instant::now());
        let queued =
            VideoTask::queued(id, task.model.clone(), task.created_unix).with_seconds(task.seconds);
        let finished = task.unix_after(since);
        let record = match phase {
            Phase::Queued => queued,
            Phase::Running(fraction) => queued.in_progress(1 + (fraction * 98.0) as u8),
            Phase::Finished(Outcome::Succeed) => {
                let mut done = queued
                    .completed_for(spec, self.video_url(id))
                    .finished_at(finished);
                done.expires_at = Some(finished.saturating_add(LINK_LIFETIME_SECONDS));
                done
            }
            Phase::Finished(Outcome::Fail) => queued
                .failed(VideoError::new(
                    "generation_failed",
                    "The simulator failed this task as asked.",
                ))
                .finished_at(finished),
            Phase::Finished(Outcome::Expire) | Phase::Cancelled => queued
                .failed(VideoError::new(
                    "expired",
                    "The task passed its execution time limit.",
                ))
                .finished_at(finished),
        };
        (200, to_value(&record))
    }

    // ---- videos ----

    /// `GET /_sim/videos/{file}`, `file` being `{id}.mp4`; `range` the `Range` header.
    pub(crate) async fn video(&self, file: &str, range: Option<&str>) -> VideoReply {
        match file.strip_suffix(".mp4") {
            Some(id) => self.file(id, Variant::Video, range).await,
            None => VideoReply::Refused(404, format!("No finished video {file}")),
        }
    }

    /// `variant` of finished task `id`, rendered on first use and kept; `range` the `Range`
    /// header.
    async fn file(&self, id: &str, variant: Variant, range: Option<&str>) -> VideoReply {
        let not_found = || VideoReply::Refused(404, format!("No finished video {id}"));
        let spec = {
            let tasks = lock(&self.tasks);
            let Some(task) = tasks.get(id) else {
                return not_found();
            };
            if task.phase(Instant::now()).0 != Phase::Finished(Outcome::Succeed) {
                return not_found();
            }
            match task.files.get(&variant) {
                Some(file) => Ok(file.clone()),
                None => Err(crate::video::VideoSpec {
                    seconds: f64::from(task.seconds),
                    aspect_ratio: task.render_ratio.clone(),
                    seed: mix(fnv(id)),
                }),
            }
        };
        let file = match spec {
            Ok(file) => file,
            Err(spec) => {
                let rendered = tokio::task::spawn_blocking(move || match variant {
                    Variant::Video => crate::video::render_mp4(&spec),
                    Variant::Thumbnail => crate::video::render_thumbnail(&spec),
                    Variant::Spritesheet => crate::video::render_spritesheet(&spec),
                })
                .await;
                let bytes = match rendered {
                    Ok(Ok(bytes)) => Bytes::from(bytes),
                    Ok(Err(e)) => return VideoReply::Refused(500, e.to_string()),
                    Err(e) => return VideoReply::Refused(500, e.to_string()),
                };
                let mut tasks = lock(&self.tasks);
                match tasks.get_mut(id) {
                    Some(task) => task.files.entry(variant).or_insert(bytes).clone(),
                    None => bytes,
                }
            }
        };
        let total = file.len() as u64;
        let content_type = variant.content_type();
        match range.map(|r| byte_range(r, total)) {
            None | Some(None) => VideoReply::Video {
                status: 200,
                body: file,
                content_range: None,
                content_type,
            },
            Some(Some(Err(()))) => VideoReply::Unsatisfiable(total),
            Some(Some(Ok((start, end)))) => VideoReply::Video {
                status: 206,
                body: file.slice(start as usize..=end as usize),
                content_range: Some(format!("bytes {start}-{end}/{total}")),
                content_type,
            },
        }
    }

    // ---- OpenAI Videos ----

    /// `POST /v1/videos` (JSON): a Sora-style model's sizes and lengths only, refused as that
    /// vendor refuses, naming the field.
    pub(crate) fn openai_create(&self, body: &[u8], knobs: &KnobSettings) -> Reply {
        let body: CreateVideoBody = match openai_body(body) {
            Ok(body) => body,
            Err(refused) => return refused,
        };
        let checked = match body.check() {
            Ok(checked) => checked,
            Err(e) => return openai_error(400, Some(&e.field), e.rule.code(), &e.message),
        };
        let Some(spec) =
            tollgate_generic_tasks::spec(&checked.model).filter(|s| !s.sizes.is_empty())
        else {
            return openai_error(
                400,
                Some("model"),
                "invalid_value",
                &format!(
                    "Invalid value: '{}'. Supported values are: 'sora-2' and 'sora-2-pro'.",
                    checked.model
                ),
            );
        };
        let mut request = CreateVideoRequest::new(&checked.model, &checked.prompt);
        request.duration = checked.seconds.map(f64::from);
        if let Some(size) = checked.size {
            request.resolution = Some(size.resolution());
            request.aspect_ratio = Some(size.aspect_ratio());
        }
        let ok = match tollgate_generic_tasks::validate(&request, spec) {
            Ok(ok) => ok,
            Err(e) => {
                let param = match e.field.as_str() {
                    "duration" => "seconds",
                    "resolution" | "aspect_ratio" => "size",
                    other => other,
                };
                return openai_error(400, Some(param), "invalid_value", &e.message);
            }
        };
        let ratio = ok.aspect_ratio.clone().unwrap_or_else(|| "9:16".into());
        let size = Size::from_resolution(&ok.resolution, &ratio)
            .map(|s| s.to_string())
            .unwrap_or_default();
        let made = OpenAiVideo {
            model: checked.model,
            prompt: checked.prompt,
            seconds: ok.duration_seconds,
            size,
            ratio,
        };
        self.openai_start(made, None, knobs)
    }

    /// `POST /v1/videos/{id}/remix`: a new video of a completed one's model, seconds and size,
    /// from a new prompt.
    pub(crate) fn openai_remix(&self, id: &str, body: &[u8], knobs: &KnobSettings) -> Reply {
        let body: tollgate_openai_videos::RemixBody = match openai_body(body) {
            Ok(body) => body,
            Err(refused) => return refused,
        };
        let prompt = match body.check() {
            Ok(prompt) => prompt,
            Err(e) => return openai_error(400, Some(&e.field), e.rule.code(), &e.message),
        };
        let made = {
            let tasks = lock(&self.tasks);
            let Some(original) = tasks.get(id).filter(|t| t.is_openai()) else {
                return openai_not_found(id);
            };
            if original.phase(Instant::now()).0 != Phase::Finished(Outcome::Succeed) {
                return openai_error(
                    400,
                    Some("video_id"),
                    "invalid_value",
                    &format!(
                        "Video '{id}' is not completed; only a completed video can be remixed."
                    ),
                );
            }
            let Format::OpenAi { size, .. } = &original.format else {
                return openai_not_found(id);
            };
            OpenAiVideo {
                model: original.model.clone(),
                prompt,
                seconds: original.seconds,
                size: size.clone(),
                ratio: original.render_ratio.clone(),
            }
        };
        self.openai_start(made, Some(id), knobs)
    }

    /// A new video, remixing `remix_of` or not: its record as the create's answer.
    fn openai_start(
        &self,
        made: OpenAiVideo,
        remix_of: Option<&str>,
        knobs: &KnobSettings,
    ) -> Reply {
        let (seq, outcome) = self.next(&made.prompt, knobs);
        let id = format!("video_{:016x}", mix(self.salt ^ seq.rotate_left(32)));
        let now = Instant::now();
        let task = SimTask {
            seq,
            model: made.model,
            format: Format::OpenAi {
                size: made.size,
                prompt: made.prompt,
            },
            seconds: made.seconds,
            render_ratio: made.ratio,
            created: now,
            created_unix: unix_now(),
            queued: knobs.task_queued(),
            running: knobs.task_running(),
            outcome,
            cancelled_after: None,
            files: HashMap::new(),
        };
        let mut record = openai_record(&id, &task, now);
        record.remixed_from_video_id = remix_of.map(str::to_owned);
        self.insert(id, task);
        (200, to_value(&record))
    }

    /// `GET /v1/videos/{id}`.
    pub(crate) fn openai_get(&self, id: &str) -> Reply {
        let tasks = lock(&self.tasks);
        match tasks.get(id).filter(|t| t.is_openai()) {
            Some(task) => (200, to_value(&openai_record(id, task, Instant::now()))),
            None => openai_not_found(id),
        }
    }

    /// `DELETE /v1/videos/{id}`: the video and its files are gone.
    pub(crate) fn openai_delete(&self, id: &str) -> Reply {
        let mut tasks = lock(&self.tasks);
        match tasks.get(id).filter(|t| t.is_openai()) {
            Some(_) => {
                tasks.remove(id);
                (
                    200,
                    to_value(&tollgate_openai_videos::VideoDeleted::new(id)),
                )
            }
            None => openai_not_found(id),
        }
    }

    /// `GET /v1/videos/{id}/content?variant=…`.
    pub(crate) async fn openai_content(
        &self,
        id: &str,
        variant: Option<&str>,
        range: Option<&str>,
    ) -> Result<VideoReply, Reply> {
        let Some(variant) = Variant::parse(variant) else {
            return Err(openai_error(
                400,
                Some("variant"),
                "invalid_value",
                "Invalid value for 'variant': expected 'video', 'thumbnail' or 'spritesheet'.",
            ));
        };
        if !lock(&self.tasks).get(id).is_some_and(SimTask::is_openai) {
            return Err(openai_not_found(id));
        }
        Ok(self.file(id, variant, range).await)
    }
}

/// What a new OpenAI video is made of.
struct OpenAiVideo {
    model: String,
    prompt: String,
    seconds: u32,
    /// `WIDTHxHEIGHT`.
    size: String,
    /// The aspect ratio it is rendered at.
    ratio: String,
}

/// A JSON body of the OpenAI routes, or the vendor's refusal of it.
fn openai_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Reply> {
    serde_json::from_slice(body).map_err(|e| {
        openai_error(
            400,
            None,
            "invalid_json",
            &format!("We could not parse the JSON body of your request: {e}"),
        )
    })
}

/// A video's record at `now`, as the vendor writes it.
fn openai_record(id: &str, task: &SimTask, now: Instant) -> Video {
    let Format::OpenAi { size, prompt } = &task.format else {
        return Video::queued(id, &task.model, task.created_unix, "", "");
    };
    let (phase, since) = task.phase(now);
    let mut video = Video::queued(
        id,
        &task.model,
        task.created_unix,
        task.seconds.to_string(),
        size.clone(),
    );
    video.prompt = Some(prompt.clone());
    let finished = task.unix_after(since);
    match phase {
        Phase::Queued => video,
        Phase::Running(fraction) => video.in_progress(1 + (fraction * 98.0) as u8),
        Phase::Finished(Outcome::Succeed) => video.completed(
            finished,
            Some(finished.saturating_add(LINK_LIFETIME_SECONDS)),
        ),
        Phase::Finished(Outcome::Fail) => video.failed(
            finished,
            tollgate_openai_videos::VideoError {
                code: "video_generation_failed".into(),
                message: "The simulator failed this video as asked.".into(),
            },
        ),
        Phase::Finished(Outcome::Expire) | Phase::Cancelled => video.failed(
            finished,
            tollgate_openai_videos::VideoError {
                code: "video_expired".into(),
                message: "The video passed its execution time limit.".into(),
            },
        ),
    }
}

/// An error in OpenAI's shape.
fn openai_error(status: u16, param: Option<&str>, code: &str, message: &str) -> Reply {
    (
        status,
        json!({"error": {
            "message": message,
            "type": "invalid_request_error",
            "param": param,
            "code": code,
        }}),
    )
}

fn openai_not_found(id: &str) -> Reply {
    openai_error(
        404,
        Some("video_id"),
        "not_found",
        &format!("Video with id '{id}' not found."),
    )
}

/// The Ark answer to a failure injected by the knobs.
pub(crate) fn ark_failure(status: u16) -> Reply {
    let kind = tollgate_clip_tasks::error::ERROR_TYPES
        .iter()
        .find(|(_, s)| *s == status)
        .map_or(
            if status < 500 {
                "BadRequest"
            } else {
                "InternalServerError"
            },
            |(kind, _)| kind,
        );
    let code = match status {
        429 => "RateLimitExceeded.EndpointRPMExceeded",
        400..=499 => "InvalidParameter",
        _ => "InternalServiceError",
    };
    (
        status,
        to_value(&ArkError::new(kind, code, "simulated upstream failure", "")),
    )
}

fn ark_error(error: &ArkError) -> Reply {
    (error.http_status(), to_value(error))
}

fn ark_not_found(id: &str) -> Reply {
    ark_error(&ArkError::new(
        "NotFound",
        "NotFound",
        format!("The task {id} was not found."),
        "id",
    ))
}

fn generic_error(status: u16, error: &ErrorBody) -> Reply {
    (status, to_value(error))
}

fn ark_status(phase: Phase) -> TaskStatus {
    match phase {
        Phase::Queued => TaskStatus::Queued,
        Phase::Running(_) => TaskStatus::Running,
        Phase::Finished(Outcome::Succeed) => TaskStatus::Succeeded,
        Phase::Finished(Outcome::Fail) => TaskStatus::Failed,
        Phase::Finished(Outcome::Expire) => TaskStatus::Expired,
        Phase::Cancelled => TaskStatus::Cancelled,
    }
}

fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The ratio to render: the vendor picks for `adaptive`/`auto`; the simulator picks 16:9.
fn render_ratio(ratio: &str) -> String {
    match ratio {
        "adaptive" | "auto" => "16:9".to_owned(),
        other => other.to_owned(),
    }
}

/// N of a `[refsec=N]` marker.
fn refsec(prompt: &str) -> Option<u32> {
    let rest = &prompt[prompt.find(REFSEC_MARKER)? + REFSEC_MARKER.len()..];
    rest[..rest.find(']')?].trim().parse().ok()
}

/// A single byte range of a file of `len` bytes: `None` to ignore the header (not `bytes=`, several
/// ranges, malformed), `Some(Err(()))` when unsatisfiable, else the inclusive range.
fn byte_range(header: &str, len: u64) -> Option<Result<(u64, u64), ()>> {
    let spec = header.trim().strip_prefix("bytes=")?;
    if spec.contains(',') {
        return None;
    }
    let (start, end) = spec.split_once('-')?;
    let (start, end) = (start.trim(), end.trim());
    let range = if start.is_empty() {
        let suffix: u64 = end.parse().ok()?;
        if suffix == 0 || len == 0 {
            return Some(Err(()));
        }
        (len.saturating_sub(suffix), len - 1)
    } else {
        let start: u64 = start.parse().ok()?;
        let end = if end.is_empty() {
            u64::MAX
        } else {
            end.parse().ok()?
        };
        if end < start {
            return None;
        }
        if start >= len {
            return Some(Err(()));
        }
        (start, end.min(len - 1))
    };
    Some(Ok(range))
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// `yyyymmddhhmmss` of Unix seconds, UTC.
fn utc_stamp(unix: i64) -> String {
    let (days, secs) = (unix.div_euclid(86_400), unix.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}{:02}{:02}{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// The last `width` base-36 digits of `n`.
fn base36(mut n: u64, width: usize) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = vec![b'0'; width];
    for slot in out.iter_mut().rev() {
        *slot = DIGITS[(n % 36) as usize];
        n /= 36;
    }
    String::from_utf8(out).unwrap_or_default()
}

/// SplitMix64's finaliser.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// FNV-1a of a string.
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// A poisoned lock only means another request panicked mid-update of plain data; carry on.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
