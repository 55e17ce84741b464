//! The `model` field: the service's speech models and the default aliases.

/// The default alias table (docs/api.md §2.1): OpenAI model names accepted for the service's models.
///
/// | Alias | Model |
/// |---|---|
/// | `tts-1` | `speech-2.8-turbo` |
/// | `gpt-4o-mini-tts` (the "mini alias") | `speech-2.8-turbo` |
/// | `tts-1-hd` | `speech-2.8-hd` |
///
/// A deployment may configure more aliases; this is the table that applies when it does not.
pub const DEFAULT_ALIASES: &[(&str, &str)] = &[
    ("tts-1", "speech-2.8-turbo"),
    ("gpt-4o-mini-tts", "speech-2.8-turbo"),
    ("tts-1-hd", "speech-2.8-hd"),
];

/// The model that `model` stands for in [`DEFAULT_ALIASES`], or `None` when it is no alias there.
///
/// Model ids are compared exactly, as OpenAI's clients send them.
///
/// ```
/// use tollgate_compat_audio::speech::default_alias;
///
/// assert_eq!(default_alias("tts-1-hd"), Some("speech-2.8-hd"));
/// assert_eq!(default_alias("speech-2.6-hd"), None);
/// ```
pub fn default_alias(model: &str) -> Option<&'static str> {
    DEFAULT_ALIASES
        .iter()
        .find(|(alias, _)| *alias == model)
        .map(|&(_, target)| target)
}
