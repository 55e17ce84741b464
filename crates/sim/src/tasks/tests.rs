use super::*;
use crate::{KnobSettings, SimHandle, start};
use http::{HeaderMap, Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use tollgate_billing::{FrameSize, clip_token_estimate};
use tollgate_generic_tasks::MODELS;

const MODEL_20: &str = "clipgen-cn-2.0-260128";
const MODEL_25: &str = "clipgen-intl-2.5-fast-260301";

/// Knobs with this clock (queued ms, running ms).
fn clock(queued: u64, running: u64) -> KnobSettings {
    KnobSettings {
        task_queued_ms: Some(queued),
        task_running_ms: Some(running),
        ..KnobSettings::default()
    }
}

async fn sim(knobs: KnobSettings) -> SimHandle {
    start("127.0.0.1:0".parse().unwrap(), knobs).await.unwrap()
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {:?}", String::from_utf8_lossy(&self.body)))
    }
}

async fn call(
    sim: &SimHandle,
    method: Method,
    path: &str,
    body: Option<Value>,
    range: Option<&str>,
) -> Answer {
    let stream = tokio::net::TcpStream::connect(sim.addr()).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, "sim");
    if let Some(range) = range {
        request = request.header(header::RANGE, range);
    }
    let body = body.map_or_else(Bytes::new, |b| Bytes::from(b.to_string()));
    let request = request.body(Full::new(body)).unwrap();
    let response = sender.send_request(request).await.unwrap();
    let (parts, body) = response.into_parts();
    Answer {
        status: parts.status,
        headers: parts.headers,
        body: body.collect().await.unwrap().to_bytes(),
    }
}

async fn get(sim: &SimHandle, path: &str) -> Answer {
    call(sim, Method::GET, path, None, None).await
}

fn ark_body(model: &str, prompt: &str) -> Value {
    json!({
        "model": model,
        "content": [{"type": "text", "text": prompt}],
        "resolution": "480p", "ratio": "16:9", "duration": 4,
    })
}

/// Creates an Ark task and returns its id.
async fn ark_create(sim: &SimHandle, body: Value) -> String {
    let answer = call(sim, Method::POST, ARK_TASKS_PATH, Some(body), None).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.json());
    let json = answer.json();
    json["id"].as_str().unwrap().to_owned()
}

async fn ark_get(sim: &SimHandle, id: &str) -> Value {
    let answer = get(sim, &format!("{ARK_TASKS_PATH}/{id}")).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.json());
    answer.json()
}

/// The path of a video link of this simulator.
fn path_of(sim: &SimHandle, url: &str) -> String {
    url.strip_prefix(&sim.base_url()).unwrap().to_owned()
}

async fn sleep_until(start: Instant, ms: u64) {
    tokio::time::sleep_until((start + Duration::from_millis(ms)).into()).await;
}

fn is_ark_id(id: &str) -> bool {
    let parts: Vec<&str> = id.split('-').collect();
    parts.len() == 3
        && parts[0] == "cgt"
        && parts[1].len() == 14
        && parts[1].bytes().all(|b| b.is_ascii_digit())
        && parts[2].len() == 5
        && parts[2]
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
}

