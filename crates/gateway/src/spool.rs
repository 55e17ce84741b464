//! Spooling an upload: the first [`MEMORY_THRESHOLD`] bytes stay in memory, and once a file
//! grows past that it moves to a temporary file on disk (deleted when dropped). The bytes are
//! held once — in memory or on disk, never both — and read back as a stream, so a 50 MB upload
//! costs the gateway about a megabyte of memory.

use bytes::{Bytes, BytesMut};
use futures_util::Stream;
use std::io::{self, Read, Seek};
use std::pin::Pin;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Uploads up to this size are kept in memory.
pub const MEMORY_THRESHOLD: usize = 1 << 20;

/// Pieces read back from disk.
const CHUNK: usize = 64 << 10;

/// An upload being received.
#[derive(Debug)]
pub struct Spool {
    memory: BytesMut,
    disk: Option<(tempfile::NamedTempFile, tokio::fs::File)>,
    len: u64,
}

/// A received upload, in memory or in a temporary file.
#[derive(Debug)]
pub enum Spooled {
    /// Small: the bytes themselves.
    Memory(Bytes),
    /// Large: a temporary file, deleted when this is dropped.
    Disk {
        /// The file.
        file: tempfile::NamedTempFile,
        /// Its length.
        len: u64,
    },
}

impl Default for Spool {
    fn default() -> Self {
        Spool::new()
    }
}

impl Spool {
    /// An empty spool.
    pub fn new() -> Spool {
        Spool {
            memory: BytesMut::new(),
            disk: None,
            len: 0,
        }
    }

    /// Bytes received so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Nothing received yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends a piece of the upload.
    pub async fn write(&mut self, chunk: &[u8]) -> io::Result<()> {
        self.len += chunk.len() as u64;
        if let Some((_, file)) = &mut self.disk {
            return file.write_all(chunk).await;
        }
        if self.memory.len() + chunk.len() <= MEMORY_THRESHOLD {
            self.memory.extend_from_slice(chunk);
            return Ok(());
        }
        // Past the threshold: move what is in memory to disk, and keep writing there.
        let named = tokio::task::spawn_blocking(tempfile::NamedTempFile::new)
            .await
            .map_err(io::Error::other)??;
        let mut file = tokio::fs::File::from_std(named.reopen()?);
        file.write_all(&self.memory).await?;
        file.write_all(chunk).await?;
        self.memory = BytesMut::new();
        self.disk = Some((named, file));
        Ok(())
    }

    /// The finished upload.
    pub async fn finish(self) -> io::Result<Spooled> {
        match self.disk {
            None => Ok(Spooled::Memory(self.memory.freeze())),
            Some((named, mut file)) => {
                file.flush().await?;
                file.sync_data().await?;
                Ok(Spooled::Disk {
                    file: named,
                    len: self.len,
                })
            }
        }
    }
}

impl Spooled {
    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        match self {
            Spooled::Memory(bytes) => bytes.len() as u64,
            Spooled::Disk { len, .. } => *len,
        }
    }

    /// True for an empty upload.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether it went to disk.
    pub fn on_disk(&self) -> bool {
        matches!(self, Spooled::Disk { .. })
    }

    /// A blocking reader from the start, with its own position (for the audio probe, which
    /// needs to seek).
    pub fn reader(&self) -> io::Result<Box<dyn ReadSeek>> {
        match self {
            Spooled::Memory(bytes) => Ok(Box::new(io::Cursor::new(bytes.clone()))),
            Spooled::Disk { file, .. } => {
                let mut f = file.reopen()?;
                f.rewind()?;
                Ok(Box::new(f))
            }
        }
    }

    /// The upload as a stream of pieces from the start (for relaying it upstream).
    pub fn chunks(&self) -> Pin<Box<dyn Stream<Item = io::Result<Bytes>> + Send>> {
        match self {
            Spooled::Memory(bytes) => Box::pin(futures_util::stream::iter([Ok(bytes.clone())])),
            Spooled::Disk { file, .. } => {
                let opened = file.reopen().map(tokio::fs::File::from_std);
                Box::pin(futures_util::stream::unfold(
                    Some(opened),
                    |state| async move {
                        let mut file = match state? {
                            Ok(file) => file,
                            Err(e) => return Some((Err(e), None)),
                        };
                        let mut buf = vec![0u8; CHUNK];
                        match file.read(&mut buf).await {
                            Ok(0) => None,
                            Ok(n) => {
                                buf.truncate(n);
                                Some((Ok(Bytes::from(buf)), Some(Ok(file))))
                            }
                            Err(e) => Some((Err(e), None)),
                        }
                    },
                ))
            }
        }
    }
}

/// What the probe reads from.
pub trait ReadSeek: Read + Seek + Send + Sync {}
impl<T: Read + Seek + Send + Sync> ReadSeek for T {}

impl tollgate_upstream::common::multipart::UploadSource for Spooled {
    fn len(&self) -> u64 {
        Spooled::len(self)
    }

    fn chunks(&self) -> Pin<Box<dyn Stream<Item = io::Result<Bytes>> + Send>> {
        Spooled::chunks(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    async fn round_trip(size: usize) -> Spooled {
        let data: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        let mut spool = Spool::new();
        for piece in data.chunks(7_919) {
            spool.write(piece).await.unwrap();
        }
        let spooled = spool.finish().await.unwrap();
        assert_eq!(spooled.len(), size as u64);
        let mut back = Vec::new();
        let mut chunks = spooled.chunks();
        while let Some(c) = chunks.next().await {
            back.extend_from_slice(&c.unwrap());
        }
        assert_eq!(back, data);
        let mut read = Vec::new();
        spooled.reader().unwrap().read_to_end(&mut read).unwrap();
        assert_eq!(read, data);
        spooled
    }

    #[tokio::test]
    async fn small_uploads_stay_in_memory_and_large_ones_go_to_disk() {
        assert!(!round_trip(1000).await.on_disk());
        assert!(!round_trip(MEMORY_THRESHOLD).await.on_disk());
        let big = round_trip(MEMORY_THRESHOLD * 3 + 17).await;
        assert!(big.on_disk());
        let path = match &big {
            Spooled::Disk { file, .. } => file.path().to_owned(),
            Spooled::Memory(_) => unreachable!(),
        };
        assert!(path.exists());
        drop(big);
        assert!(
            !path.exists(),
            "the temporary file is deleted with the upload"
        );
    }
}
