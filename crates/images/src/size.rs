//! `size`: `WIDTHxHEIGHT` in pixels (`1024x1536`), as the Images API writes it.

use std::fmt;

/// An image's size in pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Size {
    /// Pixels across.
    pub width: u32,
    /// Pixels down.
    pub height: u32,
}

impl Size {
    /// A size of `width` × `height`.
    pub const fn new(width: u32, height: u32) -> Size {
        Size { width, height }
    }

    /// Parses `WIDTHxHEIGHT` (`x` or `X`), each side 1 to 65,535 pixels.
    ///
    /// ```
    /// use tollgate_images::Size;
    /// assert_eq!(Size::parse("1536x1024"), Some(Size::new(1536, 1024)));
    /// assert_eq!(Size::parse("auto"), None);
    /// assert_eq!(Size::parse("0x10"), None);
    /// ```
    pub fn parse(text: &str) -> Option<Size> {
        let (w, h) = text.trim().split_once(['x', 'X'])?;
        let side = |s: &str| s.parse::<u32>().ok().filter(|n| (1..=65_535).contains(n));
        Some(Size::new(side(w)?, side(h)?))
    }

    /// Its pixels.
    pub const fn pixels(self) -> u64 {
        self.width as u64 * self.height as u64
    }

    /// Its longer and its shorter side.
    pub const fn long_short(self) -> (u32, u32) {
        if self.width >= self.height {
            (self.width, self.height)
        } else {
            (self.height, self.width)
        }
    }

    /// Whether it fits within `other` (no side longer).
    pub const fn fits_within(self, other: Size) -> bool {
        self.width <= other.width && self.height <= other.height
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}