#[tokio::test]
async fn ark_task_runs_on_the_clock_and_its_video_downloads() {
    let sim = sim(clock(300, 300)).await;
    let created = Instant::now();
    let id = ark_create(&sim, ark_body(MODEL_20, "A lighthouse in a storm")).await;
    assert!(is_ark_id(&id), "{id}");

    let queued = ark_get(&sim, &id).await;
    assert_eq!(queued["status"], "queued");
    assert!(queued.get("content").is_none() && queued.get("usage").is_none());

    sleep_until(created, 450).await;
    let running = ark_get(&sim, &id).await;
    assert_eq!(running["status"], "running");
    assert!(running.get("content").is_none());

    sleep_until(created, 700).await;
    let done: Task = serde_json::from_value(ark_get(&sim, &id).await).unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded);
    assert_eq!(done.model, MODEL_20);
    let tokens = (864u64 * 496 * 97).div_ceil(1024);
    assert_eq!(tokens, 40_595);
    assert_eq!(tokens, clip_token_estimate(FrameSize::new(864, 496), 4));
    assert_eq!(done.completion_tokens(), Some(tokens));
    assert_eq!(done.usage.as_ref().unwrap().total_tokens, Some(tokens));
    assert_eq!(
        (done.resolution.as_deref(), done.ratio.as_deref()),
        (Some("480p"), Some("16:9"))
    );
    assert_eq!((done.duration, done.framespersecond), (Some(4), Some(24)));
    let (created_at, updated_at) = (done.created_at.unwrap(), done.updated_at.unwrap());
    assert!(created_at > 1_700_000_000 && updated_at >= created_at);
    assert!(done.error.is_none());

    let url = done.video_url().unwrap();
    assert_eq!(url, format!("{}/_sim/videos/{id}.mp4", sim.base_url()));
    let video = get(&sim, &path_of(&sim, url)).await;
    assert_eq!(video.status, StatusCode::OK);
    assert_eq!(video.headers[header::CONTENT_TYPE], "video/mp4");
    assert_eq!(
        video.headers[header::CONTENT_LENGTH].to_str().unwrap(),
        video.body.len().to_string()
    );
    let info = crate::video::inspect_mp4(&video.body).unwrap();
    assert!((info.duration - 4.0).abs() < 0.1, "{}", info.duration);
    assert_eq!((info.width, info.height), crate::video::frame_size("16:9"));
    assert_eq!(info.width * 9, info.height * 16);

    // The second download is the cached file; a range gives its bytes.
    let again = get(&sim, &path_of(&sim, url)).await;
    assert_eq!(again.body, video.body);
    let part = call(
        &sim,
        Method::GET,
        &path_of(&sim, url),
        None,
        Some("bytes=10-109"),
    )
    .await;
    assert_eq!(part.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(part.body, video.body.slice(10..110));
    assert_eq!(
        part.headers[header::CONTENT_RANGE].to_str().unwrap(),
        format!("bytes 10-109/{}", video.body.len())
    );
    let past = format!("bytes={}-", video.body.len());
    let outside = call(&sim, Method::GET, &path_of(&sim, url), None, Some(&past)).await;
    assert_eq!(outside.status, StatusCode::RANGE_NOT_SATISFIABLE);

    let knobs = sim.knobs().clone();
    assert_eq!(knobs.served("POST /api/v3/contents/generations/tasks"), 1);
    assert_eq!(
        knobs.served("GET /api/v3/contents/generations/tasks/{id}"),
        3
    );
    assert_eq!(knobs.served("GET /_sim/videos/{id}.mp4"), 4);
    sim.shutdown().await;
}

#[tokio::test]
async fn ark_reference_videos_add_their_seconds() {
    let sim = sim(clock(0, 0)).await;
    let body = |prompt: &str| {
        json!({
            "model": MODEL_20,
            "content": [
                {"type": "text", "text": prompt},
                {"type": "video_url", "video_url": {"url": "https://cdn.example.com/a.mp4"}, "role": "reference_video"},
                {"type": "video_url", "video_url": {"url": "https://cdn.example.com/b.mp4"}, "role": "reference_video"},
            ],
            "resolution": "720p", "ratio": "16:9", "duration": 4,
        })
    };
    let size = FrameSize::new(1280, 720);
    let id = ark_create(&sim, body("Two clips")).await;
    let task: Task = serde_json::from_value(ark_get(&sim, &id).await).unwrap();
    assert_eq!(
        task.completion_tokens(),
        Some(clip_token_estimate_with_reference(size, 4, 10))
    );
    let id = ark_create(&sim, body("Two short clips [refsec=4]")).await;
    let task: Task = serde_json::from_value(ark_get(&sim, &id).await).unwrap();
    assert_eq!(task.completion_tokens(), Some(173_700));
    sim.shutdown().await;
}

