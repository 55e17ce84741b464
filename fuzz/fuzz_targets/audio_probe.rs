//! The audio probe (every container symphonia reads for us, and our own checks) on arbitrary
//! files: an answer or an error, never a panic or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = tollgate_probe::probe_bytes(data.to_vec());
});
