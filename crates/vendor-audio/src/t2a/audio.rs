//! The hex encoding of `data.audio` (wire-formats §3.2, docs/api.md §2.4).

/// Why a hex audio chunk could not be decoded. The sender (normally the upstream) broke the
/// format; the chunk is not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AudioHexError {
    /// The hex string has an odd number of characters, so it does not split into whole bytes.
    #[error("audio hex has an odd length of {len} characters")]
    OddLength {
        /// The length of the string in bytes.
        len: usize,
    },
    /// A character is not a hex digit.
    #[error("audio hex has the invalid character {character:?} at index {index}")]
    InvalidCharacter {
        /// The offending character.
        character: char,
        /// Its byte index in the string.
        index: usize,
    },
}

/// Decodes a hex audio chunk; upper- and lower-case digits are accepted and the empty string is no
/// audio.
///
/// A non-hex character (reported first) or an odd length is an error: an upstream fault.
///
/// ```
/// use tollgate_vendor_audio::t2a::{decode_audio, AudioHexError};
///
/// assert_eq!(decode_audio("fffb90")?, vec![0xff, 0xfb, 0x90]);
/// assert_eq!(decode_audio("")?, Vec::<u8>::new());
/// assert_eq!(decode_audio("fff"), Err(AudioHexError::OddLength { len: 3 }));
/// assert_eq!(
///     decode_audio("ffzz"),
///     Err(AudioHexError::InvalidCharacter { character: 'z', index: 2 })
/// );
/// # Ok::<(), AudioHexError>(())
/// ```
pub fn decode_audio(hex: &str) -> Result<Vec<u8>, AudioHexError> {
    if let Some((index, character)) = hex.char_indices().find(|(_, c)| !c.is_ascii_hexdigit()) {
        return Err(AudioHexError::InvalidCharacter { character, index });
    }
    // Only ASCII hex digits remain, so the one error left is an odd length.
    hex::decode(hex).map_err(|_| AudioHexError::OddLength { len: hex.len() })
}

/// Checks a hex audio chunk without decoding it: the length of the audio it holds, or the error
/// [`decode_audio`] would give.
///
/// ```
/// use tollgate_vendor_audio::t2a::{check_audio, decode_audio, AudioHexError};
///
/// assert_eq!(check_audio("fffb90"), Ok(3));
/// assert_eq!(check_audio("ffzz"), decode_audio("ffzz").map(|audio| audio.len()));
/// assert_eq!(check_audio("fff"), Err(AudioHexError::OddLength { len: 3 }));
/// ```
pub fn check_audio(hex: &str) -> Result<usize, AudioHexError> {
    if let Some(index) = hex.bytes().position(|byte| !byte.is_ascii_hexdigit()) {
        // `index` is where a character starts: every byte before it is an ASCII digit.
        let character = hex[index..].chars().next().unwrap_or_default();
        return Err(AudioHexError::InvalidCharacter { character, index });
    }
    if hex.len() % 2 == 1 {
        return Err(AudioHexError::OddLength { len: hex.len() });
    }
    Ok(hex.len() / 2)
}

/// Encodes audio bytes as lower-case hex, as `data.audio` carries them.
///
/// ```
/// use tollgate_vendor_audio::t2a::encode_audio;
///
/// assert_eq!(encode_audio(b"ID3"), "494433");
/// assert_eq!(encode_audio(&[0xFF, 0xFB]), "fffb");
/// ```
pub fn encode_audio(bytes: &[u8]) -> String {
    hex::encode(bytes)
}