#[tokio::test]
async fn ark_markers_and_fail_every_pick_the_ending() {
    let sim = sim(KnobSettings {
        task_fail_every: Some(3),
        ..clock(0, 0)
    })
    .await;
    let mut statuses = Vec::new();
    for i in 0..7 {
        let id = ark_create(&sim, ark_body(MODEL_20, &format!("clip {i}"))).await;
        statuses.push(ark_get(&sim, &id).await["status"].clone());
    }
    let failed: Vec<usize> = (0..7).filter(|i| statuses[*i] == "failed").collect();
    assert_eq!(failed, [2, 5], "{statuses:?}");
    assert!(
        statuses
            .iter()
            .enumerate()
            .all(|(i, s)| failed.contains(&i) || s == "succeeded")
    );

    sim.knobs().set(clock(0, 0));
    let id = ark_create(&sim, ark_body(MODEL_20, "A storm [fail]")).await;
    let failed: Task = serde_json::from_value(ark_get(&sim, &id).await).unwrap();
    assert_eq!(failed.status, TaskStatus::Failed);
    let error = failed.error.unwrap();
    assert_eq!(error.code, FAILURE_CODE);
    assert!(!error.message.is_empty());
    assert!(failed.content.is_none() && failed.usage.is_none());
    let video = get(&sim, &format!("/_sim/videos/{id}.mp4")).await;
    assert_eq!(video.status, StatusCode::NOT_FOUND);

    let id = ark_create(&sim, ark_body(MODEL_20, "A storm [expire]")).await;
    assert_eq!(ark_get(&sim, &id).await["status"], "expired");
    sim.shutdown().await;
}

#[tokio::test]
async fn ark_list_filters_and_pages() {
    let sim = sim(clock(0, 0)).await;
    let mut ids = Vec::new();
    for prompt in ["one", "two", "three [fail]"] {
        ids.push(ark_create(&sim, ark_body(MODEL_20, prompt)).await);
    }
    ids.push(ark_create(&sim, ark_body(MODEL_25, "four")).await);
    ids.push(ark_create(&sim, ark_body(MODEL_25, "five")).await);
    let list = |query: String| {
        let sim = &sim;
        async move {
            let answer = get(sim, &format!("{ARK_TASKS_PATH}?{query}")).await;
            (answer.status, answer.json())
        }
    };
    let ids_of = |page: &Value| -> Vec<String> {
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_owned())
            .collect()
    };

    let (status, all) = list(String::new()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(all["total"], 5);
    let newest_first: Vec<String> = ids.iter().rev().cloned().collect();
    assert_eq!(ids_of(&all), newest_first);

    let (_, failed) = list("filter.status=failed".into()).await;
    assert_eq!(
        (failed["total"].clone(), ids_of(&failed)),
        (json!(1), vec![ids[2].clone()])
    );

    let (_, some) = list(format!(
        "filter.task_ids={}&filter.task_ids={}",
        ids[0], ids[3]
    ))
    .await;
    assert_eq!(some["total"], 2);
    assert_eq!(ids_of(&some), [ids[3].clone(), ids[0].clone()]);

    let (_, by_model) = list(format!("filter.model={MODEL_25}&filter.status=succeeded")).await;
    assert_eq!(ids_of(&by_model), [ids[4].clone(), ids[3].clone()]);

    let (_, page) = list("page_num=2&page_size=2".into()).await;
    assert_eq!(page["total"], 5);
    assert_eq!(ids_of(&page), [ids[2].clone(), ids[1].clone()]);
    let (_, last) = list("page_num=3&page_size=2".into()).await;
    assert_eq!(ids_of(&last), [ids[0].clone()]);

    let (status, bad) = list("page_size=500".into()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(bad["error"]["param"], "page_size");
    assert_eq!(bad["error"]["type"], "BadRequest");
    sim.shutdown().await;
}

#[tokio::test]
async fn ark_delete_cancels_refuses_or_removes() {
    let sim = sim(clock(60_000, 0)).await;
    let path = |id: &str| format!("{ARK_TASKS_PATH}/{id}");

    // Queued: cancelled, and then it cannot be deleted again.
    let queued = ark_create(&sim, ark_body(MODEL_20, "queued")).await;
    let deleted = call(&sim, Method::DELETE, &path(&queued), None, None).await;
    assert_eq!(deleted.status, StatusCode::OK);
    assert_eq!(ark_get(&sim, &queued).await["status"], "cancelled");
    let again = call(&sim, Method::DELETE, &path(&queued), None, None).await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST);

    // Running: refused, still running.
    sim.knobs().set(clock(0, 60_000));
    let running = ark_create(&sim, ark_body(MODEL_20, "running")).await;
    let refused = call(&sim, Method::DELETE, &path(&running), None, None).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert_eq!(refused.json()["error"]["type"], "BadRequest");
    assert_eq!(ark_get(&sim, &running).await["status"], "running");

    // Succeeded: removed, then unknown.
    sim.knobs().set(clock(0, 0));
    let done = ark_create(&sim, ark_body(MODEL_20, "done")).await;
    assert_eq!(ark_get(&sim, &done).await["status"], "succeeded");
    let removed = call(&sim, Method::DELETE, &path(&done), None, None).await;
    assert_eq!(removed.status, StatusCode::OK);
    let gone = get(&sim, &path(&done)).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    assert_eq!(gone.json()["error"]["type"], "NotFound");
    let video = get(&sim, &format!("/_sim/videos/{done}.mp4")).await;
    assert_eq!(video.status, StatusCode::NOT_FOUND);
    let unknown = call(&sim, Method::DELETE, &path("cgt-nope"), None, None).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    sim.shutdown().await;
}

