//! Decoding audio the gateway returned, with symphonia (an independent decoder).

use std::io::Cursor;
use symphonia::core::codecs::CodecParameters;
use symphonia::core::codecs::audio::AudioDecoderOptions;
use symphonia::core::formats::probe::Hint;
use symphonia::core::formats::{FormatOptions, TrackType};
use symphonia::core::io::MediaSourceStream;
use symphonia::core::meta::MetadataOptions;

/// What a decode found.
#[derive(Debug)]
pub struct Decoded {
    pub rate: u32,
    pub channels: usize,
    pub seconds: f64,
}

/// Probes and decodes every packet of `file`; panics on anything a player would choke on.
pub fn decode(file: &[u8]) -> Decoded {
    let mss = MediaSourceStream::new(Box::new(Cursor::new(file.to_vec())), Default::default());
    let mut format = symphonia::default::get_probe()
        .probe(
            &Hint::new(),
            mss,
            FormatOptions::default(),
            MetadataOptions::default(),
        )
        .expect("probe");
    let track = format
        .default_track(TrackType::Audio)
        .expect("audio track")
        .clone();
    let Some(CodecParameters::Audio(params)) = &track.codec_params else {
        panic!("not audio");
    };
    let mut decoder = symphonia::default::get_codecs()
        .make_audio_decoder(params, &AudioDecoderOptions::default())
        .expect("decoder");
    let (mut frames, mut rate, mut channels) = (0u64, 0, 0);
    while let Some(packet) = format.next_packet().expect("next packet") {
        if packet.track_id != track.id {
            continue;
        }
        let buf = decoder.decode(&packet).expect("decode");
        frames += buf.frames() as u64;
        rate = buf.spec().rate();
        channels = buf.spec().channels().count();
    }
    Decoded {
        rate,
        channels,
        seconds: frames as f64 / f64::from(rate.max(1)),
    }
}
