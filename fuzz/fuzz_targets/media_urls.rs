//! Media URLs in task content (image, video, audio; `data:` URLs too): an answer, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(url) = std::str::from_utf8(data) else {
        return;
    };
    let _ = tollgate_clip_tasks::check_image_url(url);
    let _ = tollgate_clip_tasks::check_video_url(url);
});