#[tokio::test]
async fn ark_invalid_create_names_the_field() {
    let sim = sim(clock(0, 0)).await;
    let mut body = ark_body(MODEL_20, "x");
    body["resolution"] = json!("1080p");
    let answer = call(&sim, Method::POST, ARK_TASKS_PATH, Some(body), None).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    let error = answer.json()["error"].clone();
    assert_eq!(
        (
            error["param"].clone(),
            error["code"].clone(),
            error["type"].clone()
        ),
        (
            json!("resolution"),
            json!("InvalidParameter"),
            json!("BadRequest")
        )
    );

    let answer = call(
        &sim,
        Method::POST,
        ARK_TASKS_PATH,
        Some(json!({"model": MODEL_20, "content": []})),
        None,
    )
    .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(answer.json()["error"]["param"], "content");
    assert_eq!(answer.json()["error"]["code"], "MissingParameter");

    let answer = call(&sim, Method::POST, ARK_TASKS_PATH, None, None).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    sim.shutdown().await;
}

#[tokio::test]
async fn faults_apply_to_polls_too() {
    let sim = sim(clock(0, 0)).await;
    let id = ark_create(&sim, ark_body(MODEL_20, "x")).await;
    let mut knobs = clock(0, 0);
    knobs.fail_status = Some(429);
    knobs.fail_times = Some(1);
    sim.knobs().set(knobs);
    let limited = get(&sim, &format!("{ARK_TASKS_PATH}/{id}")).await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(limited.json()["error"]["type"], "TooManyRequests");
    assert_eq!(ark_get(&sim, &id).await["status"], "succeeded");

    let mut knobs = clock(0, 0);
    knobs.fail_status = Some(503);
    knobs.fail_times = Some(1);
    sim.knobs().set(knobs);
    let unavailable = get(&sim, "/v1/video/generations/video_0").await;
    assert_eq!(unavailable.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(unavailable.json()["error"]["type"], "server_error");
    assert_eq!(sim.knobs().served("GET /v1/video/generations/{id}"), 1);
    assert_eq!(
        sim.knobs()
            .served("GET /api/v3/contents/generations/tasks/{id}"),
        2
    );
    sim.shutdown().await;
}

async fn generic_create(sim: &SimHandle, body: Value) -> Answer {
    call(sim, Method::POST, GENERIC_PATH, Some(body), None).await
}

async fn generic_get(sim: &SimHandle, id: &str) -> VideoTask {
    let answer = get(sim, &format!("{GENERIC_PATH}/{id}")).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.json());
    serde_json::from_value(answer.json()).unwrap()
}

