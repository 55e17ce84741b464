//! The `voice` field and the stock voice names.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

/// The OpenAI stock voice names (wire-formats §1.1): alloy, ash, ballad, coral, echo, fable, onyx,
/// nova, sage, shimmer, verse, marin, cedar.
///
/// docs/api.md §2.1/§7: a name from this set selects the default English voice.
pub const STOCK_VOICES: &[&str] = &[
    "alloy", "ash", "ballad", "coral", "echo", "fable", "onyx", "nova", "sage", "shimmer", "verse",
    "marin", "cedar",
];

/// Whether `name` is one of the [`STOCK_VOICES`], ignoring ASCII case.
///
/// ```
/// use tollgate_compat_audio::speech::is_stock_voice;
///
/// assert!(is_stock_voice("alloy"));
/// assert!(is_stock_voice("Shimmer"));
/// assert!(!is_stock_voice("English_Graceful_Lady"));
/// ```
pub fn is_stock_voice(name: &str) -> bool {
    STOCK_VOICES
        .iter()
        .any(|stock| stock.eq_ignore_ascii_case(name))
}

/// The `voice` field: a voice name or a custom-voice object (wire-formats §1.1).
///
/// | JSON | Variant |
/// |---|---|
/// | `"alloy"`, `"English_Graceful_Lady"` | [`Name`](Self::Name) |
/// | `{"id": "voice_1234"}` | [`Custom`](Self::Custom) |
///
/// A name is either a voice ID of the service or a stock name of the third-party set (see
/// [`is_stock_voice`]); docs/api.md §2.1/§7: a stock name, or any unrecognised third-party name, selects
/// the default English voice. That choice belongs to the caller, which knows the voices.
///
/// Decoding accepts a string or an object with a string `id` (other keys of the object are
/// ignored); serialization writes the same two shapes.
///
/// ```
/// use tollgate_compat_audio::speech::Voice;
///
/// let stock: Voice = serde_json::from_str(r#""alloy""#)?;
/// assert_eq!(stock, Voice::Name("alloy".into()));
/// assert!(stock.is_stock());
///
/// let custom: Voice = serde_json::from_str(r#"{"id": "voice_1234"}"#)?;
/// assert_eq!(custom.id(), "voice_1234");
/// assert_eq!(serde_json::to_string(&custom)?, r#"{"id":"voice_1234"}"#);
///
/// assert!(serde_json::from_str::<Voice>("42").is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum Voice {
    /// A voice given by name: a voice ID of the service or a stock name.
    Name(String),
    /// A custom voice given as `{"id": "voice_..."}`.
    Custom {
        /// The voice ID.
        id: String,
    },
}

impl Voice {
    /// The name or the ID of the voice, whichever was given.
    pub fn id(&self) -> &str {
        match self {
            Self::Name(name) => name,
            Self::Custom { id } => id,
        }
    }

    /// Whether the voice is given by a stock name ([`is_stock_voice`]); a custom voice never is.
    pub fn is_stock(&self) -> bool {
        match self {
            Self::Name(name) => is_stock_voice(name),
            Self::Custom { .. } => false,
        }
    }
}

impl From<&str> for Voice {
    fn from(name: &str) -> Self {
        Self::Name(name.to_owned())
    }
}

impl From<String> for Voice {
    fn from(name: String) -> Self {
        Self::Name(name)
    }
}

impl<'de> Deserialize<'de> for Voice {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(VoiceVisitor)
    }
}

/// Decodes the two shapes of [`Voice`] with an error message that says what is expected (an
/// untagged derive would only say that no variant matched).
struct VoiceVisitor;

impl<'de> Visitor<'de> for VoiceVisitor {
    type Value = Voice;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(r#"a voice name or an object {"id": "<voice id>"}"#)
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Voice, E> {
        Ok(Voice::Name(name.to_owned()))
    }

    fn visit_string<E: de::Error>(self, name: String) -> Result<Voice, E> {
        Ok(Voice::Name(name))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Voice, A::Error> {
        let mut id: Option<String> = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "id" {
                if id.is_some() {
                    return Err(de::Error::duplicate_field("id"));
                }
                id = Some(map.next_value()?);
            } else {
                map.next_value::<de::IgnoredAny>()?;
            }
        }
        id.map(|id| Voice::Custom { id })
            .ok_or_else(|| de::Error::missing_field("id"))
    }
}
