//! Language codes and the full English names `verbose_json` reports.

/// Language codes (ISO 639-1, plus `yue` for Cantonese) and their full English names in lower
/// case, as OpenAI's `verbose_json` writes them (wire-formats §1.2: `"english"`, not `"en"`).
///
/// The names follow Whisper's language table, from which OpenAI's come.
pub const LANGUAGE_NAMES: &[(&str, &str)] = &[
    ("en", "english"),
    ("zh", "chinese"),
    ("yue", "cantonese"),
    ("ja", "japanese"),
    ("ko", "korean"),
    ("de", "german"),
    ("es", "spanish"),
    ("fr", "french"),
    ("it", "italian"),
    ("pt", "portuguese"),
    ("ru", "russian"),
    ("ar", "arabic"),
    ("hi", "hindi"),
    ("bn", "bengali"),
    ("ur", "urdu"),
    ("fa", "persian"),
    ("tr", "turkish"),
    ("nl", "dutch"),
    ("sv", "swedish"),
    ("no", "norwegian"),
    ("nb", "norwegian"),
    ("da", "danish"),
    ("fi", "finnish"),
    ("is", "icelandic"),
    ("pl", "polish"),
    ("cs", "czech"),
    ("sk", "slovak"),
    ("sl", "slovenian"),
    ("hr", "croatian"),
    ("sr", "serbian"),
    ("bs", "bosnian"),
    ("mk", "macedonian"),
    ("bg", "bulgarian"),
    ("ro", "romanian"),
    ("hu", "hungarian"),
    ("el", "greek"),
    ("uk", "ukrainian"),
    ("be", "belarusian"),
    ("lt", "lithuanian"),
    ("lv", "latvian"),
    ("et", "estonian"),
    ("ca", "catalan"),
    ("gl", "galician"),
    ("eu", "basque"),
    ("cy", "welsh"),
    ("ga", "irish"),
    ("sq", "albanian"),
    ("hy", "armenian"),
    ("ka", "georgian"),
    ("az", "azerbaijani"),
    ("kk", "kazakh"),
    ("uz", "uzbek"),
    ("mn", "mongolian"),
    ("he", "hebrew"),
    ("id", "indonesian"),
    ("ms", "malay"),
    ("tl", "tagalog"),
    ("vi", "vietnamese"),
    ("th", "thai"),
    ("lo", "lao"),
    ("km", "khmer"),
    ("my", "myanmar"),
    ("ta", "tamil"),
    ("te", "telugu"),
    ("kn", "kannada"),
    ("ml", "malayalam"),
    ("mr", "marathi"),
    ("gu", "gujarati"),
    ("pa", "punjabi"),
    ("ne", "nepali"),
    ("si", "sinhala"),
    ("sw", "swahili"),
    ("af", "afrikaans"),
    ("la", "latin"),
];

/// The full English name of a language code, in lower case: `"en"` → `"english"`.
///
/// The code is compared without regard to case or surrounding whitespace, and a region or
/// script subtag is dropped (`"zh-CN"`, `"en_US"`, `"zh-Hant"`). A name is also accepted
/// (`"English"` → `"english"`). An unknown code is returned as given, trimmed and in lower case;
/// an empty one is `"unknown"`.
///
/// ```
/// use tollgate_compat_audio::transcription::language_name;
///
/// assert_eq!(language_name("en"), "english");
/// assert_eq!(language_name("zh-CN"), "chinese");
/// assert_eq!(language_name("yue"), "cantonese");
/// assert_eq!(language_name("Japanese"), "japanese");
/// assert_eq!(language_name("xx"), "xx");
/// assert_eq!(language_name(""), "unknown");
/// ```
pub fn language_name(code: &str) -> String {
    let code = code.trim().to_ascii_lowercase();
    if code.is_empty() {
        return "unknown".to_owned();
    }
    let primary = code.split(['-', '_']).next().unwrap_or_default();
    LANGUAGE_NAMES
        .iter()
        .find(|&&(c, name)| c == primary || name == code)
        .map_or(code.clone(), |&(_, name)| name.to_owned())
}
