//! `size`: `WIDTHxHEIGHT` in pixels (`1280x720`), and what it stands for where a model speaks of
//! a resolution and an aspect ratio instead.

use std::fmt;

/// A frame size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Size {
    pub width: u32,
    pub height: u32,
}

impl Size {
    /// Parses `WIDTHxHEIGHT` (`x` or `X`), each side 16 to 8192 pixels.
    ///
    /// ```
    /// use tollgate_openai_videos::Size;
    /// let size = Size::parse("1280x720").unwrap();
    /// assert_eq!((size.resolution(), size.aspect_ratio()), ("720p".into(), "16:9".into()));
    /// assert_eq!(Size::parse("720x1280").unwrap().aspect_ratio(), "9:16");
    /// assert!(Size::parse("big").is_none());
    /// ```
    pub fn parse(text: &str) -> Option<Size> {
        let (w, h) = text.trim().split_once(['x', 'X'])?;
        let side = |s: &str| s.parse::<u32>().ok().filter(|n| (16..=8192).contains(n));
        Some(Size {
            width: side(w)?,
            height: side(h)?,
        })
    }

    /// The size a resolution (`720p`: the shorter side) and an aspect ratio (`16:9`) stand for,
    /// the longer side rounded to an even number of pixels: `480p` at `16:9` is `854x480`.
    /// `None` for a resolution or ratio that is not a number of pixels and `W:H`.
    ///
    /// ```
    /// use tollgate_openai_videos::Size;
    /// assert_eq!(Size::from_resolution("480p", "16:9").map(|s| s.to_string()), Some("854x480".into()));
    /// assert_eq!(Size::from_resolution("1080P", "9:16").map(|s| s.to_string()), Some("1080x1920".into()));
    /// assert_eq!(Size::from_resolution("default", "16:9"), None);
    /// ```
    pub fn from_resolution(resolution: &str, ratio: &str) -> Option<Size> {
        let short: u32 = resolution
            .strip_suffix(['p', 'P'])?
            .parse()
            .ok()
            .filter(|n| (16..=8192).contains(n))?;
        let (w, h) = ratio.split_once(':')?;
        let (w, h): (u32, u32) = (w.parse().ok()?, h.parse().ok()?);
        if w == 0 || h == 0 {
            return None;
        }
        let long = |a: u32, b: u32| {
            let exact = u64::from(short) * u64::from(a) / u64::from(b);
            let rounded = exact + (exact % 2);
            u32::try_from(rounded).ok()
        };
        let size = if w >= h {
            Size {
                width: long(w, h)?,
                height: short,
            }
        } else {
            Size {
                width: short,
                height: long(h, w)?,
            }
        };
        Some(size)
    }

    /// The sizes (`WIDTHxHEIGHT`) that these (resolution, aspect ratio) pairs stand for, in
    /// order; a pair that names none (`default`, `auto`) is left out.
    ///
    /// ```
    /// use tollgate_openai_videos::Size;
    /// assert_eq!(Size::names_of([("720p", "9:16"), ("1024p", "7:4"), ("720p", "auto")]), ["720x1280", "1792x1024"]);
    /// ```
    pub fn names_of<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<String> {
        pairs
            .into_iter()
            .filter_map(|(resolution, ratio)| Size::from_resolution(resolution, ratio))
            .map(|s| s.to_string())
            .collect()
    }

    /// The resolution's name: the shorter side and `p` (`720p`, `1080p`, `480p`).
    pub fn resolution(self) -> String {
        format!("{}p", self.width.min(self.height))
    }

    /// The aspect ratio in lowest terms (`16:9`, `9:16`, `1:1`, `7:4`); a size within 1 % of a
    /// common ratio (`854x480`) is named by it.
    pub fn aspect_ratio(self) -> String {
        const COMMON: [(u32, u32); 6] = [(16, 9), (9, 16), (1, 1), (4, 3), (3, 4), (21, 9)];
        for (w, h) in COMMON {
            // Within 1 % of a common ratio.
            let (a, b) = (
                u64::from(self.width) * u64::from(h),
                u64::from(self.height) * u64::from(w),
            );
            if a.abs_diff(b) * 100 <= b {
                return format!("{w}:{h}");
            }
        }
        let g = gcd(self.width, self.height);
        format!("{}:{}", self.width / g, self.height / g)
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a.max(1) } else { gcd(b, a % b) }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn openai_sizes_and_their_names() {
        let named = |s: &str| {
            let size = Size::parse(s).unwrap_or_else(|| panic!("{s}"));
            (size.resolution(), size.aspect_ratio())
        };
        assert_eq!(named("1280x720"), ("720p".into(), "16:9".into()));
        assert_eq!(named("720x1280"), ("720p".into(), "9:16".into()));
        assert_eq!(named("1792x1024"), ("1024p".into(), "7:4".into()));
        assert_eq!(named("1024x1792"), ("1024p".into(), "4:7".into()));
        assert_eq!(named("854x480"), ("480p".into(), "16:9".into()));
        assert_eq!(named("1920X1080"), ("1080p".into(), "16:9".into()));
        assert_eq!(named("1080x1080"), ("1080p".into(), "1:1".into()));
        for bad in [
            "",
            "1280",
            "1280x",
            "x720",
            "0x0",
            "1280x720x2",
            "-1x5",
            "99999x720",
        ] {
            assert_eq!(Size::parse(bad), None, "{bad}");
        }
        assert_eq!(
            Size::parse("1280x720").map(|s| s.to_string()),
            Some("1280x720".into())
        );
    }

    proptest::proptest! {
        #[test]
        fn any_size_names_a_ratio_of_whole_numbers(w in 16u32..=8192, h in 16u32..=8192) {
            let size = Size { width: w, height: h };
            let ratio = size.aspect_ratio();
            let (a, b) = ratio.split_once(':').unwrap();
            proptest::prop_assert!(a.parse::<u32>().unwrap() > 0 && b.parse::<u32>().unwrap() > 0);
            proptest::prop_assert_eq!(Size::parse(&size.to_string()), Some(size));
        }
    }
}
