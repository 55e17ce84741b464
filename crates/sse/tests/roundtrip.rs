//! Properties of the public API: whatever the encoder writes, or a sender writes by hand with
//! any mix of line ends, decodes to the same events however the bytes are split.

#![allow(clippy::unwrap_used)]

use bytes::BytesMut;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use tollgate_sse::{Decoder, Event, encode_comment};

/// Text biased towards the characters that matter to the format, minus `excluded`.
fn text(excluded: &'static [char], max_len: usize) -> impl Strategy<Value = String> {
    vec(
        prop_oneof![
            4 => any::<char>(),
            1 => Just('\n'),
            1 => Just('\r'),
            1 => Just(' '),
            1 => Just(':'),
            1 => Just('\u{FEFF}'),
        ],
        0..max_len,
    )
    .prop_map(move |chars| {
        chars
            .into_iter()
            .filter(|c| !excluded.contains(c))
            .collect()
    })
}

/// Events whose fields survive encoding exactly: names and ids cannot hold CR, LF or NUL, an
/// empty event type means the default (`None`), and CR in data is normalised to LF.
fn event() -> impl Strategy<Value = Event> {
    (
        proptest::option::of(text(&['\r', '\n', '\0'], 12))
            .prop_map(|name| name.filter(|name| !name.is_empty())),
        text(&['\r'], 40),
        proptest::option::of(text(&['\r', '\n', '\0'], 12)),
        proptest::option::of(any::<u64>()),
    )
        .prop_map(|(event, data, id, retry)| Event {
            event,
            data: data.into(),
            id,
            retry,
        })
}

/// The events decoded from `wire` pushed in pieces cut at `cuts`: first those `next_event`
/// returned, then those only `finish` returned.
fn decode_cut(wire: &[u8], cuts: &[Index]) -> (Vec<Event>, Vec<Event>) {
    let mut positions: Vec<usize> = cuts.iter().map(|cut| cut.index(wire.len() + 1)).collect();
    positions.push(wire.len());
    positions.sort_unstable();

    let mut decoder = Decoder::new();
    let mut from_next = Vec::new();
    let mut start = 0;
    for end in positions {
        decoder.push(&wire[start..end]);
        start = end;
        from_next.extend(std::iter::from_fn(|| decoder.next_event()));
    }
    let from_finish = std::iter::from_fn(|| decoder.finish()).collect();
    (from_next, from_finish)
}

proptest! {
    #[test]
    fn encoded_events_decode_identically_however_cut(
        events in vec(event(), 0..6),
        comments in vec(proptest::option::of(text(&[], 12)), 6),
        bom in any::<bool>(),
        cuts in vec(any::<Index>(), 0..10),
    ) {
        let mut wire = BytesMut::new();
        if bom {
            wire.extend_from_slice("\u{FEFF}".as_bytes());
        }
        for (event, comment) in events.iter().zip(&comments) {
            if let Some(comment) = comment {
                wire.extend_from_slice(&encode_comment(comment));
            }
            event.encode_into(&mut wire);
        }

        let (from_next, from_finish) = decode_cut(&wire, &cuts);
        prop_assert_eq!(from_next, events);
        prop_assert_eq!(from_finish, Vec::<Event>::new());
    }

    #[test]
    fn last_event_without_its_blank_line_is_delivered_by_finish(
        events in vec(event(), 1..4),
        // 1: drop the blank line; 2: also drop the last line's end.
        dropped in 1..=2usize,
        cuts in vec(any::<Index>(), 0..6),
    ) {
        let mut wire = BytesMut::new();
        for event in &events {
            event.encode_into(&mut wire);
        }
        wire.truncate(wire.len() - dropped);

        let (from_next, from_finish) = decode_cut(&wire, &cuts);
        let (last, complete) = events.split_last().unwrap();
        prop_assert_eq!(&from_next[..], complete);
        prop_assert_eq!(from_finish, vec![last.clone()]);
    }

    #[test]
    fn hand_written_frames_with_any_line_ends_decode(
        events in vec(event(), 0..6),
        // Per line: the line end (LF, CRLF or CR), and whether to write a space after ':'.
        styles in vec((0..3u8, any::<bool>()), 1..32),
        comments in vec(any::<bool>(), 1..8),
        cuts in vec(any::<Index>(), 0..10),
    ) {
        let mut lines: Vec<String> = Vec::new();
        let mut fields = 0;
        let mut space = || {
            fields += 1;
            styles[fields % styles.len()].1
        };
        for (n, event) in events.iter().enumerate() {
            if comments[n % comments.len()] {
                lines.push(": comment".to_owned());
            }
            if let Some(name) = &event.event {
                lines.push(field("event", name, space()));
            }
            if let Some(id) = &event.id {
                lines.push(field("id", id, space()));
            }
            if let Some(retry) = event.retry {
                lines.push(field("retry", &retry.to_string(), space()));
            }
            for line in event.data.split('\n') {
                lines.push(field("data", line, space()));
            }
            lines.push(String::new());
        }

        let mut wire = String::new();
        let mut previous = "";
        for (i, line) in lines.iter().enumerate() {
            let mut end = ["\n", "\r\n", "\r"][usize::from(styles[i % styles.len()].0)];
            // A CR followed by an empty LF-ended line reads as one CRLF: the two line ends are
            // indistinguishable, so a sender mixing styles must not write that sequence.
            if previous == "\r" && line.is_empty() && end == "\n" {
                end = "\r\n";
            }
            wire.push_str(line);
            wire.push_str(end);
            previous = end;
        }

        let (from_next, from_finish) = decode_cut(wire.as_bytes(), &cuts);
        prop_assert_eq!(from_next, events);
        prop_assert_eq!(from_finish, Vec::<Event>::new());
    }
}

/// `name:value` or `name: value`; the space is required when the value itself starts with
/// one, since a decoder removes exactly one.
fn field(name: &str, value: &str, space: bool) -> String {
    if space || value.starts_with(' ') {
        format!("{name}: {value}")
    } else {
        format!("{name}:{value}")
    }
}
