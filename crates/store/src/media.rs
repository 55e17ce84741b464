//! Images the gateway hands out by its own signed link (`response_format: "url"`;
//! docs/decisions.md, "Images by the picture"): each vetted image is kept here, in chunks, until
//! its link expires, so that the link works on every replica and is streamed from the
//! database a chunk at a time, never read whole. The link is signed by the gateway
//! (`tollgate_settings::media`) over the image's id and its digest ([`MediaDigest`], the first
//! 128 bits of its SHA-256): an insider who rewrites the bytes in the database cannot make the
//! link serve them, for the answer checks the digest of what it streamed and cuts the stream
//! short when it differs.

use crate::ids::new_id;
use crate::{Store, StoreError, now_millis};
use sha2::{Digest, Sha256};

/// The bytes of one chunk of a kept image.
pub const MEDIA_CHUNK_BYTES: usize = 256 << 10;

/// The digest a kept image's link signs, taken over its bytes as they are stored or streamed.
#[derive(Debug, Clone, Default)]
pub struct MediaDigest(Sha256);

impl MediaDigest {
    /// An empty digest.
    pub fn new() -> MediaDigest {
        MediaDigest::default()
    }

    /// `bytes`, next.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The digest in hex: the first 16 bytes of the SHA-256 (32 characters).
    pub fn hex(self) -> String {
        crate::ids::hex(&self.0.finalize()[..16])
    }

    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> String {
        let mut digest = MediaDigest::new();
        digest.update(bytes);
        digest.hex()
    }
}

/// A kept image, as its link's answer needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaFile {
    /// `img_…`
    pub id: String,
    /// The account whose request drew it.
    pub account_id: String,
    /// Its media type (`image/png`).
    pub content_type: String,
    /// Its length in bytes.
    pub bytes: u64,
    /// How many chunks hold it.
    pub chunks: u32,
    /// When it lapses (Unix seconds; its link's expiry).
    pub expires_at: i64,
}

impl Store {
    /// Keeps `data` (of `content_type`, drawn for `account_id`) until `expires_at` (Unix
    /// seconds); returns its id.
    pub async fn keep_media(
        &self,
        account_id: &str,
        content_type: &str,
        data: &[u8],
        expires_at: i64,
    ) -> Result<String, StoreError> {
        let id = new_id("img");
        let chunks = data.chunks(MEDIA_CHUNK_BYTES);
        let mut tx = self.writer().begin().await?;
        sqlx::query(
            "INSERT INTO media_files (id, account_id, content_type, bytes, chunks, created_at, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&id)
        .bind(account_id)
        .bind(content_type)
        .bind(i64::try_from(data.len()).unwrap_or(i64::MAX))
        .bind(i64::try_from(chunks.len()).unwrap_or(i64::MAX))
        .bind(now_millis())
        .bind(expires_at)
        .execute(&mut *tx)
        .await?;
        for (seq, chunk) in chunks.enumerate() {
            sqlx::query("INSERT INTO media_chunks (media_id, seq, data) VALUES ($1, $2, $3)")
                .bind(&id)
                .bind(i64::try_from(seq).unwrap_or(i64::MAX))
                .bind(chunk.to_vec())
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(id)
    }

    /// Kept image `id`, if it is kept.
    pub async fn media_file(&self, id: &str) -> Result<Option<MediaFile>, StoreError> {
        let found: Option<(String, String, i64, i64, i64)> = sqlx::query_as(
            "SELECT account_id, content_type, bytes, chunks, expires_at FROM media_files WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(self.pool())
        .await?;
        Ok(found.map(
            |(account_id, content_type, bytes, chunks, expires_at)| MediaFile {
                id: id.to_owned(),
                account_id,
                content_type,
                bytes: u64::try_from(bytes).unwrap_or(0),
                chunks: u32::try_from(chunks).unwrap_or(0),
                expires_at,
            },
        ))
    }

    /// Chunk `seq` of kept image `id` (`None`: gone, pruned since).
    pub async fn media_chunk(&self, id: &str, seq: u32) -> Result<Option<Vec<u8>>, StoreError> {
        let found: Option<(Vec<u8>,)> =
            sqlx::query_as("SELECT data FROM media_chunks WHERE media_id = $1 AND seq = $2")
                .bind(id)
                .bind(i64::from(seq))
                .fetch_optional(self.pool())
                .await?;
        Ok(found.map(|(data,)| data))
    }

    /// Deletes the images whose links lapsed before `now` (Unix seconds); returns how many.
    pub async fn prune_media(&self, now: i64) -> Result<u64, StoreError> {
        let mut tx = self.writer().begin().await?;
        sqlx::query(
            "DELETE FROM media_chunks WHERE media_id IN
             (SELECT id FROM media_files WHERE expires_at < $1)",
        )
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let done = sqlx::query("DELETE FROM media_files WHERE expires_at < $1")
            .bind(now)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(done.rows_affected())
    }
}