#[tokio::test]
async fn generic_models_complete_with_their_default_duration() {
    let sim = sim(clock(0, 0)).await;
    for spec in MODELS {
        let created = generic_create(&sim, json!({"model": spec.id, "prompt": "A kite"})).await;
        assert_eq!(created.status, StatusCode::OK, "{:?}", created.json());
        let json = created.json();
        let id = json["id"].as_str().unwrap().to_owned();
        assert!(id.starts_with("video_") && id.len() == 22, "{id}");
        assert!(id[6..].bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        assert_eq!(json["task_id"], id.as_str());
        assert_eq!(
            (
                json["object"].clone(),
                json["status"].clone(),
                json["progress"].clone()
            ),
            (json!("video"), json!("queued"), json!(0))
        );
        assert_eq!(json["model"], spec.id);

        let task = generic_get(&sim, &id).await;
        assert_eq!(task.status, tollgate_generic_tasks::VideoStatus::Completed);
        assert_eq!(task.progress, 100);
        let seconds = spec.default_duration.to_string();
        assert_eq!(task.seconds.as_deref(), Some(seconds.as_str()));
        let url = task.url.clone().unwrap();
        assert_eq!(url, format!("{}/_sim/videos/{id}.mp4", sim.base_url()));
        assert_eq!(
            task.video_url.as_deref(),
            spec.returns_video_url.then_some(url.as_str()),
            "{}",
            spec.id
        );
        assert!(task.completed_at.is_some() && task.error.is_none());

        let video = get(&sim, &path_of(&sim, &url)).await;
        assert_eq!(video.status, StatusCode::OK);
        let info = crate::video::inspect_mp4(&video.body).unwrap();
        let want = f64::from(spec.default_duration);
        assert!(
            (info.duration - want).abs() < 0.1,
            "{}: {}",
            spec.id,
            info.duration
        );
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn generic_task_runs_on_the_clock_or_fails() {
    let sim = sim(clock(300, 600)).await;
    let created = Instant::now();
    let answer = generic_create(&sim, json!({"model": "omni", "prompt": "A kite"})).await;
    let id = answer.json()["id"].as_str().unwrap().to_owned();
    let queued = generic_get(&sim, &id).await;
    assert_eq!((queued.status.as_str(), queued.progress), ("queued", 0));
    sleep_until(created, 500).await;
    let running = generic_get(&sim, &id).await;
    assert_eq!(running.status.as_str(), "in_progress");
    assert!((1..=99).contains(&running.progress), "{}", running.progress);
    assert!(running.url.is_none());
    sleep_until(created, 1000).await;
    let done = generic_get(&sim, &id).await;
    assert_eq!((done.status.as_str(), done.progress), ("completed", 100));
    assert_eq!(done.seconds.as_deref(), Some("4"));

    sim.knobs().set(clock(0, 0));
    let answer = generic_create(&sim, json!({"model": "omni", "prompt": "A kite [fail]"})).await;
    let id = answer.json()["id"].as_str().unwrap().to_owned();
    let failed = generic_get(&sim, &id).await;
    assert_eq!(failed.status.as_str(), "failed");
    assert!(failed.error.is_some() && failed.url.is_none());
    let video = get(&sim, &format!("/_sim/videos/{id}.mp4")).await;
    assert_eq!(video.status, StatusCode::NOT_FOUND);

    // An Ark id is not a generic task, and the other way round.
    let missing = get(&sim, &format!("{GENERIC_PATH}/cgt-20260101000000-00000")).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.json()["error"]["code"], "task_not_found");
    let missing = get(&sim, &format!("{ARK_TASKS_PATH}/{id}")).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    sim.shutdown().await;
}

#[tokio::test]
async fn generic_refuses_unsupported_parameters_and_unknown_models() {
    let sim = sim(clock(0, 0)).await;
    let answer = generic_create(&sim, json!({"model": "omni", "prompt": "x", "seed": 7})).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    let error = answer.json()["error"].clone();
    assert_eq!(error["param"], "seed");
    assert_eq!(error["type"], "invalid_request_error");

    let answer = generic_create(&sim, json!({"model": "omni", "prompt": "x", "duration": 8})).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(answer.json()["error"]["param"], "duration");

    let answer = generic_create(&sim, json!({"model": "wave-9", "prompt": "x"})).await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    let error = answer.json()["error"].clone();
    assert_eq!(
        (error["code"].clone(), error["param"].clone()),
        (json!("model_not_found"), json!("model"))
    );
    assert_eq!(sim.knobs().served("POST /v1/video/generations"), 3);
    sim.shutdown().await;
}

#[test]
fn ids_ranges_and_markers() {
    assert_eq!(utc_stamp(0), "19700101000000");
    assert_eq!(utc_stamp(1_767_240_000), "20260101040000");
    assert_eq!(utc_stamp(951_827_696), "20000229123456");
    assert_eq!(base36(36 * 36 + 35, 5), "0010z");
    assert_eq!(base36(36u64.pow(5) + 1, 5), "00001");
    assert_eq!(refsec("a [refsec=12] b"), Some(12));
    assert_eq!(refsec("a [refsec=x]"), None);
    assert_eq!(byte_range("bytes=0-9", 100), Some(Ok((0, 9))));
    assert_eq!(byte_range("bytes=90-", 100), Some(Ok((90, 99))));
    assert_eq!(byte_range("bytes=-10", 100), Some(Ok((90, 99))));
    assert_eq!(byte_range("bytes=0-500", 100), Some(Ok((0, 99))));
    assert_eq!(byte_range("bytes=100-", 100), Some(Err(())));
    assert_eq!(byte_range("bytes=0-1,5-6", 100), None);
    assert_eq!(byte_range("items=0-1", 100), None);
}

#[tokio::test]
async fn a_sora_style_video_runs_on_the_clock_and_serves_its_three_files() {
    let sim = sim(clock(0, 0)).await;
    let created = call(
        &sim,
        Method::POST,
        "/v1/videos",
        Some(json!({"model": "sora-2-pro", "prompt": "A lighthouse", "seconds": "8", "size": "1792x1024"})),
        None,
    )
    .await;
    assert_eq!(created.status, StatusCode::OK, "{:?}", created.json());
    let video: Video = serde_json::from_slice(&created.body).unwrap();
    assert_eq!(
        (video.seconds.as_str(), video.size.as_str()),
        ("8", "1792x1024")
    );
    let id = video.id;
    let done: Video =
        serde_json::from_slice(&get(&sim, &format!("/v1/videos/{id}")).await.body).unwrap();
    assert_eq!(done.status, tollgate_openai_videos::VideoStatus::Completed);
    assert!(done.completed_at.is_some() && done.expires_at.is_some());

    let mp4 = get(&sim, &format!("/v1/videos/{id}/content")).await;
    assert_eq!(mp4.headers[header::CONTENT_TYPE], "video/mp4");
    let info = crate::video::inspect_mp4(&mp4.body).unwrap();
    assert!((info.duration - 8.0).abs() < 0.1, "{}", info.duration);
    // 7:4, as the size asked (frame sides rounded to even pixels).
    let (w, h) = (f64::from(info.width), f64::from(info.height));
    assert!((w / h - 1.75).abs() < 0.02, "{w}x{h}");

    let thumbnail = get(&sim, &format!("/v1/videos/{id}/content?variant=thumbnail")).await;
    assert_eq!(thumbnail.headers[header::CONTENT_TYPE], "image/webp");
    assert_eq!(
        (&thumbnail.body[..4], &thumbnail.body[8..12]),
        (&b"RIFF"[..], &b"WEBP"[..])
    );
    let size = imagesize::blob_size(&thumbnail.body).unwrap();
    assert_eq!(
        (size.width as u32, size.height as u32),
        (info.width, info.height)
    );

    let sheet = get(
        &sim,
        &format!("/v1/videos/{id}/content?variant=spritesheet"),
    )
    .await;
    assert_eq!(sheet.headers[header::CONTENT_TYPE], "image/jpeg");
    assert_eq!(&sheet.body[..3], &[0xff, 0xd8, 0xff]);
    let size = imagesize::blob_size(&sheet.body).unwrap();
    let (across, down) = crate::video::SPRITE_GRID;
    assert_eq!(
        (size.width as u32, size.height as u32),
        (info.width * across, info.height * down)
    );
    let part = call(
        &sim,
        Method::GET,
        &format!("/v1/videos/{id}/content"),
        None,
        Some("bytes=0-99"),
    )
    .await;
    assert_eq!(part.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(part.body.len(), 100);

    let gone = call(
        &sim,
        Method::DELETE,
        &format!("/v1/videos/{id}"),
        None,
        None,
    )
    .await;
    assert_eq!(gone.json()["deleted"], true);
    assert_eq!(
        get(&sim, &format!("/v1/videos/{id}")).await.status,
        StatusCode::NOT_FOUND
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn a_sora_style_vendor_refuses_what_its_models_cannot_make_naming_the_field() {
    let sim = sim(clock(0, 0)).await;
    for (body, param) in [
        (
            json!({"model": "sora-2", "prompt": "x", "seconds": "6"}),
            "seconds",
        ),
        (
            json!({"model": "sora-2", "prompt": "x", "size": "1792x1024"}),
            "size",
        ),
        (
            json!({"model": "sora-2-pro", "prompt": "x", "size": "1920x1080"}),
            "size",
        ),
        (json!({"model": "horse-1.1-t2v", "prompt": "x"}), "model"),
        (
            json!({"model": "sora-2", "prompt": "x", "duration": 4}),
            "duration",
        ),
    ] {
        let refused = call(&sim, Method::POST, "/v1/videos", Some(body.clone()), None).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(refused.json()["error"]["param"], param, "{body}");
    }
    sim.shutdown().await;
}
