//! # tollgate-generic-tasks
//!
//! The generic video-task format, sans-IO (SPEC §2.8, §3.2): the create request (`duration`
//! with its alias `seconds`), the create response, the task record, and the per-model parameter
//! table (duration range, default resolution, aspect ratios, which optional fields each model
//! takes) as data.
//!
//! Status: the types arrive with the video-task work; until then the gateway answers
//! `/v1/video/generations` with 501 in OpenAI's error shape.
