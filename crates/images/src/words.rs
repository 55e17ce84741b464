//! The words the Images API takes for its fields' values (`quality`, `background`,
//! `output_format`, `moderation`, `response_format`, `input_fidelity`, `style`), each a type that reads
//! a JSON value or a form field's text.

use serde::{Deserialize, Serialize};

macro_rules! word {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// The word as the wire writes it.
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            /// Reads the word (a form field's text).
            pub fn parse(text: &str) -> Option<$name> {
                match text { $($text => Some($name::$variant),)+ _ => None }
            }

            /// Every word, for an error listing them.
            pub const ALL: &'static [&'static str] = &[$($text),+];
        }
    };
}

word!(
    /// How finely an image is drawn.
    Quality { Low = "low", Medium = "medium", High = "high", Auto = "auto", Standard = "standard", Hd = "hd" }
);
word!(
    /// dall-e-3's look: `vivid` (dramatic) or `natural`.
    Style { Vivid = "vivid", Natural = "natural" }
);
word!(
    /// The background of the images drawn.
    Background { Transparent = "transparent", Opaque = "opaque", Auto = "auto" }
);
word!(
    /// The file format of the images drawn.
    OutputFormat { Png = "png", Jpeg = "jpeg", Webp = "webp" }
);
word!(
    /// How strictly the vendor moderates.
    Moderation { Auto = "auto", Low = "low" }
);
word!(
    /// How the images are answered.
    ResponseFormat { Url = "url", B64Json = "b64_json" }
);
word!(
    /// How closely an edit keeps its input images' details.
    InputFidelity { Low = "low", High = "high" }
);

impl OutputFormat {
    /// Its media type.
    pub const fn mime(self) -> &'static str {
        match self {
            OutputFormat::Png => "image/png",
            OutputFormat::Jpeg => "image/jpeg",
            OutputFormat::Webp => "image/webp",
        }
    }
}
